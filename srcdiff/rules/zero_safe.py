"""TensorFlow's zero-safe binary ops, whose values and gradients at zero are conventions.

``divide_no_nan(x, y)`` and ``multiply_no_nan(x, y)`` are 0 where ``y`` is 0, whatever ``x``
is (nan, inf); ``xlogy``, ``xdivy`` and ``xlog1py`` are 0 where ``x`` is 0, whatever ``y`` is.
Their rules are TensorFlow's gradient functions, which keep the conventions: where the
value is pinned to 0, each partial derivative is 0 too (``xlogy``'s ``d/dx`` at ``x = 0``
is 0, not ``log y``; both partials of ``divide_no_nan`` at ``y = 0`` are 0).  They are
written with the ops themselves, so derivatives of derivatives keep the conventions.
"""
import numpy as np

from .helpers import unbroadcast
from .registry import defvjp, primitive


@primitive
def divide_no_nan(x, y):
    return np.where(y == 0, 0, x / np.where(y == 0, 1, y))


@primitive
def multiply_no_nan(x, y):
    return np.where(y == 0, 0, x) * y


@primitive
def xlogy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):  # log 0 = -inf, log of < 0 is nan
        return np.where(x == 0, 0, x * np.log(np.where(x == 0, 1, y)))


@primitive
def xdivy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, 0, x / np.where(x == 0, 1, y))


@primitive
def xlog1py(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, 0, x * np.log1p(np.where(x == 0, 0, y)))


def ones_where_nonzero(x):
    """1 where ``x`` is not 0, else 0, in ``x``'s dtype: ``d(x log y)/dx`` is
    ``xlogy(ones_where_nonzero(x), y)``, 0 at ``x = 0``."""
    return np.where(x != 0, np.ones_like(x), np.zeros_like(x))


# Elementwise with broadcasting: their rules take batched adjoints.
defvjp(divide_no_nan,
       lambda g, ans, x, y: unbroadcast(divide_no_nan(g, y), x),
       lambda g, ans, x, y: unbroadcast(g * divide_no_nan(divide_no_nan(-x, y), y), y),
       batches=True)
defvjp(multiply_no_nan,
       lambda g, ans, x, y: unbroadcast(multiply_no_nan(g, y), x),
       lambda g, ans, x, y: unbroadcast(multiply_no_nan(x, g), y),
       batches=True)
defvjp(xlogy,
       lambda g, ans, x, y: unbroadcast(g * xlogy(ones_where_nonzero(x), y), x),
       lambda g, ans, x, y: unbroadcast(g * xdivy(x, y), y),
       batches=True)
defvjp(xdivy,
       lambda g, ans, x, y: unbroadcast(g * xdivy(ones_where_nonzero(x), y), x),
       lambda g, ans, x, y: unbroadcast(g * xdivy(-x, y * y), y),
       batches=True)
defvjp(xlog1py,
       lambda g, ans, x, y: unbroadcast(g * xlog1py(ones_where_nonzero(x), y), x),
       lambda g, ans, x, y: unbroadcast(g * xdivy(x, 1 + y), y),
       batches=True)

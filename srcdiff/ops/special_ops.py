"""``sd.math``'s special functions and TensorFlow's zero-safe binary ops.

erf and erfc are scipy.special's ufuncs with their rules (rules/scipy_special.py), lgamma
and digamma scipy's with TensorFlow's values at the poles (rules/gamma.py); scipy is
optional: without it they raise NotImplementedError.  The zero-safe ops (rules/zero_safe.py) are
defined for floats: ``divide_no_nan`` of integers is float64, as in TensorFlow; the others
refuse integers, as TensorFlow does.
"""
import numpy as np

from ..rules import zero_safe
from ._op import op, primitive_op

try:
    from scipy import special

    from ..rules import gamma
except ImportError:  # pragma: no cover  (scipy is installed where the tests run)
    special = None


def _needs_scipy(name):
    def missing(*args, **kwargs):
        raise NotImplementedError(f"sd.math.{name} needs scipy (pip install scipy)")
    missing.__name__ = name
    return missing


def _floats(x, y, name):
    """TensorFlow's dtype rule of the zero-safe ops: floats (or complex), else an error."""
    for v in (x, y):
        if np.result_type(v).kind not in "fc":
            raise TypeError(f"sd.math.{name} takes float tensors, got {np.result_type(v)}")


# erf, erfc, log |Gamma| and its derivative.
_SPECIAL = ("erf", "erfc", "lgamma", "digamma")
globals().update({name: _needs_scipy(name) for name in _SPECIAL} if special is None else {
    name: primitive_op(fn, name) for name, fn in zip(_SPECIAL, (
        special.erf, special.erfc, gamma.lgamma, gamma.digamma))})


@op(tensors=2)
def divide_no_nan(x, y, name=None):
    """``x / y``, and 0 where ``y`` is 0 (both partial derivatives are 0 there too):
    ``sd.math.divide_no_nan(total, count)``."""
    if np.result_type(x).kind in "iub" and np.result_type(y).kind in "iub":
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)  # TensorFlow's cast
    _floats(x, y, "divide_no_nan")
    return zero_safe.divide_no_nan(x, y)


@op()
def reciprocal_no_nan(x, name=None):
    """``1 / x``, and 0 where ``x`` is 0 (TensorFlow's ``divide_no_nan(1, x)``, gradient
    included): ``sd.math.reciprocal_no_nan(counts)``."""
    _floats(x, x, "reciprocal_no_nan")
    return zero_safe.divide_no_nan(np.ones_like(x), x)


@op(tensors=2)
def multiply_no_nan(x, y, name=None):
    """``x * y``, and 0 where ``y`` is 0 even if ``x`` is nan or inf:
    ``sd.math.multiply_no_nan(x, mask)``."""
    _floats(x, y, "multiply_no_nan")
    return zero_safe.multiply_no_nan(x, y)


@op(tensors=2)
def xlogy(x, y, name=None):
    """``x * log(y)``, and 0 where ``x`` is 0 (its derivative in x is 0 there, as in
    TensorFlow): ``sd.math.xlogy(p, q)``."""
    _floats(x, y, "xlogy")
    return zero_safe.xlogy(x, y)


@op(tensors=2)
def xdivy(x, y, name=None):
    """``x / y``, and 0 where ``x`` is 0: ``sd.math.xdivy(x, y)``."""
    _floats(x, y, "xdivy")
    return zero_safe.xdivy(x, y)


@op(tensors=2)
def xlog1py(x, y, name=None):
    """``x * log(1 + y)``, and 0 where ``x`` is 0: ``sd.math.xlog1py(x, y)``."""
    _floats(x, y, "xlog1py")
    return zero_safe.xlog1py(x, y)


__all__ = ["erf", "erfc", "lgamma", "digamma", "divide_no_nan", "multiply_no_nan", "xlogy",
           "xdivy", "xlog1py", "reciprocal_no_nan"]

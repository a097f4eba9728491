"""Rules of order statistics (``np.median``, ``np.quantile``, their nan-forms) and the
expansions of ``np.cov`` and ``np.corrcoef``.

A quantile of a slice interpolates between two of its sorted elements, those of ranks k
and k + 1, at a fraction t: its adjoint goes to them as ``g (1 - t)`` and ``g t``.  Every
method NumPy offers is such an interpolation, so the rules ask the function itself: of
the ranks of the elements it gives ``k + t`` (the ranks, sorted, are 0, 1, 2...).  NaN
takes no rank, so the nan-forms rank the numbers of each slice alone.  Equal elements
are ranked in order of position (a stable sort), and the adjoint goes to the ones a
sort puts at k and k + 1, as a sort-based implementation gives it."""
import numpy as np

from .helpers import not_modelled, reduced_axes, where_zero
from .registry import defexpansion, defvjp


def ranks(a, axis):
    """The rank of each element of ``a`` in its slice along ``axis`` (a tuple: those
    axes together; None: all of them), 0 for the smallest, equal ones in order of
    position; NaN where ``a`` is NaN."""
    axes = reduced_axes(a, axis)
    last = tuple(range(-len(axes), 0))
    moved = np.moveaxis(a, axes, last)
    flat = np.reshape(moved, np.shape(moved)[:np.ndim(a) - len(axes)] + (-1,))
    order = np.argsort(np.argsort(flat, axis=-1, kind="stable"), axis=-1, kind="stable")
    order = np.moveaxis(np.reshape(order, np.shape(moved)), last, axes)
    return np.where(np.isnan(a), np.nan, order)


def order_statistic_adjoint(g, a, axis, keepdims, overwrite_input, statistic, *q, **options):
    """The adjoint of ``a`` in ``statistic(a, *q, axis=axis, **options)`` (np.median,
    np.quantile...), q's axes first: the elements of ranks k and k + 1 get ``g (1 - t)``
    and ``g t``, where ``k + t`` is the statistic of the ranks."""
    if overwrite_input:  # a has been sorted in place: its ranks are not its elements'
        not_modelled("a quantile computed with overwrite_input=True")
    r = ranks(a, axis)
    options = {k: v for k, v in options.items() if v is not None}  # NumPy 1: no weights
    position = statistic(r, *q, axis=axis, keepdims=True, **options)
    k = np.floor(position)
    t = position - k
    levels = tuple(range(np.ndim(position) - np.ndim(a)))  # q's axes
    if not keepdims:  # counted from the end, the reduced axes are past q's
        g = np.expand_dims(g, tuple(d - np.ndim(a) for d in reduced_axes(a, axis)))
    return np.sum(g * (where_zero(r == k, 1 - t) + where_zero(r == k + 1, t)), axis=levels)


defvjp(np.median,
       lambda g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False:
       order_statistic_adjoint(g, a, axis, keepdims, overwrite_input, np.median),
       reduces=True)
defvjp(np.nanmedian,
       lambda g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False:
       order_statistic_adjoint(g, a, axis, keepdims, overwrite_input, np.nanmedian),
       reduces=True)


def level_adjoint(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """The vjp of ``q`` in a quantile: the derivative in the level is not modelled."""
    return not_modelled("a quantile with respect to q")


# weights (of method="inverted_cdf") pick the element: the result does not vary with
# them, as it does not with its rank.
defvjp(np.quantile,
       lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
       keepdims=False, *, weights=None: order_statistic_adjoint(
           g, a, axis, keepdims, overwrite_input, np.quantile, q, method=method, weights=weights),
       level_adjoint)
defvjp(np.percentile,
       lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
       keepdims=False, *, weights=None: order_statistic_adjoint(
           g, a, axis, keepdims, overwrite_input, np.percentile, q, method=method,
           weights=weights),
       level_adjoint)
defvjp(np.nanquantile,
       lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
       keepdims=False, *, weights=None: order_statistic_adjoint(
           g, a, axis, keepdims, overwrite_input, np.nanquantile, q, method=method,
           weights=weights),
       level_adjoint)
defvjp(np.nanpercentile,
       lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
       keepdims=False, *, weights=None: order_statistic_adjoint(
           g, a, axis, keepdims, overwrite_input, np.nanpercentile, q, method=method,
           weights=weights),
       level_adjoint)


def variables(m, rowvar):
    """The variables of ``np.cov``'s ``m`` as rows of observations (a vector: one)."""
    if np.ndim(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    x = np.atleast_2d(m)
    if not rowvar and np.shape(x)[0] != 1:
        x = x.T
    return x


# dtype is NumPy's keyword-only parameter: here it may be passed by position, as the
# compiler passes the keywords of an expansion it calls.
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """``np.cov``: each variable less its (weighted) mean, the products of those
    deviations summed over the observations (weighted), over the (weighted) count of
    observations less ``ddof``.  Every step is recorded, the weights' included."""
    x = variables(m, rowvar)
    if y is not None:
        x = np.concatenate((x, variables(y, rowvar)), axis=0)
    if dtype is not None:
        x = x.astype(dtype)
    if ddof is None:
        ddof = 0
        if not bias:
            ddof = 1
    w = fweights
    if aweights is not None:
        w = aweights
        if fweights is not None:
            w = fweights * aweights
    if w is None:
        deviations = x - np.mean(x, axis=1, keepdims=True)
        return np.squeeze(deviations @ np.conj(deviations.T) / (np.shape(x)[1] - ddof))
    total = np.sum(w)
    deviations = x - np.sum(x * w, axis=1, keepdims=True) / total
    count = total
    if ddof != 0:
        count = total - ddof
        if aweights is not None:  # the effective count of reliability weights
            count = total - ddof * np.sum(w * aweights) / total
    return np.squeeze(deviations * w @ np.conj(deviations.T) / count)


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """``np.corrcoef``: the covariances over the products of the standard deviations,
    clipped to [-1, 1] as NumPy clips them (the real and imaginary parts apart)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if np.ndim(c) == 0:  # one variable: nan as NumPy has it (or 1)
        return c / c
    deviation = np.sqrt(np.real(np.diag(c)))
    c = c / deviation[:, None] / deviation[None, :]
    if np.iscomplexobj(c):
        return np.clip(np.real(c), -1, 1) + 1j * np.clip(np.imag(c), -1, 1)
    return np.clip(c, -1, 1)


defexpansion(np.cov, cov)
defexpansion(np.corrcoef, corrcoef)

"""Rules of reductions: the adjoint is spread back over the reduced axes.

Spread by ``unreduce``, which keeps leading batch axes: most of these rules batch.
``reduces=True``: given one array and no axis, the result is a number."""
import numpy as np

from .helpers import (average_adjoint, average_weights_adjoint, cumprod_adjoint, cumsum_from_end,
                      cut, deviation, diff_adjoint, extremum_adjoint, norm_adjoint,
                      not_modelled, present, prod_adjoint, ptp_adjoint, real_part,
                      reduced_count, trace_adjoint, unbroadcast, unreduce, weights_like,
                      where_zero)
from .registry import ANY, declare, defexpansion, defform, defvjp, primitive


defvjp(np.sum,
       lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False, **kw:
       unreduce(g, x, axis, keepdims), batches=True, reduces=True)
# Each weight is summed into the bin of its x: it gets that bin's adjoint.
defvjp(np.bincount, None, lambda g, ans, x, weights=None, minlength=0: np.take(g, x))
# Each scales the small adjoint before spreading it: one full-size array less.
defvjp(np.mean,
       lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False, **kw:
       unreduce(g / reduced_count(x, ans), x, axis, keepdims), batches=True, reduces=True)
_add_reduce = np.add.reduce
_FLOAT64 = np.dtype(np.float64)


def mean_of(x):
    """``np.mean(x)``, the stand-in compiled code calls for it: for a non-empty float64
    array, the sum divided by the count as np.mean computes them (np.add.reduce over
    every axis, then a float64 division), without np.mean's dispatch layers."""
    if type(x) is np.ndarray and x.dtype is _FLOAT64 and x.size:
        return _add_reduce(x, None) / x.size
    return np.mean(x)


declare(np.mean, stand_in=mean_of)
defvjp(np.prod,
       lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False, **kw:
       prod_adjoint(g, ans, x, axis, keepdims), batches=True, reduces=True)
# returned=True by keyword is average_returned (below); by position, its pair of
# results is refused, as the tape refuses it.
AVERAGE_PAIR = "np.average's pair of results with returned=True passed by position"
defvjp(np.average,
       lambda g, ans, x, axis=None, weights=None, returned=False, keepdims=False:
       not_modelled(AVERAGE_PAIR) if returned else
       average_adjoint(g, ans, x, axis, weights, keepdims),
       None,
       lambda g, ans, x, axis=None, weights=None, returned=False, keepdims=False:
       not_modelled(AVERAGE_PAIR) if returned else
       average_weights_adjoint(g, ans, x, axis, weights, keepdims))


def average_returned(a, axis=None, weights=None, returned=True, keepdims=False):
    """``np.average(..., returned=True)``: the average and, in its shape, the sum of the
    weights (without weights: how many elements each average took)."""
    average = np.average(a, axis=axis, weights=weights, keepdims=keepdims)
    if weights is None:
        total = np.full(np.shape(average), np.size(a) / np.size(average))
    else:
        weights = np.broadcast_to(weights_like(a, axis, weights), np.shape(a))
        total = np.broadcast_to(np.sum(weights, axis=axis, keepdims=keepdims), np.shape(average))
    return average, total


defform(np.average, "returned", True, average_returned)


# where=: the elements it leaves out take no part in the result, and get no adjoint;
# initial= is added to each sum.
@primitive
def sum_where(a, initial, where, axis=None, dtype=None, keepdims=False):
    """``np.sum(a, axis, dtype, keepdims=keepdims, initial=initial, where=where)``."""
    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


@primitive
def mean_where(a, where, axis=None, dtype=None, keepdims=False):
    """``np.mean(a, axis, dtype, keepdims=keepdims, where=where)``."""
    return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)


def where_count(where, a, axis):
    """How many elements of each slice of ``a`` along ``axis`` ``where`` keeps."""
    return np.sum(np.broadcast_to(where, np.shape(a)), axis=axis, keepdims=True)


defvjp(sum_where,
       lambda g, ans, a, initial, where, axis=None, dtype=None, keepdims=False:
       where_zero(where, unreduce(g, a, axis, keepdims)),
       lambda g, ans, a, initial, where, axis=None, dtype=None, keepdims=False:
       unbroadcast(g, initial), batches=True)
defvjp(mean_where,
       lambda g, ans, a, where, axis=None, dtype=None, keepdims=False:
       where_zero(where, unreduce(g, a, axis, keepdims) / where_count(where, a, axis)),
       None, batches=True)


def summed_where(a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True):
    """``np.sum`` given ``where=`` or ``initial=``: ``sum_where``."""
    if out is not None:
        raise TypeError("np.sum(..., out=...) is not differentiated: use the result")
    return sum_where(a, initial, where, axis, dtype, keepdims)


def averaged_where(a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    """``np.mean`` given ``where=``: ``mean_where``."""
    if out is not None:
        raise TypeError("np.mean(..., out=...) is not differentiated: use the result")
    return mean_where(a, where, axis, dtype, keepdims)


defform(np.sum, "where", ANY, summed_where)
defform(np.sum, "initial", ANY, summed_where)
defform(np.mean, "where", ANY, averaged_where)
for _f in (np.max, np.min, np.amax, np.amin):
    defvjp(_f, lambda g, ans, x, axis=None, out=None, keepdims=False, **kw:
           extremum_adjoint(g, ans, x, axis, keepdims), batches=True, reduces=True)
# The nan-reductions: NaN takes no part in the result, and gets no adjoint.
defvjp(np.nansum,
       lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       where_zero(present(a), unreduce(g, a, axis, keepdims)), batches=True, reduces=True)
defvjp(np.nanmean,
       lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       where_zero(present(a), unreduce(g, a, axis, keepdims) / present_count(a, axis)),
       batches=True, reduces=True)
for _f in (np.nanmax, np.nanmin):
    defvjp(_f, lambda g, ans, a, axis=None, out=None, keepdims=False:
           nan_extremum_adjoint(g, ans, a, axis, keepdims), batches=True, reduces=True)
defvjp(np.nanprod,
       lambda g, ans, a, axis=None, dtype=None, out=None, keepdims=False:
       where_zero(present(a), prod_adjoint(g, ans, np.where(present(a), a, 1.0), axis, keepdims)),
       batches=True, reduces=True)
defvjp(np.nanvar,
       lambda g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False:
       nan_variance_adjoint(g, a, axis, keepdims, ddof), batches=True, reduces=True)
defvjp(np.nanstd,  # d sqrt(v) = dv / (2 sqrt(v))
       lambda g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False:
       nan_variance_adjoint(real_part(g) / (2 * ans), a, axis, keepdims, ddof),
       batches=True, reduces=True)


def present_count(a, axis):
    """How many numbers (not NaN) each slice of ``a`` along ``axis`` holds, keeping dims."""
    return np.sum(present(a), axis=axis, keepdims=True)


def nan_extremum_adjoint(g, ans, a, axis, keepdims):
    """The adjoint of ``np.nanmax`` or ``np.nanmin``: max's or min's, which never reaches
    a NaN, but of an all-NaN slice (its result NaN): 0/0 there, masked."""
    with np.errstate(invalid="ignore"):
        return where_zero(present(a), extremum_adjoint(g, ans, a, axis, keepdims))


def nan_variance_adjoint(g, a, axis, keepdims, ddof):
    """The adjoint of ``a`` in ``np.nanvar``: ``np.var``'s, ``2 (a - mean) / (n - ddof)``,
    with the count ``n`` and the mean of the numbers of each slice.  The deviations are
    masked before the product, whose adjoint (a second derivative) reads them."""
    spread = unreduce(real_part(g) * 2, a, axis, keepdims) / (present_count(a, axis) - ddof)
    return where_zero(present(a), spread * where_zero(present(a), deviation(a, axis, np.nanmean)))


defvjp(np.var,
       lambda g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
       unreduce(real_part(g) * 2 / (reduced_count(x, ans) - ddof), x, axis, keepdims)
       * deviation(x, axis), batches=True, reduces=True)
defvjp(np.std,
       lambda g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
       unreduce(real_part(g) / (ans * (reduced_count(x, ans) - ddof)), x, axis, keepdims)
       * deviation(x, axis), batches=True, reduces=True)
defvjp(np.cumsum,
       lambda g, ans, x, axis=None, **kw: np.reshape(cumsum_from_end(g, axis), np.shape(x)))
defvjp(np.cumprod,
       lambda g, ans, a, axis=None, **kw: cumprod_adjoint(g, ans, a, axis))


def past_initial(v, axis, include_initial):
    """``v``, the result of a cumulative sum or product (or its adjoint), without the
    identity ``include_initial`` put first along ``axis``: no input element made it."""
    return v[cut(np.ndim(v), axis or 0, 1, None)] if include_initial else v


if hasattr(np, "cumulative_sum"):  # NumPy 2.1
    defvjp(np.cumulative_sum,
           lambda g, ans, x, *, axis=None, dtype=None, include_initial=False:
           np.reshape(cumsum_from_end(past_initial(g, axis, include_initial), axis), np.shape(x)))
    defvjp(np.cumulative_prod,
           lambda g, ans, x, *, axis=None, dtype=None, include_initial=False:
           cumprod_adjoint(past_initial(g, axis, include_initial),
                           past_initial(ans, axis, include_initial), x, axis))
# NaN counts as 0 in a sum, 1 in a product; it gets no adjoint.
defvjp(np.nancumsum,
       lambda g, ans, a, axis=None, dtype=None, out=None:
       where_zero(present(a), np.reshape(cumsum_from_end(g, axis), np.shape(a))))
defvjp(np.nancumprod,
       lambda g, ans, a, axis=None, dtype=None, out=None:
       where_zero(present(a), cumprod_adjoint(g, ans, np.where(present(a), a, 1.0), axis)))
defvjp(np.ptp,
       lambda g, ans, a, axis=None, out=None, keepdims=False: ptp_adjoint(g, a, axis, keepdims),
       reduces=True)
# prepend and append (None: not given) are joined to a before the differences are taken.
# n=0 returns a itself: a view.
defvjp(np.diff,
       lambda g, ans, a, n=1, axis=-1, prepend=None, append=None:
       diff_adjoint(0, g, a, n, axis, prepend, append),
       None,
       None,
       lambda g, ans, a, n=1, axis=-1, prepend=None, append=None:
       diff_adjoint(3, g, a, n, axis, prepend, append),
       lambda g, ans, a, n=1, axis=-1, prepend=None, append=None:
       diff_adjoint(4, g, a, n, axis, prepend, append), view=True)
defvjp(np.trace,
       lambda g, ans, x, offset=0, axis1=0, axis2=1, **kw:
       trace_adjoint(g, x, offset, axis1, axis2))


@primitive
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) along ``axis``, without overflow."""
    top = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # -inf over nothing, as in TF
    top = np.where(np.isfinite(top), top, 0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


defvjp(logsumexp,
       lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, x, axis, keepdims) * np.exp(x - unreduce(ans, x, axis, keepdims)),
       batches=True)


@primitive
def norm(x, axis=None, keepdims=False):
    """The Euclidean (Frobenius) norm along ``axis``: TensorFlow's ``norm``."""
    return np.sqrt(np.sum(x * np.conjugate(x), axis=axis, keepdims=keepdims).real)


defvjp(norm,
       lambda g, ans, x, axis=None, keepdims=False:
       unreduce(real_part(g) / ans, x, axis, keepdims) * np.conj(x), batches=True)
defvjp(np.linalg.norm,
       lambda g, ans, x, ord=None, axis=None, keepdims=False:
       norm_adjoint(g, ans, x, ord, axis, keepdims), batches=True, reduces=True)


# A ufunc's reduce and accumulate are NumPy's reductions and scans along axis 0 (np.sum
# is np.add.reduce): compiled as calls of these, and run through them on the tape.
def add_reduce(array, axis=0, dtype=None, keepdims=False):
    """``np.add.reduce``."""
    return np.sum(array, axis, dtype, keepdims=keepdims)


def multiply_reduce(array, axis=0, dtype=None, keepdims=False):
    """``np.multiply.reduce``."""
    return np.prod(array, axis, dtype, keepdims=keepdims)


def maximum_reduce(array, axis=0, keepdims=False):
    """``np.maximum.reduce``."""
    return np.max(array, axis, keepdims=keepdims)


def minimum_reduce(array, axis=0, keepdims=False):
    """``np.minimum.reduce``."""
    return np.min(array, axis, keepdims=keepdims)


def add_accumulate(array, axis=0):
    """``np.add.accumulate``."""
    return np.cumsum(array, axis)


def multiply_accumulate(array, axis=0):
    """``np.multiply.accumulate``."""
    return np.cumprod(array, axis)


for _method, _expansion in [(np.add.reduce, add_reduce), (np.multiply.reduce, multiply_reduce),
                            (np.maximum.reduce, maximum_reduce),
                            (np.minimum.reduce, minimum_reduce),
                            (np.add.accumulate, add_accumulate),
                            (np.multiply.accumulate, multiply_accumulate)]:
    defexpansion(_method, _expansion)

"""Rules of reductions: the adjoint is spread back over the reduced axes.

Spread by ``unreduce``, which keeps leading batch axes: most of these rules batch.
``reduces=True``: given one array and no axis, the result is a number."""
import numpy as np

from .helpers import (average_adjoint, average_weights_adjoint, cumprod_adjoint, deviation,
                      diff_adjoint, extremum_adjoint, norm_adjoint, prod_adjoint, ptp_adjoint,
                      real_part, reduced_count, trace_adjoint, unreduce)
from .registry import declare, defvjp, primitive


defvjp(np.sum,
       lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False, **kw:
       unreduce(g, x, axis, keepdims), batches=True, reduces=True)
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
defvjp(np.average,
       lambda g, ans, x, axis=None, weights=None, returned=False, keepdims=False:
       average_adjoint(g, ans, x, axis, weights, keepdims),
       None,
       lambda g, ans, x, axis=None, weights=None, returned=False, keepdims=False:
       average_weights_adjoint(g, ans, x, axis, weights, keepdims))
for _f in (np.max, np.min, np.amax, np.amin):
    defvjp(_f, lambda g, ans, x, axis=None, out=None, keepdims=False, **kw:
           extremum_adjoint(g, ans, x, axis, keepdims), batches=True, reduces=True)
defvjp(np.var,
       lambda g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
       unreduce(real_part(g) * 2 / (reduced_count(x, ans) - ddof), x, axis, keepdims)
       * deviation(x, axis), batches=True, reduces=True)
defvjp(np.std,
       lambda g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
       unreduce(real_part(g) / (ans * (reduced_count(x, ans) - ddof)), x, axis, keepdims)
       * deviation(x, axis), batches=True, reduces=True)
defvjp(np.cumsum,
       lambda g, ans, x, axis=None, **kw:
       np.reshape(np.flip(np.cumsum(np.flip(g, axis), axis), axis), np.shape(x)))
defvjp(np.cumprod,
       lambda g, ans, a, axis=None, **kw: cumprod_adjoint(g, ans, a, axis))
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

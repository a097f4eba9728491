"""Rules of the functions of ``scipy.special`` used with NumPy.  scipy is optional:
``rules/__init__`` imports this module only if scipy imports.

Most are ufuncs: NumPy calls them on Tensors through ``__array_ufunc__``, and their
rules are elementwise.  ``logsumexp`` is a Python function: the compiler differentiates
it with its rule, but on the tape scipy runs it on the raw arrays, and its result
leaves the tape as ``np.asarray(t)`` does (``sd.reduce_logsumexp`` is recorded)."""
import numpy as np
from scipy import special

from .helpers import not_modelled, unbroadcast, unreduce
from .registry import defvjp, primitive


@primitive
def polygamma(n, x):
    """The n-th derivative of ``digamma`` (``scipy.special.polygamma``), recorded
    on Tensors so that each derivative of gammaln differentiates again."""
    return special.polygamma(n, x)


defvjp(special.expit, lambda g, ans, x: g * ans * (1 - ans))
defvjp(special.logit, lambda g, ans, x: g / (x * (1 - x)))
defvjp(special.erf, lambda g, ans, x: g * (2 / np.sqrt(np.pi)) * np.exp(-x ** 2))
defvjp(special.erfc, lambda g, ans, x: -g * (2 / np.sqrt(np.pi)) * np.exp(-x ** 2))
defvjp(special.gammaln, lambda g, ans, x: g * special.digamma(x))
defvjp(special.digamma, lambda g, ans, x: g * polygamma(1, x))
defvjp(polygamma, None, lambda g, ans, n, x: g * polygamma(n + 1, x), batches=True)
# The modified Bessel functions: d I_v(z) / dz = (I_(v-1)(z) + I_(v+1)(z)) / 2, and
# I_-1 = I_1: NumPy's i0 differentiates through iv, iv through itself.
defvjp(np.i0, lambda g, ans, x: g * special.iv(1, x), batches=True)
defvjp(special.iv,
       lambda g, ans, v, z: not_modelled("scipy.special.iv with respect to its order"),
       lambda g, ans, v, z: unbroadcast(g * (special.iv(v - 1, z) + special.iv(v + 1, z)) / 2,
                                        z))
# x log y is 0 at x = 0 whatever y is: at x = y = 0, y gets no gradient (as in JAX).
defvjp(special.xlogy,
       lambda g, ans, x, y: unbroadcast(g * np.log(y), x),
       lambda g, ans, x, y: unbroadcast(g * x / np.where(np.logical_and(x == 0, y == 0), 1, y), y))
# b (weights inside the sum) is an input: log sum b exp(a).  With return_sign the
# result is a pair: no rule (the compiler and the tape refuse it).
defvjp(special.logsumexp,
       lambda g, ans, a, axis=None, b=None, keepdims=False:
       unreduce(g, a, axis, keepdims) * softmax_weights(a, ans, axis, b, keepdims),
       None,
       lambda g, ans, a, axis=None, b=None, keepdims=False:
       unbroadcast(unreduce(g, a, axis, keepdims) * np.exp(a - unreduce(ans, a, axis, keepdims)),
                   b))


def softmax_weights(a, ans, axis, b, keepdims):
    """d logsumexp / d a: b exp(a - logsumexp)."""
    weights = np.exp(a - unreduce(ans, a, axis, keepdims))
    return weights if b is None else weights * b

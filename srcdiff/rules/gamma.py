"""``lgamma`` and ``digamma`` with TensorFlow's values at the poles (scipy is required:
``rules/__init__`` imports this module only if scipy imports).

scipy's ``digamma(0)`` is ``-inf``; TensorFlow's is nan at every pole (0, -1, -2, ...),
so ``d lgamma / dx`` is nan there too; TensorFlow's ``lgamma(-inf)`` is ``+inf`` (scipy's
``-inf``).  Elsewhere they are scipy's ``gammaln`` and ``digamma``; digamma's derivatives
are scipy's ``polygamma`` (at a pole, the second is ``-inf`` where TensorFlow's is nan)."""
import numpy as np
from scipy import special

from .registry import defvjp, primitive
from .scipy_special import polygamma


@primitive
def lgamma(x):
    return np.where(x == -np.inf, np.inf, special.gammaln(x))


@primitive
def digamma(x):
    pole = np.logical_and(x <= 0, x == np.floor(x))
    return np.where(pole, np.nan, special.digamma(x))


# Elementwise: their rules take batched adjoints.
defvjp(lgamma, lambda g, ans, x: g * digamma(x), batches=True)
defvjp(digamma, lambda g, ans, x: g * polygamma(1, x), batches=True)

"""sqrt, rsqrt and reciprocal as TensorFlow differentiates them: a zero adjoint gives zero.

TensorFlow's gradient kernels of these three give 0 wherever the adjoint coming in
is 0, even where the derivative is infinite (``sqrt`` at 0), so that
``tf.where(x > 0, tf.sqrt(x), 0.)`` has a finite gradient at 0.  The plain formula
gives ``0 * inf = nan`` there, as JAX and autograd do for ``np.sqrt``: NumPy's own
functions keep it, and these primitives are behind TensorFlow's names only
(``sd.sqrt``, ``sd.math.rsqrt``, ``sd.math.reciprocal``).
"""
import numpy as np

from .helpers import where_zero
from .registry import defvjp, primitive


@primitive
def sqrt(x):
    return np.sqrt(x)


@primitive
def rsqrt(x):
    return 1 / np.sqrt(x)


@primitive
def reciprocal(x):
    return np.reciprocal(x)


# Elementwise: their rules take batched adjoints.
defvjp(sqrt, lambda g, ans, x: where_zero(g != 0, g / (2 * ans)), batches=True)
defvjp(rsqrt, lambda g, ans, x: where_zero(g != 0, -0.5 * g * ans ** 3), batches=True)
defvjp(reciprocal, lambda g, ans, x: where_zero(g != 0, -g * ans ** 2), batches=True)

"""Activation functions as NumPy-level primitives, with their rules.

Where an activation has a kink, the rule takes TensorFlow's side of it (its gradient
kernels), which composing NumPy functions would not: relu6's gradient is 0 at 0 and at
6; leaky_relu's at 0 is ``alpha``; relu's, relu6's and leaky_relu's second derivatives
are zeros (not None); selu's at 0 is its right derivative ``SELU_SCALE`` (the left one is
``SELU_SCALE * SELU_ALPHA``), and elu's and selu's second derivatives at 0 are 0.  elu
and selu compute ``exp(x) - 1`` as TensorFlow's kernels do (not ``expm1``:
``elu(-1e-30)`` is 0 in float32, as in TensorFlow, and so its second derivative there is
0 too)."""
import numpy as np

from .helpers import real_only, where_zero
from .registry import defvjp, primitive


@primitive
def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow and correctly rounded as TensorFlow's
    (``exp(-logaddexp(0, -x))`` is a unit in the last place off: 0.99995464 at 10).
    A complex ``x`` has no order to split on: there it is the formula itself."""
    if np.iscomplexobj(x):
        return 1 / (1 + np.exp(-x))
    return np.exp(np.minimum(x, 0)) / (1 + np.exp(-np.abs(x)))


@primitive
def softplus(x):
    """log(1 + exp(x)), computed without overflow."""
    return np.logaddexp(0, x)


@primitive
def softsign(x):
    """x / (1 + |x|); its rule is TensorFlow's ``g / (1 + |x|)**2`` (0 at infinities, where
    the quotient rule of the composition gives nan)."""
    return x / (1 + np.abs(x))


@primitive
def relu(x):
    return np.maximum(x, 0)


@primitive
def relu6(x):
    return np.clip(x, 0, 6)


@primitive
def elu(x):
    return np.where(x < 0, np.exp(np.minimum(x, 0)) - 1, x)


# selu's constants, as TensorFlow's kernel has them (names no user module is likely to
# bind: the compiler binds a rule's globals by name in generated code).
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@primitive
def selu(x):
    left = (SELU_SCALE * SELU_ALPHA) * (np.exp(np.minimum(x, 0)) - 1)
    return np.where(x < 0, left, SELU_SCALE * x)


@primitive
def leaky_relu(x, alpha=0.2):
    return np.where(x > 0, x, x * alpha)


@primitive
def kink_grad(dy, x, top=np.inf, alpha=0.0):
    """``dy`` where ``0 < x < top``, ``alpha * dy`` where ``x <= 0``, else 0: the adjoint of
    relu (``top`` inf), relu6 (6) and leaky_relu (``alpha``).  A primitive, as TensorFlow's
    ReluGrad is, so that a gradient taken again is zeros in ``x``, not None."""
    keep = x > 0 if top == np.inf else np.logical_and(x > 0, x < top)  # x = inf keeps dy
    return np.where(keep, dy, dy * alpha) if alpha else where_zero(keep, dy)


def elu_slope_part(ans):
    """``ans`` where it is negative, else 0: the part of elu's slope (``ans + 1`` on the
    left) that varies, so that its derivative is 0 at 0 as in TensorFlow's EluGradGrad."""
    return np.where(ans < 0, ans, np.zeros_like(ans))


@primitive
def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@primitive
def log_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# Elementwise: their rules take batched adjoints.
defvjp(sigmoid, lambda g, ans, x: g * ans * (1 - ans), batches=True)
defvjp(softplus, lambda g, ans, x: g * sigmoid(x), batches=True)
defvjp(softsign, lambda g, ans, x: g / np.square(1 + np.abs(real_only(x, "softsign"))),
       batches=True)
defvjp(relu, lambda g, ans, x: kink_grad(g, x), batches=True)
defvjp(relu6, lambda g, ans, x: kink_grad(g, x, 6), batches=True)
defvjp(leaky_relu, lambda g, ans, x, alpha=0.2: kink_grad(g, x, np.inf, alpha), None,
       batches=True)
defvjp(kink_grad, lambda g, ans, dy, x, top=np.inf, alpha=0.0: kink_grad(g, x, top, alpha),
       lambda g, ans, dy, x, top=np.inf, alpha=0.0: np.zeros_like(g), batches=True)
defvjp(elu, lambda g, ans, x: g * (elu_slope_part(ans) + 1), batches=True)
defvjp(selu,
       lambda g, ans, x:
       g * np.where(ans < 0, elu_slope_part(ans) + SELU_SCALE * SELU_ALPHA, SELU_SCALE),
       batches=True)
defvjp(softmax,
       lambda g, ans, x, axis=-1: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)))
defvjp(log_softmax,
       lambda g, ans, x, axis=-1: g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True))

"""``sd.nn``: activations and losses.

An activation with a kink whose gradient there is a convention is a primitive with
TensorFlow's rule (rules/nn.py: relu, relu6, leaky_relu, elu, selu); the others are
compositions whose gradients are TensorFlow's at every point."""
import numpy as np

from ..errors import check_range
from ..rules import guarded, nn as rules
from ..tensor import convert_to_tensor
from .array_ops import _shape, gather
from .random_ops import uniform
from ._op import axis_arg, op, primitive_op
from .special_ops import erf

relu = primitive_op(rules.relu, "relu", ("features",))
relu6 = primitive_op(rules.relu6, "relu6", ("features",))
elu = primitive_op(rules.elu, "elu", ("features",))
selu = primitive_op(rules.selu, "selu", ("features",))
sigmoid = primitive_op(rules.sigmoid, "sigmoid")
tanh = primitive_op(np.tanh, "tanh")
softplus = primitive_op(rules.softplus, "softplus", ("features",))


@op()
def softmax(logits, axis=None, name=None):
    return rules.softmax(logits, axis=-1 if axis is None else int(axis))


@op()
def log_softmax(logits, axis=None, name=None):
    return rules.log_softmax(logits, axis=-1 if axis is None else int(axis))


def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of ``params`` at ``ids`` (``sd.gather`` on axis 0: a Variable's gradient is an
    IndexedSlices): ``sd.nn.embedding_lookup(table, token_ids)``."""
    if max_norm is not None or isinstance(params, (list, tuple)):
        raise NotImplementedError("srcdiff's embedding_lookup takes one params tensor and "
                                  "no max_norm")
    return gather(params, ids)


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """``x / (1 - rate)`` where a uniform draw is at least ``rate``, else 0 (the draws
    broadcast from ``noise_shape``; ``sd.random.set_seed`` repeats them):
    ``sd.nn.dropout(h, rate=0.5)``."""
    x = convert_to_tensor(x)
    if x.dtype.kind != "f":
        raise ValueError(f"x has to be a floating point tensor since it's going to be "
                         f"scaled. Got a {x.dtype.name} tensor instead.")
    if not 0 <= float(rate) < 1:
        raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). "
                         f"Received: rate={rate}")
    shape = x.shape if noise_shape is None else _shape(noise_shape)
    keep = uniform(shape, dtype=x.dtype, seed=seed).numpy() >= rate
    return x * np.where(keep, np.asarray(1 / (1 - float(rate)), x.dtype), 0).astype(x.dtype)


@op()
def l2_loss(t, name=None):
    return np.sum(t * t) / 2


@op(tensors=2)
def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    return -np.sum(labels * rules.log_softmax(logits, axis=axis), axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Cross entropy of integer class ``labels`` against ``logits`` [..., classes]."""
    from ..tensor import convert_to_tensor
    return _sparse_cross_entropy(labels, convert_to_tensor(logits))


def _sparse_cross_entropy(labels, logits, name=None):
    labels = np.asarray(labels)
    labels = check_range(labels, np.shape(logits)[-1], "label value")
    logp = rules.log_softmax(logits, axis=-1)
    flat = np.reshape(logp, (-1, np.shape(logp)[-1]))
    picked = flat[np.arange(labels.size), labels.reshape(-1)]
    return -np.reshape(picked, labels.shape)


sparse_softmax_cross_entropy_with_logits.__numpy__ = _sparse_cross_entropy


def _float(features):
    """TensorFlow's leaky_relu and gelu take integers as float32."""
    return np.asarray(features, np.float32) if np.result_type(features).kind in "iub" \
        else features


@op()
def leaky_relu(features, alpha=0.2, name=None):
    """``x`` where positive, else ``alpha * x``; the gradient at 0 is ``alpha``:
    ``sd.nn.leaky_relu(x, alpha=0.1)``."""
    features = _float(features)
    if isinstance(alpha, (int, float)):  # TensorFlow's alpha is a float32 attribute
        alpha = float(np.float32(alpha))
    return rules.leaky_relu(features, alpha)


@op()
def silu(features, beta=1.0, name=None):
    """``x * sigmoid(beta * x)`` (swish): ``sd.nn.silu(x)``."""
    return features * rules.sigmoid(beta * features)


swish = silu


@op()
def gelu(features, approximate=False, name=None):
    """``x * P(X <= x)`` for a standard normal X, or its tanh approximation:
    ``sd.nn.gelu(x, approximate=True)``.  The exact form needs scipy (erf)."""
    features = _float(features)
    if approximate:
        inner = 0.7978845608028654 * (features + 0.044715 * np.power(features, 3))
        return 0.5 * features * (1.0 + np.tanh(inner))
    return 0.5 * features * (1.0 + erf(features / 1.4142135623730951))


@op()
def softsign(features, name=None):
    """``x / (1 + |x|)``: ``sd.nn.softsign(x)``."""
    return rules.softsign(features)


@op()
def log_sigmoid(x, name=None):
    """``log(sigmoid(x))``, computed as ``-softplus(-x)``: ``sd.math.log_sigmoid(x)``."""
    return -rules.softplus(-x)


@op(tensors=2)
def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """``-labels log sigmoid(logits) - (1 - labels) log(1 - sigmoid(logits))``, computed
    stably as TensorFlow does (``max(x, 0) - x z + log(1 + exp(-|x|))``); labels get a
    gradient too: ``sd.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)``."""
    if np.shape(labels) != np.shape(logits):
        raise ValueError(f"logits and labels must have the same shape "
                         f"({np.shape(logits)} vs {np.shape(labels)})")
    zeros = np.zeros_like(logits)
    positive = logits >= zeros
    relu_logits = np.where(positive, logits, zeros)
    neg_abs_logits = np.where(positive, -logits, logits)
    return relu_logits - logits * labels + np.log1p(np.exp(neg_abs_logits))


@op()
def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x ** 2), epsilon))`` over ``axis`` (all axes by default); at
    zero the gradient is ``1 / sqrt(epsilon)``, as TensorFlow's:
    ``sd.math.l2_normalize(x, axis=-1)``."""
    axis = axis_arg(dim if axis is None else axis)
    square_sum = np.sum(np.square(x), axis=axis, keepdims=True)
    return x * guarded.rsqrt(np.maximum(square_sum, epsilon))


@op()
def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) over ``axes``: ``mean, var = sd.nn.moments(x, axes=[0])``.
    TensorFlow stops the gradient of the mean inside the variance, which changes no first
    derivative (the deviations sum to 0) but makes its second derivatives differ from the
    variance's: srcdiff differentiates the variance itself."""
    axes = axis_arg(axes)
    mean = np.mean(x, axis=axes, keepdims=True)
    variance = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    if not keepdims:
        mean, variance = np.squeeze(mean, axis=axes), np.squeeze(variance, axis=axes)
    return mean, variance


@op(tensors=5)
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``(x - mean) * scale / sqrt(variance + epsilon) + offset`` (``offset`` and ``scale``
    may be None), computed as TensorFlow does: ``x * inv + (offset - mean * inv)``."""
    inv = guarded.rsqrt(variance + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    return x * inv + (-mean * inv if offset is None else offset - mean * inv)


@op(tensors=2)
def bias_add(value, bias, data_format=None, name=None):
    """``value + bias`` along the channels: the last axis, or axis 1 for ``"NC..."``
    formats: ``sd.nn.bias_add(x @ w, b)``."""
    channels_first = data_format is not None and data_format.startswith("NC")
    axis = 1 if channels_first else -1
    if np.ndim(bias) != 1 or np.ndim(value) < 2 or np.shape(bias)[0] != np.shape(value)[axis]:
        raise ValueError(f"bias of shape {np.shape(bias)} must be a vector as long as the "
                         f"channel axis of value, of shape {np.shape(value)}")
    if channels_first:
        bias = np.reshape(bias, (-1,) + (1,) * (np.ndim(value) - 2))
    return value + bias

"""``sd.nn``: activations and losses."""
import numpy as np

from ..rules import nn as rules
from ._op import op, primitive_op

relu = primitive_op(rules.relu, "relu", ("features",))
sigmoid = primitive_op(rules.sigmoid, "sigmoid")
tanh = primitive_op(np.tanh, "tanh")
softplus = primitive_op(rules.softplus, "softplus", ("features",))


@op()
def softmax(logits, axis=None, name=None):
    return rules.softmax(logits, axis=-1 if axis is None else int(axis))


@op()
def log_softmax(logits, axis=None, name=None):
    return rules.log_softmax(logits, axis=-1 if axis is None else int(axis))


@op()
def l2_loss(t, name=None):
    return np.sum(t * t) / 2


@op(tensors=2)
def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    return -np.sum(labels * rules.log_softmax(logits, axis=axis), axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Cross entropy of integer class ``labels`` against ``logits`` [..., classes]."""
    from ..tensor import convert_to_tensor
    logits = convert_to_tensor(logits)
    labels = np.asarray(labels)
    logp = rules.log_softmax(logits, axis=-1)
    flat = np.reshape(logp, (-1, logp.shape[-1]))
    picked = flat[np.arange(labels.size), labels.reshape(-1)]
    return -np.reshape(picked, labels.shape)


sparse_softmax_cross_entropy_with_logits.__numpy__ = sparse_softmax_cross_entropy_with_logits

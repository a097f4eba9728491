"""``sd.nn``."""
from .ops.nn_ops import (batch_normalization, bias_add, dropout, elu,  # noqa: F401
                         embedding_lookup, gelu, l2_loss, l2_normalize, leaky_relu, log_softmax,
                         moments, relu, relu6, selu, sigmoid, sigmoid_cross_entropy_with_logits,
                         silu, softmax, softmax_cross_entropy_with_logits, softplus, softsign,
                         sparse_softmax_cross_entropy_with_logits, swish, tanh)
from .ops.sort_ops import top_k  # noqa: F401

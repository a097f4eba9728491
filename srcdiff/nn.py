"""``sd.nn``."""
from .ops.nn_ops import (l2_loss, log_softmax, relu, sigmoid, softmax,  # noqa: F401
                         softmax_cross_entropy_with_logits, softplus,
                         sparse_softmax_cross_entropy_with_logits, tanh)

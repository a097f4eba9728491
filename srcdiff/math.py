"""``sd.math``: every elementwise op and reduction, as ``tf.math`` holds them."""
from .ops.math_ops import *  # noqa: F401,F403
from .ops.nn_ops import (l2_normalize, log_sigmoid, log_softmax, sigmoid, softmax,  # noqa: F401
                         softplus, softsign)
from .ops.scan_ops import *  # noqa: F401,F403
from .ops.special_ops import *  # noqa: F401,F403
from .ops.scatter_ops import (segment_mean, segment_sum, unsorted_segment_mean,  # noqa: F401
                              unsorted_segment_sum)
from .ops.sort_ops import top_k  # noqa: F401

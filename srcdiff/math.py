"""``sd.math``: every elementwise op and reduction, as ``tf.math`` holds them."""
from .ops.math_ops import *  # noqa: F401,F403

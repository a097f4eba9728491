"""``sd.linalg``."""
from .ops.linalg_ops import det, einsum, inv, matmul, solve, tensordot, trace  # noqa: F401
from .ops.math_ops import norm  # noqa: F401

"""``sd.linalg``."""
from .ops.linalg_ops import (band_part, det, diag_part, einsum, inv, logdet, matmul,  # noqa: F401
                             matrix_transpose, slogdet, solve, tensordot, trace)
from .ops.math_ops import norm  # noqa: F401
from .ops.nn_ops import l2_normalize  # noqa: F401
from .ops.clip_ops import global_norm  # noqa: F401

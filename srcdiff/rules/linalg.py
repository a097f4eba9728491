"""Rules of products and linear algebra."""
import numpy as np

from .helpers import (T, einsum_adjoint, matmul_lhs, matmul_rhs, solve_adjoints,
                      tensordot_lhs, tensordot_rhs, unreduce)
from .registry import defvjp, defvjp_argnum

defvjp(np.matmul,
       lambda g, ans, a, b: matmul_lhs(g, a, b),
       lambda g, ans, a, b: matmul_rhs(g, a, b))
defvjp(np.dot,
       lambda g, ans, a, b: matmul_lhs(g, a, b) if np.ndim(b) else g * b,
       lambda g, ans, a, b: matmul_rhs(g, a, b) if np.ndim(a) else g * a)
defvjp(np.vdot,
       lambda g, ans, a, b: np.reshape(g * np.ravel(b), np.shape(a)),
       lambda g, ans, a, b: np.reshape(g * np.ravel(a), np.shape(b)))
defvjp(np.outer,
       lambda g, ans, a, b: np.reshape(g @ np.ravel(b), np.shape(a)),
       lambda g, ans, a, b: np.reshape(np.ravel(a) @ g, np.shape(b)))
defvjp(np.inner,
       lambda g, ans, a, b: tensordot_lhs(g, a, b, ([-1], [-1])),
       lambda g, ans, a, b: tensordot_rhs(g, a, b, ([-1], [-1])))
defvjp(np.tensordot,
       lambda g, ans, a, b, axes=2: tensordot_lhs(g, a, b, axes),
       lambda g, ans, a, b, axes=2: tensordot_rhs(g, a, b, axes))
defvjp_argnum(np.einsum,
              lambda i, g, ans, subscripts, *operands, **kw:
              einsum_adjoint(i - 1, g, subscripts, operands))
defvjp(np.linalg.inv, lambda g, ans, x: -T(ans) @ g @ T(ans))
defvjp(np.linalg.det,
       lambda g, ans, x: np.expand_dims(np.expand_dims(g * ans, -1), -1) * T(np.linalg.inv(x)))
defvjp(np.linalg.solve,
       lambda g, ans, a, b: solve_adjoints(g, a, b, ans)[0],
       lambda g, ans, a, b: solve_adjoints(g, a, b, ans)[1])
defvjp(np.linalg.norm,
       lambda g, ans, x, ord=None, axis=None, keepdims=False:
       unreduce(g / ans, x, axis, keepdims) * x)

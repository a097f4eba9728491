"""Rules of products and linear algebra."""
import collections

import numpy as np

from .helpers import (T, dot_lhs, dot_rhs, einsum_adjoint, matmul_lhs, matmul_rhs,
                      solve_adjoints, tensordot_lhs, tensordot_rhs)
from .registry import defexpansion, defvjp, defvjp_argnum, nondifferentiable, primitive

defvjp(np.matmul,  # a ufunc: its rule batches over leading axes, as matmul does
       lambda g, ans, a, b: matmul_lhs(g, a, b),
       lambda g, ans, a, b: matmul_rhs(g, a, b))
defvjp(np.dot,
       lambda g, ans, a, b: dot_lhs(g, a, b),
       lambda g, ans, a, b: dot_rhs(g, a, b))
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
defvjp(np.linalg.inv, lambda g, ans, x: -T(ans) @ g @ T(ans), batches=True)
defvjp(np.linalg.det, lambda g, ans, x: np.expand_dims(g * ans, (-2, -1)) * T(np.linalg.inv(x)),
       batches=True)
defvjp(np.linalg.solve,
       lambda g, ans, a, b: solve_adjoints(g, a, b, ans)[0],
       lambda g, ans, a, b: solve_adjoints(g, a, b, ans)[1])


# np.linalg.slogdet has two results: its expansion makes each a primitive of its own.
@primitive
def logabsdet(x):
    """log |det x|, the differentiable result of ``np.linalg.slogdet``."""
    return np.linalg.slogdet(x)[1]


@primitive
def sign_of_det(x):
    """The sign (or phase) of ``det x``, the piecewise constant result of ``np.linalg.slogdet``."""
    return np.linalg.slogdet(x)[0]


SlogdetResult = collections.namedtuple("SlogdetResult", "sign logabsdet")

defvjp(logabsdet, lambda g, ans, x: np.expand_dims(g, (-2, -1)) * T(np.linalg.inv(x)))
nondifferentiable(sign_of_det)
defexpansion(np.linalg.slogdet, lambda a: SlogdetResult(sign_of_det(a), logabsdet(a)))

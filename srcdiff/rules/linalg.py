"""Rules of products and linear algebra."""
import numpy as np

from .helpers import (T, cholesky_adjoint, dot_lhs, dot_rhs, eigh_adjoint, einsum_adjoint,
                      kron_adjoint, matmul_lhs, matmul_rhs, multi_dot_adjoint, qr_adjoint,
                      real_part, solve_adjoints, svd_adjoint, tensordot_lhs, tensordot_rhs)
from .registry import defexpansion, defform, defvjp, defvjp_argnum, nondifferentiable, primitive
from .shapes import SEQUENCE_FORMS

defvjp(np.matmul,  # a ufunc: its rule batches over leading axes, as matmul does
       lambda g, ans, a, b: matmul_lhs(g, a, b),
       lambda g, ans, a, b: matmul_rhs(g, a, b))
defvjp(np.dot,
       lambda g, ans, a, b: dot_lhs(g, a, b),
       lambda g, ans, a, b: dot_rhs(g, a, b))
defvjp(np.vdot,  # sum(conj(a) * b): conjugate-linear in a
       lambda g, ans, a, b: np.reshape(np.conj(g * np.ravel(b)), np.shape(a)),
       lambda g, ans, a, b: np.reshape(g * np.conj(np.ravel(a)), np.shape(b)))
defvjp(np.outer,
       lambda g, ans, a, b: np.reshape(g @ np.ravel(b), np.shape(a)),
       lambda g, ans, a, b: np.reshape(np.ravel(a) @ g, np.shape(b)))
defvjp(np.inner,
       lambda g, ans, a, b: tensordot_lhs(g, a, b, ([-1], [-1])),
       lambda g, ans, a, b: tensordot_rhs(g, a, b, ([-1], [-1])))
defvjp(np.tensordot,
       lambda g, ans, a, b, axes=2: tensordot_lhs(g, a, b, axes),
       lambda g, ans, a, b, axes=2: tensordot_rhs(g, a, b, axes))
defvjp(np.kron,
       lambda g, ans, a, b: kron_adjoint(0, g, a, b),
       lambda g, ans, a, b: kron_adjoint(1, g, a, b))


@primitive
def multi_dot(*arrays):
    """``np.linalg.multi_dot`` with its arrays as arguments, so each has an adjoint."""
    return np.linalg.multi_dot(arrays)


defvjp_argnum(multi_dot, lambda i, g, ans, *arrays: multi_dot_adjoint(i, g, arrays))
SEQUENCE_FORMS[np.linalg.multi_dot] = multi_dot
defvjp_argnum(np.einsum,
              lambda i, g, ans, subscripts, *operands, **kw:
              einsum_adjoint(i - 1, g, subscripts, operands))
defvjp(np.linalg.inv, lambda g, ans, x: -T(ans) @ g @ T(ans), batches=True)
defvjp(np.linalg.det, lambda g, ans, x: np.expand_dims(g * ans, (-2, -1)) * T(np.linalg.inv(x)),
       batches=True)
defvjp(np.linalg.solve,
       lambda g, ans, a, b: solve_adjoints(g, a, b, ans)[0],
       lambda g, ans, a, b: solve_adjoints(g, a, b, ans)[1])


# NumPy's decompositions have several results: the expansion of each makes every
# result a primitive of its own (``k``: which), so a result nobody reads gets no
# adjoint on the tape.  The compiler compiles the expansion as a call.
@primitive
def logabsdet(x):
    """log |det x|, the differentiable result of ``np.linalg.slogdet``."""
    return np.linalg.slogdet(x)[1]


@primitive
def sign_of_det(x):
    """The sign (or phase) of ``det x``, the piecewise constant result of ``np.linalg.slogdet``."""
    return np.linalg.slogdet(x)[0]


def slogdet(a):
    return sign_of_det(a), logabsdet(a)


@primitive
def eigh_factor(a, k, UPLO="L"):
    """Result ``k`` of ``np.linalg.eigh``: 0 the eigenvalues, 1 the eigenvectors."""
    return np.linalg.eigh(a, UPLO)[k]


def eigh(a, UPLO="L"):
    return eigh_factor(a, 0, UPLO), eigh_factor(a, 1, UPLO)


@primitive
def qr_factor(a, k, mode="reduced"):
    """Result ``k`` of ``np.linalg.qr``: 0 is Q, 1 is R (the modes that return both)."""
    if mode not in ("reduced", "complete"):
        raise NotImplementedError(f"the gradient of np.linalg.qr(mode={mode!r})")
    return np.linalg.qr(a, mode)[k]


def qr(a, mode="reduced"):
    return qr_factor(a, 0, mode), qr_factor(a, 1, mode)


@primitive
def svd_factor(a, k, full_matrices=True, compute_uv=True, hermitian=False):
    """Result ``k`` of ``np.linalg.svd``: 0 is U, 1 the singular values, 2 is Vh."""
    if not compute_uv:  # by keyword, it is singular_values (below)
        raise NotImplementedError("the gradient of np.linalg.svd(a, False, False): pass "
                                  "compute_uv=False by keyword, or call np.linalg.svdvals")
    return np.linalg.svd(a, full_matrices, True, hermitian)[k]


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    return (svd_factor(a, 0, full_matrices, compute_uv, hermitian),
            svd_factor(a, 1, full_matrices, compute_uv, hermitian),
            svd_factor(a, 2, full_matrices, compute_uv, hermitian))


def singular_values(a, full_matrices=True, compute_uv=False, hermitian=False):
    """``np.linalg.svd(a, compute_uv=False)``: the singular values alone."""
    return svd_factor(a, 1, False, True, hermitian)


defvjp(logabsdet, lambda g, ans, x: np.expand_dims(real_part(g), (-2, -1)) * T(np.linalg.inv(x)))
nondifferentiable(sign_of_det)
defvjp(eigh_factor, lambda g, ans, a, k, UPLO="L": eigh_adjoint(k, g, a, UPLO))
defvjp(qr_factor, lambda g, ans, a, k, mode="reduced": qr_adjoint(k, g, a, mode))
defvjp(svd_factor,
       lambda g, ans, a, k, full_matrices=True, compute_uv=True, hermitian=False:
       svd_adjoint(k, g, a, full_matrices, hermitian))
if hasattr(np.linalg, "svdvals"):  # NumPy 2
    defvjp(np.linalg.svdvals, lambda g, ans, x: svd_adjoint(1, g, x, False, False))
defvjp(np.linalg.cholesky, lambda g, ans, a, *, upper=False: cholesky_adjoint(g, ans, upper))
for _f, _expansion in ((np.linalg.slogdet, slogdet), (np.linalg.eigh, eigh),
                       (np.linalg.qr, qr), (np.linalg.svd, svd)):
    defexpansion(_f, _expansion, named=type(_f(np.eye(2))))
defform(np.linalg.svd, "compute_uv", False, singular_values)

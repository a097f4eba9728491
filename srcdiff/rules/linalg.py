"""Rules of products and linear algebra.

NumPy 2's array-API spellings (``np.linalg.outer``, ``np.linalg.trace``, ...) share the
rules and helpers of the functions they spell; the functions built of others
(``np.linalg.cond``, ``matrix_power``, ``tensorsolve``, the norms) are expansions."""
import math
import operator

import numpy as np

from .helpers import (T, cholesky_adjoint, diagonal_adjoint, dot_lhs, dot_rhs, eigh_adjoint,
                      einsum_adjoint, kron_adjoint, matmul_lhs, matmul_rhs, multi_dot_adjoint,
                      qr_adjoint, read_triangle, real_only, real_part, solve_adjoints,
                      svd_adjoint, tensordot_lhs, tensordot_rhs, trace_adjoint, unbroadcast)
from .registry import (defexpansion, defform, defvjp, defvjp_argnum, nondifferentiable,
                       primitive, rule_of)
from .shapes import SEQUENCE_FORMS, converted_back

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


def vecdot_adjoint(k, g, x1, x2, axis):
    """The adjoint of ``(x1, x2)[k]`` in ``np.vecdot``, the sum of ``conj(x1) * x2`` along
    ``axis`` of each (past it, they broadcast): conjugate-linear in x1."""
    a, b = np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1)
    g = np.expand_dims(g, -1)
    d = unbroadcast(np.conj(g * b), a) if k == 0 else unbroadcast(g * np.conj(a), b)
    return np.moveaxis(d, -1, axis)


def in_space(v):
    """Vectors of two along the last axis, (x, y), as vectors of three, (x, y, 0)."""
    return np.pad(v, [(0, 0)] * (np.ndim(v) - 1) + [(0, 3 - np.shape(v)[-1])])


def cross_adjoint(k, g, a, b, axisa, axisb, axisc, axis=None):
    """The adjoint of ``(a, b)[k]`` in ``np.cross``: ``<g, a x b> = <a, b x g> = <b, g x a>``.
    A vector of two is one of three in the plane, and the product of two such is its
    z-component alone: its adjoint ``g`` is that of the vector ``(0, 0, g)``."""
    if axis is not None:  # it overrides the other three
        axisa = axisb = axisc = axis
    x, y = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
    if np.shape(x)[-1] == np.shape(y)[-1] == 2:
        g = np.pad(np.expand_dims(g, -1), [(0, 0)] * np.ndim(g) + [(2, 0)])
    else:
        g = np.moveaxis(g, axisc, -1)
    d = np.cross(in_space(y), g) if k == 0 else np.cross(g, in_space(x))
    own = (x, y)[k]
    return np.moveaxis(unbroadcast(d[..., :np.shape(own)[-1]], own), -1, (axisa, axisb)[k])


defvjp(np.cross,
       lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None:
       cross_adjoint(0, g, a, b, axisa, axisb, axisc, axis),
       lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None:
       cross_adjoint(1, g, a, b, axisa, axisb, axisc, axis))


# NumPy 2's array-API spellings of the functions above (their keywords, keyword-only in
# NumPy, are parameters here: the compiler binds an expansion's call by position).
def tensordot(x1, x2, axes=2):
    """``np.linalg.tensordot``: ``np.tensordot``."""
    return np.tensordot(x1, x2, axes)


def vecdot(x1, x2, axis=-1):
    """``np.linalg.vecdot``: ``np.vecdot``."""
    return np.vecdot(x1, x2, axis=axis)


def cross(x1, x2, axis=-1):
    """``np.linalg.cross``: ``np.cross`` of vectors of three."""
    if np.shape(x1)[axis] != 3 or np.shape(x2)[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors")
    return np.cross(x1, x2, axis=axis)


if hasattr(np.linalg, "vecdot"):
    defvjp(np.linalg.matmul, *rule_of(np.matmul).vjps, batches=True)
    defvjp(np.linalg.outer, *rule_of(np.outer).vjps)
    for _expansion in (tensordot, vecdot, cross):
        defexpansion(getattr(np.linalg, _expansion.__name__), _expansion)
    defvjp(np.vecdot,  # a gufunc: its rule need not batch
           lambda g, ans, x1, x2, *, axis=-1: vecdot_adjoint(0, g, x1, x2, axis),
           lambda g, ans, x1, x2, *, axis=-1: vecdot_adjoint(1, g, x1, x2, axis),
           batches=False)
    # functions of the last two axes: views, but the trace
    for _f in (np.matrix_transpose, np.linalg.matrix_transpose):
        defvjp(_f, lambda g, ans, x: np.swapaxes(g, -1, -2), view=True, batches=True)
    defvjp(np.linalg.diagonal,
           lambda g, ans, x, *, offset=0: diagonal_adjoint(g, x, offset, -2, -1), view=True)
    defvjp(np.linalg.trace,  # summed in dtype: through a cast to integers, no gradient
           lambda g, ans, x, *, offset=0, dtype=None:
           converted_back(trace_adjoint(g, x, offset, -2, -1), ans, x))
if hasattr(np, "matvec"):  # NumPy 2.2
    MATVEC, VECMAT = "...ij,...j->...i", "...i,...ij->...j"
    defvjp(np.matvec,
           lambda g, ans, x1, x2: einsum_adjoint(0, g, MATVEC, (x1, x2)),
           lambda g, ans, x1, x2: einsum_adjoint(1, g, MATVEC, (x1, x2)), batches=False)
    defvjp(np.vecmat,  # conj(x1) @ x2: conjugate-linear in x1
           lambda g, ans, x1, x2: np.conj(einsum_adjoint(0, g, VECMAT, (np.conj(x1), x2))),
           lambda g, ans, x1, x2: einsum_adjoint(1, g, VECMAT, (np.conj(x1), x2)),
           batches=False)


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
defvjp(np.linalg.eigvalsh, lambda g, ans, a, UPLO="L": eigh_adjoint(0, g, a, UPLO),
       batches=True)


def full_rank(rank, a, what):
    """Refuse ``a`` where its ``rank`` (that of each of its matrices) is deficient: its
    pseudo-inverse cut singular values (rcond), and jumps as they move."""
    if np.any(rank < min(np.shape(a)[-2:])):
        raise NotImplementedError(f"the gradient of {what} of a matrix of deficient rank "
                                  "(singular values cut by rcond): it is not continuous")


def pinv_adjoint(g, p, a, hermitian):
    """The adjoint of ``a`` in ``p = pinv(a)``, of full rank (Golub and Pereyra):
    ``dp = -p da p + p p^T da^T (I - a p) + (I - p a) da^T p^T p``.  A hermitian ``a``
    is read from its lower triangle, as np.linalg.eigh reads it."""
    x = real_only(a, "np.linalg.pinv")
    if hermitian:
        x = np.tril(x) + T(np.tril(x, -1))
    full_rank(np.rint(np.sum(p * T(x), axis=(-2, -1))), x, "np.linalg.pinv")  # trace(p x)
    gt = T(g)
    d = (-(T(p) @ g @ T(p)) + (gt - x @ (p @ gt)) @ (p @ T(p))
         + (T(p) @ p) @ (gt - (gt @ p) @ x))
    return read_triangle(d, False) if hermitian else d


defvjp(np.linalg.pinv,
       lambda g, ans, a, rcond=None, hermitian=False, *, rtol=None:
       pinv_adjoint(g, ans, a, hermitian), batches=True)


@primitive
def eig_factor(a, k):
    """Result ``k`` of ``np.linalg.eig``: 0 the eigenvalues, 1 the eigenvectors."""
    return np.linalg.eig(a)[k]


def eig(a):
    return eig_factor(a, 0), eig_factor(a, 1)


def eig_adjoint(k, g, a):
    """The adjoint of ``a`` from that of ``np.linalg.eig(a)[k]``.  Distinct eigenvalues
    are analytic, ``dw = diag(inv(v) da v)``; where two meet, v is singular and the
    adjoint inf or nan.  Each eigenvector is defined up to a factor (NumPy's: of norm
    1, in a phase of LAPACK's choosing): they are refused."""
    if k == 1:
        if not np.any(g):  # no adjoint (compiled code passes zeros for a result not read)
            return np.zeros(np.shape(a))
        raise NotImplementedError("the gradient of np.linalg.eig's eigenvectors, each "
                                  "defined up to its phase: differentiate the eigenvalues, "
                                  "or use np.linalg.eigh for a symmetric matrix")
    v = np.linalg.eig(a)[1]
    return T(np.linalg.inv(v)) @ (np.expand_dims(g, -1) * T(v))


defvjp(eig_factor, lambda g, ans, a, k: eig_adjoint(k, g, a))
defvjp(np.linalg.eigvals, lambda g, ans, a: eig_adjoint(0, g, a))
defexpansion(np.linalg.eig, eig, named=type(np.linalg.eig(np.eye(2))))


@primitive
def lstsq_part(a, b, k, rcond=None):
    """Result ``k`` of ``np.linalg.lstsq``: 0 the solution, 1 the sums of squared
    residuals, 3 the singular values of ``a``."""
    return np.linalg.lstsq(a, b, rcond)[k]


@primitive
def lstsq_rank(a, b, rcond=None):
    """The rank of ``a`` that ``np.linalg.lstsq`` finds: piecewise constant."""
    return np.linalg.lstsq(a, b, rcond)[2]


def lstsq(a, b, rcond=None):
    return (lstsq_part(a, b, 0, rcond), lstsq_part(a, b, 1, rcond), lstsq_rank(a, b, rcond),
            lstsq_part(a, b, 3, rcond))


def lstsq_adjoints(g, a, b, k, rcond):
    """The adjoints of ``a`` and ``b`` from that of ``np.linalg.lstsq(a, b, rcond)[k]``:
    0, the solution ``x = pinv(a) b``, of ``a`` of full rank; 1, the squared residuals
    ``|b - a x|^2``, stationary in x (none where ``a`` is wide or of deficient rank);
    3, the singular values.  ``b``'s columns are its one column where it is a vector."""
    if k == 3:
        return svd_adjoint(1, g, a, False, False), np.zeros(np.shape(b))
    if np.size(g) == 0:
        return np.zeros(np.shape(a)), np.zeros(np.shape(b))
    columns = np.reshape(real_only(b, "np.linalg.lstsq"), (np.shape(b)[0], -1))
    a = real_only(a, "np.linalg.lstsq")
    if k == 1:
        x = np.reshape(lstsq_part(a, b, 0, rcond), (np.shape(a)[1], -1))
        d = 2 * g * (columns - a @ x)
        return -(d @ T(x)), np.reshape(d, np.shape(b))
    full_rank(lstsq_rank(a, b, rcond), a, "np.linalg.lstsq")
    p = np.linalg.pinv(a, 0.0)  # a is of full rank by lstsq's cutoff: keep all
    g = np.reshape(g, (np.shape(a)[1], -1))
    return pinv_adjoint(g @ T(columns), p, a, False), np.reshape(T(p) @ g, np.shape(b))


defvjp(lstsq_part,
       lambda g, ans, a, b, k, rcond=None: lstsq_adjoints(g, a, b, k, rcond)[0],
       lambda g, ans, a, b, k, rcond=None: lstsq_adjoints(g, a, b, k, rcond)[1])
nondifferentiable(lstsq_rank)
defexpansion(np.linalg.lstsq, lstsq)


# Functions NumPy composes of others: written with the same primitives, the same way.
def matrix_power(a, n):
    """``np.linalg.matrix_power``: products of ``a`` (of its inverse for n < 0), formed
    as NumPy forms them, by repeated squaring past the third power."""
    n = operator.index(n)
    if np.shape(a)[-1] != np.shape(a)[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if n == 0:
        return np.zeros_like(a) + np.eye(np.shape(a)[-1], dtype=np.result_type(a))
    if n < 0:
        a = np.linalg.inv(a)
        n = -n
    if n <= 3:
        power = a
        for _ in range(n - 1):
            power = power @ a
        return power
    z = a
    while n % 2 == 0:
        z = z @ z
        n = n // 2
    power = z
    n = n // 2
    while n > 0:
        z = z @ z
        if n % 2 == 1:
            power = power @ z
        n = n // 2
    return power


def cond(x, p=None):
    """``np.linalg.cond``: the largest singular value over the smallest (p None or 2;
    the inverse for -2), else ``norm(x, p) * norm(inv(x), p)``."""
    if p is None or p == 2 or p == -2:
        s = np.linalg.svd(x, compute_uv=False)
        if p == -2:
            return s[..., -1] / s[..., 0]
        return s[..., 0] / s[..., -1]
    return np.linalg.norm(x, p, (-2, -1)) * np.linalg.norm(np.linalg.inv(x), p, (-2, -1))


def tensorsolve(a, b, axes=None):
    """``np.linalg.tensorsolve``: the axes ``axes`` of ``a`` moved last, then the solve of
    the square matrix it is seen as, against ``b`` flattened."""
    if axes is not None:
        a = np.moveaxis(a, axes, list(range(np.ndim(a) - len(axes), np.ndim(a))))
    shape = np.shape(a)[np.ndim(b):]
    x = np.linalg.solve(np.reshape(a, (np.size(b), -1)), np.ravel(b))
    return np.reshape(x, shape)


def tensorinv(a, ind=2):
    """``np.linalg.tensorinv``: the inverse of ``a`` seen as a matrix, its first ``ind``
    axes against the others, with the two groups of axes swapped."""
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = np.shape(a)
    inverse = np.linalg.inv(np.reshape(a, (math.prod(shape[ind:]), -1)))
    return np.reshape(inverse, shape[ind:] + shape[:ind])


def merged_axes(shape, axis):
    """(order, shape): the transposition that brings the axes of the tuple ``axis`` first,
    in its order, and the shape that merges them into one, as np.linalg.vector_norm has it."""
    axes = [a % len(shape) for a in axis]
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    return axis + rest, (math.prod(shape[a] for a in axes),) + tuple(shape[i] for i in rest)


def kept_dims(shape, axis):
    """``shape`` with each axis of ``axis`` (all for None) of length 1."""
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis) % len(shape)
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """``np.linalg.vector_norm``: ``np.linalg.norm`` along one axis, of ``x`` flattened
    (axis None), or with the axes of a tuple merged into one, as NumPy computes it."""
    if axis is None:
        norm = np.linalg.norm(np.ravel(x), ord, 0)
    elif isinstance(axis, tuple):
        order, shape = merged_axes(np.shape(x), axis)
        norm = np.linalg.norm(np.reshape(np.transpose(x, order), shape), ord, 0)
    else:
        norm = np.linalg.norm(x, ord, axis)
    if keepdims:
        norm = np.reshape(norm, kept_dims(np.shape(x), axis))
    return norm


def matrix_norm(x, keepdims=False, ord="fro"):
    """``np.linalg.matrix_norm``: ``np.linalg.norm`` over the last two axes."""
    return np.linalg.norm(x, ord, (-2, -1), keepdims)


defexpansion(np.linalg.matrix_power, matrix_power)
defexpansion(np.linalg.cond, cond)
defexpansion(np.linalg.tensorsolve, tensorsolve)
defexpansion(np.linalg.tensorinv, tensorinv)
if hasattr(np.linalg, "vector_norm"):  # NumPy 2
    defexpansion(np.linalg.vector_norm, vector_norm)
    defexpansion(np.linalg.matrix_norm, matrix_norm)

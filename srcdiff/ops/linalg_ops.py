"""Products and linear algebra under TensorFlow's names (``sd.linalg.*`` among them)."""
import numpy as np

from ..rules.helpers import T
from ..rules.linalg import logabsdet, sign_of_det
from ._op import op


@op(tensors=2)
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           name=None):
    """The matrix product (batched over leading axes), optionally of transposes or adjoints:
    ``sd.matmul(x, w, transpose_b=True)`` is ``x @ w.T``."""
    if transpose_a or adjoint_a:
        a = np.conjugate(T(a)) if adjoint_a else T(a)
    if transpose_b or adjoint_b:
        b = np.conjugate(T(b)) if adjoint_b else T(b)
    return np.matmul(a, b)


@op(tensors=2)
def tensordot(a, b, axes, name=None):
    """The sum of products over ``axes`` (NumPy's ``tensordot``):
    ``sd.tensordot(a, b, axes=1)``."""
    return np.tensordot(a, b, axes)


def einsum(equation, *inputs, **kwargs):
    """Einstein summation over Tensors (explicit ``->`` output for gradients)."""
    from ..tensor import apply, convert_to_tensor
    return apply(np.einsum, equation, *[convert_to_tensor(x) for x in inputs])


einsum.__numpy__ = np.einsum


@op()
def inv(input, adjoint=False, name=None):
    out = np.linalg.inv(input)
    return np.conjugate(T(out)) if adjoint else out


@op()
def det(input, name=None):
    return np.linalg.det(input)


@op(tensors=2)
def solve(matrix, rhs, adjoint=False, name=None):
    if adjoint:
        matrix = np.conjugate(T(matrix))
    return np.linalg.solve(matrix, rhs)


@op()
def trace(x, name=None):
    return np.trace(x, axis1=-2, axis2=-1)


@op()
def slogdet(input, name=None):
    """The sign and the log of the absolute value of the determinant."""
    return sign_of_det(input), logabsdet(input)


@op()
def logdet(matrix, name=None):
    """log det of a Hermitian positive definite matrix."""
    return logabsdet(matrix)


@op()
def diag_part(input, k=0, name=None):
    """The diagonal of the innermost matrices."""
    return np.diagonal(input, k, axis1=-2, axis2=-1)


@op()
def band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """The band of the innermost matrices, zeros outside: ``num_lower`` diagonals below the
    main one and ``num_upper`` above (a negative count keeps that whole triangle):
    ``sd.linalg.band_part(x, 0, -1)`` is the upper triangle."""
    rows, cols = np.shape(input)[-2:]
    below = np.arange(rows)[:, None] - np.arange(cols)[None, :]  # i - j
    num_lower, num_upper = int(num_lower), int(num_upper)
    band = np.logical_and(np.logical_or(num_lower < 0, below <= num_lower),
                          np.logical_or(num_upper < 0, -below <= num_upper))
    return np.where(band, input, np.zeros_like(input))


@op()
def matrix_transpose(a, conjugate=False, name=None):
    """Swap the last two axes."""
    return np.conjugate(T(a)) if conjugate else T(a)

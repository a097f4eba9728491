"""Compiled gradients of straight-line statements: assignments, tuple unpacking,
augmented assignment, operators, conditions, Python numbers mixed with arrays,
broadcasting.  Each is checked against the eager tape and finite differences."""
import numpy as np
import pytest

from compiler_programs import check_grad

RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 1.5, size=(3,))
Y = RNG.uniform(0.5, 1.5, size=(3,))
M = RNG.uniform(0.5, 1.5, size=(2, 3))


# --- assignments ---

def chained(x):
    a = b = np.sin(x)
    c = a * b
    return np.sum(c + a)


def rebinding(x):
    y = x * 2.0
    y = np.sin(y) * y  # reads the old y and overwrites it
    z = y
    y = z * x
    return np.sum(y * z)


def tuple_unpacking(x, y):
    a, b = x * y, np.cos(x)
    a, b = b, a  # swap: both values are read before either is written
    (c, d), e = (a + b, a - b), a
    return np.sum(c * d + e)


def two_results(x):
    return np.sin(x), x * x


def unpack_a_call(x):
    p, q = two_results(x)
    return np.sum(p * q)


def unpack_np_split(x):
    r, s = np.split(x, [1])
    return np.sum(r) * np.sum(s ** 2)


def unpack_a_value(m):
    first, second = m  # rows of an array
    return np.sum(first * second)


def augmented(x, y):
    z = x * 1.0
    z += y
    z *= x
    z -= np.sin(y)
    z /= 1.0 + y * y
    z **= 2
    return np.sum(z)


@pytest.mark.parametrize("f, args, wrt", [
    (chained, (X,), 0),
    (rebinding, (X,), 0),
    (tuple_unpacking, (X, Y), (0, 1)),
    (unpack_a_call, (X,), 0),
    (unpack_np_split, (X,), 0),
    (unpack_a_value, (M,), 0),
    (augmented, (X, Y), (0, 1)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_assignments(f, args, wrt):
    check_grad(f, args, wrt)


# --- operators ---

def binary_operators(x, y):
    return np.sum(x + y - x * y + x / y + y ** x + x ** 3 - 2.0 / x + 0.5 ** y)


def unary_operators(x):
    return np.sum(-x + (+x) * -(-x) - abs(x - 1.0))


def matmul_operator(m, x):
    return np.sum((m @ x) ** 2) + x @ x


def constant_folding(x):
    scale = 2.0 * 3.0 - 1
    return np.sum(x * scale + (1 - 2) * x)


@pytest.mark.parametrize("f, args, wrt", [
    (binary_operators, (X, Y), (0, 1)),
    (unary_operators, (X,), 0),
    (matmul_operator, (M, X), (0, 1)),
    (constant_folding, (X,), 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_operators(f, args, wrt):
    check_grad(f, args, wrt)


# --- comparisons and boolean operators in conditions ---

def comparisons(x, y):
    s = np.sum(x)
    t = np.sum(y)
    z = x * y
    if s > t and not t > 10.0:
        z = z * 2.0
    if s < 0.0 or t >= 1.0:
        z = np.sin(z)
    if 0.0 < s <= 100.0 != t:
        z = z + x
    if s == s and t != s + 1.0:
        z = z * y
    return np.sum(z)


def boolean_value(x):
    big = np.sum(x) > 1.0
    small = not big
    y = x * 3.0
    if big and not small:
        y = y * x
    return np.sum(y)


def conditional_expression(x):
    y = np.sin(x) if np.sum(x) > 0 else np.cos(x)
    return np.sum(y * x if np.max(x) < 10.0 else y)


@pytest.mark.parametrize("f, args, wrt", [
    (comparisons, (X, Y), (0, 1)),
    (comparisons, (-X, Y * 0.1), (0, 1)),
    (boolean_value, (X,), 0),
    (boolean_value, (X * 0.1,), 0),
    (conditional_expression, (X,), 0),
    (conditional_expression, (-X,), 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_conditions(f, args, wrt):
    check_grad(f, args, wrt)


# --- Python numbers mixed with arrays ---

def python_numbers(x, a, n):
    y = x * a + n          # float and int operands
    y = y / (n + 1) ** 2   # arithmetic on ints only: no gradient
    return np.sum(y) * a - a ** 2 + n * a


def scalar_function(a, b):
    c = a * b + 1.0
    return c * c / b - a


def reduced_then_scalar(x, a):
    total = np.sum(x ** 2)  # a 0-d value from here on, mixed with a Python float
    total = total * a + 1
    return total / a + np.mean(x) * 2


@pytest.mark.parametrize("f, args, wrt", [
    (python_numbers, (X, 0.7, 3), (0, 1)),
    (python_numbers, (X, 0.7, 3), "a"),
    (scalar_function, (0.3, 1.7), (0, 1)),
    (reduced_then_scalar, (X, 0.7), (0, 1)),
], ids=lambda v: getattr(v, "__name__", "") if callable(v) else str(v))
def test_python_numbers(f, args, wrt):
    check_grad(f, args, wrt)


# --- broadcasting (Tangent got / and ** wrong) ---

def broadcast_all(a, b):
    return np.sum(a + b) + np.sum(a - b) + np.sum(a * b) + np.sum(a / b) + np.sum(a ** b)


@pytest.mark.parametrize("shape_a, shape_b", [
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    ((2, 3), ()),
    ((), (2, 3)),
    ((4, 1, 3), (2, 1)),
])
def test_broadcasting(shape_a, shape_b):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 1.5, size=shape_a)
    b = rng.uniform(0.5, 1.5, size=shape_b)
    check_grad(broadcast_all, (a, b), (0, 1))


def broadcast_with_float(a, s):
    return np.sum(a / s + s / a + a ** s + s ** a - s * a)


def test_broadcasting_with_a_python_float():
    check_grad(broadcast_with_float, (M, 1.3), (0, 1))

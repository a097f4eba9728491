"""Compiled gradients of straight-line statements: assignments, tuple unpacking,
augmented assignment, operators, conditions, Python numbers mixed with arrays,
broadcasting.  Each is checked against the eager tape and finite differences."""
import contextlib
import warnings

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad, check_three_ways
from util import numerical_jacobian

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


def unpack_into_its_own_name(m):
    m, y = m  # the rows of the old m, both
    return np.sum(m * y)


def starred_rest_of_an_array(x):
    first, *rest = x  # rest: a list of the items after the first, as Python gives
    return first * sum(rest) + len(rest)


def starred_middle_of_an_array(x):
    first, *mid, last = x
    return first * last + sum(mid) * 2.0


def starred_rows(m):
    top, *others = m
    return np.sum(top * others[0]) + np.sum(others[-1] ** 2)


def starred_tuple(x):
    t = (x, np.sin(x), x * 2.0, np.cos(x))
    a, *b, c = t
    return np.sum(a * c) + np.sum(b[0] * b[1])


def starred_literal(x):
    a, *b = x * 2.0, np.sin(x), x
    *c, d = [x, x * x]
    return np.sum(a * b[1] + b[0] + c[0] * d)


def starred_empty_middle(x):
    a, *b, c = x[:2]
    return np.sum(a * c) + len(b)


def starred_loop_target(m):
    total = 0.0
    for head, *tail in m:
        total = total + head * sum(tail)
    return total


@pytest.mark.parametrize("f, args", [
    (unpack_into_its_own_name, (M[:, :2],)),
    (starred_rest_of_an_array, (X,)),
    (starred_middle_of_an_array, (X,)),
    (starred_rows, (M,)),
    (starred_tuple, (X,)),
    (starred_literal, (X,)),
    (starred_empty_middle, (X,)),
    (starred_loop_target, (M,)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_starred_targets(f, args):
    check_three_ways(f, args)


def starred_vector(x):
    a, *b = x
    return np.stack(b) * a


def test_starred_jacobian():
    np.testing.assert_allclose(sd.jacobian(starred_vector)(X),
                               numerical_jacobian(starred_vector, X), rtol=1e-6, atol=1e-8)


def starred_too_short(x):
    a, *b, c = x[:1]
    return np.sum(a * c)


def unpack_too_many(x):
    a, b = x
    return a * b


def starred_dict(x):
    d = {1: x, 0: x * 2.0}
    a, *b = d  # a dict's keys: not its items at positions 0, 1
    return np.sum(x) * a


@pytest.mark.parametrize("f", [starred_too_short, unpack_too_many],
                         ids=lambda f: f.__name__)
def test_unpacking_checks_what_python_checks(f):
    with pytest.raises(ValueError):
        f(X)
    with pytest.raises(ValueError):
        sd.grad(f)(X)


def test_unpacking_a_dict_is_refused_when_it_runs():
    assert starred_dict(X) == np.sum(X)  # Python unpacks the keys
    with pytest.raises(TypeError, match="by position"):
        sd.grad(starred_dict)(X)


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


# --- assignment expressions (n := v): lowered where Python evaluates them ---

def walrus_in_a_condition(x):
    if (n := np.sum(x)) > 0:
        return n * 2.0
    return n


def walrus_first_operand_of_and(x):
    if (n := np.sum(x) - 1.5) > 0 and n < 100.0:  # n read after it is bound
        return np.max(x) * n
    return n * n


def walrus_under_not_and_or(x):
    if not (n := np.sum(x) - 5.0) or n > 0:
        return n
    return n * n


def walrus_in_a_while_condition(x):
    k = 0
    s = 0.0
    while (t := np.sum(x ** (k + 1))) < 5.0:  # bound again before each test
        s = s + t
        k += 1
    return s * t


def walrus_in_a_comprehension_condition(x):
    ys = [y for v in x if (y := np.sin(v)) > 0.5]
    return sum(ys) * y  # y: the enclosing function's, the last one bound


def walrus_accumulates_in_a_comprehension(x):
    acc = 0.0
    parts = [(acc := acc + v * v) for v in x]
    return acc * parts[1]


def walrus_as_an_argument(x):
    return np.sum(x * (m := np.cos(x))) + np.sum(m)


def walrus_in_a_branch_of_if_expression(x):
    c = np.sum(x) > 10.0
    if (np.min(x) if c else (n := np.max(x))) > 0:  # bound only where taken
        return n * 3.0
    return 0.0


def walrus_after_a_call_in_a_comparison(x):
    if np.max(x) < (n := np.sum(x)):  # np.max runs first, as in Python
        return n * np.max(x)
    return n


@pytest.mark.parametrize("f", [
    walrus_in_a_condition, walrus_first_operand_of_and, walrus_under_not_and_or,
    walrus_in_a_while_condition, walrus_in_a_comprehension_condition,
    walrus_accumulates_in_a_comprehension, walrus_as_an_argument,
    walrus_in_a_branch_of_if_expression, walrus_after_a_call_in_a_comparison,
], ids=lambda f: f.__name__)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_walrus(f, sign):
    check_three_ways(f, (sign * X,))


def walrus_vector(x):
    return np.sin(n := x * 2.0) * n


def test_walrus_jacobian():
    np.testing.assert_allclose(sd.jacobian(walrus_vector)(X),
                               numerical_jacobian(walrus_vector, X), rtol=1e-6, atol=1e-8)


def test_walrus_binds_its_name_in_the_generated_code():
    forward = sd.adjoint_source(walrus_in_a_condition).split("def ")[1]
    assert "    n = np.sum(x)\n    cond_1 = n > 0\n" in forward  # n itself, not a copy


def walrus_read_before(x):
    n = 1.0
    return np.sum(x) * (n + (n := 2.0))


def walrus_in_right_operand(x):
    if np.sum(x) > 0 and (n := np.max(x)) > 0:
        return n
    return 0.0


def walrus_in_a_later_link(x):
    return np.sum(x) * (0 < np.sum(x) < (s := 3.0))


def walrus_twice(x):
    return (a := np.sum(x)) + (a := 1.0)


def walrus_in_a_lambda(x):
    f = lambda t: (u := t * 2.0)  # noqa: E731
    return np.sum(f(x))


def walrus_in_an_index_target(x):
    n = 1
    out = np.zeros(3)
    out[n] = (n := 2) * 1.0  # Python reads n after the value: A-normal form before
    return np.sum(out * x)


def walrus_in_an_assert(x):
    assert (n := np.sum(x)) > -10.0
    return n


def walrus_in_an_f_string(x):
    return np.sum(x) * len(f"{(n := 3)}")


WALRUS_REFUSED = [
    (walrus_read_before, "read in the same statement before"),
    (walrus_in_right_operand, "only sometimes"),
    (walrus_in_a_later_link, "only sometimes"),
    (walrus_twice, "assigned twice"),
    (walrus_in_a_lambda, "lambda"),
    (walrus_in_an_index_target, "read in the same statement before"),
    (walrus_in_an_assert, "assert"),
    (walrus_in_an_f_string, "f-string"),
]


# --- with-blocks over managers that change no value and no path ---

def with_errstate(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x)
        z = y * x
    return np.sum(z)


def with_catch_warnings(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = np.sqrt(x)
    return np.sum(y * x)


def with_several_managers(x):
    with np.errstate(all="ignore"), warnings.catch_warnings(), contextlib.nullcontext():
        y = np.tanh(x) * x
    return np.sum(y)


def with_an_early_return_in_a_loop(x):
    s = 0.0
    for v in x:
        with np.errstate(invalid="ignore"):
            if v > 0.5:
                return s + np.sin(v)
            s = s + v * v
    return s


def with_a_local_function(x):
    def scaled(t):
        return np.cos(t) * x
    square = lambda t: t * t  # noqa: E731
    with np.errstate(over="ignore"):
        y = scaled(x) + square(x)
    return np.sum(y)


@pytest.mark.parametrize("f", [
    with_errstate, with_catch_warnings, with_several_managers,
    with_an_early_return_in_a_loop, with_a_local_function,
], ids=lambda f: f.__name__)
def test_with_blocks(f):
    check_three_ways(f, (X,))


def with_errstate_vector(x):
    with np.errstate(divide="ignore"):
        y = np.log(x) * x
    return y


def test_with_block_jacobian():
    np.testing.assert_allclose(sd.jacobian(with_errstate_vector)(X), np.diag(np.log(X) + 1),
                               rtol=1e-12)


def root_quiet(x):
    with np.errstate(divide="ignore"):
        y = np.sqrt(x)
    return np.sum(y)


def root_filtered(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = np.sqrt(x)
    return np.sum(y)


def root_loud(x):
    y = np.sqrt(x)
    return np.sum(y)


@pytest.mark.parametrize("f, quiet", [(root_quiet, True), (root_filtered, True),
                                      (root_loud, False)], ids=lambda v: getattr(v, "__name__", ""))
def test_the_adjoint_of_a_with_block_runs_under_its_manager(f, quiet):
    zero = np.array([0.0, 1.0])  # the adjoint of sqrt at 0 divides by zero
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        context = contextlib.nullcontext() if quiet else pytest.raises(RuntimeWarning)
        with context:
            g = sd.grad(f)(zero)
    if quiet:
        np.testing.assert_array_equal(g, [np.inf, 0.5])
    assert "with " in sd.adjoint_source(f).split("_backward")[1] or not quiet


def with_suppress(x):
    with contextlib.suppress(ValueError):  # may skip the rest of the block
        y = x * 2.0
    return np.sum(y)


def with_raising_errstate(x):
    with np.errstate(all="raise"):  # the adjoint could raise where the tape does not
        y = x * 2.0
    return np.sum(y)


def with_as(x):
    with np.errstate(all="ignore") as state:
        y = x * 2.0
    return np.sum(y) + 0.0 * len(str(state))


def with_a_variable_argument(x):
    mode = "ignore"
    with np.errstate(all=mode):
        y = x * 2.0
    return np.sum(y)


# --- try/finally: the body, then the cleanup ---

CLEANED = []


def try_finally(x):
    try:
        y = np.sin(x) * x
    finally:
        CLEANED.append(len(CLEANED))  # runs after the body, as in Python
    return np.sum(y)


def try_finally_in_a_loop(x):
    s = 0.0
    for v in x:
        try:
            s = s + v * v
        finally:
            s = s * 1.5  # the cleanup computes too
    return s


def try_finally_around_a_loop_that_breaks(x):
    s = 0.0
    try:
        for v in x:
            if v > 0.9:
                break  # leaves the loop, not the try
            s = s + np.tanh(v)
    finally:
        s = s + np.sum(x * x)
    return s


def try_finally_nested(x):
    try:
        try:
            y = np.exp(x)
        finally:
            y = y * x
    finally:
        with np.errstate(all="ignore"):
            y = np.log(y)
    return np.sum(y)


@pytest.mark.parametrize("f", [try_finally, try_finally_in_a_loop,
                               try_finally_around_a_loop_that_breaks, try_finally_nested],
                         ids=lambda f: f.__name__)
def test_try_finally(f):
    check_three_ways(f, (X,))


def test_try_finally_runs_its_cleanup_once_per_call():
    before = len(CLEANED)
    sd.grad(try_finally)(X)
    sd.grad(try_finally)(X)
    assert len(CLEANED) == before + 2


def try_finally_returns(x):
    try:
        return np.sum(x)
    finally:
        CLEANED.append(-1)  # Python runs it on the way out


def try_finally_breaks(x):
    s = 0.0
    for v in x:
        try:
            if v > 0.5:
                break
        finally:
            s = s + v
    return s


TRY_REFUSED = [
    (try_finally_returns, "'return' out of a try/finally"),
    (try_finally_breaks, "'break' out of a try/finally"),
]


WITH_REFUSED = [
    (with_suppress, "change no value and no path"),
    (with_raising_errstate, "may change the path"),
    (with_as, "as name"),
    (with_a_variable_argument, "constant"),
]


@pytest.mark.parametrize("f, says", WALRUS_REFUSED + TRY_REFUSED + WITH_REFUSED,
                         ids=lambda v: getattr(v, "__name__", ""))
def test_forms_refused(f, says):
    with pytest.raises(sd.CompileError, match=says) as info:
        sd.grad(f)(X.copy())
    assert info.value.lineno and info.value.hint

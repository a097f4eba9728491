"""Programs that once compiled to wrong gradients or crashing code, found by fuzzing
the compiler against finite differences.  Each is checked by ``check_grad``
(compiled == eager == finite differences, or finite differences alone where the
eager tape cannot follow the program)."""
import math

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad


# --- a branch or loop whose adjoint is only restores ---

def constant_in_a_branch(a, b):
    y = a
    c = 1.0
    for i in range(4):
        if i == 1:
            c = 3.0      # no adjoint of its own; its restore needs the branch taken
        y = math.sin(y) * b * c
    return y


def data_branch_sets_a_constant(a, b):
    y = a
    c = 0.5
    for i in range(5):
        if y > 0.2:
            c = c + 0.25
        elif y < -0.2:
            c = 0.1
        y = math.sin(y) * b * c + a
    return y


def identity_arm(a, b):
    y = a
    for i in range(3):
        y = math.sin(y) * b
    z = 0.0
    s = 0.0
    for i in range(2):
        s = s + y * y
        if z > 0.5:
            s = s * 2.0
        elif z > -0.5:
            y = y
        z = -1.0
    return s


def while_sets_a_constant(a, b):
    y = a
    c = 1.0
    k = 0
    while k < 4:
        if k == 2:
            c = 2.0
        y = math.sin(y) * b * c
        k = k + 1
    return y


def inner_trip_count_varies(a, b):
    y = math.sin(a)
    u = math.exp(a * y)
    for i in range(2):
        for k in range(2 - i):
            y += b
    return u


def inner_loop_scales(a, b):
    y = a
    c = 1.0
    for i in range(3):
        for j in range(3 - i):
            c = c * 1.1
        y = math.sin(y) * b * c
    return y


def inner_loop_grows(a, b):
    y = a
    c = 1.0
    for i in range(3):
        for j in range(i + 1):
            c = c * 1.1
        y = math.sin(y) * b * c
    return y


SCALAR_PROGRAMS = [constant_in_a_branch, data_branch_sets_a_constant, identity_arm,
                   while_sets_a_constant, inner_trip_count_varies, inner_loop_scales,
                   inner_loop_grows]


@pytest.mark.parametrize("fn", SCALAR_PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("a", [0.3, 0.8])
def test_restores_in_branches_and_loops(fn, a):
    check_grad(fn, (a, 0.7), (0, 1), eager=False)  # math.* on Tensors


# --- a save of a value that may not exist yet ---

def assigned_in_one_arm(a, b):
    if a > 0.5:
        w = math.sin(b)
        y = w * a
    else:
        y = b
    w = math.cos(a)
    return y * w


def counter_of_a_loop_not_run(a, b):
    y = a
    if a > 0.5:
        for i in range(2):
            y = y * b * i
    for i in range(2):
        y = y * a
    return y


@pytest.mark.parametrize("fn", [assigned_in_one_arm, counter_of_a_loop_not_run],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("a", [0.3, 0.8])
def test_saves_of_values_a_branch_may_not_define(fn, a):
    check_grad(fn, (a, 0.7), (0, 1), eager=False)


# --- adjoints of numbers the compiler cannot prove are numbers ---

def abs_then_loop(a, b):
    y = abs(a)
    s = 0.0
    for i in range(3):
        s = s + y * b
    return s + y


def loop_over_a_list(a, b):
    total = 0.5
    for x in [a, b, a * b]:
        total = total + math.sin(x) * total + x
    return total


@pytest.mark.parametrize("fn", [abs_then_loop, loop_over_a_list], ids=lambda f: f.__name__)
def test_adjoints_of_numbers_in_loops(fn):
    check_grad(fn, (0.3, 0.7), (0, 1), eager=False)


# --- values the compiler cannot follow are refused, not differentiated wrongly ---

def augmented_through_an_alias(x, s):
    y = x * 1.0
    z = y
    y += s          # NumPy adds in place: z changes too
    return np.sum(z * y)


def appends_to_a_list(a, b):
    hs = []
    hs.append(a * b)
    return hs[0]


@pytest.mark.parametrize("fn, args", [
    (augmented_through_an_alias, (np.array([1.0, 2.0, 3.0]), 0.5)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_refused_with_a_compile_error(fn, args):
    with pytest.raises(sd.CompileError):
        sd.grad(fn, (0, 1))(*args)


# --- a write through an index array that names an element twice ---

def repeated_index_write(x, s):
    y = np.zeros(2)
    y[[0, 0]] = x * s   # NumPy keeps the last write to y[0]
    return np.sum(y ** 2)


def repeated_index_update(x, s):
    y = np.ones(3) * s
    idx = np.array([0, 0, 1])
    y[idx] = y[idx] + x * s
    return np.sum(y ** 2)


@pytest.mark.parametrize("fn, args", [
    (repeated_index_write, (np.array([1.0, 2.0]), 0.5)),
    (repeated_index_update, (np.array([1.0, 2.0, 3.0]), 0.5)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_repeated_indices_keep_the_last_write(fn, args):
    check_grad(fn, args, (0, 1), eager=False)


def joins_lists(a, b):
    hs = [a]
    for i in range(2):
        hs = hs + [hs[-1] * b]
    return hs[-1]


@pytest.mark.parametrize("fn", [appends_to_a_list, joins_lists], ids=lambda f: f.__name__)
def test_lists_grown_by_append_or_joined_are_differentiated(fn):
    # both were refused before lists had adjoints of their own (rules/containers.py)
    check_grad(fn, (0.3, 0.7), (0, 1))


# --- names bound by unpacking a call's results ---

def _pair(a):
    return a * 0.5, a


def _stats(a):
    return a - np.mean(a), np.sum(a ** 2)


def unpacked_then_rebound(x):
    v1, v2 = _pair(x)
    v3 = np.sum(v1, axis=0, keepdims=True)
    v1 = v1 * 0.5        # still an array: the product below broadcasts
    return np.sum(v1 * v3)


def split_then_rebound(x):
    v1, v2 = np.split(x, 2, axis=0)
    v3 = np.sum(v1, axis=1, keepdims=True)
    v1 = v1 * 0.5
    return np.sum(v1 * v3)


def indexes_a_helpers_results(x):
    t = _stats(x)
    return np.sum(t[0] * t[1]) + t[1]


@pytest.mark.parametrize("fn", [unpacked_then_rebound, split_then_rebound,
                                indexes_a_helpers_results], ids=lambda f: f.__name__)
def test_results_of_calls(fn):
    check_grad(fn, (np.arange(6.0).reshape(2, 3) * 0.3 + 0.1,), 0)


def _max_rows(x):
    return np.max(x, axis=0)


def test_a_jacobian_keeps_float32():
    x = np.array([[1.0, 2.0], [3.0, 0.5]], dtype=np.float32)
    jac = sd.jacobian(_max_rows)(x)
    assert jac.dtype == np.float32 and jac.shape == (2, 2, 2)
    np.testing.assert_array_equal(jac[0], [[0, 0], [1, 0]])


# --- zeros made where a branch or an iteration is left measure the value as it was ---

def _swap(a):
    return a * 0.5, np.tanh(a)


def rebound_by_unpacking_in_a_loop(x, y):
    x = np.max(x, axis=-1, keepdims=True) * 2.0   # one element
    for i in range(2):
        x, y = _swap(y)     # three elements; the old x is never read again
    return np.sum(x * y)


def rebound_in_a_branch(x, y):
    x = np.max(x, axis=-1, keepdims=True) * 2.0
    if np.sum(y) > 0.0:
        x, y = _swap(y)
    return np.sum(x * y)


@pytest.mark.parametrize("fn", [rebound_by_unpacking_in_a_loop, rebound_in_a_branch],
                         ids=lambda f: f.__name__)
def test_zeros_take_the_shape_of_the_value_before(fn):
    check_grad(fn, (np.array([0.3, 0.9, 0.1]), np.array([0.4, 0.2, 0.5])), (0, 1))


# --- a loop's target overwrites a value that an adjoint reads ---
# The target's old value is saved before the loop and restored after the reversed
# loop, whether or not the loop has adjoint code of its own (an empty reversed loop
# used to drop the restore: the adjoint read the target's last value).

def target_overwrites_in_an_empty_loop(a):
    x = a * 2.0
    y = x * a
    for x in range(3):
        pass
    return y


def target_overwrites_in_a_loop_with_code(a):
    x = a * 2.0
    y = x * a
    for x in range(3):
        y = y * 0.5 + a
    return y


def target_overwrites_in_a_nested_loop(a):
    y = a
    for i in range(2):
        x = a * 2.0 + i
        y = y + x * a
        for x in range(2):
            pass
    return y


def target_overwrites_an_array(a):
    x = np.sin(a)
    y = np.sum(x * a)
    for x in range(2):
        pass
    return y


@pytest.mark.parametrize("fn", [target_overwrites_in_an_empty_loop,
                                target_overwrites_in_a_loop_with_code,
                                target_overwrites_in_a_nested_loop],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("a", [0.3, 1.5])
def test_a_loop_target_restores_the_value_it_overwrote(fn, a):
    check_grad(fn, (a,))


def test_a_loop_target_restores_an_array_it_overwrote():
    check_grad(target_overwrites_an_array, (np.array([0.3, -1.2, 0.7]),))


# --- a value the forward pass binds early (to save it) is never seen by the user ---
# The forward pass binds a local that a branch or loop may leave unbound, so that it
# can be saved or taped; the user's own reads of it must still raise where Python's
# do (they returned None, or a gradient of zeros).

def read_after_a_loop_that_may_not_run(x, n):
    for i in range(n):
        y = x * i
    return np.sum(y)


def read_after_a_branch_that_may_not_bind(x, c):
    if c > 0:
        y = np.sin(x)
    return np.sum(y * x)


def loop_target_after_no_iteration(x, n):
    for i in range(n):
        x = x * 2.0
    return np.sum(x) * i


@pytest.mark.parametrize("fn, args", [
    (read_after_a_loop_that_may_not_run, (np.ones(3), 0)),
    (read_after_a_branch_that_may_not_bind, (np.ones(3), -1.0)),
    (loop_target_after_no_iteration, (np.ones(3), 0))],
    ids=lambda v: getattr(v, "__name__", ""))
def test_a_read_python_refuses_raises_unbound_local_error(fn, args):
    with pytest.raises(UnboundLocalError):
        fn(*args)                       # Python's own behaviour
    with pytest.raises(UnboundLocalError):
        sd.value_and_grad(fn)(*args)
    with pytest.raises(UnboundLocalError):
        sd.function(fn)(*args)


@pytest.mark.parametrize("fn, args", [
    (read_after_a_loop_that_may_not_run, (np.array([0.5, 1.0, 2.0]), 3)),
    (read_after_a_branch_that_may_not_bind, (np.array([0.5, 1.0, 2.0]), 1.0)),
    (loop_target_after_no_iteration, (np.array([0.5, 1.0, 2.0]), 2))],
    ids=lambda v: getattr(v, "__name__", ""))
def test_the_same_reads_are_exact_where_the_value_is_bound(fn, args):
    check_grad(fn, args, wrt=0)


# --- the result kept aside only when an active input's rule reads it ---
# x = x / c with c constant: division's rule reads the result only for the divisor;
# keeping the new x (x_new = x) read x where the plan had not planned a read.

def divided_in_place_after_a_branch(x, y):
    v = np.tanh(x * y)
    if y[0] > 0.0:
        v = np.exp(v)
    v = v / (1.5 + 1.3 ** 2)
    return np.sum(v * x)


def test_a_self_referential_division_by_a_constant():
    check_grad(divided_in_place_after_a_branch, (np.array([0.3, -0.4, 0.9]),
                                                 np.array([0.5, 0.2, -1.0])), wrt=(0, 1))


# --- an array written into with its own value: x[i] = x reads all of the old x ---

WEIGHTS = np.array([1.0, 2.0, 3.0])


def reversed_into_itself(x):
    y = x * 1.0
    y[::-1] = y
    return np.sum(y * WEIGHTS)


def permuted_into_itself(x):
    y = x * 1.0
    y[[2, 1, 0]] = y
    return np.sum(y * WEIGHTS)


def whole_into_itself(x):
    m = np.outer(x, x)
    m[...] = m
    return np.sum(m * WEIGHTS)


def into_itself_in_a_loop(x):
    y = x * 1.0
    for i in range(2):
        y[1:] = y[0] * y[2]
        y[::-1] = y
    return np.sum(y * WEIGHTS)


@pytest.mark.parametrize("fn", [reversed_into_itself, permuted_into_itself,
                                whole_into_itself, into_itself_in_a_loop],
                         ids=lambda f: f.__name__)
def test_an_array_written_into_with_itself(fn):
    check_grad(fn, (np.array([0.1, 0.2, 0.3]),), eager=False)

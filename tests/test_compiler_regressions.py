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


# --- c[k] += v changes the array object in place: every slot holding it sees that ---
# The generated code rebinds the slot (c[k] = c[k] + v); it is exact only where no
# other slot, and no name, holds the same array.  Programs whose containers hold one
# array twice (or an array and a view of it) are refused; fresh items stay exact.

def same_array_under_two_keys(x):
    y = x * 1.0
    d = {"a": y, "b": y}
    d["a"] *= 2.0
    return np.sum(d["b"] * x)


def same_array_stored_by_key_later(x):
    y = x * 1.0
    d = {"a": y}
    d["b"] = y
    d["a"] += x
    return np.sum(d["b"] * x)


def same_array_appended_in_a_loop(x):
    y = x * 1.0
    a = []
    for i in range(2):
        a.append(y)
    a[0] += x
    return np.sum(a[1] * x)


def same_array_from_a_comprehension(x):
    y = x * 1.0
    a = [y for i in range(2)]
    for i in range(2):
        a[i] *= 2.0
    return np.sum(a[1] * x)


def a_copy_and_a_view_in_one_list(x):
    y = x * 1.0
    z = y
    a = list((z, y[:2]))
    a[0] += x
    return np.sum(a[1] * x[:2])


def joined_lists_of_one_array(x):
    y = x * 1.0
    a = [y] + [y]
    a[0] += x
    return np.sum(a[1] * x)


def stored_by_key_then_read_by_name(x):
    y = x * 1.0
    d = {}
    d["a"] = y
    d["a"] += x
    return np.sum(y * x)


def stored_by_key_then_written_through_an_item(x):
    y = x * 1.0
    d = {}
    d["a"] = y
    t = d["a"]
    t[0] = x[1] ** 2
    return np.sum(y * x)


def held_twice(v):
    return [v, v]


def a_list_a_helper_returned(x):
    a = held_twice(x * 1.0)  # c[k] += v was taken for an array's: c was not known a list
    a[0] += x
    return np.sum(a[1] * x)


@pytest.mark.parametrize("fn", [same_array_under_two_keys, same_array_stored_by_key_later,
                                same_array_appended_in_a_loop,
                                same_array_from_a_comprehension,
                                a_copy_and_a_view_in_one_list, joined_lists_of_one_array,
                                stored_by_key_then_read_by_name,
                                stored_by_key_then_written_through_an_item,
                                a_list_a_helper_returned],
                         ids=lambda f: f.__name__)
def test_an_update_of_an_array_two_holders_share_is_exact_or_refused(fn):
    """Exact (against finite differences) or a CompileError: never a stale slot."""
    try:
        check_grad(fn, (np.array([0.5, 1.2, -0.7, 0.3]),), eager=False)
    except sd.CompileError as error:
        assert "memory" in str(error)


def fresh_items_updated_by_slot(x):
    a = [x * 1.0, x * 2.0]
    a[0] += x
    b = {}
    for i in range(3):
        b[i] = x * (i + 1.0)  # a new array each pass: no two slots share one
    for i in range(3):
        b[i] *= x
    return np.sum(a[1] * x) + np.sum(a[0] ** 2) + np.sum(b[1] * b[2] + b[0])


def test_updates_of_fresh_items_stay_exact():
    check_grad(fresh_items_updated_by_slot, (np.array([0.5, 1.2, -0.7, 0.3]),))


# --- a call with no model is given its arguments, not the module its callee is in ---
# np.float32(2.0) was refused as a call that may write into ``np``, which np.sum had
# read for the gradient; a method's receiver (y.sort()) is still given to it.

def scalar_types_after_numpy_calls(x):
    y = np.sum(x * x)
    return y * np.float32(2.0) + np.sum(x) * np.int64(3)


def test_scalar_types_of_numpy_are_not_writes_into_the_module():
    check_grad(scalar_types_after_numpy_calls, (np.array([0.5, 1.2, -0.7]),))


# --- an item read by a negative index before an append no adjoint undoes ---
# The backward pass undoes an append in its adjoint block; an append of a constant (or
# of a value the result does not use) has none, so the list the item read's adjoint
# restored was the very list the append had grown, and xs[-1] named the appended item.
# The forward pass keeps a list it restores before a change in place as it was.

def last_item_before_a_constant_append(x):
    xs = [x * 2.0, x]
    v = xs[-1] ** 2
    xs.append(np.ones(3))
    return np.sum(v)


def computed_negative_index_before_an_unused_append(x):
    xs = [x]
    k = -1
    v = xs[k] * 2.0
    xs.append(x * 5.0)  # its value reaches no result: no adjoint block undoes it
    return np.sum(v)


def second_to_last_before_two_constant_appends(x):
    xs = [x * 2.0, x]
    v = xs[-2] ** 2
    xs.append(np.ones(3))
    xs.append(np.zeros(3))
    return np.sum(v)


@pytest.mark.parametrize("fn", [last_item_before_a_constant_append,
                                computed_negative_index_before_an_unused_append,
                                second_to_last_before_two_constant_appends],
                         ids=lambda f: f.__name__)
def test_a_negative_index_read_before_an_inactive_append(fn):
    check_grad(fn, (np.array([0.31, -0.52, 0.83]),))


# --- a write into a slot of a container changes no array the container holds ---
# The plan snapshotted every item of the list at the write (as for a write into an
# array, whose views change with it), and restored it whole where the backward pass
# had kept only its shape: unbroadcast was given an array for a shape.

def slot_rebound_after_its_item_was_measured(x):
    a = x * 2.0
    b = a + x  # its adjoint needs only a's shape
    items = [a, b]
    items[1] = x * 3.0
    c = a + x
    return np.sum(c * c) + np.sum(items[1]) + np.sum(b)


def key_rebound_after_its_value_was_measured(x):
    a = x * 2.0
    d = {"p": a}
    q = a - x
    d["p"] = x ** 2
    return np.sum(q * d["p"]) + np.sum(a + x)


@pytest.mark.parametrize("fn", [slot_rebound_after_its_item_was_measured,
                                key_rebound_after_its_value_was_measured],
                         ids=lambda f: f.__name__)
def test_a_slot_write_keeps_the_items_as_they_are(fn):
    check_grad(fn, (np.array([0.31, -0.52, 0.83, 0.14]),))


# --- x[()], x[...] and x[None] of a 0-d array: its adjoint may be a NumPy scalar ---
# The adjoint of an item read was added in place (dx[()] += g), but arithmetic on 0-d
# arrays gives NumPy scalars, which cannot be written into (a TypeError).  In place
# only where the index needs an axis of x; these add a new value.

def whole_reads_of_a_zero_d_parameter(x):
    return np.sum(x[()] * x) + x[...] * np.sin(x)


def whole_reads_of_a_reshaped_scalar(x):
    y = x.reshape(())  # its rank is not known when it is compiled
    return y[()] * np.sin(y) + y[None][0] * y


@pytest.mark.parametrize("fn, x", [(whole_reads_of_a_zero_d_parameter, np.array(0.5)),
                                   (whole_reads_of_a_reshaped_scalar, np.array([0.5]))],
                         ids=["parameter", "reshaped"])
def test_whole_reads_of_a_zero_d_array(fn, x):
    check_grad(fn, (x,))

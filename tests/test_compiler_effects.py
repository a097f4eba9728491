"""Calls that change a value in place, which no assignment records: refused when a
value carrying a gradient reaches them (they gave zero gradients: the adjoint never
followed the write) or when an adjoint would read the value they change, and run as
written when neither holds.  ``np.copyto(x, v)`` and ``x.fill(v)`` are writes into
every element, modelled as ``x[...] = v``; the tape reads an ndarray an operation
used as it was then, whatever is written into it later."""
import sys

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import apply, check_grad

W = np.array([1.0, 2.0, 3.0])


def ufunc_at(w):
    x = np.zeros(3)
    np.add.at(x, [0, 1, 1], w)
    return np.sum(x * x)


def out_keyword(w):
    x = np.zeros(3)
    np.multiply(w, 2.0, out=x)
    return np.sum(x * x)


def out_keyword_with_an_unused_result(w):
    x = np.zeros(3)
    y = np.multiply(w, 2.0, out=x)  # noqa: F841
    return np.sum(x * x)


def copyto(w):
    x = np.zeros(3)
    np.copyto(x, w)
    return np.sum(x * x)


def list_append(w):
    xs = []
    xs.append(w * 2.0)
    return np.sum(xs[0])


def append_to_an_argument(w, xs):
    xs.append(w * 2.0)  # the caller's list would change
    return np.sum(xs[0])


def read_before_a_later_append(w):
    xs = [w]
    for i in range(3):
        xs.append(np.sin(np.stack(xs)[-1]))  # the gradient would see xs as it ends
    return np.sum(xs[-1])


def item_read_before_a_later_append(w):
    xs = [w]
    for i in range(3):
        xs.append(np.sin(xs[-1]))  # its adjoint goes to the item xs[-1] named then
    return np.sum(xs[-1])


@pytest.mark.parametrize("fn", [list_append, item_read_before_a_later_append])
def test_a_list_built_by_append_is_differentiated(fn):
    check_grad(fn, (W.copy(),))


@pytest.mark.parametrize("fn, args", [(append_to_an_argument, lambda: (W.copy(), [])),
                                      (read_before_a_later_append, lambda: (W.copy(),))],
                         ids=["argument", "read-before-append"])
def test_an_append_the_adjoints_cannot_follow_is_refused(fn, args):
    with pytest.raises(sd.CompileError, match="append"):
        sd.grad(fn)(*args())


def fill(w):
    x = np.zeros(3)
    x.fill(np.sum(w))
    return np.sum(x * w)


@pytest.mark.parametrize("fn", [ufunc_at, out_keyword, out_keyword_with_an_unused_result],
                         ids=lambda f: f.__name__)
def test_a_write_through_a_call_on_a_varied_value_is_refused(fn):
    with pytest.raises(sd.CompileError, match="in place"):
        sd.grad(fn)(W.copy())


def writes_on_data_only(w, data):
    x = np.zeros(3)
    np.copyto(x, data)
    np.add.at(x, [0, 0], 1.0)
    print("scale", np.sum(w))
    np.sum(w)  # a primitive's result discarded: harmless
    return np.sum(x * w)


def test_writes_through_calls_on_data_run_as_written():
    check_grad(writes_on_data_only, (W.copy(), np.array([0.5, -1.0, 2.0])), wrt=0,
               eager=False)


# --- writes into every element: modelled ------------------------------------------

def copyto_after_a_read(w):
    a = np.ones(3)
    y = w * a  # its adjoint reads a as it was here
    np.copyto(a, np.sin(w))
    return np.sum(y * a)


def fill_after_a_read(w):
    a = np.arange(3.0)
    y = np.exp(w) * a
    a.fill(np.sum(w))
    return np.sum(y * a)


def copyto_in_a_loop(w):
    a = np.ones(3)
    total = 0.0
    for k in range(3):
        total = total + np.sum(w * a)
        np.copyto(a, a * w + k)
    return total


def copyto_a_number(w):
    a = np.zeros(3)
    np.copyto(a, 2.0)
    return np.sum(w * a)


@pytest.mark.parametrize("fn", [copyto, fill, copyto_after_a_read, fill_after_a_read,
                                copyto_in_a_loop, copyto_a_number],
                         ids=lambda f: f.__name__)
def test_copyto_and_fill_are_writes_into_every_element(fn):
    check_grad(fn, (W.copy(),), eager=False)


def constant_written_after_reads(w):
    a = np.ones(3)
    y = w * a
    np.copyto(a, np.full(3, 2.0))
    z = np.sin(w) * a
    a[1] = -1.0
    a += 0.5
    a.fill(3.0)
    return np.sum(y * z * a)


def constants_written_in_a_loop(w):
    a = np.ones(3)
    total = w * 0.0
    for k in range(3):
        total = total + w * a
        np.copyto(a, a * 2.0 + k)
    return np.sum(total * total)


@pytest.mark.parametrize("fn", [constant_written_after_reads, constants_written_in_a_loop])
def test_the_tape_reads_an_array_as_the_operation_did(fn):
    # what is written holds no Tensor: the tape and the compiler agree (a Tensor written
    # into an ndarray is a constant on the tape, as in TensorFlow)
    check_grad(fn, (W.copy(),))


# --- a change an adjoint would see: refused ----------------------------------------

def add_at_after_a_read(w):
    a = np.ones(3)
    y = w * a
    np.add.at(a, [0, 1], 1.0)
    return np.sum(y * a)


def shuffle_in_a_loop(w):
    a = np.arange(3.0)
    rng = np.random.default_rng(0)
    total = 0.0
    for _ in range(2):
        total = total + np.sum(w * a)
        rng.shuffle(a)  # the next pass's change reaches this pass's adjoint
    return total


def shuffle_assigned_after_a_read(w):
    a = np.arange(4.0)
    y = w * a
    _ = np.random.default_rng(0).shuffle(a)  # assigned, yet a write: its result is None
    return np.sum(y * a)


def fill_diagonal_assigned_after_a_read(w):
    a = np.arange(9.0).reshape(3, 3)
    y = w * a
    done = np.fill_diagonal(a, 0.0)
    return np.sum(y * a) + (done is None)


def fill_diagonal_of_an_argument_after_a_read(w, a):
    y = w * a
    done = np.fill_diagonal(a, 0.0)
    return np.sum(y * a) + (done is None)


@pytest.mark.parametrize("fn", [add_at_after_a_read, shuffle_in_a_loop,
                                shuffle_assigned_after_a_read,
                                fill_diagonal_assigned_after_a_read])
def test_a_change_to_a_value_an_adjoint_reads_is_refused(fn):
    with pytest.raises(sd.CompileError, match="read for a gradient before it"):
        sd.grad(fn)(W.copy())


def test_a_call_with_no_model_may_write_though_its_result_is_assigned():
    # no model says what np.fill_diagonal does: it is taken to write into what it is
    # given, whether or not its result is assigned (a mutator's None)
    with pytest.raises(sd.CompileError, match="read for a gradient before it"):
        sd.grad(fill_diagonal_of_an_argument_after_a_read)(2.0, np.arange(9.0).reshape(3, 3))


def shuffle_before_any_read(w):
    a = np.arange(3.0)
    np.random.default_rng(0).shuffle(a)
    return np.sum(w * a)


def test_a_change_before_any_read_runs_as_written():
    check_grad(shuffle_before_any_read, (W.copy(),), eager=False)


# --- user functions that write into what they are given ----------------------------

def set_first(a, value):
    a[0] = value
    return 0.0


def set_first_twice_removed(a, value):
    return set_first(a, value) + 1.0


def scale_in_place(a):
    a *= 3.0  # no return: None


def helper_writes_what_was_read(w):
    a = np.ones(3)
    z = w * a
    set_first(a, 5.0)
    return np.sum(z)


def helper_writes_a_varied_value(w):
    buf = np.zeros(3)
    t = set_first(buf, w[0] * 2.0)
    return np.sum(buf * w) + t


def nested_helper_writes_what_was_read(w):
    a = np.ones(3)
    z = np.sin(w) * a
    k = set_first_twice_removed(a, 2.0)
    return np.sum(z) * k


def set_all(a):
    a[...] = 3.0


def helper_writes_through_a_view(w):
    a = np.ones(4)
    v = a[1:]
    z = w * a[:3]
    set_all(v)
    return np.sum(z)


@pytest.mark.parametrize("fn", [helper_writes_what_was_read, helper_writes_a_varied_value,
                                nested_helper_writes_what_was_read,
                                helper_writes_through_a_view], ids=lambda f: f.__name__)
def test_a_helper_writing_where_an_adjoint_looks_is_refused(fn):
    with pytest.raises(sd.CompileError, match="may change"):
        sd.grad(fn)(W.copy())


def helper_fills_a_buffer_first(w):
    buf = np.ones(3)
    set_first_twice_removed(buf, 4.0)  # constant data, before any read
    scale_in_place(buf)
    return np.sum(np.sin(w) * buf)


def helper_writes_its_own_copy(w):
    a = np.ones(3)
    z = w * a
    set_first(a.copy(), 5.0)
    return np.sum(z * a)


@pytest.mark.parametrize("fn", [helper_fills_a_buffer_first, helper_writes_its_own_copy],
                         ids=lambda f: f.__name__)
def test_a_helper_writing_where_no_adjoint_looks_runs_as_written(fn):
    check_grad(fn, (W.copy(),))


def bump(a, b):
    b += np.sum(a)  # on a number: a new number, no write
    return a * b


def element_passed_to_a_helper_that_bumps_it(w):
    z = np.sin(w)
    t = w[1]  # a number: it shares no memory with w
    return np.sum(bump(w, t) + z)


def test_a_number_given_to_a_helper_that_updates_it_is_no_write():
    check_grad(element_passed_to_a_helper_that_bumps_it, (W.copy(),))


def rebinds_and_writes_in_a_loop(w):
    a = np.ones(3)
    total = w * 0.0
    for k in range(3):
        total = total + np.sin(w * a)
        a = a * 1.5  # saved on a stack, then written into: the backward pass restores a copy
        a[k] = 0.5
    return np.sum(total * a)


def test_a_replayed_tape_sees_the_values_the_forward_pass_left():
    # a tape restored by rebinding and then written into must not change what a second
    # walk reads (a persistent tape, a jacobian's rows)
    check_grad(rebinds_and_writes_in_a_loop, (W.copy(),))
    x = sd.constant(W)
    compiled = sd.function(rebinds_and_writes_in_a_loop)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = compiled(x)
    first, second = tape.gradient(y, x), tape.gradient(y, x)
    np.testing.assert_allclose(np.asarray(first), np.asarray(second), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(first),
                               sd.grad(rebinds_and_writes_in_a_loop)(W.copy()), rtol=1e-12)


def sine_times(x, a):
    return np.sum(np.sin(x) * a)


def test_a_write_after_the_call_does_not_reach_a_later_backward_step():
    # the tape's backward step and a pullback run after the call: an array the caller
    # writes into meanwhile must not change them (the forward pass kept what it read)
    expected = np.cos(W) * np.array([1.0, 2.0, 3.0])
    a = np.array([1.0, 2.0, 3.0])
    x = sd.constant(W)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.function(sine_times)(x, a)
    a[...] = 0.0
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), expected, rtol=1e-12)
    a = np.array([1.0, 2.0, 3.0])
    view = a[:]  # a view: written through its base
    _, pullback = sd.vjp(sine_times, W.copy(), view)
    a[...] = 0.0
    np.testing.assert_allclose(pullback(1.0)[0], expected, rtol=1e-12)


def times_two(t, a):
    return t * a * 2.0


def passes_a_second_name_then_writes(x, w):
    a = w * 1.0
    b = a  # the same array: the callee's tape keeps it
    y = times_two(x, b)
    a[0] = 5.0
    return np.sum(y * a)


def passes_a_view_then_writes(x, w):
    a = w * 1.0
    y = times_two(x, a[:])
    a[1] = a[0] * x[2]
    return np.sum(y * a)


def closure_over_an_array_written_after(x, w):
    a = w * 1.0
    y = times_two(x, 1.0) + apply(lambda t: t * a, x)
    a[0] = 5.0
    return np.sum(y * a)


@pytest.mark.parametrize("fn", [passes_a_second_name_then_writes, passes_a_view_then_writes,
                                closure_over_an_array_written_after],
                         ids=lambda f: f.__name__)
def test_a_callee_keeps_what_it_was_given_when_the_caller_writes_through_another_name(fn):
    # the value given to a callee shares memory with an array written later: its tape
    # must keep a snapshot (it read the changed values: a wrong gradient)
    check_grad(fn, (W * 0.3, W.copy()), wrt=(0, 1), eager=False)


# --- names of immutable values are no memory a call writes into ----------------------
# dtype=np.float32 reads the name np, as np.sin(x) does: that made np "written into
# after a gradient read it"; a module attribute that holds an array still counts.

def out_with_a_dtype_after_a_read(w):
    y = np.sin(w)
    buf = np.empty(3)
    np.multiply(2.0, 3.0, out=buf, dtype=np.float64)
    return np.sum(y * buf)


def ufunc_out_after_a_read(w):
    y = np.sin(w)
    buf = np.ones(3)
    np.add(buf, 1.0, out=buf, casting="unsafe")
    return np.sum(y * buf)


def ufunc_at_into_a_buffer_after_a_read(w):
    y = np.sin(w)
    buf = np.ones(3)
    np.add.at(buf, [0, 1, 1], 1.0)  # writes into buf, not into np.add (nor np)
    return np.sum(y * buf)


def unmodelled_call_with_a_dtype_after_a_read(w):
    y = np.sin(w)
    z = np.array([1.0, 2.0, 3.0], dtype=np.float64)
    return np.sum(y * z)


def dtype_given_as_a_builtin_class(w):
    y = np.cos(w)
    z = np.array([1.0, 2.0, 3.0], dtype=float)
    np.multiply(z, 2.0, out=z, dtype=float)
    return np.sum(y * z)


@pytest.mark.parametrize("fn", [out_with_a_dtype_after_a_read, ufunc_out_after_a_read,
                                ufunc_at_into_a_buffer_after_a_read,
                                unmodelled_call_with_a_dtype_after_a_read,
                                dtype_given_as_a_builtin_class], ids=lambda f: f.__name__)
def test_a_module_constant_given_to_a_call_is_no_write(fn):
    check_grad(fn, (W * 0.3,), eager=False)


class Holder:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])

    def __call__(self, v):
        return v


HELD = Holder()


def out_into_an_array_of_a_global_object(w):
    y = HELD.W * w
    np.multiply(2.0, 3.0, out=HELD.W, dtype=np.float64)
    return np.sum(y * y)


THIS = sys.modules[__name__]  # a module: its arrays are memory all the same
BUFFER = np.array([1.0, 2.0, 3.0])


def out_into_an_array_of_a_module(w):
    y = THIS.BUFFER * w
    np.multiply(2.0, 3.0, out=THIS.BUFFER, dtype=np.float64)
    return np.sum(y * y)


@pytest.mark.parametrize("fn", [out_into_an_array_of_a_global_object,
                                out_into_an_array_of_a_module], ids=lambda f: f.__name__)
def test_an_array_reached_through_a_global_name_still_counts(fn):
    with pytest.raises(sd.CompileError, match="read for a gradient before it"):
        sd.grad(fn)(W.copy())

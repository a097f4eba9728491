"""Writes into values from outside the function (globals, closure cells, what they
hold): refused where a gradient read the value before the write (the backward pass
would read the changed value), run as written where none did, and a value read for
a gradient is kept as it was when the backward pass runs later (a tape's, a
pullback's).  The class, by writer and reader: the function itself, a helper it
calls (directly, through another, as a method), or one the compiler cannot see into;
before, after, and in a loop."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad, finite_difference

X = np.array([0.5, -1.0, 2.0])
G = np.array([1.0, 2.0, 3.0])     # read for gradients
H = np.array([1.0, 1.0, 1.0])     # written only
L = [np.array([1.0, 2.0, 3.0])]   # a global list holding an array
SAME_AS_G = G                     # G's memory under other names
HOLDS_G = {"g": G[1:]}


@pytest.fixture(autouse=True)
def fresh_globals():
    yield
    G[...] = [1.0, 2.0, 3.0]
    H[...] = 1.0
    L[0][...] = [1.0, 2.0, 3.0]


# --- writers -------------------------------------------------------------------------

def bump():
    G[0] = 5.0


def bump_twice_removed():
    bump()


def bump_a_held_row():
    row = L[0]
    row[1] = 7.0


def bump_through_a_held_view():
    v = HOLDS_G["g"]
    v[0] = 6.0


def bump_other():
    H[1] = 4.0


def uncompilable():
    global H  # noqa: PLW0603 -- a form the compiler refuses: it may do anything
    H = H + 0.0


class Logger:
    def log(self, v):
        G[2] = np.sum(v)


def reads_g(x):
    return np.sum(G * x)


def make_closure_pair():
    cell = np.array([1.0, 2.0, 3.0])

    def reader(x):
        return np.sum(cell * x)

    def writer():
        cell[0] = 9.0

    return reader, writer


cell_reader, cell_writer = make_closure_pair()


# --- a write after a gradient read it: refused ----------------------------------------

def caller_reads_helper_writes(x):
    y = np.sum(G * x)
    bump()
    return y


def caller_reads_nested_helper_writes(x):
    y = G * np.sin(x)
    bump_twice_removed()
    return np.sum(y)


def caller_reads_a_view_helper_writes(x):
    v = G[::-1]
    y = np.sum(v * x)
    bump()
    return y


def caller_reads_held_item_helper_writes(x):
    y = np.sum(L[0] * x)
    bump_a_held_row()
    return y


def caller_reads_helper_writes_the_memory_under_another_name(x):
    y = np.sum(G * x)
    bump_through_a_held_view()
    return y


def caller_reads_and_writes_the_memory_under_two_names(x):
    y = np.sum(SAME_AS_G * x)
    G[0] = 5.0
    return y


def helper_reads_caller_writes(x):
    y = reads_g(x)
    G[1] = 0.5
    return y


def helper_reads_helper_writes(x):
    y = reads_g(x)
    bump()
    return y


def read_and_write_in_a_loop(x):
    total = 0.0
    for _ in range(2):
        bump()  # the next pass writes what this pass read
        total = total + np.sum(G * x)
    return total


def helper_reads_and_writes_in_a_loop(x):
    total = 0.0
    for _ in range(2):
        total = total + reads_g(x)
        bump()
    return total


def method_writes_after_a_read(x):
    log = Logger()
    y = np.sum(G * x)
    log.log(y)
    return y


def uncompilable_helper_after_a_read(x):
    y = np.sum(G * x)
    uncompilable()
    return y


def closure_reads_closure_writes(x):
    y = cell_reader(x)
    cell_writer()
    return y


REFUSED = [caller_reads_helper_writes, caller_reads_nested_helper_writes,
           caller_reads_a_view_helper_writes, caller_reads_held_item_helper_writes,
           caller_reads_helper_writes_the_memory_under_another_name,
           caller_reads_and_writes_the_memory_under_two_names,
           helper_reads_caller_writes, helper_reads_helper_writes,
           read_and_write_in_a_loop, helper_reads_and_writes_in_a_loop,
           method_writes_after_a_read, uncompilable_helper_after_a_read,
           closure_reads_closure_writes]


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_a_write_into_an_outside_value_a_gradient_read_is_refused(fn):
    with pytest.raises(sd.CompileError, match="from outside the function|may change"):
        sd.grad(fn)(X.copy())


def test_the_refusal_names_the_value():
    with pytest.raises(sd.CompileError, match="'G'"):
        sd.grad(caller_reads_helper_writes)(X.copy())


# --- no gradient read it first: run as written ----------------------------------------

def helper_writes_before_the_read(x):
    bump()
    return np.sum(G * x)


def helper_writes_another_global(x):
    y = np.sum(G * x)
    bump_other()
    return y * np.sum(H)


def caller_writes_another_global_after_helper_read(x):
    y = reads_g(x)
    H[0] = 3.0
    return y


def caller_writes_what_it_read_itself(x):
    y = np.sum(np.sin(G * x))
    G[2] = 4.0  # its own write: the plan keeps what the adjoint reads
    return y


@pytest.mark.parametrize("fn", [helper_writes_before_the_read, helper_writes_another_global,
                                caller_writes_another_global_after_helper_read],
                         ids=lambda f: f.__name__)
def test_a_write_no_gradient_read_before_runs_as_written(fn):
    check_grad(fn, (X.copy(),), eager=False)


def test_a_write_into_a_global_the_function_read_reaches_the_global():
    expected = np.cos(G * X) * G  # G as read, before the write
    np.testing.assert_allclose(sd.grad(caller_writes_what_it_read_itself)(X.copy()),
                               expected, rtol=1e-12)
    assert G[2] == 4.0


# --- a write through another name for the array an adjoint read (memory shared) ----

class Box:
    def __init__(self, v):
        self.v = v


def attribute_read_then_written_by_name(x):
    b = Box(np.array([1.0, 2.0, 3.0]))
    y = np.sum(b.v * x)
    v = b.v
    v[0] = 5.0 * x[1]
    return y + np.sum(v * x)


def dict_item_read_then_written_by_name(x):
    d = {"w": np.array([1.0, 2.0, 3.0])}
    y = np.sum(np.sin(d["w"] * x))
    w = d["w"]
    w[2] = x[0] * x[1]
    return y + np.sum(w)


@pytest.mark.parametrize("fn", [attribute_read_then_written_by_name,
                                dict_item_read_then_written_by_name],
                         ids=lambda f: f.__name__)
def test_an_item_or_attribute_read_before_a_write_by_another_name_is_kept(fn):
    check_grad(fn, (X.copy(),), eager=False)


def reads_g_of_an_object(x, box):
    y = np.sum(box.v * x)
    v = box.v
    v[0] = 5.0
    return y


def test_an_attribute_of_an_argument_read_before_a_write_is_kept():
    box = Box(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(sd.grad(reads_g_of_an_object)(X.copy(), box), [1.0, 2.0, 3.0])


# --- the backward pass runs later ---------------------------------------------------------

def test_a_global_written_between_the_call_and_the_tape_gradient_is_read_as_it_was():
    x = sd.constant(X)
    expected = finite_difference(reads_g, (X.copy(),), 0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.function(reads_g)(x)
    G[...] = -1.0
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), expected, rtol=1e-6)


def test_a_global_written_between_the_call_and_the_pullback_is_read_as_it_was():
    _, pullback = sd.vjp(reads_g, X.copy())
    G[0] = 100.0
    np.testing.assert_allclose(pullback(1.0)[0], [1.0, 2.0, 3.0])


def test_a_global_the_function_writes_into_is_written_under_a_tape_too():
    x = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.function(caller_writes_what_it_read_itself)(x)
    assert G[2] == 4.0
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)),
                               np.cos(np.array([1.0, 2.0, 3.0]) * X) * [1.0, 2.0, 3.0],
                               rtol=1e-12)

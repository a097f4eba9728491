"""Compiled gradients through subscripts and control flow: indexing and writes into
arrays, if/elif/else on data, for over ranges, arrays, lists, zip and enumerate,
while, break/continue/return anywhere, nested loops.  Each is checked against the
eager tape (where it can follow the program) and finite differences."""
import numpy as np
import pytest

import srcdiff as sd

from compiler_programs import check_grad

RNG = np.random.default_rng(3)
X = RNG.uniform(0.5, 1.5, size=(5,))
M = RNG.uniform(0.5, 1.5, size=(3, 4))


def ids(v):
    return getattr(v, "__name__", "")


# --- subscripts ---

def subscript_reads(m, i):
    row = m[i]
    return np.sum(row * m[1:3].sum(axis=0)) + np.sum(m[:, 0] ** 2) + m[-1, -1] * m[0, i]


def advanced_reads(m):
    rows = np.array([0, 2, 0])
    picked = m[rows]          # a repeated row: its adjoint accumulates
    mask = m > 1.0
    return np.sum(picked ** 2) + np.sum(m[mask]) + np.sum(m[..., None, 1:])


def subscript_writes(x):
    out = np.zeros(4)
    for i in range(4):
        out[i] = x[i] * x[i + 1]
    out[0] = out[0] * 2.0 + out[3]  # reads and overwrites an element
    return np.sum(out ** 2)


def write_slices(m, x):
    out = np.ones((3, 4))
    out[1] = x[:4]
    out[:, 2] = m[:, 0] * 3.0
    out[0, 1:3] = np.sin(x[1:3])
    return np.sum(out * m)


def write_into_argument(x):
    x[0] = x[1] * x[2]  # the caller's array is left alone
    x[2] = np.sin(x[0])
    return np.sum(x ** 2)


@pytest.mark.parametrize("f, args, wrt, eager", [
    (subscript_reads, (M, 2), 0, True),
    (advanced_reads, (M,), 0, True),
    # writes into an ndarray: the eager tape cannot follow them (nor can TensorFlow's)
    (subscript_writes, (X,), 0, False),
    (write_slices, (M, X), (0, 1), False),
    (write_into_argument, (X,), 0, False),
], ids=ids)
def test_subscripts(f, args, wrt, eager):
    check_grad(f, args, wrt, eager=eager)


# --- branches ---

def if_elif_else(x):
    s = np.sum(x)
    if s > 6.0:
        y = np.sin(x)
    elif s > 4.0:
        y = x * x
        y = y * s
    elif s > 2.0:
        y = np.exp(x)
    else:
        y = -x
    return np.sum(y * x)


def branch_on_element(x):
    y = x
    if x[0] > x[1]:
        y = y * x[0]
    if np.max(y) < 1.0:
        y = np.tanh(y)
    else:
        y = y / np.max(y)
    return np.sum(y)


def nested_branches(x, a):
    y = x * a
    if a > 0.5:
        if np.sum(x) > 3.0:
            y = np.sin(y)
        else:
            y = y * 2.0
    else:
        y = y + a
    return np.sum(y)


def branch_defines_value(x):
    if np.sum(x) > 3.0:
        z = np.cos(x)
    else:
        z = x ** 2
    return np.sum(z)


@pytest.mark.parametrize("f, args, wrt", [
    (if_elif_else, (X * 1.6,), 0),
    (if_elif_else, (X,), 0),
    (if_elif_else, (X * 0.6,), 0),
    (if_elif_else, (X * 0.3,), 0),
    (branch_on_element, (X,), 0),
    (branch_on_element, (X[::-1] * 0.5,), 0),
    (nested_branches, (X, 0.7), (0, 1)),
    (nested_branches, (X * 0.5, 0.7), (0, 1)),
    (nested_branches, (X, 0.3), (0, 1)),
    (branch_defines_value, (X,), 0),
    (branch_defines_value, (X * 0.5,), 0),
], ids=ids)
def test_branches(f, args, wrt):
    check_grad(f, args, wrt)


# --- for loops ---

def loop_range(x, n):
    y = x
    for i in range(n):
        y = np.sin(y) * x + i
    return np.sum(y)


def loop_range_bounds(x):
    total = 0.0
    for i in range(1, len(x), 2):
        total = total + x[i] * x[i - 1]
    for i in range(len(x) - 1, 0, -1):
        total = total * 0.5 + x[i]
    return total


def loop_over_array(m):
    acc = np.zeros(4)
    for row in m:
        acc = acc * np.tanh(row) + row
    return np.sum(acc)


def loop_over_list(x):
    total = 0.0
    for scale in [0.5, 1.5, 2.0]:
        total = total + np.sum(np.sin(x * scale))
    return total


def loop_over_list_of_arrays(x):
    total = 1.0
    for v in [x, x * x]:
        total = total * np.sum(v)
    return total


def loop_zip_enumerate(x, m):
    total = 0.0
    for a, row in zip(x, m):
        total = total + a * np.sum(row)
    for k, row in enumerate(m):
        total = total + k * np.sum(row ** 2)
    return total


def loop_carried_overwrites(x):
    a = x
    b = x * 2.0
    for _ in range(3):
        c = a * b
        a = np.sin(b)
        b = c + a
    return np.sum(a * b)


def nested_loops(m):
    total = 0.0
    h = np.ones(4)
    for i in range(3):
        for j in range(4):
            h = np.cos(h) * m[i, j]
            total = total + h[j]
    return total + np.sum(h)


@pytest.mark.parametrize("f, args, wrt", [
    (loop_range, (X, 3), 0),
    (loop_range, (X, 0), 0),
    (loop_range_bounds, (X,), 0),
    (loop_over_array, (M,), 0),
    (loop_over_list, (X,), 0),
    (loop_over_list_of_arrays, (X,), 0),
    (loop_zip_enumerate, (X, M), (0, 1)),
    (loop_carried_overwrites, (X,), 0),
    (nested_loops, (M,), 0),
], ids=ids)
def test_for_loops(f, args, wrt):
    check_grad(f, args, wrt)


# --- while loops ---

def while_data_dependent(x):
    y = x
    while np.sum(y * y) < 50.0:
        y = y * 1.5 + np.sin(y)
    return np.sum(y)


def while_counter(x, n):
    i = 0
    y = x
    while i < n:
        y = np.tanh(y) + x
        i += 1
    return np.sum(y)


def while_nested_in_for(x):
    y = x
    for _ in range(2):
        k = 0
        while k < 3 and np.max(y) < 20.0:
            y = y * 1.7
            k = k + 1
        y = np.sqrt(y)
    return np.sum(y)


@pytest.mark.parametrize("f, args, wrt", [
    (while_data_dependent, (X,), 0),
    (while_data_dependent, (X * 100,), 0),  # no iteration at all
    (while_counter, (X, 4), 0),
    (while_nested_in_for, (X,), 0),
], ids=ids)
def test_while_loops(f, args, wrt):
    check_grad(f, args, wrt)


# --- break, continue, return anywhere ---

def break_in_for(x):
    y = x
    for i in range(10):
        if np.sum(y) > 20.0:
            break
        y = y * 1.3 + i
    return np.sum(y)


def continue_in_for(x):
    total = 0.0
    for i in range(len(x)):
        if x[i] < 1.0:
            continue
        total = total + np.exp(x[i])
    return total


def break_in_while(x):
    y = x
    while True:
        y = np.sin(y) + y
        if np.sum(y) > 15.0:
            break
    return np.sum(y)


def early_return(x):
    s = np.sum(x)
    if s > 5.0:
        return s * s
    y = np.sin(x)
    return np.sum(y)


def return_in_loop(x):
    y = x
    for i in range(5):
        y = y * 1.5
        if np.max(y) > 4.0:
            return np.sum(y) * i
    return np.sum(np.cos(y))


def return_in_nested_loops(m):
    total = 0.0
    for i in range(3):
        for j in range(4):
            total = total + m[i, j] ** 2
            if total > 4.0:
                return total * m[i, j]
    return -total


def break_continue_nested(m):
    total = 0.0
    for i in range(3):
        for j in range(4):
            if m[i, j] < 0.8:
                continue
            if j > 2:
                break
            total = total + np.sin(m[i, j]) * (i + 1)
        if total > 3.0:
            break
    return total


def return_in_while(x):
    y = x
    k = 0
    while k < 10:
        y = y * 1.2
        if np.sum(y) > 9.0:
            return np.sum(y ** 2)
        k += 1
    return 0.0 * np.sum(y)


def else_of_a_loop_with_a_continue(x):
    total = 0.0
    for j in range(2):
        for i in range(3):
            if x[i] * j > 1.2:
                break
        else:  # no break: skip the rest of the outer body
            total = total + np.sum(x) * j
            continue
        total = total + x[0] ** 2
    return total


def return_skips_the_else(x):
    for i in range(3):
        if x[i] > 1.0:
            return np.sum(x) * i
    else:
        y = np.sum(x ** 3)
    return y


@pytest.mark.parametrize("f, args, wrt", [
    (break_in_for, (X,), 0),
    (else_of_a_loop_with_a_continue, (X,), 0),
    (else_of_a_loop_with_a_continue, (X * 0.1,), 0),
    (return_skips_the_else, (X,), 0),
    (return_skips_the_else, (X * 0.1,), 0),
    (continue_in_for, (X,), 0),
    (break_in_while, (X,), 0),
    (early_return, (X,), 0),
    (early_return, (X * 0.5,), 0),
    (return_in_loop, (X,), 0),
    (return_in_loop, (X * 0.1,), 0),
    (return_in_nested_loops, (M,), 0),
    (return_in_nested_loops, (M * 0.1,), 0),
    (break_continue_nested, (M,), 0),
    (return_in_while, (X,), 0),
    (return_in_while, (X * 0.01,), 0),
], ids=ids)
def test_exits(f, args, wrt):
    check_grad(f, args, wrt)


def loop_over_a_rebound_sequence(x):
    v = x * 1.0
    total = 0.0
    for e in v:
        v = v * 0.5  # iteration still runs over the v of before the loop
        total = total + e * np.sum(v)
    for k, e in enumerate(v):
        v = np.sin(v)
        total = total + e * k
    return total + np.sum(v)


def test_loop_over_a_sequence_the_body_rebinds():
    check_grad(loop_over_a_rebound_sequence, (X,), 0)


def view_then_write(x, s):
    buf = np.zeros(3)
    y = buf[::-1]  # a view: the write below shows through y
    buf[2] = s * 2.0
    return np.sum(y * x)


def write_through_a_view(x, s):
    buf = np.ones(3)
    y = buf[1:]
    y[0] = s      # changes buf
    return np.sum(buf * x)


def alias_then_write(x, s):
    out = np.zeros(3)
    kept = out    # the same array under two names
    out[1] = s
    return np.sum(kept * x)


def view_from_the_last_iteration(x, s):
    buf = np.zeros(3)
    total = 0.0
    for i in range(3):
        if i > 0:
            total = total + np.sum(y * x)  # noqa: F821 (last iteration's view)
        y = buf[:2]
        buf[i] = s * i
    return total


def flip_then_write(x, s):
    buf = np.zeros(3)
    y = np.flip(buf)  # a view too, with no slice to show it
    buf[2] = s * 2.0
    return np.sum(y * x)


def diagonal_then_write(x, s):
    buf = np.zeros((3, 3))
    y = np.diag(buf)  # the diagonal of a matrix is a view of it
    buf[1, 1] = s * 2.0
    return np.sum(y * x)


@pytest.mark.parametrize("fn", [view_then_write, write_through_a_view, alias_then_write,
                                view_from_the_last_iteration, flip_then_write,
                                diagonal_then_write], ids=ids)
def test_a_view_read_after_a_write_into_its_memory_is_refused(fn):
    # the write changes the view without an assignment to it: its adjoint would be lost
    with pytest.raises(sd.CompileError, match="cannot follow a write into memory") as info:
        sd.grad(fn, (0, 1))(X[:3].copy(), 0.3)
    assert info.value.lineno is not None and ".copy()" in str(info.value)


def slice_updated_from_itself(x, s):
    y = x * 1.0
    y[1:] = np.sin(y[1:]) * s  # y[1:] is a view, read by the adjoint after the write
    return np.sum(y ** 2)


def column_scaled_in_place(x, s):
    m = np.outer(x[:3], x[:3]) + np.eye(3)
    m[:, 2] = m[:, 2] * s
    m[0] *= x[0]
    return np.sum(np.linalg.inv(m + 3.0 * np.eye(3)))


def view_read_before_the_write(x, s):
    y = np.tanh(x)
    v = y[:2]
    t = np.sum(v * v)   # v's adjoint reads v as it is here
    y[:2] = s
    return t + np.sum(y * x)


def base_read_before_a_write_through_a_view(x, s):
    y = x * 1.0
    t = np.sum(y ** 3)  # y's adjoint reads y before v[0] = s changes it
    v = y[:2]
    v[0] = s
    return t + np.sum(v * x[:2])


def a_view_rewritten_every_iteration(x, s):
    y = x * 1.0
    for i in range(3):
        w = y[::2]
        y[::2] = np.sin(w) * w * s
    return np.sum(y * x)


@pytest.mark.parametrize("fn", [slice_updated_from_itself, column_scaled_in_place,
                                view_read_before_the_write,
                                base_read_before_a_write_through_a_view,
                                a_view_rewritten_every_iteration], ids=ids)
def test_a_view_an_adjoint_reads_keeps_its_value_from_before_the_write(fn):
    # the forward pass reads the view before the write; the backward pass must too
    check_grad(fn, (X[:3].copy(), 0.3), (0, 1), eager=False)
    compiled = sd.function(fn)
    value, pullback = sd.vjp(fn, X[:3].copy(), 0.3)
    first, second = pullback(1.0), pullback(1.0)  # the tape is left as it was
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(compiled(X[:3].copy(), 0.3), fn(X[:3].copy(), 0.3))


def element_then_write(x, s):
    b = np.sin(x)
    d = b[-1]     # a row if x is a matrix (a view), a number if it is a vector
    b[-1] = s * 2.0
    return np.sum(b * x) * d


def test_an_element_of_a_matrix_is_a_view_read_after_a_write():
    # the same code on a vector compiles (d is a number, a copy): the compile is
    # keyed on the rank of x
    check_grad(element_then_write, (X[:3].copy(), 0.3), (0, 1), eager=False)
    with pytest.raises(sd.CompileError, match="cannot follow a write into memory"):
        sd.grad(element_then_write, (0, 1))(M.copy(), 0.3)


def alias_of_an_array_number(a, x):
    b = a         # a 0-d array is an array: += writes into it, a sees the write
    b += x
    return a * x


def alias_of_a_kept_reduction(x):
    s = np.sum(x, keepdims=True)  # keepdims: an array of one element, not a number
    t = s
    t += x[0]     # writes into s
    return np.sum(s * x)


@pytest.mark.parametrize("fn, args", [
    (alias_of_an_array_number, (np.array(0.5), 0.3)),
    (alias_of_a_kept_reduction, (X[:3],)),
], ids=ids)
def test_an_alias_of_an_array_that_looks_like_a_number_is_refused(fn, args):
    with pytest.raises(sd.CompileError, match="cannot follow a write into memory"):
        sd.grad(fn)(*args)


def number_copy_then_update(v, x):
    a = np.dot(v, v)  # vectors: a NumPy scalar, which -= rebinds
    b = a
    b -= 1.0
    return a * b + np.sum(x * b)


def sum_copy_then_update(x):
    s = np.sum(x)
    t = s
    t -= 1
    t += np.sum(x * x)
    return s * t


def element_of_a_vector_then_writes(x, s):
    b = np.sin(x)
    d = b[-1]        # a number: the writes below change neither b through d nor d
    b[0] = d * s
    d = d * 3.0
    b[-1] = s
    return np.sum(b * x) + d


def element_of_a_buffer(x, s):
    buf = np.zeros(3)
    buf[1] = s * 2.0
    e = buf[1]       # np.zeros(3) is a vector: e is a number
    buf[1] = x[0]
    e += s
    return e * np.sum(x) + np.sum(buf * x[:3])


def transpose_of_a_fresh_array_then_write(g, c):
    c = c * 1.0
    t = np.transpose(np.outer(g, c))  # a view of the outer product, not of c
    c[0] = g[0]
    return np.sum(t * t) + np.sum(c * c)


@pytest.mark.parametrize("fn, args, wrt", [
    (number_copy_then_update, (X[:3], X[3:]), (0, 1)),
    (sum_copy_then_update, (X,), 0),
    (element_of_a_vector_then_writes, (X[:3], 0.3), (0, 1)),
    (element_of_a_buffer, (X[:4], 0.3), (0, 1)),
    (transpose_of_a_fresh_array_then_write, (X[:3], X[3:]), (0, 1)),
], ids=ids)
def test_numbers_and_fresh_arrays_share_no_memory(fn, args, wrt):
    check_grad(fn, args, wrt, eager=False)


def rows_of_a_buffer(W, x0):
    h = np.zeros((4, 3))
    h[0] = x0
    for t in range(1, 4):
        prev = h[t - 1]     # a view, read before the write below
        h[t] = np.tanh(W @ prev)
    return np.sum(h ** 2)


def copy_then_write(x, s):
    buf = np.zeros(3)
    y = buf[::-1].copy()
    buf[2] = s * 2.0
    return np.sum(y * x) + np.sum(buf * x)


@pytest.mark.parametrize("fn, args, wrt", [
    (rows_of_a_buffer, (M[:3, :3] * 0.5, X[:3]), (0, 1)),
    (copy_then_write, (X[:3], 0.3), (0, 1)),
], ids=ids)
def test_views_read_before_any_write_are_exact(fn, args, wrt):
    check_grad(fn, args, wrt, eager=False)


# --- a value restored by a replayed backward pass, bound only in a branch not taken ----
# The backward pass works on a copy of what it restores (a tape may be replayed: a
# jacobian's rows); where the branch did not run, the name holds None (found by fuzzing).

def joined(items):
    return items[0] * items[-1] + np.tanh(items[len(items) - 1])


def dict_bound_in_a_branch(x, y):
    a = np.sin(x)
    if x[1] > 0.0:
        d = {"u": x}
        for _ in range(2):
            a = joined([np.tanh(y), d["u"]])
            d["u"] = d["u"] * y
    d = {"u": x * 2.0}
    return np.sum(d["u"] * y) + np.sum(a)


def list_bound_in_a_branch(x, y):
    a = np.sin(x)
    if x[1] > 0.0:
        items = [x, y]
        for _ in range(2):
            a = joined(items)
            items[0] = items[1] * y
    items = [x * 2.0]
    return np.sum(items[0] * y) + np.sum(a)


def array_bound_in_a_branch(x, y):
    a = np.sin(x)
    if x[1] > 0.0:
        z = x * 1.0
        for i in range(2):
            a = np.tanh(z) * y
            z[i] = z[i + 1] * y[i]
    z = x * 2.0
    return np.sum(z * y) + np.sum(a)


def dict_written_in_a_branch(x, y):  # copied before the backward pass restores it
    a = np.sin(x)
    if x[1] > 0.0:
        d = {"u": x}
        d["w"] = np.cumsum(d["u"]) * y
        a = d["w"] * 0.5
        for _ in range(2):
            a = np.tanh(a) * y
    return np.sum(a * y)


@pytest.mark.parametrize("f", [dict_bound_in_a_branch, list_bound_in_a_branch,
                               array_bound_in_a_branch, dict_written_in_a_branch],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_restored_value_a_branch_not_taken_left_unbound(f, sign):
    x, y = np.array([0.3, 0.6 * sign, -0.4]), np.array([0.8, -0.5, 0.2])
    assert "own_copy(" in sd.adjoint_source(f, wrt=(0, 1))
    check_grad(f, (x, y), wrt=(0, 1), eager=f is not array_bound_in_a_branch)

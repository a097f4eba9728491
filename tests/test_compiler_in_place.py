"""The backward pass writes into arrays it owns (compiler/adjoint_state.py ``reuser``,
runtime.py ``into``), and an @sd.function under a tape walked once hands its tape over
(function.py, ``Unit.spend``).

A write in place into memory something else refers to is a silent wrong gradient: each
program here is one where an adjoint is shared (with another input's adjoint, the
caller's seed, the arguments) or has a dtype or shape the result would not have, checked
against the eager tape and finite differences, on every path that walks a tape."""
import os
import sys

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad, eager_grads, finite_difference
from srcdiff.compiler.runtime import into

sys.path.append(os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from compiler import peak_memory  # noqa: E402  the benchmarks' own measure

RNG = np.random.default_rng(5)
X = RNG.uniform(-1.0, 1.0, size=6)
W = RNG.uniform(0.5, 1.5, size=6)


def exp_chain(x, w):
    y = np.exp(x * w)   # dy * y: into dy's array
    z = -y              # -dz: into dz's
    u = z * 0.5         # du * 0.5: into du's
    return np.sum(np.exp(u) * u)


def difference(x, w):
    a = np.sin(x)
    b = np.cos(w)
    d = a - b           # da is dd itself: db = -dd must not be written into dd
    e = d * 3.0         # dd = de * 3.0, an array of the pass's own
    return np.sum(e * e)


def reversed_difference(x, w):
    a = np.sin(x)
    b = np.cos(w)
    d = b - a           # db = dd first, then da = -dd: not into dd, db's array
    e = d * 3.0
    return np.sum(e * e)


def product_of_one(x, w):
    y = np.exp(x)
    z = y * y           # two contributions read dz: the last may write into it
    t = z * w
    return np.sum(t * t)


def accumulated_in_a_loop(x, w):
    y = x * w
    for i in range(3):
        y = np.exp(y) * 0.5     # each iteration's adjoint, written into the last's
        y = -y
    return np.sum(y * y)


def broadcast_against(x, w):
    y = np.exp(x)               # (6,)
    z = y * np.reshape(w, (6, 1))   # (6, 6): dz larger than y
    t = -z
    return np.sum(t * t)


def complex_contributions_in_a_loop(x, w):
    y = np.sin(x)               # real: dy is an array of zeros the loop adds into
    s = 0.0
    for k in range(3):
        s = s + np.sum(y * w * k)
        s = s + np.real(np.sum(np.exp(1j * k * y)))    # complex: its real part is dy's
        s = s + np.abs(np.sum((1.0 + 1j * k) * y * w))  # the operand complex, not y
    return s


PROGRAMS = [exp_chain, difference, reversed_difference, product_of_one, accumulated_in_a_loop,
            broadcast_against, complex_contributions_in_a_loop]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_gradients_written_in_place_equal_the_eager_tapes(fn):
    check_grad(fn, (X, W), wrt=(0, 1))


def test_the_chains_adjoints_are_written_into_the_pass_own_arrays():
    source = sd.adjoint_source(exp_chain)
    backward = source.split("def exp_chain_backward")[1]
    for written in ("into(dy, np.multiply, dy, y)", "into(dz, np.negative, dz)",
                    "into(du, np.multiply, du, 0.5)"):
        assert written in backward, source
    # both contributions of z = y * y read dz: the second may write into it
    block = sd.adjoint_source(product_of_one).split("_backward")[1].split("z = y * y")[1]
    assert "dy += unbroadcast(into(dz, np.multiply, dz, y), y)" in block.split("# line")[0]
    # da is dd's array: the contribution to b must make a new one
    for fn, line in ((difference, "d = a - b"), (reversed_difference, "d = b - a")):
        block = sd.adjoint_source(fn, wrt=(0, 1)).split("_backward")[1].split(line)[1]
        block = block.split("# line")[0]
        assert "-dd" in block and "into(" not in block, block


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_a_pullback_called_twice_and_the_callers_seed(fn):
    """The seed is the caller's: the pass never writes into it, nor into a previous
    call's adjoints; a pullback walks its tape again."""
    _, pullback = sd.vjp(fn, X, W)
    seed = np.array(2.0)
    first = pullback(seed)
    second = pullback(seed)
    assert seed == 2.0
    for k in range(2):
        np.testing.assert_allclose(first[k], 2.0 * finite_difference(fn, (X, W), k),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(first[k], second[k])


def vector_chain(x, w):
    y = np.exp(x * w)
    z = -y
    return z * 0.5


def test_jacobian_rows_and_a_seed_array_shared_with_the_caller():
    jac = sd.jacobian(vector_chain)(X, W)
    expected = np.diag(-0.5 * W * np.exp(X * W))
    np.testing.assert_allclose(jac, expected, rtol=1e-12)
    seed = np.ones(6)
    _, pullback = sd.vjp(vector_chain, X, W)
    dx, _ = pullback(seed)
    np.testing.assert_array_equal(seed, np.ones(6))  # dz is the seed: never written into
    np.testing.assert_allclose(dx, np.diag(expected), rtol=1e-12)


def test_dtypes_are_those_of_the_eager_tape():
    """A float32 adjoint times a float64 value is float64, as the eager tape makes it,
    and an int value never receives a float: ``into`` writes only where the result has
    the array's dtype."""
    def mixed(x, w, k):
        y = np.exp(x)           # float32
        z = y * 2.0             # float32: dz * 2.0 stays float32
        t = z * w               # float64
        return np.sum(t * t) + np.sum(z * k)

    x32 = X.astype(np.float32)
    k = np.arange(6)
    compiled = sd.grad(mixed, (0, 1))(x32, W, k)
    tx, tw = sd.constant(x32), sd.constant(W)
    with sd.GradientTape() as tape:
        tape.watch([tx, tw])
        y = mixed(tx, tw, k)
    eager = tape.gradient(y, [tx, tw])
    for c, e in zip(compiled, eager):
        assert c.dtype == np.asarray(e).dtype
        np.testing.assert_allclose(c, e, rtol=1e-6)


def test_into_writes_only_where_the_result_is_the_arrays_own():
    out = np.ones(4)
    assert into(out, np.multiply, out, np.full(4, 3.0)) is out and out[0] == 3.0
    assert into(out, np.negative, out) is out and out[0] == -3.0
    assert into(out, np.true_divide, 2.0, out) is out and out[0] == 2.0 / -3.0
    rows = np.ones((2, 3))  # an operand that broadcasts to out's shape
    assert into(rows, np.add, rows, np.arange(3.0)) is rows
    np.testing.assert_array_equal(rows, [[1.0, 2.0, 3.0]] * 2)
    refused = [
        (np.ones(4, np.float32), (np.ones(4),)),        # a float64 result
        (np.ones(4), (np.ones((2, 4)),)),               # a larger result
        (np.ones(4, int), (3,)),                        # not of an inexact dtype
        (np.ones(4), (1j,)),                            # a complex result
        (np.float64(1.0), (2.0,)),                      # a number, not an array
    ]
    for out, others in refused:
        before = np.copy(out)
        result = into(out, np.multiply, out, *others)
        assert result is not out
        np.testing.assert_array_equal(out, before)
        np.testing.assert_array_equal(result, before * others[0])
        assert np.result_type(result) == np.result_type(before * others[0])


# --- the bridge: an @sd.function on a tape walked once hands its tape over ----------

def test_nested_tapes_both_recording_the_call_keep_its_tape():
    """A call two tapes record is one entry on each: the first walk must leave its
    saved values for the second."""
    compiled = sd.function(exp_chain)
    x, w = sd.constant(X), sd.constant(W)
    with sd.GradientTape() as outer:
        outer.watch([x, w])
        with sd.GradientTape() as inner:
            inner.watch([x, w])
            y = compiled(x, w)
    expected = eager_grads(exp_chain, (X, W), (0, 1))
    for tape in (inner, outer):
        for g, e in zip(tape.gradient(y, [x, w]), expected):
            np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_a_tape_used_once_and_a_persistent_one_give_the_same(fn):
    compiled = sd.function(fn)
    x, w = sd.constant(X), sd.constant(W)
    expected = eager_grads(fn, (X, W), (0, 1))
    for persistent in (False, True):
        with sd.GradientTape(persistent=persistent) as tape:
            tape.watch([x, w])
            y = compiled(x, w)
        for _ in range(1 + persistent):
            for g, e in zip(tape.gradient(y, [x, w]), expected):
                np.testing.assert_allclose(g, e, rtol=1e-12)


def test_the_bridge_costs_what_sd_grad_costs():
    """A tape used once walks the call's entry once: its compiled backward pass frees
    the saved values as sd.grad's does (tracemalloc's peaks, in multiples of x)."""
    def chain(x):
        y = np.exp(x)
        y = np.sin(y)
        y = np.tanh(y)
        return np.sum(y)

    compiled = sd.function(chain)
    x = np.linspace(-1.0, 1.0, 200_000)
    xt = sd.constant(x)

    def bridge():
        with sd.GradientTape() as tape:
            tape.watch(xt)
            y = compiled(xt)
        return tape.gradient(y, xt)

    grad = sd.grad(chain)
    np.testing.assert_allclose(bridge(), grad(x), rtol=1e-12)
    by_grad = peak_memory(grad, (x,)) / x.nbytes
    by_bridge = peak_memory(bridge, ()) / x.nbytes
    assert by_bridge < by_grad + 0.5, (by_bridge, by_grad)
    assert by_bridge < 2.2  # two arrays beyond x: the lean unit's (compiler/in_place.py)


def test_a_tape_used_once_for_a_jacobian_row_by_row_keeps_the_compiled_tape():
    """The rows of a jacobian walk one compiled entry once per row: a tape used once
    must not hand the entry's saved values to the first row."""
    def einsum(x, w):  # a rule without a batched form: the entry runs row by row
        return np.einsum("i,ij->j", x, w)

    f = sd.function(einsum)
    x, w = np.array([1.0, 2.0]), np.arange(6.0).reshape(2, 3)
    with sd.GradientTape() as tape:
        xt = sd.constant(x)
        tape.watch(xt)
        y = f(xt, w) * 2.0
    np.testing.assert_allclose(tape.jacobian(y, xt).numpy(), 2.0 * w.T, rtol=0)
    assert f.cache_info().row_by_row is not None

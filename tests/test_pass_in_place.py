"""The lean unit (compiler/in_place.py): a call with a large array computes in place into
arrays the generated code owns, and only where nothing else can see them.

Each program below offers the pass an array it must not write into (an argument, the
caller's cotangent, a value two statements read, one a container, an aux result or a
view also holds, a value a loop carries, a saved value on a tape walked again, an
operand whose shape or dtype differs from the result's): gradients of the lean unit
are compared with the eager tape (tight: the one reordered product rounds within a
few ulps), with the plain unit on the same arguments and with a directional finite
difference, and the caller's arrays are checked unchanged."""
import numpy as np
import pytest

import sys

import srcdiff as sd
from srcdiff.compiler.cache import LEAN_BYTES
from srcdiff.compiler.runtime import spare
from compiler_programs import eager_grads
from test_compiler_memory import chain as benchmark_chain, peak_memory

N = LEAN_BYTES // 8 + 40  # float64 elements: just large enough for the lean unit
RNG = np.random.default_rng(29)
X = RNG.uniform(-1.0, 1.0, size=N)
W = RNG.uniform(0.5, 1.5, size=N)


def read_by_two_statements(x, w):
    a = np.exp(x * w)
    b = np.tanh(a)      # a is read again below: not written into
    c = a * b
    return np.sum(c + a)


def held_by_a_list(x, w):
    t = np.sin(x * w)
    box = [t]
    u = np.tanh(t)      # t's name dies here, but the list holds its array
    return np.sum(u * box[0])


def held_by_a_dict(x, w):
    t = np.sin(x * w)
    box = {"t": t}
    u = np.exp(t)
    return np.sum(u * box["t"])


def transposed(x, w):
    m = np.reshape(x * w, (N, 1))
    v = m.T             # a view of m
    u = np.tanh(m)      # m's name dies here, v still reads its array
    return np.sum(u) + np.sum(v * w)


def sliced(x, w):
    m = x * w
    v = m[1:]
    u = np.exp(m)
    return np.sum(u) + np.sum(v * v)


def reshaped(x, w):
    m = np.sin(x) * w
    v = np.reshape(m, (N, 1))
    u = np.cos(m)
    return np.sum(u) + np.sum(v * 3.0)


def carried_by_a_loop(x, w):
    h = x * w
    g = np.sin(h)
    for i in range(3):
        g = np.tanh(g) * h   # h is read by every iteration
    u = np.exp(h)
    return np.sum(u) + np.sum(g)


def broadcast_result(x, w):
    s = np.sin(x * w)             # dies below, where the result is larger than it
    u = s + np.reshape(w[:3], (3, 1))
    return np.sum(np.tanh(u))


def small_operand(x, w):
    h = x * w
    h2 = np.reshape(h, (N // 4, 4)) + w[:4]    # a bias: checked when it runs
    return np.sum(np.tanh(h2 + 1.0))


def exp_sin_tanh(x, w):
    y = np.exp(x * w)
    y = np.sin(y)
    y = np.tanh(y)      # into sin's result; sin's adjoint reorders exp's factor
    return np.sum(y)


def augmented_alias(x, w):
    a = x * 2.0
    b = a
    a += b * w          # b is a's array: b * w is not computed into it first
    return np.sum(a * w)


def chain(x):
    y = np.exp(x)
    y = np.sin(y)
    y = np.tanh(y)
    return np.sum(y)


def factors_of_one_saved_value(x, w):
    e = np.exp(x)
    s = np.sin(e)
    c = np.cos(s)
    return np.sum(c * w)


def mixed_dtypes(x, w):
    a = np.exp(x.astype(np.float32))   # float32 beside float64: never written across
    b = a * w
    return np.sum(np.tanh(b))


PROGRAMS = [read_by_two_statements, held_by_a_list, held_by_a_dict, transposed, sliced,
            reshaped, carried_by_a_loop, broadcast_result, small_operand, exp_sin_tanh,
            factors_of_one_saved_value, mixed_dtypes, augmented_alias]


def directional(fn, args, grads, h=1e-6):
    """Assert <grad, v> equals the central difference of ``fn`` along a random v."""
    v = [RNG.standard_normal(np.shape(a)) for a in args]
    up = fn(*[a + h * d for a, d in zip(args, v)])
    down = fn(*[a - h * d for a, d in zip(args, v)])
    slope = sum(float(np.sum(g * d)) for g, d in zip(grads, v))
    np.testing.assert_allclose(slope, (up - down) / (2 * h), rtol=1e-5, atol=1e-6)


def plain(fn, args, wrt):
    """The plain unit's gradients on the same arguments (no array counts as large)."""
    module = sys.modules["srcdiff.function"]  # (sd.function is the decorator)
    sd.clear_cache()
    saved = module.LEAN_BYTES
    module.LEAN_BYTES = 1 << 62
    try:
        return sd.grad(fn, wrt)(*args)
    finally:
        module.LEAN_BYTES = saved
        sd.clear_cache()


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_the_lean_units_gradients_and_arguments(fn):
    x, w = X.copy(), W.copy()
    grads = sd.grad(fn, (0, 1))(x, w)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(w, W)
    for g, e, p in zip(grads, eager_grads(fn, (X, W), (0, 1)), plain(fn, (X, W), (0, 1))):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g, p, rtol=1e-12, atol=1e-14)
    if fn is not mixed_dtypes:  # (float32's rounding is far above the difference's step)
        directional(fn, (X, W), grads)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_a_tape_walked_again_is_never_written_into(fn):
    """A pullback called twice, and a persistent tape asked twice about an
    @sd.function: each walk sees the saved values as the forward pass left them."""
    expected = eager_grads(fn, (X, W), (0, 1))
    _, pullback = sd.vjp(fn, X, W)
    for scale in (1.0, -2.0):
        for g, e in zip(pullback(scale), expected):
            np.testing.assert_allclose(g, scale * e, rtol=1e-12, atol=1e-14)
    compiled = sd.function(fn)
    x, w = sd.constant(X), sd.constant(W)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = compiled(x, w)
    for _ in range(2):
        for g, e in zip(tape.gradient(y, [x, w]), expected):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-14)
    with sd.GradientTape() as tape:  # a tape walked once: the bridge spends it
        tape.watch([x, w])
        y = compiled(x, w)
    for g, e in zip(tape.gradient(y, [x, w]), expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(np.asarray(x), X)


def test_the_callers_cotangent_is_never_written_into():
    def f(x):
        y = np.exp(x)
        y = np.tanh(y * 2.0)
        return np.sin(y)

    seed = RNG.uniform(-1.0, 1.0, size=N)
    kept = seed.copy()
    _, pullback = sd.vjp(f, X)
    first = pullback(seed)[0]
    np.testing.assert_array_equal(seed, kept)
    np.testing.assert_allclose(pullback(seed)[0], first, rtol=1e-14)
    compiled = sd.function(f)
    xt = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(xt)
        y = compiled(xt)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, xt, output_gradients=seed)),
                               first, rtol=1e-12)
    np.testing.assert_array_equal(seed, kept)


def test_an_aux_result_is_never_written_into():
    def f(x):
        t = np.sin(x)
        aux = {"t": t}
        u = np.exp(t)   # t's name dies here; the aux result holds its array
        u = np.tanh(u)
        return np.sum(u), aux

    g, aux = sd.grad(f, has_aux=True)(X)
    np.testing.assert_array_equal(aux["t"], np.sin(X))
    np.testing.assert_allclose(g, eager_grads(lambda x: f(x)[0], (X,), (0,))[0], rtol=1e-12)


def test_a_returned_saved_value_is_never_written_into():
    def f(x):
        y = np.exp(x)
        z = np.tanh(y)
        return np.sum(z), y

    (value, y), dx = sd.value_and_grad(f, has_aux=True)(X)
    np.testing.assert_array_equal(y, np.exp(X))


def test_a_jacobians_rows_and_float32_and_complex():
    def f(x):
        y = np.exp(x * 0.5)
        return np.tanh(y)[:3]

    jac = sd.jacobian(f)(X)
    e = np.exp(X[:3] * 0.5)
    np.testing.assert_allclose(np.diag(jac[:, :3]), 0.5 * e * (1 - np.tanh(e) ** 2),
                               rtol=1e-12)
    np.testing.assert_array_equal(jac[:, 3:], 0)

    x32 = X.astype(np.float32)
    g32 = sd.grad(exp_sin_tanh)(x32, W.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, eager_grads(exp_sin_tanh, (X, W), (0,))[0], rtol=2e-5,
                               atol=1e-6)

    def c(z):
        return np.sum(np.abs(np.exp(np.sin(z))) ** 2)
    z = (X + 0.5j * W)
    gz = sd.grad(c)(z)
    np.testing.assert_allclose(gz, plain(c, (z,), 0), rtol=1e-12)

    def i(k, x):
        return np.sum(np.tanh(k * x + 1))  # an integer array times a float one
    k = np.arange(N) % 5
    np.testing.assert_allclose(sd.grad(i, 1)(k, X), plain(i, (k, X), 1), rtol=1e-12)


def test_the_lean_unit_writes_in_place_and_the_plain_one_does_not():
    small = sd.adjoint_source(chain, 0, (X[:10],))
    lean = sd.adjoint_source(chain, 0, (X,))
    assert "out=" not in small and "spare" not in small and "_spent" not in small
    assert "np.tanh(y, out=y)" in lean                 # the forward pass
    spent = lean[lean.index("_backward_spent"):]
    assert "np.cos(y, out=y)" in spent                 # sin's factor in exp's result
    assert spent.index("*= y") < spent.index("np.cos(y, out=y)")  # exp's factor first
    walked = lean[lean.index("_backward("):lean.index("_backward_spent")]
    assert "np.cos(y, out=y)" not in walked            # a tape walked again stays whole
    module = sys.modules["srcdiff.function"]
    saved, module.LEAN_BYTES = module.LEAN_BYTES, 1 << 62
    try:  # what the tests' ``plain`` compares with
        assert "out=" not in sd.adjoint_source(chain, 0, (X,))
    finally:
        module.LEAN_BYTES = saved


def test_spare_checks_shape_dtype_and_kind():
    a = np.ones(4)
    assert spare(a, 2.0, np.ones(4), np.ones(()), np.float64(3), np.ones((1,))) is a
    assert spare(a, np.ones((3, 4))) is None           # the result is larger
    assert spare(a, np.ones(4, np.float32)) is None    # another dtype
    assert spare(a, 1j) is None
    assert spare(np.ones(4, complex), 1j) is not None
    assert spare(np.arange(4), 1) is None              # integers: not inexact
    assert spare(np.float64(1.0), 1.0) is None         # a number: nothing to write into


def test_the_chains_peak_memory_is_two_arrays():
    """sd.grad of exp-sin-tanh keeps at most two arrays the size of its input beyond
    the input itself (the plain unit three); the benchmark's chain four (five)."""
    x = np.linspace(-1.0, 1.0, 200_000)
    g = sd.grad(chain)
    g(x)
    assert peak_memory(g, (x,)) <= 2.2 * x.nbytes  # the bridge: test_compiler_in_place
    b = sd.grad(benchmark_chain)
    b(x)
    assert peak_memory(b, (x,)) <= 4.2 * x.nbytes


def test_a_seed_of_another_dtype_walks_the_plain_backward_pass():
    """The spending walk is proven for a seed of the result's dtype: a float64 seed
    of a float32 result gets the pass that writes into no saved array."""
    from srcdiff.compiler.cache import CACHE
    x = X.astype(np.float32)
    unit = CACHE.get(chain, (True,), ranks=(1,), lean=(x.dtype,))
    assert unit.backward_spent is not None
    for seed in (np.float64(1 / 3), 1 / 3, np.float32(1 / 3), np.array(1 / 3, np.float32)):
        y, tape = unit.run([x])
        expected = unit.backward(unit.run([x])[1], seed)
        got = unit.spend([tape], seed)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-6)

"""What a tape keeps alive: a tape used once drops, before its walk, the values no
rule reads (when they are large: ``tape._LARGE``), and its gradients stay exact."""
import tracemalloc

import numpy as np
import pytest

import srcdiff as sd
from srcdiff import tape as tape_module
from test_rules import Arg, cases, draw, gradient, random_like, second_order_applies
from util import numerical_grad


@pytest.fixture
def slimming(monkeypatch):
    """Every tape used once slims its records, whatever their size."""
    monkeypatch.setattr(tape_module, "_LARGE", 0)


def chain(x):
    y = np.exp(x)  # reads its result only
    y = np.sin(y)  # reads its input only
    y = np.tanh(y)
    return np.sum(y)


def d_chain(x):
    e = np.exp(x)
    return (1 - np.tanh(np.sin(e)) ** 2) * np.cos(e) * e


@pytest.mark.parametrize("fn, args, kwargs", list(cases()))
def test_a_slimmed_walk_gives_every_rule_the_values_it_reads(fn, args, kwargs, monkeypatch):
    """The same gradients as a walk that keeps every value (each rule is checked
    against finite differences in test_rules): a value dropped that a rule reads
    would fail or differ here."""
    if not second_order_applies(fn, args):
        pytest.skip("the tape runs on arrays (complex values are never slimmed)")
    values = draw(args, np.random.default_rng(0))
    positions = [i for i, a in enumerate(args) if isinstance(a, Arg)]
    weights = random_like(fn(*values, **kwargs), np.random.default_rng(1))
    kept = gradient(fn, values, kwargs, positions, weights)
    monkeypatch.setattr(tape_module, "_LARGE", 0)
    slimmed = gradient(fn, values, kwargs, positions, weights)
    for a, b in zip(kept, slimmed):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def peak_in_inputs(fn, x):
    """The peak of memory ``fn(x)`` allocates, in multiples of ``x``'s size."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn(x)
        return (tracemalloc.get_traced_memory()[1] - base) / x.numpy().nbytes
    finally:
        tracemalloc.stop()


def tape_gradient(x):
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = chain(x)
    return tape.gradient(y, x)


def test_the_gradient_of_an_elementwise_chain_keeps_four_arrays_at_most():
    """exp, sin, tanh: the walk keeps exp's result (exp and sin read it) and tanh's,
    and tanh's vjp makes two temporaries; sin's result, which no rule reads, is freed
    before the walk (five arrays if it were kept)."""
    x = sd.constant(np.linspace(-1, 1, 200_000))
    tape_gradient(x)  # the rules' syntax is read once: not counted
    assert peak_in_inputs(tape_gradient, x) < 4.05


def test_values_the_caller_holds_stay_whole(slimming):
    x = sd.constant(np.linspace(-1, 1, 7))
    with sd.GradientTape() as tape:
        tape.watch(x)
        e = np.exp(x)
        s = np.sin(e)
        y = np.sum(np.tanh(s) * s)
    gx, gs = tape.gradient(y, [x, s])
    np.testing.assert_allclose(s.numpy(), np.sin(np.exp(x.numpy())))
    t = np.tanh(s.numpy())
    np.testing.assert_allclose(gs, (1 - t ** 2) * s.numpy() + t, rtol=1e-12)
    np.testing.assert_allclose(gx, numerical_grad(
        lambda v: np.sum(np.tanh(np.sin(np.exp(v))) * np.sin(np.exp(v))), x.numpy()),
        rtol=1e-6)


def test_an_adjoint_a_rule_passes_through_to_two_inputs_is_added_into_new_arrays(slimming):
    """``x + x`` gives the same array to both inputs, and ``positive`` passes its
    adjoint through: accumulating into either in place would change the other."""
    x0 = np.linspace(-1, 1, 5)
    x = sd.constant(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        a = x + x
        b = np.positive(a) * np.exp(a) + a
        y = np.sum(b * x)
    f = lambda v: np.sum(((2 * v) * np.exp(2 * v) + 2 * v) * v)  # noqa: E731
    np.testing.assert_allclose(tape.gradient(y, x), numerical_grad(f, x0), rtol=1e-6)


def test_a_persistent_tape_keeps_what_its_walks_read():
    x0 = np.linspace(-1, 1, 20_000)
    x = sd.constant(x0)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = chain(x)
    first, second = tape.gradient(y, x), tape.gradient(y, x)
    np.testing.assert_allclose(first, d_chain(x0), rtol=1e-12)
    np.testing.assert_array_equal(second, first)


@pytest.mark.parametrize("persistent", [False, True])
def test_second_derivatives_through_result_only_rules(slimming, persistent):
    """The inner walk runs under the outer tape (its rules run on Tensors, nothing is
    dropped); the outer one, used once, is slimmed."""
    x0 = np.linspace(-1, 1, 6)
    x = sd.constant(x0)
    with sd.GradientTape(persistent=persistent) as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = chain(x)
        g = inner.gradient(y, x)
        z = np.sum(g * g)
    expected = numerical_grad(lambda v: np.sum(d_chain(v) ** 2), x0)
    np.testing.assert_allclose(outer.gradient(z, x), expected, rtol=1e-6, atol=1e-8)


def test_jacobians_of_a_used_once_tape(slimming):
    x0 = np.linspace(-1, 1, 4)
    x = sd.constant(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = np.tanh(np.sin(np.exp(x)))
    np.testing.assert_allclose(tape.jacobian(y, x), np.diag(d_chain(x0)), rtol=1e-12)
    b0 = np.linspace(-1, 1, 6).reshape(3, 2)
    b = sd.constant(b0)
    with sd.GradientTape() as tape:
        tape.watch(b)
        y = np.tanh(np.sin(np.exp(b))) * b[:, ::-1]
    expected = np.stack([numerical_grad(lambda v, i=i: (np.tanh(np.sin(np.exp(v)))
                                                         * v[::-1])[i], b0[r])
                         for r in range(3) for i in range(2)]).reshape(3, 2, 2)
    np.testing.assert_allclose(tape.batch_jacobian(y, b), expected, rtol=1e-6, atol=1e-9)

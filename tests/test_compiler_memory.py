"""Generated code keeps only what it must (compiler/release.py): it lets go of each value
after its last read, and sd.grad hands its tape to the backward pass (``Unit.spend``).

Releasing must change no gradient: each program below is one where a value is shared
(an adjoint that is an argument's, a saved value two adjoints read, an adjoint summed
over a loop's iterations), checked against the eager tape and finite differences; a
tape walked more than once (a persistent tape over an @sd.function, a pullback called
twice, a jacobian's rows) must stay whole.  The chain's generated code is asserted to
delete its saved values, and its peak memory (tracemalloc, as benchmarks/compiler.py
measures it) to stay below what keeping them all would cost."""
import ast
import os
import sys

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad, eager_grads, finite_difference

sys.path.append(os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from compiler import chain, peak_memory  # noqa: E402  the benchmark's own workload

RNG = np.random.default_rng(11)
X = RNG.uniform(-1.0, 1.0, size=5)
W = RNG.uniform(0.5, 1.5, size=5)


def adjoint_is_the_arguments(x, w):
    y = x           # dy and dx: one array, until one of them is added to
    z = y * w
    s = np.sum(x)   # its adjoint spreads the seed: a read-only view
    return np.sum(z) + s + np.sum(y * y)


def saved_value_read_twice(x, w):
    z = np.tanh(x * w)
    a = z * x
    b = z ** 2
    return np.sum(a) + np.sum(b * w) + np.sum(z)


def adjoint_summed_over_iterations(x, w):
    h = x
    total = np.zeros_like(x)
    for i in range(4):
        h = np.tanh(h * w) + x
        total = total + h * h
    return np.sum(total) + np.sum(h)


def value_overwritten_after_its_last_read(x, w):
    t = x * w
    u = np.sin(t)
    t = u * u       # the old t is dead here, the new one read below
    return np.sum(t * x) + np.sum(u)


def released_in_one_arm(x, w):
    t = x * w
    if np.sum(t) > 0:
        t = np.exp(t)
    else:
        t = t * 3.0
    return np.sum(t * w)


def rebound_chain(x, w):
    y = np.exp(x * w)   # its adjoint reads its result
    y = np.sin(y)       # reads its input, saved for it
    y = np.tanh(y)      # reads its result only: nothing saved for it
    return np.sum(y * x)


def rebound_on_one_path(x, w):
    y = np.exp(x)
    if np.sum(x) > 0:
        y = y * w       # the exp's result is restored here, or before tanh
    y = np.tanh(y)
    return np.sum(y)


def rebound_in_a_loop(x, w):
    y = x * w
    for i in range(3):
        y = np.tanh(y)  # each iteration's adjoint reads the result the next overwrites
        y = np.sin(y) + x
    return np.sum(y * y)


def views_rebound_and_written(x, w):
    m = np.reshape(x * w, (5, 1))
    t = m.T             # a view of m
    t = np.tanh(t)      # rebinds t: the view is no longer read
    m = m * 2.0
    m[0] = np.sin(m[1])     # written into m's own array
    u = np.transpose(m)
    u = np.exp(u)
    return np.sum(t * w) + np.sum(m) + np.sum(u * w)


PROGRAMS = [chain, adjoint_is_the_arguments, saved_value_read_twice,
            adjoint_summed_over_iterations, value_overwritten_after_its_last_read,
            released_in_one_arm, rebound_chain, rebound_on_one_path, rebound_in_a_loop]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_gradients_with_releases_equal_the_eager_tapes(fn):
    args = (X,) if fn is chain else (X, W)
    check_grad(fn, args, wrt=tuple(range(len(args))) if len(args) > 1 else 0)


def test_views_rebound_and_written_into_equal_finite_differences():
    """The eager tape writes no elements: the gradients, from sd.grad and from a
    pullback called twice, against finite differences."""
    grads = sd.grad(views_rebound_and_written, (0, 1))(X, W)
    _, pullback = sd.vjp(views_rebound_and_written, X, W)
    first, second = pullback(1.0), pullback(3.0)
    for k in range(2):
        expected = finite_difference(views_rebound_and_written, (X, W), k)
        np.testing.assert_allclose(grads[k], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(first[k], grads[k], rtol=1e-12)
        np.testing.assert_allclose(second[k], 3.0 * grads[k], rtol=1e-12)


@pytest.mark.parametrize("fn", PROGRAMS[1:] + [views_rebound_and_written],
                         ids=lambda f: f.__name__)
def test_a_gradient_is_the_callers_own(fn):
    """Writing into one gradient changes neither the other, nor the arguments, nor
    the next call's gradients (nothing the backward pass kept aliases them)."""
    x, w = X.copy(), W.copy()
    grad = sd.grad(fn, (0, 1))
    dx, dw = grad(x, w)
    expected = (dx.copy(), dw.copy())
    dx += 100.0
    dw *= -3.0
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(w, W)
    again = grad(x, w)
    np.testing.assert_allclose(again[0], expected[0], rtol=1e-12)
    np.testing.assert_allclose(again[1], expected[1], rtol=1e-12)


@pytest.mark.parametrize("fn", [saved_value_read_twice, rebound_chain, rebound_in_a_loop],
                         ids=lambda f: f.__name__)
def test_a_persistent_tape_walks_an_sd_function_twice(fn):
    compiled = sd.function(fn)
    x, w = sd.constant(X), sd.constant(W)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = compiled(x, w)
        y2 = y * 2.0
    first = [np.array(g) for g in tape.gradient(y, [x, w])]
    second = [np.array(g) for g in tape.gradient(y2, [x, w])]
    third = [np.array(g) for g in tape.gradient(y, [x, w])]
    expected = eager_grads(fn, (X, W), (0, 1))
    for g, s, t, e in zip(first, second, third, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10)
        np.testing.assert_allclose(s, 2.0 * e, rtol=1e-10)
        np.testing.assert_allclose(t, e, rtol=1e-10)


@pytest.mark.parametrize("fn", [chain, adjoint_summed_over_iterations, rebound_chain,
                                rebound_in_a_loop], ids=lambda f: f.__name__)
def test_a_pullback_called_twice_gives_the_same_adjoints(fn):
    args = (X,) if fn is chain else (X, W)
    y, pullback = sd.vjp(fn, *args)
    first = pullback(1.0)
    second = pullback(np.float64(-2.0))
    for k, (a, b) in enumerate(zip(first, second)):
        np.testing.assert_allclose(a, finite_difference(fn, args, k), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, -2.0 * a, rtol=1e-12)


def test_a_jacobian_row_by_row_walks_one_tape_again():
    def several(x, w):
        h = np.tanh(x * w)
        return np.stack([np.sum(h * x), np.sum(h ** 2)])

    jac = sd.jacobian(several)(X, W)
    for row in range(2):
        def part(x, row=row):
            return several(x, W)[row]
        np.testing.assert_allclose(jac[row], finite_difference(part, (X,), 0), rtol=1e-5,
                                   atol=1e-6)


def test_the_chains_backward_pass_deletes_what_it_saved():
    source = sd.adjoint_source(chain)
    forward, backward = source.split("def chain_backward")
    lines = [line.strip() for line in backward.splitlines()]
    assert "del tape" in lines  # once unpacked: the tape's values are the pass's own
    deleted = {name.strip() for line in lines if line.startswith("del ")
               for name in line[4:].split(",")}
    saved = set(lines[1].split(" = ")[0].split(", "))  # what it unpacks from the tape
    assert {"w", "y", "z"} <= saved & deleted
    assert any(line.strip().startswith("del ") for line in forward.splitlines()), \
        "the forward pass keeps its temporaries"


def test_the_chains_gradient_costs_the_memory_of_the_function_itself():
    """The function alone peaks at five arrays (y, z, w and two temporaries); its
    gradient with the tape handed over does too: keeping the tape through the
    backward pass, or the forward pass's temporaries, would cost six or more."""
    x = np.linspace(-1.0, 1.0, 200_000)
    grad = sd.grad(chain)
    grad(x)
    function = peak_memory(chain, (x,)) / x.nbytes
    gradient = peak_memory(grad, (x,)) / x.nbytes
    assert function > 4.5
    assert gradient < function + 0.5


def exp_sin_tanh(x):
    y = np.exp(x)
    y = np.sin(y)
    y = np.tanh(y)
    return np.sum(y)


def test_every_value_the_forward_pass_saves_is_read_once_restored():
    """A restore ``y = y_old`` whose value nobody reads before it is deleted or bound
    again is a dead save: the forward pass kept an array for nothing."""
    source = sd.adjoint_source(exp_sin_tanh)
    backward = ast.parse(source).body[1].body
    restores = [k for k, s in enumerate(backward) if isinstance(s, ast.Assign)
                and isinstance(s.value, ast.Name) and "_old" in s.value.id]
    assert restores, "the sin's input is saved and restored"
    for k in restores:
        name = backward[k].targets[0].id
        following = (n for s in backward[k + 1:] for n in ast.walk(s)
                     if isinstance(n, ast.Name) and n.id == name)
        assert isinstance(next(following).ctx, ast.Load), \
            f"{ast.unparse(backward[k])} is never read:\n{source}"


def test_the_rebound_chains_gradient_keeps_three_arrays_at_most():
    """The exp's result (sin's adjoint reads it) and the tanh's (its own reads it) are
    kept; at the peak one more array is live (sin's adjoint: dy, cos(y))."""
    x = np.linspace(-1.0, 1.0, 200_000)
    grad = sd.grad(exp_sin_tanh)
    grad(x)
    assert peak_memory(grad, (x,)) / x.nbytes < 3.5

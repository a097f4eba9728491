"""Compiled jacobians: one walk of the batched backward pass for all the rows.

``sd.jacobian``, and ``tape.jacobian``/``batch_jacobian`` over an ``@sd.function``
entry, run the unit's batched backward pass once on a batch of cotangents.  Each
result is checked against the plain compiled backward pass run row by row (through
``sd.vjp``, which never uses the batched pass) and against central finite
differences; and each program is checked to take the batched pass, or to fall back
to the row loop for the reason given.
"""
import math

import numpy as np
import pytest

import srcdiff as sd
from srcdiff import nest
from srcdiff.api import _prepare
from srcdiff.function import Units
from util import numerical_jacobian

rng = np.random.default_rng(3)
N = 4
X = rng.uniform(-1, 1, N)
W = rng.uniform(-1, 1, (N, N))
V = rng.uniform(-1, 1, (3, N))
B = rng.uniform(-1, 1, N)
S = 0.7


def layer(x, w, b):
    return np.tanh(w @ x + b)


def layers(x, w, b):
    h = x
    for _ in range(3):
        h = np.tanh(w @ h + b)
    return h


def matrix_out(v, w):
    return np.tanh(v @ w) * np.mean(v, axis=0, keepdims=True)


def reductions(v, s):
    total = np.sum(v * v, axis=1)
    return total * s + np.max(v, axis=1) - np.mean(np.exp(v)) + math.sin(s) * np.var(v)


def branches(x, w):
    h = w @ x
    if np.sum(h) > 0:
        h = np.sin(h) * x
    else:
        h = h * 0.5 - x
    while np.sum(h * h) < 10.0:
        h = h * 1.5 + x
    return h


def helper(a, b):
    return np.tanh(a) * b + np.reshape(a, (-1,)) * 2.0


def calls(x, w, s):
    y = helper(w @ x, x) + helper(x, s)
    return y * np.sqrt(s)


def scalar_in(s, x):
    y = s * 1.0
    for _ in range(3):
        y = math.sin(y) * s + math.cos(y * s)
    return y * x


def scalar_out(x, w):
    return np.sum(np.tanh(w @ x) ** 2)


def indexing(x, w):
    h = w @ x
    for i in range(3):
        h = h + x[i] * w[i, ::2].sum() + w[[0, 2, 0, 1], 1:][:, i]
    return h[1:3] * x[0]


def assigning(x, w):
    out = np.zeros(N)
    out[1] = np.sum(w @ x)
    out[2:] = x[:2] * w[0, 1]
    return out * x


def assigning_at(x, w):  # at an index array: row by row
    out = np.zeros(N)
    out[[1, 2]] = x[:2] * w[0, 1]
    return out * x


def transposes(v, w):
    h = (v @ w).T * 2.0
    return np.moveaxis(np.swapaxes(h[None], 0, 2), -1, 0) + np.transpose(v.T)[None] ** 2


def einsum(v, w):  # a rule without a batched form
    return np.einsum("ij,jk->ik", v, w)


PROGRAMS = [  # function, arguments, wrt, why it runs row by row (None: batched)
    (layer, (X, W, B), (0, 1, 2), None),
    (layers, (X, W, B), (0, 1, 2), None),
    (matrix_out, (V, W), (0, 1), None),
    (reductions, (V, S), (0, 1), None),
    (branches, (X, W), (0, 1), None),
    (calls, (X, W, S), (0, 1, 2), None),
    (scalar_in, (S, X), (0, 1), None),
    (scalar_out, (X, W), (0, 1), None),
    (layer, (X, W, B), 0, None),
    (indexing, (X, W), (0, 1), None),
    (assigning, (X, W), (0, 1), None),
    (assigning_at, (X, W), (0, 1), "at an index array"),
    (transposes, (V, W), (0, 1), None),
    (einsum, (V, W), (0, 1), "numpy.einsum"),
]


def per_row(f, args, positions):
    """The jacobian row by row: ``sd.vjp``'s pullback of each one-hot cotangent."""
    y, pullback = sd.vjp(f, *args)
    seeds = np.eye(np.size(y)).reshape((np.size(y),) + np.shape(y))
    rows = [pullback(seed if np.ndim(y) else float(seed)) for seed in seeds]
    return [np.reshape([r[i] for r in rows], np.shape(y) + np.shape(args[i]))
            for i in positions]


def finite_differences(f, args, i):
    def partial(a):
        values = list(args)
        values[i] = float(a) if isinstance(args[i], float) else a
        return np.asarray(f(*values), dtype=np.float64)
    return numerical_jacobian(partial, args[i])


@pytest.mark.parametrize("f, args, wrt, fallback", PROGRAMS,
                         ids=[f"{p[0].__name__}-{p[2]}" for p in PROGRAMS])
def test_compiled_jacobian_equals_per_row_and_finite_differences(f, args, wrt, fallback):
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    unit, _ = _prepare(Units(f, positions, batched=True), list(args))
    if fallback is None:
        assert unit.not_batched is None and unit.backward_rows is not None
    else:
        assert unit.backward_rows is None and fallback in unit.not_batched
    jacobian = sd.jacobian(f, wrt)
    jac = jacobian(*args)
    why = jacobian.cache_info().row_by_row
    assert why is None if fallback is None else fallback in why
    jacs = jac if isinstance(wrt, tuple) else (jac,)
    for j, expected, i in zip(jacs, per_row(f, args, positions), positions):
        assert j.shape == expected.shape and j.dtype == np.float64
        np.testing.assert_allclose(j, expected, rtol=1e-12, atol=1e-12,
                                   err_msg=f"batched vs per row, argument {i}")
        np.testing.assert_allclose(j, finite_differences(f, args, i), rtol=1e-6, atol=1e-7,
                                   err_msg=f"vs finite differences, argument {i}")


def test_a_float32_argument_gets_a_float32_jacobian():
    x32, w32 = X.astype(np.float32), W.astype(np.float32)
    jx, jw = sd.jacobian(layers, (0, 1))(x32, w32, B)
    assert jx.dtype == jw.dtype == np.float32
    expected = per_row(layers, (x32, w32, B), (0, 1))
    np.testing.assert_allclose(jx, expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jw, expected[1], rtol=1e-5, atol=1e-6)


# --- an @sd.function entry on the tape: its batch of adjoints in one walk ---

compiled_layers = sd.function(layers)
compiled_einsum = sd.function(einsum)


@pytest.mark.parametrize("f, fallback", [(compiled_layers, None),
                                         (compiled_einsum, "numpy.einsum")],
                         ids=["batched", "row by row"])
def test_tape_jacobian_of_a_compiled_call(f, fallback):
    x, w = (sd.constant(X), sd.Variable(W)) if f is compiled_layers else (
        sd.constant(V), sd.Variable(W))
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x, w, B) * 2.0 if f is compiled_layers else f(x, w) * 2.0
    vectorised = tape.jacobian(y, [x, w])
    why = f.cache_info().row_by_row
    assert why is None if fallback is None else fallback in why
    rows = tape.jacobian(y, [x, w], experimental_use_pfor=False)
    args = (X, W, B) if f is compiled_layers else (V, W)
    for k, (v, r) in enumerate(zip(vectorised, rows)):
        np.testing.assert_allclose(v.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)
        expected = finite_differences(lambda *a: 2.0 * f.python_function(*a), args, k)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6, atol=1e-7)


compiled_matrix_out = sd.function(matrix_out)


def test_tape_batch_jacobian_of_a_compiled_call():
    v = sd.constant(V)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(v)
        y = sd.sin(compiled_matrix_out(v, W))
    vectorised = tape.batch_jacobian(y, v)
    assert compiled_matrix_out.cache_info().row_by_row is None
    rows = tape.batch_jacobian(y, v, experimental_use_pfor=False)
    np.testing.assert_allclose(vectorised.numpy(), rows.numpy(), rtol=1e-12, atol=1e-12)


def test_an_input_of_a_compiled_call_watched_after_it_in_a_jacobian():
    """A source watched after the call (an input of it) gets its jacobian: the call is
    compiled again with it active (as for a gradient); never watched, it gets None."""
    x, w = sd.constant(X), sd.constant(W)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = compiled_layers(x, w, B)
    assert tape.jacobian(y, w) is None
    with tape:
        tape.watch(w)
    vectorised = tape.jacobian(y, [x, w])
    rows = tape.jacobian(y, [x, w], experimental_use_pfor=False)
    for v, r, expected in zip(vectorised, rows, per_row(layers, (X, W, B), (0, 1))):
        np.testing.assert_allclose(v.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-12, atol=1e-12)


def unused_by_einsum(x, u):
    return np.einsum("i,i->i", x, x)


def unused_by_tanh(x, u):
    return np.tanh(x)


@pytest.mark.parametrize("f", [unused_by_einsum, unused_by_tanh], ids=["row by row", "batched"])
def test_an_argument_the_result_does_not_depend_on_has_a_zero_jacobian(f):
    jx, ju = sd.jacobian(f, (0, 1))(X, B)
    np.testing.assert_array_equal(ju, np.zeros((N, N)))
    np.testing.assert_allclose(jx, finite_differences(f, (X, B), 0), rtol=1e-6, atol=1e-7)


# --- a pytree argument: one Jacobian per leaf, in its structure (JAX's, TensorFlow's) ---

def of_a_pair(p):
    a, b = p
    return np.tanh(a * b[:2]) + np.sum(b)


def of_a_dict(p):
    return p["w"] @ p["x"] + np.sin(p["x"]) * p["s"]


def of_a_nested_list(p):
    return p[0] * np.sum(p[1][0] ** 2) + np.cos(p[1][1])


def of_a_pair_einsum(p):
    return np.einsum("ij,j->i", p[0], p[1])


def of_a_pair_one_unused(p):
    return np.exp(p[0]) * 2.0


PYTREES = [(of_a_pair, (X[:2], X[1:])),
           (of_a_pair, [X[:2], X[1:]]),
           (of_a_dict, {"w": W, "x": X, "s": S}),
           (of_a_nested_list, [X, [V[0], X]]),
           (of_a_pair_einsum, (W, X)),
           (of_a_pair_one_unused, (X, V))]


def _leaf_jacobians(f, tree):
    """Finite differences of ``f`` with respect to each leaf of ``tree``, flattened."""
    leaves = nest.flatten(tree)
    out = []
    for k, leaf in enumerate(leaves):
        def partial(v, k=k):
            values = list(leaves)
            values[k] = v if np.ndim(leaf) else float(v)
            return np.asarray(f(nest.pack_sequence_as(tree, values)), dtype=np.float64)
        out.append(numerical_jacobian(partial, leaf))
    return out


@pytest.mark.parametrize("f, tree", PYTREES, ids=lambda v: getattr(v, "__name__", ""))
def test_the_jacobian_of_a_pytree_argument_has_its_structure(f, tree):
    jac = sd.jacobian(f)(tree)
    assert type(jac) is type(tree)
    got = nest.flatten(jac)
    y = np.asarray(f(tree))
    for g, expected, leaf in zip(got, _leaf_jacobians(f, tree), nest.flatten(tree)):
        assert np.shape(g) == y.shape + np.shape(leaf)
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7)
    if isinstance(tree, dict):
        assert set(jac) == set(tree)

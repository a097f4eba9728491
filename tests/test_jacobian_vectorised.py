"""Vectorised jacobians: one backward walk whose adjoints carry a batch axis of rows.

Every vectorised result is checked against the per-row loop
(``experimental_use_pfor=False``, one walk per target element) and against
central finite differences.  The programs mix rules that take batched adjoints
(their trait ``batches``) with rules that do not, which the walk runs row by row.
"""
import numpy as np
import pytest

import srcdiff as sd
from srcdiff.rules import all_rules, rule_of, traits_of
from srcdiff.rules.helpers import batched
from test_rules import EXAMPLES, draw, random_like
from util import numerical_jacobian

ROWS = 3


# --- each rule that takes batched adjoints, against the same rule row by row ---

def batched_examples():
    for fn, examples in EXAMPLES.items():
        if traits_of(fn).batches:
            for k, example in enumerate(examples):
                yield pytest.param(fn, example.args, example.kwargs, id=f"{rule_of(fn).name}-{k}")


def test_every_batched_rule_has_an_example():
    assert not [rule.name for fn, rule in all_rules().items()
                if rule.traits.batches and fn not in EXAMPLES]


@pytest.mark.parametrize("fn, args, kwargs", list(batched_examples()))
def test_rule_on_a_batch_of_adjoints_equals_the_rule_on_each(fn, args, kwargs):
    rng = np.random.default_rng(1)
    values = draw(args, rng)
    ans = fn(*values, **kwargs)
    rows = np.stack([random_like(np.asarray(ans), rng) for _ in range(ROWS)])
    rule = rule_of(fn)
    for i, spec in enumerate(args):
        if not hasattr(spec, "draw"):
            continue  # an axis, an index, a condition
        vjp = rule.vjp(i)
        expected = np.stack([np.asarray(vjp(row, ans, *values, **kwargs)) for row in rows])
        with batched(1):
            got = np.asarray(vjp(rows, ans, *values, **kwargs))
        assert got.shape == (ROWS,) + np.shape(values[i])
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# --- whole programs: vectorised == per row == finite differences ---

def per_program(*arrays):
    """Decorate ``f(*tensors)`` with the float64 inputs it is differentiated at."""
    def decorate(f):
        f.inputs = [np.asarray(a, dtype=np.float64) for a in arrays]
        return f
    return decorate


rng = np.random.default_rng(0)
A = rng.uniform(-1, 1, (3, 4))
B = rng.uniform(-1, 1, (4,))
C = rng.uniform(-1, 1, (3, 1))
M = rng.uniform(-1, 1, (4, 2))
S = rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)


@sd.custom_gradient
def scaled_square(x):
    def grad(dy):
        return dy * 2 * x
    return x * x, grad


@sd.custom_gradient
def inner_tape(x):
    """A grad_fn that walks a tape of its own, with broadcasting in it."""
    def grad(dy):
        with sd.GradientTape() as tape:
            tape.watch(x)
            z = sd.reduce_sum(x * np.ones((2, 1, 4)))
        return dy * tape.gradient(z, x)
    return x * 2.0, grad


PROGRAMS = {
    "elementwise chain": per_program(A)(
        lambda x: sd.tanh(sd.sin(x) * x + 0.5) - sd.exp(-x) / (1.5 + x * x)),
    "broadcasting": per_program(A, B, C)(lambda x, y, z: x * y + z - y / (2.0 + z * z)),
    "reductions": per_program(A)(
        lambda x: sd.reduce_sum(x * x, axis=1) + sd.reduce_mean(sd.exp(x), axis=-1)
        * sd.reduce_max(x, axis=1) + sd.reduce_logsumexp(x, axis=1)),
    "reduction to a scalar": per_program(A)(lambda x: sd.reduce_sum(sd.sin(x)) * sd.norm(x)),
    "keepdims": per_program(A)(lambda x: x / sd.reduce_sum(x * x, axis=0, keepdims=True)),
    "matmul": per_program(A, M)(lambda x, m: sd.matmul(sd.tanh(x), m)),
    "matrix times vector": per_program(A, B)(lambda x, v: sd.matmul(x, v[:, None])[:, 0] + x @ v),
    "vector times matrix": per_program(B, M)(lambda v, m: v @ m),
    "dot of vectors": per_program(B, B * 2)(lambda u, v: (u @ v) * u),
    "reshapes": per_program(A)(
        lambda x: sd.reshape(sd.squeeze(sd.expand_dims(x * 2.0, 0)), (2, 6)) ** 2),
    "transpose and indexing (row by row)": per_program(A)(
        lambda x: sd.transpose(x)[1:, ::2] * x[0, 1] + sd.reduce_sum(sd.gather(x, [2, 0]))),
    "concat, cumsum, softmax over axis 0 (row by row)": per_program(A, C)(
        lambda x, c: sd.nn.softmax(sd.concat([x, c], axis=1), axis=0) + sd.cumsum(x * c, axis=1)[:, :1]),
    "einsum and solve (row by row)": per_program(S, A)(
        lambda s, x: sd.einsum("ij,jk->ik", s, x) + sd.linalg.solve(s, x)),
    "inverse and determinant": per_program(S)(lambda s: sd.linalg.inv(s) * sd.linalg.det(s)),
    "custom gradient": per_program(A)(lambda x: scaled_square(sd.sin(x)) + inner_tape(x)),
    "source used as target": per_program(A)(lambda x: x),
}


def tape_of(program, values):
    sources = [sd.constant(v) for v in values]
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(sources)
        target = program(*sources)
    return tape, target, sources


@pytest.mark.parametrize("name", PROGRAMS)
def test_jacobian_vectorised_equals_per_row_and_finite_differences(name):
    program = PROGRAMS[name]
    tape, target, sources = tape_of(program, program.inputs)
    vectorised = tape.jacobian(target, sources)
    per_row = tape.jacobian(target, sources, experimental_use_pfor=False)
    for k, (v, r) in enumerate(zip(vectorised, per_row)):
        def f(x, k=k):
            values = [sd.constant(x if j == k else a) for j, a in enumerate(program.inputs)]
            return program(*values).numpy()
        expected = numerical_jacobian(f, program.inputs[k])
        assert v.shape == tuple(target.shape) + tuple(sources[k].shape)
        np.testing.assert_allclose(v.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_unconnected_sources_and_empty_targets_as_per_row():
    x, y = sd.constant(A), sd.constant(B)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = sd.sin(x)
        empty = x[:0]
    for kwargs in ({}, {"unconnected_gradients": "zero"}):
        for target in (z, empty):
            vectorised = tape.jacobian(target, [x, y], **kwargs)
            per_row = tape.jacobian(target, [x, y], experimental_use_pfor=False, **kwargs)
            for v, r in zip(vectorised, per_row):
                assert (v is None) == (r is None)
                if v is not None:
                    np.testing.assert_array_equal(v.numpy(), r.numpy())
    assert tape.jacobian(z, y) is None
    assert tape.jacobian(z, y, unconnected_gradients="zero").shape == (3, 4, 4)


def test_variables_and_their_sparse_gradients():
    v = sd.Variable(A)
    with sd.GradientTape(persistent=True) as tape:
        y = sd.gather(v, [2, 0, 2]) * sd.reduce_sum(v * v, axis=0)
    vectorised = tape.jacobian(y, v)
    per_row = tape.jacobian(y, v, experimental_use_pfor=False)
    expected = numerical_jacobian(
        lambda a: np.take(a, [2, 0, 2], axis=0) * np.sum(a * a, axis=0), A)
    np.testing.assert_allclose(vectorised.numpy(), per_row.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vectorised.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_complex_values_are_conjugated_as_per_row():
    z = sd.constant(np.array([1 + 2j, -0.5 + 0.3j, 0.2 - 1j]))
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(z)
        y = sd.exp(z) * sd.conj(z) + sd.imag(z) * z
    vectorised = tape.jacobian(y, z)
    per_row = tape.jacobian(y, z, experimental_use_pfor=False)
    np.testing.assert_allclose(vectorised.numpy(), per_row.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("program", [
    lambda x, w: sd.tanh(sd.matmul(x, w)),
    lambda x, w: sd.reshape(sd.tile(x, [1, 2]), (3, 2, 4)) * 2.0,
    lambda x, w: sd.nn.softmax(x) * sd.reduce_sum(x * x, axis=1, keepdims=True),
    lambda x, w: sd.cumsum(x, axis=1),  # row by row
], ids=["matmul", "tile and reshape", "softmax", "cumsum"])
def test_batch_jacobian_vectorised_equals_per_row_and_finite_differences(program):
    x, w = sd.constant(A), sd.constant(M)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = program(x, w)
    vectorised = tape.batch_jacobian(y, x)
    per_row = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    full = numerical_jacobian(lambda a: program(sd.constant(a), w).numpy(), A)
    expected = np.stack([full[i, ..., i, :] for i in range(A.shape[0])])
    np.testing.assert_allclose(vectorised.numpy(), per_row.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vectorised.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_jacobian_under_an_outer_tape_is_differentiable():
    """The batched walk runs on Tensors and is recorded: second derivatives."""
    def hessian(use_pfor):
        x = sd.constant(B)
        with sd.GradientTape() as outer:
            outer.watch(x)
            with sd.GradientTape(persistent=True) as inner:
                inner.watch(x)
                y = sd.sin(x) * sd.reduce_sum(x * x) + sd.matmul(x[None, :], M)[0, 0]
            jac = inner.jacobian(y, x, experimental_use_pfor=use_pfor)
            total = sd.reduce_sum(jac * np.arange(16.0).reshape(4, 4))
        return jac, outer.gradient(total, x)

    (jv, hv), (jr, hr) = hessian(True), hessian(False)
    np.testing.assert_allclose(jv.numpy(), jr.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hv.numpy(), hr.numpy(), rtol=1e-12, atol=1e-12)

    def weighted_jacobian(a):
        x = sd.constant(a)
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = sd.sin(x) * sd.reduce_sum(x * x) + sd.matmul(x[None, :], M)[0, 0]
        return np.sum(tape.jacobian(y, x).numpy() * np.arange(16.0).reshape(4, 4))
    np.testing.assert_allclose(hv.numpy(), numerical_jacobian(weighted_jacobian, B),
                               rtol=1e-6, atol=1e-7)


@sd.function
def compiled(x, unused):
    return np.tanh(x) * x


def test_jacobian_through_a_compiled_function_with_an_unused_input():
    """A compiled call's rule runs row by row; it has no adjoint for ``unused``."""
    x, unused = sd.constant(B), sd.constant(C)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, unused])
        y = compiled(x, unused) * 2.0
    (vx, vu), (rx, ru) = (tape.jacobian(y, [x, unused], experimental_use_pfor=pfor)
                          for pfor in (True, False))
    assert vu is None and ru is None
    np.testing.assert_allclose(vx.numpy(), rx.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vx.numpy(), numerical_jacobian(lambda v: 2 * np.tanh(v) * v, B),
                               rtol=1e-6, atol=1e-8)

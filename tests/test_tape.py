"""GradientTape behaviour (API.md section 3), checked against analytic derivatives
and central finite differences.  Wrong use of the API is in test_tape_errors.py."""
import collections
import gc
import logging
import threading
import weakref
import warnings

import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad, numerical_jacobian

RNG = np.random.default_rng(0)


def f64(value):
    return sd.constant(np.asarray(value, dtype=np.float64))


def numpy_of(structure):
    """The arrays of a nested structure of Tensors (None stays None)."""
    if isinstance(structure, dict):
        return {k: numpy_of(v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        items = [numpy_of(v) for v in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else type(structure)(items)
    return None if structure is None else structure.numpy()


# --- what is recorded ------------------------------------------------------------------

def test_watched_tensor_gradient_matches_finite_differences():
    x0 = RNG.normal(size=(3, 2))
    x = f64(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.reduce_sum(sd.sin(x) * x ** 2)
    expected = numerical_grad(lambda v: np.sum(np.sin(v) * v ** 2), x0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-7)


def test_operations_on_unwatched_tensors_are_not_recorded():
    x, w = sd.constant(2.0), sd.constant(3.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * (w * w)
    assert tape.gradient(y, [x, w]) == [9.0, None]


def test_an_unwatched_source_beside_a_watched_input_has_no_gradient():
    # As in TensorFlow: the recorded operation keeps all its inputs, but only a source
    # the tape tracks (or a target itself) gets a gradient; one watched after the
    # operation, while it still records, does.
    x, w = sd.constant(2.0), sd.constant(3.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * w
    assert tape.gradient(y, [x, w]) == [3.0, None]
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * w
        z = y * w
        tape.watch(w)
    assert tape.gradient(z, [x, w, y]) == [9.0, 12.0, 3.0]
    assert tape.gradient(w, w) == 1.0  # a target is its own source


def test_operations_before_watch_are_not_recorded():
    x = sd.constant(2.0)
    with sd.GradientTape() as tape:
        before = x * x
        tape.watch(x)
        after = x * before
    # Only `after = x * before` is recorded, with `before` a constant 4.
    assert tape.gradient(after, x).numpy() == 4.0


def test_watch_accepts_nested_structures():
    a, b, c = sd.constant(1.0), sd.constant(2.0), sd.constant(3.0)
    with sd.GradientTape() as tape:
        tape.watch({"a": a, "rest": [b, (c,)]})
        y = a * b * c
    grads = tape.gradient(y, {"a": a, "rest": [b, (c,)]})
    assert numpy_of(grads) == {"a": 6.0, "rest": [3.0, (2.0,)]}


def test_trainable_variables_read_inside_are_watched_automatically():
    v = sd.Variable(3.0)
    with sd.GradientTape() as tape:
        y = v * v
    assert tape.gradient(y, v).numpy() == 6.0


def test_variables_read_before_the_tape_are_not_recorded():
    v = sd.Variable(3.0)
    read = v * 1.0
    with sd.GradientTape() as tape:
        y = read * v
    assert tape.gradient(y, v).numpy() == 3.0


def test_watch_accessed_variables_false_watches_only_explicit_variables():
    a, b = sd.Variable(3.0), sd.Variable(2.0)
    with sd.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * a * b
    da, db = tape.gradient(y, [a, b])
    assert (da.numpy(), db) == (12.0, None)
    assert tape.watched_variables() == (a,)


def test_non_trainable_variables_are_not_watched_automatically():
    frozen, free = sd.Variable(2.0, trainable=False), sd.Variable(3.0)
    with sd.GradientTape() as tape:
        y = frozen * free
    assert tape.watched_variables() == (free,)
    d_frozen, d_free = tape.gradient(y, [frozen, free])
    assert (d_frozen, d_free.numpy()) == (None, 2.0)


def test_non_trainable_variable_watched_explicitly_has_a_gradient():
    frozen = sd.Variable(2.0, trainable=False)
    with sd.GradientTape() as tape:
        tape.watch(frozen)
        y = frozen ** 3
    assert tape.gradient(y, frozen).numpy() == 12.0


def test_watched_variables_is_a_tuple_in_construction_order():
    first, second, third = sd.Variable(1.0), sd.Variable(2.0), sd.Variable(3.0)
    with sd.GradientTape() as tape:
        y = third * first
        tape.watch(second)
        y = y * first
    assert tape.watched_variables() == (first, second, third)
    assert type(tape.watched_variables()) is tuple
    assert sd.GradientTape().watched_variables() == ()


def test_only_the_branch_taken_is_recorded():
    def f(x):
        return x * x if x > 0 else -3.0 * x

    for x0, expected in ((2.0, 4.0), (-2.0, -3.0)):
        x = sd.constant(x0)
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        assert tape.gradient(y, x).numpy() == expected


# --- persistent tapes and gradient inside the context ---------------------------------

def test_persistent_tape_computes_many_gradients_and_jacobians():
    x = f64([[1.0], [2.0]])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 3
        z = sd.reduce_sum(y)
    for _ in range(2):
        np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [[3.0], [12.0]])
        np.testing.assert_array_equal(tape.jacobian(y, x).numpy()[:, 0, :, 0],
                                      np.diag([3.0, 12.0]))
        np.testing.assert_array_equal(tape.batch_jacobian(y, x).numpy(), [[[3.0]], [[12.0]]])


def test_gradient_inside_persistent_context_warns_and_records_the_gradient(caplog):
    x = f64(2.0)
    with caplog.at_level(logging.WARNING):
        with sd.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x ** 4
            dy_dx = tape.gradient(y, x)
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage().startswith(
        "Calling GradientTape.gradient on a persistent tape inside its context")
    assert dy_dx.numpy() == 4 * 2.0 ** 3
    assert tape.gradient(dy_dx, x).numpy() == 12 * 2.0 ** 2


def test_gradient_inside_non_persistent_context_stops_recording(caplog):
    x = f64(2.0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with caplog.at_level(logging.WARNING):
            with sd.GradientTape() as tape:
                tape.watch(x)
                y = x ** 3
                dy_dx = tape.gradient(y, x)
                later = dy_dx * x  # recorded by the outer tape only
        assert caplog.records == []
    # The outer tape kept recording throughout: d(3x^2 * x)/dx = 9x^2.
    assert dy_dx.numpy() == 12.0
    assert outer.gradient(later, x).numpy() == 36.0


def test_stop_recording_inside_persistent_context_gradient_is_not_recorded(caplog):
    x = f64(2.0)
    with caplog.at_level(logging.WARNING):
        with sd.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x ** 3
            with tape.stop_recording():
                dy_dx = tape.gradient(y, x)
            z = x * x  # recording resumed
    assert caplog.records == []
    assert tape.gradient(dy_dx, x) is None
    assert tape.gradient(z, x).numpy() == 4.0


# --- higher-order derivatives ----------------------------------------------------------

def nested_derivatives(f, x, order):
    """f's first ``order`` derivatives at x from ``order`` nested tapes: each tape's
    gradient is taken while the tapes around it still record."""
    tapes = [sd.GradientTape() for _ in range(order)]
    for tape in tapes:
        tape.__enter__()
        tape.watch(x)
    y, derivatives = f(x), []
    for tape in reversed(tapes):
        y = tape.gradient(y, x)
        tape.__exit__(None, None, None)
        derivatives.append(y.numpy())
    return derivatives


@pytest.mark.parametrize("f, derivatives", [
    (lambda x: x ** 4, lambda x: (4 * x ** 3, 12 * x ** 2, 24 * x)),
    (sd.sin, lambda x: (np.cos(x), -np.sin(x), -np.cos(x))),
    (sd.exp, lambda x: (np.exp(x),) * 3),
    (sd.tanh, lambda x: (1 - np.tanh(x) ** 2,
                         -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
                         (1 - np.tanh(x) ** 2) * (6 * np.tanh(x) ** 2 - 2))),
    (lambda x: sd.math.log(x) * x, lambda x: (np.log(x) + 1, 1 / x, -1 / x ** 2)),
], ids=["x**4", "sin", "exp", "tanh", "x*log(x)"])
def test_nested_tapes_give_second_and_third_derivatives(f, derivatives):
    x0 = 0.7
    got = nested_derivatives(f, f64(x0), order=3)
    np.testing.assert_allclose(got, derivatives(x0), rtol=1e-12)


def test_nested_tapes_mixed_partials_of_a_product_of_two_variables():
    a, b = sd.Variable(2.0, dtype=sd.float64), sd.Variable(3.0, dtype=sd.float64)
    with sd.GradientTape(persistent=True) as outer:
        with sd.GradientTape() as inner:
            y = a * a * b * b * b  # a^2 b^3
        da, db = inner.gradient(y, [a, b])
    # d/da = 2ab^3, d/db = 3a^2b^2
    assert (da.numpy(), db.numpy()) == (2 * 2 * 27, 3 * 4 * 9)
    d2a_da, d2a_db = outer.gradient(da, [a, b])
    d2b_da, d2b_db = outer.gradient(db, [a, b])
    assert (d2a_da.numpy(), d2a_db.numpy()) == (2 * 27, 6 * 2 * 9)
    assert (d2b_da.numpy(), d2b_db.numpy()) == (6 * 2 * 9, 6 * 4 * 3)


def test_hessian_as_jacobian_of_the_gradient_matches_finite_differences():
    x0 = RNG.normal(size=3)

    def f(v):
        return np.sum(np.exp(v[:-1]) * np.sin(v[1:])) + np.prod(v)

    def grad(v):
        return numerical_grad(f, v, eps=1e-5)

    x = f64(x0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = sd.reduce_sum(sd.exp(x[:-1]) * sd.sin(x[1:])) + sd.reduce_prod(x)
        g = inner.gradient(y, x)
    hessian = outer.jacobian(g, x).numpy()
    np.testing.assert_allclose(hessian, numerical_jacobian(grad, x0, eps=1e-4), atol=1e-6)
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-12)


def test_second_derivative_through_a_persistent_tape_of_its_own():
    x = f64(1.5)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = sd.sin(x) * x
        dy_dx = tape.gradient(y, x)
    d2y_dx2 = tape.gradient(dy_dx, x)
    assert dy_dx.numpy() == pytest.approx(np.cos(1.5) * 1.5 + np.sin(1.5), rel=1e-14)
    assert d2y_dx2.numpy() == pytest.approx(-np.sin(1.5) * 1.5 + 2 * np.cos(1.5), rel=1e-14)


# --- targets and sources ---------------------------------------------------------------

def test_gradient_with_respect_to_an_intermediate_value():
    x = f64([1.0, 2.0])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = sd.reduce_sum(sd.sin(y))
    np.testing.assert_allclose(tape.gradient(z, y).numpy(), np.cos([1.0, 4.0]))
    np.testing.assert_allclose(tape.gradient(z, [x, y])[0].numpy(),
                               np.cos([1.0, 4.0]) * 2 * np.array([1.0, 2.0]))


def test_target_that_is_a_source_has_gradient_ones():
    x = sd.constant([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])


def test_variable_as_target_has_gradient_ones():
    v = sd.Variable([[1.0, 2.0]])
    with sd.GradientTape() as tape:
        y = v * 2.0
    g = tape.gradient(v, v)
    assert (g.shape, g.dtype) == ((1, 2), np.float32)
    np.testing.assert_array_equal(g.numpy(), [[1.0, 1.0]])


def test_variable_target_depends_on_nothing_else():
    v, w = sd.Variable(1.0), sd.Variable(2.0)
    with sd.GradientTape() as tape:
        y = v * w
    assert tape.gradient(v, [v, w])[1] is None


def test_list_of_targets_sums_their_gradients():
    x = f64(3.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        targets = [x * x, sd.sin(x), 5.0 * x]
    assert tape.gradient(targets, x).numpy() == pytest.approx(6 + np.cos(3.0) + 5, rel=1e-14)


def test_dict_of_targets_and_nested_sources_keep_the_sources_structure():
    Pair = collections.namedtuple("Pair", "left right")
    a, b, c = f64(1.0), f64(2.0), f64(3.0)
    with sd.GradientTape() as tape:
        tape.watch([a, b, c])
        targets = {"ab": a * b, "bc": b * c}
    sources = {"z": [a, (b,)], "pair": Pair(c, a)}
    grads = tape.gradient(targets, sources)
    assert list(grads) == ["z", "pair"]
    assert isinstance(grads["z"], list) and isinstance(grads["z"][1], tuple)
    assert isinstance(grads["pair"], Pair)
    # d(ab + bc)/da = b, /db = a + c, /dc = b
    assert numpy_of(grads) == {"z": [2.0, (4.0,)], "pair": Pair(2.0, 2.0)}


def test_single_source_gives_a_single_gradient_and_tuple_gives_tuple():
    x = f64(2.0)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    assert isinstance(tape.gradient(y, x), sd.Tensor)
    assert isinstance(tape.gradient(y, (x,)), tuple)
    assert isinstance(tape.gradient(y, [x]), list)


def test_output_gradients_weight_each_target():
    x = f64([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = sd.reduce_sum(x) * 3.0
    weights = f64([10.0, 100.0])
    g = tape.gradient([y, z], x, output_gradients=[weights, sd.ones_like(z)])
    np.testing.assert_array_equal(g.numpy(), 2 * np.array([1.0, 2.0]) * [10.0, 100.0] + 3.0)


def test_output_gradients_is_the_vector_of_a_vector_jacobian_product():
    x0 = RNG.normal(size=(2, 3))
    x = f64(x0)
    cotangent = RNG.normal(size=(3, 3))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.matmul(x, x, transpose_a=True)
    g = tape.gradient(y, x, output_gradients=cotangent)
    jac = numerical_jacobian(lambda v: v.T @ v, x0)
    np.testing.assert_allclose(g.numpy(), np.tensordot(cotangent, jac, 2), rtol=1e-7)


def test_output_gradients_broadcast_to_the_target_as_in_tensorflow():
    """A scalar or a row weighs every element or every row, as TensorFlow's rules broadcast
    it; under an outer tape, the gradient of the result with respect to the seed is kept."""
    x0 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x, row = f64(x0), f64([1.0, -2.0, 3.0])
    with sd.GradientTape() as outer:
        outer.watch(row)
        with sd.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
        np.testing.assert_array_equal(
            tape.gradient(y, x, output_gradients=f64(3.0)).numpy(), 6 * x0)
        g = tape.gradient(y, x, output_gradients=row)
        total = sd.reduce_sum(g)
    np.testing.assert_array_equal(g.numpy(), 2 * x0 * row.numpy())
    np.testing.assert_array_equal(outer.gradient(total, row).numpy(), 2 * x0.sum(axis=0))


@pytest.mark.parametrize("mode", [sd.UnconnectedGradients.NONE, "none"])
def test_unconnected_sources_get_none(mode):
    x, other = f64(2.0), sd.Variable([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, [x, other], unconnected_gradients=mode)[1] is None


@pytest.mark.parametrize("mode", [sd.UnconnectedGradients.ZERO, "zero"])
def test_unconnected_sources_get_zeros_of_their_shape_and_dtype(mode):
    x, other, unwatched = f64(2.0), sd.Variable([1.0, 2.0]), sd.constant([[1.0], [2.0]])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    dx, dother, dunwatched = tape.gradient(y, [x, other, unwatched], unconnected_gradients=mode)
    assert dx.numpy() == 4.0
    for g, source in ((dother, other), (dunwatched, unwatched)):
        assert (g.shape, g.dtype) == (source.shape, np.float32)
        assert not np.any(g.numpy())
    with sd.GradientTape() as tape:  # an integer source too gets zeros (it got None)
        tape.watch(x)
        y = x * sd.cast(sd.constant([3, 4]), sd.float64)
    (di,) = tape.gradient(y, [sd.constant([[3, 4]])], unconnected_gradients=mode)
    assert (di.shape, di.dtype, di.numpy().tolist()) == ((1, 2), np.int32, [[0, 0]])


def test_int_sources_get_zeros_under_zero_mode_and_a_warning(caplog):
    i, x = sd.constant(3), f64(2.0)
    with caplog.at_level(logging.WARNING):
        with sd.GradientTape() as tape:
            tape.watch([i, x])
            y = sd.cast(i, sd.float64) * x
        grads = tape.gradient(y, [i, x], unconnected_gradients="zero")
    assert grads[1].numpy() == 3.0  # the int source: zeros of its dtype, as TensorFlow 2.21 gives
    assert (grads[0].dtype, grads[0].numpy()) == (np.int32, 0)
    assert [r.getMessage() for r in caplog.records] == [
        "The dtype of the watched tensor must be floating (e.g. tf.float32), got tf.int32",
        "The dtype of the source tensor must be floating (e.g. tf.float32) when calling "
        "GradientTape.gradient, got tf.int32"]


def test_complex_gradient_is_conjugated_as_in_tensorflow():
    # TensorFlow's convention: the gradient of a real loss is conj(dL/dz) * 2, so
    # for L = |z|^2 it is 2z (the direction of steepest ascent).
    z = sd.constant(np.array([1 + 2j, -3j], dtype=np.complex128))
    with sd.GradientTape() as tape:
        tape.watch(z)
        loss = sd.reduce_sum(sd.math.real(z * sd.math.conj(z)))
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), 2 * z.numpy())


# --- jacobians ---------------------------------------------------------------------------

def test_jacobian_of_a_matrix_function_of_a_matrix():
    x0 = RNG.normal(size=(2, 3))
    x = f64(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.tanh(sd.matmul(x, x, transpose_b=True))  # (2, 2)
    jac = tape.jacobian(y, x)
    assert jac.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(jac.numpy(), numerical_jacobian(lambda v: np.tanh(v @ v.T), x0),
                               rtol=1e-6, atol=1e-9)


def test_jacobian_with_several_sources_keeps_their_structure():
    a0, b0 = RNG.normal(size=3), RNG.normal(size=(3, 2))
    a, b = f64(a0), sd.Variable(b0)
    with sd.GradientTape() as tape:
        tape.watch(a)
        y = sd.sin(sd.matmul(a[None, :], b))[0]  # (2,)
    ja, jb = tape.jacobian(y, {"a": a, "b": b}).values()
    assert (ja.shape, jb.shape) == ((2, 3), (2, 3, 2))
    np.testing.assert_allclose(ja.numpy(), numerical_jacobian(lambda v: np.sin(v @ b0), a0),
                               rtol=1e-7)
    np.testing.assert_allclose(jb.numpy(), numerical_jacobian(lambda v: np.sin(a0 @ v), b0),
                               rtol=1e-7)


def test_jacobian_of_a_scalar_is_the_gradient():
    x0 = RNG.normal(size=(2, 2))
    x = f64(x0)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = sd.reduce_sum(x ** 3)
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), tape.gradient(y, x).numpy())


def test_jacobian_of_unconnected_source_is_none_or_zeros():
    x, other = f64([1.0, 2.0]), f64([[1.0, 2.0, 3.0]])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = x * 2.0
    assert tape.jacobian(y, other) is None
    zeros = tape.jacobian(y, other, unconnected_gradients=sd.UnconnectedGradients.ZERO)
    assert zeros.shape == (2, 1, 3)
    assert not np.any(zeros.numpy())


def test_batch_jacobian_stacks_per_example_jacobians():
    x0 = RNG.normal(size=(4, 3))
    w = RNG.normal(size=(3, 2, 2))
    x = f64(x0)

    def f(v):  # (b, 3) -> (b, 2, 2), each row on its own
        return np.tanh(np.tensordot(v, w, 1)) * np.sum(v, axis=1)[:, None, None]

    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = sd.tanh(sd.tensordot(x, w, 1)) * sd.reduce_sum(x, axis=1)[:, None, None]
    batch = tape.batch_jacobian(y, x)
    assert batch.shape == (4, 2, 2, 3)
    per_example = [numerical_jacobian(lambda v: f(v[None])[0], row) for row in x0]
    np.testing.assert_allclose(batch.numpy(), np.stack(per_example), rtol=1e-6, atol=1e-9)
    full = tape.jacobian(y, x).numpy()  # (4, 2, 2, 4, 3)
    np.testing.assert_allclose(batch.numpy(), np.stack([full[i, :, :, i] for i in range(4)]))


def test_batch_jacobian_of_unconnected_target_is_zeros():
    x, y = f64(np.ones((3, 2))), f64(np.ones((3, 4)))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = y * 2.0
    jac = tape.batch_jacobian(y, x)
    assert (jac.shape, jac.dtype) == ((3, 4, 2), np.float64)
    assert not np.any(jac.numpy())


# --- reset and stop_recording ------------------------------------------------------------

def test_reset_forgets_records_and_watches():
    x, v = f64(2.0), sd.Variable(3.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * v
        tape.reset()
        assert tape.watched_variables() == ()
        z = y * x  # x is no longer watched; y is no longer tracked
        w = v * v
    assert tape.gradient([z, w], [x, v, y])[0] is None
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = y * x
    assert tape.gradient(z, x).numpy() == 4.0


def test_re_entering_a_tape_continues_its_record():
    x = f64(2.0)
    tape = sd.GradientTape()
    with tape:
        tape.watch(x)
        y = x * x
    unrecorded = y * x
    with tape:
        z = y * x
    assert tape.gradient([z, unrecorded], x).numpy() == 12.0


def test_stop_recording_pauses_and_resumes():
    x = f64(3.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            paused = x * x
        resumed = x * paused
    assert tape.gradient(resumed, x).numpy() == 9.0


def test_stop_recording_of_inner_tape_leaves_outer_tape_recording():
    x = f64(3.0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            with inner.stop_recording():
                y = x * x
        assert inner.gradient(y, x) is None
    assert outer.gradient(y, x).numpy() == 6.0


# --- threads and memory ------------------------------------------------------------------

def test_tapes_are_thread_local():
    x = f64(2.0)
    results = {}

    def other_thread():
        results["unrecorded"] = x * x  # the main thread's tape must not see this
        with sd.GradientTape() as own:
            own.watch(x)
            y = x ** 3
        results["own"] = own.gradient(y, x)

    with sd.GradientTape() as tape:
        tape.watch(x)
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        recorded = x * x
    assert results["own"].numpy() == 12.0
    assert tape.gradient([results["unrecorded"], recorded], x).numpy() == 4.0


def test_non_persistent_tape_releases_intermediates_after_gradient():
    x = f64(np.ones(3))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.sin(x)
        z = sd.reduce_sum(y * y)
    intermediate = weakref.ref(y)
    del y
    gc.collect()
    assert intermediate() is not None  # the tape needs it for the gradient
    tape.gradient(z, x)
    gc.collect()
    assert intermediate() is None


def test_persistent_tape_releases_intermediates_when_dropped():
    x = f64(np.ones(3))
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = sd.sin(x)
        z = sd.reduce_sum(y * y)
    intermediate = weakref.ref(y)
    del y
    tape.gradient(z, x)
    gc.collect()
    assert intermediate() is not None
    del tape
    gc.collect()
    assert intermediate() is None


# --- gradient control --------------------------------------------------------------------

def test_stop_gradient_blocks_and_identity_passes():
    x, v = f64(2.0), sd.Variable(3.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * sd.stop_gradient(x) + sd.identity(x) * sd.stop_gradient(v) + sd.identity(v)
    dx, dv = tape.gradient(y, [x, v])
    assert (dx.numpy(), dv.numpy()) == (2.0 + 3.0, 1.0)
    assert sd.stop_gradient(x).numpy() == sd.identity(x).numpy() == 2.0


@sd.custom_gradient
def log1pexp(x):
    e = sd.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))

    return sd.math.log(1 + e), grad


def test_custom_gradient_replaces_the_rule():
    x = sd.constant(100.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        with np.errstate(over="ignore"):
            y = log1pexp(x)
    assert tape.gradient(y, x).numpy() == 1.0  # the naive rule gives nan here
    assert log1pexp(sd.constant(0.0)).numpy() == pytest.approx(np.log(2.0))


def test_custom_gradient_second_order_differentiates_grad_fn():
    x0 = 0.5
    x = f64(x0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = log1pexp(x)
        dy_dx = inner.gradient(y, x)
    sigmoid = 1 / (1 + np.exp(-x0))
    assert dy_dx.numpy() == pytest.approx(sigmoid, rel=1e-14)
    assert outer.gradient(dy_dx, x).numpy() == pytest.approx(sigmoid * (1 - sigmoid), rel=1e-14)


def test_custom_gradient_of_several_inputs():
    @sd.custom_gradient
    def scaled_product(a, b):
        def grad(dy):
            return 10 * dy * b, 100 * dy * a
        return a * b, grad

    a, b = sd.Variable(3.0), sd.constant(4.0)
    with sd.GradientTape() as tape:
        tape.watch(b)
        y = scaled_product(a, b) * 2.0
    da, db = tape.gradient(y, [a, b])
    assert (da.numpy(), db.numpy()) == (80.0, 600.0)


def test_custom_gradient_passes_keyword_arguments_which_get_no_gradient():
    """As in TensorFlow's eager mode: f takes keyword arguments, and the inputs the
    gradient reaches are the positional ones (a Tensor given by keyword gets None)."""
    @sd.custom_gradient
    def scaled(x, scale=1.0):
        return x * scale, lambda dy: dy * scale * 10.0

    x, s = sd.constant(3.0), sd.constant(4.0)
    with sd.GradientTape() as tape:
        tape.watch([x, s])
        y = scaled(x, scale=s)
    assert y.numpy() == 12.0
    dx, ds = tape.gradient(y, [x, s])
    assert (dx.numpy(), ds) == (40.0, None)
    assert scaled(x, scale=2.0).numpy() == 6.0


@pytest.mark.parametrize("structure", [tuple, list, dict])
def test_custom_gradient_of_several_outputs_calls_grad_fn_once_with_each_adjoint(structure):
    """TensorFlow's convention: f returns a nested structure of outputs (kept), grad_fn
    takes one adjoint per output, in nest.flatten's order, zeros for an unused one."""
    calls = []

    @sd.custom_gradient
    def pair(x):
        def grad(d_double, d_square):
            calls.append((d_double.numpy(), d_square.numpy()))
            return d_double * 2.0 + d_square * 2.0 * x
        values = [x * 2.0, x * x]
        return (dict(a=values[0], b=values[1]) if structure is dict
                else structure(values)), grad

    x = f64([1.0, 3.0])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        out = pair(x)
        double, square = (out["a"], out["b"]) if structure is dict else out
        y = sd.reduce_sum(double * 5.0 + square)
    assert type(out) is structure
    np.testing.assert_array_equal(square.numpy(), [1.0, 9.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), 10.0 + 2 * x.numpy())
    assert len(calls) == 1
    np.testing.assert_array_equal(tape.gradient(square, x).numpy(), 2 * x.numpy())
    np.testing.assert_array_equal(calls[-1][0], [0.0, 0.0])


@pytest.mark.parametrize("adjoints", [lambda dy: dy, lambda dy: [dy], lambda dy: (dy, dy, dy)],
                         ids=["lone", "list of one", "three"])
def test_custom_gradient_returning_a_wrong_number_of_adjoints_raises(adjoints):
    @sd.custom_gradient
    def product(a, b):
        return a * b, adjoints

    a, b = sd.Variable(3.0), sd.Variable(4.0)
    with sd.GradientTape() as tape:
        y = product(a, b)
    with pytest.raises(ValueError, match="expected to return 2 gradients"):
        tape.gradient(y, [a, b])


def test_custom_gradient_nested_in_grad_fn_defines_the_second_derivative():
    # TensorFlow's pattern for a custom second derivative: grad_fn is itself built
    # from a custom_gradient function of x.
    @sd.custom_gradient
    def cube(x):
        def first_order(dy):
            @sd.custom_gradient
            def first_order_custom(unused_x):
                def second_order(ddy):
                    return ddy * 6.0 * x
                return 3.0 * x * x, second_order
            return dy * first_order_custom(x)
        return x * x * x, first_order

    x = f64(2.0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy_dx = inner.gradient(y, x)
    assert (y.numpy(), dy_dx.numpy()) == (8.0, 12.0)
    assert outer.gradient(dy_dx, x).numpy() == 12.0


def test_custom_gradient_may_use_numpy_functions_without_a_rule():
    @sd.custom_gradient
    def sinc(x):
        def grad(dy):
            v = np.pi * x.numpy()
            return dy * (np.cos(v) * v - np.sin(v)) / (v * x.numpy())
        return np.sinc(x), grad

    x0 = np.array([0.3, 1.7])
    x = f64(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.reduce_sum(sinc(x))
    np.testing.assert_allclose(y.numpy(), np.sum(np.sinc(x0)))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               numerical_grad(lambda v: np.sum(np.sinc(v)), x0), rtol=1e-7)


# --- sparse gradients --------------------------------------------------------------------

def gather_loss_gradient(table, indices):
    with sd.GradientTape() as tape:
        rows = sd.gather(table, indices)
        loss = sd.reduce_sum(rows * rows)
    return tape.gradient(loss, table)


def test_gather_from_variable_gives_indexed_slices():
    table = sd.Variable(RNG.normal(size=(5, 3)))
    g = gather_loss_gradient(table, [3, 0, 3])
    assert isinstance(g, sd.IndexedSlices)
    assert g.dense_shape == (5, 3)
    np.testing.assert_array_equal(np.asarray(g.indices), [3, 0, 3])
    np.testing.assert_allclose(np.asarray(g.values), 2 * table.numpy()[[3, 0, 3]])
    expected = numerical_grad(lambda t: np.sum(t[[3, 0, 3]] ** 2), table.numpy())
    np.testing.assert_allclose(sd.convert_to_tensor(g).numpy(), expected, rtol=1e-7)


def test_indexed_slices_add_to_dense_tensors_and_to_other_slices():
    table = sd.Variable(np.arange(12.0).reshape(4, 3))
    a = gather_loss_gradient(table, [0, 2])
    b = gather_loss_gradient(table, [2])
    dense_a, dense_b = a.numpy(), b.numpy()
    both = a + b
    assert isinstance(both, sd.IndexedSlices)
    np.testing.assert_array_equal(both.numpy(), dense_a + dense_b)
    ones = sd.ones((4, 3), dtype=sd.float64)
    np.testing.assert_array_equal((a + ones).numpy(), dense_a + 1)
    np.testing.assert_array_equal((ones + a).numpy(), dense_a + 1)


def test_gather_and_dense_use_of_one_variable_sum_their_gradients():
    table = sd.Variable(np.arange(12.0).reshape(4, 3))
    with sd.GradientTape() as tape:
        loss = sd.reduce_sum(sd.gather(table, [1, 1])) + sd.reduce_sum(table * table)
    expected = 2 * table.numpy()
    expected[1] += 2
    np.testing.assert_array_equal(sd.convert_to_tensor(tape.gradient(loss, table)).numpy(),
                                  expected)


@pytest.mark.parametrize("optimizer", [lambda: sd.keras.optimizers.SGD(0.1),
                                       lambda: sd.keras.optimizers.Adam(0.1)],
                         ids=["SGD", "Adam"])
def test_optimizers_apply_sparse_gradients_like_dense_ones(optimizer):
    sparse_table = sd.Variable(np.arange(12.0).reshape(4, 3))
    dense_table = sd.Variable(np.arange(12.0).reshape(4, 3))
    sparse_opt, dense_opt = optimizer(), optimizer()
    for _ in range(2):
        g = gather_loss_gradient(sparse_table, [1, 3, 1])
        sparse_opt.apply_gradients(zip([g], [sparse_table]))
        dense_opt.apply_gradients([(sd.convert_to_tensor(g), dense_table)])
    np.testing.assert_allclose(sparse_table.numpy(), dense_table.numpy())
    assert not np.array_equal(sparse_table.numpy(), np.arange(12.0).reshape(4, 3))


# --- models ------------------------------------------------------------------------------

def test_dense_layer_gradients_match_finite_differences():
    layer = sd.keras.layers.Dense(3, activation="tanh", dtype=sd.float64)
    inputs = RNG.normal(size=(4, 2))
    layer(inputs)  # build
    kernel, bias = layer.trainable_variables

    def loss_of(k, b):
        return np.sum(np.tanh(inputs @ k + b) ** 2)

    with sd.GradientTape() as tape:
        loss = sd.reduce_sum(layer(inputs) ** 2)
    d_kernel, d_bias = tape.gradient(loss, layer.trainable_variables)
    np.testing.assert_allclose(d_kernel.numpy(),
                               numerical_grad(lambda k: loss_of(k, bias.numpy()), kernel.numpy()),
                               rtol=1e-6)
    np.testing.assert_allclose(d_bias.numpy(),
                               numerical_grad(lambda b: loss_of(kernel.numpy(), b), bias.numpy()),
                               rtol=1e-6)


def test_dense_layer_builds_on_first_call_and_casts_float_inputs_to_its_dtype():
    layer = sd.keras.layers.Dense(2, use_bias=False)
    assert layer.variables == []
    out = layer(np.ones((1, 3)))  # float64 in, float32 out, as in Keras
    assert (out.dtype, out.shape) == (np.float32, (1, 2))
    assert [v.shape for v in layer.variables] == [(3, 2)]
    with sd.GradientTape() as tape:
        x = sd.constant(np.ones((1, 3)))
        tape.watch(x)
        y = sd.reduce_sum(layer(x))
    g = tape.gradient(y, x)  # through the cast, back in the input's dtype
    assert g.dtype == np.float64
    np.testing.assert_allclose(g.numpy(), layer.kernel.numpy().sum(axis=1)[None], rtol=1e-6)


def test_sgd_step_descends_the_gradient():
    w = sd.Variable([1.0, -2.0])
    with sd.GradientTape() as tape:
        loss = sd.reduce_sum(w * w)
    sd.keras.optimizers.SGD(learning_rate=0.25).apply_gradients(
        zip(tape.gradient(loss, [w]), [w]))
    np.testing.assert_array_equal(w.numpy(), [0.5, -1.0])  # w - 0.25 * 2w


# --- the fast paths of operators and one-input ops -------------------------------------

def _tiny_ops(a, ns):
    """A few blocks of the tape benchmark's ops: each operator form on Tensor and float."""
    for _ in range(3):
        y = ns.sin(a)
        z = ns.tanh(a * y + 0.5)
        w = ns.exp(-z)
        a = a - 0.1 * w + abs(y) / 2.0
    return ns.sum(a) if hasattr(ns, "sum") else ns.reduce_sum(a)


def test_tiny_ops_gradient_matches_finite_differences_once_and_persistently_twice():
    x0 = RNG.normal(size=5)
    expected = numerical_grad(lambda v: _tiny_ops(v, np), x0)
    x = f64(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = _tiny_ops(x, sd)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-6, atol=1e-8)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _tiny_ops(x, sd)
    for _ in range(2):
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("form", ["v * t", "t * v", "v * 2.0", "2.0 * v", "-v", "abs(v)",
                                  "sd.sin(v)", "v - t", "t - v"])
def test_a_variable_in_an_operator_or_op_is_read_and_gets_its_gradient(form):
    # The operators' fast path is for Tensors and floats: a Variable must still be read
    # (and so watched) on the general path, or its gradient would be None.
    v0, t0 = np.array([0.3, -1.2]), np.array([2.0, 0.5])
    v, t = sd.Variable(v0), f64(t0)

    def f(v_, t_, ns):
        return eval(form, {"v": v_, "t": t_, "sd": ns})
    with sd.GradientTape() as tape:
        y = sd.reduce_sum(f(v, t, sd))
    expected = numerical_grad(lambda a: np.sum(f(a, t0, np)), v0)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), expected, rtol=1e-6, atol=1e-8)


def test_an_unwatched_tensor_through_the_fast_paths_is_not_recorded():
    x, c = f64([1.0, 2.0]), f64([3.0, 4.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        unwatched = -(sd.exp(c) * 2.0) + 1.0
        y = sd.reduce_sum(x * unwatched)
    gx, gc_ = tape.gradient(y, [x, c])
    assert gc_ is None
    np.testing.assert_allclose(gx.numpy(), -(np.exp([3.0, 4.0]) * 2.0) + 1.0)


@pytest.mark.parametrize("op, at", [(sd.sqrt, 0.0), (sd.math.rsqrt, 0.0),
                                    (sd.math.reciprocal, 0.0)],
                         ids=["sqrt", "rsqrt", "reciprocal"])
def test_tensorflow_s_kernels_give_zero_for_a_zero_adjoint(op, at):
    # where the derivative is infinite, an unused branch of tf.where gets 0, not nan
    x = f64([at, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = sd.where(x > 0.1, op(x), 0.0)
        g = tape.gradient(y, x).numpy()
    assert g[0] == 0.0
    expected = numerical_grad(lambda v: np.asarray(op(f64(v))), np.array([0.25]))
    np.testing.assert_allclose(g[1], expected.ravel(), rtol=1e-6)


def test_numpy_s_sqrt_keeps_the_plain_formula_on_the_tape():
    x = f64([0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = np.sqrt(x)
        assert np.isnan(tape.gradient(y, x, output_gradients=f64([0.0])).numpy()[0])


def test_custom_gradient_gives_the_variables_it_reads_their_gradients():
    """As in TensorFlow, a custom_gradient function that reads a trainable Variable it is
    not given gets that Variable's gradient from ``grad_fn(dy, variables=...)`` (it was
    None); a grad_fn without that keyword is a TypeError."""
    v = sd.Variable(2.0)

    @sd.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            assert variables == [v]
            return dy * v, [dy * x * 10]
        return x * v, grad

    x = sd.constant(3.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x) * 2.0
    dx, dv = tape.gradient(y, [x, v])
    assert (dx.numpy(), dv.numpy()) == (4.0, 60.0)

    @sd.custom_gradient
    def forgetful(x):
        return x * v, lambda dy: dy * v

    with sd.GradientTape():
        with pytest.raises(TypeError, match="variables"):
            forgetful(x)
    assert forgetful(x).numpy() == 6.0  # no tape: no variables' gradients to give

"""The cheap paths a cached call takes, each beside the general path it stands for:
matrix products inlined where the ranks are known, the measured values' shapes,
the cache's key of ranks and types, the read-only views and the tape bookkeeping
skipped when nothing records.  Gradients against the eager tape and finite
differences; the generated source only to see which path was taken."""
import numpy as np
import pytest

import srcdiff as sd
from srcdiff.compiler.runtime import shape_of
from srcdiff.rules.helpers import matmul_lhs, matmul_rhs, reduced_count, unreduce

from compiler_programs import check_batched, check_three_ways

rng = np.random.default_rng(11)


def layer(W, b, X):
    return np.sum(np.tanh(X @ W + b) ** 2)


def test_matrix_products_are_inlined_when_both_ranks_are_two():
    W, b, X = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(5, 3))
    source = sd.adjoint_source(layer, (0, 1), args=(W, b, X))
    assert "X.T @ " in source and "matmul_rhs" not in source
    check_three_ways(layer, (W, b, X), (0, 1))


def product(a, b):
    return np.sum(np.sin(a @ b))


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)),
                                    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4))],
                         ids=str)
def test_matmul_adjoints_for_every_rank_match_the_tape(shapes):
    a, b = (rng.normal(size=s) for s in shapes)
    source = sd.adjoint_source(product, (0, 1), args=(a, b))
    both_matrices = len(shapes[0]) == len(shapes[1]) == 2
    assert ("matmul_lhs" not in source) == both_matrices
    check_three_ways(product, (a, b), (0, 1))
    assert check_batched(product, (a, b), (0, 1)) is None


def test_the_helpers_matrix_form_is_their_general_result():
    a, b, g = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=(2, 4))
    np.testing.assert_array_equal(matmul_lhs(g, a, b), matmul_lhs.matrices(g, a, b))
    np.testing.assert_array_equal(matmul_rhs(g, a, b), matmul_rhs.matrices(g, a, b))
    np.testing.assert_array_equal(matmul_lhs(g, a, b), g @ b.T)
    np.testing.assert_array_equal(matmul_rhs(g, a, b), a.T @ g)


@pytest.mark.parametrize("value", [rng.normal(size=(3, 4)), np.arange(6).reshape(2, 3),
                                   np.float64(2.5), 2.5, 3],
                         ids=["array", "ints", "numpy-number", "float", "int"])
def test_shape_of_measures_as_numpy_does(value):
    kept = shape_of(value)
    assert (kept.shape, kept.size, kept.ndim) == (np.shape(value), np.size(value),
                                                  np.ndim(value))
    assert kept.dtype == getattr(value, "dtype", type(value))


def test_shape_of_refuses_what_has_a_shape_and_no_dtype():
    class Shaped:
        shape = (2,)
    with pytest.raises(AttributeError):
        shape_of(Shaped())


def mean_of_squares(x):
    return np.mean(x ** 2)


def mean_over_an_axis(x):
    return np.sum(np.mean(x * x, axis=1) ** 2)


def mean_keeping_dims(x):
    return np.sum(np.sin(x - np.mean(x, axis=0, keepdims=True)))


def bias_broadcast(x, b, c):
    return np.mean((x + b) * c)


@pytest.mark.parametrize("fn, args", [
    (mean_of_squares, (rng.normal(size=(3, 4)),)),
    (mean_over_an_axis, (rng.normal(size=(3, 4)),)),
    (mean_keeping_dims, (rng.normal(size=(3, 4)),)),
    # unbroadcast that really reduces: a row, a column, a number
    (bias_broadcast, (rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(3, 1)))),
    (bias_broadcast, (rng.normal(size=(3, 4)), rng.normal(size=(1, 4)), 2.0)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_measured_values_reduce_and_spread_as_the_tape_does(fn, args):
    check_three_ways(fn, args, tuple(range(len(args))))


def test_integer_inputs_are_measured_in_their_own_dtype():
    x = np.arange(12).reshape(3, 4)
    g = sd.grad(mean_of_squares)(x)
    np.testing.assert_allclose(g, 2 * x / x.size)
    kept = shape_of(x)
    assert reduced_count(kept, np.float64(1.0)) == 12
    spread = unreduce(np.float64(0.5), kept, None, False)
    assert spread.shape == (3, 4) and not spread.flags.writeable


def test_the_cache_key_tells_ranks_and_types_apart():
    f = sd.grad(mean_of_squares)
    for x in (rng.normal(size=3), rng.normal(size=(2, 3)), 1.5, np.float64(1.5)):
        np.testing.assert_allclose(f(x), 2 * np.asarray(x) / np.size(x))
    info = sd.function(mean_of_squares).cache_info  # the same function, another caller
    assert callable(info)


def writes_into(x, w):
    np.copyto(x, w)
    return np.sum(x * w)


def test_an_argument_written_into_is_copied_and_the_others_viewed():
    x, w = rng.normal(size=3), rng.normal(size=3)
    before = x.copy()
    value, (dx, dw) = sd.value_and_grad(writes_into, (0, 1))(x, w)
    np.testing.assert_array_equal(x, before)  # the copy was written, not x
    assert x.flags.writeable and w.flags.writeable
    np.testing.assert_allclose(value, np.sum(w * w))
    np.testing.assert_allclose(dx, 0.0)
    np.testing.assert_allclose(dw, 2 * w)
    dx[:] = 1.0  # the gradients are the caller's to write into
    dw[:] = 1.0


def test_a_tape_after_an_untaped_call_still_records_compiled_code():
    x = sd.Variable(rng.normal(size=(2, 3)))
    f = sd.function(mean_of_squares)
    f(np.ones((2, 3)))  # a call with no tape: nothing told, nothing left set
    with sd.GradientTape() as tape:
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x), 2 * x.numpy() / 6)


def sum_of_two(x, y, unused):
    return np.sum(x + y)


def test_gradients_not_fresh_arrays_of_their_arguments_kind_take_the_general_path():
    x, y = rng.normal(size=3).astype(np.float32), rng.normal(size=3)
    value, (dx, dy, dz) = sd.value_and_grad(sum_of_two, (0, 1, 2))(x, y, np.ones(2))
    assert dx.dtype == np.float32 and dy.dtype == np.float64  # each in its argument's dtype
    np.testing.assert_array_equal(dx, 1.0)
    np.testing.assert_array_equal(dz, 0.0)  # unconnected: zeros of its shape
    value, (dx, dy, _) = sd.value_and_grad(sum_of_two, (0, 1, 2))(y, y, 2.0)
    assert dx is not dy  # one adjoint for two arguments: each gets its own array
    dx += 1.0
    np.testing.assert_array_equal(dy, 1.0)

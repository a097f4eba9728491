"""The TensorFlow ops that move, sort, scan and index elements (sort, argsort, top_k, the
scans, one_hot, gather_nd, the scatters and segment sums, band_part): values and dtypes,
tape gradients against finite differences, compiled against eager, and TensorFlow's
conventions (each test's docstring says which: the numbers were read from TensorFlow 2 on
the same inputs)."""
import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad

RNG = np.random.default_rng(11)


def weighted_grads(f, *inputs):
    """(f(*inputs), the gradients of sum(w * f) with w = 1, 2, 3, ... in f's shape)."""
    xs = [sd.constant(x) for x in inputs]
    with sd.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
        w = np.arange(1.0, y.numpy().size + 1).reshape(y.shape).astype(y.dtype)
        total = sd.reduce_sum(y * w)
    return y.numpy(), [None if g is None else g.numpy() for g in tape.gradient(total, xs)]


def check_fd(f, x):
    """The weighted gradient of ``f`` at a float64 ``x`` against central differences."""
    y, (g,) = weighted_grads(f, x)
    w = np.arange(1.0, y.size + 1).reshape(y.shape)
    finite = np.isfinite(y)  # an exclusive logsumexp starts at -inf, a constant

    def loss(v):
        return np.sum(np.where(finite, w * f(v).numpy(), 0))
    np.testing.assert_allclose(g, numerical_grad(loss, x), rtol=1e-6, atol=1e-8)


# --- scans ------------------------------------------------------------------------------

def scan_reference(scan, x, axis, exclusive, reverse, identity):
    x = np.flip(x, axis) if reverse else x
    out = scan(x, axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), identity),
                              np.delete(out, -1, axis)], axis)
    return np.flip(out, axis) if reverse else out


SCANS = {"cumsum": (np.cumsum, 0.0), "cumprod": (np.cumprod, 1.0),
         "cumulative_logsumexp": (np.logaddexp.accumulate, -np.inf)}


@pytest.mark.parametrize("name", sorted(SCANS))
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_with_exclusive_and_reverse(name, exclusive, reverse):
    numpy_scan, identity = SCANS[name]
    op = getattr(sd.math, name)
    x = RNG.uniform(0.5, 2.0, (3, 4))
    for axis in (0, 1, -1):
        out = op(x, axis=axis, exclusive=exclusive, reverse=reverse)
        np.testing.assert_allclose(out.numpy(), scan_reference(
            lambda v, a: numpy_scan(v, axis=a), x, axis, exclusive, reverse, identity))
        check_fd(lambda t: op(t, axis=axis, exclusive=exclusive, reverse=reverse), x)
    assert op(x.astype(np.float32), 1).dtype == np.float32


def test_integer_scans_keep_their_dtype():
    i = sd.constant([1, 2, 3])
    assert sd.cumsum(i).dtype == np.int32 and sd.math.cumprod(i).dtype == np.int32
    assert sd.math.cumsum(i, exclusive=True, reverse=True).numpy().tolist() == [5, 3, 0]


def test_cumprod_gradient_is_exact_at_zeros():
    """At zeros srcdiff's cumprod gradient is the exact one; TensorFlow's divides by x and
    gives 0 there ([1, 0, 0, 0, 0] for [2, 0, 3, 0, 5] with these weights), which is wrong:
    this is the one place srcdiff departs from TensorFlow's numbers on purpose."""
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    _, (g,) = weighted_grads(sd.math.cumprod, x)
    np.testing.assert_array_equal(g, [1, 2 * 2 + 3 * 2 * 3, 0, 0, 0])
    check_fd(lambda t: sd.math.cumprod(t, exclusive=True, reverse=True), x)


def test_cumulative_logsumexp_is_stable_and_twice_differentiable():
    """No overflow or lost terms over a range of 1000; its rule (TensorFlow's, in logs)
    gives the second derivative too, and an exclusive scan's -inf start gives no nan."""
    x = np.array([-1000.0, 0.0, 3.0, 1000.0])
    np.testing.assert_allclose(sd.math.cumulative_logsumexp(x).numpy(),
                               np.logaddexp.accumulate(x))
    check_fd(sd.math.cumulative_logsumexp, x)
    w = np.array([1.0, -2.0, 0.0, 3.0])

    def slope(v):
        t = sd.constant(v)
        with sd.GradientTape() as tape:
            tape.watch(t)
            total = sd.reduce_sum(sd.math.cumulative_logsumexp(t, exclusive=True) * w)
        return tape.gradient(total, t)
    v = RNG.uniform(-2, 2, 4)
    t = sd.constant(v)
    with sd.GradientTape() as tape:
        tape.watch(t)
        curvature = sd.reduce_sum(slope(t) ** 2)
    expected = numerical_grad(lambda u: np.sum(slope(u).numpy() ** 2), v)
    np.testing.assert_allclose(tape.gradient(curvature, t).numpy(), expected, rtol=1e-6)


def test_scans_compile_like_the_tape():
    def loss(x):
        return sd.reduce_sum(sd.math.cumprod(x, axis=1, exclusive=True) * x) + sd.reduce_sum(
            sd.math.cumulative_logsumexp(x, reverse=True)) + sd.reduce_sum(
            sd.cumsum(x, exclusive=True) ** 2)
    x = RNG.uniform(0.5, 2.0, (3, 4))
    _, (eager,) = weighted_grads(lambda t: loss(t), x)
    np.testing.assert_allclose(sd.grad(loss)(x), eager, rtol=1e-12)


def test_reduce_euclidean_norm():
    """sqrt(sum(x^2)); of integers an integer, rounded down (TensorFlow gives 5 for
    [3, 5]); at zero its gradient is nan (0 / 0), as TensorFlow's."""
    x = RNG.uniform(-2, 2, (3, 4))
    np.testing.assert_allclose(sd.math.reduce_euclidean_norm(x, axis=1, keepdims=True).numpy(),
                               np.linalg.norm(x, axis=1, keepdims=True))
    check_fd(lambda t: sd.math.reduce_euclidean_norm(t, axis=0), x)
    out = sd.math.reduce_euclidean_norm(sd.constant([3, 5]))
    assert out.dtype == np.int32 and out.numpy() == 5
    with np.errstate(all="ignore"):
        _, (g,) = weighted_grads(lambda t: sd.math.reduce_euclidean_norm(t, axis=1),
                                 np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(g[0], [0.6, 0.8])
    assert np.isnan(g[1]).all()


# --- sorting ----------------------------------------------------------------------------

TIES = np.array([3.0, 1.0, 3.0, 1.0, 2.0])


def test_sort_and_argsort_break_ties_as_tensorflow():
    """Ties keep the lower index first, ascending and descending: TensorFlow's argsort of
    [3, 1, 3, 1, 2] is [1, 3, 4, 0, 2] and, descending, [0, 2, 4, 1, 3]; the gradient of
    sort follows the same order ([4, 1, 5, 2, 3] and [1, 4, 2, 5, 3] with weights 1..5)."""
    assert sd.argsort(TIES).numpy().tolist() == [1, 3, 4, 0, 2]
    assert sd.argsort(TIES, direction="DESCENDING").numpy().tolist() == [0, 2, 4, 1, 3]
    assert sd.argsort(TIES).dtype == np.int32
    value, (g,) = weighted_grads(sd.sort, TIES)
    assert value.tolist() == [1, 1, 2, 3, 3] and g.tolist() == [4, 1, 5, 2, 3]
    value, (g,) = weighted_grads(lambda t: sd.sort(t, direction="DESCENDING"), TIES)
    assert value.tolist() == [3, 3, 2, 1, 1] and g.tolist() == [1, 4, 2, 5, 3]
    big = np.iinfo(np.int32)
    i = sd.constant([3, big.min, 5, big.max])
    assert sd.sort(i, direction="DESCENDING").numpy().tolist() == [big.max, 5, 3, big.min]
    with pytest.raises(ValueError, match="direction"):
        sd.sort(TIES, direction="UP")


def test_sort_along_axes_and_top_k():
    x = RNG.uniform(-2, 2, (3, 4))
    np.testing.assert_array_equal(sd.sort(x, axis=0).numpy(), np.sort(x, axis=0))
    check_fd(lambda t: sd.sort(t, axis=0, direction="DESCENDING"), x)
    values, indices = sd.math.top_k(x, k=2)
    np.testing.assert_array_equal(values.numpy(), -np.sort(-x, axis=-1)[:, :2])
    np.testing.assert_array_equal(indices.numpy(), np.argsort(-x, axis=-1)[:, :2])
    assert indices.dtype == np.int32 and type(sd.nn.top_k(x)).__name__ == "TopKV2"
    check_fd(lambda t: sd.math.top_k(t, k=3).values, x)
    with pytest.raises(ValueError, match="k"):
        sd.math.top_k(x, k=5)


def test_top_k_ties_and_nan_as_tensorflow():
    """top_k of [3, 1, 3, 1, 2] with k=3 is [3, 3, 2] at [0, 2, 4], and its gradient goes
    to those indices; nan counts as the largest value (TensorFlow: [nan, 3] at [1, 2])."""
    (values, indices) = sd.math.top_k(TIES, k=3)
    assert values.numpy().tolist() == [3, 3, 2] and indices.numpy().tolist() == [0, 2, 4]
    _, (g,) = weighted_grads(lambda t: sd.math.top_k(t, k=3).values, TIES)
    assert g.tolist() == [1, 0, 2, 0, 3]
    values, indices = sd.math.top_k(np.array([1.0, np.nan, 3.0]), k=2)
    assert np.isnan(values.numpy()[0]) and indices.numpy().tolist() == [1, 2]


def test_sorting_compiles_like_the_tape():
    def loss(x):
        values, _ = sd.math.top_k(x, k=2)
        return sd.reduce_sum(sd.sort(x, direction="DESCENDING") * np.arange(4.0)) + \
            sd.reduce_sum(values ** 2) + sd.reduce_sum(sd.nn.top_k(x)[0])
    x = RNG.uniform(-2, 2, (3, 4))
    _, (eager,) = weighted_grads(lambda t: loss(t), x)
    np.testing.assert_allclose(sd.grad(loss)(x), eager, rtol=1e-12)


# --- indices: one_hot, gather_nd, scatters, segments ---------------------------------------

def test_one_hot_as_tensorflow():
    """Indices outside [0, depth) give rows of off_value; float32 unless dtype or on_value
    says (an int on_value gives int32); axis puts the new axis elsewhere."""
    out = sd.one_hot([0, 2, -1, 5], 3)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(sd.one_hot([[0, 2], [1, 7]], 3, axis=0).numpy(),
                                  [[[1, 0], [0, 0]], [[0, 0], [1, 0]], [[0, 1], [0, 0]]])
    np.testing.assert_array_equal(sd.one_hot([1, 2], 3, on_value=5.0, off_value=-1.0).numpy(),
                                  [[-1, 5, -1], [-1, -1, 5]])
    assert sd.one_hot([1], 3, on_value=2).dtype == np.int32
    assert sd.one_hot([1], 3, dtype=sd.int64).dtype == np.int64
    with pytest.raises(TypeError, match="integers"):
        sd.one_hot([1.5], 3)


def test_gather_nd_and_scatter_nd():
    p = RNG.uniform(-2, 2, (2, 3, 2))
    index = [[1, 0], [0, 2], [1, 0]]
    np.testing.assert_array_equal(sd.gather_nd(p, index).numpy(), p[[1, 0, 1], [0, 2, 0]])
    np.testing.assert_array_equal(sd.gather_nd(p, [[1]]).numpy(), p[[1]])
    _, (g,) = weighted_grads(lambda t: sd.gather_nd(t, [[1, 0, 1], [1, 0, 1]]), p)
    assert g[1, 0, 1] == 3 and np.sum(g) == 3  # a repeated index adds up
    check_fd(lambda t: sd.gather_nd(t, index), p)
    u = RNG.uniform(-2, 2, 3)
    np.testing.assert_array_equal(sd.scatter_nd([[1], [3], [1]], u, [5]).numpy(),
                                  [0, u[0] + u[2], 0, u[1], 0])
    check_fd(lambda t: sd.scatter_nd([[1], [3], [1]], t, [5]), u)
    for bad in ([[2, 0]], [[-1, 0]]):
        with pytest.raises(IndexError, match="do not index"):
            sd.gather_nd(p, bad)


def test_tensor_scatter_nd_ops():
    """add and sub add up repeats; update keeps the last update of a repeated index (as
    TensorFlow's CPU kernel does), and only that update gets a gradient: TensorFlow gives
    the overwritten ones the gradient too ([2, 4, 2] here), though they change nothing."""
    t, u = np.arange(5.0), np.array([10.0, 20.0, 30.0])
    index = [[1], [3], [1]]
    value, (gt, gu) = weighted_grads(lambda a, b: sd.tensor_scatter_nd_update(a, index, b), t, u)
    assert value.tolist() == [0, 30, 2, 20, 4]
    assert gt.tolist() == [1, 0, 3, 0, 5] and gu.tolist() == [0, 4, 2]
    value, (gt, gu) = weighted_grads(lambda a, b: sd.tensor_scatter_nd_add(a, index, b), t, u)
    assert value.tolist() == [0, 41, 2, 23, 4] and gu.tolist() == [2, 4, 2]
    assert gt.tolist() == [1, 2, 3, 4, 5]
    value, _ = weighted_grads(lambda a, b: sd.tensor_scatter_nd_sub(a, index, b), t, u)
    assert value.tolist() == [0, -39, 2, -17, 4]
    m, rows = RNG.uniform(-2, 2, (2, 3)), RNG.uniform(-2, 2, (1, 3))
    out = sd.tensor_scatter_nd_update(m, [[1]], rows)
    np.testing.assert_array_equal(out.numpy(), [m[0], rows[0]])
    out = sd.tensor_scatter_nd_update(sd.constant(m, sd.float32), [[1, 0], [0, 2]], [5.0, 6.0])
    assert out.dtype == np.float32 and out.numpy()[1, 0] == 5 and out.numpy()[0, 2] == 6
    check_fd(lambda a: sd.tensor_scatter_nd_update(a, [[1, 0], [0, 2]], [5.0, 6.0]), m)
    with pytest.raises(IndexError):
        sd.tensor_scatter_nd_update(np.zeros(3), [[5]], [1.0])


def test_segment_sums_as_tensorflow():
    """A negative segment id drops its row (its gradient is 0); ids past num_segments, and
    segment_sum's ids out of order, are errors, as in TensorFlow; integers stay integers."""
    d = RNG.uniform(-2, 2, (4, 2))
    out = sd.math.unsorted_segment_sum(d, [1, -1, 1, 0], 3)
    np.testing.assert_allclose(out.numpy(), [d[3], d[0] + d[2], [0, 0]])
    _, (g,) = weighted_grads(lambda t: sd.math.unsorted_segment_sum(t, [1, -1, 1, 0], 3), d)
    np.testing.assert_array_equal(g, [[3, 4], [0, 0], [3, 4], [1, 2]])
    check_fd(lambda t: sd.math.unsorted_segment_sum(t, [[0, 1], [1, -1]], 2), d.reshape(2, 2, 2))
    np.testing.assert_allclose(sd.math.segment_sum(d, [0, 0, 2, 2]).numpy(),
                               [d[0] + d[1], [0, 0], d[2] + d[3]])
    check_fd(lambda t: sd.math.segment_sum(t, [0, 0, 2, 2]), d)
    assert sd.math.unsorted_segment_sum(sd.constant([1, 2]), [0, 0], 2).dtype == np.int32
    with pytest.raises(IndexError, match="out of range"):
        sd.math.unsorted_segment_sum(d, [0, 5, 0, 0], 3)
    with pytest.raises(ValueError, match="increasing"):
        sd.math.segment_sum(d, [1, 0, 2, 2])


def test_indices_compile_like_the_tape():
    def loss(x):
        y = sd.gather_nd(x, [[1, 0], [0, 2]]) + sd.math.unsorted_segment_sum(x, [1, 0], 2)[0, :2]
        return sd.reduce_sum(sd.tensor_scatter_nd_update(x, [[0, 1]], y[:1]) * x) + \
            sd.reduce_sum(y ** 2)
    x = RNG.uniform(-2, 2, (2, 3))
    _, (eager,) = weighted_grads(lambda t: loss(t), x)
    np.testing.assert_allclose(sd.grad(loss)(x), eager, rtol=1e-12)


def test_band_part():
    """A negative count keeps that whole triangle; the gradient is the band of the
    adjoint (TensorFlow's); integers stay integers."""
    x = RNG.uniform(-2, 2, (2, 3, 4))
    np.testing.assert_array_equal(sd.linalg.band_part(x, 0, -1).numpy(), np.triu(x))
    np.testing.assert_array_equal(sd.linalg.band_part(x, -1, 0).numpy(), np.tril(x))
    np.testing.assert_array_equal(sd.linalg.band_part(x, 1, 0).numpy(),
                                  np.tril(x) - np.tril(x, -2))
    _, (g,) = weighted_grads(lambda t: sd.linalg.band_part(t, 1, 1), x)
    w = np.arange(1.0, 25).reshape(x.shape)
    np.testing.assert_array_equal(g, np.triu(np.tril(w, 1), -1))
    assert sd.linalg.band_part(sd.ones([3, 4], sd.int32), 0, -1).dtype == np.int32


def test_segment_means():
    """The mean of each segment (0 for an empty one, as TensorFlow's: [1.5, 0, 4] for
    [1, 2, 4] with ids [0, 0, 2]); each row's gradient is 1 / its segment's size."""
    d = np.array([1.0, 2.0, 4.0])
    for out in (sd.math.segment_mean(d, [0, 0, 2]),
                sd.math.unsorted_segment_mean(d, [0, 0, 2], 3)):
        assert out.numpy().tolist() == [1.5, 0.0, 4.0]
    _, (g,) = weighted_grads(lambda t: sd.math.unsorted_segment_mean(t, [0, 0, 2], 3), d)
    assert g.tolist() == [0.5, 0.5, 3.0]
    rows = RNG.uniform(-2, 2, (4, 3))
    np.testing.assert_allclose(sd.math.unsorted_segment_mean(rows, [1, -1, 1, 0], 2).numpy(),
                               [rows[3], (rows[0] + rows[2]) / 2])
    check_fd(lambda t: sd.math.segment_mean(t, [0, 0, 1, 1]), rows)


def test_indices_out_of_range_are_invalid_arguments():
    """gather and sparse_softmax_cross_entropy_with_logits refuse indices outside
    ``[0, n)``, negative ones included (NumPy counted those from the end), with
    TensorFlow's InvalidArgumentError, which is also an IndexError."""
    x = sd.constant(RNG.uniform(-2, 2, (4, 3)))
    for call in (lambda: sd.gather(x, [5]), lambda: sd.gather(x, [-1]),
                 lambda: sd.gather(x, [3], axis=1), lambda: sd.gather(sd.Variable(x), [4]),
                 lambda: sd.gather_nd(x, [[4, 0]]),
                 lambda: sd.nn.sparse_softmax_cross_entropy_with_logits([0, 3, 1, -1], x),
                 lambda: sd.nn.sparse_softmax_cross_entropy_with_logits([0, 3, 1, 2], x)):
        with pytest.raises(sd.errors.InvalidArgumentError):
            call()
    with pytest.raises(IndexError, match=r"not in \[0, 3\)"):
        sd.gather(x, [-1], axis=-1)
    assert sd.gather(x, [3, 0]).numpy().tolist() == x.numpy()[[3, 0]].tolist()


def test_a_variables_sparse_gradient_keeps_tensorflows_index_dtype():
    """Indices given as a Python list are int32, as TensorFlow converts them (were int64)."""
    v = sd.Variable(RNG.uniform(-2, 2, (3, 2)))
    for indices, dtype in (([2, 0, 2], np.int32), (np.array([2, 0, 2]), np.int64)):
        with sd.GradientTape() as tape:
            loss = sd.reduce_sum(sd.gather(v, indices))
        g = tape.gradient(loss, v)
        assert np.asarray(sd.convert_to_tensor(g.indices)).dtype == dtype
        np.testing.assert_array_equal(sd.convert_to_tensor(g).numpy(), [[1, 1], [0, 0], [2, 2]])


def batched_gather(params, indices, axis, batch_dims):
    """TensorFlow's documented meaning of ``gather(params, indices, axis, batch_dims)``:
    each element of the batch (the first ``batch_dims`` axes) gathers on its own."""
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([batched_gather(p, i, axis - 1, batch_dims - 1)
                     for p, i in zip(params, indices)])


@pytest.mark.parametrize("shape, indices, axis, batch_dims", [
    ((2, 3, 4), [[0, 2], [1, 1]], 1, 1),
    ((2, 3, 4), [[0, 3, 3], [1, 1, 0]], 2, 1),
    ((2, 3, 4), [[[0], [2], [1]], [[1], [1], [3]]], 2, 2),
    ((3, 4), [[0, 2], [1, 1], [3, 0]], None, -1),  # axis defaults to batch_dims
    ((3, 2, 4), [[[0, 2]], [[1, 1]], [[3, 0]]], -1, 1),
])
def test_gather_with_batch_dims_as_tensorflow(shape, indices, axis, batch_dims):
    """Values as TensorFlow documents ``batch_dims`` (result shape ``params.shape[:axis] +
    indices.shape[batch_dims:] + params.shape[axis + 1:]``), repeated indices' gradients
    summed, against finite differences; a dense gradient, also of a Variable."""
    x = RNG.uniform(-2, 2, shape)
    b = batch_dims % np.ndim(indices)
    a = b if axis is None else axis % len(shape)
    y, (g,) = weighted_grads(lambda t: sd.gather(t, indices, axis=axis, batch_dims=batch_dims),
                             x)
    np.testing.assert_array_equal(y, batched_gather(x, np.array(indices), a, b))
    check_fd(lambda t: sd.gather(t, indices, axis=axis, batch_dims=batch_dims), x)
    v = sd.Variable(x)
    with sd.GradientTape() as tape:
        loss = sd.reduce_sum(sd.gather(v, indices, axis=axis, batch_dims=batch_dims))
    assert type(tape.gradient(loss, v)) is sd.Tensor


def test_gather_with_batch_dims_compiles_like_the_tape():
    indices = np.array([[0, 2], [1, 1], [3, 0]])

    def f(p):
        return np.sum(sd.gather(p, indices, batch_dims=1) ** 2)
    x = RNG.uniform(-2, 2, (3, 4))
    expected = np.zeros((3, 4))
    np.add.at(expected, (np.arange(3)[:, None], indices), 2 * x[np.arange(3)[:, None], indices])
    np.testing.assert_allclose(sd.grad(f)(x), expected)


def test_gather_with_invalid_batch_dims_is_invalid_argument():
    x = sd.constant(RNG.uniform(-2, 2, (3, 4)))
    for call in (lambda: sd.gather(x, [[0], [1]], batch_dims=1),  # batches differ
                 lambda: sd.gather(x, [[0], [1], [2]], axis=0, batch_dims=1),  # axis < batch
                 lambda: sd.gather(x, [[0], [1], [4]], batch_dims=1)):  # out of range
        with pytest.raises(sd.errors.InvalidArgumentError):
            call()

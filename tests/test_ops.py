"""The TensorFlow-named ops (API.md section 2): values against NumPy with TensorFlow's
dtype and axis conventions, tape gradients against central finite differences, and
TensorFlow's documented gradient conventions (ties, kinks, None, complex values)."""
import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad

RNG = np.random.default_rng(0)

# Domains where an op is smooth: (low, high).
REAL, POSITIVE, UNIT, ABOVE_ONE = (-2.0, 2.0), (0.5, 2.0), (-0.8, 0.8), (1.5, 3.0)


def draw(shape, domain=REAL, dtype=np.float64):
    return RNG.uniform(*domain, shape).astype(dtype)


# --- elementwise values --------------------------------------------------------------

UNARY = {  # TensorFlow's name: (NumPy reference, domain)
    "negative": (np.negative, REAL), "abs": (np.abs, REAL), "square": (np.square, REAL),
    "sqrt": (np.sqrt, POSITIVE), "rsqrt": (lambda x: 1 / np.sqrt(x), POSITIVE),
    "exp": (np.exp, REAL), "log": (np.log, POSITIVE), "log1p": (np.log1p, POSITIVE),
    "expm1": (np.expm1, REAL), "sin": (np.sin, REAL), "cos": (np.cos, REAL),
    "tan": (np.tan, UNIT), "tanh": (np.tanh, REAL), "sinh": (np.sinh, REAL),
    "cosh": (np.cosh, REAL), "asin": (np.arcsin, UNIT), "acos": (np.arccos, UNIT),
    "atan": (np.arctan, REAL), "asinh": (np.arcsinh, REAL), "acosh": (np.arccosh, ABOVE_ONE),
    "atanh": (np.arctanh, UNIT), "reciprocal": (np.reciprocal, POSITIVE),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), REAL),
    "softplus": (lambda x: np.log1p(np.exp(x)), REAL), "sign": (np.sign, REAL),
    "floor": (np.floor, REAL), "ceil": (np.ceil, REAL), "round": (np.round, REAL),
}
BINARY = {  # TensorFlow's name: (NumPy reference, domain of x, domain of y)
    "add": (np.add, REAL, REAL), "subtract": (np.subtract, REAL, REAL),
    "multiply": (np.multiply, REAL, REAL), "divide": (np.divide, REAL, POSITIVE),
    "truediv": (np.divide, REAL, POSITIVE), "pow": (np.power, POSITIVE, REAL),
    "maximum": (np.maximum, REAL, REAL), "minimum": (np.minimum, REAL, REAL),
    "squared_difference": (lambda x, y: (x - y) ** 2, REAL, REAL),
    "atan2": (np.arctan2, REAL, REAL), "floordiv": (np.floor_divide, REAL, POSITIVE),
    "floormod": (np.mod, REAL, POSITIVE),
}
COMPARISONS = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
               "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal}
NO_GRADIENT = {"floor", "ceil", "round", "floordiv"}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_op_matches_numpy_and_keeps_float32(name):
    reference, domain = UNARY[name]
    x = draw((2, 3), domain, np.float32)
    for op in (getattr(sd, name), getattr(sd.math, name)):
        out = op(x)
        assert isinstance(out, sd.Tensor) and out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), reference(x), rtol=1e-6, atol=1e-6)
    keyword = "features" if name == "softplus" else "x"  # TensorFlow's parameter names
    np.testing.assert_array_equal(op(**{keyword: x}).numpy(), out.numpy())


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_op_matches_numpy_with_broadcasting_and_python_numbers(name):
    reference, dx, dy = BINARY[name]
    x, y = draw((2, 3), dx, np.float32), draw((3,), dy, np.float32)
    for op in (getattr(sd, name), getattr(sd.math, name)):
        out = op(sd.constant(x), y)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), reference(x, y), rtol=1e-6, atol=1e-6)
    y0 = float(y[0])
    assert op(x, y0).dtype == np.float32  # a Python number takes the tensor's dtype
    np.testing.assert_allclose(op(x, y0).numpy(), reference(x, np.float32(y0)), rtol=1e-6)
    keywords = ("y", "x") if name == "atan2" else ("x", "y")
    np.testing.assert_allclose(op(**dict(zip(keywords, (x, y)))).numpy(), reference(x, y),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_comparison_gives_bool_tensors(name):
    x, y = np.array([1.0, 2.0, 3.0], np.float32), np.array([2.0, 2.0, 2.0], np.float32)
    out = getattr(sd, name)(x, y)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out.numpy(), COMPARISONS[name](x, y))


def test_round_is_half_to_even_like_tensorflow():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5], np.float32)
    np.testing.assert_array_equal(sd.round(x).numpy(), [0.0, 2.0, 2.0, -0.0, -2.0])


def test_integer_ops_keep_integer_dtypes():
    i = sd.constant([3, -7, 8])
    assert i.dtype == np.int32
    for out in (sd.add(i, 1), sd.multiply(i, i), sd.abs(i), sd.maximum(i, 0),
                sd.floordiv(i, 2), sd.floormod(i, 3), sd.reduce_sum(i), sd.reduce_prod(i),
                sd.reduce_max(i), sd.reduce_mean(i)):
        assert out.dtype == np.int32
    assert sd.divide(i, 2).dtype == np.float64  # integer true division: float64, as in TF
    assert sd.reduce_mean(i).numpy() == 1  # 4 // 3: TensorFlow's integer mean truncates
    assert sd.reduce_mean(sd.constant([-1, -2])).numpy() == -1


def test_clip_by_value_and_where():
    x = np.array([[-2.0, 0.5], [3.0, 1.0]], np.float32)
    np.testing.assert_array_equal(sd.clip_by_value(x, 0.0, 1.0).numpy(), np.clip(x, 0, 1))
    assert sd.clip_by_value(x, 0.0, 1.0).dtype == np.float32
    t = sd.constant(x)
    np.testing.assert_array_equal(sd.where(t > 0, t, 0.0).numpy(), np.where(x > 0, x, 0))
    assert sd.where(t > 0, 1.0, 0.0).dtype == np.float32
    indices = sd.where(t > 0.7)
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices.numpy(), [[1, 0], [1, 1]])
    with pytest.raises(ValueError, match="both be non-None"):
        sd.where(t > 0, t)


# --- reductions ----------------------------------------------------------------------

REDUCTIONS = {
    "reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_prod": np.prod, "reduce_variance": np.var, "reduce_std": np.std,
    "reduce_logsumexp": lambda x, axis=None, keepdims=False:
        np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims)),
}
AXES = [dict(), dict(axis=0), dict(axis=-1), dict(axis=[0, 2]), dict(axis=1, keepdims=True),
        dict(keepdims=True)]


def numpy_axis(kwargs):
    axis = kwargs.get("axis")
    return dict(kwargs, axis=tuple(axis)) if isinstance(axis, list) else kwargs


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("kwargs", AXES, ids=str)
def test_reduction_matches_numpy(name, kwargs):
    x = draw((2, 3, 4), REAL, np.float32)
    expected = REDUCTIONS[name](x, **numpy_axis(kwargs))
    for op in (getattr(sd, name), getattr(sd.math, name)):
        out = op(x, **kwargs)
        assert out.dtype == np.float32 and out.shape == np.shape(expected)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_reduce_logsumexp_does_not_overflow():
    np.testing.assert_allclose(sd.reduce_logsumexp([1000.0, 1000.0]).numpy(),
                               1000 + np.log(2), rtol=1e-6)


@pytest.mark.parametrize("ord, axis", [
    ("euclidean", None), ("euclidean", 1), (1, None), (np.inf, 0), (3, -1), (2, 1),
    ("fro", (0, 1)), (1, (0, 1)), (np.inf, [-2, -1]), ("euclidean", (1, 0))])
def test_norm_matches_numpy(ord, axis):
    x = draw((3, 4), REAL, np.float32)
    if axis is None:
        expected = np.linalg.norm(x.ravel(), None if ord == "euclidean" else ord)
    else:
        expected = np.linalg.norm(x, None if ord == "euclidean" else ord,
                                  tuple(axis) if isinstance(axis, list) else axis)
    for op in (sd.norm, sd.linalg.norm):
        np.testing.assert_allclose(op(x, ord=ord, axis=axis).numpy(), expected, rtol=1e-5)
    keep = sd.norm(x, ord=ord, axis=axis, keepdims=True)
    assert keep.ndim == 2


def test_norm_of_a_tensor_of_any_rank_is_of_the_whole_tensor():
    x = draw((2, 3, 4), REAL, np.float32)
    np.testing.assert_allclose(sd.norm(x).numpy(), np.sqrt(np.sum(x ** 2)), rtol=1e-6)
    assert sd.norm(x, keepdims=True).shape == (1, 1, 1)


@pytest.mark.parametrize("ord", [0, -1, "nuclear", "fro"])
def test_norm_of_an_unsupported_vector_order_is_value_error(ord):
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm"):
        sd.norm([1.0, 2.0], ord=ord)


def test_argmax_argmin_default_to_axis_0_and_int64():
    x = np.array([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]], np.float32)
    assert sd.argmax(x).dtype == np.int64 and sd.argmin(x).dtype == np.int64
    np.testing.assert_array_equal(sd.argmax(x).numpy(), [1, 0, 1])
    np.testing.assert_array_equal(sd.math.argmin(x).numpy(), [0, 1, 0])
    np.testing.assert_array_equal(sd.argmax(x, axis=1).numpy(), [1, 0])
    assert sd.argmax(x, output_type=sd.int32).dtype == np.int32


def test_argmax_argmin_never_pick_a_nan_as_tensorflow():
    """TensorFlow's kernels compare with > and <, which a NaN never wins (NumPy picks the
    first NaN); all NaN, or nothing beating the first, gives index 0."""
    nan, inf = np.nan, np.inf
    x = np.array([[1.0, nan, 3.0], [nan, 5.0, 3.0], [nan, nan, nan], [nan, -inf, 2.0]])
    np.testing.assert_array_equal(sd.argmax(x, axis=1).numpy(), [2, 1, 0, 2])
    np.testing.assert_array_equal(sd.argmin(x, axis=1).numpy(), [0, 2, 0, 1])
    np.testing.assert_array_equal(sd.argmax(x[:, :2]).numpy(), [0, 1])
    np.testing.assert_array_equal(sd.argmax(sd.Variable(x[1])).numpy(), 1)


def test_cumsum_and_add_n():
    x = draw((2, 3), REAL, np.float32)
    np.testing.assert_allclose(sd.math.cumsum(x).numpy(), np.cumsum(x, axis=0), rtol=1e-6)
    np.testing.assert_allclose(sd.add_n([x, x, x]).numpy(), 3 * x, rtol=1e-6)


# --- linear algebra ------------------------------------------------------------------

def test_matmul_transposes_and_adjoints():
    a, b = draw((2, 3), REAL, np.float32), draw((2, 3), REAL, np.float32)
    np.testing.assert_allclose(sd.matmul(a, b, transpose_b=True).numpy(), a @ b.T, rtol=1e-6)
    np.testing.assert_allclose(sd.matmul(a, b, transpose_a=True).numpy(), a.T @ b, rtol=1e-6)
    np.testing.assert_allclose(sd.linalg.matmul(a.T, b, transpose_a=True, transpose_b=True)
                               .numpy(), a @ b.T, rtol=1e-6)
    z = draw((2, 2)) + 1j * draw((2, 2))
    np.testing.assert_allclose(sd.matmul(z, z, adjoint_a=True).numpy(), z.conj().T @ z)
    batch = draw((4, 2, 3), REAL, np.float32)
    assert sd.matmul(batch, b, transpose_b=True).shape == (4, 2, 2)


def test_transpose_tensordot_einsum():
    x = draw((2, 3, 4), REAL, np.float32)
    np.testing.assert_array_equal(sd.transpose(x).numpy(), x.T)
    np.testing.assert_array_equal(sd.transpose(x, perm=[1, 0, 2]).numpy(),
                                  np.transpose(x, (1, 0, 2)))
    y = draw((4, 5), REAL, np.float32)
    np.testing.assert_allclose(sd.tensordot(x, y, axes=1).numpy(), np.tensordot(x, y, 1),
                               rtol=1e-5)
    np.testing.assert_allclose(sd.tensordot(x, y, [[2], [0]]).numpy(),
                               np.tensordot(x, y, ([2], [0])), rtol=1e-5)
    np.testing.assert_allclose(sd.einsum("ijk,kl->ijl", x, y).numpy(),
                               np.einsum("ijk,kl->ijl", x, y), rtol=1e-5)


def test_linalg_ops_match_numpy():
    a = draw((3, 3), REAL) + 3 * np.eye(3)
    b = draw((3, 2))
    np.testing.assert_allclose(sd.linalg.inv(a).numpy(), np.linalg.inv(a))
    np.testing.assert_allclose(sd.linalg.det(a).numpy(), np.linalg.det(a))
    np.testing.assert_allclose(sd.linalg.solve(a, b).numpy(), np.linalg.solve(a, b))
    np.testing.assert_allclose(sd.linalg.solve(a, b, adjoint=True).numpy(),
                               np.linalg.solve(a.T, b))
    np.testing.assert_allclose(sd.linalg.trace(a).numpy(), np.trace(a))
    batch = np.stack([a, 2 * a])
    np.testing.assert_allclose(sd.linalg.trace(batch).numpy(), [np.trace(a), 2 * np.trace(a)])
    sign, logabs = sd.linalg.slogdet(-a)
    np.testing.assert_allclose([sign.numpy(), logabs.numpy()], np.linalg.slogdet(-a))
    spd = a @ a.T
    np.testing.assert_allclose(sd.linalg.logdet(spd).numpy(), np.log(np.linalg.det(spd)))
    np.testing.assert_array_equal(sd.linalg.diag_part(batch).numpy(),
                                  np.diagonal(batch, axis1=-2, axis2=-1))
    np.testing.assert_array_equal(sd.linalg.matrix_transpose(batch).numpy(),
                                  np.swapaxes(batch, -1, -2))


# --- shapes --------------------------------------------------------------------------

def test_shape_ops_match_numpy():
    x = draw((2, 3), REAL, np.float32)
    np.testing.assert_array_equal(sd.reshape(x, [3, -1]).numpy(), x.reshape(3, 2))
    np.testing.assert_array_equal(sd.reshape(x, sd.constant([6])).numpy(), x.ravel())
    assert sd.expand_dims(x, -1).shape == (2, 3, 1)
    assert sd.squeeze(np.zeros((1, 2, 1))).shape == (2,)
    assert sd.squeeze(np.zeros((1, 2, 1)), axis=[0]).shape == (2, 1)
    np.testing.assert_array_equal(sd.concat([x, x], axis=-1).numpy(), np.concatenate([x, x], 1))
    np.testing.assert_array_equal(sd.stack([x, x], axis=1).numpy(), np.stack([x, x], 1))
    pieces = sd.unstack(x, axis=1)
    assert len(pieces) == 3 and all(p.shape == (2,) for p in pieces)
    np.testing.assert_array_equal(pieces[2].numpy(), x[:, 2])
    np.testing.assert_array_equal(sd.tile(x, [2, 1]).numpy(), np.tile(x, (2, 1)))
    assert sd.broadcast_to([1.0, 2.0], [3, 2]).shape == (3, 2)
    np.testing.assert_array_equal(sd.gather(x, [1, 0, 1]).numpy(), x[[1, 0, 1]])
    np.testing.assert_array_equal(sd.gather(x, [2, 0], axis=1).numpy(), x[:, [2, 0]])
    np.testing.assert_array_equal(sd.reverse(x, [1]).numpy(), x[:, ::-1])


def test_shape_size_rank_are_int32_tensors():
    x = np.zeros((2, 3, 4), np.float32)
    for op, expected in ((sd.shape, [2, 3, 4]), (sd.size, 24), (sd.rank, 3)):
        out = op(x)
        assert isinstance(out, sd.Tensor) and out.dtype == np.int32
        np.testing.assert_array_equal(out.numpy(), expected)
    assert sd.shape(x, out_type=sd.int64).dtype == np.int64


# --- creation ------------------------------------------------------------------------

def test_creation_ops_dtypes_follow_tensorflow():
    assert sd.ones([2, 3]).dtype == np.float32 and sd.ones([2, 3]).shape == (2, 3)
    assert sd.zeros(4).shape == (4,) and sd.zeros(4, dtype=sd.int32).dtype == np.int32
    assert sd.zeros(sd.constant([2, 2])).shape == (2, 2)
    i = sd.constant([[1, 2]])
    assert sd.ones_like(i).dtype == np.int32
    assert sd.zeros_like(i, dtype=sd.float64).dtype == np.float64
    assert sd.fill([2, 2], 7).dtype == np.int32 and sd.fill([2], 0.5).dtype == np.float32
    np.testing.assert_array_equal(sd.eye(2, 3).numpy(), np.eye(2, 3))
    assert sd.eye(2).dtype == np.float32 and sd.eye(2, batch_shape=[4]).shape == (4, 2, 2)


@pytest.mark.parametrize("args, dtype, values", [
    ((5,), np.int32, [0, 1, 2, 3, 4]), ((1, 4), np.int32, [1, 2, 3]),
    ((5.0,), np.float32, [0, 1, 2, 3, 4]), ((1, 3, 0.5), np.float32, [1, 1.5, 2, 2.5]),
    ((3, 0, -1), np.int32, [3, 2, 1])])
def test_range_infers_tensorflows_dtype(args, dtype, values):
    out = sd.range(*args)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), values)
    assert sd.range(3, dtype=sd.float64).dtype == np.float64


def test_linspace():
    out = sd.linspace(0.0, 1.0, 5)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.linspace(0, 1, 5))


def test_random_ops_are_seeded_and_shaped():
    sd.random.set_seed(7)
    a = sd.random.normal([2, 3])
    sd.random.set_seed(7)
    b = sd.random.normal([2, 3])
    assert a.dtype == np.float32 and a.shape == (2, 3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    u = sd.random.uniform([1000], minval=-1.0, maxval=3.0, dtype=sd.float64)
    assert u.dtype == np.float64 and -1 <= u.numpy().min() and u.numpy().max() < 3
    n = sd.random.uniform([50], maxval=4, dtype=sd.int32)
    assert n.dtype == np.int32 and set(n.numpy()) <= {0, 1, 2, 3}
    with pytest.raises(ValueError, match="maxval"):
        sd.random.uniform([2], dtype=sd.int32)


# --- nn ------------------------------------------------------------------------------

def log_softmax(x, axis=-1):
    return x - np.log(np.sum(np.exp(x), axis=axis, keepdims=True))


def test_nn_ops_match_their_formulas():
    x = draw((2, 3))
    np.testing.assert_allclose(sd.nn.relu(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(sd.nn.sigmoid(x).numpy(), 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(sd.nn.tanh(x).numpy(), np.tanh(x))
    np.testing.assert_allclose(sd.nn.softmax(x).numpy(), np.exp(log_softmax(x)))
    np.testing.assert_allclose(sd.nn.softmax(x, axis=0).numpy(), np.exp(log_softmax(x, 0)))
    np.testing.assert_allclose(sd.nn.log_softmax(x).numpy(), log_softmax(x))
    np.testing.assert_allclose(sd.nn.l2_loss(x).numpy(), np.sum(x ** 2) / 2)
    labels = np.exp(log_softmax(draw((2, 3))))
    np.testing.assert_allclose(
        sd.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x).numpy(),
        -np.sum(labels * log_softmax(x), axis=-1))
    classes = np.array([2, 0])
    np.testing.assert_allclose(
        sd.nn.sparse_softmax_cross_entropy_with_logits(labels=classes, logits=x).numpy(),
        -log_softmax(x)[[0, 1], classes])
    assert sd.nn.softmax(np.array([1000.0, 1000.0], np.float32)).numpy().tolist() == [0.5, 0.5]


# --- gradients against finite differences ----------------------------------------------

def check_gradients(f, *inputs):
    """The tape's gradient of sum(w * f(*inputs)) w.r.t. each input vs finite differences."""
    xs = [sd.constant(x) for x in inputs]
    w = RNG.standard_normal(np.shape(f(*inputs)))
    with sd.GradientTape() as tape:
        tape.watch(xs)
        y = sd.reduce_sum(w * f(*xs))
    grads = tape.gradient(y, xs)
    for k, g in enumerate(grads):
        def loss(v):
            return float(np.sum(w * np.asarray(f(*inputs[:k], v, *inputs[k + 1:]))))
        assert g is not None, f"input {k} got no gradient"
        assert g.dtype == np.float64
        np.testing.assert_allclose(g.numpy(), numerical_grad(loss, inputs[k]),
                                   rtol=1e-5, atol=1e-7, err_msg=f"input {k}")


def case(name, f, *specs):
    return pytest.param(f, specs, id=name)


def spec(*shape, domain=REAL):
    """A random float64 input."""
    return lambda: draw(shape, domain)


def matrix(n):
    """A well-conditioned random n x n matrix."""
    return lambda: draw((n, n), (-0.5, 0.5)) + n * np.eye(n)


GRADIENTS = [
    *[case(name, getattr(sd, name), spec(2, 3, domain=domain))
      for name, (_, domain) in UNARY.items() if name not in NO_GRADIENT],
    *[case(name, getattr(sd, name), spec(2, 3, domain=dx), spec(3, domain=dy))
      for name, (_, dx, dy) in BINARY.items() if name not in NO_GRADIENT],
    case("clip_by_value", lambda x, lo, hi: sd.clip_by_value(x, lo, hi),
         spec(2, 3), spec(3, domain=(-1.5, -0.5)), spec(domain=(0.5, 1.5))),
    case("where", lambda x, y: sd.where(x > y, x, y * 2), spec(2, 3), spec(3)),
    *[case(f"{name}{kwargs}", lambda x, name=name, kwargs=kwargs: getattr(sd, name)(x, **kwargs),
           spec(2, 3, 4)) for name in REDUCTIONS for kwargs in AXES],
    *[case(f"norm-{ord}-{axis}", lambda x, ord=ord, axis=axis: sd.norm(x, ord, axis), spec(3, 4))
      for ord, axis in [("euclidean", None), ("euclidean", 0), (1, None), (np.inf, 1),
                        (3, None), ("fro", (0, 1)), (1, (0, 1)), (np.inf, (0, 1))]],
    case("matmul", sd.matmul, spec(2, 3), spec(3, 4)),
    case("matmul-transposed", lambda a, b: sd.matmul(a, b, transpose_a=True, transpose_b=True),
         spec(3, 2), spec(4, 3)),
    case("matmul-batched", sd.matmul, spec(5, 2, 3), spec(3, 4)),
    case("transpose", lambda x: sd.transpose(x, perm=[2, 0, 1]), spec(2, 3, 4)),
    case("tensordot", lambda a, b: sd.tensordot(a, b, [[0, 2], [1, 0]]),
         spec(2, 3, 4), spec(4, 2, 5)),
    case("einsum", lambda a, b: sd.einsum("ij,jk->ki", a, b), spec(2, 3), spec(3, 4)),
    case("inv", sd.linalg.inv, matrix(3)),
    case("det", sd.linalg.det, matrix(3)),
    case("solve", sd.linalg.solve, matrix(3), spec(3, 2)),
    case("trace", sd.linalg.trace, spec(2, 3, 3)),
    case("slogdet", lambda a: sd.linalg.slogdet(a)[1], matrix(3)),
    case("diag_part", sd.linalg.diag_part, spec(2, 3, 3)),
    case("matrix_transpose", sd.linalg.matrix_transpose, spec(2, 3, 4)),
    case("reshape", lambda x: sd.reshape(x, [3, -1]), spec(2, 3)),
    case("expand_dims", lambda x: sd.expand_dims(x, 1), spec(2, 3)),
    case("squeeze", sd.squeeze, spec(1, 3, 1)),
    case("concat", lambda x, y: sd.concat([x, y, x], axis=1), spec(2, 3), spec(2, 1)),
    case("stack", lambda x, y: sd.stack([x, y], axis=-1), spec(2, 3), spec(2, 3)),
    case("unstack", lambda x: sd.unstack(x, axis=1)[1] * sd.unstack(x)[0], spec(3, 3)),
    case("tile", lambda x: sd.tile(x, [2, 3]), spec(2, 3)),
    case("broadcast_to", lambda x: sd.broadcast_to(x, [4, 2, 3]), spec(2, 1)),
    case("gather", lambda x: sd.gather(x, [2, 0, 2]), spec(3, 2)),
    case("gather-axis", lambda x: sd.gather(x, [[1, 1], [0, 2]], axis=1), spec(2, 3)),
    case("identity", sd.identity, spec(2, 3)),
    case("reverse", lambda x: sd.reverse(x, [0]), spec(2, 3)),
    case("cumsum", lambda x: sd.math.cumsum(x, axis=1), spec(2, 3)),
    case("add_n", lambda x, y: sd.add_n([x, y, x]), spec(2, 3), spec(2, 3)),
    case("cast", lambda x: sd.cast(x, sd.float64), spec(2, 3)),
    case("relu", sd.nn.relu, spec(2, 3)),
    case("nn.sigmoid", sd.nn.sigmoid, spec(2, 3)),
    case("nn.tanh", sd.nn.tanh, spec(2, 3)),
    case("nn.softplus", sd.nn.softplus, spec(2, 3)),
    case("softmax", sd.nn.softmax, spec(2, 3)),
    case("softmax-axis", lambda x: sd.nn.softmax(x, axis=0), spec(2, 3)),
    case("log_softmax", sd.nn.log_softmax, spec(2, 3)),
    case("l2_loss", sd.nn.l2_loss, spec(2, 3)),
    case("softmax_cross_entropy", sd.nn.softmax_cross_entropy_with_logits,
         spec(2, 3, domain=POSITIVE), spec(2, 3)),
    case("sparse_softmax_cross_entropy",
         lambda x: sd.nn.sparse_softmax_cross_entropy_with_logits(np.array([2, 0]), x),
         spec(2, 3)),
]


@pytest.mark.parametrize("f, specs", GRADIENTS)
def test_gradient_matches_finite_differences(f, specs):
    check_gradients(f, *[make() for make in specs])


# --- TensorFlow's gradient conventions -------------------------------------------------

def gradients(f, *values):
    xs = [sd.constant(np.asarray(v, np.float64)) for v in values]
    with sd.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    return tape.gradient(y, xs)


@pytest.mark.parametrize("f", [sd.floor, sd.ceil, sd.round, lambda x: sd.floordiv(x, 2.0),
                               lambda x: x // 2.0],
                         ids=["floor", "ceil", "round", "floordiv", "//"])
def test_rounding_has_no_gradient(f):
    assert gradients(f, [0.3, 1.7]) == [None]


def test_sign_has_a_zero_gradient():
    np.testing.assert_array_equal(gradients(sd.sign, [-1.0, 0.0, 2.0])[0].numpy(), [0, 0, 0])


@pytest.mark.parametrize("op, first", [(sd.maximum, True), (sd.minimum, True)])
def test_ties_of_maximum_and_minimum_go_to_the_first_argument(op, first):
    dx, dy = gradients(lambda x, y: sd.reduce_sum(op(x, y)), [1.0, 2.0, 3.0], [1.0, 0.0, 3.0])
    smaller_wins = op is sd.minimum
    np.testing.assert_array_equal(dx.numpy(), [1, 0 if smaller_wins else 1, 1])
    np.testing.assert_array_equal(dy.numpy(), [0, 1 if smaller_wins else 0, 0])


@pytest.mark.parametrize("op", [sd.reduce_max, sd.reduce_min])
def test_ties_of_reduce_max_and_min_share_the_gradient_evenly(op):
    x = [[3.0, 1.0, 3.0], [-1.0, -1.0, -1.0]]
    (dx,) = gradients(lambda x: sd.reduce_sum(op(x, axis=1)), x)
    hit = (np.array(x) == (np.max if op is sd.reduce_max else np.min)(x, axis=1, keepdims=True))
    np.testing.assert_allclose(dx.numpy(), hit / hit.sum(axis=1, keepdims=True))


def test_relu_and_abs_have_zero_gradient_at_zero():
    for op in (sd.nn.relu, sd.abs, np.abs, abs):
        np.testing.assert_array_equal(
            gradients(lambda x: sd.reduce_sum(op(x)), [-2.0, 0.0, 2.0])[0].numpy(),
            [0 if op is sd.nn.relu else -1, 0, 1])


def test_clip_by_value_passes_the_gradient_at_its_bounds():
    dx, dlo, dhi = gradients(lambda x, lo, hi: sd.reduce_sum(sd.clip_by_value(x, lo, hi)),
                             [-1.0, 0.0, 0.5, 1.0, 2.0], 0.0, 1.0)
    np.testing.assert_array_equal(dx.numpy(), [0, 1, 1, 1, 0])
    assert dlo.numpy() == 1 and dhi.numpy() == 1


def test_reduce_prod_gradient_is_exact_with_zeros():
    (dx,) = gradients(lambda x: sd.reduce_sum(sd.reduce_prod(x, axis=1)),
                      [[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    np.testing.assert_array_equal(dx.numpy(), [[6, 0, 0], [0, 0, 0], [8, 4, 2]])


def complex_tf_gradient(loss, z, h=1e-6):
    """TensorFlow's gradient of a real ``loss`` at complex ``z``: dL/dRe z + i dL/dIm z."""
    return (numerical_grad(lambda x: loss(x + 1j * z.imag), z.real, h)
            + 1j * numerical_grad(lambda y: loss(z.real + 1j * y), z.imag, h))


COMPLEX_LOSSES = {  # d/dz of each, in TensorFlow's convention, is in the comment
    "real(z conj z)": lambda z: sd.reduce_sum(sd.math.real(z * sd.math.conj(z))),  # 2z
    "|z|^2": lambda z: sd.reduce_sum(sd.abs(z) ** 2),  # 2z
    "|z|": lambda z: sd.reduce_sum(sd.abs(z)),  # z / |z|
    "norm": lambda z: sd.norm(z),  # z / norm
    "real(sin z)": lambda z: sd.reduce_sum(sd.math.real(sd.sin(z))),  # conj(cos z)
    "imag(z^3)": lambda z: sd.reduce_sum(sd.math.imag(z ** 3)),  # i conj(3 z^2)
    "|exp(z) / z|": lambda z: sd.reduce_sum(sd.abs(sd.exp(z) / z)),
    "real(z @ z)": lambda z: sd.reduce_sum(sd.math.real(sd.matmul(z, z))),
    # z / |z| is not holomorphic: both Wirtinger derivatives count
    "real((1+2i) sign z)": lambda z: sd.reduce_sum(sd.math.real((1 + 2j) * sd.math.sign(z))),
    "imag(sign z)": lambda z: sd.reduce_sum(sd.math.imag(sd.math.sign(z))),
    "imag(sigmoid z)": lambda z: sd.reduce_sum(sd.math.imag(sd.sigmoid(z))),
}


@pytest.mark.parametrize("name", COMPLEX_LOSSES)
def test_complex_gradients_follow_tensorflows_convention(name):
    loss = COMPLEX_LOSSES[name]
    z = draw((2, 2)) + 1j * draw((2, 2))
    t = sd.constant(z)
    with sd.GradientTape() as tape:
        tape.watch(t)
        y = loss(t)
    dz = tape.gradient(y, t)
    assert dz.dtype == np.complex128
    np.testing.assert_allclose(dz.numpy(), complex_tf_gradient(lambda v: float(loss(v)), z),
                               rtol=1e-6, atol=1e-8)


def test_complex_sigmoid_is_the_formula():
    z = draw((3,)) + 1j * draw((3,))
    np.testing.assert_allclose(sd.sigmoid(z).numpy(), 1 / (1 + np.exp(-z)), rtol=1e-14)


def test_complex_gradient_of_abs_squared_is_twice_z():
    z = sd.constant(np.array([1 + 2j, -3j, 0.5 + 0j]))
    for loss in (COMPLEX_LOSSES["|z|^2"], COMPLEX_LOSSES["real(z conj z)"]):
        with sd.GradientTape() as tape:
            tape.watch(z)
            y = loss(z)
        np.testing.assert_allclose(tape.gradient(y, z).numpy(), 2 * z.numpy())


# --- keyword arguments and signatures ---------------------------------------------------

def test_ops_take_tensorflows_keyword_arguments():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert sd.reduce_sum(input_tensor=x, axis=0).numpy().tolist() == [4.0, 6.0]
    assert sd.reduce_mean(input_tensor=[1.0, 2.0]).dtype == np.float32
    assert sd.nn.relu(features=x).shape == (2, 2)
    assert sd.math.softplus(features=x).shape == (2, 2)
    assert sd.math.real(input=x).shape == (2, 2)
    assert sd.matmul(a=x, b=x, transpose_b=True).shape == (2, 2)
    assert sd.add(x, x, name="sum").shape == (2, 2)
    with pytest.raises(TypeError):
        sd.add(x, z=x)


# --- the names of API.md section 2 ----------------------------------------------------

MATH = ("add subtract multiply divide truediv negative abs square sqrt rsqrt exp log log1p "
        "expm1 pow sin cos tan tanh sinh cosh sigmoid softplus maximum minimum sign "
        "reciprocal clip_by_value where equal not_equal greater greater_equal less less_equal "
        "floor ceil round").split()
REDUCTION_NAMES = ("reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_logsumexp "
                   "norm argmax argmin").split()
API = {
    sd: MATH + REDUCTION_NAMES + (
        "matmul transpose tensordot einsum reshape expand_dims squeeze concat stack unstack "
        "tile broadcast_to gather shape size rank ones zeros ones_like zeros_like fill eye "
        "range linspace stop_gradient identity custom_gradient UnconnectedGradients cast "
        "constant convert_to_tensor Variable Tensor IndexedSlices GradientTape").split(),
    sd.math: MATH + REDUCTION_NAMES,
    sd.linalg: "matmul inv det solve norm trace einsum tensordot".split(),
    sd.nn: ("relu sigmoid tanh softmax log_softmax l2_loss softmax_cross_entropy_with_logits "
            "sparse_softmax_cross_entropy_with_logits").split(),
    sd.random: "normal uniform set_seed".split(),
}


@pytest.mark.parametrize("namespace", API, ids=lambda m: m.__name__)
def test_every_op_of_the_api_exists(namespace):
    missing = [name for name in API[namespace] if not callable(getattr(namespace, name, None))]
    assert not missing


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reductions_over_nothing_are_their_identities(dtype):
    """reduce_max/reduce_min of an empty tensor are the dtype's lowest/highest value and
    reduce_logsumexp's is -inf, as in TensorFlow (they raised); the gradient is the empty
    input's zeros."""
    x = sd.constant(np.zeros((0, 3), dtype))
    low, high = (-np.inf, np.inf) if dtype == np.float32 else (
        np.iinfo(dtype).min, np.iinfo(dtype).max)
    for op, bound in ((sd.reduce_max, low), (sd.reduce_min, high)):
        for kwargs, shape in (({"axis": 0}, (3,)), ({}, ()), ({"axis": 0, "keepdims": True},
                                                             (1, 3))):
            out = op(x, **kwargs)
            assert out.dtype == dtype and out.shape == shape
            assert (out.numpy() == bound).all()
    if dtype == np.float32:
        with sd.GradientTape() as tape, np.errstate(divide="ignore"):  # log(0)
            tape.watch(x)
            y = sd.reduce_sum(sd.reduce_logsumexp(x, axis=0)) + sd.reduce_max(x)
            assert sd.reduce_logsumexp(x, axis=0).numpy().tolist() == [-np.inf] * 3
        assert tape.gradient(y, x).shape == (0, 3)


def test_linspace_of_integers_is_float64():
    """TensorFlow makes float64 of integer bounds (float32 bounds stay float32)."""
    assert sd.linspace(0, 1, 3).dtype == np.float64
    assert sd.linspace(0.0, 1.0, 3).dtype == np.float32
    np.testing.assert_array_equal(sd.linspace(0, 1, 3).numpy(), [0.0, 0.5, 1.0])


def test_floordiv_and_floormod_as_tensorflow():
    """floordiv is ``floor(x / y)`` for floats (NumPy's floor_divide gives 9 for 1 // 0.1 and
    nan for inf // 2) and has no gradient; an integer zero divisor is an InvalidArgumentError
    (NumPy gives 0); floormod's gradient is ``(1, -floor(x / y))``."""
    np.testing.assert_array_equal(
        sd.math.floordiv(sd.constant([1.0, np.inf, -7.0]), [0.1, 2.0, 2.0]).numpy(),
        [10.0, np.inf, -4.0])
    assert sd.math.floordiv(sd.constant([7, -7]), 2).numpy().tolist() == [3, -4]
    for op in (sd.math.floordiv, sd.math.floormod, sd.math.mod):
        with pytest.raises(sd.errors.InvalidArgumentError, match="division by zero"):
            op(sd.constant([4, 5]), sd.constant([1, 0]))
    x, y = sd.constant([5.0, -4.0]), sd.constant([3.0, 3.0])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        mod, div = sd.math.floormod(x, y), sd.math.floordiv(x, y)
    assert mod.numpy().tolist() == [2.0, 2.0]
    assert [g.numpy().tolist() for g in tape.gradient(mod, [x, y])] == [[1, 1], [-1, 2]]
    assert tape.gradient(div, [x, y]) == [None, None]


def test_the_spectral_norm_of_matrices():
    """``norm(x, ord=2, axis=[-2, -1])`` is the largest singular value (it was refused), its
    gradient ``u1 v1^T``; unsupported matrix norms are TensorFlow's ValueError."""
    m = RNG.uniform(-2, 2, (2, 3, 4))
    x = sd.constant(m)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.norm(x, ord=2, axis=[-2, -1])
    u, s, vh = np.linalg.svd(m)
    np.testing.assert_allclose(y.numpy(), s[:, 0], rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               u[:, :, :1] @ vh[:, :1, :], rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="supported matrix norm"):
        sd.norm(x, ord="nuc", axis=[1, 2])


def test_fill_and_linspace_pass_gradients_to_their_values():
    # TensorFlow: d sum(fill(dims, v))/dv is the count; a linspace point k of n-1 is
    # (1 - k/(n-1)) start + k/(n-1) stop
    v, a, b = sd.constant(1.5), sd.constant(0.5), sd.constant(2.0)
    weights = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([v, a, b])
        filled = sd.reduce_sum(sd.fill([2, 3], v))
        spaced = sd.reduce_sum(sd.linspace(a, b, 5) * weights)
    assert float(tape.gradient(filled, v)) == 6.0
    t = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose([float(g) for g in tape.gradient(spaced, [a, b])],
                               [np.sum((1 - t) * weights), np.sum(t * weights)], rtol=1e-6)
    with pytest.raises(sd.errors.InvalidArgumentError):
        sd.fill([2], [1.0, 2.0])

"""sd.nn's activations and losses beyond relu and softmax, and sd.math's elementwise special
and zero-safe ops: values and dtypes against NumPy, tape gradients (first and second)
against finite differences and analytic values, compiled against eager, and the
conventions at the edge points, which are TensorFlow's (each test's docstring says which:
the numbers were read from TensorFlow 2 on the same inputs)."""
import math

import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad, numerical_jacobian

special = pytest.importorskip("scipy.special")
RNG = np.random.default_rng(7)
ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def grads(f, *inputs):
    """(f(*inputs), the gradients of sum(f) w.r.t. each input) on the tape."""
    xs = [sd.constant(x) for x in inputs]
    with sd.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
        total = sd.reduce_sum(y)
    return y.numpy(), [None if g is None else g.numpy() for g in tape.gradient(total, xs)]


def second(f, x):
    """The elementwise second derivative of an elementwise f at x, on nested tapes (None
    where the first derivative does not depend on x: piecewise linear f)."""
    x = sd.constant(x)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = sd.reduce_sum(f(x))
        d = inner.gradient(y, x)
    dd = outer.gradient(d, x)
    return None if dd is None else dd.numpy()


def reference_selu(x):
    return SCALE * np.where(x > 0, x, ALPHA * np.expm1(x))


def reference_gelu(x):
    return 0.5 * x * (1 + special.erf(x / math.sqrt(2)))


ELEMENTWISE = {  # name: (the op, a NumPy reference, domain)
    "relu6": (sd.nn.relu6, lambda x: np.clip(x, 0, 6), (-2, 8)),
    "elu": (sd.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), (-3, 3)),
    "selu": (sd.nn.selu, reference_selu, (-3, 3)),
    "leaky_relu": (sd.nn.leaky_relu,  # alpha is a float32 attribute, as in TensorFlow
                   lambda x: np.where(x > 0, x, float(np.float32(0.2)) * x), (-3, 3)),
    "leaky_relu(1.5)": (lambda x: sd.nn.leaky_relu(x, alpha=1.5),
                        lambda x: np.where(x > 0, x, 1.5 * x), (-3, 3)),
    "silu": (sd.nn.silu, lambda x: x / (1 + np.exp(-x)), (-4, 4)),
    "swish(beta)": (lambda x: sd.nn.swish(x, beta=0.7), lambda x: x / (1 + np.exp(-0.7 * x)),
                    (-4, 4)),
    "gelu": (sd.nn.gelu, reference_gelu, (-4, 4)),
    "gelu(approximate)": (
        lambda x: sd.nn.gelu(x, approximate=True),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
        (-4, 4)),
    "softsign": (sd.nn.softsign, lambda x: x / (1 + np.abs(x)), (-3, 3)),
    "log_sigmoid": (sd.math.log_sigmoid, lambda x: -np.logaddexp(0, -x), (-30, 30)),
    "erf": (sd.math.erf, special.erf, (-3, 3)),
    "erfc": (sd.math.erfc, special.erfc, (-3, 3)),
    "lgamma": (sd.math.lgamma, special.gammaln, (0.2, 5)),
    "digamma": (sd.math.digamma, special.digamma, (0.2, 5)),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_values_dtypes_and_gradients(name):
    op, reference, domain = ELEMENTWISE[name]
    x = RNG.uniform(*domain, (3, 4))
    x32 = x.astype(np.float32)
    assert op(sd.constant(x32)).dtype == np.float32
    np.testing.assert_allclose(op(x32).numpy(), reference(x32), rtol=2e-6, atol=1e-6)
    value, (g,) = grads(op, x)
    np.testing.assert_allclose(value, reference(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(lambda v: np.sum(reference(v)), x),
                               rtol=1e-6, atol=1e-8)
    slope = lambda v: grads(op, v)[1][0]  # noqa: E731  (elementwise: the Hessian is diagonal)
    curvature = second(op, x)
    if curvature is None:  # piecewise linear: its slope is no function of x
        curvature = np.zeros_like(x)
    np.testing.assert_allclose(curvature, np.diag(numerical_jacobian(slope, x).reshape(
        x.size, x.size)).reshape(x.shape), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["relu6", "elu", "selu", "silu", "gelu", "softsign"])
def test_activations_compile_like_the_tape_and_batch_jacobian(name):
    op = ELEMENTWISE[name][0]

    def loss(x):
        return sd.reduce_sum(op(x) * x)
    x = RNG.uniform(-3, 3, (2, 3))
    _, (eager,) = grads(lambda t: loss(t), x)
    np.testing.assert_allclose(sd.grad(loss)(x), eager, rtol=1e-12)
    t = sd.constant(x)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(t)
        y = op(t)
    slope = grads(op, x)[1][0]
    np.testing.assert_allclose(tape.batch_jacobian(y, t).numpy(),
                               np.einsum("bi,ij->bij", slope, np.eye(3)), rtol=1e-12)
    np.testing.assert_allclose(tape.jacobian(y, t).numpy().reshape(6, 6), np.diag(slope.ravel()))


def test_relu6_gradient_is_zero_at_both_kinks_as_tensorflows():
    """relu6's gradient is 0 at 0 and at 6 (TensorFlow's Relu6Grad: 0 < x < 6), and its
    second derivative is 0 everywhere."""
    x = np.array([-1.0, 0.0, 1e-30, 3.0, 6.0, 7.0], np.float32)
    value, (g,) = grads(sd.nn.relu6, x)
    np.testing.assert_array_equal(value, np.float32([0, 0, 1e-30, 3, 6, 6]))
    np.testing.assert_array_equal(g, [0, 0, 1, 1, 0, 0])
    assert second(sd.nn.relu6, x).tolist() == [0] * 6  # TensorFlow's zeros (not None)
    assert sd.nn.relu6(sd.constant([-1, 3, 8])).numpy().tolist() == [0, 3, 6]


def test_leaky_relu_gradient_at_zero_is_alpha_as_tensorflows():
    """leaky_relu's gradient at 0 is alpha (TensorFlow's LeakyReluGrad: x > 0 ? 1 : alpha),
    for alpha above 1 too; integers are taken as float32."""
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    assert grads(sd.nn.leaky_relu, x)[1][0].tolist() == pytest.approx([0.2, 0.2, 1.0])
    assert grads(lambda t: sd.nn.leaky_relu(t, 1.5), x)[1][0].tolist() == [1.5, 1.5, 1.0]
    assert sd.nn.leaky_relu(sd.constant([-2, 3])).dtype == np.float32


def test_elu_and_selu_at_zero_are_tensorflows():
    """At 0, elu's gradient is 1 and selu's is SCALE (TensorFlow's EluGrad and SeluGrad take
    the right side: y < 0 ? ... : 1 or SCALE), and both second derivatives are 0.  Below 0
    they compute exp(x) - 1 as TensorFlow's kernels do: elu(-1e-30) is 0 in float32 (expm1
    would give -1e-30), so its second derivative there is 0 too, as in TensorFlow."""
    x = np.array([-1.0, -1e-30, 0.0, 2.0], np.float32)
    value, (g,) = grads(sd.nn.elu, x)
    np.testing.assert_array_equal(value, [np.exp(np.float32(-1)) - 1, 0, 0, 2])
    np.testing.assert_allclose(g, [np.exp(-1), 1, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(second(sd.nn.elu, x), [np.exp(-1), 0, 0, 0], rtol=1e-6)
    _, (g,) = grads(sd.nn.selu, x)
    np.testing.assert_allclose(g, [SCALE * ALPHA * np.exp(-1), SCALE, SCALE, SCALE], rtol=1e-6)
    np.testing.assert_allclose(second(sd.nn.selu, x), [SCALE * ALPHA * np.exp(-1), 0, 0, 0],
                               rtol=1e-6)


def test_smooth_activations_at_zero():
    """silu'(0) = 1/2, silu''(0) = 1/2, gelu'(0) = 1/2, gelu''(0) = sqrt(2/pi), softsign'(0)
    = 1, log_sigmoid'(0) = 1/2 (TensorFlow's values); log_sigmoid keeps its slope far out."""
    z = np.zeros(1)
    assert grads(sd.nn.silu, z)[1][0][0] == 0.5 and second(sd.nn.silu, z)[0] == 0.5
    assert grads(sd.nn.gelu, z)[1][0][0] == 0.5
    assert second(sd.nn.gelu, z)[0] == pytest.approx(math.sqrt(2 / math.pi), rel=1e-12)
    assert grads(sd.nn.softsign, z)[1][0][0] == 1.0
    assert grads(sd.math.log_sigmoid, z)[1][0][0] == 0.5
    value, (g,) = grads(sd.math.log_sigmoid, np.array([-800.0, 800.0]))
    np.testing.assert_allclose(value, [-800.0, 0.0])
    np.testing.assert_allclose(g, [1.0, 0.0])


def test_sigmoid_cross_entropy_with_logits():
    """max(x, 0) - x z + log(1 + exp(-|x|)): stable for large logits; d/dlogits is
    sigmoid(x) - z (at 0 too: 1/2 - z, as in TensorFlow), d/dlabels is -x."""
    z = np.array([0.0, 1.0, 0.3, 1.0, 0.5])
    x = np.array([0.0, 0.0, -2.0, 50.0, -800.0])
    value, (dz, dx) = grads(
        lambda a, b: sd.nn.sigmoid_cross_entropy_with_logits(labels=a, logits=b), z, x)
    sigmoid = special.expit(x)
    np.testing.assert_allclose(value, np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))))
    np.testing.assert_allclose(dx, sigmoid - z, atol=1e-15)
    np.testing.assert_allclose(dz, -x)
    with pytest.raises(ValueError, match="same shape"):
        sd.nn.sigmoid_cross_entropy_with_logits(labels=[1.0], logits=[1.0, 2.0])


def test_l2_normalize():
    """x / sqrt(max(sum(x^2), epsilon)) over axis; at zero the gradient is 1/sqrt(epsilon)
    (TensorFlow's: 1e6 with its default epsilon 1e-12)."""
    x = RNG.uniform(-2, 2, (3, 4))
    for op in (sd.math.l2_normalize, sd.nn.l2_normalize, sd.linalg.l2_normalize):
        np.testing.assert_allclose(op(x, axis=1).numpy(),
                                   x / np.linalg.norm(x, axis=1, keepdims=True))
    np.testing.assert_allclose(sd.math.l2_normalize(x).numpy(), x / np.linalg.norm(x))
    w = RNG.standard_normal(x.shape)
    _, (g,) = grads(lambda t: sd.math.l2_normalize(t, axis=-1) * w, x)
    f = lambda v: np.sum(w * v / np.linalg.norm(v, axis=-1, keepdims=True))  # noqa: E731
    np.testing.assert_allclose(g, numerical_grad(f, x), rtol=1e-6, atol=1e-8)
    zero = np.zeros((1, 2), np.float32)
    value, (g,) = grads(lambda t: sd.math.l2_normalize(t, axis=1), zero)
    np.testing.assert_array_equal(value, zero)
    np.testing.assert_allclose(g, [[1e6, 1e6]], rtol=1e-6)


# --- the zero-safe binary ops ---------------------------------------------------------

A = np.array([0.0, 0.0, 2.0, 2.0, -3.0, 0.0, np.nan, np.inf, 1.0])
B = np.array([0.0, 2.0, 0.0, 4.0, 0.5, np.nan, 0.0, 0.0, np.inf])


def partials(op, x=A, y=B):
    with np.errstate(all="ignore"):
        return grads(op, x, y)


@pytest.mark.parametrize("name, reference, dx, dy", [
    ("divide_no_nan", np.divide, (-2, 2), (0.5, 2)),
    ("multiply_no_nan", np.multiply, (-2, 2), (-2, 2)),
    ("xlogy", special.xlogy, (-2, 2), (0.5, 2)),
    ("xdivy", np.divide, (-2, 2), (0.5, 2)),
    ("xlog1py", special.xlog1py, (-2, 2), (0.5, 2))])
def test_zero_safe_ops_away_from_zero(name, reference, dx, dy):
    op = getattr(sd.math, name)
    x, y = RNG.uniform(*dx, (2, 3)), RNG.uniform(*dy, (3,))
    assert op(x.astype(np.float32), y.astype(np.float32)).dtype == np.float32
    value, (gx, gy) = grads(op, x, y)
    np.testing.assert_allclose(value, reference(x, y))
    np.testing.assert_allclose(gx, numerical_grad(lambda v: np.sum(reference(v, y)), x),
                               rtol=1e-6)
    np.testing.assert_allclose(gy, numerical_grad(lambda v: np.sum(reference(x, v)), y),
                               rtol=1e-6)
    assert op(sd.constant(x.astype(np.float32)), 2.0).dtype == np.float32  # 2.0 takes x's
    if name != "divide_no_nan":  # which divides integers as float64
        with pytest.raises(TypeError, match="float"):
            op(sd.constant([1]), sd.constant([2]))


def test_divide_no_nan_at_zero_divisors_as_tensorflows():
    """0 where y is 0, whatever x is (nan, inf), and both partial derivatives are 0 there
    (TensorFlow's DivNoNanGrad: div_no_nan(g, y), g div_no_nan(div_no_nan(-x, y), y));
    integers divide as float64, as in TensorFlow."""
    value, (gx, gy) = partials(sd.math.divide_no_nan)
    np.testing.assert_array_equal(value, [0, 0, 0, 0.5, -6, np.nan, 0, 0, 0])
    np.testing.assert_array_equal(gx, [0, 0.5, 0, 0.25, 2, np.nan, 0, 0, 0])
    np.testing.assert_array_equal(gy, [0, 0, 0, -0.125, 12, np.nan, 0, 0, 0])
    out = sd.math.divide_no_nan(sd.constant([1, 2]), sd.constant([0, 1]))
    assert out.dtype == np.float64 and out.numpy().tolist() == [0.0, 2.0]


def test_multiply_no_nan_as_tensorflows():
    """0 where y is 0, even for x = nan or inf; d/dx = mul_no_nan(g, y) and d/dy =
    mul_no_nan(x, g), so d/dy is x (nan for x = nan) wherever g is not 0."""
    value, (gx, gy) = partials(sd.math.multiply_no_nan)
    np.testing.assert_array_equal(value, [0, 0, 0, 8, -1.5, np.nan, 0, 0, np.inf])
    np.testing.assert_array_equal(gx, [0, 2, 0, 4, 0.5, np.nan, 0, 0, np.inf])
    np.testing.assert_array_equal(gy, A)


def test_xlogy_xdivy_xlog1py_at_zero_as_tensorflows():
    """0 where x is 0 whatever y is, and there d/dx is 0 (not log y: TensorFlow's XlogyGrad
    is xlogy(x != 0, y) g) and d/dy is 0; at y = 0 with x != 0, log 0 = -inf."""
    value, (gx, gy) = partials(sd.math.xlogy)
    np.testing.assert_array_equal(value, [0, 0, -np.inf, 2 * np.log(4), -3 * np.log(0.5), 0,
                                          np.nan, -np.inf, np.inf])
    np.testing.assert_array_equal(gx, [0, 0, -np.inf, np.log(4), np.log(0.5), 0, -np.inf,
                                       -np.inf, np.inf])
    np.testing.assert_array_equal(gy, [0, 0, np.inf, 0.5, -6, 0, np.nan, np.inf, 0])
    value, (gx, gy) = partials(sd.math.xdivy)
    np.testing.assert_array_equal(value, [0, 0, np.inf, 0.5, -6, 0, np.nan, np.inf, 0])
    np.testing.assert_array_equal(gx, [0, 0, np.inf, 0.25, 2, 0, np.inf, np.inf, 0])
    np.testing.assert_array_equal(gy, [0, 0, -np.inf, -0.125, 12, 0, np.nan, -np.inf, 0])
    value, (gx, gy) = partials(sd.math.xlog1py)
    np.testing.assert_array_equal(gx[:3], [0, 0, 0])
    np.testing.assert_array_equal(gy[:4], [0, 0, 2, 0.4])


def test_zero_safe_second_derivatives_keep_the_conventions():
    """d2/dy2 of xlogy is -x / y^2 (0 at x = 0); d2/dx dy of divide_no_nan is -1 / y^2
    (0 at y = 0): the rules are written with the ops themselves."""
    x, y = sd.constant([0.0, 2.0, 3.0]), sd.constant([0.0, 4.0, 0.5])
    with sd.GradientTape(persistent=True) as outer:
        outer.watch([x, y])
        with sd.GradientTape() as inner:
            inner.watch([x, y])
            total = sd.reduce_sum(sd.math.xlogy(x, y) + sd.math.divide_no_nan(x, y))
        gx, gy = inner.gradient(total, [x, y])
    np.testing.assert_allclose(outer.gradient(gy, x).numpy(), [0, 1 / 4 - 1 / 16, 2 - 4])
    with np.errstate(all="ignore"):
        expected = np.where(x.numpy() == 0, 0, -x.numpy() / y.numpy() ** 2) + np.where(
            y.numpy() == 0, 0, 2 * x.numpy() / y.numpy() ** 3)
    np.testing.assert_allclose(outer.gradient(gy, y).numpy(), expected)


def test_lgamma_and_digamma_at_the_poles_as_tensorflows():
    """At the poles 0, -1, -2, ... digamma is nan, and so is lgamma's gradient (TensorFlow's;
    scipy's digamma(0) is -inf); lgamma there is +inf, and lgamma(-inf) is +inf."""
    x = np.array([0.0, -1.0, -2.5, 0.5, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        value, (g,) = grads(sd.math.lgamma, x)
        d, (dd,) = grads(sd.math.digamma, x)
    np.testing.assert_array_equal(value[[0, 1, 4]], [np.inf, np.inf, np.inf])
    assert np.isnan(g[[0, 1]]).all() and np.isnan(d[[0, 1]]).all()
    np.testing.assert_allclose(g[2:4], special.digamma(x[2:4]), rtol=1e-6)
    np.testing.assert_array_equal(dd[[0, 1]], [np.inf, np.inf])
    assert d.dtype == dd.dtype == np.float32


def test_softsign_acosh_and_leaky_relu_follow_tensorflow_at_the_edges():
    """softsign's gradient is ``1 / (1 + |x|)**2`` (0 at +-inf, not nan); acosh's is
    ``1 / sinh(acosh(x))`` (nan outside its domain, not a number); leaky_relu's alpha is
    a float32 attribute in TensorFlow, so float64 inputs see ``float32(0.2)``."""
    x = np.array([-3.0, 0.0, 0.5, np.inf, -np.inf])
    with np.errstate(invalid="ignore"):
        _, (g,) = grads(sd.nn.softsign, x)
    np.testing.assert_array_equal(g, 1 / (1 + np.abs(x)) ** 2)
    check = np.array([-3.0, 0.5, 2.0])
    np.testing.assert_allclose(grads(sd.nn.softsign, check)[1][0],
                               numerical_grad(lambda t: np.sum(t / (1 + np.abs(t))), check),
                               rtol=1e-6)
    with np.errstate(invalid="ignore"):
        _, (g,) = grads(sd.acosh, np.array([-1.0, 0.5, 2.0, -np.inf]))
    assert np.isnan(g[[0, 1, 3]]).all() and g[2] == pytest.approx(1 / np.sqrt(3), rel=1e-14)
    y, (g,) = grads(sd.nn.leaky_relu, np.array([-1.5, 2.0]))
    alpha = float(np.float32(0.2))
    assert y.tolist() == [-1.5 * alpha, 2.0] and g.tolist() == [alpha, 1.0]


@pytest.mark.parametrize("op", [sd.nn.relu, sd.nn.relu6, sd.nn.leaky_relu],
                         ids=["relu", "relu6", "leaky_relu"])
def test_second_derivatives_of_piecewise_linear_activations_are_zeros(op):
    """TensorFlow's gradient of ReluGrad (and of relu6's, leaky_relu's) is zeros in x, not
    None: a Hessian of a relu network is zeros, not a missing value."""
    x0 = np.array([-1.5, -0.5, 0.0, 0.5, 3.0, 7.0])
    x = sd.constant(x0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = sd.reduce_sum(op(x) * x0)
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
    assert h is not None and h.numpy().tolist() == [0.0] * 6
    np.testing.assert_allclose(g.numpy(), x0 * numerical_grad(
        lambda v: np.sum(op(sd.constant(v)).numpy()), x0 + 1e-3), atol=1e-6)

"""The TensorFlow ops of training loops srcdiff added (clip_by_norm, clip_by_global_norm,
moments, batch_normalization, bias_add, polyval, scalar_mul, count_nonzero): values,
tape gradients against finite differences, compiled against eager, and TensorFlow's
numbers at the edges (each docstring says which: read from TensorFlow 2 on the same
inputs)."""
import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad

RNG = np.random.default_rng(5)


def grad_of(f, x):
    """The tape's gradient of the scalar f at x."""
    t = sd.constant(x)
    with sd.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    return tape.gradient(y, t).numpy()


def check(f, x):
    np.testing.assert_allclose(grad_of(f, x), numerical_grad(lambda v: float(f(v)), x),
                               rtol=1e-6, atol=1e-8)


def test_clip_by_norm():
    """t * c / max(norm, c); a zero tensor passes with gradient 1 and no nan, and a norm
    equal to c sends the gradient through the norm (TensorFlow: [-0.32, 0.24] for [3, 4],
    c = 5, weights [1, 2])."""
    x, w = RNG.uniform(-2, 2, (2, 3)), RNG.standard_normal((2, 3))
    norm = np.linalg.norm(x)
    np.testing.assert_allclose(sd.clip_by_norm(x, 1.0).numpy(), x / norm)
    np.testing.assert_allclose(sd.clip_by_norm(x, 10.0).numpy(), x)
    rows = np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(sd.clip_by_norm(x, 1.0, axes=[1]).numpy(),
                               x / np.maximum(rows, 1.0))
    for c, axes in ((1.0, None), (1.0, [1]), (10.0, None)):
        check(lambda t: sd.reduce_sum(sd.clip_by_norm(t, c, axes=axes) * w), x)
    np.testing.assert_array_equal(
        grad_of(lambda t: sd.reduce_sum(sd.clip_by_norm(t, 3.0) * w), np.zeros((2, 3))), w)
    np.testing.assert_allclose(grad_of(lambda t: sd.reduce_sum(
        sd.clip_by_norm(t, 5.0) * [1.0, 2.0]), np.array([3.0, 4.0])), [-0.32, 0.24])


def test_clip_by_global_norm():
    """Every tensor scaled by c / max(global norm, c), None kept; the norm is returned
    (and differentiable); an infinite norm gives nan, as in TensorFlow."""
    a, b = RNG.uniform(-2, 2, 3), RNG.uniform(-2, 2, (2, 2))
    norm = np.sqrt(np.sum(a ** 2) + np.sum(b ** 2))
    (ca, none, cb), n = sd.clip_by_global_norm([a, None, b], 1.0)
    assert none is None and n.numpy() == pytest.approx(norm)
    np.testing.assert_allclose(ca.numpy(), a / norm)
    np.testing.assert_allclose(cb.numpy(), b / norm)
    assert sd.linalg.global_norm([a, None, b]).numpy() == pytest.approx(norm)

    def loss(t):
        (u, v), n = sd.clip_by_global_norm([t, t * 2.0], 3.0)
        return sd.reduce_sum(u * [1.0, 2.0, 3.0]) + sd.reduce_sum(v) + n
    check(loss, a)
    with np.errstate(invalid="ignore"):
        (c,), n = sd.clip_by_global_norm([np.array([np.inf, 1.0])], 1.0)
    assert np.isnan(c.numpy()).all()
    with pytest.raises(TypeError, match="sequence"):
        sd.clip_by_global_norm(sd.constant([1.0]), 1.0)


def test_moments_and_batch_normalization():
    x = RNG.uniform(-2, 2, (4, 3))
    mean, variance = sd.nn.moments(x, axes=[0])
    np.testing.assert_allclose(mean.numpy(), x.mean(0))
    np.testing.assert_allclose(variance.numpy(), x.var(0))
    mean, variance = sd.nn.moments(x, axes=[0, 1], keepdims=True)
    assert mean.shape == (1, 1) and variance.numpy() == pytest.approx(x.var())
    w = RNG.standard_normal(3)
    check(lambda t: sd.reduce_sum(sd.nn.moments(t, axes=[0])[1] * w), x)
    offset, scale = RNG.uniform(-1, 1, 3), RNG.uniform(0.5, 2, 3)

    def normalized(t):
        m, v = sd.nn.moments(t, axes=[0])
        return sd.nn.batch_normalization(t, m, v, offset, scale, 1e-3)
    expected = (x - x.mean(0)) * scale / np.sqrt(x.var(0) + 1e-3) + offset
    np.testing.assert_allclose(normalized(x).numpy(), expected)
    check(lambda t: sd.reduce_sum(normalized(t) ** 3), x)
    plain = sd.nn.batch_normalization(x, 1.0, 2.0, None, None, 0.0).numpy()
    np.testing.assert_allclose(plain, (x - 1.0) / np.sqrt(2.0))
    np.testing.assert_allclose(sd.grad(lambda t: sd.reduce_sum(normalized(t) ** 3))(x),
                               grad_of(lambda t: sd.reduce_sum(normalized(t) ** 3), x),
                               rtol=1e-10)


def test_bias_add():
    value, bias = RNG.uniform(-1, 1, (2, 3, 4)), RNG.uniform(-1, 1, 4)
    np.testing.assert_allclose(sd.nn.bias_add(value, bias).numpy(), value + bias)
    first = sd.nn.bias_add(value, bias[:3], data_format="NCHW").numpy()
    np.testing.assert_allclose(first, value + bias[:3, None])
    check(lambda b: sd.reduce_sum(sd.nn.bias_add(value, b) ** 2), bias)
    with pytest.raises(ValueError, match="channel"):
        sd.nn.bias_add(value, bias[:3])


def test_polyval_scalar_mul_count_nonzero():
    x = RNG.uniform(-2, 2, 5)
    np.testing.assert_allclose(sd.math.polyval([1.0, 2.0, 3.0], x).numpy(), x ** 2 + 2 * x + 3)
    check(lambda t: sd.reduce_sum(sd.math.polyval([1.0, -2.0, 0.5, 3.0], t)), x)
    assert sd.math.polyval([], sd.constant([1.0, 2.0])).numpy().tolist() == [0.0, 0.0]
    check(lambda t: sd.reduce_sum(sd.math.scalar_mul(0.5, t) ** 2), x)
    out = sd.math.count_nonzero([[0.0, 1.0], [2.0, 0.0]], axis=1)
    assert out.dtype == np.int64 and out.numpy().tolist() == [1, 1]
    assert sd.math.count_nonzero(sd.constant([0, 1, 2])).numpy() == 2

"""``sd.keras`` optimizers take the steps their papers and TensorFlow's docs define,
checked on constant gradients, where each step has a closed form."""
import numpy as np
import pytest

import srcdiff as sd


def steps(optimizer, gradient, count, start=(1.0, -2.0, 0.5)):
    """The Variable after ``count`` applications of the constant ``gradient``."""
    v = sd.Variable(np.array(start))
    for _ in range(count):
        optimizer.apply_gradients([(sd.constant(np.array(gradient)), v)])
    return v.numpy() - np.array(start)


@pytest.mark.parametrize("count", [1, 2, 5])
def test_adam_moves_by_the_learning_rate_against_a_constant_gradient(count):
    """With a constant g, Adam's bias-corrected moments are g and g**2 at every step:
    each step is lr * g / (|g| + eps-hat) = lr * sign(g) (Kingma & Ba, section 2)."""
    g = np.array([0.3, -4.0, 1e-3])
    moved = steps(sd.keras.optimizers.Adam(learning_rate=0.01, epsilon=1e-12), g, count)
    np.testing.assert_allclose(moved, -count * 0.01 * np.sign(g), rtol=1e-6)


def test_sgd_with_momentum_accumulates_velocity():
    """velocity = momentum * velocity + lr * g; the steps are lr*g, lr*g*(1 + m), ..."""
    g, lr, m = np.array([0.5, -1.0, 2.0]), 0.1, 0.9
    moved = steps(sd.keras.optimizers.SGD(learning_rate=lr, momentum=m), g, 3)
    np.testing.assert_allclose(moved, -lr * g * (1 + (1 + m) + (1 + m + m * m)))


def test_a_dense_layer_computes_activation_of_inputs_at_kernel_plus_bias():
    layer = sd.keras.layers.Dense(4, activation="tanh", seed=3)
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    y = layer(x)
    expected = np.tanh(x @ layer.kernel.numpy() + layer.bias.numpy())
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    assert y.dtype == np.float32 and [v.shape for v in layer.trainable_variables] == [
        (3, 4), (4,)]


def test_adam_amsgrad_keeps_the_largest_second_moment_and_float32_steps():
    """amsgrad (Keras's keyword, refused before) divides by the largest second moment so
    far: after g = 1 then g = 0 the second step is ``lr * m2_hat / sqrt(max(s1, s2)_hat)``.
    Steps on a float32 Variable are float32 arithmetic, as Keras's."""
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-7
    for amsgrad in (False, True):
        v = sd.Variable(np.array([0.0]))
        opt = sd.keras.optimizers.Adam(lr, amsgrad=amsgrad)
        for g in (1.0, 0.0):
            opt.apply_gradients([(sd.constant([g], sd.float64), v)])
        m1, s1 = 1 - b1, 1 - b2
        m2, s2 = b1 * m1, b2 * s1
        first = lr * np.sqrt(1 - b2) / (1 - b1) * m1 / (np.sqrt(s1) + eps)
        top = max(s1, s2) if amsgrad else s2
        second = lr * np.sqrt(1 - b2 ** 2) / (1 - b1 ** 2) * m2 / (np.sqrt(top) + eps)
        np.testing.assert_allclose(v.numpy(), [-(first + second)], rtol=1e-12)
    v = sd.Variable(np.array([1.0, -2.0], np.float32))
    sd.keras.optimizers.Adam(0.01).apply_gradients([(sd.constant([0.3, -4.0]), v)])
    assert v.dtype == np.float32

"""What the backward walk decides before it runs: whether adjoints may be complex,
and which adjoints are worth computing at all."""
import numpy as np
import pytest

import srcdiff as sd
from util import numerical_jacobian

Z = np.array([1 + 2j, -0.5 + 0.3j, 0.2 - 1j])


def tf_gradient(f, z, eps=1e-6):
    """TensorFlow's gradient of a real ``f`` at complex ``z``: dL/dRe z + i dL/dIm z."""
    re = numerical_jacobian(lambda x: f(x + 1j * z.imag), z.real, eps)
    im = numerical_jacobian(lambda y: f(z.real + 1j * y), z.imag, eps)
    return re + 1j * im


@pytest.mark.parametrize("f", [
    lambda z: sd.reduce_sum(sd.imag(z)),
    lambda z: sd.reduce_sum(sd.imag(z) * sd.real(z)),
    lambda z: sd.reduce_sum(sd.abs(z)),
], ids=["imag", "imag times real", "abs"])
def test_complex_sources_are_conjugated_even_when_no_result_is_complex(f):
    """Only the source is complex: every recorded result is real."""
    z = sd.constant(Z)
    with sd.GradientTape() as tape:
        tape.watch(z)
        loss = f(z)
    expected = tf_gradient(lambda v: f(sd.constant(v)).numpy(), Z)
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), expected, rtol=1e-6, atol=1e-8)


def test_complex_intermediates_of_real_sources_are_conjugated():
    x0 = np.array([0.3, -1.2, 0.7])
    x = sd.constant(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        z = sd.cast(x, sd.complex128) * (1 + 2j)
        loss = sd.reduce_sum(sd.real(sd.exp(z) * z))
    expected = numerical_jacobian(lambda v: np.sum(np.real(np.exp(v * (1 + 2j)) * v * (1 + 2j))), x0)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), expected, rtol=1e-6, atol=1e-8)


def ungradable_in_a():
    """``np.pad(a, 0, mode="linear_ramp")``: the rule has no adjoint for ``a`` (a mode
    it does not model)."""
    a, b = sd.constant(np.eye(3) * 2.0), sd.constant(np.array([1.0, 2.0, 3.0]))
    tape = sd.GradientTape(persistent=True)
    with tape:
        tape.watch([a, b])
        y = sd.reduce_sum(np.diagonal(np.pad(a, 0, mode="linear_ramp")) * b * sd.sin(b))
    return tape, y, a, b


def test_only_the_adjoints_that_reach_a_source_are_computed():
    tape, y, a, b = ungradable_in_a()
    expected = numerical_jacobian(lambda v: np.sum(2.0 * v * np.sin(v)), b.numpy())
    np.testing.assert_allclose(tape.gradient(y, b).numpy(), expected, rtol=1e-6)
    with pytest.raises(NotImplementedError):
        tape.gradient(y, [a, b])  # every watched value is a source: a's adjoint is needed


def test_gradient_with_respect_to_an_intermediate_and_a_watched_value():
    x0 = np.array([0.5, -0.4])
    x = sd.constant(x0)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        s = sd.sin(x)
        y = sd.reduce_sum(s * s * x)
    dx, ds = tape.gradient(y, [x, s])
    np.testing.assert_allclose(ds.numpy(), 2 * np.sin(x0) * x0)
    np.testing.assert_allclose(dx.numpy(), numerical_jacobian(
        lambda v: np.sum(np.sin(v) ** 2 * v), x0), rtol=1e-6)
    (only_s,) = tape.gradient(y, [s])
    np.testing.assert_allclose(only_s.numpy(), ds.numpy())


# --- accumulation never writes into memory it does not own ------------------------------

def test_adjoints_a_rule_passes_through_are_added_into_new_arrays():
    """``np.add``'s vjp returns the adjoint it was given (an alias), so ``x + x + x``
    hands one array to the walk three times, and the first is the caller's own
    output gradient: an accumulation in place would change it and triple-count."""
    x = sd.constant(np.array([1.0, -2.0]))
    seed = np.array([0.5, 2.0])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x + x + x
        z = sd.exp(x) + sd.exp(x)
    for _ in range(2):  # the same gradients twice: nothing a walk kept was changed
        g = tape.gradient(y, x, output_gradients=seed)
        np.testing.assert_array_equal(seed, [0.5, 2.0])
        np.testing.assert_allclose(g.numpy(), 3 * seed)
        np.testing.assert_allclose(tape.gradient(z, x).numpy(), 2 * np.exp([1.0, -2.0]))
    np.testing.assert_allclose(x.numpy(), [1.0, -2.0])

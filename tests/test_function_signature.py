"""``sd.function``'s TensorFlow options: ``input_signature`` (``sd.TensorSpec``) checks
and converts the arguments as tf.function does, with its TypeError for a call that
does not fit; the graph-building options are accepted and change no value."""
import numpy as np
import pytest

import srcdiff as sd

SPEC = [sd.TensorSpec(shape=[None, 2], dtype=sd.float32, name="x")]


@sd.function(input_signature=SPEC)
def doubled(x):
    return np.sum(x * 2.0)


def test_a_fitting_tensor_and_a_converted_array():
    got = doubled(sd.constant([[1.0, 1.0], [2.0, 0.5]]))
    assert got.dtype == np.float32 and float(got) == 9.0
    converted = doubled(np.array([[1.0, 1.0]]))  # float64, converted as TensorFlow does
    assert converted.dtype == np.float32 and float(converted) == 4.0
    assert float(doubled(x=sd.constant([[1.0, 2.0]]))) == 6.0


@pytest.mark.parametrize("bad", [
    sd.constant([[1.0, 1.0, 1.0]]),                      # a dimension the spec fixes
    sd.constant([[1.0, 1.0]], dtype=sd.float64),         # another dtype
    sd.constant([1.0, 1.0]),                             # another rank
], ids=["shape", "dtype", "rank"])
def test_a_tensor_that_does_not_fit_is_a_type_error(bad):
    with pytest.raises(TypeError, match="Can not cast"):
        doubled(bad)


def test_too_many_arguments_and_an_unknown_keyword():
    with pytest.raises(TypeError, match="too many positional arguments"):
        doubled(sd.constant([[1.0, 1.0]]), 3.0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        doubled(y=sd.constant([[1.0, 1.0]]))


def test_the_gradient_through_a_signed_function():
    x = sd.constant([[1.0, -2.0]])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = doubled(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[2.0, 2.0]])


def test_a_signed_method_leaves_self_out():
    class Scaled:
        def __init__(self):
            self.w = sd.Variable([3.0, 4.0])

        @sd.function(input_signature=[sd.TensorSpec([2], sd.float32)])
        def __call__(self, x):
            return np.sum(self.w * x)

    m = Scaled()
    with sd.GradientTape() as tape:
        y = m(sd.constant([1.0, 2.0]))
    np.testing.assert_array_equal(tape.gradient(y, m.w).numpy(), [1.0, 2.0])
    with pytest.raises(TypeError, match="Can not cast"):
        m(sd.constant([1.0, 2.0, 3.0]))


def test_tensorflows_graph_options_change_nothing():
    def f(x):
        return np.sum(np.tanh(x))
    x = sd.constant([0.5, -1.0])
    plain = sd.function(f)(x)
    for options in ({"jit_compile": True}, {"reduce_retracing": True}, {"autograph": False},
                    {"experimental_relax_shapes": True}):
        assert float(sd.function(**options)(f)(x)) == float(plain)


def test_spec_compatibility_and_a_bad_signature():
    spec = sd.TensorSpec([None, 3], sd.float64)
    assert spec.is_compatible_with(np.zeros((5, 3)))
    assert not spec.is_compatible_with(np.zeros((5, 2)))
    assert not spec.is_compatible_with(np.zeros((5, 3), np.float32))
    assert sd.TensorSpec(None, sd.float64).is_compatible_with(np.zeros((1, 2, 3)))
    assert spec == sd.TensorSpec([None, 3], sd.float64) and "None, 3" in repr(spec)
    with pytest.raises(TypeError, match="list of sd.TensorSpec"):
        sd.function(input_signature=[(None, 3)])(lambda x: x)

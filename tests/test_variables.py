"""sd.Variable: construction, assignment, reads, and what a tape keeps of a read."""
import numpy as np
import pytest

import srcdiff as sd


def test_construction_follows_tensorflows_conventions():
    v = sd.Variable(1.0)
    assert (v.dtype, v.shape, v.trainable, v.name) == (np.float32, (), True, "Variable:0")
    assert repr(v) == "<srcdiff.Variable 'Variable:0' shape=() dtype=float32, numpy=1.0>"
    w = sd.Variable([1, 2], trainable=False, name="counts", dtype=sd.float64)
    assert (w.dtype, w.shape, w.trainable, w.name) == (np.float64, (2,), False, "counts:0")
    assert sd.Variable(np.arange(3)).dtype == np.int64  # an ndarray keeps its dtype
    assert sd.Variable(lambda: [[0.5]]).shape == (1, 1)  # a callable initial value
    np.testing.assert_array_equal(sd.Variable(sd.constant([3.0, 4.0])).numpy(), [3.0, 4.0])


def test_initial_value_is_required():
    with pytest.raises(ValueError, match="initial_value must be specified"):
        sd.Variable(None)


def test_variable_copies_its_initial_value():
    array = np.ones(2)
    v = sd.Variable(array)
    v.assign_add([1.0, 1.0])
    array[1] = 100.0
    np.testing.assert_array_equal(array, [1.0, 100.0])
    np.testing.assert_array_equal(v.numpy(), [2.0, 2.0])


def test_assign_assign_add_assign_sub():
    v = sd.Variable([1.0, 2.0])
    assert v.assign([5.0, 6.0]) is v
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    v.assign_add(sd.constant([1.0, 1.0]))
    np.testing.assert_array_equal(v.numpy(), [6.0, 7.0])
    v.assign_sub(np.array([2.0, 4.0]))
    np.testing.assert_array_equal(v.numpy(), [4.0, 3.0])
    assert v.dtype == np.float32  # assigned values take the variable's dtype
    v.assign([1, 2])
    assert v.dtype == np.float32


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0], 1.0], ids=["longer", "scalar"])
def test_assign_of_another_shape_is_value_error(method, value):
    # No broadcasting: TensorFlow wants the variable's own shape.
    v = sd.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match=r"value of shape \((3,|)\) to variable "
                                         r"'Variable:0' of shape \(2,\)"):
        getattr(v, method)(value)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_numpy_of_a_variable_is_a_copy():
    v = sd.Variable([1.0, 2.0])
    v.numpy()[0] = 100.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_read_value_is_a_tensor_that_later_assignments_do_not_change():
    v = sd.Variable([1.0, 2.0])
    read, value = v.read_value(), v.value()
    v.assign([7.0, 8.0])
    for t in (read, value):
        assert type(t) is sd.Tensor
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_variable_is_usable_wherever_a_tensor_is():
    v = sd.Variable([[1.0, 2.0], [3.0, 4.0]])
    a = v.numpy()
    checks = [(v + 1, a + 1), (2 * v, 2 * a), (v @ v, a @ a), (np.sin(v), np.sin(a)),
              (sd.reduce_sum(v), a.sum()), (v[0], a[0]), (v.T, a.T), (v > 2, a > 2),
              (sd.matmul(v, v), a @ a), (v.sum(axis=0), a.sum(axis=0))]
    for got, expected in checks:
        assert isinstance(got, sd.Tensor)
        np.testing.assert_array_equal(got.numpy(), expected)
    assert (len(v), v.ndim, v.size) == (2, 2, 4)
    assert float(sd.Variable(2.5)) == 2.5 and ["a", "b"][sd.Variable(1)] == "b"


# --- under a tape ------------------------------------------------------------------------

def test_assigning_after_a_read_does_not_change_the_gradient():
    v = sd.Variable(3.0)
    with sd.GradientTape() as tape:
        y = v * v           # recorded with the value read: 3
        v.assign(10.0)
    assert tape.gradient(y, v).numpy() == 6.0


@pytest.mark.parametrize("read", [
    lambda v: np.sin(v),
    lambda v: sd.sin(v.read_value()),
    lambda v: sd.sin(sd.convert_to_tensor(v)),
    lambda v: sd.sin(v[0:2]),
], ids=["numpy-function", "read_value", "convert_to_tensor", "slice"])
def test_every_kind_of_read_keeps_the_value_read(read):
    v = sd.Variable([0.5, 1.5], dtype=sd.float64)
    with sd.GradientTape(persistent=True) as tape:
        y = sd.reduce_sum(read(v))
        v.assign_add([10.0, 10.0])
        v.assign_sub([1.0, 1.0])
    for _ in range(2):
        np.testing.assert_allclose(tape.gradient(y, v).numpy(), np.cos([0.5, 1.5]))


def test_reads_before_and_after_an_assignment_are_separate_values():
    v = sd.Variable(3.0)
    with sd.GradientTape() as tape:
        before = v.read_value()
        v.assign_add(1.0)
        y = before * v      # 3 * v read as 4: d/dv = 4 (through `before`) + 3
    assert y.numpy() == 12.0
    assert tape.gradient(y, v).numpy() == 7.0


def test_training_loop_with_assign_sub_converges():
    w = sd.Variable(0.0, dtype=sd.float64)
    for _ in range(100):
        with sd.GradientTape() as tape:
            loss = (w - 3.0) ** 2
        w.assign_sub(0.1 * tape.gradient(loss, w))
    assert w.numpy() == pytest.approx(3.0, abs=1e-8)

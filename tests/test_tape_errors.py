"""Wrong use of GradientTape raises TensorFlow 2.21's exception type, with a message
that says what went wrong."""
import re

import numpy as np
import pytest

import srcdiff as sd

NON_PERSISTENT = ("A non-persistent GradientTape can only be used to compute one set of "
                  "gradients (or jacobians)")


def used_tape():
    """A non-persistent tape whose one gradient has been taken, and its target and source."""
    x = sd.constant([[1.0, 2.0]])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    return tape, y, x


@pytest.mark.parametrize("use", ["gradient", "jacobian", "batch_jacobian"])
def test_second_use_of_a_non_persistent_tape_is_runtime_error(use):
    tape, y, x = used_tape()
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        getattr(tape, use)(y, x)


def test_jacobian_counts_as_the_one_use():
    x = sd.constant([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.jacobian(y, x)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        tape.gradient(y, x)


def test_a_walk_cut_short_by_an_error_leaves_the_tape_used():
    """The walk of a non-persistent tape takes its records as it goes: after a rule
    raised, the tape is used up (a second gradient would otherwise see half a tape)."""
    @sd.custom_gradient
    def failing(v):
        def grad(dy):
            raise ArithmeticError("this rule fails")
        return v * 2.0, grad

    x = sd.constant([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = failing(x) * x
    with pytest.raises(ArithmeticError):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT)):
        tape.gradient(y, x)


@pytest.mark.parametrize("not_a_tensor", ["x", 3.0, np.ones(2), None, [sd.constant(1.0), 2.0]],
                         ids=["str", "float", "ndarray", "None", "list-with-float"])
def test_watch_of_a_non_tensor_is_value_error(not_a_tensor):
    with sd.GradientTape() as tape:
        with pytest.raises(ValueError, match="not tf.Tensor or tf.Variable"):
            tape.watch(not_a_tensor)


def test_gradient_of_none_is_type_error():
    x = sd.constant(1.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(TypeError, match="received None"):
        tape.gradient(None, x)


@pytest.mark.parametrize("target", [3.0, np.ones(2), [None]], ids=["float", "ndarray", "[None]"])
def test_gradient_of_a_non_tensor_target_is_type_error(target):
    x = sd.constant(1.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(TypeError, match="Argument `target`"):
        tape.gradient(target, x)


@pytest.mark.parametrize("use", ["jacobian", "batch_jacobian"])
def test_jacobian_of_none_is_type_error(use):
    x = sd.constant([[1.0]])
    with sd.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(TypeError, match="target"):
        getattr(tape, use)(None, x)


@pytest.mark.parametrize("sources", [2.0, [sd.constant(1.0), None], np.ones(2)],
                         ids=["float", "None-in-list", "ndarray"])
def test_non_tensor_source_is_type_error(sources):
    x = sd.constant(1.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="sources must be Tensors or Variables"):
        tape.gradient(y, sources)


def test_entering_an_active_tape_is_value_error():
    tape = sd.GradientTape()
    with tape:
        with pytest.raises(ValueError, match="re-enter an already-active tape"):
            with tape:
                pass
    with tape:  # once exited, it can be entered again
        pass


def test_stop_recording_on_a_never_entered_tape_is_runtime_error():
    tape = sd.GradientTape()
    with pytest.raises(RuntimeError, match="Trying to stop recording a tape which is not "
                                           "recording."):
        with tape.stop_recording():
            pass


def test_stop_recording_on_an_exited_tape_is_value_error():
    with sd.GradientTape() as tape:
        pass
    with pytest.raises(ValueError, match="^Tape is not recording.$"):
        with tape.stop_recording():
            pass


def test_stop_recording_on_a_used_non_persistent_tape_is_runtime_error():
    tape, _, _ = used_tape()
    with pytest.raises(RuntimeError, match="not recording"):
        with tape.stop_recording():
            pass


def test_output_gradients_of_the_wrong_shape_is_value_error_naming_both_shapes():
    x = sd.constant([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        tape.gradient(y, x, output_gradients=sd.constant([1.0, 2.0, 3.0]))


def test_output_gradients_that_do_not_broadcast_or_of_another_dtype_are_invalid_arguments():
    """As TensorFlow's kernels refuse them: a shape that does not broadcast to the target's,
    a Tensor of another floating dtype (ndarrays and Python numbers take the target's)."""
    x = sd.constant([[1.0, 2.0], [3.0, 4.0]])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    for seed in (sd.constant([1.0, 2.0, 3.0]), sd.ones((3, 2, 2)),
                 sd.constant([1.0, 2.0], dtype=sd.float64)):
        with pytest.raises(sd.errors.InvalidArgumentError):
            tape.gradient(y, x, output_gradients=seed)
    assert tape.gradient(y, x, output_gradients=np.ones(2)).dtype == np.float32


def test_output_gradients_for_the_wrong_number_of_targets_is_value_error():
    x = sd.constant([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="output_gradients"):
        tape.gradient([y, y], x, output_gradients=[sd.ones(2)])


@pytest.mark.parametrize("use", ["gradient", "jacobian", "batch_jacobian"])
def test_unknown_unconnected_gradients_is_value_error(use):
    x = sd.constant([[1.0, 2.0]])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'zeros'"):
        getattr(tape, use)(y, x, unconnected_gradients="zeros")


@pytest.mark.parametrize("target_shape, source_shape, message", [
    ((2, 3), (3, 3), "Need first dimension of target shape ((2, 3)) and source shape ((3, 3)) "
                     "to match."),
    ((3,), (3, 1), "Shape (3,) must have rank at least 2"),
    ((3, 1), (3,), "Shape (3,) must have rank at least 2"),
    ((), (3, 1), "Shape () must have rank at least 2"),
])
def test_batch_jacobian_needs_matching_batch_dimensions_of_rank_2_tensors(
        target_shape, source_shape, message):
    x = sd.ones(source_shape)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.ones(target_shape) * sd.reduce_sum(x)
    with pytest.raises(ValueError, match=re.escape(message)):
        tape.batch_jacobian(y, x)


@pytest.mark.parametrize("use", ["jacobian", "batch_jacobian"])
def test_jacobian_without_pfor_on_a_non_persistent_tape_is_runtime_error(use):
    x = sd.constant([[1.0, 2.0]])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent=True"):
        getattr(tape, use)(y, x, experimental_use_pfor=False)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(
        getattr(tape, use)(y, x, experimental_use_pfor=False).numpy().reshape(2, 2),
        [[2.0, 0.0], [0.0, 4.0]])

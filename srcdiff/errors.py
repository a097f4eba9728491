"""TensorFlow's error types (``sd.errors`` is ``tf.errors``) for what TensorFlow's kernels refuse.

Each is also the Python exception NumPy-minded code expects for the same fault, so
``except tf.errors.InvalidArgumentError`` and ``except IndexError`` both catch an index
out of range."""


class InvalidArgumentError(ValueError):
    """An op was given values it is not defined for (TensorFlow's InvalidArgumentError)."""


class IndexOutOfRangeError(InvalidArgumentError, IndexError):
    """An index outside the tensor it indexes: TensorFlow's CPU kernels refuse it."""


def check_range(indices, size, what="indices"):
    """``indices``, refused if one is outside ``[0, size)``, as TensorFlow's CPU kernels do
    (NumPy would count a negative one from the end)."""
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        bad = indices[(indices < 0) | (indices >= size)].ravel()[0]
        raise IndexOutOfRangeError(f"{what} {bad} is not in [0, {size})")
    return indices

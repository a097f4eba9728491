"""Pieces of tensors under TensorFlow's names: ``split``, ``slice``, ``boolean_mask``,
``pad``, ``repeat``, ``roll``.

Each is NumPy indexing or a NumPy function that has a rule, so its gradient is that
rule's.  Where NumPy would quietly accept what TensorFlow's kernels refuse (a slice past
the end, sizes that do not add up, a reflection wider than the axis) the op raises
``sd.errors.InvalidArgumentError`` as TensorFlow does."""
import builtins

import numpy as np

from ..errors import InvalidArgumentError
from ..tensor import _as_array, convert_to_tensor
from ._op import op


def _ints(values):
    return [int(v) for v in np.asarray(_as_array(values)).reshape(-1)]


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """The pieces of ``value`` along ``axis``, as a list: ``num_or_size_splits`` equal
    ones, or pieces of the sizes given (one may be -1, the rest):
    ``head, tail = sd.split(x, [2, -1], axis=1)``."""
    value = convert_to_tensor(value)
    axis = int(axis)
    length = value.shape[axis]
    if np.ndim(_as_array(num_or_size_splits)) == 0:
        count = int(_as_array(num_or_size_splits))
        if count <= 0 or length % count:
            raise InvalidArgumentError(
                f"Number of ways to split should evenly divide the split dimension, but got "
                f"split_dim {axis} (size = {length}) and num_split {count}")
        sizes = [length // count] * count
    else:
        sizes = _ints(num_or_size_splits)
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = length - (sum(sizes) + 1)
        if sum(sizes) != length or builtins.min(sizes, default=0) < 0:
            raise InvalidArgumentError(
                f"Determined shape must either match input shape along split_dim exactly "
                f"if fully specified, or be less than the size of the input along split_dim "
                f"if not fully specified: sizes {_ints(num_or_size_splits)} for size {length}")
    lead = (builtins.slice(None),) * (axis % value.ndim)
    ends = np.cumsum([0] + sizes)
    return [value[lead + (builtins.slice(int(a), int(b)),)] for a, b in zip(ends, ends[1:])]


@op()
def slice(input_, begin, size, name=None):  # noqa: A001  (TensorFlow's name)
    """``size[i]`` entries of axis i from ``begin[i]`` (-1: to the end):
    ``sd.slice(x, [1, 0], [2, -1])``."""
    shape = np.shape(input_)
    begin, size = _ints(begin), _ints(size)
    if not len(begin) == len(size) == len(shape):
        raise InvalidArgumentError(f"begin {begin} and size {size} must have one entry per "
                                   f"axis of a tensor of shape {list(shape)}")
    ends = [n if s == -1 else b + s for b, s, n in zip(begin, size, shape)]
    if any(b < 0 or e < b or e > n for b, e, n in zip(begin, ends, shape)):
        raise InvalidArgumentError(
            f"Expected begin {begin} and size {size} to be within the shape {list(shape)}")
    return input_[tuple(builtins.slice(b, e) for b, e in zip(begin, ends))]


@op()
def boolean_mask(tensor, mask, axis=None, name=None):
    """The entries of ``tensor`` where the bool ``mask`` (the shape of its axes from ``axis``,
    0 by default) holds, flattened into one axis: ``sd.boolean_mask(x, x[:, 0] > 0)``."""
    mask = np.asarray(_as_array(mask), bool)
    axis = 0 if axis is None else int(axis) % np.ndim(tensor)
    if np.shape(tensor)[axis:axis + mask.ndim] != mask.shape:
        raise InvalidArgumentError(f"mask of shape {list(mask.shape)} does not match the axes "
                                   f"from {axis} of a tensor of shape {list(np.shape(tensor))}")
    return tensor[(builtins.slice(None),) * axis + (mask,)]


_PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}


@op()
def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """``tensor`` with ``paddings[i] = [before, after]`` entries added on axis i: zeros
    (``constant_values``, which gets no gradient, as in TensorFlow) or a reflection
    (``mode="REFLECT"`` or ``"SYMMETRIC"``): ``sd.pad(x, [[1, 1], [0, 2]])``."""
    widths = np.asarray(_as_array(paddings)).astype(int)
    shape = np.shape(tensor)
    numpy_mode = _PAD_MODES.get(str(mode).upper())
    if numpy_mode is None:
        raise ValueError(f"Value of argument `mode` expected to be one of "
                         f"{sorted(_PAD_MODES)}, got {mode!r}")
    if widths.shape != (len(shape), 2) or (widths < 0).any():
        raise InvalidArgumentError(f"paddings must be non-negative [before, after] pairs, one "
                                   f"per axis of shape {list(shape)}: got {widths.tolist()}")
    if numpy_mode != "constant":
        room = np.asarray(shape)[:, None] - (numpy_mode == "reflect")
        if (widths > room).any():
            raise InvalidArgumentError(f"paddings {widths.tolist()} must be no more than the "
                                       f"axes' sizes {list(shape)} in {mode} mode")
        return np.pad(tensor, widths, mode=numpy_mode)
    value = np.asarray(_as_array(constant_values), np.result_type(tensor))
    return np.pad(tensor, widths, mode="constant", constant_values=value)


@op()
def repeat(input, repeats, axis=None, name=None):
    """Each entry of ``input`` along ``axis`` (of the flattened input by default) repeated
    ``repeats`` times (one count, or one per entry): ``sd.repeat(x, 2, axis=0)``."""
    counts = _ints(repeats)
    return np.repeat(input, counts[0] if np.ndim(_as_array(repeats)) == 0 else counts,
                     axis=None if axis is None else int(axis))


@op()
def roll(input, shift, axis, name=None):
    """``input`` shifted cyclically by ``shift`` along ``axis`` (lists of the same length
    for several axes): ``sd.roll(x, 1, axis=0)``."""
    scalar = np.ndim(_as_array(shift)) == 0
    shifts, axes = _ints(shift), _ints(axis)
    return np.roll(input, shifts[0] if scalar else tuple(shifts),
                   axis=axes[0] if scalar else tuple(axes))

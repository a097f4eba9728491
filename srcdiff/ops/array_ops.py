"""Shapes, indexing, creation and casts under TensorFlow's names."""
import operator

import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError, check_range
from ..rules.shapes import concatenate, stack as _stack
from ..rules import defvjp
from ..tensor import (IndexedSlices, Tensor, Variable, _as_array, apply, convert_to_tensor,
                      refuse_mixed_dtypes)
from ._op import axis_arg, op


@op()
def reshape(tensor, shape, name=None):
    """``tensor`` with a new ``shape`` (one entry may be -1): ``sd.reshape(x, [2, -1])``."""
    return np.reshape(tensor, tuple(int(n) for n in np.asarray(shape).reshape(-1)))


@op()
def transpose(a, perm=None, conjugate=False, name=None):
    """Axes permuted by ``perm`` (reversed by default): ``sd.transpose(x, perm=[1, 0])``."""
    out = np.transpose(a, None if perm is None else tuple(int(p) for p in perm))
    return np.conjugate(out) if conjugate else out


@op()
def expand_dims(input, axis, name=None):
    """A new axis of length 1 at ``axis``: ``sd.expand_dims(x, 0)`` has shape
    ``(1,) + x.shape``."""
    return np.expand_dims(input, int(axis))


@op()
def squeeze(input, axis=None, name=None):
    """Axes of length 1 removed (those in ``axis``, or all): ``sd.squeeze(x, axis=[0])``."""
    return np.squeeze(input, axis=axis_arg(axis))


@op()
def tile(input, multiples, name=None):
    """``input`` repeated ``multiples[i]`` times along axis i: ``sd.tile(x, [2, 1])``."""
    return np.tile(input, tuple(int(m) for m in np.asarray(multiples).reshape(-1)))


@op()
def broadcast_to(input, shape, name=None):
    """``input`` broadcast to ``shape`` (NumPy's rules): ``sd.broadcast_to(b, [4, 3])``."""
    return np.broadcast_to(input, tuple(int(n) for n in np.asarray(shape).reshape(-1)))


@op()
def reverse(tensor, axis, name=None):
    """``tensor`` reversed along the axes ``axis``: ``sd.reverse(x, [0])``."""
    return np.flip(tensor, axis_arg(axis))


@op()
def identity(input, name=None):
    """A copy of ``input`` whose gradient passes through unchanged: ``sd.identity(x)``."""
    return np.copy(input)


def concat(values, axis, name=None):
    """Join tensors along an existing axis (of one floating dtype: refuse_mixed_dtypes)."""
    values = list(values)  # (read twice)
    refuse_mixed_dtypes("concat", values)
    return apply(concatenate, *[convert_to_tensor(v) for v in values], axis=int(axis))


concat.__numpy__ = np.concatenate  # the same (values, axis) parameters


def stack(values, axis=0, name=None):
    """Join tensors along a new axis (of one floating dtype: ``refuse_mixed_dtypes``)."""
    values = list(values)  # (read twice)
    refuse_mixed_dtypes("stack", values)
    return apply(_stack, *[convert_to_tensor(v) for v in values], axis=int(axis))


stack.__numpy__ = np.stack  # the same (values, axis) parameters


def unstack(value, num=None, axis=0, name=None):
    """The slices of ``value`` along ``axis``, as a list."""
    value = convert_to_tensor(value)
    axis = int(axis) % value.ndim
    lead = (slice(None),) * axis
    return [value[lead + (i,)] for i in range(value.shape[axis])]


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of ``params`` at ``indices`` along ``axis`` (0 by default).

    With ``batch_dims`` b, the first b axes of ``params`` and ``indices`` are a batch:
    each batch element gathers with its own indices.  The gradient with respect to a
    Variable is an IndexedSlices (without batch_dims), as in TensorFlow."""
    if batch_dims:
        index = _batch_index(np.shape(params), _as_array(indices), axis, batch_dims)
        return apply(operator.getitem, convert_to_tensor(params), index)
    axis = 0 if axis is None else int(axis)
    indices = check_range(_as_array(indices), np.shape(params)[axis])  # a list: int32, as in TF
    if isinstance(params, Variable) and axis == 0:
        return apply(sparse_read, params, indices)
    return apply(np.take, convert_to_tensor(params), indices, axis=axis)


def _gather_numpy(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    if batch_dims:
        return params[_batch_index(np.shape(params), np.asarray(indices), axis, batch_dims)]
    axis = 0 if axis is None else axis
    indices = check_range(np.asarray(indices), np.shape(params)[axis])
    return np.take(params, indices, axis=axis)


def _batch_index(shape, indices, axis, batch_dims):
    """The index into ``params`` of ``shape`` of TensorFlow's ``gather(params, indices,
    axis, batch_dims)``: one integer array per axis, all broadcasting to the result's
    shape ``shape[:axis] + indices.shape[batch_dims:] + shape[axis + 1:]``, so that
    ``params[index]`` is the gather (and its gradient the getitem's)."""
    batch_dims = int(batch_dims) + (indices.ndim if batch_dims < 0 else 0)
    axis = batch_dims if axis is None else int(axis) % len(shape)
    if not 0 <= batch_dims <= min(axis, indices.ndim):
        raise InvalidArgumentError(f"batch_dims={batch_dims} must be in [0, min(axis={axis}, "
                                   f"indices.ndim={indices.ndim})]")
    if tuple(shape[:batch_dims]) != indices.shape[:batch_dims]:
        raise InvalidArgumentError(f"params.shape[:{batch_dims}] {tuple(shape[:batch_dims])} "
                                   f"should equal indices.shape[:{batch_dims}] "
                                   f"{indices.shape[:batch_dims]}")
    check_range(indices, shape[axis])
    inner = indices.ndim - batch_dims  # the result's axes that the indices add
    rank = len(shape) - 1 + inner

    def along(n, at):  # positions 0..n-1 along the result's axis ``at``
        return np.arange(n).reshape([n if k == at else 1 for k in range(rank)])
    picked = indices.reshape(indices.shape[:batch_dims] + (1,) * (axis - batch_dims)
                             + indices.shape[batch_dims:] + (1,) * (len(shape) - axis - 1))
    return tuple(picked if d == axis else along(n, d if d < axis else d - 1 + inner)
                 for d, n in enumerate(shape))


gather.__numpy__ = _gather_numpy


def sparse_read(params, indices):
    """``params[indices]`` along axis 0: a Variable's gather, with a sparse gradient."""
    return np.take(params, indices, axis=0)


def shape(input, out_type=dtypes.int32, name=None):
    """The shape of ``input`` as an int32 Tensor: ``sd.shape(sd.ones([2, 3]))`` holds
    ``[2, 3]``."""
    return Tensor(np.asarray(np.shape(_as_array(input)), dtype=out_type))


def size(input, out_type=dtypes.int32, name=None):
    """The number of elements of ``input`` as an int32 Tensor:
    ``sd.size(sd.ones([2, 3]))`` is 6."""
    return Tensor(np.asarray(np.size(_as_array(input)), dtype=out_type))


def rank(input, name=None):
    """The number of axes of ``input`` as an int32 Tensor: ``sd.rank(sd.ones([2, 3]))`` is 2."""
    return Tensor(np.asarray(np.ndim(_as_array(input)), dtype=np.int32))


def stop_gradient(input, name=None):
    """The same value, cut off from every tape: in ``y = x * sd.stop_gradient(x)``,
    dy/dx is ``x``, not ``2 x``."""
    return Tensor(_as_array(input))


def ones(shape, dtype=dtypes.float32, name=None):
    """A Tensor of ones (float32 unless ``dtype`` says): ``sd.ones([2, 3])``."""
    return Tensor(np.ones(_shape(shape), dtype=dtype))


def zeros(shape, dtype=dtypes.float32, name=None):
    """A Tensor of zeros (float32 unless ``dtype`` says): ``sd.zeros([2, 3])``."""
    return Tensor(np.zeros(_shape(shape), dtype=dtype))


def ones_like(input, dtype=None, name=None):
    """Ones with ``input``'s shape (and dtype unless ``dtype`` says): ``sd.ones_like(x)``."""
    return Tensor(np.ones_like(_as_array(input), dtype=dtype))


def zeros_like(input, dtype=None, name=None):
    """Zeros with ``input``'s shape (and dtype unless ``dtype`` says): ``sd.zeros_like(x)``."""
    return Tensor(np.zeros_like(_as_array(input), dtype=dtype))


@op(tensors=(1,))
def fill(dims, value, name=None):
    """A Tensor of shape ``dims`` filled with ``value``: ``sd.fill([2, 3], 9.0)``; the
    gradient of ``value`` is the sum of the elements'."""
    if np.ndim(value):
        raise InvalidArgumentError(f"value must be a scalar, got shape {np.shape(value)}")
    return np.broadcast_to(value, _shape(dims)) + np.zeros((), np.result_type(value))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """The identity matrix (a batch of them with ``batch_shape``): ``sd.eye(3)``."""
    out = np.eye(num_rows, num_columns, dtype=dtype)
    if batch_shape is not None:
        out = np.broadcast_to(out, _shape(batch_shape) + out.shape).copy()
    return Tensor(out)


def range(start, limit=None, delta=1, dtype=None, name=None):  # noqa: A001  (TensorFlow's name)
    """Like Python's range, as a Tensor (int32 for ints, float32 for floats)."""
    if limit is None:
        start, limit = 0, start
    values = [_as_array(v) for v in (start, limit, delta)]
    if dtype is None:  # the widest of the arguments' dtypes, as TensorFlow infers it
        dtype = max((v.dtype for v in values), key=_RANGE_DTYPES.index)
    return Tensor(np.arange(values[0], values[1], values[2]).astype(dtype))


_RANGE_DTYPES = [dtypes.int32, dtypes.int64, dtypes.float16, dtypes.float32, dtypes.float64]


@op(tensors=2)
def linspace(start, stop, num, name=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive:
    ``sd.linspace(0.0, 1.0, 5)``; integer bounds give float64, as in TensorFlow."""
    kind = np.result_type(start)
    return np.linspace(start, stop, int(num), axis=axis,
                       dtype=kind if kind.kind == "f" else np.float64)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in np.asarray(_as_array(shape)).reshape(-1))


def _sparse_read_vjp(g, ans, params, indices):
    return IndexedSlices(g, indices, np.shape(params))


defvjp(sparse_read, _sparse_read_vjp)

"""Shapes, indexing, creation and casts under TensorFlow's names."""
import numpy as np

from .. import dtypes
from ..rules.shapes import concatenate, stack as _stack
from ..rules import defvjp
from ..tensor import IndexedSlices, Tensor, Variable, _as_array, apply, convert_to_tensor
from ._op import axis_arg, op


@op()
def reshape(tensor, shape, name=None):
    return np.reshape(tensor, tuple(int(n) for n in np.asarray(shape).reshape(-1)))


@op()
def transpose(a, perm=None, conjugate=False, name=None):
    out = np.transpose(a, None if perm is None else tuple(int(p) for p in perm))
    return np.conjugate(out) if conjugate else out


@op()
def expand_dims(input, axis, name=None):
    return np.expand_dims(input, int(axis))


@op()
def squeeze(input, axis=None, name=None):
    return np.squeeze(input, axis=axis_arg(axis))


@op()
def tile(input, multiples, name=None):
    return np.tile(input, tuple(int(m) for m in np.asarray(multiples).reshape(-1)))


@op()
def broadcast_to(input, shape, name=None):
    return np.broadcast_to(input, tuple(int(n) for n in np.asarray(shape).reshape(-1)))


@op()
def reverse(tensor, axis, name=None):
    return np.flip(tensor, axis_arg(axis))


@op()
def identity(input, name=None):
    return np.copy(input)


def concat(values, axis, name=None):
    """Join tensors along an existing axis."""
    return apply(concatenate, *[convert_to_tensor(v) for v in values], axis=int(axis))


concat.__numpy__ = np.concatenate  # the same (values, axis) parameters


def stack(values, axis=0, name=None):
    """Join tensors along a new axis."""
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

    The gradient with respect to a Variable is an IndexedSlices, as in TensorFlow."""
    if batch_dims:
        raise NotImplementedError("srcdiff's gather supports batch_dims=0")
    axis = 0 if axis is None else int(axis)
    indices = np.asarray(indices)
    if isinstance(params, Variable) and axis == 0:
        return apply(sparse_read, params, indices)
    return apply(np.take, convert_to_tensor(params), indices, axis=axis)


def _gather_numpy(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    return np.take(params, indices, axis=0 if axis is None else axis)


gather.__numpy__ = _gather_numpy


def sparse_read(params, indices):
    """``params[indices]`` along axis 0: a Variable's gather, with a sparse gradient."""
    return np.take(params, indices, axis=0)


def shape(input, out_type=dtypes.int32, name=None):
    return Tensor(np.asarray(np.shape(_as_array(input)), dtype=out_type))


def size(input, out_type=dtypes.int32, name=None):
    return Tensor(np.asarray(np.size(_as_array(input)), dtype=out_type))


def rank(input, name=None):
    return Tensor(np.asarray(np.ndim(_as_array(input)), dtype=np.int32))


def stop_gradient(input, name=None):
    """The same value, cut off from every tape."""
    return Tensor(_as_array(input))


def ones(shape, dtype=dtypes.float32, name=None):
    return Tensor(np.ones(_shape(shape), dtype=dtype))


def zeros(shape, dtype=dtypes.float32, name=None):
    return Tensor(np.zeros(_shape(shape), dtype=dtype))


def ones_like(input, dtype=None, name=None):
    return Tensor(np.ones_like(_as_array(input), dtype=dtype))


def zeros_like(input, dtype=None, name=None):
    return Tensor(np.zeros_like(_as_array(input), dtype=dtype))


def fill(dims, value, name=None):
    value = _as_array(value)
    return Tensor(np.full(_shape(dims), value, dtype=value.dtype))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
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


def linspace(start, stop, num, name=None, axis=0):
    start = _as_array(start)
    return Tensor(np.linspace(start, _as_array(stop), int(num), axis=axis,
                              dtype=start.dtype if start.dtype.kind == "f" else np.float32))


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in np.asarray(_as_array(shape)).reshape(-1))


def _sparse_read_vjp(g, ans, params, indices):
    return IndexedSlices(g, indices, np.shape(params))


defvjp(sparse_read, _sparse_read_vjp)

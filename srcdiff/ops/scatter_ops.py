"""Indices into tensors under TensorFlow's names: ``one_hot``, ``gather_nd``, ``scatter_nd``,
``tensor_scatter_nd_*`` and the segment sums.

Each is a gather (``x[index]``) or a scatter-add (``helpers.unindex``, the adjoint of a
gather) on NumPy's indexing, so each one's gradient is the other.  Indices out of range
are an ``sd.errors.IndexOutOfRangeError`` (an InvalidArgumentError and an IndexError), as
TensorFlow's CPU kernels refuse them, except where TensorFlow
defines them: ``one_hot`` of an index outside ``[0, depth)`` is a row of ``off_value``,
and a negative segment id drops its row.  ``tensor_scatter_nd_update`` with a repeated
index keeps the last update, and only that update gets a gradient (TensorFlow's gradient
gives each of them one, though only one reaches the result)."""
import numpy as np

from .. import dtypes
from ..errors import IndexOutOfRangeError
from ..rules.helpers import unindex
from ..tensor import Tensor, _as_array
from ._op import op


def _indices(indices):
    indices = np.asarray(_as_array(indices))
    if indices.dtype.kind not in "iu":
        raise TypeError(f"indices must be integers, got {indices.dtype}")
    return indices


def _index(indices, shape):
    """The NumPy index of TensorFlow's ``indices`` [..., K] into a tensor of ``shape``."""
    indices = _indices(indices)
    depth = indices.shape[-1]
    if depth > len(shape) or np.any(indices < 0) or np.any(indices >= np.asarray(shape[:depth])):
        raise IndexOutOfRangeError(f"indices {indices.tolist()} do not index into shape {list(shape)}")
    return tuple(np.moveaxis(indices, -1, 0))


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A new axis (last, or ``axis``) of length ``depth``: ``on_value`` at each index,
    ``off_value`` elsewhere (and everywhere for an index outside ``[0, depth)``).  Float32
    unless ``dtype`` or the values say; it has no gradient, as in TensorFlow."""
    indices = _indices(indices)
    given = [np.asarray(_as_array(v)) for v in (on_value, off_value) if v is not None]
    if dtype is None:
        dtype = given[0].dtype if given else dtypes.float32
    on = np.asarray(1 if on_value is None else _as_array(on_value), dtype)
    off = np.asarray(0 if off_value is None else _as_array(off_value), dtype)
    axis = indices.ndim if axis is None or axis == -1 else int(axis)
    hits = np.expand_dims(indices, axis) == np.arange(int(depth)).reshape(
        (-1,) + (1,) * (indices.ndim - axis))
    return Tensor(np.where(hits, on, off))


@op()
def gather_nd(params, indices, batch_dims=0, name=None):
    """The slices of ``params`` at ``indices`` [..., K], each indexing its first K axes:
    ``sd.gather_nd(x, [[0, 1], [2, 0]])`` holds ``x[0, 1]`` and ``x[2, 0]``."""
    if batch_dims:
        raise NotImplementedError("srcdiff's gather_nd supports batch_dims=0")
    return params[_index(indices, np.shape(params))]


def _scatter(indices, updates, shape):
    shape = tuple(int(n) for n in np.asarray(_as_array(shape)).reshape(-1))
    return unindex(updates, _index(indices, shape), np.zeros(shape, np.result_type(updates)))


@op(tensors=(1,))
def scatter_nd(indices, updates, shape, name=None):
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (repeats add up):
    ``sd.scatter_nd([[1], [3]], [9.0, 10.0], [5])``."""
    return _scatter(indices, updates, shape)


@op(tensors=(0, 2))
def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """``tensor`` with ``updates`` added at ``indices`` (repeats add up)."""
    return tensor + _scatter(indices, updates, np.shape(tensor))


@op(tensors=(0, 2))
def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """``tensor`` with ``updates`` subtracted at ``indices`` (repeats add up)."""
    return tensor - _scatter(indices, updates, np.shape(tensor))


@op(tensors=(0, 2))
def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """``tensor`` with the slices at ``indices`` replaced by ``updates`` (of a repeated
    index, the last): ``sd.tensor_scatter_nd_update(x, [[0], [2]], [5.0, 6.0])``."""
    indices = _indices(indices)
    shape, depth = np.shape(tensor), indices.shape[-1]
    rows = indices.reshape(-1, depth)
    keys = np.ravel_multi_index(_index(rows, shape), shape[:depth])
    _, from_end = np.unique(keys[::-1], return_index=True)
    last = len(keys) - 1 - from_end  # the last update of each index
    kept = np.reshape(updates, (len(keys),) + np.shape(updates)[indices.ndim - 1:])[last]
    hit = np.zeros(shape[:depth], bool)
    hit[_index(rows[last], shape)] = True
    hit = hit.reshape(shape[:depth] + (1,) * (len(shape) - depth))
    return np.where(hit, _scatter(rows[last], kept, shape), tensor)


@op()
def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Row ``k`` of the result is the sum of the rows of ``data`` whose ``segment_ids``
    are ``k`` (``segment_ids`` index the leading axes of ``data``); a negative id drops its
    row: ``sd.math.unsorted_segment_sum(x, [0, 2, 0], 3)``."""
    ids, num_segments = _indices(segment_ids), int(num_segments)
    if np.shape(data)[:ids.ndim] != ids.shape:
        raise ValueError(f"segment_ids of shape {ids.shape} must be a prefix of data's shape "
                         f"{np.shape(data)}")
    if np.any(ids >= num_segments):
        raise IndexOutOfRangeError(f"segment_ids {ids.tolist()} are out of range [0, {num_segments})")
    if np.any(ids < 0):
        data, ids = data[ids >= 0], ids[ids >= 0]
    shape = (num_segments,) + np.shape(data)[ids.ndim:]
    return unindex(data, (ids,), np.zeros(shape, np.result_type(data)))


def _sorted_ids(segment_ids):
    """The ids of ``segment_sum`` and ``segment_mean``: a vector, increasing, none negative."""
    ids = _indices(segment_ids)
    if ids.ndim != 1 or np.any(ids < 0) or np.any(np.diff(ids) < 0):
        raise ValueError(f"segment_ids must be a vector of increasing ids >= 0, got "
                         f"{ids.tolist()}")
    return ids


@op()
def segment_sum(data, segment_ids, name=None):
    """``unsorted_segment_sum`` with ids sorted and not negative, and as many segments as
    the last id says: ``sd.math.segment_sum(x, [0, 0, 1])``."""
    ids = _sorted_ids(segment_ids)
    return unsorted_segment_sum(data, ids, ids[-1] + 1 if ids.size else 0)


@op()
def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of each segment's rows (0 for an empty segment), as ``unsorted_segment_sum``
    takes them: ``sd.math.unsorted_segment_mean(x, [0, 2, 0], 3)``."""
    ids = _indices(segment_ids)
    counts = unsorted_segment_sum(np.ones(ids.shape, np.result_type(data)), ids, num_segments)
    rows = np.shape(counts) + (1,) * (np.ndim(data) - ids.ndim)  # to divide each row
    counts = np.reshape(np.maximum(counts, 1), rows)
    return unsorted_segment_sum(data, ids, num_segments) / counts


@op()
def segment_mean(data, segment_ids, name=None):
    """The mean of each segment's rows, ids sorted: ``sd.math.segment_mean(x, [0, 0, 1])``."""
    ids = _sorted_ids(segment_ids)
    return unsorted_segment_mean(data, ids, ids[-1] + 1 if ids.size else 0)

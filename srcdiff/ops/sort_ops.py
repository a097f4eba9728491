"""Sorting under TensorFlow's names: ``sd.sort``, ``sd.argsort``, ``sd.math.top_k``.

Each takes its elements in one order, TensorFlow's: equal elements keep their order
(the lower index first) whether ascending or descending, so among ties the gradient
reaches the elements TensorFlow's does (``sort`` of ``[3, 1, 3]`` descending gives
``x[0]`` the first slot's adjoint).  The values are ``take_along_axis`` of that order,
whose gradient scatters the adjoint back.  nan sorts as the largest value."""
import collections

import numpy as np

from .. import dtypes
from ..tensor import convert_to_tensor
from ..rules import nondifferentiable
from ._op import op


def order(values, axis, descending):
    """The stable order of ``values`` along ``axis``; descending, ties keep the lower
    index first (NumPy's stable sort of the reversed values, read backwards)."""
    if not descending:
        return np.argsort(values, axis=axis, kind="stable")
    last = np.shape(values)[axis] - 1
    return last - np.flip(np.argsort(np.flip(values, axis), axis=axis, kind="stable"), axis)


nondifferentiable(order)  # indices: the compiler calls it as it is


def _descending(direction):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    return direction == "DESCENDING"


@op()
def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis``: ``sd.sort(x, direction="DESCENDING")``."""
    axis = int(axis)
    return np.take_along_axis(values, order(values, axis, _descending(direction)), axis)


@op()
def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort ``values`` along ``axis`` (always stable):
    ``sd.argsort(x)``."""
    return order(values, int(axis), _descending(direction)).astype(np.int32)


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def _top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002
    """(values, indices): a plain pair, which the compiler can build (not a TopKV2)."""
    k = int(k)
    if np.ndim(input) < 1 or not 0 <= k <= np.shape(input)[-1]:
        raise ValueError(f"top_k needs 0 <= k <= the last dimension of input (shape "
                         f"{np.shape(input)}), got k={k}")
    indices = order(input, -1, True)[..., :k]
    return np.take_along_axis(input, indices, -1), indices.astype(index_type)


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002
    """The ``k`` largest entries along the last axis and their indices, largest first (ties:
    the lower index first): ``values, indices = sd.math.top_k(x, k=2)``.  Eagerly a
    ``TopKV2`` (``.values``, ``.indices``); code for the compiler unpacks or indexes it."""
    values, indices = _top_k(convert_to_tensor(input), k, sorted, index_type)
    return TopKV2(values, convert_to_tensor(indices))


top_k.__numpy__ = _top_k

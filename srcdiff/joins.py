"""NumPy's joins of a sequence of arrays (``np.concatenate``, ``np.stack``, ``np.hstack``,
``np.vstack``, ``np.dstack``, ``np.column_stack``, ``np.block``) on Tensors.

Invariant: each join is recorded as what NumPy does, step by step: every item is
promoted as NumPy promotes it (``np.atleast_1d`` for hstack, a column for
column_stack...), each promotion a recorded primitive, and the items are then joined
by one recorded ``concatenate`` or ``stack`` that takes them as separate arguments,
so every item has its own adjoint.  The result equals NumPy's on the arrays.

Functions that take a list but that NumPy never hands to a Tensor (``np.array``,
``np.asarray``, ``np.sum`` of a list) are not here: NumPy converts the items itself,
and ``Tensor.__array__`` refuses a value a tape follows (see tensor.py).
"""
import numpy as np

from .rules.shapes import SEQUENCE_FORMS, cast, concatenate
from .tensor import _ArrayLike, _array_of, _raw, apply


def _column(x):
    """An item of ``np.column_stack``: a 0-d or 1-d array becomes one column."""
    return apply(np.reshape, x, (-1, 1)) if np.ndim(_raw(x)) < 2 else x


def _same(x):
    return x


# The join -> (how NumPy promotes each item, the axis it joins them along given the
# promoted items; None: the axis the caller passed).
_PROMOTED = {
    np.hstack: (lambda x: apply(np.atleast_1d, x),
                lambda xs: 0 if np.ndim(_raw(xs[0])) == 1 else 1),
    np.vstack: (lambda x: apply(np.atleast_2d, x), lambda xs: 0),
    np.dstack: (lambda x: apply(np.atleast_3d, x), lambda xs: 2),
    np.column_stack: (_column, lambda xs: 1),
    np.concatenate: (_same, None),
    np.stack: (_same, None),
}


def is_join(func):
    """Whether ``func`` takes its arrays as one sequence and is recorded here
    (``SEQUENCE_FORMS`` also holds ``np.linalg.multi_dot``, which rules.linalg adds)."""
    return func in SEQUENCE_FORMS or func in _PROMOTED or func is np.block


def join(func, args, kwargs):
    """``func(*args, **kwargs)`` for a function of which :func:`is_join` holds, recorded."""
    if kwargs.get("out") is not None or any(a is not None for a in args[2:3]):
        raise TypeError(f"numpy.{func.__name__}(..., out=...) on Tensors: srcdiff does not "
                        "write into arrays; use the result")
    kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    dtype, casting = kwargs.pop("dtype", None), kwargs.pop("casting", "same_kind")
    if func is np.block:
        if args[1:] or kwargs:
            raise TypeError(f"numpy.block() takes one argument, the nested lists; got "
                            f"{[*args[1:], *kwargs]}")
        result = _block(args[0])
    else:
        result = _join(func, args, kwargs)
    if dtype is None or result.dtype == np.dtype(dtype):
        return result
    if not np.can_cast(result.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {result.dtype} to {np.dtype(dtype)} "
                        f"according to the rule {casting!r}")
    return apply(cast, result, np.dtype(dtype))


def _join(func, args, kwargs):
    # an item that is a list is the array NumPy makes of it (its Tensors stacked)
    sequence = [_array_of(x) if isinstance(x, (list, tuple)) else x for x in args[0]]
    if args[1:]:
        kwargs = dict(kwargs, axis=args[1])
    unknown = set(kwargs) - {"axis"}
    if unknown:
        raise TypeError(f"numpy.{func.__name__}() got an unexpected keyword argument "
                        f"{sorted(unknown)[0]!r}")
    primitive = SEQUENCE_FORMS.get(func, concatenate)
    if func not in _PROMOTED:  # np.linalg.multi_dot: no axis, the arrays are all it takes
        return apply(primitive, *sequence)
    if not len(sequence):
        raise ValueError("need at least one array to concatenate")
    promote, axis_of = _PROMOTED[func]
    items = [promote(x) for x in sequence]
    axis = kwargs.get("axis", 0) if axis_of is None else axis_of(items)
    if axis is None and func is np.concatenate:  # axis=None joins the flattened items
        items, axis = [apply(np.ravel, x) for x in items], 0
    return apply(primitive, *items, axis=axis)


def _block(arrays):
    """``np.block(arrays)``: the innermost lists joined along the last axis, the lists
    holding them along the one before, and so on; every item first gets leading axes
    of length one up to the result's rank (the depth of the nesting, or the largest
    rank of an item)."""
    depths, ranks = set(), [0]

    def survey(x, depth):
        if isinstance(x, tuple):
            raise TypeError("numpy.block: tuples are not allowed in the nested lists; "
                        "use lists")
        if isinstance(x, list):
            if not x:
                raise ValueError("numpy.block: lists cannot be empty")
            for item in x:
                survey(item, depth + 1)
        else:
            depths.add(depth)
            ranks.append(np.ndim(_raw(x)))

    survey(arrays, 0)
    if len(depths) != 1:
        raise ValueError("numpy.block: list depths are mismatched")
    (depth,) = depths
    rank = max(depth, *ranks)

    def build(x, level):
        if isinstance(x, list):
            return apply(concatenate, *[build(item, level + 1) for item in x],
                         axis=level - depth)
        shape = np.shape(_raw(x))
        if not isinstance(x, _ArrayLike):
            x = np.asarray(x)
        return apply(np.reshape, x, (1,) * (rank - len(shape)) + shape)

    if depth == 0:  # a single array: a copy, as NumPy's is
        return apply(np.copy, build(arrays, 0))
    return build(arrays, 0)

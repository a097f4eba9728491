"""Rules of functions that move elements around without changing them."""
import operator

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .helpers import (append_parts, batch_axes, clip_passes, clipped_high, clipped_low,
                      concat_adjoint, cut, diagonal_adjoint, either, from_end,
                      gathered_adjoint, index_array, pad_adjoint, pad_values_adjoint, real_part,
                      reduced_axes, repeat_adjoint, reshape_back, reshape_like, stack_adjoint,
                      stood, take_adjoint, take_along_axis_adjoint, tile_adjoint, unbroadcast,
                      unindex, untranspose, where_zero)
from .registry import (ANY, defexpansion, defform, defvjp, defvjp_argnum, nondifferentiable,
                       primitive)

# view=True: the result may share the first argument's memory (the compiler must know).
# batches=True: the rule keeps leading batch axes of the adjoint (via reshape_like, say).
defvjp(np.reshape,
       lambda g, ans, x, shape=None, order="C", *, copy=None: reshape_back(g, x, order),
       view=True, batches=True)
defvjp(np.ravel, lambda g, ans, x, order="C": reshape_back(g, x, order), view=True,
       batches=True)
for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    defvjp(_f, lambda g, ans, x: reshape_like(g, x), view=True, batches=True)
# their axis= reaches the compiler by name (a keyword only **kw takes is refused)
defvjp(np.squeeze, lambda g, ans, a, axis=None: reshape_like(g, a), view=True, batches=True)
defvjp(np.expand_dims, lambda g, ans, a, axis: reshape_like(g, a), view=True, batches=True)
defvjp(np.transpose, lambda g, ans, x, axes=None: untranspose(g, x, axes), view=True,
       batches=True)
defvjp(np.swapaxes,  # axes counted from the end name the same axes past a batch's
       lambda g, ans, x, axis1, axis2: np.swapaxes(g, from_end(axis1, x), from_end(axis2, x)),
       view=True, batches=True)
defvjp(np.moveaxis,
       lambda g, ans, x, source, destination:
       np.moveaxis(g, from_end(destination, x), from_end(source, x)), view=True, batches=True)
defvjp(np.broadcast_to, lambda g, ans, x, shape, **kw: unbroadcast(g, x), view=True,
       batches=True)
defvjp(np.flip, lambda g, ans, x, axis=None: np.flip(g, axis), view=True)
defvjp(np.fliplr, lambda g, ans, x: np.fliplr(g), view=True)
defvjp(np.flipud, lambda g, ans, x: np.flipud(g), view=True)
defvjp(np.roll, lambda g, ans, x, shift, axis=None: np.roll(g, np.negative(shift), axis))
defvjp(np.rot90, lambda g, ans, m, k=1, axes=(0, 1): np.rot90(g, -k, axes), view=True)
defvjp(np.append,
       lambda g, ans, arr, values, axis=None: append_parts(g, arr, values, axis)[0],
       lambda g, ans, arr, values, axis=None: append_parts(g, arr, values, axis)[1])
defvjp(np.tile, lambda g, ans, x, reps: tile_adjoint(g, x, reps))
defvjp(np.triu, lambda g, ans, x, k=0: np.triu(g, k))
defvjp(np.tril, lambda g, ans, x, k=0: np.tril(g, k))
defvjp(np.copy, lambda g, ans, x, *args, **kw: g, batches=True)
defvjp(operator.getitem, lambda g, ans, x, index: unindex(g, index, x, batch_axes()),
       batches=True)
defvjp(np.take, lambda g, ans, x, indices, axis=None, **kw: take_adjoint(g, x, indices, axis))
defvjp(np.take_along_axis,
       lambda g, ans, x, indices, axis=-1: take_along_axis_adjoint(g, x, indices, axis))
defvjp(np.sort,
       lambda g, ans, x, axis=-1, **kw:
       take_along_axis_adjoint(g, x, np.argsort(x, axis=axis), axis))
defvjp(np.repeat, lambda g, ans, x, repeats, axis=None: repeat_adjoint(g, x, repeats, axis))
# constant_values: by keyword only (np.pad's **kwargs), here its fourth input.
defvjp(np.pad,
       lambda g, ans, array, pad_width, mode="constant", constant_values=0, reflect_type="even",
       **kw: pad_adjoint(g, array, pad_width, mode, reflect_type),
       None,
       None,
       lambda g, ans, array, pad_width, mode="constant", constant_values=0, **kw:
       pad_values_adjoint(g, array, pad_width, constant_values))
# np.diag builds a matrix from a vector, or takes the diagonal (a view) of a matrix.
defvjp(np.diag,
       lambda g, ans, x, k=0:
       np.diagonal(g, k) if np.ndim(x) == 1 else diagonal_adjoint(g, x, k, 0, 1), view=True)
defvjp(np.diagonal,
       lambda g, ans, x, offset=0, axis1=0, axis2=1: diagonal_adjoint(g, x, offset, axis1, axis2),
       view=True)
defvjp(np.where,
       None,
       lambda g, ans, condition, x, y: unbroadcast(where_zero(condition, g), x),
       lambda g, ans, condition, x, y: unbroadcast(where_zero(np.logical_not(condition), g), y),
       batches=True)
# clip passes the adjoint at its bounds, as TensorFlow's clip_by_value does.
# NumPy 2 also spells the bounds min= and max=: the rule reads either spelling.
defvjp(np.clip,
       lambda g, ans, a, a_min=None, a_max=None, out=None, min=None, max=None:
       unbroadcast(where_zero(clip_passes(a, either(a_min, min), either(a_max, max)), g), a),
       lambda g, ans, a, a_min=None, a_max=None, out=None, min=None, max=None:
       unbroadcast(where_zero(clipped_low(a, a_min, either(a_max, max)), g), a_min),
       lambda g, ans, a, a_min=None, a_max=None, out=None, min=None, max=None:
       unbroadcast(where_zero(clipped_high(a, either(a_min, min), a_max), g), a_max),
       batches=True)

# partition's order within each side of kth is NumPy's to choose: each element of ans is
# matched to the element of a of the same rank instead (the nth smallest to the nth).
defvjp(np.partition,
       lambda g, ans, a, kth, axis=-1, kind="introselect", order=None:
       matched_adjoint(g, ans, a, axis))
defvjp(np.diagflat, lambda g, ans, v, k=0: np.reshape(np.diagonal(g, k), np.shape(v)))
defvjp(np.rollaxis,
       lambda g, ans, a, axis, start=0:
       np.moveaxis(g, from_end(rolled_to(axis, start, a), a), from_end(axis, a)),
       view=True, batches=True)
# Each copies elements of its array: the same call on their positions (index_array)
# says which; -1 marks those that come from elsewhere (insert's values, and its array's).
defvjp(np.insert,
       lambda g, ans, arr, obj, values, axis=None:
       gathered_adjoint(g, np.insert(index_array(arr), obj, -1, axis), arr),
       None,
       lambda g, ans, arr, obj, values, axis=None:
       gathered_adjoint(g, np.insert(np.full(np.shape(arr), -1), obj, index_array(values), axis),
                        values))
defvjp(sliding_window_view,  # a view: overlapping windows share elements
       lambda g, ans, x, window_shape, axis=None, *, subok=False, writeable=False:
       gathered_adjoint(g, sliding_window_view(index_array(x), window_shape, axis), x),
       view=True)
defvjp(np.delete,
       lambda g, ans, arr, obj, axis=None:
       gathered_adjoint(g, np.delete(index_array(arr), obj, axis), arr))
defvjp(np.resize,
       lambda g, ans, a, new_shape: gathered_adjoint(g, np.resize(index_array(a), new_shape), a))
defvjp(np.compress,
       None,
       lambda g, ans, condition, a, axis=None, out=None:
       gathered_adjoint(g, np.compress(condition, index_array(a), axis), a))
defvjp(np.extract,
       None,
       lambda g, ans, condition, arr:
       gathered_adjoint(g, np.extract(condition, index_array(arr)), arr))


def matched_adjoint(g, ans, x, axis):
    """The adjoint of ``x`` in ``ans``, its elements in another order along ``axis``:
    the element of ``x`` of each rank gets ``g`` of the element of ``ans`` of that rank
    (stable sorts of both: equal elements in order of position)."""
    if axis is None:
        return np.reshape(matched_adjoint(g, ans, np.ravel(x), 0), np.shape(x))
    sorted_g = np.take_along_axis(g, np.argsort(ans, axis=axis, kind="stable"), axis)
    return take_along_axis_adjoint(sorted_g, x, np.argsort(x, axis=axis, kind="stable"), axis)


def rolled_to(axis, start, x):
    """The position ``np.rollaxis(x, axis, start)`` moves ``axis`` to: before the axis
    that was at ``start``."""
    n = np.ndim(x)
    axis, start = axis % n, start + n if start < 0 else start
    return start - 1 if axis < start else start


def select(condlist, choicelist, default=0):
    """``np.select``: where a condition holds first, its choice, where none does,
    ``default``: ``np.where`` from the last condition back to the first."""
    if len(condlist) != len(choicelist) or not len(condlist):
        raise ValueError("np.select takes as many choices as conditions, at least one")
    out = default
    for k in range(len(condlist) - 1, -1, -1):
        out = np.where(condlist[k], choicelist[k], out)
    return out


def chosen(a, n, mode):
    """Which of ``n`` choices ``np.choose(a, choices, mode=mode)`` takes at each
    element: np.choose of their positions (it wraps, clips or raises)."""
    return np.choose(a, np.arange(n), mode=mode)


nondifferentiable(chosen)


def choose(a, choices, out=None, mode="raise"):
    """``np.choose``: at each element, the choice ``a`` names, by ``np.where``."""
    if out is not None:
        raise TypeError("np.choose(..., out=...) is not differentiated: use the result")
    picks = chosen(a, len(choices), mode)
    result = 0
    for k in range(len(choices)):
        result = np.where(picks == k, choices[k], result)
    return result


def trimmed(filt, trim, axis):
    """The slices ``np.trim_zeros(filt, trim, axis)`` keeps of ``filt``: along each axis
    it trims, from the first (``'f'`` in ``trim``) to the last (``'b'``) slice that
    holds a non-zero; nothing if all are zero."""
    trim = trim.lower()
    if trim not in ("fb", "bf", "f", "b"):
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    found = np.argwhere(np.asarray(np.not_equal(filt, 0)))
    ends = [None] * np.ndim(filt)
    if len(found):
        start = np.min(found, axis=0) if "f" in trim else ends
        stop = np.max(found, axis=0) + 1 if "b" in trim else ends
    else:
        start = stop = [0] * np.ndim(filt)
    axes = reduced_axes(filt, axis)
    return (Ellipsis,) + tuple(slice(start[d], stop[d]) if d in axes else slice(None)
                               for d in range(np.ndim(filt)))


nondifferentiable(trimmed)


def trim_zeros(filt, trim="fb", axis=None):
    """``np.trim_zeros``: a slice of ``filt``.  A trimmed zero that moved would be kept:
    the slope there is the slice's (zero), as a sort's is its order's."""
    return filt[trimmed(filt, trim, axis)]


defexpansion(np.select, select)
defexpansion(np.choose, choose)
defexpansion(np.trim_zeros, trim_zeros)


@primitive
def concatenate(*xs, axis=0):
    """``np.concatenate`` with its inputs as arguments, so each has an adjoint."""
    return np.concatenate(xs, axis=axis)


@primitive
def stack(*xs, axis=0):
    """``np.stack`` with its inputs as arguments, so each has an adjoint."""
    return np.stack(xs, axis=axis)


@primitive
def cast(x, dtype):
    """``x`` converted to ``dtype`` (a new array)."""
    return np.asarray(x).astype(dtype)


@primitive
def item(x, *index):
    """``x.item(*index)``: one element of ``x`` as the Python number NumPy gives (a
    complex one stays complex, where ``float`` would drop its imaginary part)."""
    return np.asarray(x).item(*index)


def item_adjoint(g, ans, x, index):
    """The adjoint of ``x`` in ``item(x, *index)``: ``g``, as x's type, at that element."""
    g = converted_back(g, ans, x)
    if isinstance(x, (float, int, complex)):
        return g
    if not index:
        return np.reshape(g, np.shape(x))
    index = index[0] if len(index) == 1 and isinstance(index[0], tuple) else index
    flat = index[0] if len(index) == 1 else np.ravel_multi_index(index, np.shape(x))
    return np.reshape(unindex(g, flat, np.ravel(x)), np.shape(x))


defvjp(item, lambda g, ans, x, *index: item_adjoint(g, ans, x, index), number=True)
defvjp_argnum(concatenate, lambda i, g, ans, *xs, axis=0: concat_adjoint(i, g, xs, axis))
defvjp_argnum(stack, lambda i, g, ans, *xs, axis=0: stack_adjoint(i, g, axis))
def converted_back(g, ans, x):
    """The adjoint of ``x`` in a conversion ``ans`` of it: ``g`` as x's type, or none
    through a conversion to integers or bools (piecewise constant, as ``floor``)."""
    if not np.issubdtype(np.result_type(ans), np.inexact):
        return np.zeros_like(g)
    if not np.iscomplexobj(ans):
        g = real_part(g)
    return g if isinstance(x, (float, int)) else cast(g, np.result_type(x))


defvjp(cast, lambda g, ans, x, dtype: converted_back(g, ans, x), batches=True)
# Conversions: compiled code differentiates through them.  (On the tape NumPy never
# hands np.asarray(t) to the Tensor, so it is refused while a tape follows t.)
# Each may return its input itself (a float64 array): a view.
defvjp(np.float64, lambda g, ans, x: converted_back(g, ans, x), view=True, batches=True)
defvjp(np.asarray,
       lambda g, ans, a, dtype=None, order=None, *, device=None, copy=None, like=None:
       converted_back(g, ans, a), view=True)
if hasattr(np, "astype"):  # NumPy 2; x itself given copy=False and x's dtype
    defvjp(np.astype, lambda g, ans, x, dtype, *, copy=True, device=None:
           converted_back(g, ans, x), view=True, batches=True)

nondifferentiable(np.zeros, np.ones, np.empty, np.eye, np.identity)

# Made of values, which carry their gradients: the fill value of each element, the
# bounds of each point between them, the start and step of each value of a range
defvjp(np.full, None,
       lambda g, ans, shape, fill_value, dtype=None, order="C", *, device=None, like=None:
       unbroadcast(g, fill_value))
defvjp(np.full_like,  # a gives only a shape and dtype
       lambda g, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None, *,
       device=None: np.zeros_like(a),
       lambda g, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None, *,
       device=None: unbroadcast(converted_back(g, ans, fill_value), fill_value))
defvjp(np.linspace,
       lambda g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None,
       axis=0, *, device=None: unbroadcast(spaced(g, ans, num, endpoint, axis, 1.0, -1.0),
                                           start),
       lambda g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None,
       axis=0, *, device=None: unbroadcast(spaced(g, ans, num, endpoint, axis, 0.0, 1.0),
                                           stop))
defvjp(np.arange,
       lambda g, ans, start, stop=None, step=None, *args, **kwargs:
       range_start(g, start, stop),
       lambda g, ans, start, stop=None, step=None, *args, **kwargs: 0.0 * stop,
       lambda g, ans, start, stop=None, step=None, *args, **kwargs:
       np.sum(g * np.arange(np.size(ans))))


def range_start(g, start, stop):
    """The adjoint of ``np.arange``'s first argument: every value moves with the start,
    but ``arange(stop)`` counts from 0, and its one argument moves no value."""
    return 0.0 * start if stop is None else np.sum(g)


def spaced(g, ans, num, endpoint, axis, base, slope):
    """The adjoint of a bound of ``np.linspace``, point k at ``t = k / (num - 1)`` of the
    way (``num`` if not ``endpoint``) from start to stop: ``g`` summed along ``axis``
    weighted by ``base + slope * t`` (``1 - t`` for start, ``t`` for stop)."""
    if isinstance(ans, tuple):
        raise NotImplementedError("np.linspace(..., retstep=True) has no adjoint: "
                                  "compute the step from the bounds")
    t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    axis %= np.ndim(ans)
    weights = np.reshape(base + slope * t, (num,) + (1,) * (np.ndim(ans) - 1 - axis))
    return np.sum(g * weights, axis=axis)


def ranked(a, rank):
    """The shape of ``a`` given leading axes up to ``rank`` (``np.array(a, ndmin=rank)``)."""
    return (1,) * (rank - np.ndim(a)) + np.shape(a)


nondifferentiable(ranked)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``np.logspace``: ``base`` to the powers ``np.linspace`` spaces, by NumPy's steps."""
    if np.ndim(base):  # broadcast with the bounds first: it may move the axis
        rank = len(common_shape((start, stop, base)))
        start, stop = np.reshape(start, ranked(start, rank)), np.reshape(stop, ranked(stop, rank))
        base = np.expand_dims(np.reshape(base, ranked(base, rank)), axis)
    powers = np.power(base, np.linspace(start, stop, num, endpoint, axis=axis))
    return powers if dtype is None else cast(powers, dtype)


defexpansion(np.logspace, logspace)


def split_bounds(n, indices_or_sections):
    """Where ``np.array_split`` cuts an axis of length ``n``: at the indices given, or
    into that many pieces, the first ``n % sections`` of them one longer; 0 and ``n``
    first and last."""
    if np.ndim(indices_or_sections):
        return [0] + [int(i) for i in indices_or_sections] + [n]
    sections = int(indices_or_sections)
    if sections <= 0:
        raise ValueError("number sections must be larger than 0.")
    each, extra = divmod(n, sections)
    return [0] + [int(b) for b in np.cumsum(extra * [each + 1] + (sections - extra) * [each])]


nondifferentiable(split_bounds)


def array_split(x, indices_or_sections, axis=0):
    """``np.array_split`` as slices of ``x``: each piece is a recorded ``x[...]``."""
    bounds = split_bounds(np.shape(x)[axis], indices_or_sections)
    return [x[cut(np.ndim(x), axis, start, stop)] for start, stop in zip(bounds[:-1],
                                                                         bounds[1:])]


def split(x, indices_or_sections, axis=0):
    """``np.split``: ``np.array_split`` into equal pieces."""
    if np.ndim(indices_or_sections) == 0 and np.shape(x)[axis] % indices_or_sections:
        raise ValueError("array split does not result in an equal division")
    return array_split(x, indices_or_sections, axis)


def across(ary):
    """The axis ``np.hsplit`` cuts ``ary`` along: the second, the first of a vector."""
    if np.ndim(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return 1 if np.ndim(ary) > 1 else 0


nondifferentiable(across)


def hsplit(ary, indices_or_sections):
    """``np.hsplit``: ``np.split`` across ``ary``."""
    return split(ary, indices_or_sections, across(ary))


def vsplit(ary, indices_or_sections):
    """``np.vsplit``: ``np.split`` along the first axis."""
    if np.ndim(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections)


def dsplit(ary, indices_or_sections):
    """``np.dsplit``: ``np.split`` along the third axis."""
    if np.ndim(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def unstack(x, axis=0):
    """``np.unstack``: the slices of ``x`` along ``axis``.  (NumPy's ``x`` is
    positional-only and ``axis`` keyword-only, which the compiler compiles in no
    expansion: here ``axis`` may be passed by position too.)"""
    return tuple(np.moveaxis(x, axis, 0))


# The compiler joins the adjoints of unpacked pieces (a, b = np.split(x, 2)) back along
# the axis a split declares, and compiles a call of the expansion where the pieces are
# kept together (np.split(x, 2)[0]).  hsplit's axis depends on x's rank, dsplit needs
# three, and unstack's pieces are slices: those are always calls of their expansions.
defexpansion(np.array_split, array_split, splits=0)
defexpansion(np.split, split, splits=0)
defexpansion(np.vsplit, vsplit, splits=0)
defexpansion(np.hsplit, hsplit)
defexpansion(np.dsplit, dsplit)
if hasattr(np, "unstack"):  # NumPy 2.1
    defexpansion(np.unstack, unstack)


def common_shape(arrays):
    """The shape ``arrays`` broadcast to together."""
    return np.broadcast_shapes(*[np.shape(a) for a in arrays])


nondifferentiable(common_shape)


def broadcast_all(arrays):
    """``np.broadcast_arrays(*arrays)``: each array broadcast to the shape of them all."""
    shape = common_shape(arrays)
    return tuple(np.broadcast_to(a, shape) for a in arrays)


def grid_axes(n, indexing):
    """The axis ``np.meshgrid`` stands each of ``n`` vectors along."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    return [1, 0, *range(2, n)] if indexing == "xy" and n > 1 else list(range(n))


nondifferentiable(grid_axes)


def grids(xi, copy, sparse, indexing):
    """``np.meshgrid(*xi, ...)``: each vector stood along its own axis (the first two
    swapped for ``indexing='xy'``), broadcast to the grid unless ``sparse``."""
    axes = grid_axes(len(xi), indexing)
    out = [np.reshape(x, stood(len(xi), a)) for x, a in zip(xi, axes)]
    out = out if sparse else broadcast_all(out)
    return tuple(np.copy(o) for o in out) if copy else tuple(out)


def broadcast_arrays(*args):
    """``np.broadcast_arrays`` as the compiler compiles it: without ``subok``."""
    arrays = args  # (the compiler passes a tuple of values on by name)
    return broadcast_all(arrays)


def meshgrid(*xi):
    """``np.meshgrid`` as the compiler compiles it: without keywords."""
    vectors = xi  # (the compiler passes a tuple of values on by name)
    return grids(vectors, True, False, "xy")


def meshgrid_given(*xi, copy=True, sparse=False, indexing="xy"):
    """``np.meshgrid`` given a keyword: on the tape (the compiler compiles no function
    of *args beside keyword-only parameters, and refuses it)."""
    return grids(xi, copy, sparse, indexing)


# A call given a keyword takes the form beside: on the tape only.
defexpansion(np.broadcast_arrays, broadcast_arrays)
defexpansion(np.meshgrid, meshgrid)
defform(np.broadcast_arrays, "subok", ANY, lambda *args, subok=False: broadcast_all(args))
for _keyword in ("copy", "sparse", "indexing"):
    defform(np.meshgrid, _keyword, ANY, meshgrid_given)


# NumPy functions that take their inputs as one sequence, and the primitives
# that take them as arguments (so each input has its own adjoint).
SEQUENCE_FORMS = {np.concatenate: concatenate, np.stack: stack}

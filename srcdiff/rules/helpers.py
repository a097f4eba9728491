"""NumPy helpers that derivative rules call.

Each is written with recorded NumPy primitives only, so a rule that calls it
still differentiates when it runs on Tensors under an outer tape.

A vectorised jacobian walks the tape once for all its rows: every adjoint then
has ``batch_axes()`` leading axes, one entry per row, that the shape helpers
below (``unbroadcast``, ``unreduce``, ``reshape_like``) keep as they are.
Which rules cope with such adjoints is their trait ``batches`` (``registry.Traits``).

``@measures(k, ...)`` marks the arguments a helper reads only for their shape
(``np.shape``, ``.size``): the compiler keeps the shape of such a value for the
backward pass, not the value."""
import contextlib
import inspect
import string
import threading

import numpy as np

from .registry import defvjp, nondifferentiable, primitive

def measures(*positions):
    """Record that the decorated helper reads its arguments at ``positions`` only
    for their shape, never their values."""
    def mark(helper):
        helper.measures = positions
        return helper
    return mark


def for_matrices(form):
    """Record ``form`` (a lambda of the helper's parameters): what the decorated
    helper computes when the arguments after its first are all matrices (ndim 2).
    The compiler, which knows the ranks of most names, inlines it in place of a
    call (``dh = dout @ W.T``); the helper's own branch for matrices calls it."""
    def mark(helper):
        helper.matrices = form
        return helper
    return mark


def measured_args(name):
    """The positions of the arguments that helper ``name`` only measures (none if
    ``name`` is no helper of this module)."""
    return getattr(globals().get(name), "measures", ())


class _Walk(threading.local):
    """Tapes are thread-local, and so are their backward walks."""

    batch_axes = 0  # every thread's default: read on each unbroadcast, so no getattr fallback


_walk = _Walk()


def batch_axes():
    """How many leading axes of the adjoints are a batch of rows (0: none)."""
    return _walk.batch_axes


@contextlib.contextmanager
def batched(axes):
    """Let the helpers treat ``axes`` leading axes of adjoints as a batch of rows."""
    previous = batch_axes()
    _walk.batch_axes = axes
    try:
        yield
    finally:
        _walk.batch_axes = previous


@measures(1)
def zeros_rows(rows, x):
    """The zero adjoint of ``x`` for each of ``rows`` (the batch's leading shape): what
    ``np.zeros_like(x)`` is in a walk without a batch, with the batch axes in front."""
    dtype = getattr(x, "dtype", None)
    if not isinstance(dtype, np.dtype) or isinstance(x, np.generic):  # a number: 0.0 unbatched
        dtype = np.result_type(type(x) if dtype is None else dtype, float)
    return np.zeros(rows + np.shape(x), dtype)


_add_reduce = np.add.reduce


@measures(1)
def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x``, undoing NumPy broadcasting; and undo its
    promotion: a real ``x`` met a complex operand (``1j * x``), and its adjoint is the
    real part of ``g`` (as TensorFlow casts it, and the gradient of a real value is)."""
    # Every binary op's adjoint comes here, mostly with nothing to undo: arrays
    # and Tensors carry their shape, far cheaper to read than np.shape's.
    try:  # two plain reads: cheaper than a pair, and this is the tape's commonest call
        shape = x.shape
        gshape = g.shape
    except AttributeError:  # a Python number
        shape, gshape = np.shape(x), np.shape(g)
    if gshape != shape:
        g = _summed_to(g, gshape, shape)
    if type(g) is np.ndarray and g.dtype.kind == "c" and not np.iscomplexobj(x):
        return g.real  # (an adjoint added into a real one in place must be real)
    return g


def unbroadcast_to(g, shape):
    """``unbroadcast(g, x)`` given ``x.shape``: what compiled code keeps of an array
    whose adjoints only unbroadcast to it (compiler/bare_shapes.py)."""
    try:
        gshape = g.shape
    except AttributeError:  # a Python number
        gshape = np.shape(g)
    if gshape == shape:
        return g
    return _summed_to(g, gshape, shape)


def _summed_to(g, gshape, shape):
    """``g`` (of ``gshape``) summed down to ``shape``, which it was broadcast from."""
    if gshape[1:] == shape and not _walk.batch_axes:  # a bias: its own short path
        return _add_reduce(g, 0)  # (axis 0, by position: cheaper than the keyword)
    keep = _walk.batch_axes
    lead = len(gshape) - len(shape)
    stretched = tuple(lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    summed = tuple(range(keep, lead)) + stretched
    if not summed:  # a batch of adjoints of x's shape: nothing to undo
        return g
    # np.add.reduce is np.sum without its dispatch layers (on Tensors it is
    # recorded as np.sum), which cost more than the sum of a small array.
    g = np.add.reduce(g, axis=summed)
    if not stretched:  # only leading axes were summed: g has its shape already
        return g
    return np.reshape(g, tuple(gshape[:keep]) + tuple(shape))


@measures(1)
def unreduce(g, x, axis, keepdims):
    """Broadcast the adjoint of a reduction of ``x`` back to ``x``'s shape.

    Any axes ``g`` has before those of the reduction's result (a batch of rows)
    are kept, so the helper serves the result itself too (``unreduce(ans, ...)``)."""
    try:
        shape = x.shape
    except AttributeError:  # a Python number
        shape = np.shape(x)
    if getattr(g, "ndim", 0) == 0:  # a full reduction, and no batch: no axes to put back
        if type(g) is float or isinstance(g, (np.ndarray, np.generic)):
            return _spread(g, shape)
        return np.broadcast_to(g, shape)  # a Tensor: recorded, for higher derivatives
    if not keepdims:
        # Counted from the end, the reduced axes are past any leading batch axes.
        g = np.expand_dims(g, tuple(a - len(shape) for a in reduced_axes(x, axis)))
    return np.broadcast_to(g, np.shape(g)[:np.ndim(g) - len(shape)] + shape)


def _spread(g, shape):
    """The number ``g`` (a NumPy number, a float or a 0-d array) seen as a read-only
    array of ``shape``: what np.broadcast_to returns, made directly (its setup costs
    more than the arithmetic at small sizes) over a NumPy number's buffer, which is
    read-only."""
    g = spread_number(g)
    return np.ndarray(shape, g.dtype, g, 0, (0,) * len(shape))


def spread_number(g):
    """The NumPy number a spread of ``g`` (a number or a 0-d array) holds: ``g``'s
    value and dtype (a Python float's is float64), which, unlike a Python number's,
    takes part in type promotion.  Generated code multiplies by it in place of the
    spread where that gives the same array (compiler/spread.py)."""
    if type(g) is np.float64 or type(g) is np.float32:  # the commonest: as they are
        return g
    return g if isinstance(g, np.generic) else np.asarray(g)[()]


def last_writes(g, index):
    """``g[index]``, the adjoint of ``v`` in ``x[index] = v``, where an element that
    ``index`` names more than once counts for its last write only: NumPy keeps that
    one, and the earlier values reach nothing."""
    part = g[index]
    order = np.arange(part.size).reshape(part.shape)
    slot = np.full(np.shape(g), -1)
    slot[index] = order  # NumPy's own rule decides which write lands
    return np.where(slot[index] == order, part, 0)


@measures(1)
def reshape_like(g, x):
    """``g`` reshaped to the shape of ``x``: the adjoint of any reshape of ``x``."""
    return np.reshape(g, np.shape(g)[:batch_axes()] + np.shape(x))


@primitive
def layout(x, order):
    """``"C"`` or ``"F"``: the order ``order`` reads the elements of array ``x`` in."""
    if order not in ("A", "K"):
        return order
    flags = x.flags
    if order == "K" and not (flags.c_contiguous or flags.f_contiguous):
        raise NotImplementedError("the gradient of np.ravel(x, order='K') of an array "
                                  "neither C- nor Fortran-contiguous")
    return "F" if flags.f_contiguous and not flags.c_contiguous else "C"


nondifferentiable(layout)


def reshape_back(g, x, order):
    """``g`` laid back in the shape of ``x``, its elements read and written in ``order``
    (NumPy's: ``"C"`` last index fastest, ``"F"`` first, ``"A"`` and ``"K"`` as ``x`` is
    laid out): the adjoint of ``x`` in ``np.reshape(x, shape, order)`` or ``np.ravel``.
    In ``"F"`` order a reshape is the ``"C"`` one of the axes reversed."""
    if layout(x, order) == "C":
        return reshape_like(g, x)
    lead = tuple(range(batch_axes()))
    flipped = lead + tuple(range(np.ndim(g) - 1, len(lead) - 1, -1))
    back = np.reshape(np.transpose(g, flipped), np.shape(g)[:len(lead)] + np.shape(x)[::-1])
    return np.transpose(back, lead + tuple(range(np.ndim(back) - 1, len(lead) - 1, -1)))


@measures(0, 1)
def reduced_count(x, ans):
    """How many elements of ``x`` were reduced into each element of ``ans``."""
    return getattr(x, "size", 1) // max(getattr(ans, "size", 1), 1)  # numbers have size 1


def extremum_adjoint(g, ans, x, axis, keepdims):
    """The adjoint of a max or min: ties share it evenly, as in TensorFlow."""
    hit = x == unreduce(ans, x, axis, keepdims)
    return unreduce(g, x, axis, keepdims) * hit / np.sum(hit, axis=axis, keepdims=True)


def prod_adjoint(g, ans, x, axis, keepdims):
    """The adjoint of ``np.prod``: ``g`` times the product of the other elements.

    That product is ``ans / x``, except at a zero: there it is the product of
    the non-zeros if the zero is its slice's only one, else 0."""
    g = unreduce(g, x, axis, keepdims)
    ans = unreduce(ans, x, axis, keepdims)
    zero = x == 0
    if not np.any(zero):
        return g * ans / x
    safe = np.where(zero, 1, x)
    rest = np.prod(safe, axis=axis, keepdims=True)  # the product of the non-zeros
    lone = np.sum(zero, axis=axis, keepdims=True) == 1
    return g * np.where(zero, where_zero(lone, rest), ans / safe)


def reduced_axes(x, axis):
    """``axis`` as a tuple of non-negative axes of ``x`` (None: all of them)."""
    if axis is None:
        return tuple(range(np.ndim(x)))
    return tuple(a % np.ndim(x) for a in np.atleast_1d(axis))


def weights_like(x, axis, weights):
    """``np.average``'s weights shaped to broadcast against ``x``."""
    if np.ndim(weights) == np.ndim(x):
        return weights
    axes = reduced_axes(x, axis)
    return np.reshape(weights, [n if d in axes else 1 for d, n in enumerate(np.shape(x))])


def average_adjoint(g, ans, x, axis, weights, keepdims):
    """The adjoint of ``x`` in ``np.average``: ``g`` shared out in proportion to the weights."""
    g = unreduce(g, x, axis, keepdims)
    if weights is None:
        return g / reduced_count(x, ans)
    w = weights_like(x, axis, weights)
    return g * w / np.sum(w, axis=axis, keepdims=True)


def average_weights_adjoint(g, ans, x, axis, weights, keepdims):
    """The adjoint of ``weights`` in ``np.average``: how far each value is from the average."""
    w = weights_like(x, axis, weights)
    d = unreduce(g, x, axis, keepdims) * (x - unreduce(ans, x, axis, keepdims))
    return np.reshape(unbroadcast(d / np.sum(w, axis=axis, keepdims=True), w), np.shape(weights))


def norm_adjoint(g, ans, x, ord, axis, keepdims):
    """The adjoint of ``np.linalg.norm``: the vector p-norms, and the matrix norms
    (Frobenius's, and those of :func:`matrix_norm_slope`)."""
    matrix = np.ndim(x) == 2 if axis is None else np.size(axis) == 2
    if np.iscomplexobj(x):
        g = real_part(g)
    if ord is None or ord == "fro" or (ord == 2 and not matrix):
        return unreduce(g / ans, x, axis, keepdims) * np.conj(x)
    if matrix:
        return unreduce(g, x, axis, keepdims) * matrix_norm_slope(x, ord, axis)
    if ord in (np.inf, -np.inf):
        return extremum_adjoint(g, ans, np.abs(x), axis, keepdims) * np.conj(np.sign(x))
    if ord == 0:  # the count of the elements that are not 0: piecewise constant
        return np.zeros_like(unreduce(g, x, axis, keepdims))
    scale = unreduce(g / ans ** (ord - 1), x, axis, keepdims)
    return scale * np.abs(x) ** (ord - 1) * np.conj(np.sign(x))


def matrix_norm_slope(x, ord, axis):
    """The derivative of ``np.linalg.norm(x, ord, axis)`` for the matrix norms but
    Frobenius's: the spectral norms (2, -2) and the nuclear norm from the SVD, the
    largest (smallest) column (1, -1) or row (inf, -inf) sum of magnitudes from its
    extremum.  Where the extremal singular value, column or row is tied, the norm
    has no derivative: ties share the slope as max does, the SVD takes its first."""
    axes = (-2, -1) if axis is None else tuple(axis)
    m = np.moveaxis(x, axes, (-2, -1))
    if ord in (2, -2, "nuc"):
        u, s, vh = np.linalg.svd(m, full_matrices=False)
        pick = slice(None) if ord == "nuc" else slice(0, 1) if ord == 2 else slice(-1, None)
        slope = u[..., pick] @ vh[..., pick, :]
    elif ord in (1, -1, np.inf, -np.inf):
        along = -2 if ord in (1, -1) else -1  # the axis each sum runs along
        sums = np.sum(np.abs(m), axis=along)
        hit = sums == (np.max if ord > 0 else np.min)(sums, axis=-1, keepdims=True)
        slope = np.sign(m) * np.expand_dims(hit / np.sum(hit, axis=-1, keepdims=True), along)
    else:
        raise NotImplementedError(f"the gradient of the matrix norm ord={ord!r}")
    if np.iscomplexobj(slope):  # a real result: conjugated in the rules' convention
        slope = np.conj(slope)
    return np.moveaxis(slope, (-2, -1), axes)


def trace_adjoint(g, x, offset, axis1, axis2):
    """The adjoint of ``np.trace``: ``g`` laid along the traced diagonal."""
    eye = np.eye(np.shape(x)[axis1], np.shape(x)[axis2], offset, dtype=np.result_type(g))
    g = np.expand_dims(np.expand_dims(g, -1), -1) * eye
    return np.moveaxis(g, (-2, -1), (axis1, axis2))


def diagonal_adjoint(g, x, offset, axis1, axis2):
    """The adjoint of ``np.diagonal``: ``g`` laid back along the diagonal of zeros like ``x``."""
    shape = np.shape(x)
    axis1, axis2 = axis1 % len(shape), axis2 % len(shape)
    rest = [n for d, n in enumerate(shape) if d not in (axis1, axis2)]
    k = np.arange(np.shape(g)[-1])
    zeros = np.zeros(rest + [shape[axis1], shape[axis2]])
    d = unindex(g, (Ellipsis, k + max(-offset, 0), k + max(offset, 0)), zeros)
    return np.moveaxis(d, (-2, -1), (axis1, axis2))


def T(x):
    """Swap the last two axes (the matrix transpose of a stack of matrices)."""
    return x.T if x.ndim == 2 else np.swapaxes(x, -1, -2)  # .T: an attribute, no dispatch


@for_matrices(lambda g, a, b: g @ b.T)
def matmul_lhs(g, a, b):
    """The adjoint of ``a`` in ``a @ b``, for any ranks ``np.matmul`` accepts."""
    # Matrices and vectors without stacks of matrices to broadcast against have
    # nothing to unbroadcast: the common case gets its own short path (any batch
    # of rows in ``g`` stays as it is). Ranks are read as attributes: np.ndim's
    # dispatch costs more than a small product.
    a_ndim, b_ndim = a.ndim, b.ndim
    if b_ndim == 1:
        if a_ndim == 2:  # the outer product; indexing is far cheaper than np.expand_dims
            return g[..., np.newaxis] * b
        return unbroadcast(np.expand_dims(g, -1) * b, a)
    if a_ndim == 1:
        return unbroadcast(np.expand_dims(g, -2) @ T(b), np.expand_dims(a, 0))[..., 0, :]
    if a_ndim == b_ndim == 2:
        return matmul_lhs.matrices(g, a, b)
    return unbroadcast(g @ T(b), a)


@for_matrices(lambda g, a, b: a.T @ g)
def matmul_rhs(g, a, b):
    """The adjoint of ``b`` in ``a @ b``, for any ranks ``np.matmul`` accepts."""
    a_ndim, b_ndim = a.ndim, b.ndim
    if a_ndim == 1:
        if b_ndim == 1:
            return np.expand_dims(g, -1) * a
        return unbroadcast(np.expand_dims(a, -1) * np.expand_dims(g, -2), b)
    if b_ndim == 1:
        if a_ndim == 2:
            return g @ a
        return unbroadcast(T(a) @ np.expand_dims(g, -1), np.expand_dims(b, -1))[..., 0]
    if a_ndim == b_ndim == 2:
        return matmul_rhs.matrices(g, a, b)
    return unbroadcast(T(a) @ g, b)


def dot_lhs(g, a, b):
    """The adjoint of ``a`` in ``np.dot(a, b)``: a product over the last axis of ``a``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    return tensordot_lhs(g, a, b, (-1, max(np.ndim(b) - 2, 0)))


def dot_rhs(g, a, b):
    """The adjoint of ``b`` in ``np.dot(a, b)``: a product over b's second-to-last axis."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    return tensordot_rhs(g, a, b, (-1, max(np.ndim(b) - 2, 0)))


def log_of_base(x):
    """``log x`` where ``x ** y`` is differentiable in ``y`` (x > 0, or x != 0 if
    complex), else 0, as TensorFlow's gradient of ``pow`` has it."""
    defined = x != 0 if np.iscomplexobj(x) else x > 0
    return np.log(np.where(defined, x, 1))


def real_part(g):
    """The adjoint of a real result of a complex input (``np.real(z)``, ``|z|``, a norm),
    as the rule of such a result must read it: its real part.  Compiled code lets the
    adjoint of a real value pick up an imaginary part where it met a complex operand
    (in ``x * 1j``, real ``x``'s adjoint is complex); that part means nothing, and is
    dropped at a real argument, but a rule back into complex numbers would rotate it
    into the real one."""
    return np.real(g) if np.iscomplexobj(g) else g


def deviation(x, axis, mean=np.mean):
    """``x - mean(x)`` along ``axis``, conjugated for a complex ``x``: the slope of the
    (real) variance, ``|x - mean|**2``'s as ``|z|**2``'s is ``conj(z)`` in the rules'
    convention (``mean=np.nanmean``: of ``np.nanvar``)."""
    d = x - mean(x, axis=axis, keepdims=True)
    return np.conj(d) if np.iscomplexobj(d) else d


def complex_sign_adjoint(g, x):
    """The adjoint of ``np.sign(z) = z / |z|`` for a complex ``z``, which is not
    holomorphic: ``(g - conj(g) conj(z) / z) / (2 |z|)``, 0 at 0 (TensorFlow's gradient
    of ``sign``, in the rules' convention, which the tape conjugates); ``conj(z) / z``
    is ``conj(sign z)**2``."""
    size = np.where(x != 0, np.abs(x), np.inf)  # 0 at 0
    return (g - np.conj(g) * np.conj(np.sign(x)) ** 2) / (2 * size)


@measures(1)
def untranspose(g, x, axes):
    """The adjoint of ``np.transpose(x, axes)``: ``g``'s axes put back in ``x``'s order,
    past any leading batch axes."""
    keep, n = batch_axes(), np.ndim(x)
    order = range(n - 1, -1, -1) if axes is None else np.argsort([a % n for a in axes])
    return np.transpose(g, tuple(range(keep)) + tuple(keep + int(a) for a in order))


@measures(1)
def from_end(axes, x):
    """``axes`` of ``x`` (an int or a sequence of them) counted from the end, as they
    name the same axes of an adjoint with leading batch axes."""
    n = np.ndim(x)
    return axes % n - n if isinstance(axes, (int, np.integer)) else [a % n - n for a in axes]


@primitive
def unindex(g, index, x, keep=0):
    """Scatter-add ``g`` into zeros shaped like ``x`` at ``index`` (the adjoint of ``x[index]``),
    past ``keep`` leading axes of ``g`` (a batch of rows), which it keeps; for a list,
    tuple or dict ``x``, its item adjoint (rules/containers.py)."""
    if isinstance(x, (list, tuple, dict)):
        from .containers import item_adjoint
        return item_adjoint(g, index, x)
    out = np.zeros(np.shape(g)[:keep] + np.shape(x), dtype=np.result_type(g))
    add_at(out, index, g, keep)
    return out


def add_at(out, index, g, keep=0):
    """``np.add.at(out, index, g)`` past ``keep`` leading axes of ``out`` and ``g`` (a
    batch of rows)."""
    if keep:
        out, index, g = _rows_last(out, keep), _past_rows(index, keep), _rows_last(g, keep)
    np.add.at(out, index, g)  # a moved ``out`` is a view: the sums land in the caller's


def take_rows(g, index, keep=0):
    """``g[index]`` past ``keep`` leading axes of ``g`` (a batch of rows)."""
    if not keep:
        return g[index]
    back = tuple(range(-keep, 0))
    return np.moveaxis(_rows_last(g, keep)[_past_rows(index, keep)], back, tuple(range(keep)))


def _rows_last(a, keep):
    """``a`` with its ``keep`` leading axes moved last, where ``a[index]`` keeps them
    last whatever the index (basic or advanced)."""
    return np.moveaxis(a, tuple(range(keep)), tuple(range(-keep, 0)))


def _past_rows(index, keep):
    """``index`` for an array with ``keep`` more axes at the end: an Ellipsis stops
    before them."""
    index = index if isinstance(index, tuple) else (index,)
    return index + (slice(None),) * keep if any(i is Ellipsis for i in index) else index


def one_minus_square(t):
    """``1 - t * t`` (tanh's slope at its value ``t``), computed in the square's own
    array: the same values as ``1 - t * t`` with one array less alive at the peak
    (NumPy reuses a temporary for a subtraction's left operand only) and one
    operation less than ``-(t * t - 1)``.  A Tensor's (a tape recording the rule) is
    computed as written, so that the tape records it."""
    t = t * t
    if type(t) is np.ndarray:
        return np.subtract(1, t, t)  # out by position: cheaper than the keyword
    return 1 - t


def where_zero(cond, x):
    """``x`` where ``cond`` holds, else 0: a mask that never spreads nan or inf."""
    return np.where(cond, x, np.zeros_like(x))


defvjp(unindex, lambda g, ans, gx, index, x, keep=0: take_rows(g, index, keep))


def present(x):
    """Where ``x`` holds a number, not NaN: the elements NumPy's nan-functions read."""
    return np.logical_not(np.isnan(x))


def not_modelled(what):
    """The vjp of an input whose derivative no rule models: it raises, for a missing
    derivative is never a zero."""
    raise NotImplementedError(f"the gradient of {what}")


def index_array(x):
    """The position of each element of ``x`` in ``np.ravel(x)``: a function that only
    moves or copies elements (``np.delete``, ``np.resize``), applied to it, says which
    element of ``x`` each element of its result is."""
    return np.reshape(np.arange(np.size(x)), np.shape(x))


def gathered_adjoint(g, source, x):
    """The adjoint of ``x`` in a result whose elements copy the elements ``source`` of
    ``x`` (positions in ``np.ravel(x)``; -1: an element that copies none): ``g`` summed
    back onto the elements it came from."""
    kept = source >= 0
    return np.reshape(unindex(g[kept], source[kept], np.ravel(x)), np.shape(x))


def cut(ndim, axis, start, stop):
    """The index of ``x[start:stop]`` along ``axis`` of an array ``x`` of ``ndim`` axes."""
    return (slice(None),) * (axis % ndim) + (slice(start, stop),)


def stood(ndim, axis):
    """The shape of a vector stood along ``axis`` of an array of ``ndim`` axes."""
    return tuple(-1 if d == axis % ndim else 1 for d in range(ndim))


nondifferentiable(cut, stood)  # (an index, a shape: compiled code calls them as they are)


def either(value, alias):
    """``value``, or ``alias`` when the caller used the other spelling of the argument."""
    return alias if value is None else value


def clip_passes(x, lo, hi):
    """Where ``np.clip(x, lo, hi)`` is ``x`` itself: bounds included, a bound of None is none."""
    below = False if lo is None else x < lo
    above = False if hi is None else x > hi
    return np.logical_not(np.logical_or(below, above))


def clipped_low(x, lo, hi):
    """Where ``np.clip(x, lo, hi)``, ``minimum(maximum(x, lo), hi)``, is ``lo``: ``x``
    below it, and ``lo`` not above ``hi`` (else ``hi`` is the result everywhere)."""
    low = x < lo
    return low if hi is None else np.logical_and(low, lo <= hi)


def clipped_high(x, lo, hi):
    """Where ``np.clip(x, lo, hi)`` is ``hi``: ``x`` above it, or ``lo`` above it."""
    high = x > hi
    return high if lo is None else np.logical_or(high, lo > hi)


def concat_adjoint(i, g, xs, axis):
    """The slice of ``g`` that input ``i`` of a concatenation along ``axis`` became (of
    the inputs flattened, one after another, where ``axis`` is None)."""
    if axis is None:
        start = sum(np.size(x) for x in xs[:i])
        piece = g[..., start:start + np.size(xs[i])]  # a batch of rows keeps its axis
        return np.reshape(piece, np.shape(g)[:-1] + np.shape(xs[i]))
    start = sum(np.shape(x)[axis] for x in xs[:i])
    stop = start + np.shape(xs[i])[axis]
    return g[(slice(None),) * (axis % np.ndim(g)) + (slice(start, stop),)]


def append_parts(g, arr, values, axis):
    """The adjoints of ``arr`` and ``values`` from that of ``np.append(arr, values,
    axis)``: a concatenation, of the two flattened where ``axis`` is None."""
    pair = (arr, values)
    return concat_adjoint(0, g, pair, axis), concat_adjoint(1, g, pair, axis)


def stack_adjoint(i, g, axis):
    """The slice of ``g`` that input ``i`` of a stack along ``axis`` became."""
    return g[(slice(None),) * (axis % np.ndim(g)) + (i,)]


def take_adjoint(g, x, indices, axis):
    """The adjoint of ``np.take(x, indices, axis)``: ``g`` scattered back."""
    if isinstance(indices, tuple):  # np.take(x, (0, 2)): positions, not one per axis
        indices = np.asarray(indices)
    if axis is None:
        return np.reshape(unindex(g, indices, np.ravel(x)), np.shape(x))
    return unindex(g, (slice(None),) * (axis % np.ndim(x)) + (indices,), x)


def take_along_axis_adjoint(g, x, indices, axis):
    """The adjoint of ``np.take_along_axis(x, indices, axis)``: ``g`` scattered back."""
    if axis is None:
        return np.reshape(take_along_axis_adjoint(g, np.ravel(x), indices, 0), np.shape(x))
    axis %= np.ndim(x)
    index = tuple(indices if d == axis else
                  np.reshape(np.arange(n), [-1 if k == d else 1 for k in range(np.ndim(x))])
                  for d, n in enumerate(np.shape(x)))
    return unindex(g, index, x)


def repeat_adjoint(g, x, repeats, axis):
    """The adjoint of ``np.repeat``: each element gathers the adjoints of its copies."""
    n = np.size(x) if axis is None else np.shape(x)[axis]
    return take_adjoint(g, x, np.repeat(np.arange(n), repeats), axis)


def pad_adjoint(g, x, pad_width, mode, reflect_type):
    """The adjoint of ``np.pad``: the unpadded middle of ``g`` with a constant;
    in the modes that copy elements of ``x`` outwards, each copy's adjoint added
    back where it came from, axis by axis (NumPy pads one axis after another)."""
    widths = np.broadcast_to(pad_width, (np.ndim(x), 2))
    if mode == "constant":
        return g[tuple(slice(b, b + n) for b, n in zip(widths[:, 0], np.shape(x)))]
    if mode not in ("edge", "reflect", "symmetric", "wrap") or reflect_type != "even":
        raise NotImplementedError(f"the gradient of np.pad(mode={mode!r}) "
                                  f"(reflect_type={reflect_type!r})")
    shape = list(np.shape(g))
    for axis, (n, width) in enumerate(zip(np.shape(x), widths)):
        source = np.pad(np.arange(n), tuple(width), mode)  # the element each slot copies
        shape[axis] = n
        g = unindex(g, (slice(None),) * axis + (source,), np.zeros(shape))
    return g


def pad_values_adjoint(g, x, pad_width, constant_values):
    """The adjoint of ``constant_values`` in ``np.pad``: ``g`` summed where NumPy put
    each value (found by padding zeros with that one value set to 1)."""
    shape = np.shape(constant_values)
    zeros = np.zeros(np.shape(x))
    return np.reshape(np.stack([
        np.sum(g * np.pad(zeros, pad_width, constant_values=np.reshape(unit, shape)))
        for unit in np.eye(np.size(constant_values))]), shape)


def tile_adjoint(g, x, reps):
    """Sum the tiles of ``g`` back onto ``x``."""
    shape = np.shape(x)
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    split = [n for pair in zip(reps, shape) for n in pair]
    g = np.sum(np.reshape(g, split), axis=tuple(range(0, 2 * ndim, 2)))
    return np.reshape(g, np.shape(x))


def tensordot_axes(a, b, axes):
    """``np.tensordot``'s ``axes`` argument as two lists of non-negative axes."""
    if np.ndim(axes) == 0:
        n = int(axes)
        return list(range(np.ndim(a) - n, np.ndim(a))), list(range(n))
    ax, bx = axes
    ax = [ax] if np.ndim(ax) == 0 else list(ax)
    bx = [bx] if np.ndim(bx) == 0 else list(bx)
    return [i % np.ndim(a) for i in ax], [i % np.ndim(b) for i in bx]


def tensordot_lhs(g, a, b, axes):
    """The adjoint of ``a`` in ``np.tensordot(a, b, axes)``."""
    ax, bx = tensordot_axes(a, b, axes)
    a_free = [i for i in range(np.ndim(a)) if i not in ax]
    b_free = [i for i in range(np.ndim(b)) if i not in bx]
    # g has axes a_free + b_free; contracting them with b leaves b's contracted
    # axes in b's order, each standing for its partner in ``ax``.
    da = np.tensordot(g, b, (list(range(len(a_free), np.ndim(g))), b_free))
    order = a_free + [ax[j] for j in np.argsort(bx)]
    return np.transpose(da, np.argsort(order))


def tensordot_rhs(g, a, b, axes):
    """The adjoint of ``b`` in ``np.tensordot(a, b, axes)``."""
    ax, bx = tensordot_axes(a, b, axes)
    a_free = [i for i in range(np.ndim(a)) if i not in ax]
    b_free = [i for i in range(np.ndim(b)) if i not in bx]
    db = np.tensordot(a, g, (a_free, list(range(len(a_free)))))
    order = [bx[j] for j in np.argsort(ax)] + b_free
    return np.transpose(db, np.argsort(order))


def einsum_subscripts(subscripts, operands):
    """(input subscripts, output subscripts) of ``np.einsum(subscripts, *operands)``
    with '...' written out as letters of its own and an implicit output made explicit."""
    if not isinstance(subscripts, str):
        raise NotImplementedError("the gradient of einsum's interleaved form: pass a string")
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    inputs = inputs.split(",")
    spare = [c for c in string.ascii_letters if c not in subscripts]
    dotted = [np.ndim(x) - len(s) + 3 if "..." in s else 0 for s, x in zip(inputs, operands)]
    dots = "".join(spare[:max(dotted)])  # broadcast: each operand's '...' is right-aligned
    inputs = [s.replace("...", dots[len(dots) - k:] if k else "") for s, k in zip(inputs, dotted)]
    if not arrow:  # the '...' axes, then the indices that occur once, in alphabetical order
        joined = "".join(inputs)
        output = "..." + "".join(sorted(c for c in set(joined) - set(dots)
                                        if joined.count(c) == 1))
    return inputs, output.replace("...", dots)


def einsum_adjoint(i, g, subscripts, operands):
    """The adjoint of operand ``i`` of ``np.einsum(subscripts, *operands)``: the einsum
    of ``g`` with the other operands; indices summed out of operand i alone spread
    back; a repeated index (a diagonal, a trace) laid back along the diagonal with
    identity matrices; '...' axes broadcast against other operands summed."""
    inputs, output = einsum_subscripts(subscripts, operands)
    own = inputs[i]
    others = inputs[:i] + inputs[i + 1:]
    rest = operands[:i] + operands[i + 1:]
    sizes = dict(zip(own, np.shape(operands[i])))
    unique = "".join(dict.fromkeys(own))
    summed = [c for c in unique if c not in output and not any(c in s for s in others)]
    d = np.einsum(",".join([output] + others) + "->" + "".join(c for c in unique
                                                              if c not in summed), g, *rest)
    if summed:
        d = np.expand_dims(d, [unique.index(c) for c in summed])
        d = np.broadcast_to(d, [np.shape(d)[k] if c not in summed else sizes[c]
                                for k, c in enumerate(unique)])
    if unique != own:  # each repeat gets a fresh index, tied to the first by an identity
        fresh = iter(c for c in string.ascii_letters if c not in "".join(inputs) + output)
        ties, eyes, spelled = [], [], ""
        for k, c in enumerate(own):
            if c in own[:k]:
                f = next(fresh)
                ties.append(c + f)
                eyes.append(np.eye(sizes[c]))
                c = f
            spelled += c
        d = np.einsum(",".join([unique] + ties) + "->" + spelled, d, *eyes)
    return unbroadcast(d, operands[i])


def solve_adjoints(g, a, b, ans):
    """The adjoints of ``a`` and ``b`` in ``np.linalg.solve(a, b)``."""
    db = np.linalg.solve(T(a), g)
    if np.ndim(b) == np.ndim(a) - 1:
        return -np.expand_dims(db, -1) * np.expand_dims(ans, -2), db
    return -(db @ T(ans)), db


# --- matrix decompositions.  Each adjoint recomputes the decomposition with NumPy
# (on Tensors: recorded, so the rules differentiate again), real matrices only.

def real_only(x, what):
    """``x``, or a refusal where a rule models real matrices only."""
    if np.iscomplexobj(x):
        raise NotImplementedError(f"the gradient of {what} of a complex matrix")
    return x


def eye_like(x):
    """The identity the size of ``x``'s last axis."""
    return np.eye(np.shape(x)[-1])


def gaps(w):
    """``F[..., i, j] = 1 / (w_j - w_i)`` off the diagonal, 0 on it.  A repeated
    value makes it inf: the derivative does not exist, and, as in JAX and autograd,
    the adjoint shows inf or nan rather than a number."""
    eye = eye_like(w)
    with np.errstate(divide="ignore"):
        return 1 / (np.expand_dims(w, -2) - np.expand_dims(w, -1) + eye) - eye


def read_triangle(G, upper):
    """The adjoint of ``a`` in ``f(a)``, where f reads only a triangle of ``a`` as a
    symmetric matrix ``X``, from ``G``, an adjoint of ``X``: each element off the
    diagonal stands for two of ``X``."""
    both = G + T(G)
    return (np.triu(both) if upper else np.tril(both)) - G * eye_like(G)


def transposed_solve(b, r):
    """``b @ inv(r).T``."""
    return T(np.linalg.solve(r, T(b)))


def eigh_adjoint(k, g, a, UPLO):
    """The adjoint of ``a`` from that of ``np.linalg.eigh(a, UPLO)[k]`` (0: the
    eigenvalues, 1: the eigenvectors, which a repeated eigenvalue leaves undefined)."""
    w, v = np.linalg.eigh(real_only(a, "np.linalg.eigh"), UPLO)
    if k == 0:
        inner = np.expand_dims(g, -2) * eye_like(w)
    elif not np.any(g):  # no adjoint (compiled code passes zeros for a result not read)
        return np.zeros(np.shape(a))  # and no inf times 0 where an eigenvalue repeats
    else:
        inner = gaps(w) * (T(v) @ g)
    return read_triangle(v @ inner @ T(v), UPLO == "U")


def cholesky_adjoint(g, ans, upper):
    """The adjoint of ``a`` in ``np.linalg.cholesky(a)``, which reads a triangle of it."""
    L, gL = (T(ans), T(g)) if upper else (ans, g)
    phi = np.tril(T(real_only(L, "np.linalg.cholesky")) @ gL)
    phi = phi - 0.5 * phi * eye_like(phi)
    # L^-T phi L^-1, by two solves
    return read_triangle(np.linalg.solve(T(L), transposed_solve(phi, T(L))), upper)


def qr_adjoint(k, g, a, mode):
    """The adjoint of ``a`` from that of ``np.linalg.qr(a, mode)[k]`` (0: Q, 1: R).
    Defined where R is square and invertible (full column rank): a rank-deficient
    ``a`` makes the solve fail, and a wide ``a`` or extra columns of a complete Q
    are refused."""
    if not np.any(g):  # no adjoint (compiled code passes zeros for a result not read)
        return np.zeros(np.shape(a))
    q, r = np.linalg.qr(real_only(a, "np.linalg.qr"), mode)
    m, n = np.shape(a)[-2:]
    if m < n or np.shape(q)[-1] != n:
        raise NotImplementedError("the gradient of np.linalg.qr of a matrix with more "
                                  "columns than rows, or of a complete Q's extra columns")
    gq, gr = (g, 0 * r) if k == 0 else (0 * q, g)
    m = gr @ T(r) - T(q) @ gq
    m = np.triu(m) + np.tril(T(m), -1)  # its upper triangle, mirrored
    return transposed_solve(gq + q @ m, r)


def svd_adjoint(k, g, a, full_matrices, hermitian):
    """The adjoint of ``a`` from that of ``np.linalg.svd(a)[k]`` (0: U, 1: the singular
    values, 2: Vh).  U and Vh are defined where the singular values are distinct and
    not zero, and only their first min(m, n) columns (rows): full matrices of a
    matrix that is not square are refused.  (The singular values' adjoint reads the
    reduced factors: their signs cancel in it.)"""
    u, s, vh = np.linalg.svd(real_only(a, "np.linalg.svd"), full_matrices and k != 1, True,
                             hermitian)
    if k == 1:
        return (u * np.expand_dims(g, -2)) @ vh
    if not np.any(g):  # no adjoint (compiled code passes zeros for a result not read)
        return np.zeros(np.shape(a))
    if np.shape(u)[-1] != np.shape(vh)[-2]:
        raise NotImplementedError("the gradient of np.linalg.svd(full_matrices=True) of "
                                  "a matrix that is not square: call it with "
                                  "full_matrices=False")
    f = gaps(s ** 2)
    if k == 0:
        inner = f * (T(u) @ g - T(g) @ u) * np.expand_dims(s, -2)
        return (u @ inner + (g - u @ (T(u) @ g)) / np.expand_dims(s, -2)) @ vh
    inner = np.expand_dims(s, -1) * f * (vh @ T(g) - g @ T(vh))
    return u @ (inner @ vh + (g - (g @ T(vh)) @ vh) / np.expand_dims(s, -1))


def kron_adjoint(k, g, a, b):
    """The adjoint of ``(a, b)[k]`` in ``np.kron(a, b)``: ``g`` seen with each axis
    split in two (a's index, b's index), times the other factor, summed over its axes."""
    ndim = max(np.ndim(a), np.ndim(b))
    shapes = [(1,) * (ndim - np.ndim(x)) + np.shape(x) for x in (a, b)]
    g = np.reshape(g, [n for pair in zip(*shapes) for n in pair])
    other = (a, b)[1 - k]
    spread = [n if j % 2 != k else 1 for j, n in enumerate(np.shape(g))]
    d = np.sum(g * np.reshape(other, spread), axis=tuple(range(1 - k, 2 * ndim, 2)))
    return np.reshape(d, np.shape((a, b)[k]))


def multi_dot_adjoint(i, g, arrays):
    """The adjoint of ``arrays[i]`` in ``np.linalg.multi_dot(arrays)``: the product
    of the arrays before it, transposed, times ``g``, times those after it, transposed
    (a vector at either end is a row or a column)."""
    mats = list(arrays)
    if np.ndim(mats[0]) == 1:
        mats[0] = np.reshape(mats[0], (1, -1))
    if np.ndim(mats[-1]) == 1:
        mats[-1] = np.reshape(mats[-1], (-1, 1))
    d = np.reshape(g, (np.shape(mats[0])[0], np.shape(mats[-1])[1]))
    for m in mats[:i]:
        d = T(m) @ d
    for m in reversed(mats[i + 1:]):
        d = d @ T(m)
    return np.reshape(d, np.shape(arrays[i]))


def cumsum_from_end(v, axis):
    """Each element of ``v`` summed with those after it along ``axis``: the adjoint of a
    cumulative sum."""
    return np.flip(np.cumsum(np.flip(v, axis), axis), axis)


def cumprod_adjoint(g, ans, x, axis):
    """The adjoint of ``np.cumprod``: element j gets sum over i >= j of g_i times
    the product of x_0..x_i but x_j.  That is a reversed cumulative sum over x_j,
    except where x_j is 0: then each product is formed without it (n^2 of them)."""
    if axis is None:
        return np.reshape(cumprod_adjoint(g, ans, np.ravel(x), 0), np.shape(x))
    if not np.any(x == 0):
        return cumsum_from_end(g * ans, axis) / x
    m = np.moveaxis(x, axis, -1)
    eye = np.eye(np.shape(m)[-1]) == 1
    products = np.triu(np.cumprod(np.where(eye, 1.0, np.expand_dims(m, -2)), axis=-1))
    d = np.sum(products * np.expand_dims(np.moveaxis(g, axis, -1), -2), axis=-1)
    return np.moveaxis(d, -1, axis)


# What NumPy's signatures hold for an argument not given (np.diff's prepend): the tape
# passes it by position when a later one is a Tensor given by keyword.
NOT_GIVEN = inspect.signature(np.diff).parameters["prepend"].default


def diff_adjoint(k, g, a, n, axis, prepend, append):
    """The adjoint of ``(a, _, _, prepend, append)[k]`` in ``np.diff``: the adjoint of
    the differences, taken back ``n`` times (-diff of g with a zero at each end),
    is that of the joined array; each input gets its part of it."""
    parts = [(j, x) for j, x in ((3, prepend), (0, a), (4, append))
             if x is not None and x is not NOT_GIVEN]
    value = dict(parts)[k]
    if n == 0:  # np.diff returns a as it is
        return g if k == 0 else np.zeros(np.shape(value))
    axis %= np.ndim(a)
    ends = [(0, 0)] * np.ndim(a)
    ends[axis] = (1, 1)
    for _ in range(n):
        g = -np.diff(np.pad(g, ends), axis=axis)
    sizes = {j: np.shape(x)[axis] if np.ndim(x) else 1 for j, x in parts}  # a number: one slice
    start = sum(sizes[j] for j, _ in parts[:[j for j, _ in parts].index(k)])
    return unbroadcast(g[(slice(None),) * axis + (slice(start, start + sizes[k]),)], value)


def first_kept(picks_first, second):
    """Where ``np.fmax`` (``np.fmin``) keeps its first argument: where the comparison
    ``picks_first`` says so, or the second is a NaN, which they ignore."""
    return np.logical_or(picks_first, np.isnan(second))


def interp_pieces(x, xp, fp, period):
    """(j, t, slope, inside) of ``np.interp(x, xp, fp)``: x lies in the piece from
    xp[j] to xp[j+1], a fraction t along, where fp has ``slope``; ``inside``: within
    xp's range (outside, the result is a constant).  At a knot the piece to the
    right is taken (one of the two one-sided derivatives)."""
    if period is not None:
        raise NotImplementedError("the gradient of np.interp given a period by position: "
                                  "pass it by keyword (period=...)")
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, np.size(xp) - 2)
    width = xp[j + 1] - xp[j]
    inside = np.logical_and(x >= xp[0], x <= xp[-1])
    return j, (x - xp[j]) / width, (fp[j + 1] - fp[j]) / width, inside


def interp_adjoint(k, g, x, xp, fp, left, right, period):
    """The adjoint of ``(x, xp, fp, left, right)[k]`` in ``np.interp``."""
    # lists of numbers (xp, fp as literals): arrays, indexed by the array j
    x, xp, fp = (np.asarray(v) if isinstance(v, (list, tuple)) else v for v in (x, xp, fp))
    j, t, slope, inside = interp_pieces(x, xp, fp, period)
    if k == 0:
        return where_zero(inside, g * slope)
    if k == 3:
        return np.sum(where_zero(x < xp[0], g))
    if k == 4:
        return np.sum(where_zero(x > xp[-1], g))
    if k == 1:  # moving a knot moves the piece: -slope (1 - t), -slope t
        lo, hi = -g * slope * (1 - t), -g * slope * t
    else:
        lo, hi = g * (1 - t), g * t
    d = (unindex(where_zero(inside, lo), j, (xp, fp)[k - 1])
         + unindex(where_zero(inside, hi), j + 1, (xp, fp)[k - 1]))
    if k == 2 and left is None:  # below the range the result is fp[0]
        d = d + unindex(np.sum(where_zero(x < xp[0], g)), 0, fp)
    if k == 2 and right is None:
        d = d + unindex(np.sum(where_zero(x > xp[-1], g)), -1, fp)
    return d


def sinc_slope(x):
    """The derivative of ``np.sinc``, (cos(pi x) - sinc(x)) / x, by its Taylor series
    near 0, where the quotient cancels (exact to rounding, and differentiable again)."""
    small = np.abs(x) < 1e-3
    safe = np.where(small, 1.0, x)
    series = -np.pi ** 2 / 3 * x + np.pi ** 4 / 30 * x ** 3
    return np.where(small, series, (np.cos(np.pi * safe) - np.sinc(safe)) / safe)


def ptp_adjoint(g, x, axis, keepdims):
    """The adjoint of ``np.ptp``: that of its max less that of its min."""
    top = np.max(x, axis=axis, keepdims=keepdims)
    bottom = np.min(x, axis=axis, keepdims=keepdims)
    return (extremum_adjoint(g, top, x, axis, keepdims)
            - extremum_adjoint(g, bottom, x, axis, keepdims))


def kept_adjoint(g, x):
    """The adjoint of ``x`` in ``np.nan_to_num(x)``: ``g`` where ``x`` is finite and
    kept; of a complex ``x``, each part where that part is (NumPy replaces them apart)."""
    if not np.iscomplexobj(x):
        return where_zero(np.isfinite(x), g)
    g = np.asarray(g)
    return (where_zero(np.isfinite(x.real), g.real)
            + 1j * where_zero(np.isfinite(x.imag), g.imag))


def replaced_adjoint(g, x, which):
    """The adjoint of ``nan``, ``posinf`` or ``neginf`` in ``np.nan_to_num``: ``g``
    summed where that value replaced an element of ``x``."""
    hit = {"nan": np.isnan(x), "posinf": np.isposinf(x), "neginf": np.isneginf(x)}[which]
    return np.sum(where_zero(hit, g))

"""NumPy helpers that derivative rules call.

Each is written with recorded NumPy primitives only, so a rule that calls it
still differentiates when it runs on Tensors under an outer tape."""
import numpy as np

from .registry import defvjp, primitive


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x``, undoing NumPy broadcasting."""
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    return np.reshape(np.sum(g, axis=axes), shape)


def unreduce(g, x, axis, keepdims):
    """Broadcast the adjoint of a reduction of ``x`` back to ``x``'s shape."""
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, np.shape(x))


def reduced_count(x, ans):
    """How many elements of ``x`` were reduced into each element of ``ans``."""
    return np.size(x) // max(np.size(ans), 1)


def extremum_adjoint(g, ans, x, axis, keepdims):
    """The adjoint of a max or min: ties share it evenly, as in TensorFlow."""
    hit = x == unreduce(ans, x, axis, keepdims)
    return unreduce(g, x, axis, keepdims) * hit / np.sum(hit, axis=axis, keepdims=True)


def trace_adjoint(g, x, offset, axis1, axis2):
    """The adjoint of ``np.trace``: ``g`` laid along the traced diagonal."""
    eye = np.eye(np.shape(x)[axis1], np.shape(x)[axis2], offset, dtype=np.result_type(g))
    g = np.expand_dims(np.expand_dims(g, -1), -1) * eye
    return np.moveaxis(g, (-2, -1), (axis1, axis2))


def T(x):
    """Swap the last two axes (the matrix transpose of a stack of matrices)."""
    return np.swapaxes(x, -1, -2)


def matmul_lhs(g, a, b):
    """The adjoint of ``a`` in ``a @ b``, for any ranks ``np.matmul`` accepts."""
    if np.ndim(b) == 1:
        if np.ndim(a) == 1:
            return g * b
        return unbroadcast(np.expand_dims(g, -1) * b, a)
    if np.ndim(a) == 1:
        return unbroadcast(np.expand_dims(g, -2) @ T(b), np.expand_dims(a, 0))[0]
    return unbroadcast(g @ T(b), a)


def matmul_rhs(g, a, b):
    """The adjoint of ``b`` in ``a @ b``, for any ranks ``np.matmul`` accepts."""
    if np.ndim(a) == 1:
        if np.ndim(b) == 1:
            return g * a
        return unbroadcast(np.expand_dims(a, -1) * np.expand_dims(g, -2), b)
    if np.ndim(b) == 1:
        return unbroadcast(T(a) @ np.expand_dims(g, -1), np.expand_dims(b, -1))[..., 0]
    return unbroadcast(T(a) @ g, b)


def inverse_permutation(axes, ndim):
    if axes is None:
        return None
    return tuple(np.argsort([a % ndim for a in axes]))


@primitive
def unindex(g, index, x):
    """Scatter-add ``g`` into zeros shaped like ``x`` at ``index`` (the adjoint of ``x[index]``)."""
    out = np.zeros(np.shape(x), dtype=np.result_type(g))
    np.add.at(out, index, g)
    return out


def where_zero(cond, x):
    """``x`` where ``cond`` holds, else 0: a mask that never spreads nan or inf."""
    return np.where(cond, x, np.zeros_like(x))


defvjp(unindex, lambda g, ans, gx, index, x: g[index])


def concat_adjoint(i, g, xs, axis):
    """The slice of ``g`` that input ``i`` of a concatenation along ``axis`` became."""
    start = sum(np.shape(x)[axis] for x in xs[:i])
    stop = start + np.shape(xs[i])[axis]
    return g[(slice(None),) * (axis % np.ndim(g)) + (slice(start, stop),)]


def stack_adjoint(i, g, axis):
    """The slice of ``g`` that input ``i`` of a stack along ``axis`` became."""
    return g[(slice(None),) * (axis % np.ndim(g)) + (i,)]


def take_adjoint(g, x, indices, axis):
    """The adjoint of ``np.take(x, indices, axis)``: ``g`` scattered back."""
    if axis is None:
        return np.reshape(unindex(g, indices, np.ravel(x)), np.shape(x))
    return unindex(g, (slice(None),) * (axis % np.ndim(x)) + (indices,), x)


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
    nfree = len(a_free)
    # g has axes a_free + b_free; contract its b_free part with b's free axes.
    da = np.tensordot(g, b, (list(range(nfree, np.ndim(g))), b_free))
    # da has axes a_free + [a's contracted axes in the order of bx].
    order = a_free + ax
    return np.transpose(da, np.argsort(order))


def tensordot_rhs(g, a, b, axes):
    """The adjoint of ``b`` in ``np.tensordot(a, b, axes)``."""
    ax, bx = tensordot_axes(a, b, axes)
    a_free = [i for i in range(np.ndim(a)) if i not in ax]
    b_free = [i for i in range(np.ndim(b)) if i not in bx]
    nfree = len(a_free)
    db = np.tensordot(a, g, (a_free, list(range(nfree))))
    order = bx + b_free
    return np.transpose(db, np.argsort(order))


def einsum_adjoint(i, g, subscripts, operands):
    """The adjoint of operand ``i`` of ``np.einsum(subscripts, *operands)``."""
    inputs, _, output = subscripts.replace(" ", "").partition("->")
    inputs = inputs.split(",")
    if not _ or "." in subscripts:
        raise NotImplementedError(
            "the gradient of einsum needs explicit '->' subscripts without '...'")
    own = inputs[i]
    if len(set(own)) != len(own):
        raise NotImplementedError(f"the gradient of einsum over a repeated index in {own!r}")
    others = [s for k, s in enumerate(inputs) if k != i]
    rest = [x for k, x in enumerate(operands) if k != i]
    # Indices of operand i that appear nowhere else were summed out: restore them.
    summed = [c for c in own if c not in output and not any(c in s for s in others)]
    spec = ",".join([output] + others) + "->" + "".join(c for c in own if c not in summed)
    d = np.einsum(spec, g, *rest)
    if summed:
        d = np.expand_dims(d, [own.index(c) for c in summed])
        d = np.broadcast_to(d, np.shape(operands[i]))
    return d


def solve_adjoints(g, a, b, ans):
    """The adjoints of ``a`` and ``b`` in ``np.linalg.solve(a, b)``."""
    db = np.linalg.solve(T(a), g)
    if np.ndim(b) == np.ndim(a) - 1:
        return -np.expand_dims(db, -1) * np.expand_dims(ans, -2), db
    return -(db @ T(ans)), db

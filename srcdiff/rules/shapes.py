"""Rules of functions that move elements around without changing them."""
import operator

import numpy as np

from .helpers import (concat_adjoint, inverse_permutation, stack_adjoint, take_adjoint,
                      tile_adjoint, unbroadcast, unindex, where_zero)
from .registry import defvjp, defvjp_argnum, nondifferentiable, primitive

for _f in (np.reshape, np.ravel, np.squeeze, np.expand_dims, np.atleast_1d, np.atleast_2d):
    defvjp(_f, lambda g, ans, x, *args, **kw: np.reshape(g, np.shape(x)))
defvjp(np.transpose,
       lambda g, ans, x, axes=None: np.transpose(g, inverse_permutation(axes, np.ndim(x))))
defvjp(np.swapaxes, lambda g, ans, x, axis1, axis2: np.swapaxes(g, axis1, axis2))
defvjp(np.moveaxis,
       lambda g, ans, x, source, destination: np.moveaxis(g, destination, source))
defvjp(np.broadcast_to, lambda g, ans, x, shape, **kw: unbroadcast(g, x))
defvjp(np.flip, lambda g, ans, x, axis=None: np.flip(g, axis))
defvjp(np.tile, lambda g, ans, x, reps: tile_adjoint(g, x, reps))
defvjp(np.triu, lambda g, ans, x, k=0: np.triu(g, k))
defvjp(np.tril, lambda g, ans, x, k=0: np.tril(g, k))
defvjp(np.copy, lambda g, ans, x, *args, **kw: g)
defvjp(operator.getitem, lambda g, ans, x, index: unindex(g, index, x))
defvjp(np.take, lambda g, ans, x, indices, axis=None, **kw: take_adjoint(g, x, indices, axis))
defvjp(np.where,
       None,
       lambda g, ans, cond, x, y: unbroadcast(where_zero(cond, g), x),
       lambda g, ans, cond, x, y: unbroadcast(where_zero(np.logical_not(cond), g), y))
# clip passes the adjoint at its bounds, as TensorFlow's clip_by_value does.
defvjp(np.clip,
       lambda g, ans, x, lo, hi, **kw: unbroadcast(
           where_zero(np.logical_and(x >= lo, x <= hi) if lo is not None and hi is not None
                      else x >= lo if lo is not None else x <= hi, g), x),
       lambda g, ans, x, lo, hi, **kw: unbroadcast(where_zero(x < lo, g), lo),
       lambda g, ans, x, lo, hi, **kw: unbroadcast(where_zero(x > hi, g), hi))


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


defvjp_argnum(concatenate, lambda i, g, ans, *xs, axis=0: concat_adjoint(i, g, xs, axis))
defvjp_argnum(stack, lambda i, g, ans, *xs, axis=0: stack_adjoint(i, g, axis))
defvjp(cast, lambda g, ans, x, dtype: cast(g, np.result_type(x)))

nondifferentiable(np.zeros, np.ones, np.empty, np.full, np.eye, np.identity,
                  np.arange, np.linspace)

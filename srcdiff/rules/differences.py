"""Differences and sums of neighbouring samples: ``np.gradient`` (a rule of its own for
each axis), ``np.unwrap``, ``np.trapezoid`` and ``np.ediff1d`` (expansions)."""
import numpy as np

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy 1
    from numpy.core.numeric import normalize_axis_tuple

from .helpers import cut, not_modelled, stood, unbroadcast
from .registry import defexpansion, defvjp, primitive


@primitive
def gradient_along(f, spacing, axis, edge_order):
    """``np.gradient(f, spacing, axis=axis, edge_order=edge_order)``: the derivative of
    ``f`` along one axis, its samples ``spacing`` apart (a number), or at ``spacing``
    (their coordinates)."""
    return np.gradient(f, spacing, axis=axis, edge_order=edge_order)


def padded_last(v, before, after):
    """``v`` with ``before`` zeros before and ``after`` after along its last axis."""
    return np.pad(v, [(0, 0)] * (np.ndim(v) - 1) + [(before, after)])


def edge_weights(steps, edge_order):
    """The weights of the samples each end slope of ``np.gradient`` combines, from the
    ``steps`` between samples: one-sided differences of first (the two nearest samples)
    or second order (the three nearest), in order along the axis."""
    if edge_order == 1:
        return np.stack([-1 / steps[0], 1 / steps[0]]), np.stack([-1 / steps[-1], 1 / steps[-1]])
    a, b = steps[0], steps[1]  # the first two steps, then the last two
    first = np.stack([-(2 * a + b) / (a * (a + b)), (a + b) / (a * b), -a / (b * (a + b))])
    a, b = steps[-2], steps[-1]
    return first, np.stack([b / (a * (a + b)), -(a + b) / (a * b), (2 * b + a) / (b * (a + b))])


def gradient_adjoint(g, f, spacing, axis, edge_order):
    """The adjoint of ``f`` in ``gradient_along``.  Inside, the slope at sample i is
    ``-r / (l (l + r)) f[i-1] + (r - l) / (l r) f[i] + l / (r (l + r)) f[i+1]``, with
    ``l``, ``r`` the steps to its neighbours (central differences when they are equal);
    at the ends, one-sided differences: each sample gets ``g`` of every slope it enters,
    times its weight there."""
    g = np.moveaxis(g, axis, -1)
    n = np.shape(g)[-1]
    steps = np.diff(spacing) if np.ndim(spacing) else np.full(n - 1, float(spacing))
    left, right = steps[:-1], steps[1:]
    inner = g[..., 1:-1]
    d = (padded_last(inner * (-right / (left * (left + right))), 0, 2)
         + padded_last(inner * ((right - left) / (left * right)), 1, 1)
         + padded_last(inner * (left / (right * (left + right))), 2, 0))
    first, last = edge_weights(steps, edge_order)
    d = (d + padded_last(g[..., :1] * first, 0, n - len(first))
         + padded_last(g[..., -1:] * last, n - len(last), 0))
    return np.moveaxis(d, -1, axis)


defvjp(gradient_along,
       lambda g, ans, f, spacing, axis, edge_order: gradient_adjoint(g, f, spacing, axis,
                                                                     edge_order),
       lambda g, ans, f, spacing, axis, edge_order:
       not_modelled("np.gradient with respect to its spacing"))


def gradient_axes(f, varargs, axis):
    """The axes ``np.gradient(f, *varargs, axis=axis)`` differentiates along, and the
    spacing of each: none given (1), one for all, or one each."""
    axes = range(np.ndim(f)) if axis is None else normalize_axis_tuple(axis, np.ndim(f))
    if len(varargs) not in (0, 1, len(axes)):
        raise TypeError("invalid number of arguments")
    spacings = list(varargs) * len(axes) if len(varargs) == 1 else list(varargs)
    return list(axes), spacings or [1.0] * len(axes)


def gradients(f, varargs, axis, edge_order):
    """``np.gradient(f, *varargs, axis=axis, edge_order=edge_order)``: one
    ``gradient_along`` for each axis (their tuple, if more than one)."""
    axes, spacings = gradient_axes(f, varargs, axis)
    slopes = tuple(gradient_along(f, h, a, edge_order) for h, a in zip(spacings, axes))
    return slopes[0] if len(slopes) == 1 else slopes


def gradients_adjoint(g, f, varargs, axis, edge_order):
    """The adjoint of ``f`` in :func:`gradients`: the sum over the axes of each one's,
    the adjoint of its slopes being ``g``, or its item of ``g`` if there are several."""
    axes, spacings = gradient_axes(f, varargs, axis)
    if len(axes) == 1:
        return gradient_adjoint(g, f, spacings[0], axes[0], edge_order)
    return sum(gradient_adjoint(g[k], f, spacings[k], axes[k], edge_order)
               for k in range(len(axes)))


# The tape records a gradient_along for each axis; the compiler, which compiles no
# function of *varargs and keyword-only parameters, takes the whole call as one
# primitive: the adjoint of its tuple of slopes is a list's (an unpacked one is refused).
defexpansion(np.gradient, lambda f, *varargs, axis=None, edge_order=1:
             gradients(f, varargs, axis, edge_order))
defvjp(np.gradient,
       lambda g, ans, f, *varargs, axis=None, edge_order=1:
       gradients_adjoint(g, f, varargs, axis, edge_order))


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``np.trapezoid``: the areas of the trapezoids between neighbouring samples of
    ``y`` along ``axis``, ``dx`` or the steps of ``x`` wide, summed."""
    if x is None:
        d = dx
    elif np.ndim(x) == 1:
        d = np.reshape(np.diff(x), stood(np.ndim(y), axis))
    else:
        d = np.diff(x, axis=axis)
    ends = np.ndim(y)
    return np.sum(d * (y[cut(ends, axis, 1, None)] + y[cut(ends, axis, None, -1)]) / 2.0,
                  axis=axis)


def ediff1d(ary, to_end=None, to_begin=None):
    """``np.ediff1d``: the differences of the flattened ``ary``, ``to_begin`` flattened
    before them and ``to_end`` after."""
    d = np.diff(np.ravel(ary))
    if to_begin is not None:
        d = np.concatenate((np.ravel(to_begin), d))
    if to_end is not None:
        d = np.concatenate((d, np.ravel(to_end)))
    return d


for _name in ("trapezoid", "trapz"):  # NumPy 2's name, and NumPy 1's
    if hasattr(np, _name):
        defexpansion(getattr(np, _name), trapezoid)
defexpansion(np.ediff1d, ediff1d)


@primitive
def unwrapped(p, discont, axis, period):
    """``np.unwrap(p, discont, axis, period=period)``, its period an input."""
    return np.unwrap(p, discont, axis, period=period)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """``np.unwrap``, whose keyword-only period carries a gradient: ``unwrapped``.  (Here
    the period may be passed by position: the compiler compiles no keyword-only
    parameter of an expansion.)"""
    return unwrapped(p, discont, axis, period)


# unwrap adds whole periods where a jump exceeds discont: piecewise constant in p and
# discont, each element moving with the period as often as it was added to it.
defvjp(unwrapped,
       lambda g, ans, p, discont, axis, period: g,
       lambda g, ans, p, discont, axis, period: unbroadcast(np.zeros_like(g), discont),
       None,
       lambda g, ans, p, discont, axis, period: unbroadcast(g * ((ans - p) / period), period),
       batches=True)
defexpansion(np.unwrap, unwrap)

"""Rules of NumPy's arithmetic and transcendental ufuncs (and the math module).

A ufunc's rule is elementwise, so it takes batched adjoints (``defvjp``'s default)."""
import math

import numpy as np

from .helpers import (complex_sign_adjoint, first_kept, interp_adjoint, kept_adjoint,
                      log_of_base, one_minus_square, real_part, replaced_adjoint, sinc_slope,
                      unbroadcast, where_zero)
from .registry import (ANY, declare, defexpansion, defform, defvjp, nondifferentiable,
                       primitive)
from .shapes import cast

# Arithmetic: each input's adjoint is summed back over broadcast axes.
defvjp(np.add,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(g, y))
defvjp(np.subtract,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g, y))
defvjp(np.multiply,
       lambda g, ans, x, y: unbroadcast(g * y, x),
       lambda g, ans, x, y: unbroadcast(g * x, y))
defvjp(np.true_divide,
       lambda g, ans, x, y: unbroadcast(g / y, x),
       lambda g, ans, x, y: unbroadcast(-g * ans / y, y))
for _f in (np.power, np.float_power):
    defvjp(_f,
           # g last: an adjoint spread from a full reduction is a zero-strided view,
           # and NumPy's loops are fast only with one such operand beside an array
           lambda g, ans, x, y: unbroadcast(g * (y * x ** (y - 1)), x),
           lambda g, ans, x, y: unbroadcast(g * ans * log_of_base(x), y))
defvjp(np.remainder,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g * np.floor_divide(x, y), y))
defvjp(np.fmod,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g * np.trunc(x / y), y))
# Ties go to the first argument, as TensorFlow does.
defvjp(np.maximum,
       lambda g, ans, x, y: unbroadcast(where_zero(x >= y, g), x),
       lambda g, ans, x, y: unbroadcast(where_zero(x < y, g), y))
defvjp(np.minimum,
       lambda g, ans, x, y: unbroadcast(where_zero(x <= y, g), x),
       lambda g, ans, x, y: unbroadcast(where_zero(x > y, g), y))
# fmax and fmin ignore a NaN: the other argument is the result, and takes the gradient.
defvjp(np.fmax,
       lambda g, ans, x, y: unbroadcast(where_zero(first_kept(x >= y, y), g), x),
       lambda g, ans, x, y: unbroadcast(where_zero(~first_kept(x >= y, y), g), y))
defvjp(np.fmin,
       lambda g, ans, x, y: unbroadcast(where_zero(first_kept(x <= y, y), g), x),
       lambda g, ans, x, y: unbroadcast(where_zero(~first_kept(x <= y, y), g), y))
defvjp(np.arctan2,
       lambda g, ans, y, x: unbroadcast(g * x / (x ** 2 + y ** 2), y),
       lambda g, ans, y, x: unbroadcast(-g * y / (x ** 2 + y ** 2), x))
defvjp(np.hypot,
       lambda g, ans, x, y: unbroadcast(g * x / ans, x),
       lambda g, ans, x, y: unbroadcast(g * y / ans, y))
defvjp(np.logaddexp,
       lambda g, ans, x, y: unbroadcast(g * np.exp(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * np.exp(y - ans), y))
defvjp(np.logaddexp2,
       lambda g, ans, x, y: unbroadcast(g * np.exp2(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * np.exp2(y - ans), y))
# copysign is |x1| with x2's sign: x2 moves it only where it changes sign (no slope).
defvjp(np.copysign,
       lambda g, ans, x1, x2: unbroadcast(g * (np.sign(x1) * np.sign(ans)), x1),
       lambda g, ans, x1, x2: unbroadcast(np.zeros_like(g), x2))
defvjp(np.ldexp,  # x1 * 2**x2, of an integer x2
       lambda g, ans, x1, x2: unbroadcast(np.ldexp(g, x2), x1),
       None)

defvjp(np.negative, lambda g, ans, x: -g)
defvjp(np.positive, lambda g, ans, x: g)
# |x| of a complex x is not holomorphic: conj keeps TensorFlow's convention
# (the tape conjugates vjps with complex values), d|z| = z / |z|.
defvjp(np.absolute, lambda g, ans, x: (real_part(g) * np.conj(np.sign(x)) if np.iscomplexobj(x)
                                        else g * np.sign(x)))
defvjp(np.fabs, lambda g, ans, x: g * np.sign(x))
defvjp(np.sign, lambda g, ans, x: (complex_sign_adjoint(g, x) if np.iscomplexobj(x)
                                   else np.zeros_like(g)))
defvjp(np.square, lambda g, ans, x: g * (2 * x))
defvjp(np.sqrt, lambda g, ans, x: g / (2 * ans))
defvjp(np.cbrt, lambda g, ans, x: g / (3 * ans ** 2))
defvjp(np.reciprocal, lambda g, ans, x: -g * ans ** 2)
defvjp(np.exp, lambda g, ans, x: g * ans)
defvjp(np.exp2, lambda g, ans, x: g * ans * math.log(2))
defvjp(np.expm1, lambda g, ans, x: g * (ans + 1))
defvjp(np.log, lambda g, ans, x: g / x)
defvjp(np.log2, lambda g, ans, x: g / (x * math.log(2)))
defvjp(np.log10, lambda g, ans, x: g / (x * math.log(10)))
defvjp(np.log1p, lambda g, ans, x: g / (1 + x))
defvjp(np.sin, lambda g, ans, x: g * np.cos(x))
defvjp(np.cos, lambda g, ans, x: -g * np.sin(x))
defvjp(np.tan, lambda g, ans, x: g * (1 + ans ** 2))
defvjp(np.arcsin, lambda g, ans, x: g / np.sqrt(1 - x ** 2))
defvjp(np.arccos, lambda g, ans, x: -g / np.sqrt(1 - x ** 2))
defvjp(np.arctan, lambda g, ans, x: g / (1 + x ** 2))
defvjp(np.sinh, lambda g, ans, x: g * np.cosh(x))
defvjp(np.cosh, lambda g, ans, x: g * np.sinh(x))
defvjp(np.tanh, lambda g, ans, x: g * one_minus_square(ans))
defvjp(np.arcsinh, lambda g, ans, x: g / np.sqrt(x ** 2 + 1))
defvjp(np.arccosh, lambda g, ans, x: g / np.sinh(ans))  # TensorFlow's: nan outside [1, inf)
defvjp(np.arctanh, lambda g, ans, x: g / (1 - x ** 2))
for _f in (np.deg2rad, np.radians):
    defvjp(_f, lambda g, ans, x: g * (np.pi / 180))
for _f in (np.rad2deg, np.degrees):
    defvjp(_f, lambda g, ans, x: g * (180 / np.pi))
defvjp(np.conjugate, lambda g, ans, x: np.conj(g))


@primitive
def conj_method(x):
    """``x.conj()`` (``x.conjugate()``): unlike ``np.conj``, ``x`` itself, not a copy,
    for a real array (a write into one is a write into the other)."""
    return x.conj()


defvjp(conj_method, lambda g, ans, x: np.conj(g), view=True, batches=True)
defvjp(np.sinc, lambda g, ans, x: g * sinc_slope(x))
# The elements nan_to_num replaces have no gradient; the values they are replaced with do.
defvjp(np.nan_to_num,
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None: kept_adjoint(g, x),
       None,
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       replaced_adjoint(g, x, "nan"),
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       replaced_adjoint(g, x, "posinf"),
       lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None:
       replaced_adjoint(g, x, "neginf"))


def nan_to_num_in_place(x, copy=False, nan=0.0, posinf=None, neginf=None):
    """``np.nan_to_num(x, copy=False)``: a write into ``x``, refused before it is made."""
    raise TypeError("np.nan_to_num(..., copy=False) writes into its argument, which is "
                    "not differentiated: use its result (copy=True)")


defform(np.nan_to_num, "copy", False, nan_to_num_in_place)
# Piecewise linear: every input but xp's order has a derivative (one-sided at a knot).
defvjp(np.interp,
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       interp_adjoint(0, g, x, xp, fp, left, right, period),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       interp_adjoint(1, g, x, xp, fp, left, right, period),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       interp_adjoint(2, g, x, xp, fp, left, right, period),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       interp_adjoint(3, g, x, xp, fp, left, right, period),
       lambda g, ans, x, xp, fp, left=None, right=None, period=None:
       interp_adjoint(4, g, x, xp, fp, left, right, period))


def periodic_interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp(..., period=p)`` by NumPy's own steps: x and xp modulo |p| (in
    float64), xp sorted (fp with it) and given a knot at each end from the other end,
    then ``np.interp`` without a period (which ignores left and right)."""
    if period is None:
        return np.interp(x, xp, fp, left, right)
    if period == 0:
        raise ValueError("period must be a non-zero value")
    period = np.abs(period)
    knots = np.remainder(cast(xp, np.float64), period)
    order = np.argsort(knots)
    knots, values = np.take(knots, order), np.take(fp, order)
    knots = np.concatenate((knots[-1:] - period, knots, knots[:1] + period))
    return np.interp(np.remainder(cast(x, np.float64), period), knots,
                     np.concatenate((values[-1:], values, values[:1])))


defform(np.interp, "period", ANY, periodic_interp)
# Not ufuncs: views of a complex array's parts.
defvjp(np.real, lambda g, ans, x: real_part(g) + 0j if np.iscomplexobj(x) else g, view=True,
       batches=True)
defvjp(np.imag, lambda g, ans, x: -1j * real_part(g) if np.iscomplexobj(x) else np.zeros_like(g),
       view=True, batches=True)
# real_if_close drops imaginary parts all close to 0 (np.real's adjoint), else keeps a.
defvjp(np.real_if_close,
       lambda g, ans, a, tol=100:
       real_part(g) + 0j if np.iscomplexobj(a) and not np.iscomplexobj(ans) else g,
       view=True, batches=True)
# The angle of a real number is 0 or pi: it has no slope.  Of a complex z it is
# Im log z: its gradient (TensorFlow's convention) is i / conj(z), conjugated here.
defvjp(np.angle,
       lambda g, ans, z, deg=False:
       (-1j * real_part(g) / z if np.iscomplexobj(z) else np.zeros_like(g))
       * (180 / np.pi if deg else 1), batches=True)

nondifferentiable(
    np.floor, np.ceil, np.rint, np.round, np.around, np.trunc, np.fix, np.floor_divide,
    np.heaviside,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.isnan, np.isinf, np.isfinite, np.signbit, np.argmax, np.argmin,
    np.iscomplexobj, np.isrealobj, np.iscomplex, np.isreal,
    np.argsort, np.nonzero, np.count_nonzero, np.shape, np.ndim, np.result_type,
    np.size, np.zeros_like, np.ones_like, np.empty_like,
    np.array_equal, np.allclose, np.isclose, np.any, np.all,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    np.left_shift, np.right_shift, np.gcd, np.lcm, np.spacing, np.isin,
    # positions, counts and ranks: integers
    np.nanargmax, np.nanargmin, np.digitize, np.searchsorted, np.argwhere, np.flatnonzero,
    np.argpartition, np.lexsort, np.linalg.matrix_rank,
)


def quotient_and_remainder(x1, x2):
    """``np.divmod``: ``x1 // x2`` and ``x1 % x2``, as NumPy defines it."""
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


@primitive
def fraction(x):
    """``np.modf(x)[0]``: ``x`` less its integer part, with x's sign (0 at an infinity)."""
    return np.modf(x)[0]


defvjp(fraction, lambda g, ans, x: g)


def fraction_and_integer(x):
    """``np.modf``: the fractional and integer parts of ``x``, each with x's sign."""
    return fraction(x), np.trunc(x)


@primitive
def exponent(x):
    """``np.frexp(x)[1]``: the power of two that scales ``x`` into [0.5, 1)."""
    return np.frexp(x)[1]


nondifferentiable(exponent)


def mantissa_and_exponent(x):
    """``np.frexp``: ``x`` as mantissa * 2 ** exponent, the mantissa an exact scaling."""
    e = exponent(x)
    return np.ldexp(x, -e), e


# ufuncs of several results (the tape's __array_ufunc__ sends them here too)
defexpansion(np.divmod, quotient_and_remainder)
defexpansion(np.modf, fraction_and_integer)
defexpansion(np.frexp, mantissa_and_exponent)

# The math module on Python floats: the compiler differentiates scalar code with these.
defvjp(math.sin, lambda g, ans, x: g * math.cos(x))
defvjp(math.cos, lambda g, ans, x: -g * math.sin(x))
defvjp(math.tan, lambda g, ans, x: g * (1 + ans ** 2))
defvjp(math.exp, lambda g, ans, x: g * ans)
defvjp(math.expm1, lambda g, ans, x: g * (ans + 1))
defvjp(math.log, lambda g, ans, x: g / x)
defvjp(math.log1p, lambda g, ans, x: g / (1 + x))
defvjp(math.log2, lambda g, ans, x: g / (x * math.log(2)))
defvjp(math.log10, lambda g, ans, x: g / (x * math.log(10)))
defvjp(math.sqrt, lambda g, ans, x: g / (2 * ans))
defvjp(math.tanh, lambda g, ans, x: g * (1 - ans ** 2))
defvjp(math.sinh, lambda g, ans, x: g * math.cosh(x))
defvjp(math.cosh, lambda g, ans, x: g * math.sinh(x))
defvjp(math.atan, lambda g, ans, x: g / (1 + x ** 2))
defvjp(math.asin, lambda g, ans, x: g / math.sqrt(1 - x ** 2))
defvjp(math.acos, lambda g, ans, x: -g / math.sqrt(1 - x ** 2))
defvjp(math.pow,
       lambda g, ans, x, y: g * y * x ** (y - 1),
       lambda g, ans, x, y: g * (ans * math.log(x) if x > 0 else 0.0))
defvjp(math.atan2,
       lambda g, ans, y, x: g * x / (x ** 2 + y ** 2),
       lambda g, ans, y, x: -g * y / (x ** 2 + y ** 2))
defvjp(math.hypot,
       lambda g, ans, x, y: g * x / ans,
       lambda g, ans, x, y: g * y / ans)
defvjp(math.erf, lambda g, ans, x: g * (2 / math.sqrt(math.pi)) * math.exp(-x ** 2))
defvjp(math.erfc, lambda g, ans, x: -g * (2 / math.sqrt(math.pi)) * math.exp(-x ** 2))
defvjp(math.asinh, lambda g, ans, x: g / math.sqrt(x ** 2 + 1))
defvjp(math.acosh, lambda g, ans, x: g / math.sqrt(x ** 2 - 1))
defvjp(math.atanh, lambda g, ans, x: g / (1 - x ** 2))
defvjp(math.fabs, lambda g, ans, x: g * ((x > 0) - (x < 0)))  # np.sign's: 0 at 0
# Each multiplies g by numbers: a batch of adjoints (rows) is multiplied row by row.
declare(math.sin, math.cos, math.tan, math.exp, math.expm1, math.log, math.log1p, math.log2,
        math.log10, math.sqrt, math.tanh, math.sinh, math.cosh, math.atan, math.asin,
        math.acos, math.pow, math.atan2, math.hypot, math.erf, math.erfc, math.asinh,
        math.acosh, math.atanh, math.fabs, batches=True)
# The builtin abs (and max, min of two) is np.absolute to the compiler: no rule of its own.
defvjp(float, lambda g, ans, x: g, number=True)  # float(x) of a one-element array: the same number
nondifferentiable(math.floor, math.ceil, math.trunc, round, int, bool, len,
                  math.isfinite, math.isinf, math.isnan, math.isclose)
declare(int, len, number=True)
# Builtins whose results are ints, bools, strings or None.
# (Not list, tuple, sorted, zip, enumerate, getattr: they pass values through.)
nondifferentiable(range, isinstance, print, type, str, repr, id, hash, callable, hasattr)

"""Python floats standing in for NumPy float64 scalars (see compiler/numbers.py).

Code specialised for numbers computes on Python floats where the code it was made
from had ``np.float64`` scalars of the same value.  Where such a float leaves the
code it was made for (returned, put in a container, met by an array or a NumPy
scalar of another type), :func:`as_float64` turns it back, exactly; its adjoint
comes back as a Python float through :func:`float_adjoint`, which refuses any
other kind of adjoint (a float32, a 0-d array, a complex one) with
:class:`Unspecialised`, so that the code made for NumPy runs instead.
"""
import math

import numpy as np

from .registry import defvjp

# math function -> the NumPy function computing the same number (on arrays and Tensors)
MATH_TWINS = {
    math.sin: np.sin, math.cos: np.cos, math.tan: np.tan, math.asin: np.arcsin,
    math.acos: np.arccos, math.atan: np.arctan, math.atan2: np.arctan2,
    math.sinh: np.sinh, math.cosh: np.cosh, math.tanh: np.tanh, math.asinh: np.arcsinh,
    math.acosh: np.arccosh, math.atanh: np.arctanh, math.exp: np.exp, math.expm1: np.expm1,
    math.log1p: np.log1p, math.log2: np.log2, math.log10: np.log10, math.sqrt: np.sqrt,
    math.pow: np.power, math.hypot: np.hypot, math.fabs: np.abs,
    math.log: lambda x, base=None: np.log(x) if base is None else np.log(x) / np.log(base),
}


class Unspecialised(Exception):
    """Specialised code met a value it was not made for: run the general code."""


def as_float64(x):
    """The np.float64 a Python float (or an np.float64) stands for: the same value."""
    return np.float64(x)


def float_adjoint(g):
    """``g`` as a Python float when it is the adjoint of a np.float64 (the same value),
    else :class:`Unspecialised`."""
    if type(g) is float:
        return g
    if type(g) is np.float64:
        return float(g)
    raise Unspecialised(f"an adjoint of type {type(g).__name__} met code specialised "
                        "for Python floats")


defvjp(as_float64, lambda g, ans, x: float_adjoint(g))

"""Python floats standing in for NumPy float64 scalars (see compiler/numbers.py).

Code specialised for numbers computes on Python floats where the code it was made
from had ``np.float64`` scalars of the same value.  Where such a float leaves the
code it was made for (returned, put in a container, met by an array or a NumPy
scalar of another type), :func:`as_float64` turns it back, exactly; its adjoint
comes back as a Python float through :func:`float_adjoint`, which refuses any
other kind of adjoint (a float32, a 0-d array, a complex one) with
:class:`Unspecialised`, so that the code made for NumPy runs instead.
"""
import numpy as np

from .registry import defvjp


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

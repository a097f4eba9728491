"""The NumPy forms of srcdiff's functions that make Tensors (``sd.constant``,
``sd.ones``, ``sd.shape``...), for compiled code, which computes on arrays.

Invariant: compiled code never holds a Tensor.  Each function here runs in it as
its form, which gives the array the function's Tensor would hold; a conversion
(``sd.constant(x)``, ``sd.convert_to_tensor(x)``) passes the gradient through as the
tape does, and a Tensor made of no differentiable value (``sd.ones(n)``,
``sd.shape(x)``, ``sd.stop_gradient(x)``) carries none.  A function without a form
that makes a Tensor anyway is refused where its result comes out of compiled code
(``function._refuse_tensors``).
"""
import inspect

import numpy as np

from ..rules import defvjp, registry
from ..rules import shapes
from ..rules.helpers import real_part, unbroadcast
from ..tensor import _ArrayLike, cast, constant, convert_to_tensor
from .array_ops import (eye, ones, ones_like, range, rank, shape, size, stop_gradient,
                        zeros, zeros_like)
from .scatter_ops import one_hot


def numpy_form(make):
    """``make``'s form for compiled code: the array of the Tensor it makes (on Tensors,
    as the tape runs a rule's examples, that Tensor itself: what the tape records)."""
    def form(*args, **kwargs):
        made = make(*args, **kwargs)
        return made if any(isinstance(a, _ArrayLike) for a in args) else made._value
    form.__name__ = form.__qualname__ = make.__name__
    form.__signature__ = inspect.signature(make)
    make.__numpy__ = form
    return form


def _as_given(g, ans, value):
    """The adjoint of ``value`` from that of a Tensor ``ans`` made of it: of its dtype
    (real where ``ans`` is), and summed back where the Tensor broadcast it (reshaped
    back where it reshaped it)."""
    if not np.iscomplexobj(ans):
        g = real_part(g)
    if np.shape(g) != np.shape(value):
        g = (np.reshape(g, np.shape(value)) if np.size(g) == np.size(value)
             else unbroadcast(g, value))
    return np.asarray(g, dtype=np.result_type(value))


def _constant_vjp(g, ans, value, dtype=None, shape=None, name=None):
    return _as_given(g, ans, value)


def _convert_vjp(g, ans, value, dtype=None, dtype_hint=None, name=None):
    return _as_given(g, ans, value)


cast.__numpy__ = shapes.cast  # a primitive with its own rule: float to float passes
defvjp(numpy_form(constant), _constant_vjp)  # a new array, always
# the array given is the array made, where no dtype changes it
defvjp(numpy_form(convert_to_tensor), _convert_vjp, view=True)
registry.nondifferentiable(*map(numpy_form, (
    eye, ones, ones_like, range, rank, shape, size, stop_gradient, zeros, zeros_like,
    one_hot)))

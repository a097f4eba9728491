"""How a TensorFlow-named op is made from its NumPy form.

Every ``sd.*`` op is a plain NumPy function (its ``__numpy__``, which the
compiler reads) called with Tensor arguments, so that the NumPy primitives
inside it are recorded.  Python numbers and lists among the tensor arguments
are converted first, with TensorFlow's dtype conventions.
"""
import functools
import inspect

import numpy as np

from .._recording import STATE
from ..rules.registry import RAW
from ..tensor import (Tensor, _ArrayLike, _as_array, _run1, apply, convert_to_tensor,
                      refuse_mixed_dtypes)


def _lift(values, name):
    """Tensor arguments of the op ``name`` as Tensors or arrays: numbers take the dtype of
    a Tensor among them (not of a condition: ``where(x > 0, 1.0, x)``); Tensors of two
    floating dtypes are refused (``refuse_mixed_dtypes``).

    None (an argument left out, as in ``where(condition)``) stays None."""
    for v in values:  # the common case first, as a plain loop: every op call lifts
        if type(v) is not Tensor:
            break
    else:
        dtype = values[0]._value.dtype if values else None
        for v in values:  # all of one dtype, the common case: nothing to check
            if v._value.dtype is not dtype:
                refuse_mixed_dtypes(name, values)
                break
        return values
    refuse_mixed_dtypes(name, values)
    dtype = next((v.dtype for v in values if isinstance(v, _ArrayLike) and v.dtype != bool),
                 None)
    if dtype is None:
        return [v if v is None else convert_to_tensor(v) for v in values]
    return [v if v is None or isinstance(v, (_ArrayLike, np.ndarray)) else np.asarray(v, dtype)
            for v in values]


def op(tensors=1):
    """Make an op of a NumPy function whose first ``tensors`` arguments are tensors (or
    whose arguments at the positions in the tuple ``tensors`` are: indices among them
    stay integers)."""
    def decorate(numpy_form):
        signature = inspect.signature(numpy_form)
        name = numpy_form.__name__

        @functools.wraps(numpy_form)
        def call(*args, **kwargs):
            if kwargs:  # tensors given by keyword (``reduce_sum(input_tensor=x)``) are lifted too
                bound = signature.bind(*args, **kwargs)
                args, kwargs = bound.args, bound.kwargs
            if isinstance(tensors, tuple):
                args = list(args)
                lifted = _lift([args[i] for i in tensors if i < len(args)], name)
                for i, value in zip(tensors, lifted):
                    args[i] = value
            else:
                args = [*_lift(args[:tensors], name), *args[tensors:]]
            out = numpy_form(*args, **kwargs)
            return out if isinstance(out, (Tensor, list, tuple)) else Tensor(np.asarray(out))
        call.__numpy__ = numpy_form
        return call
    return decorate


def primitive_op(fn, name, params=("x",)):
    """The op that is exactly one NumPy primitive (``sd.sin`` is ``np.sin``), with
    TensorFlow's parameter names ``params`` (``sd.pow(x=2.0, y=3.0)``)."""
    impl, unary = RAW.get(fn, fn), len(params) == 1
    signature = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params]
        + [inspect.Parameter("name", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)])

    def any_call(*args, **kwargs):
        if unary and len(args) == 1 and not kwargs and type(args[0]) is Tensor:
            return one_input(args[0])
        if kwargs or len(args) != len(params):
            args = signature.bind(*args, **kwargs).args[:len(params)]
        return apply(fn, *_lift(args, name))

    def one_input(x, name=None):  # sd.sin(x), the commonest: no arguments packed
        if type(x) is Tensor:
            return _run1(fn, impl, x, x._value, STATE.tapes)
        return apply(fn, *_lift([x], name))
    call = one_input if params == ("x",) else any_call
    call.__name__ = call.__qualname__ = name
    call.__signature__ = signature
    call.__doc__ = (f"``{getattr(fn, '__name__', fn)}`` on Tensors, recorded by active tapes: "
                    f"``sd.{name}({', '.join(params)})``.")
    call.__numpy__ = fn
    return call


def axis_arg(axis):
    """TensorFlow accepts lists and Tensors for ``axis``; NumPy wants ints or tuples."""
    if axis is None:
        return None
    if isinstance(axis, _ArrayLike):
        axis = np.asarray(axis)
    if isinstance(axis, (list, tuple, np.ndarray)):
        axis = np.asarray(axis).reshape(-1)
        return tuple(int(a) for a in axis)
    return int(axis)


def as_array(value, dtype=None):
    return _as_array(value, dtype)

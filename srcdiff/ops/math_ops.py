"""Elementwise math, reductions and comparisons under TensorFlow's names."""
import numpy as np

from ..rules import nn as nn_rules
from ..rules.reductions import logsumexp, norm as _norm
from ._op import axis_arg, op, primitive_op

_UNARY = {
    "negative": np.negative, "abs": np.absolute, "square": np.square, "sqrt": np.sqrt,
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "sign": np.sign, "reciprocal": np.reciprocal,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "conj": np.conjugate,
    "real": np.real, "imag": np.imag, "sigmoid": nn_rules.sigmoid,
    "softplus": nn_rules.softplus, "is_nan": np.isnan, "is_finite": np.isfinite,
    "is_inf": np.isinf, "logical_not": np.logical_not,
}
_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "truediv": np.true_divide, "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "floordiv": np.floor_divide, "floormod": np.remainder, "mod": np.remainder,
    "atan2": np.arctan2, "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "squared_difference": None,
}

globals().update({name: primitive_op(fn, name) for name, fn in _UNARY.items()})
globals().update({name: primitive_op(fn, name, tensors=2)
                  for name, fn in _BINARY.items() if fn is not None})


@op(tensors=2)
def squared_difference(x, y, name=None):
    return np.square(x - y)


@op()
def rsqrt(x, name=None):
    return 1 / np.sqrt(x)


@op(tensors=3)
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    return np.clip(t, clip_value_min, clip_value_max)


@op(tensors=3)
def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return np.argwhere(condition).astype(np.int64)
    return np.where(condition, x, y)


@op()
def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    return np.sum(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    return np.mean(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    return np.max(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    return np.min(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    return np.prod(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    return np.var(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    return np.std(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    return logsumexp(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    return np.any(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    return np.all(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    if ord not in ("euclidean", "fro", 2, 2.0, None):
        raise NotImplementedError(f"srcdiff's norm supports the Euclidean norm, not ord={ord!r}")
    return _norm(tensor, axis=axis_arg(axis), keepdims=bool(keepdims))


@op()
def argmax(input, axis=None, output_type=np.int64, name=None):
    return np.argmax(input, axis=0 if axis is None else int(axis)).astype(output_type)


@op()
def argmin(input, axis=None, output_type=np.int64, name=None):
    return np.argmin(input, axis=0 if axis is None else int(axis)).astype(output_type)


@op()
def cumsum(x, axis=0, name=None):
    return np.cumsum(x, axis=int(axis))


@op()
def add_n(inputs, name=None):
    total = inputs[0]
    for x in inputs[1:]:
        total = total + x
    return total

__all__ = sorted(
    [name for name, fn in {**_UNARY, **_BINARY}.items()] +
    ["squared_difference", "rsqrt", "clip_by_value", "where", "reduce_sum", "reduce_mean",
     "reduce_max", "reduce_min", "reduce_prod", "reduce_variance", "reduce_std",
     "reduce_logsumexp", "reduce_any", "reduce_all", "norm", "argmax", "argmin", "cumsum",
     "add_n"])

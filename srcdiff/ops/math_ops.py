"""Elementwise math, reductions and comparisons under TensorFlow's names."""
import functools

import numpy as np

from ..errors import InvalidArgumentError
from ..rules import guarded, nn as nn_rules
from ..rules.reductions import logsumexp, norm as _norm
from ._op import axis_arg, op, primitive_op
from ..tensor import _raw

# TensorFlow's name -> (the NumPy primitive, TensorFlow's parameter names).
_PRIMITIVES = {
    **{name: (fn, ("x",)) for name, fn in {
        "negative": np.negative, "abs": np.absolute, "square": np.square, "sqrt": guarded.sqrt,
        "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sin": np.sin,
        "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh,
        "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
        "acosh": np.arccosh, "atanh": np.arctanh, "sign": np.sign, "reciprocal": guarded.reciprocal,
        "rsqrt": guarded.rsqrt,
        "floor": np.floor, "ceil": np.ceil, "round": np.rint, "conj": np.conjugate,
        "sigmoid": nn_rules.sigmoid, "is_nan": np.isnan, "is_finite": np.isfinite,
        "is_inf": np.isinf, "logical_not": np.logical_not}.items()},
    **{name: (fn, ("x", "y")) for name, fn in {
        "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
        "divide": np.true_divide, "truediv": np.true_divide, "pow": np.power,
        "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal,
        "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
        "less": np.less, "less_equal": np.less_equal, "logical_and": np.logical_and,
        "logical_or": np.logical_or, "logical_xor": np.logical_xor}.items()},
    "real": (np.real, ("input",)),
    "imag": (np.imag, ("input",)),
    "softplus": (nn_rules.softplus, ("features",)),
    "atan2": (np.arctan2, ("y", "x")),
}

globals().update({name: primitive_op(fn, name, params)
                  for name, (fn, params) in _PRIMITIVES.items()})


def _divisor(x, y):
    """``y``, refused where it is an integer zero: TensorFlow's kernels raise (NumPy's give 0)."""
    if np.result_type(x, y).kind in "iu" and not np.all(y):
        raise InvalidArgumentError("Integer division by zero")
    return y


@op(tensors=2)
def floordiv(x, y, name=None):
    """``floor(x / y)``, as TensorFlow computes it (``1.0 // 0.1`` is 10, NumPy's 9; ``inf // 2``
    is inf, NumPy's nan); no gradient: ``sd.math.floordiv(steps, 10)``."""
    y = _divisor(x, y)
    if np.result_type(x, y).kind in "iu":
        return np.floor_divide(x, y)
    return np.floor(np.true_divide(x, y))


@op(tensors=2)
def floormod(x, y, name=None):
    """``x - y * floor(x / y)``, the sign of ``y`` (NumPy's remainder, its gradient exact):
    ``sd.math.floormod(x, 2.0)``."""
    return np.remainder(x, _divisor(x, y))


mod = floormod


def _int_dtype(x):
    """TensorFlow keeps an integer tensor's dtype through sums and means (NumPy widens)."""
    dtype = np.result_type(x)
    return dtype if dtype.kind in "iu" else None


@op(tensors=2)
def squared_difference(x, y, name=None):
    """``(x - y) ** 2`` elementwise, broadcasting: ``sd.squared_difference(pred, target)``."""
    return np.square(x - y)


@op(tensors=3)
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """``t`` clipped to ``[clip_value_min, clip_value_max]``; the gradient passes at the bounds
    (TensorFlow's convention): ``sd.clip_by_value(x, -1.0, 1.0)``."""
    return np.clip(t, clip_value_min, clip_value_max)


@op(tensors=3)
def where(condition, x=None, y=None, name=None):
    """``x`` where ``condition`` holds, else ``y``; without them, the indices where it holds."""
    if x is None and y is None:
        return np.argwhere(condition).astype(np.int64)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return np.where(condition, x, y)


@op()
def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """The sum over ``axis`` (all axes by default): ``sd.reduce_sum(x, axis=0, keepdims=True)``."""
    return np.sum(input_tensor, axis=axis_arg(axis), keepdims=keepdims,
                  dtype=_int_dtype(input_tensor))


@op()
def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """The mean over ``axis`` (all axes by default): ``sd.reduce_mean(x, axis=-1)``."""
    return np.mean(input_tensor, axis=axis_arg(axis), keepdims=keepdims,
                   dtype=_int_dtype(input_tensor))


@op()
def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """The maximum over ``axis``; ties share the gradient evenly: ``sd.reduce_max(x, axis=1)``.
    Over no values it is the dtype's lowest value (-inf), as in TensorFlow."""
    if 0 in np.shape(input_tensor):
        return _over_nothing(input_tensor, axis, keepdims, lowest=True)
    return np.max(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """The minimum over ``axis``; ties share the gradient evenly: ``sd.reduce_min(x, axis=1)``.
    Over no values it is the dtype's highest value (inf), as in TensorFlow."""
    if 0 in np.shape(input_tensor):
        return _over_nothing(input_tensor, axis, keepdims, lowest=False)
    return np.min(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


def _over_nothing(x, axis, keepdims, lowest):
    """The max (``lowest``) or min of an empty ``x``: its reduction's identity, shaped as
    the reduction, as an empty sum plus that identity (so its gradient is x's zeros)."""
    dtype = np.result_type(x)
    if dtype.kind == "f":
        bound = -np.inf if lowest else np.inf
    else:
        bound = np.iinfo(dtype).min if lowest else np.iinfo(dtype).max
    return np.sum(x, axis=axis_arg(axis), keepdims=keepdims, dtype=dtype) + np.asarray(
        bound, dtype)


@op()
def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """The product over ``axis`` (exact gradients at zeros): ``sd.reduce_prod(x, axis=0)``."""
    return np.prod(input_tensor, axis=axis_arg(axis), keepdims=keepdims,
                   dtype=_int_dtype(input_tensor))


@op()
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance over ``axis``: ``sd.reduce_variance(x, axis=0)``."""
    return np.var(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation over ``axis``: ``sd.reduce_std(x, axis=0)``."""
    return np.std(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """``log(sum(exp(x)))`` over ``axis``, computed stably:
    ``sd.reduce_logsumexp(logits, axis=-1)``."""
    return logsumexp(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """Logical or over ``axis`` of a bool Tensor: ``sd.reduce_any(x > 0)``."""
    return np.any(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """Logical and over ``axis`` of a bool Tensor: ``sd.reduce_all(x > 0)``."""
    return np.all(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """TensorFlow's norm: of the whole tensor as a vector (``axis=None``), of vectors
    along an ``axis``, or of matrices over a 2-tuple ``axis``."""
    axis, keepdims = axis_arg(axis), bool(keepdims)
    matrix = isinstance(axis, tuple) and len(axis) == 2
    if ord == "euclidean" or ord == "fro" and matrix or ord == 2 and not matrix:
        return _norm(tensor, axis=axis, keepdims=keepdims)
    if matrix:
        if ord == 2:  # the largest singular value
            return np.linalg.norm(tensor, 2, axis=axis, keepdims=keepdims)
        if ord not in (1, np.inf):
            raise ValueError(f"'ord' must be a supported matrix norm in ['euclidean', 'fro', "
                             f"1, 2, inf], got {ord!r}")
        # The largest absolute column sum (ord=1) or row sum (ord=inf).
        summed, largest = axis if ord == 1 else axis[::-1]
        out = np.max(np.sum(np.abs(tensor), axis=summed, keepdims=True),
                     axis=largest, keepdims=True)
        return out if keepdims else np.squeeze(out, axis=axis)
    if isinstance(ord, str) or not ord > 0:
        raise ValueError(f"'ord' must be a supported vector norm, got {ord}.")
    if ord == np.inf:
        return np.max(np.abs(tensor), axis=axis, keepdims=keepdims)
    return np.sum(np.abs(tensor) ** ord, axis=axis, keepdims=keepdims) ** (1 / ord)


@op()
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """``sqrt(sum(x ** 2))`` over ``axis``; of integers, an integer (rounded down) as in
    TensorFlow: ``sd.math.reduce_euclidean_norm(x, axis=1)``.  At zero its gradient is nan
    (0 / 0), as TensorFlow's."""
    dtype = _int_dtype(input_tensor)
    if dtype is not None:  # no gradient: an integer result
        square_sum = np.sum(np.square(np.asarray(input_tensor, np.float64)),
                            axis=axis_arg(axis), keepdims=keepdims)
        return np.floor(np.sqrt(square_sum)).astype(dtype)
    return _norm(input_tensor, axis=axis_arg(axis), keepdims=keepdims)


@op()
def argmax(input, axis=None, output_type=np.int64, name=None):
    """The index of the largest value along ``axis`` (no gradient):
    ``sd.argmax(logits, axis=-1)``.  A NaN never wins, as in TensorFlow."""
    return _arg_pick(np.argmax, input, axis, -np.inf).astype(output_type)


@op()
def argmin(input, axis=None, output_type=np.int64, name=None):
    """The index of the smallest value along ``axis`` (no gradient): ``sd.argmin(x, axis=0)``.
    A NaN never wins, as in TensorFlow."""
    return _arg_pick(np.argmin, input, axis, np.inf).astype(output_type)


def _arg_pick(pick, x, axis, loser):
    """``pick(x, axis)`` (``np.argmax``, ``np.argmin``) with each NaN taken as ``loser``, as
    TensorFlow's kernels compare (NumPy picks the first NaN); the first index if all lose.
    On the array itself: an index carries no gradient, so nothing is recorded."""
    value = _raw(x)
    if value.dtype.kind == "f":
        value = np.where(np.isnan(value), loser, value)
    return pick(value, axis=0 if axis is None else int(axis))


@op(tensors=2)
def scalar_mul(scalar, x, name=None):
    """``scalar * x``: ``sd.math.scalar_mul(0.5, x)``."""
    return scalar * x


@op(tensors=(1,))
def polyval(coeffs, x, name=None):
    """``coeffs[0] x^(n-1) + ... + coeffs[n-1]`` by Horner's rule, as TensorFlow computes
    it: ``sd.math.polyval([1.0, 0.0, -2.0], x)``."""
    if not len(coeffs):
        return np.zeros_like(x)
    out = coeffs[0]
    for c in coeffs[1:]:
        out = c + out * x
    return out


@op()
def count_nonzero(input, axis=None, keepdims=False, dtype=np.int64, name=None):
    """The number of nonzero elements over ``axis`` (int64 unless ``dtype`` says; no
    gradient): ``sd.math.count_nonzero(x, axis=1)``."""
    return np.count_nonzero(input, axis=axis_arg(axis), keepdims=keepdims).astype(dtype)


@op(tensors=0)
def add_n(inputs, name=None):
    """The sum of a list of tensors of one shape."""
    return functools.reduce(np.add, inputs)


__all__ = sorted(
    list(_PRIMITIVES) +
    ["squared_difference", "clip_by_value", "where", "reduce_sum", "reduce_mean",
     "reduce_max", "reduce_min", "reduce_prod", "reduce_variance", "reduce_std",
     "reduce_logsumexp", "reduce_any", "reduce_all", "reduce_euclidean_norm", "norm", "argmax",
     "argmin", "add_n", "scalar_mul", "polyval", "count_nonzero", "floordiv", "floormod", "mod"])

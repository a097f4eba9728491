"""``TensorSpec`` and ``input_signature``: the arguments a function accepts, as
``tf.function(input_signature=...)`` checks them.

Invariant: a call bound to a signature passes exactly one value per spec, each a
Tensor (or Variable) of the spec's dtype whose shape fits the spec's (``None`` fits
any length); an argument that is not a Tensor becomes one of the spec's dtype, as
TensorFlow converts it.  Anything else is TensorFlow's TypeError, never a call that
runs on values the signature rules out.
"""
import numpy as np

from .tensor import Tensor, TensorShape, Variable, convert_to_tensor


class TensorSpec:
    """The shape and dtype of a Tensor a function takes (``None``: any length or rank)."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype=np.float32, name=None):
        self.shape = None if shape is None else TensorShape(
            None if d is None else int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tuple(tensor.shape), tensor.dtype, name)

    def is_compatible_with(self, value):
        """Whether ``value`` (a Tensor, an array or a TensorSpec) fits this spec."""
        shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
        dtype = getattr(value, "dtype", None)
        if dtype is not None and np.dtype(dtype) != self.dtype:
            return False
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(
            want is None or want == got for want, got in zip(self.shape, shape))

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == (
            other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self):
        shape = None if self.shape is None else tuple(self.shape)
        return f"TensorSpec(shape={shape}, dtype={self.dtype.name}, name={self.name!r})"


def checked(signature):
    """``input_signature`` as a tuple of TensorSpecs (None: none), or a TypeError."""
    if signature is None:
        return None
    if not isinstance(signature, (list, tuple)) or not all(
            isinstance(spec, TensorSpec) for spec in signature):
        raise TypeError(f"input_signature must be a list of sd.TensorSpec (nested "
                        f"structures of them are not supported), got {signature!r}")
    return tuple(signature)


def bind(signature, args, kwargs, name):
    """``args`` (and ``kwargs``, by the specs' names) as the Tensors ``signature``
    takes, or TensorFlow's TypeError for a call that does not fit it."""
    args = list(args)
    if kwargs:
        names = [spec.name for spec in signature[len(args):]]
        missing = [k for k in kwargs if k not in names]
        if missing:
            _refuse(name, f"unexpected keyword argument {missing[0]!r}")
        args += [kwargs[n] for n in names if n in kwargs]
    if len(args) != len(signature):
        _refuse(name, "too many positional arguments" if len(args) > len(signature)
                else f"missing a required argument: {len(signature) - len(args)} of them")
    bound = []
    for value, spec in zip(args, signature):
        if not isinstance(value, (Tensor, Variable)):
            value = convert_to_tensor(value, dtype=spec.dtype)
        if not spec.is_compatible_with(value):
            _refuse(name, f"Can not cast {TensorSpec.from_tensor(value)} to {spec}")
        bound.append(value)
    return bound


def _refuse(name, why):
    raise TypeError(f"Binding inputs to {name} failed due to `{why}`.")

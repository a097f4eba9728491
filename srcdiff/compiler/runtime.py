"""Helpers that generated code calls besides the rules' own."""


class ShapeOf:
    """What an adjoint needs of a value it only measures: shape, size, rank, dtype.

    ``np.shape``, ``np.size`` and ``np.ndim`` read these attributes, so the rule
    helpers accept it in place of the array, and the forward pass can keep it
    instead of keeping the array alive."""

    __slots__ = ("shape", "size", "ndim", "dtype")

    def __init__(self, value):
        shape = getattr(value, "shape", None)
        if shape is None:  # a Python number
            self.shape, self.size, self.ndim, self.dtype = (), 1, 0, type(value)
        else:
            self.shape, self.size, self.ndim = shape, value.size, value.ndim
            self.dtype = value.dtype

    def __repr__(self):
        return f"ShapeOf(shape={self.shape})"


shape_of = ShapeOf


class _Unbound:
    """What the forward pass binds a local to before a branch or loop that may not
    bind it, so that it can be saved; never a value the user's code sees."""
    __slots__ = ()

    def __repr__(self):
        return "UNBOUND"


UNBOUND = _Unbound()


def unbound(name):
    """Raise what Python raises for a read of local ``name`` before any assignment."""
    raise UnboundLocalError(f"cannot access local variable '{name}' where it is not "
                            "associated with a value")

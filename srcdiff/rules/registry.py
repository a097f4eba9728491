"""The table of derivative rules, shared by the eager tape and the compiler.

A rule is a vector-Jacobian product for one positional input of one primitive:
a small function ``vjp(g, ans, *args, **kwargs)`` written with NumPy calls,
where ``g`` is the adjoint of the result ``ans``.  Run on ndarrays it is the
tape's backward step; run on Tensors under an outer tape it is itself recorded
(higher derivatives); the compiler inlines its body into generated source.
"""

import functools

_VJPS = {}
_NONDIFF = set()
_EXPANSIONS = {}

# Each @primitive wrapper -> the function it wraps: what ``apply`` runs on arrays.
RAW = {}

# Set by srcdiff.tensor: the value types that route a primitive call through
# the recorder instead of running it on raw arrays.
TENSOR_TYPES = ()
APPLY = None


class Rule:
    """The derivative rules of one primitive: one vjp per positional input.

    ``argnum_vjp``, when set, serves every input of a primitive that takes any
    number of them (``concatenate(*xs)``) and is called as ``vjp(i, g, ans, ...)``."""

    __slots__ = ("primitive", "vjps", "argnum_vjp", "name")

    def __init__(self, primitive, vjps, name, argnum_vjp=None):
        self.primitive = primitive
        self.vjps = vjps
        self.argnum_vjp = argnum_vjp
        self.name = name

    def vjp(self, i):
        """The vjp of input ``i`` as ``f(g, ans, *args, **kwargs)``, or None."""
        if self.argnum_vjp is not None:
            return functools.partial(self.argnum_vjp, i)
        return self.vjps[i] if i < len(self.vjps) else None

    def __repr__(self):
        return f"<Rule {self.name}>"


def primitive_name(fn):
    module = getattr(fn, "__module__", None) or "numpy"
    name = getattr(fn, "__name__", repr(fn))
    if isinstance(fn, type(len)) and module == "builtins":
        return name
    if module.startswith("numpy"):
        module = "numpy.linalg" if module.endswith("linalg") else "numpy"
    return f"{module}.{name}"


def defvjp(primitive, *vjps):
    """Register the vjps of ``primitive``, one per positional input.

    ``None`` marks an input with no gradient (an index, a condition)."""
    _VJPS[primitive] = Rule(primitive, vjps, primitive_name(primitive))
    return primitive


def defvjp_argnum(primitive, vjp):
    """Register one vjp ``vjp(i, g, ans, *args, **kwargs)`` serving every input."""
    _VJPS[primitive] = Rule(primitive, (), primitive_name(primitive), argnum_vjp=vjp)
    return primitive


def nondifferentiable(*primitives):
    """Mark functions whose results never carry a gradient (comparisons, floor)."""
    _NONDIFF.update(primitives)


def rule_of(primitive):
    """The rule of ``primitive``: from the table, or carried by the callable itself."""
    try:
        rule = _VJPS.get(primitive)
    except TypeError:  # unhashable callable
        rule = None
    return rule if rule is not None else getattr(primitive, "srcdiff_rule", None)


def is_nondifferentiable(primitive):
    return primitive in _NONDIFF


def all_rules():
    return dict(_VJPS)


def defexpansion(numpy_fn, expansion):
    """Differentiate ``numpy_fn`` through ``expansion``: the same function written
    with recorded primitives.  For NumPy functions with several results
    (``np.split``, ``np.linalg.slogdet``), which no single tape record can hold."""
    _EXPANSIONS[numpy_fn] = expansion
    return expansion


def expansion_of(numpy_fn):
    """The expansion registered for ``numpy_fn``, or None."""
    return _EXPANSIONS.get(numpy_fn)


def primitive(fn):
    """Make a NumPy-level function of srcdiff's own a primitive.

    On ndarrays it runs as written; given a Tensor it is applied through the
    recorder, like a NumPy function reached through ``__array_function__``."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        for a in args:
            if isinstance(a, TENSOR_TYPES):
                return APPLY(call, *args, **kwargs)
        return fn(*args, **kwargs)
    call.raw = fn
    RAW[call] = fn
    return call

"""Method calls resolved when they run: ``obj.f(a, b)`` on a local value ``obj``.

Which function ``obj.f`` calls depends on the class of ``obj``, which may change from
one call to the next (``for layer in LAYERS: x = layer.forward(x)`` over layers of
different classes).  The describer makes such a call a CALL whose function is a
:class:`Method` and whose inputs are the receiver, then the arguments as written
(keyword values after the positional ones).  Its result is active only through
them, as for any call.

The caller is compiled against a :class:`MethodCall` stand-in (as recursion.py's is):
its generated code calls the stand-in's ``forward`` with the receiver first, which
asks the cache for the unit of ``type(obj).f`` compiled for the active arguments
and their kinds (a hit after the first call of each class), runs that unit's forward
pass and keeps ``(unit, its tape)`` on the caller's tape; the stand-in's
``backward`` runs that unit's backward pass on it.  The receiver is ``self``, an
argument like any other: it gets an adjoint only if the caller's value is active
(a namedtuple's fields), else its attributes are read as constants, as a closure's.

What the caller is compiled to assume of the callee (one result, or a tuple where
the call is unpacked; no container returned; no write into its arguments) is
checked against each unit when it runs; a method the compiler cannot compile (a
builtin's, an attribute of the instance, an object holding Tensors) is a
CompileError pointing at the call, raised when it runs, never a gradient computed
past it.  Inactive calls run as written and never reach the stand-in.
"""
import inspect
import threading

from ..rules.containers import CONTAINERS, zeros_like
from .builtin_methods import MODELLED, MODELS
from .errors import CompileError
from .kwargs import keyword_call
from .methods import holds_tensors
from .runtime import shape_of
from .unit import ANY


class Method:
    """The callee of ``obj.attr(...)`` for a local ``obj``: ``keywords`` names the
    trailing inputs passed by keyword."""

    __slots__ = ("attr", "keywords", "__name__")

    def __init__(self, attr, keywords=()):
        self.attr = attr
        self.keywords = tuple(keywords)
        self.__name__ = attr


_REFUSED = "Call a method its class defines in Python, on an object holding arrays " \
           "(not Tensors or Variables), or compute the value before the function."


class MethodCall:
    """Stands for the units of ``type(obj).attr`` in a caller, with the caller's
    inputs (receiver first) ``active`` as ``mask`` says and of the ``kinds`` the
    cache keys on; ``error(message, hint)`` makes a CompileError at the call."""

    backward_rows = None  # the batched pass of a caller calls it row by row
    not_batched = "a method resolved when the call runs"
    depth = 0
    unconnected = ()  # assumed: an input a unit does not use gets zeros (see backward)
    source = None

    def __init__(self, method, receiver, mask, kinds, cache, several, error):
        self.method = method
        self.name = f"{receiver}_{method.attr}"
        self.mask = tuple(mask)
        self.kinds = tuple(kinds)
        self.cache = cache
        self.several = several
        self.error = error
        self.wrt = [f"<argument {k}>" for k, a in enumerate(mask) if a]
        # a call with no active input runs as written: it may write into anything
        self.mutated = () if any(mask) else tuple(range(len(mask)))
        self.aliased = tuple(range(len(mask)))  # unknown until it runs: any of them
        # globals it reads for a gradient: any; those it writes into, checked when it
        # runs if it is active, else any (free_effects.py)
        self.free_reads = frozenset([ANY])
        self.free_writes = frozenset() if any(mask) else frozenset([ANY])
        self._slots = {}  # (function, count of inputs) -> where each parameter's value is
        self._lock = threading.Lock()
        from .cache import functions_of  # not at the top: cache.py imports driver.py
        self._functions_of = functions_of
        self.forward = self._forward
        self.backward = self._backward

    def is_current(self):
        return True  # each call asks the cache, which holds only current units

    def _forward(self, obj, *args, **keywords):
        fn = self._method_of(obj)
        if self.mask[0] and not isinstance(obj, CONTAINERS):  # self.W would be a constant
            raise self.error(f"cannot differentiate with respect to a {type(obj).__name__} "
                             "object: of an object, only a namedtuple's fields get gradients",
                             "Pass the arrays as arguments, or hold them in a namedtuple.")
        inputs = (obj,) + args + tuple(keywords[k] for k in self.method.keywords)
        fn, slots = self._slots_of(fn, len(inputs))
        values = [inputs[k] if k is not None else default for k, default in slots]
        active = [k is not None and self.mask[k] for k, _ in slots]
        kinds = [self.kinds[k] if k is not None else False for k, _ in slots]
        try:
            unit = self.cache.get(fn, active, kinds, functions=self._functions_of(values))
        except CompileError as error:
            if fn not in MODELLED:
                raise
            raise self.error(f"cannot differentiate {type(obj).__name__}.{self.method.attr} "
                             f"as called here: {error.message}",
                             "Read the item as d[key].") from None
        self._check(unit, fn)
        result, tape = unit.forward(*values)
        # for each active input of the caller: its place among the unit's active
        # parameters, or what its zero adjoint is made from where it is unconnected
        places = [j for j, a in enumerate(active) if a]
        order = []
        for slot in (j for j, (k, _) in enumerate(slots) if k is not None and self.mask[k]):
            name = unit.wrt[places.index(slot)]
            order.append(_Zero(values[slot]) if name in unit.unconnected
                         else places.index(slot))
        return result, (unit, tape, order)

    def _backward(self, tape, d_out):
        unit, inner, order = tape
        grads = unit.backward(inner, d_out)
        if len(unit.wrt) == 1:
            grads = (grads,)
        out = [k.make() if isinstance(k, _Zero) else grads[k] for k in order]
        return out[0] if len(out) == 1 else tuple(out)

    def _method_of(self, obj):
        """The function ``obj.attr`` calls with ``obj`` as ``self``, or a CompileError."""
        attr, cls = self.method.attr, type(obj)
        what = f"{cls.__name__}.{attr}"
        if attr in getattr(obj, "__dict__", {}):
            raise self.error(f"cannot differentiate {what}: it is an attribute of the "
                             "object, not a method of its class", _REFUSED)
        model = MODELS.get((cls, attr))
        if model is not None:  # a built-in method, modelled in Python
            return model
        try:
            found = inspect.getattr_static(cls, attr)
        except AttributeError:
            raise AttributeError(f"{cls.__name__!r} object has no attribute {attr!r}") from None
        fn = getattr(found, "python_function", found)  # an @sd.function method
        module = (getattr(fn, "__module__", "") or "").split(".")[0]
        if not inspect.isfunction(fn) or module in ("numpy", "scipy"):
            raise self.error(f"cannot differentiate {what}: it is not a function written "
                             f"in Python (a {type(found).__name__}), and the method called "
                             "is looked up on the object when the call runs", _REFUSED)
        if holds_tensors(obj):
            raise self.error(f"cannot differentiate {what}: its object holds Tensors or "
                             "Variables, which compiled code does not read", _REFUSED)
        return fn

    def _slots_of(self, fn, count):
        """(the function compiled, (input position or None, default) for each of its
        parameters) for ``fn`` called with ``count`` inputs (the receiver first, the
        keyword ones last), as Python binds them: a parameter left to its default is
        passed that default; keyword-only parameters follow the others (parse.py),
        and a ``**kwargs`` one is a parameter per keyword it gets (kwargs.py)."""
        key = (fn, count)
        found = self._slots.get(key)
        if found is not None:
            return found
        signature = inspect.signature(fn)
        positional = count - len(self.method.keywords)
        bound = signature.bind(*range(positional), **{
            k: positional + j for j, k in enumerate(self.method.keywords)})  # TypeError as Python's
        slots, callee = [], fn
        for p in signature.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                slots += [(k, None) for k in bound.arguments.get(p.name, ())]
            elif p.kind is p.VAR_KEYWORD:
                spread = bound.arguments.get(p.name, {})
                callee = keyword_call(fn, tuple(spread)).python_function
                slots += [(k, None) for k in spread.values()]
            elif p.name in bound.arguments:
                slots.append((bound.arguments[p.name], None))
            elif p.default is p.empty:  # a keyword-only one not passed
                raise TypeError(f"{fn.__qualname__}() missing keyword-only argument "
                                f"{p.name!r}")
            else:
                slots.append((None, p.default))
        found = callee, tuple(slots)
        with self._lock:
            self._slots[key] = found
        return found

    def _check(self, unit, fn):
        """Refuse a unit that breaks what the caller was compiled to assume."""
        wrong = ("returns several results" if unit.several and not self.several else
                 "returns one result where the call unpacks several"
                 if self.several and not unit.several else
                 "returns a container" if unit.depth else
                 "writes into its arguments" if unit.mutated else
                 "writes into a global or closure value" if unit.free_writes else None)
        if wrong is not None:
            raise self.error(f"cannot differentiate {fn.__qualname__} as called here: the "
                             f"method called depends on the object, and this one {wrong}",
                             "Return one array (or unpack a tuple literal), and compute "
                             "on copies of the arguments and globals.")


class _Zero:
    """The zero adjoint of an input a unit's result does not depend on, made from what
    the forward pass kept of it: its shape, or the container or number itself."""

    __slots__ = ("like",)

    def __init__(self, value):
        self.like = value if isinstance(value, CONTAINERS + (int, float)) else shape_of(value)

    def make(self):
        return zeros_like(self.like)

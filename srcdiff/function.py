"""``@sd.function``: where the compiler and the tape meet.

Outside a tape, a call runs the compiled forward pass.  Under a recording tape
with a watched input (an argument, or a trainable Variable the function reads
from a global, a closure cell or an attribute of an argument such as
``self.kernel``), the call is ONE tape entry whose backward step is the cached
compiled adjoint.  When that backward step must itself be recorded (an outer
tape computing a higher derivative), the function is re-run eagerly under a
tape instead, so every engine gives the eager tape's gradients.  Likewise a
derivative of a derivative that ``sd.grad``, ``sd.value_and_grad`` or
``sd.jacobian`` made runs on nested eager tapes (see :func:`on_tapes`).
"""
import collections
import functools
import inspect
import numbers
import warnings
import weakref

import gast
import numpy as np

from ._recording import STATE
from .compiler.errors import CompileError
from .compiler.parse import check_function, parse_function
from .compiler.cache import CACHE, ranks_of
from .ops.array_ops import identity
from .rules.registry import Rule
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, Variable, _ArrayLike, _raw, apply, convert_to_tensor

CacheInfo = collections.namedtuple("CacheInfo", "hits misses currsize last_miss")


class Function:
    """A Python function compiled to forward and adjoint code (see the module doc)."""

    def __init__(self, fn, fallback=None):
        if fallback not in (None, "eager"):
            raise ValueError(f"fallback must be None or 'eager', got {fallback!r}")
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.fallback = fallback
        self._eager = False
        self._reads = None
        self.hits = self.misses = 0
        self.last_miss = None

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    def __call__(self, *args):
        if self._eager:
            return self.python_function(*args)
        try:
            return self._call(args)
        except CompileError as error:
            if self.fallback != "eager":
                raise
            warnings.warn(f"srcdiff cannot compile {self.__qualname__}; running it on the "
                          f"eager tape instead:\n{error}", stacklevel=2)
            self._eager = True
            return self.python_function(*args)

    def cache_info(self):
        """This function's hits and misses, how many compiled units of it the cache holds,
        and why it last missed."""
        size = CACHE.size(self.python_function)
        return CacheInfo(self.hits, self.misses, size, self.last_miss)

    # --- calls ---
    def _call(self, args):
        args = with_defaults(self.python_function, args)
        variables = self._implicit_variables(args)
        inputs = list(args) + [v for _, v in variables]
        tapes = STATE.tapes
        if tapes:
            # reading a Variable under a tape watches it (if trainable) and records the read
            inputs = [v.read_value() if isinstance(v, Variable) else v for v in inputs]
            active = tuple(_differentiable(v) and any(t._tracks_any([v]) for t in tapes)
                           for v in inputs)
        else:
            active = (False,) * len(inputs)
        raw = [_raw(v) for v in inputs]
        lifted = tuple(expr for expr, _ in variables)
        unit = self._unit(active, raw, lifted)
        y, saved = unit.run(raw)
        if not any(active):
            return _as_output(y, inputs)
        entry = _CompiledCall(self, unit, y, saved, active, args, variables)
        return apply(entry, *inputs)

    def _unit(self, active, raw, lifted):
        """The unit for arguments ``raw`` (plain values), keyed on their kinds."""
        unit, why = CACHE.lookup(self.python_function, active,
                                 tuple(_is_scalar(v) for v in raw), lifted, ranks_of(raw))
        if why is None:
            self.hits += 1
        else:
            self.misses += 1
            self.last_miss = why
        return unit

    def _implicit_variables(self, args):
        """The Variables the function reads besides its arguments: (expression, Variable)."""
        if self._reads is None:
            self._reads = _free_reads(self.python_function)
        found = []
        fn = self.python_function
        for expr, base, chain in self._reads:
            if base is None:
                value = _free_value(fn, chain[0])
                chain = chain[1:]
            elif base < len(args):
                value = args[base]
            else:
                continue
            for attr in chain:
                value = getattr(value, attr, None)
            if isinstance(value, Variable):
                found.append((expr, value))
        return found


class _CompiledCall:
    """One call of a compiled function under a tape: a primitive whose rule runs
    the cached adjoint (once per output adjoint, for every input)."""

    __slots__ = ("function", "unit", "value", "saved", "active", "args", "variables",
                 "srcdiff_rule", "_last")

    def __init__(self, function, unit, value, saved, active, args, variables):
        self.function = function
        self.unit = unit
        self.value = value
        self.saved = saved
        self.active = active
        self.args = args
        self.variables = variables
        self._last = (None, None)
        self.srcdiff_rule = Rule(self, (), function.__qualname__, argnum_vjp=self._vjp)

    def __call__(self, *raw):
        return self.value

    def _vjp(self, i, g, ans, *inputs):
        seen, grads = self._last
        if seen is not g:
            if isinstance(g, _ArrayLike):  # an outer tape records this: differentiate eagerly
                grads = self._eager_vjp(g, inputs)
            else:
                grads = _backward(self.unit, self.saved, g, self.active)
            self._last = (g, grads)
        if i not in grads and not self.active[i] and _floating(inputs[i]):
            # A source the tape never watched, asked for as an input of this call: as in
            # TensorFlow, it gets its gradient. Compile with it active, forward again.
            active = tuple(a or k == i for k, a in enumerate(self.active))
            raw = [_raw(v) for v in inputs]
            unit = self.function._unit(active, raw, tuple(expr for expr, _ in self.variables))
            grads = dict(grads)
            saved = unit.run(raw)[1]
            grads[i] = _backward(unit, saved, _raw(g), active).get(i)
        return grads.get(i)

    def _eager_vjp(self, g, inputs):
        positions = [k for k, a in enumerate(self.active) if a]
        # a copy per argument: f(x, x) has two sources, each with its own adjoint
        args = [identity(a) if k in positions else a
                for k, a in enumerate(inputs[:len(self.args)])]
        sources = [args[k] if k < len(self.args) else self.variables[k - len(self.args)][1]
                   for k in positions]
        with GradientTape() as tape:
            tape.watch(sources)
            y = self.function.python_function(*args)
        grads = tape.gradient(y, sources, output_gradients=g)
        return dict(zip(positions, grads))


def _backward(unit, saved, g, active):
    """The compiled adjoints of the active inputs, by input position."""
    grads = unit.backward(saved, g)
    grads = grads if sum(active) > 1 else (grads,)
    return dict(zip([k for k, a in enumerate(active) if a], grads))


def function(fn=None, *, fallback=None):
    """Compile ``fn`` to forward and adjoint code; usable as ``@function`` or
    ``@function(fallback="eager")``."""
    if fn is None:
        return functools.partial(function, fallback=fallback)
    check_function(fn, "sd.function")
    return Function(fn, fallback)


def clear_cache():
    """Forget every compiled function: the next calls compile again."""
    CACHE.clear()


def _differentiable(value):
    return isinstance(value, _ArrayLike) and value.dtype.kind in "fc"


def _floating(value):
    """A real or complex floating array, raw or a Tensor (the tape passes either)."""
    return isinstance(value, (np.ndarray, np.generic, _ArrayLike)) and value.dtype.kind in "fc"


def _is_scalar(value):
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _as_output(y, inputs):
    if any(isinstance(v, _ArrayLike) for v in inputs):
        if isinstance(y, tuple):
            return tuple(Tensor(np.asarray(v)) for v in y)
        return Tensor(np.asarray(y))
    return y


def with_defaults(fn, args):
    """``args`` completed with the defaults of the parameters they leave out, as a
    call of ``fn`` would bind them: compiled code takes every parameter positionally
    (``def f(x, c=2.0)`` called ``f(x)`` runs ``f_forward(x, 2.0)``).  Unchanged when
    nothing is left out, or when too much is (the call raises as Python would)."""
    fn = getattr(fn, "python_function", fn)
    defaults = getattr(fn, "__defaults__", None)
    missing = getattr(getattr(fn, "__code__", None), "co_argcount", 0) - len(args)
    if not defaults or missing <= 0 or missing > len(defaults):
        return args
    return list(args) + list(defaults[len(defaults) - missing:])


def _free_value(fn, name):
    if fn.__closure__ and name in fn.__code__.co_freevars:
        cell = fn.__closure__[fn.__code__.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:
            return None
    return fn.__globals__.get(name)


def _free_reads(fn):
    """Expressions that may denote Variables: free names and attribute chains on
    parameters or free names (``W``, ``self.kernel``, ``model.layer.bias``)."""
    try:
        parsed = parse_function(fn)
    except CompileError:
        return []
    params = parsed.params
    assigned = {n.id for n in gast.walk(parsed.node) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store)}
    reads = {}
    for node in gast.walk(parsed.node):
        chain = []
        base = node
        while isinstance(base, gast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        if not isinstance(base, gast.Name) or not isinstance(base.ctx, gast.Load):
            continue
        if base.id in params and chain:
            expr = ".".join([base.id] + chain)
            reads.setdefault(expr, (expr, params.index(base.id), tuple(chain)))
        elif base.id not in params and base.id not in assigned:
            if inspect.ismodule(parsed.namespace.get(base.id)):
                continue  # np.sin, math.pi: never a Variable
            expr = ".".join([base.id] + chain)
            reads.setdefault(expr, (expr, None, (base.id,) + tuple(chain)))
    return list(reads.values())


# --- derivatives of derivatives ---

Derivative = collections.namedtuple("Derivative", "kind fn positions single")
Derivative.__doc__ = """What a function ``sd.grad``, ``sd.value_and_grad`` or ``sd.jacobian``
(``kind``) made computes: the derivative of ``fn`` for the arguments ``positions``."""

# The derivative functions srcdiff made.  Not an attribute: functools.wraps copies a
# function's __dict__, so a user's decorator around one would pass for it.
DERIVATIVES = weakref.WeakKeyDictionary()


def on_tapes(derivative):
    """A function of arrays computing ``derivative`` (a :class:`Derivative` whose
    ``fn`` is itself a derivative srcdiff made) exactly, with nested eager tapes:
    the innermost function runs on Tensors, each derivative level records its
    own tape, and every outer tape records the inner tapes' backward walks."""
    def compute(*args):
        return _arrays(on_tensors(derivative, args), args, derivative)

    return compute


def recorded(args):
    """``args`` as a tape sees them (Variables read, which watches them) if a
    recording tape watches one of them, else None: a derivative computed at them
    must then be computed on tapes, which that tape records (see :func:`on_tensors`)."""
    tapes = STATE.tapes
    if not tapes or not any(isinstance(a, _ArrayLike) for a in args):
        return None
    args = [a.read_value() if isinstance(a, Variable) else a for a in args]
    return args if any(t._tracks_any(args) for t in tapes) else None


def on_tensors(derivative, args):
    """What ``derivative`` gives at ``args``, as Tensors the active tapes record."""
    return _differentiate(derivative, _tensor_form(derivative.fn), args)


def _tensor_form(fn):
    """``fn`` as a function of Tensors whose operations the active tapes record."""
    derivative = DERIVATIVES.get(fn)
    if derivative is None:
        return fn  # NumPy functions and operators on Tensors are recorded
    inner = _tensor_form(derivative.fn)
    return lambda *args: _differentiate(derivative, inner, args)


def _differentiate(derivative, form, args):
    """What ``derivative`` gives at ``args``, as Tensors, by a tape around ``form``."""
    kind, fn, positions, single = derivative
    args = list(args)
    for i in set(positions):  # a copy each: f(x, x) has two sources
        args[i] = identity(convert_to_tensor(args[i] if isinstance(args[i], _ArrayLike)
                                             else np.asarray(args[i])))
    sources = [args[i] for i in positions]
    with GradientTape(persistent=kind == "jacobian") as tape:
        tape.watch(sources)
        y = form(*args)
    zero = UnconnectedGradients.ZERO
    if kind == "jacobian":
        if isinstance(y, tuple):
            raise TypeError(f"sd.jacobian needs a function returning one array, but "
                            f"{fn.__qualname__} returned a tuple; for a tuple of gradients, "
                            "take the jacobian of one sd.grad per argument")
        grads = [tape.jacobian(y, s, unconnected_gradients=zero) for s in sources]
    else:
        if isinstance(y, tuple) or np.size(_raw(y)) != 1:
            raise ValueError(f"sd.grad of {fn.__qualname__} needs a scalar output, but it "
                             f"returned {_describe(y)}; use sd.jacobian for the Jacobian "
                             "(of a gradient: the Hessian)")
        grads = tape.gradient(y, sources, unconnected_gradients=zero)
    grads = grads[0] if single else tuple(grads)
    return (y, grads) if kind == "value_and_grad" else grads


def _describe(y):
    return "a tuple" if isinstance(y, tuple) else f"shape {np.shape(_raw(y))}"


def _arrays(result, args, derivative):
    """``result`` with NumPy values for Tensors, each derivative in its argument's dtype."""
    def like(g, arg):
        g = np.asarray(_raw(g))
        if type(arg) is float and g.ndim == 0:
            return float(g)
        dtype = np.asarray(_raw(arg)).dtype
        return g.astype(dtype, copy=False) if dtype.kind in "fc" else g

    if derivative.kind == "value_and_grad":
        value, grads = result
        return _raw(value), _arrays(grads, args, derivative._replace(kind="grad"))
    if derivative.single:
        return like(result, args[derivative.positions[0]])
    return tuple(like(g, args[i]) for g, i in zip(result, derivative.positions))

"""``@sd.function``: where the compiler and the tape meet.

Outside a tape, a call runs the compiled forward pass.  Under a recording tape
with a watched input (an argument or a Tensor in a pytree argument, or a Tensor or
trainable Variable the function captures: reads from a global, a closure cell or
an attribute of an argument such as ``self.kernel``, itself or in a function it
calls by name), the call is ONE tape entry whose backward step is the cached
compiled adjoint (one per leaf when it returns several results or a pytree, each
leaf a Tensor: see ``_CompiledCall.parts``).  Compiled code computes on arrays: a watched value that reaches
it any other way is refused (``_recording.compiled_code_met``), never dropped.  When that backward step must itself be recorded (an outer
tape computing a higher derivative), the function is re-run eagerly under a
tape instead, so every engine gives the eager tape's gradients.  Likewise a
derivative of a derivative that ``sd.grad``, ``sd.value_and_grad`` or
``sd.jacobian`` made runs on nested eager tapes (see :func:`on_tapes`).

A vectorised jacobian on the tape hands the entry a batch of adjoints (a leading
axis of rows): it runs the batched backward pass of the unit compiled ``batched``
once for them all, or, where that unit has none, the plain one row by row, and
``cache_info().row_by_row`` says why.
"""
import builtins
import collections
import functools
import inspect
import numbers
import operator
import warnings
import weakref

import gast
import numpy as np

from . import nest, signature
from ._recording import STATE
from .compiler.errors import CompileError, for_user
from .eager_numbers import exactly
from .compiler.parse import check_function, parse_function
from .compiler.cache import CACHE, LEAN_BYTES, NOT_FUNCTIONS, functions_of, lean_dtypes, ranks_of
from .ops.array_ops import identity
from .nest import unwrapped
from .rules.containers import CONTAINERS, Items, dense, zeros_like
from .rules.helpers import batch_axes, batched
from .rules.registry import Rule, Traits
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, Variable, _ArrayLike, _new, _raw, _run, convert_to_tensor

CacheInfo = collections.namedtuple("CacheInfo", "hits misses currsize last_miss row_by_row",
                                   defaults=(None,))
CacheInfo.__doc__ = """A compiled function's cache statistics; ``row_by_row``: why its last
jacobian ran the compiled backward pass once per row (None: one batched walk)."""


class Function:
    """A Python function compiled to forward and adjoint code (see the module doc)."""

    def __init__(self, fn, fallback=None, input_signature=None):
        if fallback not in (None, "eager"):
            raise ValueError(f"fallback must be None or 'eager', got {fallback!r}")
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.fallback = fallback
        self.input_signature = signature.checked(input_signature)
        self._eager = False
        self._reads = None
        code = getattr(fn, "__code__", None)  # how many arguments need no defaults (-1: any)
        self._arity = code.co_argcount if code is not None and not code.co_kwonlyargcount else -1
        self.units = Units(fn, numbers=True)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return functools.partial(self._method_call, instance)

    def _method_call(self, instance, *args, **kwargs):
        args, kwargs = self._signed(args, kwargs)  # a method's signature leaves self out
        return self._run((instance, *args), kwargs)

    def __call__(self, *args, **kwargs):
        if kwargs or self._eager or self.input_signature is not None:
            return self._run(*self._signed(args, kwargs))
        try:  # _run's common case, its frame spared
            return self._call(args)
        except CompileError as error:
            return self._refused(error, args, kwargs)

    def _signed(self, args, kwargs):
        """The arguments as ``input_signature`` binds them (all by position), if given."""
        if self.input_signature is None:
            return args, kwargs
        return signature.bind(self.input_signature, args, kwargs, self.__qualname__), {}

    def _run(self, args, kwargs):
        if self._eager:
            return exactly(self.python_function, *args, **kwargs)
        try:
            # compiled code takes every parameter by position (as ``by_position`` says)
            return self._call(by_position(self.python_function, args, kwargs) if kwargs
                              else args)
        except CompileError as error:
            return self._refused(error, args, kwargs, 4)

    def _refused(self, error, args, kwargs, depth=3):
        """A call the compiler refuses: the error, or the eager tape's run (``fallback``),
        with a warning for the caller ``depth`` frames up."""
        if self.fallback != "eager":
            raise for_user(error)  # srcdiff's frames are hidden: SRCDIFF_DEBUG=1 shows them
        warnings.warn(f"srcdiff cannot compile {self.__qualname__}; running it on the "
                      f"eager tape instead:\n{error}", stacklevel=depth)
        self._eager = True
        return exactly(self.python_function, *args, **kwargs)

    def cache_info(self):
        """This function's hits and misses, how many compiled units of it the cache holds,
        why it last missed, and why its last jacobian ran row by row (``row_by_row``)."""
        return self.units.cache_info()

    # --- calls ---
    def _call(self, args):
        if len(args) != self._arity:
            args = with_defaults(self.python_function, args)
        captures = self._captures(args) if self._reads != () else ()
        inputs = list(args) + [v for _, v in captures] if captures else list(args)
        tapes = STATE.tapes
        if tapes:
            active, plain, lead = _activity(inputs, tapes)
        else:
            active = (False,) * len(inputs)
            plain = [v._value if type(v) is Tensor else unwrapped(v) for v in inputs]
        lifted = tuple([expr for expr, _ in captures]) if captures else ()
        unit, raw = self.units.get(plain, active, lifted)
        y, saved = unit.run(raw)
        if True not in active:
            return _as_output(y, inputs)
        kind = type(y)
        if kind not in _ARRAYS and any(isinstance(v, _ArrayLike) for v in (
                nest.flatten(y) if isinstance(y, CONTAINERS) else (y,))):
            _refuse_tensors(self.__qualname__)
        entry = _CompiledCall(self, unit, y, saved, active, plain, inputs, len(args), captures,
                              len(tapes) == 1, lead)
        # Tensors, as a rule: Variables were read, pytrees taken apart
        args, raw = entry.tape_inputs, entry.tape_values
        if kind in _ARRAYS:  # _run(entry, ...), its frames spared: y is an array or number
            result = _new(Tensor)
            result._value = np.asarray(y) if kind is float else y  # as entry() gives it
            if entry.alone:
                tapes[0]._record_call(entry, args, raw, result)
            else:
                for tape in tapes:
                    tape._record(entry, args, raw, None, result, entry)
            return result
        if not isinstance(y, CONTAINERS):
            return _run(entry, entry, args, raw, None, tapes, entry)
        # several results, or a pytree: one entry per leaf (see _CompiledCall.part)
        return nest.pack_sequence_as(y, [_run(part, part, args, raw, None, tapes, part)
                                         for part in entry.parts()])

    def _captures(self, args):
        """The Tensors and Variables (and pytrees holding some) the function reads
        besides its arguments, directly or in the functions it calls by name:
        (expression, value), each an input of the compiled code (see ``_free_reads``)."""
        if self._reads is None:  # () when it reads none: no further call asks again
            self._reads = tuple(_free_reads(self.python_function))
        if not self._reads:
            return ()
        found = []
        for expr, base, chain in self._reads:
            if base is None:
                value = self.python_function
            elif base < len(args):
                value = args[base]
            else:
                continue
            for step in chain:
                if step.startswith("/"):  # a free name of the function ``value``
                    value = _free_value(getattr(value, "python_function", value), step[1:])
                else:
                    value = getattr(value, step, None)
            if isinstance(value, _ArrayLike) or (isinstance(value, CONTAINERS) and any(
                    isinstance(leaf, _ArrayLike) for leaf in nest.flatten(value))):
                found.append((expr, value))  # a pytree of them is one input too
        return found


class _CompiledCall(Rule):
    """One call of a compiled function under a tape: a primitive that is its own
    rule, which runs the cached adjoint (once per output adjoint, for every input;
    once per batch of them in a vectorised jacobian): its forms are its methods
    ``joint`` and ``argnum_vjp``, and it has no vjp per input.

    Its tape inputs are the function's inputs, but that the Tensors in a pytree
    stand for it, each its own tape input: ``owners[k]`` is ``(i, j)`` for tape
    input ``k``, leaf ``j`` (in ``nest.flatten`` order) of input ``i``, or ``(i, None)``
    for input ``i`` itself."""

    __slots__ = ("function", "unit", "value", "saved", "active", "raw", "inputs", "count",
                 "captures", "_owners", "tape_inputs", "tape_values", "direct", "part",
                 "_last", "alone")
    srcdiff_traits = Traits(batches=True)  # a batch of adjoints: see _batch
    vjps = ()

    def __init__(self, function, unit, value, saved, active, raw, inputs, count, captures,
                 alone=False, lead=None):
        self.function = function
        self.alone = alone            # made while one tape recorded: no other holds it
        self.unit = unit
        self.value = value
        self.saved = saved
        self.active = active
        self.raw = raw                # the inputs' values as given (not as passed: Units)
        self.inputs = inputs          # the arguments, then the captured values (Variables read)
        self.count = count            # how many of them are arguments
        self.captures = captures
        self.part = None
        self._last = (None, None)
        self._parameters = None  # Rule's
        self._owners = None
        if lead is not None:  # the Tensors first, the others ndarrays and numbers
            self.tape_inputs = inputs[:lead] if lead < len(inputs) else inputs
            self.tape_values = raw[:lead] if lead < len(raw) else raw
            self.direct = True  # each tape input the input of its position
            return
        owners = []
        tape_inputs = self.tape_inputs = []  # each Tensor input, or each of a pytree's
        values = []  # the array of each
        # whether tape input k is input k, for every k: adjoints by input are by tape input
        direct = True
        for i, v in enumerate(inputs):
            kind = type(v)
            if kind is Tensor:  # the common cases first, without the generic checks
                direct = direct and i == len(owners)
                owners.append((i, None))
                tape_inputs.append(v)
                values.append(v._value)
            elif kind in _PLAIN:
                continue
            elif not isinstance(v, CONTAINERS):
                if isinstance(v, _ArrayLike):  # no tape watches an ndarray or a number
                    direct = direct and i == len(owners)
                    owners.append((i, None))
                    tape_inputs.append(v)
                    values.append(_raw(v))
            else:
                for j, leaf in enumerate(nest.flatten(v)):
                    if isinstance(leaf, _ArrayLike):
                        direct = False
                        owners.append((i, j))
                        tape_inputs.append(leaf)
                        values.append(_raw(leaf))
        self.tape_values = tuple(values)
        self.direct = direct
        if not direct:
            self._owners = owners

    @property
    def owners(self):
        """``(i, j)`` for each tape input (see the class doc): ``(k, None)`` for tape
        input k when each is the input of its position (``direct``)."""
        if self._owners is None:
            self._owners = [(k, None) for k in range(len(self.tape_inputs))]
        return self._owners

    def parts(self):
        """For a call whose result is a pytree (several results, a list, a dict): an
        entry per leaf, in ``nest.flatten``'s order, sharing this call's forward pass.
        ``part`` is ``(position among the leaves, path to the leaf)``; the backward step
        of one leaf's entry seeds that leaf alone, the others' adjoints zero, so each
        leaf with an adjoint costs one walk of the compiled backward pass."""
        parts = []
        for k, path in enumerate(nest.paths(self.value)):
            part = _CompiledCall.__new__(_CompiledCall)
            for name in _CompiledCall.__slots__:  # its own, not Rule's (see primitive)
                setattr(part, name, getattr(self, name))
            part._parameters = None
            part.part = (k, path)
            parts.append(part)
        return parts

    def _seeded(self, g):
        """The adjoint of the whole result from ``g``, the adjoint of this entry's."""
        if self.part is None:
            return g
        path = self.part[1]
        g = _as_number(g, _at(self.value, path))
        if self.unit.several:  # a tuple of results takes a tuple of adjoints
            return tuple(_seeded(v, path[1:], g) if j == path[0] else zeros_like(v)
                         for j, v in enumerate(self.value))
        return _seeded(self.value, path, g)

    @property
    def srcdiff_rule(self):
        """The rule a tape records: the call itself."""
        return self

    @property
    def primitive(self):
        return self

    @property
    def name(self):
        return self.function.__qualname__

    def __call__(self, *flat):
        value = self.value if self.part is None else _at(self.value, self.part[1])
        return np.asarray(value) if type(value) in (float, int, complex, bool) else value

    def argnum_vjp(self, k, g, ans, *flat):
        """Tape input ``k``'s adjoint for ``g``: the rule's form per input (a walk with
        a batch axis, conjugation, or an outer tape asks for each input in turn)."""
        return self.joint(g, ans, flat, (k,)).get(k)

    def joint(self, g, ans, flat, wanted):
        """{tape input: adjoint} for ``g``, holding those of the tape inputs ``wanted``
        (and maybe others'): one walk of the backward pass serves every input, kept
        for the next input's question."""
        seen, grads = self._last
        if seen is not g:  # the first input asked for this adjoint: every input's at once
            if (type(g) is np.ndarray and self.direct and self.part is None
                    and not batch_axes()):  # the common case
                grads = _backward(self.unit, self._walked(), g, self.active, self.value)
            else:
                grads = self._adjoints(g, flat, self.active)
            self._last = (g, grads)
        if grads.keys() >= set(wanted):  # the common case: every input asked for has one
            return grads
        for k in wanted:
            i = self.owners[k][0]
            if k not in grads and not self.active[i] and _floating(flat[k]):
                # A source watched after the call (the tape asks only for what it tracks):
                # as in TensorFlow, it gets its gradient. Compile with it active, forward again.
                active = tuple(a or n == i for n, a in enumerate(self.active))
                grads = {**grads, **self._adjoints(g, flat, active)}
                self._last = (g, grads)
        return grads

    def once(self, sources, tracked):
        """The adjoints of ``sources`` (None for those it does not reach), seeded with
        ones: the whole walk of a tape used once that holds this call alone (Rule's
        ``once``; ``tracked``, the ids the tape tracks), in the common case (a single
        result, each tape input the input of its position, every one asked for
        active); else None, for the general ``joint``."""
        if self.part is not None or not self.direct:
            return None
        value = self.value
        kind = type(value)
        if kind is float:  # as sd.grad seeds it: scalar code stays on Python floats
            g = 1.0
        elif kind is np.float64:  # the adjoint of a number is a number (see _as_number)
            g = _ONE
        elif kind is np.ndarray:
            g = np.empty(value.shape, value.dtype)  # np.ones, without its Python layers
            g.fill(1)
        else:
            return None
        args = self.tape_inputs
        saved = self.saved
        active = self.active
        if self.alone and saved is not None and _same(sources, args) and (
                False not in active or _leading(active, len(args))):
            # the commonest case: the tape inputs, each active and its own (any inputs
            # after them inactive: ndarrays, numbers), asked for in the order of the
            # call: the adjoints as the backward pass gives them
            self.saved = None
            grads = self.unit.spend([saved], g)
            return [grads] if len(args) == 1 else list(grads)
        positions, others = _POSITIONS.get(active) or _positions(active)
        ids = tracked.intersection(map(id, sources)) if others or len(positions) < len(
            args) else None
        for k in others:  # a source watched after the call: compiled with it active
            if k < len(args) and id(args[k]) in ids:
                return None
        if saved is None:
            return self._walked()  # spent: raises
        if self.alone:
            self.saved = None
            grads = self.unit.spend([saved], g)
        else:
            grads = self.unit.backward(saved, g)
        if len(positions) == 1:
            grads = (grads,)
        if ids is None:  # every tape input active
            found = dict(zip(map(id, args), grads))  # (None where unconnected)
            if len(found) == len(args):  # each input its own: no adjoints to add
                return [*map(found.get, map(id, sources))]
            ids = tracked.intersection(map(id, sources))
        found = {}
        for k, d in zip(positions, grads):
            key = id(args[k])
            if key in ids and d is not None:
                previous = found.get(key)  # f(x, x): one source, two inputs
                found[key] = d if previous is None else previous + d
        return [*map(found.get, map(id, sources))]

    def _adjoints(self, g, flat, active):
        """The adjoints of the tape inputs for ``g``, the adjoint of the result (a batch
        of them in a vectorised jacobian), with ``active`` inputs: by tape input."""
        if batch_axes():
            return self._batch(g, flat, active)
        if active is not self.active:  # compiled with another input active: forward again
            unit, raw = self.function.units.get(self.raw, active, self._lifted())
            saved = unit.run(raw)[1]
            return self._leaves(_backward(unit, saved, self._seeded(_raw(g)), active,
                                          self.value))
        if isinstance(g, _ArrayLike):  # an outer tape records this: differentiate eagerly
            return self._eager_vjp(g, flat)
        return self._leaves(_backward(self.unit, self._walked(spend=False), self._seeded(g),
                                      active, self.value))

    def _walked(self, spend=True):
        """The saved values for a walk of the backward pass: in a list the unit empties
        as it goes (``Unit.spend``, which frees each after its last read) when this walk
        is their last (a tape used once, that no other tape recorded this call on) and
        ``spend`` (one walk of the plain pass, not a jacobian's rows), else as they are."""
        saved = self.saved
        if saved is None:  # spent: a walk asks each entry once (a bug, made loud)
            raise RuntimeError(f"the tape of {self.function.__qualname__} was walked once")
        if spend and self.alone and STATE.taking:
            self.saved = None
            return [saved]
        return saved

    def _lifted(self):
        return tuple(e for e, _ in self.captures)

    def _batch(self, g, flat, active):
        """:meth:`_adjoints` for a batch ``g`` of adjoints (one leading axis of rows):
        each a stack of rows.  One walk of the batched backward pass of the unit
        compiled ``batched`` (its forward pass run again, for a tape of its own) where
        it has one; else row by row, which ``cache_info().row_by_row`` reports."""
        why = "an outer tape records the jacobian: each row is differentiated eagerly"
        units = self.function.units
        if self.part is not None:
            why = "it returns several results (a pytree)"
        elif not isinstance(g, _ArrayLike) or active is not self.active:
            unit, raw = units.get(self.raw, active, self._lifted(), batched=True)
            why = unit.not_batched
            if unit.backward_rows is not None:
                units.row_by_row = None
                saved = unit.run(raw)[1]
                return self._leaves(_backward(unit, saved, _raw(g), active, rows=True))
        units.row_by_row = why
        with batched(0):
            return _stack_rows([self._adjoints(row, flat, active) for row in g])

    def _leaves(self, by_input):
        """Adjoints by input position -> by tape input (a pytree's, leaf by leaf)."""
        if self.direct:
            return by_input
        out = {}
        dense_of = {}
        for k, (i, leaf) in enumerate(self.owners):
            if i not in by_input:
                continue
            if leaf is None:
                out[k] = by_input[i]
                continue
            if i not in dense_of:
                dense_of[i] = nest.flatten(dense(by_input[i], self.raw[i], _adjoint_or_none))
            out[k] = dense_of[i][leaf]
        return out

    def _eager_vjp(self, g, flat):
        """The adjoints of the tape inputs, by a tape that records them (higher orders)."""
        count = self.count
        watched = [k for k, (i, _) in enumerate(self.owners) if self.active[i]]
        # a copy per argument: f(x, x) has two sources, each with its own adjoint
        copies = {k: identity(flat[k]) for k in watched if self.owners[k][0] < count}
        args = [list(nest.flatten(v)) if isinstance(v, CONTAINERS) else v
                for v in self.inputs[:count]]
        for k, copy in copies.items():
            i, j = self.owners[k]
            if j is None:
                args[i] = copy
            else:
                args[i][j] = copy
        args = [nest.pack_sequence_as(v, a) if isinstance(v, CONTAINERS) else a
                for v, a in zip(self.inputs, args)]
        sources = [copies[k] if k in copies else self._captured(k) for k in watched]
        with GradientTape() as tape:
            tape.watch(sources)
            positional, keywords = by_keyword(self.function.python_function, args)
            y = exactly(self.function.python_function, *positional, **keywords)
        if self.part is not None:
            y = nest.flatten(y)[self.part[0]]
        grads = tape.gradient(y, sources, output_gradients=g)
        # a captured Variable read under two expressions (W, helper/W) is two inputs of
        # the compiled code, but one source here: its gradient counts once
        seen = set()
        for n, (k, source) in enumerate(zip(watched, sources)):
            if k not in copies and id(source) in seen:
                grads[n] = None
            seen.add(id(source))
        return dict(zip(watched, grads))

    def _captured(self, k):
        """The Tensor or Variable tape input ``k`` stands for, when it is captured."""
        i, j = self.owners[k]
        value = self.captures[i - self.count][1]
        return value if j is None else nest.flatten(value)[j]


def _same(sources, args):
    """Whether ``sources`` are ``args``, the same objects in the same order, each
    once (``f(x, x)`` has one source for two inputs)."""
    count = len(args)
    if len(sources) != count:
        return False
    if count == 1:
        return sources[0] is args[0]
    if count == 2:  # the commonest call: no set to make
        a, b = args
        return a is not b and sources[0] is a and sources[1] is b
    return all(map(operator.is_, sources, args)) and len(set(map(id, args))) == count


def _leading(active, count):
    """Whether the first ``count`` inputs are the active ones."""
    return False not in active[:count] and True not in active[count:]


def _stack_rows(rows):
    """{tape input: its adjoint} for each row -> {tape input: the stack of them} (zeros
    for a row where it has none)."""
    out = {}
    for k in {k for row in rows for k, d in row.items() if d is not None}:
        some = next(row[k] for row in rows if row.get(k) is not None)
        out[k] = np.stack([row[k] if row.get(k) is not None else np.zeros_like(some)
                           for row in rows])
    return out


class Units:
    """The units one caller (an ``@sd.function``, a function ``sd.grad`` made) has used,
    by the types of its arguments (which decide their kinds), which are active, what it
    lifts and whether its backward pass is batched (jacobians): a cached call costs a
    dictionary lookup and a check that nothing the code was built on changed.
    ``hits``, ``misses``, ``last_miss`` and ``row_by_row`` are what
    :meth:`cache_info` reports.

    With ``numbers=True`` (the tape bridge, whose Tensors hold numbers as 0-d arrays)
    a 0-d float64 array is passed as a Python float of its value to a unit of kind
    ``"float64"`` for it, where that unit is specialised (compiler/numbers.py), else
    the array is.  Such a body has only ufuncs, ``math`` and arithmetic, no writes or
    methods, where the array acts as the np.float64 every ufunc on it returns; and
    the float is a changed name there from the start, turned back to an np.float64
    wherever a Python float could differ, the general unit running on np.float64s
    if the specialised one raises (division by zero, overflow): NumPy's results, the
    array's.  A 0-d array of another floating dtype (float32) is passed as the NumPy
    number it holds to a unit of kind True (a number) for it, where that unit's body is
    such a body (``numbers_alike``): its code for numbers undoes no broadcasting, and
    NumPy computes the same on the number as on the array.  Nothing is converted for a
    batched backward pass (its adjoints are arrays of rows)."""

    def __init__(self, fn, positions=None, numbers=False, batched=False):
        self.fn = fn
        self.positions = positions  # or the mask is given at each call
        self.numbers = numbers
        self.batched = batched      # the default of get's
        self.known = {}
        self.traits = {}  # argument signature -> (a container among them?, a function?)
        self.generation = CACHE.generation
        self.hits = self.misses = 0
        self.last_miss = None
        self.row_by_row = None  # why the last jacobian ran row by row (None: batched)

    def get(self, args, active=None, lifted=(), batched=None, unwrap=False):
        """``(unit, args)``: the unit for ``args`` and what to pass it, a list of its
        own (``Unit.run`` changes it: ``args`` stays as given, for a later run);
        ``unwrap``: a Tensor among ``args`` (or in a pytree) as its value
        (``nest.unwrapped``)."""
        if self.generation != CACHE.generation:  # sd.clear_cache() forgets these too
            self.known.clear()
            self.generation = CACHE.generation
        batched = self.batched if batched is None else batched
        # the rank of each array (the dtype of a 0-d one, which a float64 number may be
        # passed as: see numbers), the type of anything else: one pass for all
        ndarray = np.ndarray
        # (an array of LEAN_BYTES or more as its rank and dtype: it selects the
        # memory-lean unit, compiler/in_place.py; a small one costs one size test)
        signature = tuple([(a.ndim or a.dtype if a.nbytes < LEAN_BYTES else (a.ndim, a.dtype))
                           if type(a) is ndarray else type(a) for a in args])
        traits = self.traits.get(signature)
        if traits is None:
            types = [t if isinstance(t, type) else np.ndarray for t in signature]
            traits = self.traits[signature] = (
                any(issubclass(t, CONTAINERS) for t in types),
                not all(t in NOT_FUNCTIONS for t in types),
                not all(t in _BARE for t in types))
        nested, maybe_functions, wrapped = traits
        if unwrap and wrapped:  # asked once per signature, not once per argument
            return self.get([a if type(a) in _BARE else unwrapped(a) for a in args],
                            active, lifted, batched)
        key = (signature, active, lifted, batched)
        if nested:  # a pytree's depth decides too
            key += tuple(map(kind, args))
        functions = functions_of(args) if maybe_functions else ()
        if functions:  # and which function a parameter is passed
            key += tuple([(k, id(f)) for k, f in functions])
        found = self.known.get(key)
        if found is None or not found[0].is_current():
            found = self.known[key] = self._build(args, active, lifted, batched, functions)
        else:
            self.hits += 1
        unit, numbers = found
        args = list(args)
        if numbers:
            for i, number in numbers:
                args[i] = number(args[i])
        return unit, args

    def _build(self, args, active, lifted, batched, functions):
        if active is None:
            active = tuple(i in self.positions for i in range(len(args)))
        kinds = [kind(v) for v in args]
        ranks = ranks_of(args)
        lean = None if batched else lean_dtypes(args, LEAN_BYTES)  # as ``get`` tells
        numbers = self.numbers and not batched and {
            i: float if a.dtype == np.float64 else _NUMBER for i, a in enumerate(args)
            if type(a) is np.ndarray and a.ndim == 0 and a.dtype.kind == "f"}
        if numbers:  # a float64 as a float (kind "float64"), another as a NumPy number
            unit = self._lookup([("float64" if numbers[i] is float else True)
                                 if i in numbers else k for i, k in enumerate(kinds)],
                                active, lifted, [None if i in numbers else r
                                                 for i, r in enumerate(ranks)],
                                functions, batched, lean)
            converted = set(numbers.values())
            if (unit.specialised or float not in converted) and (
                    unit.numbers_alike or _NUMBER not in converted):
                return unit, tuple(numbers.items())
        return self._lookup(kinds, active, lifted, ranks, functions, batched, lean), None

    def _lookup(self, kinds, active, lifted, ranks, functions, batched, lean=None):
        unit, why = CACHE.lookup(self.fn, active, tuple(kinds), lifted, tuple(ranks),
                                 functions, batched=batched, lean=lean)
        if why is None:
            self.hits += 1
        else:
            self.misses += 1
            self.last_miss = why
        return unit

    def cache_info(self):
        """These calls' hits and misses, how many compiled units of the function the
        cache holds, why it last missed and why its last jacobian ran row by row."""
        return CacheInfo(self.hits, self.misses, CACHE.size(self.fn), self.last_miss,
                         self.row_by_row)


def _at(value, path):
    """The leaf of the pytree ``value`` at ``path`` (see ``nest.paths``)."""
    for key in path:
        value = value[key]
    return value


def _seeded(like, path, g):
    """The adjoint of ``like`` that is ``g`` at the leaf ``path``, zero elsewhere (Items
    hold the adjoints of the items they have, the others are zero)."""
    if not path:
        return g
    return Items(like, {path[0]: _seeded(like[path[0]], path[1:], g)})


def _as_number(g, y):
    """The tape's seed ``g`` (a 0-d array) as the number the compiled code made ``y``:
    the adjoint of a number is a number there."""
    if type(g) is np.ndarray and not g.ndim and type(y) in _FLOAT64S and g.dtype == _FLOAT64:
        return g[()]
    return g


_NUMBER = operator.itemgetter(())  # a 0-d array's NumPy number
_FLOAT64S = (np.float64, float)
_FLOAT64 = np.dtype(np.float64)
_ONE = np.float64(1.0)


def _backward(unit, saved, g, active, y=None, rows=False):
    """The compiled adjoints of the active inputs, by input position; ``rows``: of
    each of a batch ``g`` of adjoints, by one batched walk.  ``saved``: the tape, or a
    list holding it when this walk is its last (see ``Unit.spend``)."""
    if rows:
        grads = unit.backward_batch(saved, g)
    else:
        g = _as_number(g, y)
        # a list holds a tape walked once: the unit empties it (Unit.spend)
        grads = unit.spend(saved, g) if type(saved) is list else unit.backward(saved, g)
    positions = _positions(active)[0]
    if len(positions) == 1:
        return {positions[0]: grads}
    return dict(zip(positions, grads))


def _positions(active):
    """The positions of the active inputs of an activity mask, and of the others (few
    masks recur)."""
    positions = _POSITIONS.get(active)
    if positions is None:
        positions = _POSITIONS[active] = (tuple([k for k, a in enumerate(active) if a]),
                                           tuple([k for k, a in enumerate(active) if not a]))
    return positions


_POSITIONS = {}


def function(fn=None, *, fallback=None, input_signature=None, autograph=True,
             jit_compile=None, reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None):
    """Compile ``fn`` to forward and adjoint code; usable as ``@function`` or
    ``@function(fallback="eager")``.

    Called outside a tape, the compiled forward pass computes ``fn``'s values; under a
    recording tape, the call is one tape entry whose backward step is the compiled
    adjoint (trainable Variables ``fn`` reads from globals, closures or attributes get
    gradients too).  ``fallback="eager"`` runs a function the compiler refuses on the
    tape instead, with one warning.  ``f.cache_info()`` reports its compiled units.
    ``input_signature``, a list of ``sd.TensorSpec``, checks and converts the arguments
    as ``tf.function`` does; TensorFlow's other options (``jit_compile``,
    ``reduce_retracing``, ``autograph``, ``experimental_*``) say how TensorFlow builds
    its graph, never what it computes, and are accepted for its code's sake.
    Example::

        >>> import numpy as np, srcdiff as sd
        >>> @sd.function
        ... def f(x):
        ...     for _ in range(2):
        ...         x = x * x
        ...     return np.sum(x)
        >>> x = sd.Variable([1.0, 2.0])
        >>> with sd.GradientTape() as tape:
        ...     y = f(x)
        >>> print(tape.gradient(y, x).numpy())          # 4 x**3
        [ 4. 32.]
    """
    if fn is None:
        return functools.partial(function, fallback=fallback, input_signature=input_signature)
    check_function(fn, "sd.function")
    return Function(fn, fallback, input_signature)


def clear_cache():
    """Forget every compiled function: the next calls compile again.

    Example: ``sd.clear_cache()`` before timing a fresh compile."""
    CACHE.clear()


_PLAIN = (np.ndarray, float, int, Tensor)  # what no tape reads; a Tensor is no Variable
_BARE = (np.ndarray, float, int)  # what has nothing to unwrap (Units.get)
_ARRAYS = (np.ndarray, np.float64, np.float32, float)  # the results compiled code makes


def _activity(inputs, tapes):
    """``(active, plain, lead)``: whether a tape watches each of ``inputs`` (see
    ``_watched``), what compiled code is given for each (the array behind a Tensor),
    and how many Tensors come first when every other input is an ndarray or a number
    after them (else None: see ``_CompiledCall``).  Reading a Variable under a tape
    watches it (if trainable) and records the read, so each Variable in them (a
    pytree's leaves too) is read first, in ``inputs`` itself.  Where an input is
    watched, the backward step runs later, so the arrays must stay as read: each
    other array (a pytree's too) is given as a read-only copy, and the tape keeps the
    copy (in ``inputs``) too; a Tensor's array never changes."""
    active = []
    plain = []
    count = len(inputs)
    if len(tapes) == 1:  # the common case: the leading Tensors, against one tape's set
        tracked = tapes[0]._tape.tracked  # (of floating values only)
        for v in inputs:
            if type(v) is not Tensor:
                break
            plain.append(v._value)
            active.append(id(v) in tracked)
        if len(plain) == count:
            return tuple(active), plain, count
    lead = None  # the position of the first input not a Tensor
    simple = True  # each input a Tensor, an ndarray or a number, the Tensors first
    for k in range(len(plain), count):
        v = inputs[k]
        kind = type(v)
        if kind is Tensor:
            plain.append(v._value)
            active.append(_watched(v, tapes))
            simple = simple and lead is None
            continue
        if lead is None:
            lead = k
        if kind not in _PLAIN:
            simple = False
            inputs[k] = v = _read(v)
            active.append(_watched(v, tapes))
            plain.append(unwrapped(v))
        else:  # an ndarray or a number: no tape watches it
            active.append(False)
            plain.append(v)
    if lead is None:
        lead = count
    elif True in active:
        for k in range(lead, count):
            if type(inputs[k]) is not Tensor:
                plain[k] = nest.frozen(plain[k])
                if type(inputs[k]) is np.ndarray:
                    inputs[k] = plain[k]
    return tuple(active), plain, (lead if simple else None)


def _watched(value, tapes):
    """Whether a tape watches ``value``, or a floating Tensor in a pytree of it: an
    input the call differentiates."""
    return any(any(t._tracks_any((s,)) for t in tapes) and _differentiable(s)
               for s in _sources(value))


def _refuse_tensors(name):
    """Compiled code computes on arrays: a Tensor in its result was made by a srcdiff
    function it called that has no NumPy form, and recorded on no tape, so its
    gradient would be lost."""
    raise CompileError(
        f"the compiled code of {name} computed a Tensor: it calls a srcdiff function "
        "that makes Tensors (sd.constant, sd.convert_to_tensor, ...) where compiled code "
        "computes on arrays, and the gradient through it would be lost",
        hint="Use the NumPy function (np.asarray, np.ones, ...) inside the function, or "
             "make the Tensor outside it and pass it as an argument.")


def _differentiable(value):
    return isinstance(value, _ArrayLike) and value.dtype.kind in "fc"


def _floating(value):
    """A real or complex floating array, raw or a Tensor (the tape passes either)."""
    return isinstance(value, (np.ndarray, np.generic, _ArrayLike)) and value.dtype.kind in "fc"


def is_scalar(value):
    """Whether ``value`` is a Python or NumPy number (not a bool): compiled code keeps
    numbers as numbers."""
    kind = type(value)
    if kind is float or kind is int:
        return True
    if kind is np.ndarray:  # before the ABC check below, which costs far more
        return False
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def kind(value):
    """What a compiled unit is specialised on: ``"float"`` for a Python float (code
    on it may use ``math``, see compiler/numbers.py), True for another number, False
    for an array, and ``("container", least, greatest)`` for a list, tuple or dict (a
    pytree): the depths of its shallowest and deepest leaves."""
    if type(value) is float:
        return "float"
    if isinstance(value, CONTAINERS):
        return ("container",) + _depths(value)
    return is_scalar(value)


def _depths(value):
    if not isinstance(value, CONTAINERS):
        return 0, 0
    inner = [_depths(v) for v in nest.items(value)] or [(0, 0)]
    return 1 + min(lo for lo, _ in inner), 1 + max(hi for _, hi in inner)


# --- pytree arguments under a tape ---
def _read(value):
    """``value`` with each Variable in it read (a snapshot the tape records)."""
    if isinstance(value, Variable):
        return value.read_value()
    if isinstance(value, CONTAINERS):
        return nest.rebuilt(value, [_read(v) for v in nest.items(value)])
    return value


def _adjoint_or_none(g, value):
    return g  # a leaf's adjoint as the backward pass gave it: None when unconnected


def _sources(value):
    """What stands for ``value`` on the tape: itself, or a pytree's Tensors."""
    if isinstance(value, CONTAINERS):
        return [v for v in nest.flatten(value) if isinstance(v, _ArrayLike)]
    return [value]


def _as_output(y, inputs):
    """The result of a call no tape records: Tensors (each leaf of a pytree) when an
    input was one, as TensorFlow returns them; else what the code computed."""
    if not any(isinstance(v, _ArrayLike) for v in inputs):
        return y
    if isinstance(y, CONTAINERS):
        return nest.pack_sequence_as(y, [_as_tensor(v) for v in nest.flatten(y)])
    return Tensor(np.asarray(y))


def _as_tensor(leaf):
    """A leaf of a result as a Tensor, if it is an array or a number."""
    if isinstance(leaf, (np.ndarray, np.generic, float, int, complex)):
        return Tensor(np.asarray(leaf))
    return leaf


def by_position(fn, args, kwargs):
    """``args`` and ``kwargs`` of a call of ``fn`` as positional arguments, as Python
    binds them (a TypeError for what it would refuse): the keywords' parameters and
    those before them filled, the defaults of the ones left out, and keyword-only
    parameters after the positional ones, as compiled code takes them."""
    signature = inspect.signature(inspect.unwrap(getattr(fn, "python_function", fn)))
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    out = []
    for p in signature.parameters.values():
        value = bound.arguments[p.name]
        if p.kind is p.VAR_POSITIONAL:  # *rest: its items, as a positional call passes them
            out.extend(value)
        else:
            out.append(value)
    return out


def by_keyword(fn, args):
    """``(positional, keywords)`` of a call of ``fn`` from ``args`` as compiled code
    takes them (see ``by_position``): the keyword-only parameters' values by name."""
    code = fn.__code__
    names = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    count = len(args) - len(names)
    return list(args[:count]), dict(zip(names, args[count:]))


def with_defaults(fn, args):
    """``args`` completed with the defaults of the parameters they leave out, as a
    call of ``fn`` would bind them: compiled code takes every parameter positionally
    (``def f(x, c=2.0)`` called ``f(x)`` runs ``f_forward(x, 2.0)``).  Unchanged when
    nothing is left out, or when too much is (the call raises as Python would)."""
    code = getattr(fn, "__code__", None)
    if code is not None and len(args) == code.co_argcount and not code.co_kwonlyargcount:
        return args  # every call of a function of positional parameters, all given
    fn = getattr(fn, "python_function", fn)
    code = getattr(fn, "__code__", None)
    defaults = getattr(fn, "__defaults__", None) or ()
    missing = getattr(code, "co_argcount", 0) - len(args)
    if missing > len(defaults) or missing < 0 or missing == 0 and not getattr(
            code, "co_kwonlyargcount", 0):
        return args
    keywords = getattr(fn, "__kwdefaults__", None) or {}
    names = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    if any(n not in keywords for n in names):
        return args  # a keyword-only parameter without a default: the call raises
    # keyword-only parameters follow the positional ones (parse._check_signature)
    return (list(args) + list(defaults[len(defaults) - missing:] if missing else [])
            + [keywords[n] for n in names])


def _free_value(fn, name):
    if not inspect.isfunction(fn):  # a name rebound to something else since
        return None
    if fn.__closure__ and name in fn.__code__.co_freevars:
        cell = fn.__closure__[fn.__code__.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:
            return None
    return fn.__globals__.get(name)


def _builtin(fn, name):
    """Whether the free ``name`` of ``fn`` is a builtin (``range``, ``len``): no
    global or closure cell of that name."""
    return (name in _BUILTINS and name not in fn.__globals__
            and name not in fn.__code__.co_freevars)


_BUILTINS = frozenset(vars(builtins))


def _free_reads(fn, outer=frozenset()):
    """Expressions that may denote Tensors or Variables the function reads: free names
    and attribute chains on parameters or free names (``W``, ``self.kernel``,
    ``model.layer.bias``), and, as ``helper/W``, what the functions it calls by a free
    name read so.  ``(expression, parameter index or None, steps)``: the steps from
    the parameter, or from the function itself (``/name`` reads its free ``name``)."""
    try:
        parsed = parse_function(fn)
    except CompileError:
        return []
    params = parsed.params
    assigned = {n.id for n in gast.walk(parsed.node) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store)}
    called = {n.func.id for n in gast.walk(parsed.node)
              if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)}
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
            value = parsed.namespace.get(base.id)
            if inspect.ismodule(value) or _builtin(fn, base.id):
                continue  # np.sin, math.pi, range: never a Variable
            expr = ".".join([base.id] + chain)
            reads.setdefault(expr, (expr, None, ("/" + base.id,) + tuple(chain)))
            callee = getattr(value, "python_function", value)
            if not chain and base.id in called and inspect.isfunction(callee) and (
                    callee is not fn and callee not in outer):  # recursion ends here
                for inner, at, steps in _free_reads(callee, outer | {fn}):
                    if at is None:
                        step = "/" + base.id
                        reads.setdefault(f"{base.id}/{inner}",
                                         (f"{base.id}/{inner}", None, (step,) + steps))
    return list(reads.values())


# --- derivatives of derivatives ---

Derivative = collections.namedtuple("Derivative", "kind fn positions single has_aux",
                                    defaults=(False,))
Derivative.__doc__ = """What a function ``sd.grad``, ``sd.value_and_grad`` or ``sd.jacobian``
(``kind``) made computes: the derivative of ``fn`` for the arguments ``positions``
(``has_aux``: of the first of the pair ``fn`` returns, the second passed through)."""


def split_aux(fn, out):
    """``(value, aux)``: what ``fn``, differentiated with ``has_aux=True``, returned;
    a TypeError unless it is a pair (JAX's convention)."""
    if not (isinstance(out, tuple) and len(out) == 2):
        what = (f"a tuple of {len(out)}" if isinstance(out, tuple)
                else f"a {type(out).__qualname__}")
        raise TypeError(f"with has_aux=True, {fn.__qualname__} must return a pair "
                        f"(value, aux), but it returned {what}; return 'value, aux', or "
                        "drop has_aux=True")
    return out

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
    if not tapes or not any(isinstance(a, _ArrayLike) for a in nest.flatten(list(args))):
        return None
    args = [_read(a) for a in args]  # a pytree's leaves are sources too
    leaves = nest.flatten(args)
    return args if any(t._tracks_any(leaves) for t in tapes) else None


def on_tensors(derivative, args):
    """What ``derivative`` gives at ``args``, as Tensors the active tapes record."""
    return _differentiate(derivative, _tensor_form(derivative.fn), args)


def _tensor_form(fn):
    """``fn`` as a function of Tensors whose operations the active tapes record."""
    derivative = DERIVATIVES.get(fn)
    if derivative is None:  # NumPy functions and operators on Tensors are recorded,
        return functools.partial(exactly, fn)  # math's too, there
    inner = _tensor_form(derivative.fn)
    return lambda *args: _differentiate(derivative, inner, args)


def _differentiate(derivative, form, args):
    """What ``derivative`` gives at ``args``, as Tensors, by a tape around ``form``."""
    kind, fn, positions, single, has_aux = derivative
    # a copy of each other array: the function runs as written, and may write into it
    args = [_own_arrays(a) for a in args]
    for i in set(positions):  # a copy each: f(x, x) has two sources
        args[i] = _source_copy(args[i])
    sources = [args[i] for i in positions]
    with GradientTape(persistent=kind == "jacobian") as tape:
        tape.watch(sources)
        y = form(*args)
        if has_aux:
            y, aux = split_aux(fn, y)
    if isinstance(y, (np.ndarray, np.generic, float, int)):
        y = convert_to_tensor(np.asarray(y))  # computed from no source: its gradient is 0
    zero = UnconnectedGradients.ZERO
    if kind == "jacobian":
        if isinstance(y, tuple):
            raise TypeError(one_array(fn))
        grads = [tape.jacobian(y, s, unconnected_gradients=zero) for s in sources]
    else:
        if isinstance(y, tuple) or np.size(_raw(y)) != 1:
            raise ValueError(f"sd.grad of {fn.__qualname__} needs a scalar output, but it "
                             f"returned {_describe(y)}; use sd.jacobian for the Jacobian "
                             "(of a gradient: the Hessian)")
        grads = tape.gradient(y, sources, unconnected_gradients=zero)
    grads = grads[0] if single else tuple(grads)
    if has_aux:
        return ((y, aux), grads) if kind == "value_and_grad" else (grads, aux)
    return (y, grads) if kind == "value_and_grad" else grads


def one_array(fn):
    """Why ``sd.jacobian`` of ``fn``, which returned a tuple, is refused."""
    return (f"sd.jacobian needs a function returning one array, but {fn.__qualname__} "
            "returned a tuple; take the jacobian of each result in a function of its own "
            "(for a tuple of gradients, of one sd.grad per argument)")


def _own_arrays(value):
    """``value`` with a copy of each ndarray in it (of each leaf of a pytree)."""
    if type(value) is np.ndarray:
        return value.copy()
    if isinstance(value, CONTAINERS):
        return nest.rebuilt(value, [_own_arrays(v) for v in nest.items(value)])
    return value


def _source_copy(value):
    """A Tensor copy of ``value`` (of each leaf of a pytree): a source of its own."""
    if isinstance(value, CONTAINERS):
        return nest.rebuilt(value, [_source_copy(v) for v in nest.items(value)])
    return identity(convert_to_tensor(value if isinstance(value, _ArrayLike)
                                      else np.asarray(value)))


def _describe(y):
    return "a tuple" if isinstance(y, tuple) else f"shape {np.shape(_raw(y))}"


def _arrays(result, args, derivative):
    """``result`` with NumPy values for Tensors, each derivative in its argument's dtype."""
    def like(g, arg):
        if isinstance(arg, CONTAINERS):  # a pytree: its gradient has its structure
            return nest.pack_sequence_as(arg, [like(*pair) for pair in zip(
                nest.flatten(g), nest.flatten(arg))])
        g = np.asarray(0.0 if g is None else _raw(g))  # None: an int leaf's
        if type(arg) is float and g.ndim == 0:
            return float(g)
        dtype = np.asarray(_raw(arg)).dtype
        return g.astype(dtype, copy=False) if dtype.kind in "fc" else g

    if derivative.has_aux:  # aux passes through, as arrays
        plain = derivative._replace(has_aux=False)
        if derivative.kind == "value_and_grad":
            (value, aux), grads = result
            value, grads = _arrays((value, grads), args, plain)
            return (value, nest.unwrapped(aux)), grads
        grads, aux = result
        return _arrays(grads, args, plain), nest.unwrapped(aux)
    if derivative.kind == "value_and_grad":
        value, grads = result
        return _raw(value), _arrays(grads, args, derivative._replace(kind="grad"))
    if derivative.single:
        return like(result, args[derivative.positions[0]])
    return tuple(like(g, args[i]) for g, i in zip(result, derivative.positions))

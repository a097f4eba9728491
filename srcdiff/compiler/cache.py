"""The compile cache: compiled units by function, built on first use.

Invariant: a unit in the cache was compiled from its function's current code and
the objects its free names meant then (``Unit.is_current``); functions, and the
functions passed to them, are held weakly, so a dropped function frees its units
and their generated sources; one
compile runs at a time (``SYNTAX_LOCK``), and a thread that waited looks again
before compiling, so concurrent first calls compile once.
"""
import contextlib
import inspect
import gc
import linecache
import threading
import types
import weakref

import numpy as np

from .errors import CompileError
from .parse import SYNTAX_LOCK, require_function
from .recursion import Recursive
from .driver import compile_unit
from .codegen import release


class Cache:
    """Compiled units, keyed weakly by function, then by (active mask, scalar mask, lifted,
    ranks, function arguments, batched, lean): see :func:`ranks_of`, :func:`lean_dtypes`.  A ``batched`` unit holds
    a batched backward pass besides the plain one (``Unit.backward_rows``), and calls
    batched units: jacobians ask for it, gradients never pay for it.

    Nothing a unit holds refers to its function (see ``Unit.fn`` and
    ``codegen.compile_source``), so a function that is dropped, or redefined by
    re-running its cell, is freed with its units; a unit's ``linecache`` entry is
    freed with it, and by ``clear()``.  The functions a unit was compiled to call as
    arguments are held weakly too: one that is freed drops that unit (``_forget``).

    Thread-safe: the tables are read and written under a short lock, so hits never
    wait for a compile.  Compiles run one at a time under ``SYNTAX_LOCK`` (see
    parse.py); a thread that waited for it looks again before compiling, so
    concurrent first calls of one function compile it once.  Recursion is detected
    per thread (the units *this* thread is compiling, see recursion.py): a compile in
    another thread is never mistaken for recursion.  ``clear()`` swaps in empty tables:
    calls in flight finish with the units they hold.
    """

    def __init__(self):
        self.units = weakref.WeakKeyDictionary()
        self.hits = 0
        self.misses = 0
        self.last_miss = None
        self.generation = 0
        self._lock = threading.RLock()
        self._building = threading.local()  # .units: what this thread is compiling

    def clear(self):
        with self._lock:
            self.generation += 1  # callers that kept a unit must ask again
            dropped, self.units = list(self.units.values()), weakref.WeakKeyDictionary()
            for unit in (u for units in dropped for u in units.values()):
                linecache.cache.pop(unit.filename, None)
            self.hits = self.misses = 0
            self.last_miss = None

    def get(self, fn, active, scalars=None, lifted=(), ranks=None, functions=(), batched=False,
            lean=None):
        """The unit of ``fn`` with ``active`` parameters (a tuple of bools).

        ``lifted`` names expressions the function reads (free names, attributes
        of parameters such as ``self.kernel``) that become extra parameters,
        after the real ones: that is how Variables reach compiled code.
        ``ranks`` are the ranks of array arguments (see :func:`ranks_of`);
        ``functions`` holds (position, function) for each parameter that is passed a
        function (an activation, a right-hand side): the unit calls that function;
        ``batched`` asks for a unit with a batched backward pass too; ``lean``, the
        dtype of each large array argument (see :func:`lean_dtypes`), for the
        memory-lean unit (compiler/in_place.py)."""
        return self.lookup(fn, active, scalars, lifted, ranks, functions, batched, lean)[0]

    def lookup(self, fn, active, scalars=None, lifted=(), ranks=None, functions=(),
               batched=False, lean=None):
        """``(unit, why)``: ``why`` is None for a hit, else why it compiled.

        A wrapper is compiled as written (a decorator may change the result), never
        skipped for the function in its ``__wrapped__``; only ``@sd.function``,
        which computes what it wraps, stands for its ``python_function``."""
        fn = getattr(fn, "python_function", fn)
        require_function(fn)  # before it is used as a weak key
        scalars = tuple(scalars) if scalars is not None else (False,) * len(active)
        ranks = tuple(ranks) if ranks is not None else (None,) * len(active)
        functions = tuple(functions)
        key = (tuple(active), scalars, tuple(lifted), ranks, _weakly(functions), bool(batched),
               None if batched else lean)
        unit, reason = self._find(fn, key)
        if unit is not None:
            return unit, None
        with SYNTAX_LOCK, _collector_paused():
            unit, _ = self._find(fn, key)  # another thread may have compiled it meanwhile
            if unit is not None:
                return unit, None
            recursive = self._building_now().get((fn, key))
            if recursive is not None:  # a call of a unit this thread is compiling
                recursive.called = True
                return recursive, "a recursive call"
            built = self.build(fn, key, functions)
            why = f"{fn.__qualname__}: {reason}"
            with self._lock:
                self.misses += 1
                self.units.setdefault(fn, {})[key] = built
                weakref.finalize(built, release, built.filename)
                for held in key[4]:
                    if type(held[1]) is weakref.ref:
                        weakref.finalize(held[1](), self._forget, weakref.ref(fn), key)
                # set after building: compiling the callees records their misses first
                self.last_miss = why
        return built, why

    def _find(self, fn, key):
        """``(unit, None)`` for a current unit (a hit), else ``(None, why it is missing)``."""
        with self._lock:
            per_fn = self.units.get(fn)
            unit = per_fn.get(key) if per_fn is not None else None
            if unit is not None and unit.is_current():
                self.hits += 1
                return unit, None
        return None, ("first call" if per_fn is None else "first call with these active "
                      "inputs and kinds of arguments (numbers, ranks)" if unit is None
                      else "a name the function uses was rebound")

    def size(self, fn):
        """How many units of ``fn`` the cache holds."""
        with self._lock:
            return len(self.units.get(fn, ()))

    def _forget(self, fn_ref, key):
        """Drop ``fn``'s unit for ``key``: a function it was compiled to call as an
        argument is freed (a lambda passed in a loop).  Callers that kept units by the
        id of that function must ask again: the id may be another function's now."""
        fn = fn_ref()
        with self._lock:
            per_fn = self.units.get(fn) if fn is not None else None
            if per_fn is not None and key in per_fn:
                # a new table, never a change to one that clear() may be walking
                self.units[fn] = {k: u for k, u in per_fn.items() if k is not key}
            self.generation += 1

    def build(self, fn, key, functions=()):
        building = self._building_now()
        building[fn, key] = recursive = Recursive(fn, key[0])
        try:
            unit = compile_unit(_as_defined(fn), *key[:2], self, key[2], key[3], functions,
                                key[5], key[6])
        finally:
            del building[fn, key]
        recursive.resolve(unit)
        unit._fn = weakref.ref(fn)
        return unit

    def _building_now(self):
        """(fn, key) -> the Recursive standing for each unit this thread is compiling."""
        return self._building.__dict__.setdefault("units", {})


def _weakly(functions):
    """``functions`` (position, function) as a cache key holds them: weakly, so that a
    function passed as an argument frees its caller's unit for it (``Cache._forget``);
    NumPy's (a ufunc, a dispatcher), which live as long as NumPy and cannot be referred
    to weakly, themselves."""
    return tuple([(k, _weak(f)) for k, f in functions])


def _weak(fn):
    try:
        return weakref.ref(fn)
    except TypeError:
        return fn


LEAN_BYTES = 1 << 16  # an array argument this large selects the memory-lean unit


def lean_dtypes(values, limit=LEAN_BYTES):
    """The dtype of each array among ``values`` of ``limit`` bytes or more (None for
    anything else), or None if there is none: such a call runs the memory-lean unit,
    whose code computes in place into the arrays it owns (compiler/in_place.py); a
    smaller call runs the plain unit, where a new array costs less than the write."""
    found = tuple([v.dtype if type(v) is np.ndarray and v.nbytes >= limit else None
                   for v in values])
    return found if any(d is not None for d in found) else None


def ranks_of(values):
    """The rank of each value that is an ndarray (None for anything else): a compile is
    keyed on them, so the compiler knows that x[i] of a vector is a number, not a view."""
    return tuple([v.ndim if type(v) is np.ndarray else None for v in values])


def _as_defined(fn):
    """``fn`` under the name its ``def`` gave it.  ``functools.wraps`` names a wrapper
    after the function it calls; generated code named so would shadow the callee's."""
    code = fn.__code__
    if fn.__name__ == code.co_name:
        return fn
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__,
                              fn.__closure__)


@contextlib.contextmanager
def _collector_paused():
    """The cyclic garbage collector off while this thread compiles (under SYNTAX_LOCK,
    one compile at a time): a compile makes a heap of syntax trees that it keeps to
    the end, and the full collections their allocations trigger would walk that heap
    again and again (a quarter of a large function's compile time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


CACHE = Cache()


def functions_of(values):
    """(position, function) for each value that is a function (a def, a lambda, a
    ufunc, an ``@sd.function``): a compile is keyed on them, and calls of that
    parameter are calls of that function."""
    return tuple([(k, v) for k, v in enumerate(values) if type(v) not in NOT_FUNCTIONS and (
        isinstance(v, np.ufunc) or inspect.isfunction(getattr(v, "python_function", v)))])


# the types of most arguments, never a function: no attribute asked of them
NOT_FUNCTIONS = frozenset({np.ndarray, float, int, list, tuple, dict})

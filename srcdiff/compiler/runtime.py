"""Helpers that generated code calls besides the rules' own."""
import copy
import math
import numbers
import operator
from collections.abc import Mapping

import numpy as np

from .. import nest
from .._recording import STATE


class ShapeOf:
    """What an adjoint needs of a value it only measures: shape, size, rank, dtype.

    ``np.shape``, ``np.size`` and ``np.ndim`` read these attributes, so the rule
    helpers accept it in place of the array, and the forward pass can keep it
    instead of keeping the array alive.  Made once per measured value on every
    call, read mostly for its shape: size and rank are derived when asked."""

    __slots__ = ("shape", "dtype")

    def __init__(self, value):
        try:
            self.shape = value.shape
        except AttributeError:  # a Python number
            self.shape, self.dtype = (), type(value)
        else:
            self.dtype = value.dtype

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

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


def as_it_is(container):
    """A list or dict about to change in place (``xs.append(v)``), as it is now: a
    shallow copy.  The change adds or drops items and writes into none, so the items
    are shared; a number, or a container's shape, is its own record."""
    return copy.copy(container) if isinstance(container, (list, dict)) else container


def snapshot(value):
    """A copy of a value that a write is about to change under another name (see
    plan.py): of an array, or of a container or object holding the array written
    (``m.w`` of an object ``m``, ``d["w"]``), deep, since the write changes what it
    holds, not itself; a number as it is, and the placeholder of a name a branch not
    taken left unbound (whether it holds an array is known only when it runs)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if value is UNBOUND or isinstance(value, numbers.Number):
        return value
    return copy.deepcopy(value)


def own_copy(value):
    """A copy of a saved value that the backward pass restores, then writes into; what
    a name holds where a branch not taken left it unbound (None, UNBOUND) as it is."""
    return value if value is None or value is UNBOUND else value.copy()


def old_item(xs, key):
    """What ``xs[key] = v`` is about to replace in a list or dict (or an array, which
    a name that may hold a container may hold too), for the backward pass to put
    back (``put_back``): an item as it is (the write replaces it, never writes into
    it), ``ABSENT`` for a key a dict does not hold yet, a copy of an array's elements
    (written in place)."""
    if isinstance(xs, dict):
        return xs.get(key, ABSENT)
    return xs[key].copy() if isinstance(xs, np.ndarray) else xs[key]


def put_back(xs, key, old):
    """``xs[key] = old``, or ``del xs[key]`` where the key was ``ABSENT`` (old_item)."""
    if old is ABSENT:
        del xs[key]
    else:
        xs[key] = old


ABSENT = type("Absent", (), {"__repr__": lambda self: "ABSENT", "__slots__": ()})()


def unbound(name):
    """Raise what Python raises for a read of local ``name`` before any assignment."""
    raise UnboundLocalError(f"cannot access local variable '{name}' where it is not "
                            "associated with a value")


class FreeValues:
    """A function's free names as it sees them when it runs: its closure cells, then
    its module's globals.  Compiled code reads ``free_values["W"]`` once per call.

    The names in ``kept`` are those the backward pass reads (free_effects.py): where
    it runs later, after the caller may have written into them (under a tape, or for
    a pullback), they are read as read-only copies, as the arguments are."""

    __slots__ = ("cells", "globals", "kept")

    def __init__(self, fn):
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        self.globals = fn.__globals__
        self.kept = frozenset()

    def __getitem__(self, name):
        cell = self.cells.get(name)
        try:
            value = cell.cell_contents if cell is not None else self.globals[name]
        except (KeyError, ValueError):
            raise NameError(f"name {name!r} is not defined") from None
        if name in self.kept and (STATE.tapes or STATE.later):
            return nest.frozen(value)
        return value


_OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
              np.true_divide: operator.truediv, np.negative: operator.neg}


def into(out, ufunc, *args):
    """``ufunc(*args)`` (one of :data:`_OPERATORS`), computed as Python's operator
    computes it, but written into ``out``, one of ``args``, where that is exactly the
    same (:func:`spare` says when).  Only for an ``out`` that nothing else refers to
    (an adjoint the backward pass owns, adjoint_state.py): its old value is lost."""
    if spare(out, *args) is not None:
        return ufunc(*args, out=out)
    return _OPERATORS[ufunc](*args)


def spare(out, *others):
    """``out`` where ``ufunc(..., *others, out=out)`` (``out`` among its operands)
    gives exactly the array ``ufunc`` would make, else None (NumPy makes a new one):
    ``out`` is an ndarray of inexact dtype, and each other operand a Python number
    (NumPy keeps out's dtype for it; a complex one only a complex out's) or an array
    or NumPy number of out's dtype whose shape broadcasts to out's.  The lean unit's
    check (in_place.py) where the compiler cannot prove it, and :func:`into`'s; only
    for an ``out`` that nothing else refers to or reads afterwards: its old value is
    lost."""
    if type(out) is not np.ndarray or out.dtype.kind not in "fc":
        return None
    dtype, shape = out.dtype, out.shape
    for a in others:
        kind = type(a)
        if kind is float or kind is int or kind is bool:
            continue
        if kind is complex:
            if dtype.kind != "c":
                return None
            continue
        if not (kind is np.ndarray or isinstance(a, np.generic)) or a.dtype != dtype:
            return None
        if a.shape != shape and (a.ndim > len(shape) or any(
                n != 1 and n != m for n, m in zip(a.shape[::-1], shape[::-1]))):
            return None
    return out


class Positions:
    """``len(xs)`` of a loop run by position (``for x in xs`` as ``x = xs[i]`` for
    ``i`` in ``range(len(xs))``, normalize.py): exact where indexing by position gives
    the items iteration gives, in order (a list, tuple, array, range or str).  Anything
    else is refused when the loop is reached: a dict iterates over its keys, a set or
    an iterator has no positions.  ``error`` is the CompileError to raise, made where
    the loop is compiled (its file, line and caret)."""

    __slots__ = ("error",)
    __name__ = "loop_length"  # as generated code calls it
    POSITIONAL = (list, tuple, np.ndarray, range, str)

    def __init__(self, error):
        self.error = error

    def __call__(self, xs):
        if isinstance(xs, self.POSITIONAL) and not isinstance(xs, np.generic):
            return len(xs)
        raise _anew(self.error, f"{self.error.message}, not a {type(xs).__name__}")


class Keys:
    """``list(d)``, the keys of a loop over ``d.items()`` (``.values()``, ``.keys()``)
    and of those views anywhere else (normalize.py, anf.py): exact for a mapping,
    whose items are ``d[k]`` for ``k`` in it, in its order.  Anything else is refused
    when it is reached (a list has no ``.items()``; another object's may mean
    anything): ``error``, made where it was compiled, is raised."""

    __slots__ = ("error",)
    __name__ = "keys_of"  # as generated code calls it

    def __init__(self, error):
        self.error = error

    def __call__(self, d):
        if type(d) is dict or isinstance(d, Mapping):
            return list(d)
        raise _anew(self.error, f"{self.error.message}, not a {type(d).__name__}")


class Unshared:
    """Checks, before ``t += v`` runs as ``t = t + v``, that ``t`` holds a value the two
    agree on: an immutable number (or str, tuple), which ``+=`` rebinds in Python too.
    An array (or list, dict) would change in place, under the other names that may
    share it (aliasing.check_updates): ``error``, made where it was compiled, is
    raised."""

    __slots__ = ("error",)
    __name__ = "unshared"  # as generated code calls it
    IMMUTABLE = (numbers.Number, np.generic, str, tuple, frozenset)

    def __init__(self, error):
        self.error = error

    def __call__(self, value):
        if not isinstance(value, self.IMMUTABLE):
            raise _anew(self.error, self.error.message)


class ItemUnshared:
    """Checks, before ``c[k] += v`` runs as ``c[k] = c[k] + v``, that the item ``c[k]``
    shares no memory with another item of ``c``, a container a user function returned
    (aliasing.check_updates could not see what it holds): in Python the update would
    change that item too, so ``error`` is raised if it does."""

    __slots__ = ("error",)
    __name__ = "item_unshared"  # as generated code calls it

    def __init__(self, error):
        self.error = error

    def __call__(self, container, key):
        if isinstance(container, Mapping):
            others = [v for k, v in container.items() if k != key]
        else:
            taken = range(len(container))[key]
            taken = set(taken) if isinstance(taken, range) else {taken}
            others = [v for k, v in enumerate(container) if k not in taken]
        mine = _mutable_parts(container[key])
        theirs = [p for v in others for p in _mutable_parts(v)]
        if any(a is b or isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
               and np.may_share_memory(a, b) for a in mine for b in theirs):
            raise _anew(self.error, self.error.message)


def _mutable_parts(value):
    """``value`` and what it holds, at any depth, but immutable numbers and strings."""
    found, todo = [], [value]
    while todo:
        v = todo.pop()
        if isinstance(v, Mapping):
            todo.extend(v.values())
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
        if not isinstance(v, Unshared.IMMUTABLE):
            found.append(v)
    return found


def _anew(error, message):
    """A fresh CompileError like ``error`` (made where the code was compiled: its file,
    line and caret) saying ``message``: each failing run raises one of its own."""
    return type(error)(message, error.filename, error.lineno, error.col, error.line,
                       error.hint)

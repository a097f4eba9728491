"""Writes into values the function reads from outside: globals and closure cells.

The backward pass reads what the tape holds, and the tape holds a global array
``W`` (or a callee's tape holds it) as the object itself.  Within one function,
a write into it (``W[0] = v``) is modelled: the plan saves what an adjoint reads
from before the write, under every name sharing its memory (plan.py).  A write the
plan cannot see is not: a helper that writes into a global (``def bump(): W[0] =
v``), a caller that writes into a global a callee's tape holds, or a write into
a global under another name for the same memory (``B = A`` at module level).  So
each unit knows, by *keys* (:func:`keys_of`: where the name lives, and the memory
it reaches when compiled: each array's buffer, each container and object), which
outside values its backward pass may read (``free_reads``: what its active
statements read, and what its active calls' units read) and which its forward
pass may write into (``free_writes``: what its statements write into, and what
every call's unit writes into; ``ANY`` for a call the compiler cannot see into).

Invariant: a statement that writes into an outside value is refused
(:func:`check_free_writes`) where an active statement before it, or in a loop
around both, read a value sharing its keys for a gradient, unless the plan models
the write: both are the function's own statements and the names are joined
(aliasing.sharing).  What one unit checks, its callers see through its keys, so a
conflict is refused in the first function that holds both the read and the write.
Memory two outside values come to share after the function was compiled (a global
rebound to a view of another) is not seen.
"""
import numbers
import types

import gast
import numpy as np

from . import syntax as S
from .aliasing import holding, may_write, name_at, runs_before
from .analysis import Kind, target_names
from .unit import ANY

NONE = frozenset()
_MOST = 10_000  # objects walked per name: a larger structure may reach anything
_ATOMS = (numbers.Number, str, bytes, np.generic, type, types.ModuleType, types.FunctionType,
          types.BuiltinFunctionType, types.MethodType)


def keys_of(fn, names, namespace):
    """name -> the keys of the outside value ``fn``'s free ``name`` holds: its closure
    cell or (module globals, name), and the memory it reaches (see :func:`_reached`);
    none for a value nothing can write into (a number, a string)."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    found = {}
    for name in names:
        value = namespace.get(name)
        if isinstance(value, _ATOMS):
            continue
        where = ("cell", id(cells[name])) if name in cells else (
            "global", id(fn.__globals__), name)
        found[name] = frozenset(_reached(value)) | {where}
    return found


def _reached(value):
    """The keys of the memory ``value`` reaches: each array's buffer (the base it is a
    view of), each list, dict, set and object, through items and attributes."""
    keys, seen, todo = set(), set(), [value]
    while todo:
        v = todo.pop()
        if isinstance(v, _ATOMS) or id(v) in seen:
            continue
        seen.add(id(v))
        if len(seen) > _MOST:
            return {ANY}
        if isinstance(v, np.ndarray):
            while isinstance(v.base, np.ndarray):
                v = v.base
            keys.add(("memory", id(v.base if v.base is not None else v)))
        elif isinstance(v, dict):
            keys.add(("object", id(v)))
            todo.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            keys.add(("object", id(v)))
            todo.extend(v)
        else:
            keys.add(("object", id(v)))
            todo.extend(getattr(v, "__dict__", {}).values())
    return keys


def overlap(a, b):
    """Whether two sets of keys may name one value."""
    return bool(a and b and (ANY in a or ANY in b or a & b))


def check_free_writes(facts, active, calls, units, writes, aliases, free, source_map):
    """Refuse a write into an outside value that an earlier gradient read (see the
    module docstring) and return ``(free_reads, free_writes, kept)`` of the unit:
    ``kept``, the free names its own active statements read and it never writes into
    (where it does, the write must reach the value outside).  ``calls``:
    id(statement) -> (unit, tape) of the active calls; ``units``: id(statement) -> the
    unit of every call of a user function (None: not compiled); ``writes``/``aliases``
    as callee_writes gives them; ``free``: :func:`keys_of` the function's free names."""
    joined = holding(facts, aliases).joined

    def outside(names):
        """The free names among ``names`` and those sharing memory with them."""
        if not free:
            return set()
        return {m for n in names for m in joined.get(n, {n})} & free.keys()

    def keys(names):
        return frozenset().union(*(free[n] for n in names))

    reads, wrote = [], []  # (statement, free names, keys, whether a callee's)
    for s in facts.in_order:
        op = facts.ops.get(id(s))
        if op is None:
            continue
        if isinstance(s, gast.Assign) and set(target_names(s.targets[0])) & active:
            names = outside(S.loaded_names(s.value))
            reads.append((s, names, keys(names), False))
            if id(s) in calls:
                reads.append((s, set(), calls[id(s)][0].free_reads, True))
        names = outside(_written_at(s, op, writes))
        wrote.append((s, names, keys(names), False))
        if op.kind is Kind.CALL and id(s) in units:
            unit = units[id(s)]
            wrote.append((s, set(), frozenset([ANY]) if unit is None else unit.free_writes,
                          True))
    reads = [each for each in reads if each[2]]  # without keys, it meets nothing
    wrote = [each for each in wrote if each[2]]
    for s, into, w, by_call in wrote:
        for r, read, k, of_call in reads:
            if not runs_before(facts, r, s):  # its adjoint runs before the write
                continue
            if by_call or of_call:
                hit = overlap(k, w)
            else:  # the plan saves what it reads under the names it joins with the write
                hit = overlap(keys(read - into), w)
            if hit:
                _refuse_outside(s, source_map, free, k & w if ANY not in k | w else k or w)
    kept = set().union(*(names for _, names, _, _ in reads))
    written = set().union(*(names for _, names, _, by_call in wrote if not by_call))
    return (frozenset().union(*(k for _, _, k, _ in reads)),
            frozenset().union(*(w for _, _, w, _ in wrote)), frozenset(kept - written))


def _written_at(s, op, writes):
    """The names whose arrays statement ``s`` writes into itself."""
    if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript):
        return {s.targets[0].value.id}
    if not isinstance(getattr(s, "value", None), gast.Call):
        return set()
    if op.kind is Kind.CALL:
        return {name_at(op.inputs, k) for k in writes.get(id(s), ())} - {None}
    return S.loaded_names(s.value) if may_write(s, op.kind) else set()


def _refuse_outside(s, source_map, free, keys):
    names = sorted(n for n, k in free.items() if k & keys) or sorted(
        k[2] for k in keys if k[0] == "global")  # a callee's global, then
    what = f"'{names[0]}'" if names else "a global or closure value"
    raise source_map.error(
        s, f"this may write into {what}, a value from outside the function that a gradient "
           "read before it: the backward pass would read the changed value",
        hint="Write into a copy (W = W.copy()) or pass the array as an argument; or "
             "read it after the write.")

"""Views read after a write into the memory they share: refused before differentiation.

Basic indexing, reshapes and transposes return views, and ``y = x`` binds a second
name to one array: after ``y = buf[::-1]``, a write ``buf[2] = v`` changes y with no
assignment to y.  The reverse pass follows values through assignments, so the
adjoint of v would never reach y.  Reading such a view after a write into its array
(or the array after a write through the view) raises a CompileError that says to
take a copy; views read only before any write, the common case, are exact as they
are (the backward pass restores written elements in place, and views see that).

Calls that write in place (``out=``, a discarded result: ``np.add.at``, ``rng.shuffle``,
and the arguments a user function writes into: its unit's ``mutated``) are refused
where an adjoint would see the change (:func:`check_effects`,
:func:`check_call_writes`); :func:`written_names` is every array the body may write
into, so a unit copies those of its parameters before it runs.  ``x += v`` is no write
in generated code, which rebinds x to ``x + v``.

A number shares no memory (``facts.numbers``: Python numbers and NumPy scalars such
as ``np.sum(x)`` or ``v[i]`` of a vector), and ``+=`` on one rebinds it: ``y = x``
of a number, or an element of an array of known rank, makes no pair to follow.

A name rebound while it shares memory (``w = z; w = np.sin(w)``) leaves its old value
on the tape by reference, and the plan snapshots only what a name holds at a write:
:func:`check_rebound` refuses a write ``x[i] = v`` into memory such an old value held.
A view of itself (``w = w[::-1]``, ``w.reshape(...)``) keeps sharing its array.
"""
import inspect
import numbers
import operator
from typing import NamedTuple

import gast
import numpy as np

from ..rules import containers, traits_of
from . import syntax as S
from .analysis import Kind, target_names
from .containers import definite
from .names import FREE_VALUES


def check_views(facts, source_map, containers=frozenset()):
    """Raise a CompileError at the first read of a view that a write has changed.

    Writes are ``x[i] = v`` and, on anything but numbers, ``x += v``.  ``containers``
    hold a list, tuple or dict wherever they are bound: ``c[k] = v`` rebinds a slot of
    one, which changes no item read out of it before (``t = c[k]``), nor a slice of it
    (``d = c[1:]``: a new container holding the same items, as ``list(c)`` is; an
    update of an item in place is check_updates' to follow)."""
    numbers = facts.numbers
    written = facts.written | (facts.updated - numbers)
    if not written:
        return
    for s in facts.assigns:
        if not isinstance(s.targets[0], gast.Name):
            continue
        op = facts.ops[id(s)]
        view, base = s.targets[0].id, _viewed(s.value, op)
        if base is None or base == view or not {view, base} & written or (
                {view, base} & numbers):
            continue  # no view of anything written, or a number: no memory shared
        if base in containers and isinstance(s.value, gast.Subscript) and not _element(
                s.value):
            continue  # a slice of a container is a new one
        # x[i] may be a row (a view) or a number: only a write x[...] = v counts for it,
        # since += on a number rebinds (for e in xs: e += 1 changes nothing in xs)
        item = base in containers and op.kind is not Kind.COPY
        _Pair(s, view, base, source_map, numbers, _element(s.value), facts.ops,
              item).walk(facts.body, _DEAD)
    check_rebound(facts, source_map, containers)


def check_rebound(facts, source_map, containers=frozenset()):
    """Refuse a write ``x[i] = v`` into memory that the old value of a rebound name held,
    where the tape may keep that value (the name was read before it was rebound, other
    than by a copy ``y = x``): the plan saves it by reference at the rebinding, and
    snapshots at a write only what names hold then, so the adjoint would read the
    changed value.  Which names hold the old memory is followed statement by statement
    from the rebinding, starting from every name that may share it (``sharing``)."""
    if not facts.written:
        return
    groups = sharing(facts)
    for s in facts.assigns:
        target = s.targets[0]
        if not isinstance(target, gast.Name) or target.id in facts.numbers:
            continue
        name = target.id
        self_view = _viewed(s.value, facts.ops[id(s)]) == name
        others = shared_with(groups, name) - {name} - facts.numbers
        if not (others or self_view) or not _read_by_tape(facts, name, s):
            continue  # the old value shares no memory, or no adjoint can keep it
        holders = frozenset(others | ({name} if self_view else set()))
        # a slot of a container that holds the old array is rebound: the array stays
        slots = frozenset() if name in containers else containers
        _Kept(s, name, holders, facts.ops, source_map, slots).walk(facts.body, frozenset())


def _read_by_tape(facts, name, s):
    """Whether a statement may read the value of ``name`` that ``s`` replaces (other
    than a copy ``y = name``, whose adjoint reads no value): ``s`` itself, one before
    it, or one after it in a loop around both that a path may reach without ``s``
    (one that ``s`` always runs before in its pass reads only what ``s`` binds)."""
    def old_value(r):
        if r is s or facts.order[id(r)] < facts.order[id(s)]:
            return True
        return bool(facts.loops_of[id(r)] & facts.loops_of[id(s)]) and not (
            facts.arms_of[id(s)] <= facts.arms_of[id(r)]
            and facts.loops_of[id(s)] <= facts.loops_of[id(r)])
    return any(name in _reads_of(r) and old_value(r)
               and not (isinstance(r, gast.Assign) and facts.ops[id(r)].kind is Kind.COPY)
               for r in facts.in_order)


def check_effects(facts, varied, source_map, active=frozenset(), resolve=None):
    """Refuse a call that may change a value in place, which no assignment records: a
    call whose result is discarded (``np.add.at(x, i, w)``, ``rng.shuffle(x)``), a call
    with ``out=``, and a call with no model, when it is given a varied value (no adjoint
    would follow the change) or a value an ``active`` statement read before it or in a
    loop around both (its adjoint would read the changed value).  A primitive with a
    rule and ``print`` only read their arguments; ``np.copyto(x, v)`` and ``x.fill(v)``
    were rewritten to ``x[...] = v``, which is modelled; calls of user functions are
    checked by :func:`check_call_writes`, which knows what they write into.  ``resolve``
    (parse.Parsed.resolve) finds the parts of a call that name no memory (see _given)."""
    read_by_active = _read_by_active(facts, active)
    for s in facts.exprs + facts.assigns:
        call = s.value
        kind = facts.ops[id(s)].kind
        if not isinstance(call, gast.Call) or kind is Kind.CALL:
            continue
        writes = may_write(s, kind)
        if not writes and kind is not Kind.UNKNOWN:
            continue
        loaded = _given(call, facts.ops[id(s)].fn, resolve)
        if loaded & varied:  # a call with no model may write into what it is given too
            _refuse(s, source_map)
        before = _read_before(facts, s, loaded - facts.numbers, read_by_active)
        if writes and before:
            _refuse(s, source_map, before)


def _given(call, fn, resolve=None):
    """The names a call may write into: those its arguments read, and those of its
    callee expression unless that resolved to a function or class reached through a
    module (``np.float32(2.0)`` is given no ``np``; ``y.sort()`` is given ``y``), found
    by ``resolve`` where the op does not say (``np.add(x, y, out=z)`` is given no np).
    An argument that resolves to an immutable value (``dtype=np.float32``) gives none."""
    if fn is None:
        found = _value_of(call.func, resolve)
        fn = found if inspect.isroutine(found) or isinstance(found, (type, np.ufunc)) else None
    receiver = getattr(fn, "__self__", None)  # np.add.at's is the ufunc np.add
    parts = call.args + [k.value for k in call.keywords]
    if fn is None or not (receiver is None or inspect.ismodule(receiver)
                          or _immutable(receiver)):
        parts.append(call.func)
    return set().union(*(S.loaded_names(a) for a in parts
                         if not _immutable(_value_of(a, resolve))))


_LOCAL = object()  # what _value_of gives for a local value, or with no resolve


def _value_of(node, resolve):
    """The value of the free name or attribute chain ``node`` (parse.Parsed.resolve)."""
    if resolve is None or not isinstance(node, (gast.Name, gast.Attribute)):
        return _LOCAL
    try:
        return resolve(node)
    except KeyError:
        return _LOCAL


def _immutable(value):
    """Whether ``value`` is a number, string, dtype or ufunc, or a class of numbers."""
    return isinstance(value, (numbers.Number, str, bytes, np.dtype, np.ufunc)) or (
        isinstance(value, type) and issubclass(value, (numbers.Number, str, bytes)))


def check_call_writes(facts, writes, varied, active, source_map):
    """Refuse a call of a user function that writes into an array of the caller (any
    array sharing memory with one it is passed at a position in ``writes[id(s)]``) when
    the change is one no adjoint follows: an active statement read that array before
    the call (or in a loop around both), or the call is given a varied value and the
    array is read after it (the change carries a gradient the caller cannot see)."""
    read_by_active = _read_by_active(facts, active)
    shared = sharing(facts)
    for s in facts.exprs + facts.assigns:
        positions = writes.get(id(s))
        if not positions:
            continue
        op = facts.ops[id(s)]
        names = {n for k in positions for n in shared_with(shared, name_at(op.inputs, k))}
        names -= facts.numbers
        before = _read_before(facts, s, names, read_by_active)
        if before:
            _refuse(s, source_map, before)
        if S.loaded_names(s.value) & varied:
            after = _read_after(facts, s, names)
            if after:
                _refuse(s, source_map, after, after=True)


def written_names(facts, writes):
    """The names whose arrays the body may write into in place: ``x[i] = v``, calls
    that may write (discarded results, ``out=``, no model, what user functions write
    per ``writes``), and every name sharing memory with one of them.  (``x += v`` is
    not one: generated code rebinds x to ``x + v``.)"""
    direct = set(facts.written)
    for s in facts.exprs + facts.assigns:
        op = facts.ops[id(s)]
        if op.kind is Kind.CALL:
            direct |= {name_at(op.inputs, k) for k in writes.get(id(s), ())} - {None}
        elif isinstance(s.value, gast.Call) and may_write(s, op.kind):
            direct |= S.loaded_names(s.value)
    shared = sharing(facts)
    return {m for n in direct for m in shared_with(shared, n)} - facts.numbers


def _refuse(s, source_map, names=(), after=False):
    what = _unparse(s.value.func)
    reason = ("" if not names else
              f": {sorted(names)[0]}, which it may change, is read after it for a gradient "
              "that would not see the change" if after else
              f": {sorted(names)[0]}, which it may change, was read for a gradient before "
              "it, and its adjoint would read the changed value")
    raise source_map.error(
        s, f"cannot differentiate through {what}(...) here: it may change a value in "
           f"place, which no assignment records{reason}",
        hint="Assign the result instead (y = f(x)), without out=; build arrays with "
             "x[i] = v or np.stack; or change a copy (x = x.copy()).")


def name_at(inputs, k):
    node = inputs[k] if k < len(inputs) else None
    return node.id if isinstance(node, gast.Name) else None


def may_write(s, kind):
    """Whether the call of statement ``s`` (its op's ``kind``; not a user function's)
    is one that writes into its arguments: it is given ``out=``, or its result is
    discarded and it is not a primitive (``np.add.at(x, i, v)``, ``rng.shuffle(x)``)."""
    call = s.value
    if any(k.arg == "out" for k in call.keywords):
        return True
    if kind is Kind.UNKNOWN:  # no model says what it does: assigning its result
        return True           # (``r = np.fill_diagonal(x, 0)``) changes nothing
    return isinstance(s, gast.Expr) and not (kind in (Kind.PRIMITIVE, Kind.NONE) or (
        isinstance(call.func, gast.Name) and call.func.id == "print"))


def _read_by_active(facts, active):
    """name -> the statements assigning an active name that read it."""
    found = {}
    for s in facts.assigns:
        if set(target_names(s.targets[0])) & active:
            for name in S.loaded_names(s.value):
                found.setdefault(name, []).append(s)
    return found


def _read_before(facts, s, names, read_by_active):
    """Those of ``names`` an active statement reads before ``s`` or in a loop around
    both (the next pass's)."""
    return {n for n in names for r in read_by_active.get(n, ()) if runs_before(facts, r, s)}


def runs_before(facts, r, s):
    """Whether statement ``r`` may run before ``s``: it comes first, or a loop holds
    both (the next pass's ``s`` follows this pass's ``r``; ``s`` itself too)."""
    return (facts.order[id(r)] < facts.order[id(s)]
            or bool(facts.loops_of[id(r)] & facts.loops_of[id(s)]))


def _read_after(facts, s, names):
    """Those of ``names`` a statement reads after ``s`` or in a loop around both."""
    found = set()
    for r in facts.in_order:
        if r is not s and (facts.order[id(r)] > facts.order[id(s)]
                           or facts.loops_of[id(r)] & facts.loops_of[id(s)]):
            found |= names & _reads_of(r)
    return found


def _reads_of(s):
    """The names a statement reads itself (a compound's test or iterable only)."""
    if isinstance(s, (gast.If, gast.While)):
        return S.loaded_names(s.test)
    if isinstance(s, gast.For):
        return S.loaded_names(s.iter)
    return S.loaded_names(s)


def sharing(facts, aliases=None):
    """name -> the names whose memory it may share (itself included; see ``shared_with``):
    ``y = x``, views (``y = x[1:]``, ``x.T``) and the links of :func:`_held_links`,
    joined both ways and transitively.  A write into one name changes every other one
    of its group, so the plan snapshots those an adjoint read before it.  With
    ``aliases`` (see check_updates), a user function's result shares the arguments it
    may return too (without, the callers follow what callees write: callee_writes)."""
    groups = {}
    for s in facts.assigns:
        op = facts.ops[id(s)]
        links = (_held_links(s, op, aliases)
                 if op.kind is not Kind.CALL or aliases is not None else [])
        for a, b in links or _view_links(s, op):
            if {a, b} & facts.numbers:
                continue  # a number shares no memory: t = x[1] of a vector is a copy
            joined = groups.get(a, {a}) | groups.get(b, {b})
            for n in joined:
                groups[n] = joined
    return groups


def _view_links(s, op):
    """[(target, base)] for an assignment of a view or a copy of a name to a name."""
    target = s.targets[0]
    base = _viewed(s.value, op) if isinstance(target, gast.Name) else None
    return [] if base is None else [(target.id, base)]


def _held_links(s, op, aliases):
    """[(name bound, name given)] for an assignment whose result may hold the very
    arrays it is given: the pieces of a split (views), a container and its items
    (``[a, b]``, ``list(xs)``), what a user function returns (the arguments at the
    positions ``aliases[id(s)]``, all if not known); empty for any other."""
    target = s.targets[0]
    if not isinstance(target, (gast.Name, gast.Tuple)) or not (
            op.kind in (Kind.SPLIT, Kind.CALL, Kind.PACK)
            or op.kind is Kind.PRIMITIVE and op.fn in _HOLDERS):
        return []
    inputs = op.inputs
    if op.kind is Kind.CALL:
        inputs = [inputs[k] for k in aliases.get(id(s), range(len(inputs))) if k < len(inputs)]
    given = [n for a in inputs for n in _held_names(a) if n != FREE_VALUES]
    return [(t, n) for t in target_names(target) for n in given]


def shared_with(groups, name):
    """The names sharing memory with ``name`` (none for None: not a name)."""
    return set() if name is None else groups.get(name, {name})


def _unparse(node):
    import ast
    return ast.unparse(gast.gast_to_ast(node))


def _viewed(value, op):
    """The name whose memory ``value`` (described by ``op``) may share, or None."""
    first = op.inputs[0] if op.inputs else None
    if not isinstance(first, gast.Name) or first.id == FREE_VALUES:
        return None  # W = free_values["W"]: an outside value, no view of a local
    if op.kind is Kind.COPY or op.kind is Kind.PRIMITIVE and (
            traits_of(op.fn).view or op.fn is containers.field or op.fn is operator.getitem
            and (not isinstance(value, gast.Subscript) or _basic(value.slice))):
        return first.id  # operator.getitem(x, i) called: a view, for all we know; p.W
        # is an object p holds, shared as an item is
    return None


def _element(value):
    """Whether ``value`` is ``x[i]`` (or ``x[i, j]``) with no slice: a number or a row."""
    if not isinstance(value, gast.Subscript):
        return False
    index = value.slice
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    return all(isinstance(p, (gast.Constant, gast.Name)) for p in parts)


def _basic(index):
    """Whether ``x[index]`` may be a view: no index array among its parts (a name may
    hold an int, so it counts as basic)."""
    if isinstance(index, gast.Tuple):
        return all(_basic(e) for e in index.elts)
    # an attribute here is a module constant (normalize keeps those whole): np.newaxis
    return isinstance(index, (gast.Slice, gast.Constant, gast.Name, gast.Attribute))


# Flow state of one (view, base) pair: whether the view is bound to the base's
# memory, and the statements that wrote into the base / through the view since.
_DEAD = (False, None, None)


def _join(a, b):
    return tuple(p or q for p, q in zip(a, b))


def _walk(walker, stmts, state, join):
    """Run ``walker.step`` over ``stmts`` in flow order, ``walker.reads`` on the tests
    and iterables of compound statements; ``join`` merges the states of two paths."""
    for s in stmts:
        if isinstance(s, gast.If):
            walker.reads(s, s.test, state)
            state = join(_walk(walker, s.body, state, join),
                         _walk(walker, s.orelse, state, join))
        elif isinstance(s, (gast.For, gast.While)):
            walker.reads(s, s.iter if isinstance(s, gast.For) else s.test, state)
            # twice round: what one iteration leaves reaches the next one's reads;
            # unless it leaves nothing new, when the second round would repeat the
            # first (without it, nested loops cost 2 ** depth walks)
            once = _walk(walker, s.body, state, join)
            again = join(state, once)
            state = again if again == state else join(
                state, _walk(walker, s.body, again, join))
        else:
            state = walker.step(s, state)
    return state


class _Kept:
    """Flow state: the names that may hold the memory of ``name``'s value before the
    rebinding ``made`` (a frozenset, empty before it).  A view or copy of a holder
    holds it too; any other binding lets go of it."""

    def __init__(self, made, name, holders, ops, source_map, slots=frozenset()):
        self.made, self.name, self.holders = made, name, holders
        self.ops, self.source_map = ops, source_map
        self.slots = slots  # containers whose slot writes change no array they hold

    def walk(self, stmts, state):
        return _walk(self, stmts, state, operator.or_)

    def reads(self, s, node, state):
        pass  # only writes matter here

    def step(self, s, state):
        if s is self.made:  # the name itself holds it on only as a view of itself
            state = state | self.holders
            return state if self.name in self.holders else state - {self.name}
        if not isinstance(s, gast.Assign):
            return state
        target = s.targets[0]
        if isinstance(target, gast.Subscript):
            if target.value.id in state and not (
                    target.value.id in self.slots and not getattr(s, "in_place", False)):
                line = self.source_map.file_line(self.made)
                raise self.source_map.error(
                    s, f"this writes into memory that '{self.name}' held before line {line} "
                       f"rebound it, and its old value may be kept for the gradient: the "
                       "compiler cannot follow a write into memory that two values share",
                    hint=f"Take a copy where '{self.name}' is made to share memory "
                         "(.copy()), or write into a copy.")
            return state
        names = set(target_names(target))
        if getattr(s, "in_place", False):
            return state - names  # x += v rebinds x to x + v in generated code
        op = self.ops[id(s)]
        base = _viewed(s.value, op) if isinstance(target, gast.Name) else None
        # a primitive that is no view makes a new array; anything else (a call of a user
        # function, np.split's pieces, a container) may hand back what it is given
        fresh = op.kind is Kind.NONE or op.kind is Kind.PRIMITIVE and op.fn not in _HOLDERS
        if base in state or not fresh and S.loaded_names(s.value) & state:
            return state | names
        return state - names


class _Pair:
    """Flow state of one (view, base) pair; ``item``: the view is an item read out of
    the container ``base``, which a write into one of its slots leaves as it is."""

    def __init__(self, made, view, base, source_map, numbers, element, ops, item=False):
        self.made, self.view, self.base = made, view, base
        self.source_map, self.ops = source_map, ops
        self.numbers = set(numbers) | ({view} if element else set())
        self.item = item

    def walk(self, stmts, state):
        return _walk(self, stmts, state, _join)

    def step(self, s, state):
        target = s.targets[0] if isinstance(s, gast.Assign) else None
        value = getattr(s, "value", None)
        into = None
        if isinstance(target, gast.Subscript):
            into = target.value.id
            value = gast.Tuple(elts=[target.slice, value], ctx=gast.Load())
        elif getattr(s, "in_place", False) and target.id not in self.numbers:
            into = target.id  # x += v writes into x's array
        self.reads(s, value, state)
        if s is self.made:
            return (True, None, None)
        alive, base_write, view_write = state
        rebound = {self.view, self.base} & set(S.assigned_names([s]))
        if target is not None and not into and rebound and not (
                isinstance(target, gast.Name)
                and _viewed(s.value, self.ops[id(s)]) == target.id):
            # the names share no memory now (w = w[::-1] would), but the one not rebound
            # still holds what a write through the other changed
            if rebound == {self.view}:
                return (False, None, view_write)
            if rebound == {self.base}:
                return (False, base_write, None)
            return _DEAD
        if alive and into == self.base and not (
                self.item and not getattr(s, "in_place", False)):
            return (True, s, view_write)
        if alive and into == self.view:
            return (True, base_write, s)
        return state

    def reads(self, s, node, state):
        alive, base_write, view_write = state
        if node is None:
            return
        names = S.loaded_names(node)
        made = self.source_map.file_line(self.made)
        if base_write is not None and self.view in names:
            what = (f"a view of '{self.base}' (made at line {made}) after line "
                    f"{self.source_map.file_line(base_write)} wrote into '{self.base}'")
        elif view_write is not None and self.base in names:
            what = (f"'{self.base}' after line {self.source_map.file_line(view_write)} "
                    f"wrote into it through a view (made at line {made})")
        else:
            return
        raise self.source_map.error(
            s, f"this reads {what}: the compiler cannot follow a write into memory that "
               "two values share",
            hint="Take a copy where the view is made (.copy()), or read the view before "
                 "the write.")


# ---------------------------------------------------------------- in-place updates

# Calls whose result is, or holds, the very objects they are given (not copies of
# their data): a container of the items, an item, the array itself.
_HOLDERS = frozenset([list, tuple, dict, sorted, max, min, np.asarray, np.asanyarray,
                      containers.append, containers.join_lists, containers.field])


def check_updates(facts, depths, source_map, aliases):
    """Refuse an in-place update whose change another name would see in Python but
    not in the generated code, which rebinds: ``t += v`` (any ``op=``) on a name not
    known to hold a number, and ``c[k] += v`` on a container ``c`` (an array item of
    a list or dict is updated in place, and the container only gets it back).

    Names may share an object through copies, views, items read out of a container
    or an array (``t = xs[i]``, ``for t in xs``), and containers and what they hold
    (``[a, b]``, ``list(xs)``, ``max(xs)``, ``xs.append(v)``); this join is
    flow-insensitive, so it errs towards refusing, but for ``t += v`` where, on every
    path, ``t`` was last bound to a new array that no other name took (:func:`_own`:
    ``z = y; z = z + 1.0; z += x``).  An update is refused if a name
    that may share the updated object, and is bound before it (or in a loop around
    both), is read after it or in a loop around both.  Names bound only after it
    read what they hold after it too; ``c`` itself and its copies get the item back;
    a list extended in place (``xs += [v]``) changes no item, only what holds it.
    ``aliases``: id(call of a user function) -> the positions of the arguments its
    result may share objects with (callee_writes).

    ``t += v`` on a name that may hold a number is refused only when it runs with an
    array (or another mutable value) in ``t``, and ``c[k] += v`` on a container a user
    function returned only when the item shares memory with another item then:
    returns {id(update): the CompileError} for the forward pass to check
    (runtime.Unshared, runtime.ItemUnshared)."""
    updates = [s for s in facts.assigns if getattr(s, "in_place", False)]
    checks = {}
    if not updates:
        return checks
    slots = set(depths) | facts.packs
    found = holding(facts, aliases, slots)
    joined, same, holders = found.joined, found.same, found.holders
    containers_ = definite(depths) | facts.packs
    for s in updates:
        target = s.targets[0]
        if isinstance(target, gast.Name):
            t = target.id
            if t in facts.numbers:
                continue  # += on a number rebinds it in Python too
            if t not in containers_:
                if _own(facts, s, t):
                    continue  # t holds a new array no other name took
                error = _stale_reads(facts, s, joined.get(t, {t}) - {t}, source_map,
                                     "this updates an array in place", _UPDATE_HINT)
                if error is not None:
                    checks[id(s)] = error
                continue
            others = _upwards(t, same, holders) - {t}
        else:
            c = target.value.id
            if c not in slots:
                continue  # an array: c[k] += v is c[k] = c[k] + v in NumPy too
            # c gets the item back, unless another of its slots holds the object too
            static = _shared_items(facts, c, found, slots)
            if static or _returned(facts, c, found, slots):
                others = joined.get(c, {c}) - set(getattr(s, "update_temps", ()))
                error = _stale_reads(
                    facts, s, others, source_map,
                    f"this updates an array in place that another item of '{c}' may be too",
                    f"Put copies into '{c}' (y.copy()), or write the update as a new value "
                    "(c[k] = c[k] + v).")
                if error is not None and static:
                    raise error
                if error is not None:  # what a user function returned: seen when it runs
                    checks[id(s)] = error
                if static:
                    continue
            others = (joined.get(c, {c}) - same.get(c, {c})
                      - set(getattr(s, "update_temps", ())))
        error = _stale_reads(facts, s, others, source_map, "this updates an array in place",
                             _UPDATE_HINT)
        if error is not None:
            raise error
    return checks


def _own(facts, s, t):
    """Whether, on every path to the update ``s`` of ``t``, ``t`` was last bound to a
    new array (a primitive's, not a view or an item: ``t = t + 1.0`` after ``t = y``)
    that no statement since handed on (as a copy, view or item, or to a call)."""
    if t in facts.loop_targets:
        return False  # for t in xs: an item of xs on each pass
    walker = _Own(s, t, facts.ops)
    walker.walk(facts.body, True)  # a parameter's array may be shared
    return not walker.shared


class _Own:
    """Flow state: whether the array ``name`` holds may be shared with another name."""

    def __init__(self, update, name, ops):
        self.update, self.name, self.ops = update, name, ops
        self.shared = False  # whether it may be shared at the update, on some path

    def walk(self, stmts, state):
        return _walk(self, stmts, state, operator.or_)

    def reads(self, s, node, state):
        pass  # a test or an iterable reads the array and keeps none of it

    def step(self, s, state):
        if s is self.update:
            self.shared |= state
        loaded, bound = S.loads_and_stores(s) if not isinstance(s, gast.FunctionDef) else (
            S.loaded_names(s), S.assigned_names([s]))
        if not isinstance(s, gast.Assign):
            return state or self.name in loaded | bound
        target, op = s.targets[0], self.ops[id(s)]
        if self.name in loaded and not _new(s.value, op, self.name):
            state = True  # handed on: a copy, view or item of it, or given to a call
        if isinstance(target, gast.Name) and target.id == self.name:
            return state if getattr(s, "in_place", False) else not _new(s.value, op)
        return state or self.name in bound


def _new(value, op, name=None):
    """Whether ``value`` (described by ``op``) is a new array that shares no memory with
    ``name`` (with any name, if None): not a copy, a view, an item or a container."""
    base = _viewed(value, op)
    return (op.kind is Kind.NONE or op.kind is Kind.PRIMITIVE and op.fn not in _HOLDERS) and (
        base is None or name is not None and base != name)


_UPDATE_HINT = ("Write the update as a new value (t = t + v), or take a copy (t = t.copy()) "
                "before updating it.")


def _stale_reads(facts, s, others, source_map, what, hint):
    """The CompileError for the write ``s`` if one of ``others`` (names that may share
    the memory it writes), bound before it, is read after it (that read would see the
    change in Python and not in the generated code), else None."""
    others = {n for n in others - facts.numbers if _bound_before(facts, n, s)}
    after = _read_after(facts, s, others)
    if not after:
        return None
    return source_map.error(
        s, f"{what}, and '{sorted(after)[0]}', which may share its memory, is read after: "
           "the compiler cannot follow a write into memory that two values share", hint=hint)


def check_shared_writes(facts, depths, source_map, aliases):
    """Refuse a write into an array (``x[i] = v``) when a name that may share its memory
    other than by one view or copy of it is read after the write (``check_views`` follows
    those, statement by statement): a view of a view, a copy of a copy, a container
    holding the array or an item of one (``xs = [y]; t = xs[0]; t[1] = v``), what a
    user function returns of it.  The join is flow-insensitive (see check_updates),
    and a write into a slot of a list or dict changes no array."""
    writes = [s for s in facts.assigns if isinstance(s.targets[0], gast.Subscript)]
    if not writes:
        return
    slots = set(depths) | facts.packs
    joined = holding(facts, aliases, slots).joined
    direct = _direct_views(facts)
    for s in writes:
        w = s.targets[0].value.id
        if w in slots:
            continue
        error = _stale_reads(facts, s, joined.get(w, {w}) - {w} - direct.get(w, set()),
                             source_map, "this writes into an array",
                             "Take a copy where the array is shared (.copy()), or read it "
                             "before the write.")
        if error is not None:
            raise error


def _direct_views(facts):
    """name -> the names one view or copy links it with (the pairs check_views follows)."""
    found = {}
    for s in facts.assigns:
        if isinstance(s.targets[0], gast.Name):
            base = _viewed(s.value, facts.ops[id(s)])
            if base is not None:
                found.setdefault(base, set()).add(s.targets[0].id)
                found.setdefault(s.targets[0].id, set()).add(base)
    return found


def _bound_before(facts, name, s):
    """Whether ``name`` may hold, at ``s``, a value bound before it: a parameter, or
    bound before ``s`` or in a loop around both."""
    bound = [b for b in facts.assigns if name in target_names(b.targets[0])]
    return not bound or name in facts.params or any(
        facts.order[id(b)] < facts.order[id(s)] or facts.loops_of[id(b)] & facts.loops_of[id(s)]
        for b in bound)


def _upwards(name, same, holders):
    """``name``, its copies, and every container that may hold one of them, at any
    depth."""
    found, todo = set(), [name]
    while todo:
        n = todo.pop()
        for m in same.get(n, {n}) | holders.get(n, set()):
            if m not in found:
                found.add(m)
                todo.append(m)
    return found


def returned_aliases(facts, outputs, aliases):
    """The positions of the parameters whose objects the results ``outputs`` may share
    (one returned as it is, a view of it, an item of it, a container holding it)."""
    joined = holding(facts, aliases).joined
    shared = set()
    for out in outputs:
        if isinstance(out, gast.Name):
            shared |= joined.get(out.id, {out.id})
    return tuple(k for k, p in enumerate(facts.params) if p in shared)


def _held_names(node):
    """The names an argument passes whole: itself, or those in a literal ``[a, (b, c)]``."""
    if isinstance(node, gast.Name):
        return [node.id]
    if isinstance(node, (gast.List, gast.Tuple)):
        return [n for e in node.elts for n in _held_names(e)]
    return []


class Holding(NamedTuple):
    """What :func:`holding` finds; each group includes the name itself."""
    joined: dict   # name -> the names that may share an object with it
    same: dict     # name -> the names that are the same object by copies alone
    holders: dict  # name -> the containers that may hold it
    objects: dict  # name -> the names that may be (a view of) one object, not as items


def holding(facts, aliases, slots=frozenset()):
    """A :class:`Holding` of the body.  ``slots``: the names that hold containers, for
    which a write ``c[k] = v`` puts the object v into c (into an array, it copies)."""
    joined, same, holders, objects = {}, {}, {}, {}

    def join(groups, a, b):
        both = groups.get(a, {a}) | groups.get(b, {b})
        for n in both:
            groups[n] = both

    for s in facts.assigns:
        target, op = s.targets[0], facts.ops[id(s)]
        if op.kind is Kind.CALL:  # a user function's result: the arguments it may return
            inputs = [n for k in aliases.get(id(s), range(len(op.inputs)))
                      if k < len(op.inputs) for n in _held_names(op.inputs[k])]
            for n in target_names(target) if isinstance(target, (gast.Name, gast.Tuple)) else ():
                for a in inputs:
                    join(joined, n, a)
                    join(objects, n, a)
            continue
        if op.kind is Kind.SPLIT and isinstance(target, (gast.Name, gast.Tuple)) and (
                isinstance(op.inputs[0], gast.Name)):
            for n in target_names(target):  # the pieces are views, unpacked or in a list
                join(joined, n, op.inputs[0].id)
                join(objects, n, op.inputs[0].id)
            continue
        if isinstance(target, gast.Subscript) and target.value.id in slots:
            for n in _held_names(s.value):  # c[k] = v: c holds the object v
                join(joined, target.value.id, n)
                holders.setdefault(n, set()).add(target.value.id)
            continue
        if not isinstance(target, gast.Name):
            continue
        inputs = [n for a in op.inputs for n in _held_names(a)]
        if op.kind is Kind.COPY and inputs:
            join(same, target.id, inputs[0])
            join(joined, target.id, inputs[0])
            join(objects, target.id, inputs[0])
        elif op.kind is Kind.PACK or op.kind is Kind.PRIMITIVE and op.fn in _HOLDERS:
            for n in inputs:
                join(joined, target.id, n)
                holders.setdefault(n, set()).add(target.id)
        else:
            base = _viewed(s.value, op)
            if base is not None:
                join(joined, target.id, base)
                join(objects, target.id, base)
    return Holding(joined, same, holders, objects)


def _shared_items(facts, c, found, slots):
    """Whether two slots of the container ``c`` may hold one object (or views of one):
    one name put in twice (``[y, y]``, ``d[k] = y`` in a loop that does not bind y,
    ``xs.append(y)`` twice) or two that may share memory (``[y, y[1:]]``), counted over
    every place an item enters c or a container c was made of (a container a user
    function returned may hold anything, ``return [t, t]``: see :func:`_returned`).
    Then ``c[k] += v``, which changes the object in place, changes what the other slot
    reads in Python."""
    family = _family(c, found, slots)
    counts = {}
    for s in facts.assigns:
        target, op = s.targets[0], facts.ops[id(s)]
        if isinstance(target, gast.Subscript) and target.value.id in slots:
            into, given = target.value.id, _held_names(s.value)
        elif isinstance(target, gast.Name) and (
                op.kind is Kind.PACK or op.kind is Kind.PRIMITIVE and op.fn in _HOLDERS):
            into, given = target.id, [n for a in op.inputs for n in _held_names(a)]
        else:
            continue
        if into not in family:
            continue
        for n in set(given) - family - facts.numbers:
            group = min(found.objects.get(n, {n}))
            # a name not bound in every loop around s is the same object each pass
            counts[group] = counts.get(group, 0) + given.count(n) + (
                not _fresh_each_pass(facts, n, s))
    return any(k > 1 for k in counts.values())


def _family(c, found, slots):
    """The container ``c``, its copies, and the containers it was made of."""
    family = {m for m in found.holders.keys() & slots
              if c in _upwards(m, found.same, found.holders)}
    return family | found.same.get(c, {c}) | {c}


def _returned(facts, c, found, slots):
    """Whether a user function returned ``c`` or a container it was made of: what its
    slots hold is known only when it runs (runtime.ItemUnshared checks it then)."""
    family = _family(c, found, slots)
    return any(facts.ops[id(s)].kind is Kind.CALL and set(target_names(s.targets[0])) & family
               for s in facts.assigns)


def _fresh_each_pass(facts, name, s):
    """Whether each pass of the loops around ``s`` gives ``name`` a new object: a
    primitive computes it (no view, no item, no copy of a name) in those loops, on
    every path that reaches ``s``."""
    loops = facts.loops_of[id(s)]
    return not loops or any(
        loops <= facts.loops_of[id(b)] and facts.arms_of[id(b)] <= facts.arms_of[id(s)]
        and isinstance(b.targets[0], gast.Name) and b.targets[0].id == name
        and facts.ops[id(b)].kind is Kind.PRIMITIVE and facts.ops[id(b)].fn not in _HOLDERS
        and _viewed(b.value, facts.ops[id(b)]) is None
        for b in facts.assigns)

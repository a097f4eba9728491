"""Ownership: which arrays of a pass's straight-line statements only its code holds.

An array is *owned* when the code itself made it (arithmetic, a ufunc, ``.copy()``, or
a tape slot handed over) and has read it since only where no reference to it can be
kept: as an operand of elementwise arithmetic or a ufunc, of a reduction or a helper
that only reads (kinds._READERS), measured (``x.shape``, ``shape_of``), or given
another name (``a = b``, ``t = into(a, ...)``, ``t = unbroadcast(a, x)``: the names
are one array).  Every name a branch or loop mentions counts as shared.  :class:`_Arrays`
holds the names of each owned array; ``live_after`` says which names later statements
read (a measurement aside: a write that keeps shape and dtype does not change it).

Invariant: an array is owned only while no container, view, callee, caller or other
name that is read later can observe it; ``spendable`` gives the tape slots whose arrays
the forward pass owned and only that slot holds.
"""
import gast

from . import syntax as S
from .kinds import _READERS, _SAME, Expressions, _measured, _simple
from ..rules.helpers import one_minus_square, unreduce
from .runtime import into, shape_of

_COMPOUND = (gast.If, gast.For, gast.While, gast.With, gast.Try)


class _Arrays:
    """Which names hold which array the pass owns: name -> array id, and the names
    of each owned array (an id missing from ``owned`` is one that may be shared)."""

    def __init__(self):
        self.of = {}
        self.owned = {}
        self._next = 0

    def fresh(self, name):
        self.forget(name)
        self._next += 1
        self.of[name] = self._next
        self.owned[self._next] = {name}

    def alias(self, name, other):
        if name == other:
            return
        self.forget(name)
        a = self.of.get(other)
        if a is not None and a in self.owned:
            self.of[name] = a
            self.owned[a].add(name)

    def forget(self, name):
        a = self.of.pop(name, None)
        if a in self.owned:
            self.owned[a].discard(name)

    def share(self, name):
        """``name``'s array is read where a reference to it may be kept."""
        self.owned.pop(self.of.get(name), None)

    def names(self, name):
        a = self.of.get(name)
        return self.owned.get(a) if a is not None else None


class Ownership(Expressions):
    """The ownership analysis of one pass, over :class:`~.kinds.Expressions`."""

    def shares(self, node):
        """The names ``node`` reads where a reference to their arrays may be kept."""
        found = []
        self._reads(node, found, False)
        return found

    def _reads(self, node, shares, harmless):
        if isinstance(node, gast.Name):
            if isinstance(node.ctx, gast.Load) and not harmless:
                shares.append(node.id)
            return
        if isinstance(node, gast.Call):
            fn = self.resolve(node.func)
            if fn is into or fn is unreduce or fn in _SAME:
                # into, _SAME: their first argument's array or a new one (see _track);
                # unreduce spreads its first argument and measures the others
                for k, a in enumerate(node.args):
                    self._reads(a, shares, k > 0 or fn is not unreduce)
                return
            calm = self._ufunc_call(node) or fn in _READERS
            self._reads(node.func, shares, False)
            for a in node.args:
                self._reads(a, shares, calm)
            for kw in node.keywords:
                self._reads(kw.value, shares, False)
            return
        if isinstance(node, (gast.BinOp, gast.UnaryOp)):
            calm = not isinstance(node.op, gast.Not)
            for child in gast.iter_child_nodes(node):
                self._reads(child, shares, calm)
            return
        if _measured(node):
            return
        if isinstance(node, gast.Attribute) and node.attr == "T":  # a view it reads now
            self._reads(node.value, shares, harmless)
            return
        for child in gast.iter_child_nodes(node):
            self._reads(child, shares, False)

    def fresh(self, node):
        """Whether ``node`` makes a new array (or a number)."""
        if isinstance(node, gast.Call) and node.args and any(self._is(node, f) for f in _SAME):
            return self.fresh(node.args[0])
        return (self._ufunc_call(node) or isinstance(node, gast.BinOp)
                or isinstance(node, gast.UnaryOp) and not isinstance(node.op, gast.Not)
                or self._is(node, one_minus_square)
                or isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
                and node.func.attr == "copy" and not node.args and not node.keywords)

    def _track(self, s, arrays, kinds):
        """Update ``arrays`` and ``kinds`` for statement ``s`` (as first written)."""
        if isinstance(s, gast.Delete):
            for t in s.targets:
                if isinstance(t, gast.Name):
                    arrays.forget(t.id)
                    kinds.pop(t.id, None)
            return
        if isinstance(s, _COMPOUND):
            for n in S.names_in(s):
                arrays.share(n)
                arrays.forget(n)
            for n in S.assigned_names([s]):
                kinds.pop(n, None)
            return
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            t = s.target.id
            kind = self.kind(gast.BinOp(left=S.name(t), op=s.op, right=s.value), kinds)
            for n in self.shares(s.value):
                arrays.share(n)
            if kind is None or kind != kinds.get(t):
                kinds.pop(t, None)
            return
        if not (_simple(s) and isinstance(s.value, gast.Name)):  # ``t = n``: one array
            for n in self.shares(s):
                arrays.share(n)
        if not _simple(s):
            for n in S.assigned_names([s]):
                arrays.forget(n)
                kinds.pop(n, None)
            return
        target, value = s.targets[0].id, s.value
        kind = self.kind(value, kinds)
        same = None  # ``t = a``, ``t = into(a, ...)``, ``t = unbroadcast(a, x)``
        if isinstance(value, gast.Name):
            same = value.id
        elif isinstance(value, gast.Call) and value.args and isinstance(
                value.args[0], gast.Name) and (self._is(value, into) or any(
                self._is(value, f) for f in _SAME)):
            same = value.args[0].id
        if same is not None:
            arrays.alias(target, same)
        elif self.fresh(value):
            arrays.fresh(target)
        else:
            arrays.forget(target)
        if kind is not None:
            kinds[target] = kind
        else:
            kinds.pop(target, None)

    def _free(self, n, value, live, target, arrays):
        """Whether name ``n``'s array is owned, dead after this statement (which binds
        ``target``) and read once in ``value``."""
        names = arrays.names(n)
        if not names or (names - {target}) & live:
            return False
        return sum(1 for m in S.walk(value) if isinstance(m, gast.Name)
                   and isinstance(m.ctx, gast.Load) and m.id in names) == 1

    def _live_after(self, stmts, live_out):
        """For each top-level statement, the names read after it before being assigned
        again (anything a nested statement mentions counts as read and never assigned),
        a ``shape_of`` read aside."""
        live = set(live_out)
        found = [None] * len(stmts)
        for k in reversed(range(len(stmts))):
            found[k] = set(live)
            s = stmts[k]
            if isinstance(s, _COMPOUND):
                live |= S.names_in(s)
                continue
            if isinstance(s, gast.Assign):
                live -= S.assigned_names([s])
            live |= set(self._unmeasured(s))
        return found

    def _unmeasured(self, node):
        """The names ``node`` reads, but as ``shape_of``'s argument."""
        if self._is(node, shape_of) or _measured(node):
            return
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            yield node.id
        for child in gast.iter_child_nodes(node):
            yield from self._unmeasured(child)

    def spendable(self, arrays, result, tape):
        """The names in ``tape`` (a Tuple: what a forward pass returns beside
        ``result``) whose arrays are the pass's own, held by that one slot of it."""
        for n in S.loaded_names(result):
            arrays.share(n)
        slots = [e.id for e in tape.elts if isinstance(e, gast.Name)]
        return {n for n in slots if arrays.names(n) and len(arrays.names(n)) == 1
                and slots.count(n) == 1}

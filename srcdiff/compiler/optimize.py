"""Peephole passes over generated code: fewer temporaries, same values."""
import collections

import gast

from . import syntax as S


def propagate_copies(code, candidates):
    """Remove copies ``a = b`` of adjoints: later uses of ``a`` read ``b`` instead.

    Only where that is plainly safe: ``a`` (one of ``candidates``) is assigned
    once in the whole function, all its uses follow the copy in the same block,
    and ``b`` is not reassigned before the last of them."""
    stores, loads = _counts(code)
    while _propagate(code, candidates, stores, loads):
        pass
    return code


def _propagate(block, candidates, stores, loads):
    """One pass over ``block`` and the blocks inside it; whether anything changed."""
    changed = False
    k = 0
    while k < len(block):
        stmt = block[k]
        for child in _blocks(stmt):
            changed |= _propagate(child, candidates, stores, loads)
        copy = _copy(stmt)
        if copy is None or copy[0] not in candidates or stores[copy[0]] != 1:
            k += 1
            continue
        a, b = copy
        rest = block[k + 1:]
        uses = [j for j, s in enumerate(rest) if _counts([s])[1][a]]
        if sum(_counts([rest[j]])[1][a] for j in uses) != loads[a]:
            k += 1
            continue  # a is read somewhere else too
        last = uses[-1] if uses else -1
        if any(_counts([s])[0][b] for s in rest[:last + 1]):
            k += 1
            continue  # b changes before a's last use
        for s in rest[:last + 1]:
            _Rename(a, b).visit(s)
        del block[k]
        stores[a] -= 1
        loads[b] += loads[a] - 1  # the copy's own read of b is gone
        loads[a] = 0
        changed = True
    return changed


def _counts(stmts):
    """How often each name is stored and loaded in ``stmts``."""
    stores, loads = collections.Counter(), collections.Counter()
    for s in stmts:
        for n in gast.walk(s):
            if type(n) is gast.Name:
                (stores if type(n.ctx) is gast.Store else loads)[n.id] += 1
    return stores, loads


def _copy(stmt):
    if (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Name)
            and stmt.targets[0].id != stmt.value.id):
        return stmt.targets[0].id, stmt.value.id
    return None


def _blocks(stmt):
    for field in ("body", "orelse"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
            yield block


class _Rename(gast.NodeTransformer):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit_Name(self, node):
        if node.id == self.old and isinstance(node.ctx, gast.Load):
            node.id = self.new
        return node


def live_names(code):
    """The names ``code`` may read before assigning them: what it needs from outside."""
    return _live(code, set())


def _live(stmts, live):
    for s in reversed(stmts):
        live = _live_before(s, live)
    return live


def _live_before(s, live):
    if isinstance(s, gast.If):
        return S.loaded_names(s.test) | _live(s.body, live) | _live(s.orelse, live)
    if isinstance(s, (gast.For, gast.While)):
        bound = S.names_in(s.target) if isinstance(s, gast.For) else set()
        head = set(live)
        while True:  # what a later iteration reads is live at the start of an earlier one
            new = head | (_live(s.body, head) - bound)
            if new == head:
                break
            head = new
        return head | S.loaded_names(s.iter if isinstance(s, gast.For) else s.test)
    if isinstance(s, gast.Assign) and not any(isinstance(n, gast.Subscript)
                                              for t in s.targets for n in gast.walk(t)):
        return (live - S.assigned_names([s])) | S.loaded_names(s.value)
    reads = S.loaded_names(s)
    if isinstance(s, gast.AugAssign):
        reads |= S.names_in(s.target)
    return live | reads

"""Peephole passes over generated code: fewer temporaries, same values."""
import gast

from . import syntax as S


def propagate_copies(code, candidates):
    """Remove copies ``a = b`` of adjoints: later uses of ``a`` read ``b`` instead.

    Only where that is plainly safe: ``a`` (one of ``candidates``) is assigned
    once in the whole function, all its uses follow the copy in the same block,
    and ``b`` is not reassigned before the last of them."""
    while _propagate_once(code, code, candidates):
        pass
    return code


def _propagate_once(block, whole, candidates):
    for k, stmt in enumerate(block):
        for child in _blocks(stmt):
            if _propagate_once(child, whole, candidates):
                return True
        copy = _copy(stmt)
        if copy is None or copy[0] not in candidates:
            continue
        a, b = copy
        if _count_stores(whole, a) != 1:
            continue
        rest = block[k + 1:]
        uses = [j for j, s in enumerate(rest) if a in S.loaded_names(s)]
        if _count_loads(whole, a) != sum(_count_loads([rest[j]], a) for j in uses):
            continue  # a is read somewhere else too
        last = uses[-1] if uses else -1
        if any(_count_stores([s], b) for s in rest[:last + 1]):
            continue
        for s in rest[:last + 1]:
            _Rename(a, b).visit(s)
        del block[k]
        return True
    return False


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


def _count_stores(stmts, name):
    return sum(1 for s in stmts for n in gast.walk(s) if isinstance(n, gast.Name)
               and n.id == name and isinstance(n.ctx, gast.Store))


def _count_loads(stmts, name):
    return sum(1 for s in stmts for n in gast.walk(s) if isinstance(n, gast.Name)
               and n.id == name and isinstance(n.ctx, gast.Load))


class _Rename(gast.NodeTransformer):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit_Name(self, node):
        if node.id == self.old and isinstance(node.ctx, gast.Load):
            node.id = self.new
        return node

"""Release: each local's value is let go right after its last read.

Generated code names every intermediate (A-normal form), and a name keeps its
array alive until the function returns: a forward pass would hold every
temporary of the function at once, a backward pass every saved value and every
adjoint it ever made.  :func:`release_points` finds, after each top-level
statement of a function's body, the locals that no later statement reads before
assigning them again; the passes insert ``del`` for them there (see
:func:`with_deletes`), or keep only the shape of a value the tape measures
(forward.py).  It runs on the finished code, after every analysis of it.

Invariant: a name is released only where it is bound on every path to that point
(a ``del`` of an unbound name raises), only if it is a local of the function and
no nested scope (lambda, comprehension) mentions it, and only if nothing after
reads that value; statements nested in branches and loops are left as they are.
Releasing changes no value, only when memory is freed.  Generated code writes in
place only into arrays it owns (adjoint_state.py); a ``del`` writes nothing.
"""
import gast

from . import syntax as S
from .optimize import unread_after

_SCOPES = (gast.Lambda, gast.FunctionDef, gast.ListComp, gast.SetComp, gast.DictComp,
           gast.GeneratorExp)


def release_points(stmts, params, live_out=frozenset(), keep=frozenset()):
    """(index, names) for each top-level statement of ``stmts`` after which ``names``
    (sorted, none of ``keep``) are bound and never read again; ``params`` are the
    function's parameters, ``live_out`` what the return that follows ``stmts`` reads.
    Not after the last statement: the return frees what is left."""
    seen = [_names_of(s) for s in stmts]
    local = (set(params).union(*(stored for _, stored, _ in seen)) - set(keep)
             - set().union(*(nested for _, _, nested in seen)))
    bound = set(params)
    points = []
    unread = unread_after(stmts, [names & local for names, _, _ in seen], live_out)
    for k, (s, (dead, kills)) in enumerate(zip(stmts, unread)):
        bound |= kills  # assigned on every path (a read proves less: the
        # forward pass repeats the user's reads that may raise UnboundLocalError)
        done = sorted((dead & bound) - _constants(s, local))
        if done and k < len(stmts) - 1:
            points.append((k, done))
            bound -= set(done)
    return points


def with_deletes(stmts, points):
    """``stmts`` with ``del a, b`` after each statement of ``points`` (see
    :func:`release_points`)."""
    return insert_after(stmts, {k: [delete(names)] for k, names in points})


def insert_after(stmts, inserts):
    """``stmts`` with the statements ``inserts[k]`` after statement ``k``."""
    out = []
    for k, s in enumerate(stmts):
        out.append(s)
        out.extend(inserts.get(k, ()))
    return out


def delete(names):
    return gast.Delete(targets=[S.name(n, gast.Del()) for n in names])


def _constants(s, local):
    """The names ``s`` binds to a constant (``n = None``, ``n = UNBOUND``): nothing to
    free, and a forward pass's leading definitions stay together."""
    if isinstance(s, gast.Assign) and (isinstance(s.value, gast.Constant) or isinstance(
            s.value, gast.Name) and s.value.id not in local):
        return S.assigned_names([s])
    return set()


def _names_of(s):
    """(every name statement ``s`` mentions, those it binds, those a lambda,
    comprehension or nested def in it mentions: a del could reach them through a scope
    that outlives the statement), in one walk of it."""
    names, stored, nested = set(), set(), set()
    for node in S.walk(s):
        if isinstance(node, gast.Name):
            names.add(node.id)
            if isinstance(node.ctx, gast.Store):
                stored.add(node.id)
        elif isinstance(node, _SCOPES):
            nested |= S.names_in(node)
    return names, stored, nested

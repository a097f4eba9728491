"""Keep the bare shape of an array that the backward pass reads only to unbroadcast to.

What the tape keeps of a value the backward pass only measures is ``shape_of(x)``
(runtime.ShapeOf: shape, size, rank, dtype, for any value, numbers too).  The
commonest such value is an operand of a broadcasting operation (``h + b``), whose
adjoint is ``unbroadcast(dh, h)``: that needs ``h``'s shape alone.  Such a name is
kept as ``h.shape``, an attribute read (a third of making a ShapeOf), and each of
those reads becomes ``unbroadcast_to(dh, h)``.

Invariant: a name is kept bare only if its shape is kept (``forward.kept_as_shape``:
measured, and neither a number nor an argument kept whole), it holds an ndarray
whenever the forward pass keeps it (facts record a rank of at least 1 for it, and one
assignment outside loops and branches binds it), and every read of it in the backward
pass is the second argument of ``unbroadcast(g, x)``; no unit with a batched pass,
whose walk reads the same tape (and measures with other helpers), is changed.
"""
import gast

from ..rules import helpers
from . import syntax as S
from .forward import kept_as_shape


def bare_shapes(code, measured, facts, refs):
    """The names of ``measured`` to keep as bare shapes; ``code`` (the backward pass)
    changed in place to read them so (see the module doc)."""
    calls = {}     # name -> the unbroadcast calls that read it
    others = set()  # names read any other way

    for stmt in code:
        _reads(stmt, None, calls, others, refs)
    bare = {n for n in calls if kept_as_shape(n, measured, facts) and n not in others
            and (facts.ranks.get(n) or 0) >= 1 and _bound_once(n, facts)}
    for name in bare:
        for call in calls[name]:
            call.func = refs.helper("unbroadcast_to")
    return bare


def _reads(node, parent, calls, others, refs):
    """Add each Name ``node`` reads to ``calls`` (with the unbroadcast call that reads
    it) or ``others``; ``parent``: the node holding ``node``."""
    if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
        if _unbroadcasts_to(parent, node, refs):
            calls.setdefault(node.id, []).append(parent)
        else:
            others.add(node.id)
        return
    for child in S.children(node):
        _reads(child, node, calls, others, refs)


def _bound_once(name, facts):
    """Whether ``name`` is bound by one assignment, outside every loop and branch, and
    never written into: bound whenever its shape is kept (a name a branch may leave
    unbound is kept as None, a value a loop rebinds goes on a stack: ShapeOf takes
    both), and never saved to be restored."""
    made = facts.bindings.get(name, ())
    return (len(made) == 1 and facts.counts.get(name) == 1 and not facts.loops_of[id(made[0])]
            and not facts.arms_of[id(made[0])] and name not in facts.written
            and name not in facts.updated)


def _unbroadcasts_to(parent, node, refs):
    """Whether ``node`` is x in ``unbroadcast(g, x)``."""
    return (isinstance(parent, gast.Call) and isinstance(parent.func, gast.Name)
            and refs.bound.get(parent.func.id) is helpers.unbroadcast
            and len(parent.args) == 2 and parent.args[1] is node and not parent.keywords)

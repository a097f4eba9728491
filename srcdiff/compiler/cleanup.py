"""``try: body finally: cleanup`` (no ``except``, no ``else``) as ``body`` then ``cleanup``.

On every path that reaches a gradient the two are the same: the body runs to its end,
then the cleanup.  The path on which the body raises has no gradient (the call
raises in both), but there compiled code raises without running the cleanup.  A
``return``, ``break`` or ``continue`` that leaves the body or the cleanup is refused:
Python runs the cleanup on its way out (and a cleanup's exit cancels the body's).
``try`` with ``except`` or ``else`` is left to the normaliser, which refuses it.

Invariant of the output: no ``try`` without handlers is left in the function
(nested ``def`` bodies included).
"""
import gast

_HINT = ("Set a flag in the try-block and test it after the cleanup, or move the "
         "try-block outside the function.")


def flatten_finally(node, source_map):
    """Replace each ``try``/``finally`` without handlers in ``node`` by its body then
    its cleanup, in place."""
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(node, field, None)
        if not stmts:
            continue
        out = []
        for s in stmts:
            flatten_finally(s, source_map)
            for handler in getattr(s, "handlers", ()):
                flatten_finally(handler, source_map)
            if isinstance(s, gast.Try) and not s.handlers and not s.orelse:
                for inner in s.body + s.finalbody:
                    _refuse_exits(inner, 0, source_map)
                out += s.body + s.finalbody
            else:
                out.append(s)
        setattr(node, field, out)


def _refuse_exits(node, loops, source_map):
    """Refuse a return, or a break or continue outside the loops ``node`` opens."""
    if isinstance(node, (gast.FunctionDef, gast.Lambda)):
        return
    if isinstance(node, gast.Return) or (isinstance(node, (gast.Break, gast.Continue))
                                         and loops == 0):
        word = type(node).__name__.lower()
        raise source_map.error(node, f"'{word}' out of a try/finally is not supported",
                               hint=_HINT)
    deeper = loops + isinstance(node, (gast.For, gast.While))
    for child in gast.iter_child_nodes(node):
        _refuse_exits(child, deeper if child in getattr(node, "body", ()) else loops,
                      source_map)

"""Assignment expressions (``n := v``): which ones A-normal form models exactly.

The normaliser lowers ``(n := v)`` where it meets it: ``n = v`` is emitted, and the
expression reads ``n`` (anf.py).  A-normal form emits the operations of an
expression in Python's order of evaluation, but it leaves a name that an operation
reads as it is, to be read when the operation runs: that is late if a walrus
rebinds the name in between, as in ``n + (n := 2)``.  And a condition is kept whole
(its value is a bool): a walrus inside it is taken out only from where Python always
evaluates it, first (``(n := f(x)) > 0 and n < 5``).

``check(node, source_map)`` refuses, before any pass rewrites the function, every
walrus whose lowering could differ from Python:

- one that a statement's expressions read (outside the walrus's own value) before it
  binds, in the order the normaliser lowers them (an assignment's targets first);
- two that bind the same name in one statement;
- one inside a lambda or a nested ``def`` (it binds in their scope), a dict or set
  display, a set comprehension or an f-string (kept whole), an ``assert``, a
  ``raise``, or a ``with`` item.

``refuse_kept(node, source_map)`` refuses a walrus still inside an expression the
normaliser keeps whole (the right operand of ``and``/``or``, a later link of a
chained comparison: Python evaluates it only sometimes).  Invariant: after the
normaliser, no NamedExpr is left in the function.
"""
import gast

from . import syntax as S

# the forms where a walrus is refused, and why
_REFUSED = {
    gast.Lambda: "inside a lambda (it binds in the lambda's own scope)",
    gast.FunctionDef: "inside a nested def (it binds in that function's scope)",
    gast.Dict: "inside a dict display", gast.Set: "inside a set display",
    gast.SetComp: "inside a set comprehension", gast.JoinedStr: "inside an f-string",
    gast.Assert: "in an assert", gast.Raise: "in a raise",
}
_HINT = "Assign the value on a line of its own before the statement."


def check(node, source_map):
    """Refuse the walruses of the FunctionDef ``node`` that the normaliser could not
    lower exactly (see the module docstring)."""
    if not any(type(n) is gast.NamedExpr for n in S.walk(node)):
        return
    for s in node.body:
        _check_stmt(s, source_map)


def _check_stmt(s, source_map):
    refused = _REFUSED.get(type(s))
    if refused is not None:
        _refuse_inside(s, refused, source_map)
        return
    if isinstance(s, gast.With):
        for item in s.items:
            _refuse_inside(item, "in a with item", source_map)
    exprs = {
        gast.Assign: lambda: s.targets + [s.value],
        gast.AugAssign: lambda: [s.target, s.value],
        gast.AnnAssign: lambda: [s.target, s.value],
        gast.Return: lambda: [s.value], gast.Expr: lambda: [s.value],
        gast.If: lambda: [s.test], gast.While: lambda: [s.test],
        gast.For: lambda: [s.iter],
    }.get(type(s))
    if exprs is not None:
        _check_order([e for e in exprs() if e is not None], source_map)
    for field in ("body", "orelse", "finalbody"):
        for inner in getattr(s, field, None) or ():
            _check_stmt(inner, source_map)


def _refuse_inside(node, where, source_map):
    for n in S.walk(node):
        if type(n) is gast.NamedExpr:
            raise source_map.error(n, f"an assignment expression (:=) {where} is not "
                                      "supported", hint=_HINT)


def _check_order(exprs, source_map):
    """Refuse a name read before a walrus binds it, and a name two walruses bind, in
    the expressions of one statement (in the order they are lowered)."""
    events = []
    for e in exprs:
        _events(e, events, source_map)
    bound = {}
    for kind, n, inside in events:
        if kind == "walrus":
            if n.target.id in bound:
                raise source_map.error(n, f"'{n.target.id}' is assigned twice by ':=' in "
                                          "one statement", hint=_HINT)
            bound[n.target.id] = n
    if not bound:
        return
    for k, (kind, n, inside) in enumerate(events):
        if kind != "load" or n.id not in bound:
            continue
        walrus = bound[n.id]
        later = any(e[1] is walrus for e in events[k + 1:])
        if later and walrus not in inside:
            raise source_map.error(walrus, f"'{n.id}' is read in the same statement before "
                                           "':=' assigns it", hint=_HINT)


def _events(node, events, source_map, inside=()):
    """Append to ``events`` the loads and walruses of ``node`` in the order of
    evaluation, each with the walruses whose value it is inside."""
    refused = _REFUSED.get(type(node))
    if refused is not None:
        _refuse_inside(node, refused, source_map)
        return
    if type(node) is gast.Name:
        if isinstance(node.ctx, gast.Load):
            events.append(("load", node, inside))
        return
    if type(node) is gast.NamedExpr:
        _events(node.value, events, source_map, inside + (node,))
        events.append(("walrus", node, inside))
        return
    if isinstance(node, (gast.ListComp, gast.GeneratorExp, gast.DictComp)):
        first = node.generators[0]
        _events(first.iter, events, source_map, inside)
        for g in node.generators:
            if g is not first:
                _events(g.iter, events, source_map, inside)
            for test in g.ifs:
                _events(test, events, source_map, inside)
        parts = [node.key, node.value] if isinstance(node, gast.DictComp) else [node.elt]
        for part in parts:
            _events(part, events, source_map, inside)
        return
    for field in node._fields:
        value = getattr(node, field, None)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, gast.AST):
                _events(child, events, source_map, inside)


def refuse_kept(node, source_map):
    """Refuse a walrus left in ``node``, an expression kept whole."""
    _refuse_inside(node, "where Python evaluates it only sometimes (the right operand of "
                         "and/or, a later link of a chained comparison) or in an "
                         "expression kept whole", source_map)

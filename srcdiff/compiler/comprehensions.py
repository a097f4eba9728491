"""Comprehensions as the loops they stand for.

``[e for x in xs if c]`` is ``t = []``, then ``for x in xs: if c: t.append(e)``; each
further ``for`` nests a loop; ``{k: v for ...}`` is ``t = {}``, then ``t[k] = v``.  The loop variables are renamed to fresh names, since
a comprehension's variables are its own (``x`` outside keeps its value).  A generator
expression handed straight to a call (``sum(f(x) for x in xs)``) is consumed by that
call before anything can change the names it reads, so it is the same loop; one
kept for later is not (it reads names when it runs), and is not rewritten here.

Invariant: the statements returned compute, into the fresh name returned, the list
the comprehension makes, and bind no name of the function.
"""
import gast

from . import syntax as S


def as_loops(node, names):
    """(statements, name of the list) for a ListComp or GeneratorExp ``node`` (of the
    dict, for a DictComp: ``t = {}``, then ``t[k] = v``), or None for a form not
    modelled (async comprehensions)."""
    if any(g.is_async for g in node.generators):
        return None
    renames = {}
    for g in node.generators:
        for n in S.names_in(g.target):
            renames[n] = names.fresh(n)
    result = names.fresh("items")
    rename = S.Substitute(renames)
    if isinstance(node, gast.DictComp):
        store = gast.Subscript(value=S.name(result), slice=rename.visit(S.copy_node(node.key)),
                               ctx=gast.Store())
        body = [S.assign(store, rename.visit(S.copy_node(node.value)))]
        empty = gast.Dict(keys=[], values=[])
    else:
        body = [gast.Expr(value=gast.Call(
            func=gast.Attribute(value=S.name(result), attr="append", ctx=gast.Load()),
            args=[rename.visit(S.copy_node(node.elt))], keywords=[]))]
        empty = gast.List(elts=[], ctx=gast.Load())
    for g in reversed(node.generators):
        for test in reversed(g.ifs):
            body = [gast.If(test=rename.visit(S.copy_node(test)), body=body, orelse=[])]
        body = [gast.For(target=rename.visit(S.copy_node(g.target)),
                         iter=rename.visit(S.copy_node(g.iter)) if g is not node.generators[0]
                         else S.copy_node(g.iter),  # the first iterable: outside its scope
                         body=body, orelse=[], type_comment=None)]
    stmts = [S.assign(result, empty)] + body
    for st in stmts:
        for n in S.walk(st):
            if isinstance(n, (gast.stmt, gast.expr)) and not hasattr(n, "lineno"):
                gast.copy_location(n, node)
    return stmts, result

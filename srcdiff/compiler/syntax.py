"""Small builders for gast syntax trees: templates are parsed from text."""
import ast

import gast

from .convert import to_gast


def name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def const(value):
    return gast.Constant(value=value, kind=None)


def assign(target, value):
    if isinstance(target, str):
        target = name(target, gast.Store())
    return gast.Assign(targets=[target], value=value, type_comment=None)


def expr(text):
    """The expression ``text`` as a gast node (without a location of its own)."""
    return _unlocated(to_gast(ast.parse(text).body[0].value))


def _unlocated(node):
    for n in walk(node):
        for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if hasattr(n, attr):
                delattr(n, attr)
    return node


def stmts(text, **subs):
    """The statements of ``text``, with each Name in ``subs`` replaced by its node.

    A substitute may be a node or a string (a name)."""
    tree = _unlocated(to_gast(ast.parse(text)))
    if subs:
        tree = Substitute(subs).visit(tree)
    return tree.body


def stmt(text, **subs):
    (node,) = stmts(text, **subs)
    return node


class Substitute(gast.NodeTransformer):
    """Replace names by expressions (rule inlining, templates)."""

    def __init__(self, subs):
        self.subs = subs

    def visit_Name(self, node):
        new = self.subs.get(node.id)
        return node if new is None else _substitute(node.ctx, new)


def _substitute(ctx, new):
    """What replaces a Name (of context ``ctx``) by ``new``: a node (copied), or a name
    (a str)."""
    if isinstance(new, str):
        return gast.Name(id=new, ctx=ctx, annotation=None, type_comment=None)
    return copy_node(new)


def copy_node(node, subs=None):
    """A deep copy of a syntax tree (several times faster than ``copy.deepcopy``); with
    ``subs``, ``Substitute(subs).visit(copy_node(node))`` in one walk."""
    if isinstance(node, list):
        return [copy_node(n, subs) for n in node]
    if not isinstance(node, gast.AST):
        return node  # identifiers, constants' values, None
    if subs and type(node) is gast.Name and subs.get(node.id) is not None:
        return _substitute(copy_node(node.ctx), subs[node.id])
    new = node.__class__.__new__(node.__class__)
    for field in node._fields:
        setattr(new, field, copy_node(getattr(node, field, None), subs))
    for attr in node._attributes:
        if hasattr(node, attr):
            setattr(new, attr, getattr(node, attr))
    return new


def walk(node):
    """Every node of the tree ``node``, itself first: ``gast.walk``'s nodes in its
    (breadth-first) order, as a list made without its generators (the compiler's
    passes walk every statement several times)."""
    found = [node]
    for n in found:  # grows as it goes
        found.extend(children(n))
    return found


def children(node):
    """The nodes right under ``node``, in order: ``gast.iter_child_nodes``'s, as a list
    (the recursive walks of the passes ask it of every node)."""
    found = []
    for field in node._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, gast.AST):
                    found.append(item)
        elif isinstance(value, gast.AST):
            found.append(value)
    return found


def transform_children(node, visit):
    """Replace each child of ``node`` by ``visit(child)``, in order, as the generic visit
    of a NodeTransformer whose ``visit`` returns one node does, in a plain loop."""
    for field in node._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            value[:] = [visit(v) if isinstance(v, gast.AST) else v for v in value]
        elif isinstance(value, gast.AST):
            setattr(node, field, visit(value))
    return node


def names_in(node):
    """The set of Name ids loaded or stored anywhere in ``node``."""
    return {n.id for n in walk(node) if isinstance(n, gast.Name)}


def assigned_names(stmts, into=False):
    """The names ``stmts`` bind, at any depth; with ``into``, also the arrays they
    write into (x in ``x[i] = v``)."""
    found = set()
    for s in stmts:
        for n in walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                found.add(n.id)
            elif into and isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
                found |= {m.id for m in walk(n.value) if isinstance(m, gast.Name)}
    return found


def loaded_names(node):
    """The ids of the Names ``node`` reads."""
    return _names_by_context(node, set(), None)[0]


def loads_and_stores(stmt):
    """``(loaded_names(stmt), assigned_names([stmt]))`` of a simple statement (one
    whose Names carry no annotation: any but a def), in one walk."""
    return _names_by_context(stmt, set(), set())


def _names_by_context(node, loads, stores):
    """Add to ``loads`` the ids of the Names ``node`` reads, and to ``stores`` (unless
    None) those it binds; a Name's own annotation is not walked.  (A loop over a stack:
    the passes ask it of every statement, and it costs less than recursion.)"""
    todo = [node]
    while todo:
        n = todo.pop()
        if type(n) is gast.Name:
            ctx = type(n.ctx)
            if ctx is gast.Load:
                loads.add(n.id)
            elif ctx is gast.Store and stores is not None:
                stores.add(n.id)
            continue
        for field in n._fields:  # children(n), inlined: this runs on every node
            value = getattr(n, field, None)
            if type(value) is list:
                todo.extend(item for item in value if isinstance(item, gast.AST))
            elif isinstance(value, gast.AST):
                todo.append(value)
    return loads, stores


def is_atom(node):
    return isinstance(node, (gast.Name, gast.Constant))


def is_boolean(node):
    """Whether ``node`` is a comparison or ``and``/``or``/``not``: its value is a bool,
    which never carries a gradient, so it is kept whole and needs no adjoint.

    ``~x`` is not one: it is bitwise on ints, and no float has it."""
    return (isinstance(node, (gast.Compare, gast.BoolOp))
            or (isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not)))

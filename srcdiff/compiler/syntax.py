"""Small builders for gast syntax trees: templates are parsed from text."""
import gast


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
    return _unlocated(gast.parse(text).body[0].value)


def _unlocated(node):
    for n in gast.walk(node):
        for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if hasattr(n, attr):
                delattr(n, attr)
    return node


def stmts(text, **subs):
    """The statements of ``text``, with each Name in ``subs`` replaced by its node.

    A substitute may be a node or a string (a name)."""
    tree = _unlocated(gast.parse(text))
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
        if new is None:
            return node
        if isinstance(new, str):
            return gast.Name(id=new, ctx=node.ctx, annotation=None, type_comment=None)
        return copy_node(new)


def copy_node(node):
    """A deep copy of a syntax tree (several times faster than ``copy.deepcopy``)."""
    if isinstance(node, list):
        return [copy_node(n) for n in node]
    if not isinstance(node, gast.AST):
        return node  # identifiers, constants' values, None
    new = node.__class__.__new__(node.__class__)
    for field in node._fields:
        setattr(new, field, copy_node(getattr(node, field, None)))
    for attr in node._attributes:
        if hasattr(node, attr):
            setattr(new, attr, getattr(node, attr))
    return new


def names_in(node):
    """The set of Name ids loaded or stored anywhere in ``node``."""
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def assigned_names(stmts, into=False):
    """The names ``stmts`` bind, at any depth; with ``into``, also the arrays they
    write into (x in ``x[i] = v``)."""
    found = set()
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                found.add(n.id)
            elif into and isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
                found |= {m.id for m in gast.walk(n.value) if isinstance(m, gast.Name)}
    return found


def loaded_names(node):
    """The ids of the Names ``node`` reads."""
    found = set()

    def visit(n):
        if type(n) is gast.Name:
            if type(n.ctx) is gast.Load:
                found.add(n.id)
            return
        for field in n._fields:
            value = getattr(n, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, gast.AST):
                        visit(item)
            elif isinstance(value, gast.AST):
                visit(value)

    visit(node)
    return found


def is_atom(node):
    return isinstance(node, (gast.Name, gast.Constant))


def is_boolean(node):
    """Whether ``node`` is a comparison or ``and``/``or``/``not``: its value is a bool,
    which never carries a gradient, so it is kept whole and needs no adjoint.

    ``~x`` is not one: it is bitwise on ints, and no float has it."""
    return (isinstance(node, (gast.Compare, gast.BoolOp))
            or (isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not)))

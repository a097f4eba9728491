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
    import copy
    return copy.deepcopy(node)


def names_in(node):
    """The set of Name ids loaded or stored anywhere in ``node``."""
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def loaded_names(node):
    return {n.id for n in gast.walk(node)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def is_atom(node):
    return isinstance(node, (gast.Name, gast.Constant))

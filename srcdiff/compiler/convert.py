"""Trees converted between ``ast`` and gast, as gast's own converters make them.

``gast.ast_to_gast`` and ``gast.gast_to_ast`` are visitors that dispatch by name and
build a keyword dictionary for every node: for a long function they were a large
part of a compile (parsing the function one way, writing the generated source the
other).  These are plain recursions: the nodes whose conversion is not field for
field are written out (a Name, a parameter, which gast writes as a Name, an
exception handler's name, a def's type parameters, an assignment's type comment);
every other node is copied field by field, with its location; the type parameters
of Python 3.12 (``def f[T]``), which the compiler refuses anyway, go to gast itself.

Invariant: ``to_gast(tree)`` and ``to_ast(tree)`` equal gast's results (``ast.dump``
with attributes; tests/test_compile_speed.py checks every statement and expression
form, and the trees of generated code).
"""
import ast
import sys

import gast

_MISSING = object()
_TYPE_PARAMS = ("TypeVar", "TypeVarTuple", "ParamSpec")  # Python 3.12's: gast's own
_GAST_ADDS_TYPE_PARAMS = sys.version_info < (3, 12)  # ast's defs have none before


def to_gast(node):
    """The gast tree of the ``ast`` tree ``node``."""
    if type(node) is list:
        return [to_gast(n) for n in node]
    if not isinstance(node, ast.AST):
        return node  # identifiers, constants' values, None
    kind = type(node)
    if kind is ast.Name:
        new = gast.Name(node.id, to_gast(node.ctx), None, None)
    elif kind is ast.arg:
        new = gast.Name(node.arg, gast.Param(), to_gast(node.annotation), node.type_comment)
    elif kind is ast.ExceptHandler and node.name:
        new = gast.ExceptHandler(to_gast(node.type), gast.Name(node.name, gast.Store(), None,
                                                               None), to_gast(node.body))
    elif kind.__name__ in _TYPE_PARAMS:
        return gast.ast_to_gast(node)
    else:
        cls = getattr(gast, kind.__name__, None)
        if cls is None:
            return None  # no such node in gast (as gast's converter)
        new = cls()
        for field in node._fields:
            value = getattr(node, field, _MISSING)
            if value is not _MISSING:
                setattr(new, field, to_gast(value))
        if _GAST_ADDS_TYPE_PARAMS and kind in (ast.FunctionDef, ast.AsyncFunctionDef,
                                               ast.ClassDef):
            new.type_params = []
    return _located(new, node)


def to_ast(node):
    """The ``ast`` tree of the gast tree ``node``."""
    if type(node) is list:
        return [to_ast(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    kind = type(node)
    context = _CONTEXTS.get(kind)
    if context is not None:
        return context
    if kind is gast.Name:
        new = ast.Name(id=node.id, ctx=to_ast(node.ctx))
    elif kind is gast.arguments:
        return ast.arguments(
            posonlyargs=[_arg(a) for a in node.posonlyargs], args=[_arg(a) for a in node.args],
            vararg=_arg(node.vararg), kwonlyargs=[_arg(a) for a in node.kwonlyargs],
            kw_defaults=to_ast(node.kw_defaults), kwarg=_arg(node.kwarg),
            defaults=to_ast(node.defaults))
    elif kind is gast.ExceptHandler and node.name:
        new = ast.ExceptHandler(type=to_ast(node.type), name=node.name.id,
                                body=to_ast(node.body))
    elif kind is gast.Assign:  # its type comment dropped, as gast's converter does
        new = ast.Assign(targets=to_ast(node.targets), value=to_ast(node.value))
    elif kind.__name__ in _TYPE_PARAMS:
        return gast.gast_to_ast(node)
    else:
        cls = getattr(ast, kind.__name__, None)
        if cls is None:
            return None
        new = cls()
        for field in cls._fields:
            value = getattr(node, field, _MISSING)
            if value is not _MISSING:
                setattr(new, field, to_ast(value))
    return _located(new, node)


def _arg(name):
    """The ``ast.arg`` of a parameter (a gast Name), or None."""
    if name is None:
        return None
    return _located(ast.arg(arg=name.id, annotation=to_ast(name.annotation),
                            type_comment=name.type_comment), name)


def _located(new, node):
    for attr in node._attributes:
        value = getattr(node, attr, _MISSING)
        if value is not _MISSING:
            setattr(new, attr, value)
    return new


# an ast context holds nothing: one of each serves every node unparsed
_CONTEXTS = {gast.Load: ast.Load(), gast.Store: ast.Store(), gast.Del: ast.Del()}

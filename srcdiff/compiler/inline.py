"""Inline derivative rules: a rule's lambda body becomes an expression of the
generated code, with its parameters replaced by the names at the call site.

The rule table holds the functions; their syntax comes from their source file.
A lambda is found by the position of its body (Python 3.11 code objects carry
line and column of every instruction), so several lambdas may share a line.
Either is inlined only if it compiles to the rule's own code (``parse.compiles_to``):
a rule whose file changed after import is called, not inlined.
"""
import functools

import gast

from . import syntax as S
from .errors import CompileError
from .parse import find_lambda, read_def


class RuleSyntax:
    """A vjp function's syntax: parameters, defaults, and the returned expression."""

    def __init__(self, fn, params, defaults, vararg, body, argnum, kwonly=(), varkw=None):
        self.fn = fn
        self.params = params      # parameter names after (i,) g, ans; keyword-only ones last
        self.kwonly = kwonly      # the keyword-only ones (after *args): never positional
        self.defaults = defaults  # name -> default expression node
        self.vararg = vararg      # the *args parameter's name, or None
        self.varkw = varkw        # the **kwargs parameter's name, or None: never inlined
        self.body = body          # the expression a call returns
        self.argnum = argnum      # the parameter holding the input's index, or None
        self.globals = fn.__globals__

    @functools.lru_cache(maxsize=None)
    def reads(self):
        """The names the body reads (parameters included)."""
        return frozenset(S.loaded_names(self.body))

    @functools.lru_cache(maxsize=None)
    def globals_used(self):
        """Free names of the body that the rule's module defines (np, unbroadcast, ...)."""
        local = set(self.params) | {self.vararg, self.argnum, "g", "ans"}
        return frozenset(n for n in S.loaded_names(self.body) if n not in local)

    def inline(self, i, g, ans, args, kwargs):
        """The body with ``g``, ``ans``, the inputs and keywords substituted.

        ``args`` are nodes for the primitive's positional inputs; ``kwargs``
        maps keyword names to nodes."""
        subs = {"g": g, "ans": ans}
        if self.argnum is not None:
            subs[self.argnum] = S.const(i)
        names = self.params
        positional = len(names) - len(self.kwonly)
        for k, p in enumerate(names):
            if k < min(len(args), positional):
                subs[p] = args[k]
            elif p in kwargs:
                subs[p] = kwargs[p]
            elif p in self.defaults:
                subs[p] = self.defaults[p]
            else:
                raise TypeError(f"rule {self.fn.__qualname__} needs argument {p!r}")
        if self.vararg is not None:
            subs[self.vararg] = gast.Tuple(elts=list(args[positional:]), ctx=gast.Load())
        for p, default in self.defaults.items():
            subs.setdefault(p, default)
        return S.copy_node(self.body, subs)


def matrix_form(helper, args):
    """What rule helper ``helper`` computes on matrices (``helper.matrices``, see
    ``rules.helpers.for_matrices``) with its parameters replaced by the nodes ``args``;
    None if that form's source cannot be read (the helper is called then)."""
    node = _matrix_lambda(helper.matrices)
    if node is None:
        return None
    return S.copy_node(node.body, dict(zip([a.id for a in node.args.args], args)))


@functools.lru_cache(maxsize=None)
def _matrix_lambda(form):
    return _find_lambda(form)


@functools.lru_cache(maxsize=None)
def rule_syntax(fn):
    """The :class:`RuleSyntax` of a vjp function (a lambda or a def)."""
    argnum_fn = None
    if isinstance(fn, functools.partial):  # Rule.vjp(i) of an argnum rule
        argnum_fn = fn.func
        fn = fn.func
    node = _find_lambda(fn) or _find_def(fn)
    if node is None:
        raise LookupError(f"cannot read the source of the rule {fn!r}")
    args = node.args
    names = [a.id for a in args.args]
    argnum = None
    if argnum_fn is not None:
        argnum, names = names[0], names[1:]
    if names[:2] != ["g", "ans"]:
        raise LookupError(f"rule {fn.__qualname__} must take (g, ans, ...) first")
    params = names[2:]
    defaults = dict(zip([a.id for a in args.args][len(args.args) - len(args.defaults):],
                        args.defaults))
    defaults.update({a.id: d for a, d in zip(args.kwonlyargs, args.kw_defaults)
                     if d is not None})
    kwonly = tuple(a.id for a in args.kwonlyargs)
    params += kwonly
    vararg = args.vararg.id if args.vararg is not None else None
    varkw = args.kwarg.id if args.kwarg is not None else None
    return RuleSyntax(fn, params, defaults, vararg, node.body if isinstance(
        node, gast.Lambda) else _returned(node), argnum, kwonly, varkw)


def _find_lambda(fn):
    node = find_lambda(fn)
    return gast.ast_to_gast(node) if node is not None else None


def _find_def(fn):
    try:
        return gast.ast_to_gast(read_def(fn)[0])
    except CompileError:
        return None


def _returned(node):
    body = [s for s in node.body if not (isinstance(s, gast.Expr)
                                         and isinstance(s.value, gast.Constant))]
    if len(body) != 1 or not isinstance(body[0], gast.Return):
        raise LookupError(f"rule {node.name} must be a single return statement to be inlined")
    return body[0].value

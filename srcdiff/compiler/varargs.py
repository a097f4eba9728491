"""``*args`` as parameters of their own: a unit is compiled for a number of extra
arguments, as it is for an active mask.

``def f(x, *args)`` compiled for two extra arguments is ``def f(x, args_0, args_1)``:
``args[k]`` (a constant k) is ``args_k``, ``g(*args)`` passes ``args_0, args_1``, and
any other read of ``args`` is the tuple literal ``(args_0, args_1)``, which the later
passes model (indexing, ``len``) or refuse.  Invariant of the output: the function
has no ``*args`` and does not name it; a body that rebinds it, or a ``*args``
parameter beside defaults or keyword-only parameters, is refused (``**kwargs``
follows: kwargs.py).
"""
import gast

from . import syntax as S


def expand_varargs(node, count, names, source_map):
    """Give the FunctionDef ``node``'s ``*args`` ``count`` parameters of their own."""
    vararg = node.args.vararg
    if vararg is None:
        return
    if node.args.defaults or node.args.kwonlyargs:
        raise source_map.error(node, f"cannot compile {node.name}: *args beside defaults "
                                     "or keyword-only parameters is not supported",
                               hint="Pass arrays as ordinary parameters.")
    name = vararg.id
    if count < 0:
        raise source_map.error(node, f"{node.name}() is missing positional arguments",
                               hint=f"Pass every parameter before *{name}.")
    extras = [names.fresh(f"{name}_{k}") for k in range(count)]
    node.args.vararg = None
    expand_parameter(node, vararg, extras, _Expand(name, extras, source_map), source_map)


def expand_parameter(node, param, params, expand, source_map):
    """Replace the parameter ``param`` (``*args``, ``**kwargs``; already taken off
    ``node.args``) by ``params``, after the others, and its reads by ``expand``'s;
    refuse a body that binds it again."""
    for n in S.walk(node):
        if isinstance(n, gast.Name) and n.id == param.id and not isinstance(
                n.ctx, gast.Load) and n is not param:
            raise source_map.error(n, f"cannot compile {node.name}: it binds {param.id} "
                                      "again",
                                   hint=f"Give the new value another name than {param.id}.")
    node.args.args = node.args.args + [S.name(p, gast.Param()) for p in params]
    node.body = [expand.visit(s) for s in node.body]


class _Expand(gast.NodeTransformer):
    def __init__(self, name, extras, source_map):
        self.name = name
        self.extras = extras
        self.source_map = source_map

    def visit_Name(self, node):
        if node.id != self.name:
            return node
        return gast.copy_location(gast.Tuple(elts=[S.name(e) for e in self.extras],
                                             ctx=gast.Load()), node)

    def visit_Subscript(self, node):
        index = node.slice
        if (isinstance(node.value, gast.Name) and node.value.id == self.name
                and isinstance(index, gast.Constant) and type(index.value) is int):
            k = index.value
            if not -len(self.extras) <= k < len(self.extras):
                raise self.source_map.error(node, f"{self.name}[{k}]: there are "
                                                  f"{len(self.extras)} extra arguments",
                                            hint=f"Pass at least {k + 1 if k >= 0 else -k} "
                                                 "arguments in that place, or index "
                                                 "within them.")
            return gast.copy_location(S.name(self.extras[k]), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        args = []
        for a in node.args:  # g(*args) after visiting: g(*(args_0, args_1))
            if isinstance(a, gast.Starred) and isinstance(a.value, gast.Tuple):
                args += a.value.elts
            else:
                args.append(a)
        node.args = args
        return node

"""Starred call arguments of a length known when compiling, spliced in by position.

``f(*(a, b))`` is ``f(a, b)``; ``f(x, *t, y)`` of a name ``t`` that the function
binds once, to a tuple or list display without ``*`` (``t = (a, b)``), is
``f(x, t[0], t[1], y)``: the items ``f(*t)`` would pass, read where it reads them.
A list is spliced so only if nothing can change its length: each read of it is an
index, a ``*`` argument, ``len`` or a loop over it.  (``*args`` of the function's
own parameters is spliced before this: varargs.py.)

Invariant of the output: no call of the function's own scope (nested ``def`` and
lambda bodies are their own) has a starred argument; any other ``*`` argument (a
parameter, a call's result, a name bound twice) is a CompileError.
"""
import gast

from . import syntax as S

_HINT = "Bind the values to a tuple once (t = (a, b)) and pass *t, or pass them one by one."


def splice_starred(node, source_map):
    """Splice the starred arguments of the FunctionDef ``node``'s calls in place."""
    calls = [n for n in _own_scope(node.body) if isinstance(n, gast.Call)
             and any(isinstance(a, gast.Starred) for a in n.args)]
    if not calls:
        return
    bindings = _bindings(node)
    for call in calls:
        args = []
        for a in call.args:
            args += _items(a, bindings, source_map) if isinstance(a, gast.Starred) else [a]
        call.args = args


def _items(starred, bindings, source_map):
    value = starred.value
    if isinstance(value, (gast.Tuple, gast.List)) and not any(
            isinstance(e, gast.Starred) for e in value.elts):
        return value.elts
    if isinstance(value, gast.Name):
        made = bindings.get(value.id)
        if made is not None and made[1] is not None:
            return [gast.copy_location(gast.Subscript(value=S.name(value.id), slice=S.const(k),
                                                      ctx=gast.Load()), starred)
                    for k in range(made[1])]
        why = made[0] if made is not None else "it is not bound in the function"
        raise source_map.error(starred, f"*{value.id}: its length is not known when "
                                        f"compiling ({why})", hint=_HINT)
    raise source_map.error(starred, "a * argument of a length not known when compiling",
                           hint=_HINT)


def _bindings(node):
    """{name: (why its length is unknown, or None; its length, or None)} of the
    names the function binds (parameters too)."""
    sites = {}
    for n in S.walk(node):
        if type(n) is gast.Name and not isinstance(n.ctx, gast.Load) and n is not node:
            sites.setdefault(n.id, []).append(n)
    displays = {}
    for n in _own_scope(node.body):
        if (isinstance(n, gast.Assign) and len(n.targets) == 1
                and type(n.targets[0]) is gast.Name
                and isinstance(n.value, (gast.Tuple, gast.List))
                and not any(isinstance(e, gast.Starred) for e in n.value.elts)):
            displays[n.targets[0].id] = n.value
    grown = _lists_that_may_change(node, displays)
    found = {}
    for name, where in sites.items():
        display = displays.get(name)
        if len(where) > 1:
            found[name] = ("it is bound more than once", None)
        elif display is None:
            found[name] = ("it is not bound to a tuple or list display", None)
        elif name in grown:
            found[name] = ("the list may change", None)
        else:
            found[name] = (None, len(display.elts))
    return found


def _lists_that_may_change(node, displays):
    """The names of ``displays`` bound to a list that are read other than by an index,
    a ``*``, ``len`` or a loop over them."""
    lists = {name for name, d in displays.items() if isinstance(d, gast.List)}
    if not lists:
        return set()
    safe = set()
    for n in S.walk(node):
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Load):
            safe.add(id(n.value))
        elif isinstance(n, gast.Starred):
            safe.add(id(n.value))
        elif (isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == "len"
              and len(n.args) == 1):
            safe.add(id(n.args[0]))
        elif isinstance(n, (gast.For, gast.comprehension)):
            safe.add(id(n.iter))
    return {n.id for n in S.walk(node) if type(n) is gast.Name and n.id in lists
            and isinstance(n.ctx, gast.Load) and id(n) not in safe}


def _own_scope(stmts):
    """Every node of ``stmts`` outside nested defs and lambdas."""
    found = []
    todo = list(stmts)
    while todo:
        n = todo.pop()
        found.append(n)
        if isinstance(n, (gast.FunctionDef, gast.Lambda)):
            continue
        todo.extend(gast.iter_child_nodes(n))
    return found

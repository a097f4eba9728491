"""Containers changed inside an expression: refused.

The compiler models a change to a list or dict as a statement of its own
(``xs.append(v)``, ``d[k] = v``, which normalize.py and containers.py rewrite as
assignments of the container); a comprehension or a condition is kept whole, so a
change made inside one (``[acc.append(v) for v in xs]``, ``if acc.append(v) is None``)
would go unseen, and with it the gradient that flows through the container.

``check(node, source_map, resolve)`` refuses, before any pass rewrites the function,
every call of a method that changes a local object in place (``append``, ``update``,
``__setitem__``...) that is not itself a whole statement (or, for ``pop``, the whole
value of an assignment).  Invariant: after it, a
container changes only by statements the passes model or refuse on their own.
"""
import gast

from . import syntax as S

# Methods of list, dict and set that change the object they are called on.
CHANGING = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
    "setdefault", "popitem", "add", "discard", "__setitem__", "__delitem__", "__iadd__"})


def check(node, source_map, resolve):
    """Refuse a call of a ``CHANGING`` method of a local object (one ``resolve`` does
    not find: not ``np.add``) anywhere in ``node`` but as a statement."""
    whole = {id(s.value) for s in S.walk(node) if isinstance(s, gast.Expr) or (
        isinstance(s, gast.Assign) and _pop(s.value))}  # v = xs.pop(): mutators.py
    for n in S.walk(node):
        if (isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                and n.func.attr in CHANGING and id(n) not in whole
                and _local(n.func.value, resolve)):
            raise source_map.error(
                n, f".{n.func.attr}(...) inside an expression changes its object where the "
                   "compiler does not see it: a gradient through it would be lost",
                hint="Call it as a statement of its own (a for loop instead of a "
                     "comprehension; v = xs.pop() for a pop).")


def _pop(node):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr == "pop")


def _local(node, resolve):
    try:
        resolve(node)
    except KeyError:
        return True
    return False

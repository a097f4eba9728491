"""``functools.reduce(f, xs[, init])`` as the loop it runs.

``seq = list(xs)`` (the items Python's reduce iterates over, once), then
``acc = init`` (``seq[0]``, after a ``TypeError`` as Python's for an empty ``seq``)
and ``acc = f(acc, seq[k])`` for each further ``k``: a loop, a call and item reads,
which the compiler models.  ``f`` is called as written, except a ``lambda a, b: e``,
whose body is inlined with its parameters renamed to fresh names (a lambda cannot be
passed), and ``operator.add`` and its kin, which are the operators they name.

Invariant: the statements returned compute, into the fresh name returned, what
``reduce`` returns (or raise what it raises), and bind no name of the function.
"""
import operator

import gast

from . import syntax as S

_OPERATORS = {operator.add: gast.Add, operator.sub: gast.Sub, operator.mul: gast.Mult,
              operator.truediv: gast.Div, operator.matmul: gast.MatMult,
              operator.pow: gast.Pow}


def as_loop(call, names, resolve, source_map):
    """(statements, name of the result) for ``call``, a call of ``functools.reduce``;
    a CompileError for a function or arguments not modelled."""
    args = list(call.args) + [k.value for k in call.keywords if k.arg == "initial"]
    if not 2 <= len(args) <= 3 or any(k.arg != "initial" for k in call.keywords):
        raise source_map.error(call, "functools.reduce takes a function, an iterable and "
                               "an optional initial value", hint="reduce(f, xs, init)")
    apply = _applier(args[0], names, resolve, source_map)
    seq, acc, k = names.fresh("seq"), names.fresh("acc"), names.fresh("k")
    out = [S.assign(seq, gast.Call(func=S.name("list"), args=[args[1]], keywords=[]))]
    if len(args) == 3:
        out.append(S.assign(acc, args[2]))
        start = S.const(0)
    else:
        out += S.stmts(f"if len({seq}) == 0:\n"
                       "    raise TypeError('reduce() of empty iterable with no initial "
                       f"value')\n{acc} = {seq}[0]")
        start = S.const(1)
    item = gast.Subscript(value=S.name(seq), slice=S.name(k), ctx=gast.Load())
    loop = gast.For(target=S.name(k, gast.Store()), iter=gast.Call(
        func=S.name("range"), args=[start, gast.Call(func=S.name("len"), args=[S.name(seq)],
                                                     keywords=[])], keywords=[]),
        body=apply(acc, item), orelse=[], type_comment=None)
    out.append(loop)
    for st in out:
        for n in S.walk(st):
            if isinstance(n, (gast.stmt, gast.expr)) and not hasattr(n, "lineno"):
                gast.copy_location(n, call)
    return out, acc


def _applier(fn, names, resolve, source_map):
    """A function of (accumulator name, item expression) giving the loop's body."""
    if isinstance(fn, gast.Lambda):
        a = fn.args
        params = [p.id for p in a.posonlyargs + a.args]
        if (len(params) != 2 or a.vararg or a.kwarg or a.kwonlyargs or a.defaults
                or any(isinstance(n, (gast.NamedExpr, gast.Lambda)) for n in S.walk(fn.body))):
            raise source_map.error(fn, "cannot inline this lambda into functools.reduce: "
                                   "only lambda a, b: <expression> is inlined",
                                   hint="Write the reduction as a for loop.")
        fresh = [names.fresh(p) for p in params]
        body = S.Substitute(dict(zip(params, fresh))).visit(S.copy_node(fn.body))
        return lambda acc, item: [S.assign(fresh[0], S.name(acc)), S.assign(fresh[1], item),
                                  S.assign(acc, S.copy_node(body))]
    try:
        op = _OPERATORS.get(resolve(fn))
    except (KeyError, TypeError):
        op = None
    if op is not None:
        return lambda acc, item: [S.assign(acc, gast.BinOp(left=S.name(acc), op=op(),
                                                           right=item))]
    return lambda acc, item: [S.assign(acc, gast.Call(func=S.copy_node(fn), args=[
        S.name(acc), item], keywords=[]))]

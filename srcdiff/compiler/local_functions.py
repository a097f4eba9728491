"""Local functions inlined where they are called: the first pass over a body.

A local function is a nested ``def`` or a lambda bound to a name (``f = lambda t:
...``), defined at the top level of the function's body and bound once.  Each call
of it is replaced by its body, with its parameters and locals renamed to fresh
names, bound to the call's arguments; an early ``return`` is lowered to flags
(exits.py).  A Python closure reads the enclosing variables when it is called,
which is what the body inlined at the call reads.

Invariant of the output: no local function is left: no nested ``def``, no lambda
bound to a name, no call of either.  What the pass does not model is refused: a
local function that escapes (read other than by calling it: returned, stored,
passed on), is rebound, recursive, defined in a block or a class, decorated,
declares ``global``/``nonlocal``, takes ``*args``/``**kwargs``/keyword-only
parameters or a default that is not a constant, or is called where inlining would
change when its body runs (a ``while`` test, a branch of ``x if c else y``, an
operand of ``and``/``or`` after the first, a comprehension, a lambda, a dict
literal, an assignment's target).  A write into an enclosing array (``out[i] = v``)
is a statement of the function once inlined, modelled as any other; what the
statement read before the call is computed first (see ``_Calls``).
"""
import gast

from . import syntax as S
from .exits import ExitLowering, has_early_return


def inline_local_functions(node, names, source_map):
    """Inline the local functions of the FunctionDef ``node`` in place."""
    defs = _definitions(node.body, source_map)
    if defs:
        _check_uses(node, defs, source_map)
        node.body = _Inliner(defs, names, source_map).block(node.body, ())


def _definitions(body, source_map):
    """name -> the FunctionDef of each local function (a lambda as a one-line def);
    refuse one defined anywhere but the top level."""
    defs = {}
    top = set(map(id, body))
    for s in body:
        for n in S.walk(s):
            fdef = as_def(n)
            if fdef is None:
                continue
            if id(n) not in top:
                raise source_map.error(n, "a local function is supported only when it is "
                                          "defined at the top level of the function's body",
                                       hint="Define it at the top of the function, or at "
                                            "module level.")
            if fdef.name in defs:
                raise source_map.error(n, f"the local function {fdef.name!r} is defined twice",
                                       hint="Give each local function its own name.")
            _check_def(fdef, source_map)
            defs[fdef.name] = fdef
    return defs


def as_def(s):
    """The FunctionDef that statement ``s`` defines (``f = lambda t: e`` as
    ``def f(t): return e``), or None."""
    if isinstance(s, gast.FunctionDef):
        return s
    if (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Lambda)):
        return gast.copy_location(lambda_as_def(s.targets[0].id, s.value), s)
    return None


def lambda_as_def(name, node):
    """The lambda ``node`` as ``def name(...): return body``."""
    ret = gast.copy_location(gast.Return(value=node.body), node.body)
    return gast.copy_location(gast.FunctionDef(
        name=name, args=node.args, body=[ret], decorator_list=[], returns=None,
        type_comment=None, type_params=[]), node)


def _check_def(fdef, source_map):
    args = fdef.args
    refuse = None
    if fdef.decorator_list:
        refuse = "a decorated local function is not supported"
    elif args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        refuse = "a local function with *args, **kwargs or keyword-only parameters is " \
                 "not supported"
    elif not all(isinstance(d, gast.Constant) for d in args.defaults):
        refuse = "a local function's default values must be constants"
    for n in S.walk(fdef):
        if refuse:
            break
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            refuse = "'global' and 'nonlocal' are not supported"
        elif n is not fdef and isinstance(n, (gast.FunctionDef, gast.ClassDef, gast.Lambda)):
            refuse = "a function or class defined inside a local function is not supported"
    if refuse:
        raise source_map.error(fdef, refuse, hint="Define the helper at module level; the "
                                                  "compiler follows calls.")


def _locals(fdef):
    return {a.id for a in fdef.args.args} | S.assigned_names(fdef.body)


def _check_uses(node, defs, source_map):
    """Refuse a local function that is rebound or read other than by calling it."""
    called = set()
    definitions = set()
    top = {id(s) for s in node.body}
    for n in S.walk(node):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in defs:
            called.add(id(n.func))
        elif isinstance(n, gast.Assign) and id(n) in top and as_def(n):
            definitions.add(id(n.targets[0]))
    for n in S.walk(node):
        if not (isinstance(n, gast.Name) and n.id in defs) or id(n) in called | definitions:
            continue
        if isinstance(n.ctx, gast.Load):
            raise source_map.error(n, f"the local function {n.id!r} is used other than by "
                                      "calling it (returned, stored or passed on)",
                                   hint="Call it where it is defined, or define it at module "
                                        "level and pass that.")
        raise source_map.error(n, f"the local function {n.id!r} is bound again",
                               hint="Give each function its own name.")
    for a in node.args.args:
        if a.id in defs:
            raise source_map.error(defs[a.id], f"the local function {a.id!r} hides a "
                                               "parameter", hint="Rename it.")


class _Inliner:
    def __init__(self, defs, names, source_map):
        self.defs = defs
        self.names = names
        self.source_map = source_map
        self.defined = set()  # the local functions whose definitions have run

    def block(self, stmts, calling):
        """``stmts`` with local calls inlined; ``calling``: the local functions whose
        bodies are being inlined (a call of one of them is recursion)."""
        out = []
        for s in stmts:
            fdef = as_def(s) if calling == () else None
            if fdef is not None:
                self.defined.add(fdef.name)
                continue  # the definition itself computes nothing
            out += self.stmt(s, calling)
        return out

    def stmt(self, s, calling):
        pre = []
        calls = _Calls(self, pre, calling)
        if isinstance(s, gast.If):
            s.test = calls.visit(s.test)
            s.body = self.block(s.body, calling)
            s.orelse = self.block(s.orelse, calling)
        elif isinstance(s, gast.For):
            s.iter = calls.visit(s.iter)
            s.body = self.block(s.body, calling)
            s.orelse = self.block(s.orelse, calling)
        elif isinstance(s, gast.While):
            calls.refuse_in(s.test, "a 'while' test (it runs again on every trip)")
            s.body = self.block(s.body, calling)
            s.orelse = self.block(s.orelse, calling)
        elif isinstance(s, gast.With):  # its items are constants (managers.py)
            s.body = self.block(s.body, calling)
        elif isinstance(s, gast.Try):
            pass  # refused by the normaliser
        else:
            targets = s.targets if isinstance(s, gast.Assign) else [
                s.target] if isinstance(s, (gast.AugAssign, gast.AnnAssign)) else []
            for t in targets:  # evaluated after the value, or (x[i] += ...) read before it
                if not isinstance(t, gast.Name) or isinstance(s, gast.AugAssign):
                    calls.refuse_in(t, "an assignment's target")
            if isinstance(s, gast.AugAssign) and not isinstance(s.target, gast.Name):
                calls.refuse_in(s.value, "the value of an augmented assignment to an element")
            s = calls.visit(s)
        return pre + [s]

    def inline(self, call, calling):
        """(statements, result name) that compute the local call ``call``."""
        name = call.func.id
        if name not in self.defined:
            raise self.source_map.error(call, f"the local function {name!r} is called before "
                                              "it is defined",
                                        hint=f"Move 'def {name}' above its first call.")
        if name in calling:
            raise self.source_map.error(call, f"the local function {name!r} is recursive",
                                        hint="Define it at module level: the compiler "
                                             "compiles a recursive function once.")
        fdef = S.copy_node(self.defs[name])
        renamed = {n: self.names.fresh(n) for n in sorted(_locals(fdef))}
        for n in S.walk(fdef):
            if isinstance(n, gast.Name) and n.id in renamed:
                n.id = renamed[n.id]
        bind = [gast.copy_location(S.assign(renamed[p], value), call)
                for p, value in self.arguments(call, self.defs[name])]
        if has_early_return(fdef.body):
            ExitLowering(self.names, self.source_map).lower_function(fdef)
        body = fdef.body
        result = self.names.fresh(name)
        last = body[-1] if body and isinstance(body[-1], gast.Return) else None
        value = last.value if last is not None and last.value is not None else S.const(None)
        body = body[:-1] if last is not None else body
        ret = S.assign(result, value)
        gast.copy_location(ret, last if last is not None else call)
        code = self.block(bind + body + [ret], calling + (name,))
        return code, result

    def arguments(self, call, fdef):
        """(parameter, value) for each parameter of ``fdef`` in the call ``call``."""
        params = [a.id for a in fdef.args.args]
        if len(call.args) > len(params) or any(isinstance(a, gast.Starred) for a in call.args) \
                or any(k.arg is None for k in call.keywords):
            raise self.source_map.error(call, f"this call of {fdef.name!r} does not match "
                                              "its parameters",
                                        hint="Pass each argument by position or keyword.")
        values = dict(zip(params, call.args))
        for k in call.keywords:
            if k.arg not in params or k.arg in values:
                raise self.source_map.error(call, f"{fdef.name}() got an unexpected or "
                                                  f"repeated argument {k.arg!r}",
                                            hint=f"Its parameters are {', '.join(params)}: "
                                                 "pass each once.")
            values[k.arg] = k.value
        defaults = dict(zip(params[len(params) - len(fdef.args.defaults):], fdef.args.defaults))
        for p in params:
            if p not in values:
                if p not in defaults:
                    raise self.source_map.error(call, f"{fdef.name}() is missing the "
                                                      f"argument {p!r}",
                                                hint=f"Pass {p!r} (by position or keyword).")
                values[p] = S.copy_node(defaults[p])
        return [(p, values[p]) for p in params]


class _Calls(gast.NodeTransformer):
    """Replace each local call in an expression by the name of its result, its body
    appended to ``pre`` (arguments first, left to right, as Python evaluates them).

    The body runs before the statement, so what Python evaluates before the call
    (``a[0]`` in ``a[0] * x + f(x)``) is computed into a name first, in its turn: a
    body that writes into ``a`` in place must not change it."""

    def __init__(self, inliner, pre, calling):
        self.inliner = inliner
        self.pre = pre
        self.calling = calling

    def generic_visit(self, node):
        """Visit the children in the order Python evaluates them (the fields' order,
        but for what visit_* methods and ``Inliner.stmt`` handle apart)."""
        slots = [(field, k) for field, value in gast.iter_fields(node)
                 for k in (range(len(value)) if isinstance(value, list) else [None])]
        for i, (field, k) in enumerate(slots):
            child = _get(node, field, k)
            if not isinstance(child, gast.AST):
                continue
            if self.calls_local(child):
                for earlier in slots[:i]:
                    self.hoist(node, *earlier)
            new = self.visit(child)
            _put(node, field, k, new)
        return node

    def hoist(self, node, field, k):
        """Compute ``node``'s child into a name now, unless its value cannot change."""
        child = _get(node, field, k)
        if isinstance(child, gast.keyword):  # g(k=a[0], j=f(x)): the keyword's value
            node, field, k, child = child, "value", None, child.value
        if (not isinstance(child, gast.expr) or isinstance(child, (gast.Name, gast.Constant,
                                                                    gast.Slice, gast.Starred))
                or field in ("func", "annotation") or not isinstance(
                    getattr(child, "ctx", gast.Load()), gast.Load)):
            return  # a name keeps its object (a body never rebinds it); a callee is fixed
        temp = self.inliner.names.temp("before")
        self.pre.append(gast.copy_location(S.assign(temp, child), child))
        _put(node, field, k, gast.copy_location(S.name(temp), child))

    def calls_local(self, node):
        return any(isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
                   and n.func.id in self.inliner.defs for n in S.walk(node))

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id in self.inliner.defs:
            code, result = self.inliner.inline(node, self.calling)
            self.pre += code
            return gast.copy_location(S.name(result), node)
        return node

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        self.refuse_in(node.body, "a branch of a conditional expression")
        self.refuse_in(node.orelse, "a branch of a conditional expression")
        return node

    def visit_BoolOp(self, node):
        node.values[0] = self.visit(node.values[0])
        for v in node.values[1:]:
            self.refuse_in(v, "an operand of 'and'/'or' after the first")
        return node

    def visit_Lambda(self, node):
        self.refuse_in(node, "a lambda")
        return node

    def visit_comprehension_form(self, node):
        self.refuse_in(node, "a comprehension")
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = \
        visit_comprehension_form

    def visit_Dict(self, node):  # keys and values are evaluated in turn
        self.refuse_in(node, "a dict literal")
        return node

    def refuse_in(self, node, where):
        for n in S.walk(node):
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) \
                    and n.func.id in self.inliner.defs:
                raise self.inliner.source_map.error(
                    n, f"cannot inline the local function {n.func.id!r} in {where}",
                    hint="Call it on a line of its own and use its result.")


def _get(node, field, k):
    value = getattr(node, field)
    return value if k is None else value[k]


def _put(node, field, k, new):
    if k is None:
        setattr(node, field, new)
    else:
        getattr(node, field)[k] = new

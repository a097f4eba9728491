"""Function values made in the body (closure conversion): lambdas, local functions
and partials passed to user functions, and bound methods held in locals.

A lambda written as an argument of a call of a user function (``rk4(lambda y, t:
dynamics(params, y), y0, times)``), or a local function (a nested ``def``, or a
lambda bound to a name: local_functions.py) passed by its name, is compiled as a
function of its own: its code, a constant of the enclosing function's code, made
into a function object, whose free names that are locals of the enclosing unit --
its captures -- are extra parameters (``lifted``, see unit._lift).  The call passes
their values after its arguments, so their adjoints flow back to the enclosing
function; the callee passes them on to each call of the parameter that holds the
closure (``f/params``: unit._lift appends them), and to each helper it passes that
parameter to (this pass again, in the callee).

Python reads a closure's free variables when it runs, not when it is made; while
the helper runs, the enclosing function's locals cannot change (a closure that
writes them, ``nonlocal``, is refused), so their values at the helper's call are
what the closure reads, rebound or not since it was made.

A ``functools.partial`` made at the top of the body and bound once (``p =
functools.partial(f, a, k=b)``) is its bound values, copied where it is made (a
partial keeps the values it was given): ``p(x)`` is ``f(p_0, x, k=p_k)``, and ``p``
passed to a helper is a closure whose captures are those copies.  A bound method or
callable instance held in a local (``g = layer.apply``, bound once, its chain's names
never bound and their attributes never written in the body) is that chain where it
is read: the same object, which methods.py calls.

Calls of user functions are bound by position where this needs it (binding.py);
the function objects are made by made_functions.py.

Invariant of the output: each such argument is a name bound to the function object
(``parsed.namespace``); the call binds every positional parameter of the callee by
position (keywords and defaults moved into place), then passes each capture in a
fresh name assigned just before the statement; ``parsed.closures`` maps that name
to what the callee reads (``callee/param/capture``, unit.callee_lifted strips the
first part).  A call of a parameter holding a closure binds the closure's
parameters by position likewise, before the captures unit._lift appended.  What is
not modelled is refused here, or left as it was and refused later: a lambda
anywhere else (returned, stored, passed to NumPy: "a lambda is not supported"), in
a ``while`` test, a comprehension or another lambda.
"""
import collections
import functools
import inspect

import gast

from .. import rules
from . import syntax as S
from .analysis import compiled_as, is_library
from .binding import CallBinder, has_keyword_only, positional_names
from .kwargs import takes_kwargs
from .local_functions import as_def, lambda_as_def
from .made_functions import FunctionMaker

def convert_closures(node, parsed, names):
    """Convert, in place, the closures the FunctionDef ``node`` passes to user functions
    (see the module docstring)."""
    converter = _Converter(node, parsed, names)
    node.body = converter.block(node.body)
    for n in S.walk(node):
        if isinstance(n, gast.Name) and n.id in converter.bound:
            raise parsed.source_map.error(n, f"the partial {n.id!r} is used other than by "
                                             "calling it or passing it to a function "
                                             "(returned, stored, or called before it is made)",
                                          hint="Call it, or pass it to your function.")


def _captures_of(fn):
    return getattr(fn, "srcdiff_captures", ())


class _Converter:
    def __init__(self, node, parsed, names):
        self.parsed = parsed
        self.source_map = parsed.source_map
        self.names = names
        self.fn = parsed.fn
        self.params = [a.id for a in node.args.args]  # the lifted ones too
        self.lifted = set(self.params) - set(parsed.params)  # parsed.node: as written
        code = self.fn.__code__
        self.locals = set(self.params) | set(code.co_varnames) | set(code.co_cellvars)
        self.local_defs = {}  # name -> (top-level index, FunctionDef) of local functions
        for k, s in enumerate(node.body):
            fdef = as_def(s)
            if fdef is not None:
                self.local_defs.setdefault(fdef.name, (k, fdef, s))
        self.partials = {}  # name -> (top-level index, function) of local partials
        stores, called, written = _bindings(node)
        for k, s in enumerate(node.body):
            made = self.partial_made(s)
            if made is not None and stores[s.targets[0].id] == 1 and (
                    s.targets[0].id not in self.params):
                self.partials[s.targets[0].id] = (k, made)
        self.bound = {}  # name of a partial made -> (its function, copies, {key: copy})
        self.aliases = self.method_aliases(node, stores, called, written)
        self.made = {}  # id(the lambda or def) -> (closure, captures)
        self.maker = FunctionMaker(parsed, self.locals, self.lifted, self.local_defs)
        # a function of its own, not the bound method: the binder holds it, and a
        # converter holding its binder would be a reference cycle
        self.bind = functools.partial(_bind, names, parsed.namespace)
        self.binder = CallBinder(self.source_map, self.bind)
        self.top = None  # index of the top-level statement being converted

    def block(self, stmts, top=True):
        out = []
        for k, s in enumerate(stmts):
            if top:
                self.top = k
            pre = []
            if isinstance(s, gast.If):
                s.test = self.expr(s.test, pre)
                s.body, s.orelse = self.block(s.body, False), self.block(s.orelse, False)
            elif isinstance(s, gast.For):
                s.iter = self.expr(s.iter, pre)
                s.body, s.orelse = self.block(s.body, False), self.block(s.orelse, False)
            elif isinstance(s, gast.While):  # its test runs again on every trip: left
                s.body, s.orelse = self.block(s.body, False), self.block(s.orelse, False)
            elif isinstance(s, gast.With):  # its items are constants (managers.py)
                s.body = self.block(s.body, False)
            elif isinstance(s, (gast.FunctionDef, gast.ClassDef, gast.Try)):
                pass  # a local def is inlined (local_functions.py); the rest is refused
            elif top and as_def(s) is not None:
                pass  # a local function's definition
            elif top and self.partials.get(_target(s), (None,))[0] == k:
                out += self.copy_partial(s)  # p = functools.partial(f, a): its values
                continue
            else:
                s = self.expr(s, pre)
            out += pre + [s]
        return out

    def method_aliases(self, node, stores, called, written):
        """name -> the attribute chain it is bound to, for each ``g = obj.method`` (or
        ``g = layer``) at the top of the body that is called (``g(x)``) and bound once,
        whose chain's names are never bound and whose attributes never written in the
        body: reading the chain again where ``g`` is read gives the same object
        (``stores``, ``called``, ``written``: see :func:`_bindings`)."""
        aliases = {}
        for k, s in enumerate(node.body):
            name = _target(s)
            if name is None or not isinstance(s.value, (gast.Name, gast.Attribute)):
                continue
            roots = {n.id for n in S.walk(s.value) if isinstance(n, gast.Name)}
            if (name in called and stores[name] == 1 and name not in self.params
                    and not any(r in stores or r in written or r == name for r in roots)
                    and all(isinstance(n, (gast.Name, gast.Attribute, gast.Load))
                            for n in S.walk(s.value))):
                aliases[name] = (k, s.value)
        return aliases

    def partial_made(self, s):
        """The function ``s`` (``p = functools.partial(f, ...)``) makes a partial of."""
        if _target(s) is None or not (isinstance(s.value, gast.Call) and s.value.args):
            return None
        try:  # the function first: most calls make no partial, and their arguments
            if self.parsed.resolve(s.value.func) is not functools.partial:  # are locals
                return None
            fn = self.parsed.resolve(s.value.args[0])
        except KeyError:
            return None
        if not callable(fn) or isinstance(fn, type):
            return None
        return fn

    def copy_partial(self, s):
        """The copies of the values ``p = functools.partial(f, a, k=b)`` binds."""
        name, call = s.targets[0].id, s.value
        if any(isinstance(a, gast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            raise self.source_map.error(s, "a partial made with * or ** is not supported",
                                        hint="Bind each value by position or keyword.")
        code, copies, keywords = [], [], {}
        values = [(str(k), a) for k, a in enumerate(call.args[1:])]
        for key, value in values + [(k.arg, k.value) for k in call.keywords]:
            copy = self.names.fresh(f"{name}_{key}")
            pre = []
            code += pre + [gast.copy_location(S.assign(copy, self.expr(value, pre)), s)]
            (copies.append(copy) if key.isdigit() else keywords.__setitem__(key, copy))
        self.bound[name] = (self.partials[name][1], copies, keywords)
        return code

    def expr(self, node, pre):
        """``node`` with its calls converted; copies of captures appended to ``pre``."""
        return _Calls(self, pre).visit(node)

    def call(self, call, pre, closures=True):
        """``call`` bound by position where its callee needs it; with ``closures``, the
        functions made here that it passes converted (else left, refused later)."""
        appended = len(self.parsed.appended.get(getattr(call.func, "id", None), ()))
        partial = self.partial_call(call, appended, pre)
        if partial:
            appended = 0  # the partial's values are now the function's arguments
        callee = self.callee(call)
        spread = callee is not None and takes_kwargs(callee)
        if spread:  # h(x, k=v) into h's **kwargs: a call of h compiled for the names
            callee = self.binder.keyword_call(call, callee, appended)
        elif callee is not None and (appended or has_keyword_only(callee)):
            # unit._lift appended what the callee reads (a closure's captures, Tensors
            # its helpers read): they must follow every parameter, not fill a default
            given = call.args[:len(call.args) - appended]
            self.binder.rebind(call, callee, given, call.args[len(given):])
        if not closures:  # in a comprehension: a function made here is refused later
            return call
        passed = [(k, self.closure(a)) for k, a in enumerate(call.args)]
        passed += [(kw.arg, self.closure(kw.value)) for kw in call.keywords]
        passed = [(at, c) for at, c in passed if c is not None]
        if not passed or callee is None:  # a lambda passed to NumPy: refused later
            return call
        positional = positional_names(callee)
        if callee is self.fn:  # recursion: unit._lift passes its lifted parameters on
            if all(isinstance(at, int) and at < len(positional)
                   and getattr(call.args[at], "id", None) == positional[at]
                   for at, _ in passed):
                return call  # each closure handed on in its own place
            raise self.source_map.error(call, "a recursive call may pass a function made "
                                              "as a value only in its own place",
                                        hint="Pass the same parameter in the same place.")
        captured = []
        for at, (closure, values) in passed:
            if isinstance(at, int) and at >= len(positional):
                raise self.source_map.error(call, f"a function made here is passed to "
                                                  f"{callee.__qualname__} in its *args: not "
                                                  "supported",
                                            hint="Pass it to a named parameter.")
            param = positional[at] if isinstance(at, int) else at
            ref = self.bind(closure, param)
            if isinstance(at, int):
                call.args[at] = ref
            else:
                for kw in call.keywords:
                    if kw.arg == at:
                        kw.value = ref
            for capture, value in zip(_captures_of(closure), values):
                copy = self.names.fresh(f"{param}_{capture}".replace("/", "_"))
                pre.append(gast.copy_location(S.assign(copy, S.name(value)), call))
                self.parsed.closures[copy] = f"{_callee_name(call)}/{param}/{capture}"
                captured.append(S.name(copy))
        if len(call.args) > len(positional) and call.keywords and captured:
            raise self.source_map.error(call, "a call passing a function made here and "
                                              "extra positional arguments must not pass "
                                              "keywords", hint="Pass them by position.")
        if spread:  # every parameter is passed by position already
            call.args = call.args + captured
        else:
            self.binder.rebind(call, callee, call.args, captured)
        return call

    def partial_call(self, call, appended, pre):
        """Rewrite a call of a partial (made here, or held by a parameter and passed its
        values, which unit._lift appended) as a call of its function; whether it was."""
        name = getattr(call.func, "id", None)
        held = self.parsed.functions.get(name)
        if name in self.bound:
            fn, copies, keywords = self.bound[name]
            values = [S.name(c) for c in copies]
            given = call.args
        elif isinstance(held, functools.partial) and _captures_of(held):
            fn = held.func
            tail = []  # copies: the parameters holding them read as what callees read
            for value in call.args[len(call.args) - appended:]:
                tail.append(self.names.fresh(value.id))
                pre.append(gast.copy_location(S.assign(tail[-1], value), call))
            keys = _captures_of(held)
            values = [S.name(v) for k, v in zip(keys, tail) if k.isdigit()]
            keywords = {k: v for k, v in zip(keys, tail) if not k.isdigit()}
            given = call.args[:len(call.args) - appended]
        else:
            return False
        mine = {k.arg for k in call.keywords}  # the call's keywords win, as in Python
        call.func = self.bind(fn, getattr(fn, "__name__", "func"))
        call.args = values + list(given)
        call.keywords = [gast.keyword(arg=k, value=S.name(c)) for k, c in keywords.items()
                         if k not in mine] + call.keywords
        return True

    def callee(self, call):
        try:
            fn = self.parsed.resolve(call.func)
        except KeyError:
            return None
        fn = compiled_as(fn)  # as analysis.Describer reads it
        user = inspect.isfunction(fn) and not is_library(fn) and rules.rule_of(
            fn) is None and not rules.is_nondifferentiable(fn)
        return fn if user else None

    def closure(self, arg):
        """(function, the names holding its captures here) if ``arg`` is a lambda, a
        local function or a parameter holding a closure; else None."""
        if isinstance(arg, gast.Lambda):
            return self.made_from(arg, lambda_as_def("lambda", arg))
        if not isinstance(arg, gast.Name):
            return None
        held = self.parsed.functions.get(arg.id)
        if _captures_of(held):  # passed on: the captures this unit was passed with it
            where = {e: p for p, e in self.parsed.passed.items()}
            return held, [where[f"{arg.id}/{c}"] for c in _captures_of(held)]
        if arg.id in self.bound:
            fn, copies, keywords = self.bound[arg.id]
            keys = [str(k) for k in range(len(copies))] + list(keywords)
            made = functools.partial(fn, *copies, **keywords)  # stands for it: see
            made.srcdiff_captures = tuple(keys)                # partial_call
            return made, copies + list(keywords.values())
        if arg.id in self.local_defs and arg.id not in self.params:
            index, fdef, stmt = self.local_defs[arg.id]
            if index >= self.top:
                raise self.source_map.error(arg, f"the local function {arg.id!r} is passed "
                                                  "before it is defined",
                                            hint=f"Define {arg.id!r} above.")
            return self.made_from(stmt.value if isinstance(stmt, gast.Assign) else fdef, fdef)
        return None

    def made_from(self, node, fdef):
        """(function, captures) for the lambda or def ``node`` (``fdef`` its def form)."""
        if id(node) not in self.made:
            self.made[id(node)] = self.maker.make(node, fdef)
        closure, captures = self.made[id(node)]
        return closure, list(captures)



def _bindings(node):
    """(name -> how often it is bound or deleted, the names called as ``f(...)``, the
    names in an attribute or subscript written into), in one walk of ``node``."""
    stores, called, written = collections.Counter(), set(), set()
    for n in S.walk(node):
        if isinstance(n, gast.Name):
            if not isinstance(n.ctx, gast.Load):
                stores[n.id] += 1
        elif isinstance(n, gast.Call):
            if isinstance(n.func, gast.Name):
                called.add(n.func.id)
        elif isinstance(n, (gast.Attribute, gast.Subscript)) and not isinstance(n.ctx,
                                                                              gast.Load):
            written.update(m.id for m in S.walk(n) if isinstance(m, gast.Name))
    return stores, called, written


def _bind(names, namespace, obj, hint):
    """A fresh name the generated code and ``parsed.resolve`` read as ``obj``."""
    name = names.fresh(hint)
    namespace[name] = obj
    return S.name(name)


def _target(s):
    """The name an assignment ``s`` binds, if it binds one name."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0],
                                                                         gast.Name):
        return s.targets[0].id
    return None


def _callee_name(call):
    func = call.func
    while isinstance(func, gast.Attribute):
        func = func.value
    return func.id if isinstance(func, gast.Name) else "callee"


class _Calls:
    """An expression's calls converted by ``converter``, aliases of its captures
    replaced (``_Converter.expr``); copies of captures appended to ``pre``."""

    def __init__(self, converter, pre, shadowed=None):
        self.converter, self.pre = converter, pre
        self.shadowed = shadowed  # in a comprehension: the names its loops bind

    def visit(self, node):
        """``node`` converted, its children first, as a NodeTransformer would: in a
        plain recursion (it runs on every expression of the body)."""
        kind = type(node)
        if kind is gast.Name:
            return self.visit_Name(node)
        if kind is gast.Lambda:
            return node
        if kind in _COMPREHENSIONS:
            return self.comprehension(node)
        S.transform_children(node, self.visit)
        if kind is not gast.Call:
            return node
        if self.shadowed is None:
            return self.converter.call(node, self.pre)
        if _callee_name(node) in self.shadowed:  # a function its loops bind: left
            return node
        return self.converter.call(node, self.pre, closures=False)

    def comprehension(self, node):
        """A comprehension with its calls bound by position as anywhere else (it runs
        now: comprehensions.py); a function made in it and passed is left (a lambda
        may read its loop variables, which no copy before the statement holds)."""
        shadowed = set().union(*(S.names_in(g.target) for g in node.generators))
        inner = _Calls(self.converter, self.pre, (self.shadowed or set()) | shadowed)
        S.transform_children(node, inner.visit)
        return node

    def visit_Name(self, n):
        converter = self.converter
        alias = converter.aliases.get(n.id)
        if alias is None or not isinstance(n.ctx, gast.Load) or alias[0] >= converter.top:
            return n
        return gast.copy_location(S.copy_node(alias[1]), n)


# a comprehension is a scope of its own: its calls are bound, a lambda in it stays, refused
# (a lambda's own body runs elsewhere: converted when it is compiled)
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)

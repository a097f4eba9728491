"""Walk steps: a rule's whole backward step on arrays as one generated function.

The tape's plain walk (``tape._walk_plain``) spends about as much time in Python
frames as in NumPy: a frame per vjp, and one more per ``unbroadcast``, which nearly
always finds nothing to undo.  A walk step does a record's step in one frame: the
body of each input's vjp inlined, read off the rule's syntax as the compiler reads
it (the rule stays the one home of its derivative), ``unbroadcast(e, x)`` around a
whole body replaced by unbroadcast's own first test (are the shapes equal?) with the
call kept for when they are not, and each adjoint added to what ``grads`` holds.
``np.multiply``'s, as generated::

    def step(_g, _ans, _args, _raw, _reaches, _grads):
        try:
            _x0, _x1 = _raw
        except ValueError:
            return True
        _key = id(_args[0])
        if _key in _reaches:
            _d = _g * _x1
            try:
                _same = _d.shape == _x0.shape
            except AttributeError:
                _same = False
            if not _same:
                _d = unbroadcast(_d, _x0)
            if _d is not None:
                _previous = _grads.get(_key)
                _grads[_key] = _d if _previous is None else _previous + _d
        _key = id(_args[1])
        ...

The walks take steps once this process's walks have taken ``HOT`` records, each rule's
derived the first time a walk meets it then: reading a rule's syntax costs about a
millisecond (a few more for a module's first rule), which its step repays only over
some ten thousand records; until then each vjp is called on its own.

Invariant: ``step(g, ans, args, raw, reaches, grads)``, for a record of the rule
without keywords, either returns True having done nothing (``raw`` holds another
number of inputs than the rule has vjps), or leaves ``grads`` exactly as calling each
vjp of an input whose id is in ``reaches``, in input order, as ``vjp(g, ans, *raw)``
and adding each adjoint that is not None to ``grads`` would: the same expressions on
the same values in the same order.  A rule whose vjps cannot all be read this way
(a closure, a ``*args`` or keyword-only parameter, a default that is not a constant,
a body with a scope of its own, a rule made per call) has no step: None.
"""
import ast
import types

import gast

from .rules import helpers

STEPS = {}  # the step of each rule met since the walks began to step, or None
HOT = 50_000  # records walked in this process from which the walks take steps
_walked = 0
STEPPING = False  # set by ``stepping`` once that many have been walked

_LOCALS = frozenset({"_g", "_ans", "_args", "_raw", "_reaches", "_grads", "_key", "_d",
                     "_same", "_previous"})
# builtins the step itself calls or catches: a rule module may not rebind them
_BUILTINS = ("id", "ValueError", "AttributeError")
_SCOPES = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp,
           gast.NamedExpr, gast.Yield, gast.YieldFrom, gast.Await)


def stepping(count):
    """Whether a walk of ``count`` records about to start takes steps: once this
    process's walks have taken ``HOT`` records (counting these).  From then on
    ``STEPPING`` says so, and a walk need not call this."""
    global _walked, STEPPING
    _walked += count
    STEPPING = _walked >= HOT
    return STEPPING


def step_of(rule):
    """The walk step of ``rule`` (see the module doc), or None; kept in ``STEPS``."""
    if rule.joint is not None or rule.argnum_vjp is not None:
        return None  # made per call, or one vjp for every input: the general walk
    try:
        return STEPS[rule]
    except KeyError:
        pass
    try:
        step = _derived(rule)
    except Exception:  # any rule whose syntax cannot be read: its vjps are called
        step = None
    STEPS[rule] = step
    return step


def _derived(rule):
    vjps = rule.vjps
    count = len(vjps)
    present = [v for v in vjps if v is not None]
    if not present:
        return None
    namespace = present[0].__globals__
    if any(type(v) is not types.FunctionType or v.__code__.co_freevars
           or v.__globals__ is not namespace for v in present):
        return None
    if any(name in namespace for name in _BUILTINS):
        return None
    inputs = [f"_x{i}" for i in range(count)]
    lines = ["def step(_g, _ans, _args, _raw, _reaches, _grads):",
             "    try:",
             f"        {', '.join(inputs)}, = _raw",
             "    except ValueError:",
             "        return True"]
    for i, vjp in enumerate(vjps):
        if vjp is None:
            continue
        body = _body(vjp, i, inputs, namespace)
        if body is None:
            return None
        lines += [f"    _key = id(_args[{i}])",
                  "    if _key in _reaches:",
                  *("        " + line for line in body),
                  "        if _d is not None:",
                  "            _previous = _grads.get(_key)",
                  "            _grads[_key] = _d if _previous is None else _previous + _d"]
    source = "\n".join(lines) + "\n"
    code = compile(source, f"<walk step of {rule.name}>", "exec")
    (inner,) = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    step = types.FunctionType(inner, namespace, f"step_{rule.name}")
    step.source = source  # for people reading a traceback, and for the tests
    return step


def _body(vjp, i, inputs, namespace):
    """The lines computing ``_d``, input ``i``'s adjoint by ``vjp``, or None."""
    from .compiler import syntax as S  # the compiler imports the tape, which imports this
    from .compiler.inline import rule_syntax
    syntax = rule_syntax(vjp)
    if syntax.vararg is not None or syntax.kwonly or syntax.argnum is not None:
        return None
    params, extra = syntax.params, syntax.params[len(inputs):]
    if len(params) < len(inputs) or any(  # the others take their defaults: constants only
            not isinstance(syntax.defaults.get(p), gast.Constant) for p in extra):
        return None
    if syntax.globals_used() & _LOCALS.union(inputs):
        return None
    if any(isinstance(n, _SCOPES) for n in S.walk(syntax.body)):
        return None
    node = syntax.inline(i, S.name("_g"), S.name("_ans"), [S.name(x) for x in inputs], {})
    x = inputs[i]
    if (type(node) is gast.Call and type(node.func) is gast.Name
            and node.func.id == "unbroadcast" and namespace.get("unbroadcast")
            is helpers.unbroadcast and len(node.args) == 2 and not node.keywords
            and type(node.args[1]) is gast.Name and node.args[1].id == x):
        return [f"_d = {_text(node.args[0])}",
                "try:",
                f"    _same = _d.shape == {x}.shape",
                "except AttributeError:",
                "    _same = False",
                "if not _same:",
                f"    _d = unbroadcast(_d, {x})"]
    return [f"_d = {_text(node)}"]


def _text(node):
    return ast.unparse(gast.gast_to_ast(node))

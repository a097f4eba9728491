"""What each normalised statement computes, and which names are active.

``describe`` maps the right-hand side of an assignment to an :class:`Op`: the
primitive it applies (with its rule), a call to a user function (compiled
recursively), a copy, or something without a gradient.  ``activity`` then
finds the active names: those that depend on an active input (varied) and
that the returned value depends on (useful).
"""
import builtins
import collections
import inspect
import math
import operator

import gast
import numpy as np

from .. import rules
from ..rules.shapes import SEQUENCE_FORMS, cast
from . import syntax as S

BINOPS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
          gast.Div: np.true_divide, gast.Pow: np.power, gast.MatMult: np.matmul,
          gast.Mod: np.remainder, gast.FloorDiv: np.floor_divide}
UNARY = {gast.USub: np.negative, gast.UAdd: np.positive}

# Builtins that never carry a gradient (their results are ints, bools, strings).
_NONDIFF_BUILTINS = {len, range, int, bool, isinstance, print, type, str, repr, id, hash,
                     round, enumerate, zip, callable, hasattr, getattr, tuple, list, sorted}
# Builtins on numbers that are NumPy primitives in disguise.
_BUILTIN_PRIMITIVES = {abs: np.absolute, max: np.maximum, min: np.minimum}


class Op:
    """One statement's computation.

    kind: 'copy' (x = y), 'primitive' (a rule applies), 'call' (a user function,
    compiled recursively), 'setitem' (x[i] = v), or 'none' (no gradient)."""

    __slots__ = ("kind", "inputs", "rule", "kwargs", "fn", "name", "forward")

    def __init__(self, kind, inputs=(), rule=None, kwargs=None, fn=None, name=None,
                 forward=None):
        self.kind = kind
        self.inputs = list(inputs)   # nodes: the inputs by position (None: a default)
        self.rule = rule
        self.kwargs = kwargs or {}   # name -> node
        self.fn = fn                 # the callable (for 'call' and 'primitive')
        self.name = name
        self.forward = forward       # what the forward pass calls, if not as written

    def input_names(self):
        return [a.id for a in self.inputs if isinstance(a, gast.Name)]


NONE = Op("none")


class Describer:
    """Describes the right-hand sides of one normalised function body.

    The passes ask about the same nodes again and again (activity, the aliasing
    checks, the number analysis); a body is not changed while it is described, so
    each node is described once and its :class:`Op` (never changed after it is
    made) remembered.  The node is kept with it, so its id is never reused."""

    def __init__(self, resolve, source_map):
        self.resolve = resolve
        self.source_map = source_map
        self._ops = {}  # id(node) -> (node, Op)

    def __call__(self, value):
        known = self._ops.get(id(value))
        if known is None:
            known = self._ops[id(value)] = (value, self._describe(value))
        return known[1]

    def _describe(self, value):
        if isinstance(value, gast.Name):
            return Op("copy", [value])
        if isinstance(value, gast.Constant) or _is_boolean(value):
            return NONE
        if isinstance(value, gast.BinOp):
            fn = BINOPS.get(type(value.op))
            if fn is None:
                return NONE
            return self.primitive(fn, [value.left, value.right], {}, value)
        if isinstance(value, gast.UnaryOp):
            fn = UNARY.get(type(value.op))
            return NONE if fn is None else self.primitive(fn, [value.operand], {}, value)
        if isinstance(value, gast.Subscript):
            return self.primitive(operator.getitem, [value.value, value.slice], {}, value)
        if isinstance(value, gast.Attribute):
            return NONE  # x.shape, x.dtype, module constants
        if isinstance(value, gast.Call):
            return self.call(value)
        if isinstance(value, (gast.Tuple, gast.List)):
            return Op("pack", value.elts)
        if isinstance(value, (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp)):
            inner = {n.id for n in gast.walk(value) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load)}
            return Op("opaque", [S.name(n) for n in sorted(inner)], name="a comprehension")
        return NONE

    def primitive(self, fn, inputs, kwargs, node):
        rule = rules.rule_of(fn)
        if rule is None:
            if rules.is_nondifferentiable(fn):
                return NONE
            return Op("unknown", inputs, fn=fn, name=rules.registry.primitive_name(fn))
        return Op("primitive", inputs, rule=rule, kwargs=kwargs, fn=fn)

    def call(self, node):
        kwargs = {k.arg: k.value for k in node.keywords}
        try:
            fn = self.resolve(node.func)
        except KeyError:
            if isinstance(node.func, gast.Name) and node.func.id == "cast":
                fn = cast
            else:
                return Op("unknown", node.args + list(kwargs.values()),
                          name=_describe_func(node.func))
        fn = getattr(fn, "__numpy__", fn)  # an sd.* op: its NumPy form
        if fn in SEQUENCE_FORMS and node.args and isinstance(node.args[0], (gast.List,
                                                                              gast.Tuple)):
            args = list(node.args[0].elts)
            if len(node.args) > 1:
                kwargs["axis"] = node.args[1]
            return self.primitive(SEQUENCE_FORMS[fn], args, kwargs, node)
        if fn in _NONDIFF_BUILTINS:
            return NONE
        if fn in (np.split, np.array_split):  # several results: see reverse_unpack
            return Op("unknown", node.args[:1], fn=fn, name=rules.registry.primitive_name(fn))
        if fn in _BUILTIN_PRIMITIVES and len(node.args) == (1 if fn is abs else 2):
            return self.primitive(_BUILTIN_PRIMITIVES[fn], node.args, kwargs, node)
        numpy_form = getattr(fn, "__numpy__", None)
        if numpy_form is not None:  # an sd.* op: its NumPy form runs and is differentiated
            fn = numpy_form
        if rules.rule_of(fn) is not None or rules.is_nondifferentiable(fn):
            op = self.primitive(fn, list(node.args), kwargs, node)
        elif inspect.isfunction(fn) and not _is_library(fn):
            op = Op("call", self.bind(fn, node), fn=fn)
        else:
            return Op("unknown", node.args + list(kwargs.values()), fn=fn,
                      name=rules.registry.primitive_name(fn))
        op.forward = numpy_form
        return op

    def bind(self, fn, node):
        """The call's argument nodes by parameter position (None where a default applies)."""
        params = list(inspect.signature(inspect.unwrap(fn)).parameters)
        inputs = list(node.args) + [None] * max(len(params) - len(node.args), 0)
        for k in node.keywords:
            if k.arg not in params:
                raise self.source_map.error(node, f"{fn.__qualname__}() has no parameter "
                                            f"{k.arg!r}")
            inputs[params.index(k.arg)] = k.value
        return inputs


def _is_library(fn):
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in ("numpy", "math", "builtins", "scipy")


def _describe_func(func):
    import ast
    return ast.unparse(gast.gast_to_ast(func))


def _is_boolean(node):
    return (isinstance(node, (gast.Compare, gast.BoolOp))
            or (isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.Not,
                                                                        gast.Invert))))


# ---------------------------------------------------------------- activity

def assignments(body):
    """Every assignment (and return) in ``body``, in order, at any depth."""
    for s in body:
        if isinstance(s, gast.Assign):
            yield s
        elif isinstance(s, gast.Return):
            yield s
        elif isinstance(s, (gast.If,)):
            yield from assignments(s.body)
            yield from assignments(s.orelse)
        elif isinstance(s, (gast.For, gast.While)):
            yield from assignments(s.body)


def target_names(target):
    """The names an assignment target binds (``x``, ``x[i]`` -> x, ``a, b``)."""
    if isinstance(target, gast.Subscript):
        return [target.value.id]
    if isinstance(target, (gast.Tuple, gast.List)):
        return [n for t in target.elts for n in target_names(t)]
    return [target.id]


def activity(body, active_params, describe):
    """The names that are varied (depend on an active input) and useful (the
    result depends on them): only those get adjoints."""
    flows = _flows(body, describe)
    varied = _grow(set(active_params), flows)
    returned = set()
    for s in assignments(body):
        if isinstance(s, gast.Return):
            returned |= S.loaded_names(s.value)
    useful = _grow(returned, [(targets, inputs) for inputs, targets in flows])
    return varied & useful


def varied_names(body, active_params, describe):
    """The names whose values depend on an active input."""
    return _grow(set(active_params), _flows(body, describe))


def _flows(body, describe):
    """(inputs, targets) of each assignment that carries a gradient."""
    statements = [(s, describe(s.value)) for s in assignments(body)
                  if isinstance(s, gast.Assign)]
    return [(_dependencies(s, op), set(target_names(s.targets[0])))
            for s, op in statements if op.kind != "none"]


def _grow(known, edges):
    """``known``, grown to a fixpoint along ``edges``: (sources, sinks) pairs, where
    reaching any source reaches every sink.

    A worklist of newly reached names: each edge fires once, from the first of its
    sources reached, so the cost is linear in the size of the edges."""
    edges_from = collections.defaultdict(list)
    for edge in edges:
        for name in edge[0]:
            edges_from[name].append(edge)
    fired = set()
    todo = list(known)
    while todo:
        for edge in edges_from.pop(todo.pop(), ()):
            if id(edge) not in fired:
                fired.add(id(edge))
                reached = edge[1] - known
                known |= reached
                todo.extend(reached)
    return known


def _dependencies(s, op):
    """Names whose values flow into the differentiable part of the statement."""
    names = set()
    for a in op.inputs:
        if isinstance(a, gast.Name):
            names.add(a.id)
        elif isinstance(a, (gast.Tuple, gast.List)):
            names |= {e.id for e in a.elts if isinstance(e, gast.Name)}
    if op.kind == "primitive" and op.fn is operator.getitem:
        names.discard(getattr(op.inputs[1], "id", None))  # the index carries no gradient
    for v in op.kwargs.values():
        if isinstance(v, gast.Name) and op.kind == "call":
            names.add(v.id)
    target = s.targets[0]
    if isinstance(target, gast.Subscript):
        names |= {target.value.id} | S.loaded_names(s.value)
    return names

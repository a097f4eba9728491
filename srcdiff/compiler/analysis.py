"""What each normalised statement computes, and which names are active.

``Describer`` maps the right-hand side of an assignment to an :class:`Op` whose
``kind`` (an Enum) says what it computes: the primitive it applies (with its rule
and keywords bound to the rule's parameters), a call to a user function (compiled
recursively), a copy, a literal, or no gradient.  Every expression form maps to a
kind; a form with no model is UNKNOWN, with every name it reads as an input.
``activity`` then finds the active names: those that depend on an active input
(varied) and that the returned value depends on (useful); ``adjoint_inputs``, the
inputs each statement's adjoint gives adjoints to (the values varied where it runs).

Invariant after ``check_modelled``: no active name is assigned by an UNKNOWN or
OPAQUE op, so the passes after it never meet a value they cannot differentiate.
"""
import enum
import inspect
import operator

import gast
import numpy as np

from .. import rules
from ..rules import containers
from ..rules.elementwise import conj_method
from ..rules.shapes import SEQUENCE_FORMS, cast, item
from . import syntax as S
from .anf import STATIC_ATTRIBUTES
from .dispatch import Method
from .errors import InvariantError
from .runtime import Keys, Positions

BINOPS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
          gast.Div: np.true_divide, gast.Pow: np.power, gast.MatMult: np.matmul,
          gast.Mod: np.remainder, gast.FloorDiv: np.floor_divide}
UNARY = {gast.USub: np.negative, gast.UAdd: np.positive}

# Builtins on numbers that are NumPy primitives in disguise, as operators are.  (Not max
# and min of several: they return the argument Python picks, NaN or not, which
# np.maximum does not: containers.SEVERAL.)
_BUILTIN_PRIMITIVES = {abs: np.absolute, pow: np.power}
_PICKING = {"key", "default"}  # the keywords of max(xs) and min(xs) (containers.WHOLE)


# list(d) of anf.keys_of, made for d.keys() (True) or for a loop over d indexing d by its
# keys ("taken"): the error that runtime.Keys raises if d is not a mapping when it runs
_KEYS_REFUSED = {
    True: ("keys(), values() and items() are modelled on a dict (or another mapping, "
           "whose keys carry no gradient)",
           "Call them on a dict; of another object, compute the list before the function "
           "and pass it."),
    "taken": ("this loop reads the object it runs over by the loop's target, so it is "
              "compiled as a loop over the keys of a dict (or another mapping)",
              "Loop over range(len(xs)) to index a list or an array by position."),
}

# the functions normalize writes for methods: x.astype(t) -> cast(x, t), x.item() -> item(x),
# x.conj() -> conj_method(x)
_METHOD_FUNCTIONS = {"cast": cast, "item": item, "conj_method": conj_method}


class Kind(enum.Enum):
    """What a right-hand side computes, for differentiation.  Every expression form
    maps to one; a form with no model is UNKNOWN (or OPAQUE), which an active value
    may not reach."""
    COPY = "a copy: x = y"
    PRIMITIVE = "a primitive with a derivative rule"
    CALL = "a call of a user function, compiled in turn"
    PACK = "a tuple or list literal"
    SPLIT = "an array cut into pieces along an axis (np.split): unpacked, then joined back"
    NONE = "no gradient: a constant, a condition, an int or a shape"
    OPAQUE = "an expression the compiler does not look into (a comprehension)"
    UNKNOWN = "a call with no derivative rule and no Python source"


class Op:
    """One statement's computation: its :class:`Kind` and its inputs."""

    __slots__ = ("kind", "inputs", "rule", "kwargs", "fn", "name", "forward", "keys")

    def __init__(self, kind, inputs=(), rule=None, kwargs=None, fn=None, name=None,
                 forward=None, keys=None):
        self.kind = kind
        self.inputs = list(inputs)   # nodes: the inputs by position (None: a default)
        self.rule = rule
        self.kwargs = kwargs or {}   # name -> node
        self.fn = fn                 # the callable (for 'call' and 'primitive')
        self.name = name
        self.forward = forward       # what the forward pass calls, if not as written
        self.keys = keys             # a PACK's keys (nodes): a dict's, else positions


NONE = Op(Kind.NONE)


class Describer:
    """Describes right-hand sides; facts.gather asks once per assignment."""

    def __init__(self, resolve, source_map):
        self.resolve = resolve
        self.source_map = source_map

    def __call__(self, value):
        """The Op of right-hand side ``value``.  A form with no model of its own is
        UNKNOWN, with every name it reads as an input: a gradient cannot pass
        through it unseen, by any route (a literal's element, a receiver, a key)."""
        if isinstance(value, gast.Name):
            return Op(Kind.COPY, [value])
        if isinstance(value, gast.Constant) or _bool_valued(value):
            return NONE
        if isinstance(value, gast.BinOp) and type(value.op) in BINOPS:
            return self.primitive(BINOPS[type(value.op)], [value.left, value.right], {}, value)
        if isinstance(value, gast.UnaryOp) and type(value.op) in UNARY:
            return self.primitive(UNARY[type(value.op)], [value.operand], {}, value)
        if isinstance(value, gast.Subscript):
            return self.primitive(operator.getitem, [value.value, value.slice], {}, value)
        if isinstance(value, gast.Attribute) and value.attr in STATIC_ATTRIBUTES:
            return NONE  # x.shape, x.dtype: no gradient
        if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name):
            # p.W of a namedtuple p (its rule refuses any other object at run time)
            return Op(Kind.PRIMITIVE, [value.value, S.const(value.attr)], fn=containers.field,
                      rule=containers.WHOLE[containers.field])
        if isinstance(value, gast.Call):
            return self.call(value)
        if isinstance(value, (gast.Tuple, gast.List)):
            return Op(Kind.PACK, value.elts)
        if isinstance(value, gast.Dict) and all(isinstance(k, gast.Constant)
                                                for k in value.keys):
            return Op(Kind.PACK, value.values, keys=value.keys)
        if isinstance(value, (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp)):
            inner = {n.id for n in S.walk(value) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load)}
            return Op(Kind.OPAQUE, [S.name(n) for n in sorted(inner)],
                      name=_COMPREHENSIONS.get(type(value), "a comprehension"))
        return unknown(value, _FORMS.get(type(value), "this expression"))

    def primitive(self, fn, inputs, kwargs, node, rule=None):
        rule = rule or rules.rule_of(fn)
        if rule is None:
            if rules.is_nondifferentiable(fn):
                return Op(Kind.NONE, fn=fn)  # fn: np.zeros(n) still says its value's rank
            return Op(Kind.UNKNOWN, inputs, fn=fn, name=rules.registry.primitive_name(fn))
        bound = _bind_keywords(rule, list(inputs), dict(kwargs))
        if bound is None:
            extra = ", ".join(f"{k}=..." for k in kwargs)
            return unknown(node, f"{rules.registry.primitive_name(fn)}(..., {extra})")
        op = Op(Kind.PRIMITIVE, bound[0], rule=rule, kwargs=bound[1], fn=fn)
        if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords:
            # f(x), as written: the forward pass calls its stand-in, if it has one
            op.forward = rules.traits_of(fn).stand_in
        return op

    def call(self, node):
        op = self._call(node)
        try:
            form = getattr(self.resolve(node.func), "__numpy__", None)
        except KeyError:
            return op
        if form is not None and op.forward is None and op.kind is not Kind.CALL and (
                op is not NONE):
            op.forward = form  # an sd.* op runs as its NumPy form: on arrays, it makes
        return op            # Tensors (unrecorded, under a tape)

    def _call(self, node):
        kwargs = {k.arg: k.value for k in node.keywords}
        if getattr(node, "srcdiff_keys", False):  # list(d), the keys of d.items() and the like
            return Op(Kind.NONE, fn=list, forward=Keys(self.source_map.error(
                node, *_KEYS_REFUSED[node.srcdiff_keys])))
        if getattr(node, "srcdiff_positions", False):  # the trip count of for x in xs
            return Op(Kind.NONE, fn=len, forward=Positions(self.source_map.error(
                node, "this loop runs over the positions of a list, tuple, array, range "
                      "or str (x = xs[i] for i in range(len(xs)))",
                hint="Loop over d.keys(), d.values() or d.items() for a dict, and over "
                     "list(xs) for a set or an iterator.")))
        if getattr(node, "srcdiff_append", False):  # xs.append(v), as xs = append(xs, v)
            op = self.primitive(containers.append, node.args, {}, node,
                                containers.WHOLE[containers.append])
            op.forward = containers.append
            return op
        try:
            fn = self.resolve(node.func)
        except KeyError:
            if isinstance(node.func, gast.Name) and node.func.id in _METHOD_FUNCTIONS:
                fn = _METHOD_FUNCTIONS[node.func.id]
            elif isinstance(node.func, gast.Attribute) and isinstance(node.func.value,
                                                                      gast.Name):
                # obj.f(x) of a local obj: the method is looked up when it runs
                return Op(Kind.CALL, [node.func.value] + list(node.args) + [
                    k.value for k in node.keywords], fn=Method(node.func.attr, kwargs))
            else:
                return unknown(node, _describe_func(node.func))
        fn = compiled_as(fn)
        if fn in SEQUENCE_FORMS and node.args and isinstance(node.args[0], (gast.List,
                                                                              gast.Tuple)):
            args = list(node.args[0].elts)
            if len(node.args) > 1:
                kwargs["axis"] = node.args[1]
            return self.primitive(SEQUENCE_FORMS[fn], args, kwargs, node)
        if fn in containers.WHOLE and node.args and isinstance(node.args[0], gast.Name) and (
                fn not in (max, min) or len(node.args) == 1 and set(kwargs) <= _PICKING):
            # np.stack(xs), sum(xs): the container xs is one input (literals: above)
            return self.primitive(fn, node.args, kwargs, node, containers.WHOLE[fn])
        if rules.traits_of(fn).splits is not None and getattr(node, "srcdiff_unpacked", False):
            # a, b = np.split(x, 2): see reverse_unpack (kept together: its expansion)
            return Op(Kind.SPLIT, node.args[:1], fn=fn, name=rules.registry.primitive_name(fn))
        form = kwargs and rules.registry.form_of(fn, {
            k: v.value if isinstance(v, gast.Constant) else rules.registry.UNKNOWN
            for k, v in kwargs.items()})
        if form:  # np.linalg.svd(a, compute_uv=False): another function, compiled as a call
            return Op(Kind.CALL, self.bind(form, node), fn=form)
        expansion = rules.registry.expansion_of(fn)
        if getattr(expansion, "__name__", "<lambda>") != "<lambda>":
            fn = expansion  # several results (np.linalg.eigh): a def, compiled as a call
        if fn in _BUILTIN_PRIMITIVES and len(node.args) == (1 if fn is abs else 2) and not kwargs:
            return self.primitive(_BUILTIN_PRIMITIVES[fn], node.args, kwargs, node)
        if fn in containers.SEVERAL and len(node.args) > 1 and set(kwargs) <= {"key"}:
            # max(a, b), max(a, b, key=abs)
            return self.primitive(fn, node.args, kwargs, node, containers.SEVERAL[fn])
        if rules.rule_of(fn) is not None or rules.is_nondifferentiable(fn):
            op = self.primitive(fn, list(node.args), kwargs, node)
        elif inspect.isfunction(fn) and not is_library(fn):
            op = Op(Kind.CALL, self.bind(fn, node), fn=fn)
        else:
            op = unknown(node, rules.registry.primitive_name(fn))
            op.fn = fn
            return op
        if fn in _METHOD_FUNCTIONS.values():
            op.forward = fn  # x.astype(t) is cast(x, t): bound
        return op

    def bind(self, fn, node):
        """The call's argument nodes by parameter position (None where a default applies)."""
        signature = inspect.signature(inspect.unwrap(fn)).parameters.values()
        params = [p.name for p in signature  # *args, **kwargs (kwargs.py): one input
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]  # per argument
        inputs = list(node.args) + [None] * max(len(params) - len(node.args), 0)
        for k in node.keywords:
            if any(p.kind is p.VAR_KEYWORD for p in signature):
                raise self.source_map.error(node, f"cannot compile {fn.__qualname__}: "
                                                  "keywords into **kwargs are supported in "
                                                  "calls of a function by its name and of "
                                                  "a method of a local object (kwargs.py)",
                                            hint="Name each keyword as a parameter.")
            if k.arg not in params:
                raise self.source_map.error(node, f"{fn.__qualname__}() has no parameter "
                                            f"{k.arg!r}", hint=f"Its parameters are "
                                            f"{', '.join(params)}: pass one of them.")
            inputs[params.index(k.arg)] = k.value
        return inputs


def _bind_keywords(rule, inputs, kwargs):
    """(inputs, keywords) with each keyword that names an input moved to its place
    (``np.clip(x, a_min=lo)``: lo gets its gradient); None if a keyword is not one
    the rule models (``where=``, ``out=``, ``order=``), or more arguments by position
    than it takes: either would be ignored."""
    defaults, modelled, positional = rule.parameters()
    if positional is not None and len(inputs) > positional:
        return None
    names = list(defaults)
    for key in list(kwargs):
        if key in names:
            at = names.index(key)
            if at < len(inputs):
                return None  # given twice: Python raises; no model of it here
            inputs += [None] * (at - len(inputs)) + [kwargs.pop(key)]
        elif key not in modelled:
            return None
    for at, node in enumerate(inputs):
        if node is None:  # skipped for a later keyword: the default, if it is a constant
            default = defaults[names[at]]
            if default is inspect.Parameter.empty or not isinstance(
                    default, (type(None), bool, int, float, str)):
                return None
            inputs[at] = S.const(default)
    return inputs, kwargs


def unknown(node, name):
    """An Op with no model: every name ``node`` reads is an input, so an active value
    reaching it by any route is refused (see :func:`check_modelled`)."""
    return Op(Kind.UNKNOWN, [S.name(n) for n in sorted(S.loaded_names(node))], name=name)


def _bool_valued(node):
    """Whether ``node`` always gives a bool: a comparison, ``not``, or ``and``/``or``
    of such (``a or b`` of other values gives one of them)."""
    if isinstance(node, gast.Compare) or (isinstance(node, gast.UnaryOp)
                                          and isinstance(node.op, gast.Not)):
        return True
    return isinstance(node, gast.BoolOp) and all(_bool_valued(v) for v in node.values)


# What a refusal calls a form without a model.
_FORMS = {gast.BoolOp: "'and'/'or' on values (they return an operand)",
          gast.Dict: "a dict", gast.Set: "a set", gast.JoinedStr: "an f-string",
          gast.Attribute: "an attribute of a value", gast.BinOp: "this operator",
          gast.UnaryOp: "this operator", gast.IfExp: "a conditional expression"}


_COMPREHENSIONS = {gast.SetComp: "a set comprehension"}
_SET_HINT = ("Build a list: a set has no order and merges equal values, so which of them "
             "a gradient reaches is not defined.")


def check_modelled(facts, active, varied, source_map):
    """Refuse, before anything is generated, every assignment whose value carries a
    gradient (its target is active) through an op with no model, or takes a varied
    value where its model holds one constant (a primitive's setting)."""
    for s in facts.assigns:
        op = facts.ops[id(s)]
        if op.kind in (Kind.UNKNOWN, Kind.OPAQUE) and set(target_names(s.targets[0])) & active:
            raise refusal(source_map, s, op)
        if op.kind in (Kind.PRIMITIVE, Kind.CALL, Kind.SPLIT):
            _refuse_active_literals(s, op, active, source_map)
        if op.kind is Kind.PRIMITIVE and set(target_names(s.targets[0])) & active:
            _refuse_varied_settings(s, op, varied, source_map)
        kept_whole = isinstance(s.targets[0], gast.Name) and s.targets[0].id in active
        if op.kind is Kind.SPLIT and kept_whole:  # its adjoint is made by unpacking only
            raise source_map.error(s, f"cannot differentiate the pieces of {op.name} kept "
                                      "together", hint="Unpack them: a, b = np.split(x, 2)")


def _refuse_active_literals(s, op, active, source_map):
    """Refuse a tuple or list literal argument holding an active name: an adjoint
    reaches a name given whole (``t = (a, b); f(t)``: a container), never one inside
    a literal left in the call (normalize keeps shapes and axes such as ``(n, 3)`` there)."""
    inputs = op.inputs[:1] if op.kind is Kind.PRIMITIVE and op.fn is operator.getitem else (
        op.inputs)  # an index carries no gradient
    for a in [*inputs, *op.kwargs.values()]:
        held = [e for e in getattr(a, "elts", ()) if isinstance(a, (gast.Tuple, gast.List))]
        if any(isinstance(e, gast.Name) and e.id in active for e in held):
            raise source_map.error(s, "cannot differentiate through a tuple literal of "
                                      "values passed to a call",
                                   hint="Name it first: t = (a, b), then pass t.")


# Keywords whose values are ints, bools, strings or dtypes: no gradient reaches them,
# whatever they are computed from (``dtype=dtype_of(x)``).
_DISCRETE_SETTINGS = frozenset({
    "axis", "axes", "keepdims", "dtype", "order", "casting", "device", "like", "copy",
    "endpoint", "num", "n", "upper", "hermitian", "full_matrices", "compute_uv", "mode",
    "method", "norm", "include_initial", "deg", "kind", "side", "decimals", "offset"})


def _refuse_varied_settings(s, op, varied, source_map):
    """Refuse a varied value passed to a keyword a primitive's rules hold constant (a
    setting, ``scaled(x, by=y)``): no rule gives it an adjoint."""
    for key, value in op.kwargs.items():
        if (isinstance(value, gast.Name) and value.id in varied
                and key not in _DISCRETE_SETTINGS):
            raise source_map.error(
                s, f"cannot differentiate {rules.registry.primitive_name(op.fn)} in its "
                   f"argument {key}=, a setting its derivative rules hold constant",
                hint="Pass a constant there, or use sd.stop_gradient on it if its "
                     "gradient is not wanted.")


def refusal(source_map, s, op):
    """The CompileError for differentiating statement ``s`` through ``op``."""
    what = op.name or "this expression"
    if op.kind is Kind.OPAQUE:
        return source_map.error(s, f"cannot differentiate {what} over an active value",
                                hint=_SET_HINT if what == _COMPREHENSIONS[gast.SetComp]
                                else "Write the loop out with 'for'.")
    if op.kind is Kind.PACK:
        return source_map.error(s, "cannot differentiate a tuple or list holding an "
                                   "active value",
                                hint="Keep arrays in separate variables, or join them "
                                     "with np.stack.")
    if op.fn is None and not isinstance(s.value, gast.Call):
        return source_map.error(s, f"cannot differentiate {what} holding an active value",
                                hint="Compute the value with NumPy operations on arrays.")
    return source_map.error(
        s, f"cannot differentiate {what}: it has no derivative rule and no Python source",
        hint="Use a NumPy or srcdiff op that has a rule, or register one with "
             "@sd.register_gradient.")


def compiled_as(fn):
    """What compiled code differentiates for a call of ``fn``: an sd.* op's NumPy form,
    the Python function an ``@sd.function`` wraps, else ``fn`` itself."""
    fn = getattr(fn, "__numpy__", fn)
    python = getattr(fn, "python_function", None)
    return python if inspect.isfunction(python) else fn


def is_library(fn):
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in ("numpy", "math", "builtins", "scipy")


def _describe_func(func):
    import ast
    return ast.unparse(gast.gast_to_ast(func))


# ---------------------------------------------------------------- activity

def target_names(target):
    """The names an assignment target binds (``x``, ``x[i]`` -> x, ``a, b``)."""
    if isinstance(target, gast.Subscript):
        return [target.value.id]
    if isinstance(target, (gast.Tuple, gast.List)):
        return [n for t in target.elts for n in target_names(t)]
    return [target.id]


def activity(facts, active_params):
    """The names that are varied (depend on an active input) and useful (the
    result depends on them): only those get adjoints."""
    flows = _flows(facts)
    varied = _grow(set(active_params), flows)
    ret = facts.body[-1] if facts.body else None
    returned = S.loaded_names(ret.value) if isinstance(ret, gast.Return) and ret.value else set()
    useful = _grow(returned, [(targets, inputs) for inputs, targets in flows])
    return varied & useful


def varied_names(facts, active_params):
    """The names whose values depend on an active input."""
    return _grow(set(active_params), _flows(facts))


def adjoint_inputs(facts, active, active_params):
    """``feeds(s, name)``: whether the adjoint of statement ``s`` gives one to ``name``:
    it is active, and the value it held when ``s`` ran was varied.  ``x = f(x)`` on
    data that later mixes with an active value (x active by name) gives no adjoint to
    the x it read, nor does any statement before it."""
    varied = _varied_at(facts, active_params)
    return lambda s, name: name in active and name in varied[id(s)]


def _varied_at(facts, active_params):
    """id(statement) -> the names holding a varied value just before it runs: the
    flows of ``_flows``, followed in order (a loop to a fixpoint, branches joined).
    A branch or loop records them all; any other statement those it reads (a
    :class:`_Read`), the only ones asked of it, so that a long body costs no copy of
    them all per statement."""
    before = {}
    _varied_block(facts.body, set(active_params), facts, before, {})
    return before


def _varied_block(stmts, varied, facts, before, reads):
    """The names varied after ``stmts`` run, ``varied`` before them (a set this changes
    along the block; arms and loop bodies get copies); records in ``before`` those
    varied before each statement; ``reads``: id(statement) -> the names it reads."""
    for s in stmts:
        if isinstance(s, (gast.If, gast.For, gast.While)):
            record = frozenset(varied)
        else:
            if id(s) not in reads:
                reads[id(s)] = frozenset(S.loaded_names(s))
            record = _Read(reads[id(s)], varied)
        seen = before.get(id(s))
        before[id(s)] = record if seen is None else seen | record
        varied = _varied_stmt(s, varied, facts, before, reads)
    return varied


def _varied_stmt(s, varied, facts, before, reads):
    if isinstance(s, gast.If):
        return (_varied_block(s.body, set(varied), facts, before, reads)
                | _varied_block(s.orelse, set(varied), facts, before, reads))
    if isinstance(s, (gast.For, gast.While)):
        bound = {s.target.id} if isinstance(s, gast.For) else set()
        head = varied
        while not (out := _varied_block(s.body, head - bound, facts, before, reads)) <= head:
            head = head | out
        return head  # also what a loop that never runs leaves
    if not isinstance(s, gast.Assign):
        return varied
    op = facts.ops[id(s)]
    target = s.targets[0]
    names = target_names(target)
    reached = op.kind is not Kind.NONE and bool(_dependencies(s, op) & varied)
    if not isinstance(target, gast.Subscript):  # x[i] = v: x keeps what it held
        varied.difference_update(names)
    if reached:
        varied.update(names)
    return varied


class _Read:
    """The varied names among those a statement other than a branch or loop reads: all
    that ``feeds`` asks of it (its inputs, an array it writes into).  A name it does
    not read is a question the analysis did not foresee: raised, never answered."""

    __slots__ = ("reads", "varied")

    def __init__(self, reads, varied):
        self.reads = reads
        self.varied = frozenset(n for n in reads if n in varied)

    def __contains__(self, name):
        if name not in self.reads:
            raise InvariantError(f"whether {name!r} is varied was asked of a statement "
                                 "that does not read it")
        return name in self.varied

    def __or__(self, other):  # a statement in a loop, seen again
        joined = _Read(self.reads, ())
        joined.varied = self.varied | other.varied
        return joined


def _flows(facts):
    """(inputs, targets) of each assignment that carries a gradient."""
    flows = []
    for s in facts.assigns:
        op = facts.ops[id(s)]
        if op.kind is not Kind.NONE:
            flows.append((_dependencies(s, op), set(target_names(s.targets[0]))))
    return flows


def _grow(known, edges):
    """``known``, grown to a fixpoint along ``edges``: (sources, sinks) pairs, where
    reaching any source reaches every sink.  A worklist: each edge fires once."""
    by_source = {}
    for k, (sources, _) in enumerate(edges):
        for name in sources:
            by_source.setdefault(name, []).append(k)
    fired = set()
    work = list(known)
    while work:
        for k in by_source.get(work.pop(), ()):
            if k not in fired:
                fired.add(k)
                new = edges[k][1] - known
                known |= new
                work.extend(new)
    return known


def _dependencies(s, op):
    """Names whose values flow into the differentiable part of the statement."""
    names = set()
    for a in op.inputs:
        if isinstance(a, gast.Name):
            names.add(a.id)
        elif isinstance(a, (gast.Tuple, gast.List)):
            names |= {e.id for e in a.elts if isinstance(e, gast.Name)}
    if op.kind is Kind.PRIMITIVE and op.fn is operator.getitem:
        names.discard(getattr(op.inputs[1], "id", None))  # the index carries no gradient
    for v in op.kwargs.values():
        if isinstance(v, gast.Name) and op.kind is Kind.CALL:
            names.add(v.id)
    target = s.targets[0]
    if isinstance(target, gast.Subscript):
        names |= {target.value.id} | S.loaded_names(s.value)
    return names

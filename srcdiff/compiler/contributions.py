"""What the adjoint of one statement contributes to the adjoints of its inputs.

For an assignment ``x = f(a, b, ...)`` reached with ``g``, the adjoint of x, and
``ans``, the name holding x's new value, :meth:`Contributions.of` returns the
statements to run first (a callee's backward call) and a ``(name, expression)``
pair per active input: the derivative rule of f inlined with names substituted,
broadcasting undone only where it can have happened.  The expressions depend on
the statement alone, never on adjoint states, so the emitter and the adjoint-state
dataflow see the same contributions.

With ``rows`` set (the name of a batch's leading shape), the contributions are those
of the batched backward pass: each rule must take a batch of adjoints (its trait
``batches``) and a callee is called through its own batched pass; else ``NotBatched``.

Calls of user functions are resolved first (:func:`resolve_calls`): each one whose
result is active is compiled with its active arguments, and its tape variable named.
"""
import functools
import inspect
import operator

import gast
import numpy as np

from ..ops.gradient_ops import rule_adjoint
from ..rules import helpers, traits_of
from ..rules.containers import SEVERAL, WHOLE, from_array
from . import syntax as S
from .adjoint_state import ARITHMETIC, ITEM, OTHER, SCATTER, fresh
from .analysis import Kind, target_names
from .errors import CompileError, NotBatched
from .inline import matrix_form, rule_syntax


def resolve_calls(facts, active, feeds, compile_call, names, depths, passed=()):
    """id(statement) -> (compiled unit, tape variable) for each call of a user function
    whose result is active, compiled with the arguments it gives adjoints to
    (``feeds``, see analysis.adjoint_inputs; ``depths``: the containers among them,
    see containers.py), and for each call passed Tensors its callee reads (``passed``,
    the parameters unit._lift made: only compiled code takes them); and the names that
    hold a tuple of results (``t = f(x)``, read back as ``t[k]``)."""
    calls, tuples = {}, set()
    for s in reversed(facts.assigns):  # the order the backward pass meets them
        op = facts.ops[id(s)]
        targets = target_names(s.targets[0])
        if op.kind is not Kind.CALL or not (set(targets) & active or any(
                isinstance(a, gast.Name) and a.id in passed for a in op.inputs)):
            continue
        mask = tuple(isinstance(a, gast.Name) and feeds(s, a.id) for a in op.inputs)
        unit = compile_call(op.fn, mask, _kinds(facts, op, depths), s, op.inputs)
        calls[id(s)] = (unit, names.fresh(targets[0] + "_tape"))
        if unit.several and isinstance(s.targets[0], gast.Name):
            tuples.add(s.targets[0].id)  # t[k]'s adjoint is the k-th of a list
    return calls, tuples


def callee_writes(facts, calls, compile_call, depths):
    """({id(call statement) -> the positions of the arguments the user function it
    calls may write into (its unit's ``mutated``)}, {the same -> the positions of those
    its result may share objects with (``aliased``)}, {the same -> its unit}), for
    every call: one whose result is not active is compiled with no active argument to
    learn them, and one that cannot be compiled (its unit None) may write into, and
    return, any of its arguments."""
    writes, aliases, units = {}, {}, {}
    for s in facts.exprs + facts.assigns:
        op = facts.ops[id(s)]
        if op.kind is not Kind.CALL:
            continue
        if id(s) in calls:
            unit = calls[id(s)][0]
        else:
            try:
                unit = compile_call(op.fn, (False,) * len(op.inputs),
                                    _kinds(facts, op, depths), s, op.inputs)
            except (CompileError, TypeError):  # TypeError: called with arguments it
                writes[id(s)] = aliases[id(s)] = tuple(range(len(op.inputs)))  # does
                units[id(s)] = None                                        # not take
                continue
        writes[id(s)] = tuple(unit.mutated)
        aliases[id(s)] = tuple(unit.aliased)
        units[id(s)] = unit
    return writes, aliases, units


def _kinds(facts, op, depths):
    """What the callee of ``op`` is compiled for, argument by argument (cache.py)."""
    return tuple(("container",) + depths[a.id] if isinstance(a, gast.Name)
                 and depths.get(a.id, (0,))[0] else _is_number(facts, a) for a in op.inputs)


def _is_number(facts, node):
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return isinstance(node, gast.Name) and node.id in facts.scalars


class Contributions:
    def __init__(self, facts, feeds, sequences, calls, refs, namer, source_map):
        self.feeds = feeds  # feeds(s, name): whether s's adjoint gives name one
        self.sequences = sequences  # names holding lists, whose adjoints are lists
        self.calls = calls
        self.refs = refs
        self.namer = namer
        self.scalars, self.ints, self.ranks = facts.scalars, facts.ints, facts.ranks
        self.made = {}  # (id(statement), g, ans) -> what ``of`` returned
        self.source_map = source_map
        self.rows = None  # the batch's leading shape, when the batched pass is emitted

    def of(self, s, op, g, ans):
        """(statements to run first, [(name, adjoint expression)]) for the statement's
        active inputs.  Made once for each (statement, g, ans): the draft backward pass
        and the final one share them (the draft's code is discarded, never changed)."""
        key = (id(s), getattr(g, "id", None), getattr(ans, "id", None), self.rows)
        if key not in self.made:
            self.made[key] = (self.call(s, op, g) if op.kind is Kind.CALL
                              else ([], self.input_adjoints(s, op, g, ans)))
        return self.made[key]

    def input_adjoints(self, s, op, g, ans):
        """(name, adjoint expression) for each input a statement that is not a call of
        a compiled function gives an adjoint to."""
        out = []
        if op.kind is Kind.COPY:
            (a,) = op.inputs
            if self.feeds(s, a.id):
                out.append((a.id, g))
            return out
        if op.kind is Kind.PACK:  # seq = [a, b]: da is dseq[0]; {"k": a}: dseq["k"]
            keys = op.keys or [S.const(k) for k in range(len(op.inputs))]
            return [(a.id, gast.Subscript(value=g, slice=S.copy_node(key), ctx=gast.Load()))
                    for key, a in zip(keys, op.inputs)
                    if isinstance(a, gast.Name) and self.feeds(s, a.id)]
        if op.kind is not Kind.PRIMITIVE:
            return out
        sequence = getattr(op.inputs[0], "id", None) in self.sequences
        if op.fn is operator.getitem and sequence and self.rows is not None:
            raise NotBatched("a list's adjoint is written item by item")
        if op.fn is operator.getitem and sequence and not isinstance(op.inputs[1], gast.Slice):
            return [(op.inputs[0].id, _ListItem(op.inputs[1], g))]
        if self.rows is not None and not traits_of(op.fn).batches:
            raise NotBatched(f"the rule of {op.rule.name} takes one adjoint at a time")
        elementwise = isinstance(op.fn, np.ufunc) or op.fn in _ELEMENTWISE
        # numbers in, a number out: of an elementwise op only (np.full(3, a) is an array)
        result_scalar = elementwise and all(self.is_scalar(a) for a in op.inputs)
        for i, a in enumerate(op.inputs):
            names = ([a] if isinstance(a, gast.Name) else [])
            if not names or not self.feeds(s, a.id):
                continue
            if op.fn is operator.getitem and i == 1:
                continue
            user_rule = getattr(op.fn, "srcdiff_user_rule", None)
            if user_rule is not None:
                expr = gast.Call(func=self.refs.helper("unbroadcast"), keywords=[],
                                 args=[self.user_rule(user_rule, i, g, ans, op), S.name(a.id)])
            else:
                vjp = op.rule.vjp(i)
                if vjp is None:  # a gradient reaches an input the rule has none for
                    raise self.source_map.error(
                        s, f"cannot differentiate {op.rule.name} with respect to its "
                        f"argument {i + 1}: its rule has no derivative for it",
                        hint="Compute that argument from values that carry no gradient.")
                syntax = rule_syntax(vjp)
                self.refs.bind_globals(syntax)
                inputs = op.inputs if op.fn is not operator.getitem else [
                    op.inputs[0], _index_value(op.inputs[1])]
                if op.rule not in _AS_GIVEN and op.fn is not operator.getitem:
                    inputs = [self.as_array(b) for b in inputs]
                expr = syntax.inline(i, g, ans, inputs, op.kwargs)
            # numbers beside a broadcasting op's input leave it its shape (np.full(5, v) not)
            others = [b for k, b in enumerate(op.inputs) if k != i] if elementwise else [None]
            expr = _simplify(expr, lambda v: self.same_shape(v, a, others, result_scalar),
                             self.rows, self.ranks)
            if op.fn is operator.getitem and not sequence:  # a list's adjoint is Items
                expr = _Scatter(op.inputs[1], g, expr)
            elif (a.id in self.sequences and op.fn is not operator.getitem
                  and op.rule not in _AS_GIVEN):
                if self.rows is not None:
                    raise NotBatched("an adjoint split into the items of a list")
                # np.sum(xs) of a list sums np.array(xs): its adjoint, item by item
                expr = gast.Call(func=self.refs.bind(from_array, "from_array"),
                                 args=[expr, S.name(a.id)], keywords=[])
            out.append((a.id, expr))
        return out

    def as_array(self, node):
        """What a rule on arrays reads for input ``node``: ``np.asarray(xs)`` of a list
        (NumPy converts it so; ``xs == ans`` on the list itself is one bool)."""
        if isinstance(node, gast.Name) and node.id in self.sequences:
            return gast.Call(func=S.expr("np.asarray"), args=[node], keywords=[])
        return node

    def user_rule(self, rule, i, g, ans, op):
        """Input ``i``'s adjoint from a rule given to ``sd.register_gradient``: its
        returned expression inlined, or a call when it is more than one statement or
        reads ``**kwargs`` (a dict no inlined expression has)."""
        several = len(op.inputs) > 1
        try:
            syntax = rule_syntax(rule)
        except LookupError:
            syntax = None
        if syntax is None or syntax.varkw is not None:
            body = gast.Call(func=self.refs.bind(rule, rule.__name__),
                             args=[g, ans] + list(op.inputs), keywords=[
                                 gast.keyword(arg=k, value=v) for k, v in op.kwargs.items()])
        else:
            self.refs.bind_globals(syntax)
            body = syntax.inline(i, g, ans, op.inputs, op.kwargs)
        if isinstance(body, gast.Tuple):
            return body.elts[i]
        return gast.Call(func=self.refs.bind(rule_adjoint, "rule_adjoint"),
                         args=[body, S.const(i)], keywords=[]) if several else body

    def is_scalar(self, node):
        if isinstance(node, gast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        return isinstance(node, gast.Name) and node.id in self.scalars

    def same_shape(self, v, a, others, result_scalar):
        """Whether ``unbroadcast(e, v)`` is the identity here (no broadcasting into v)."""
        if not (isinstance(v, gast.Name) and v.id == a.id):
            return False
        if self.is_scalar(a) and result_scalar:
            return True
        return all(self.is_scalar(b) for b in others)

    def call(self, s, op, g):
        unit, tape = self.calls[id(s)]
        if self.rows is None:
            backward = self.refs.bind(unit.backward, unit.name + "_backward")
            adjoint = gast.Call(func=backward, args=[S.name(tape), g], keywords=[])
        else:
            rows = getattr(unit, "backward_rows", None)
            if rows is None:
                raise NotBatched(f"it calls {unit.name}, whose adjoint code is not batched")
            backward = self.refs.bind(rows, unit.name + "_backward_rows")
            adjoint = gast.Call(func=backward, args=[S.name(tape), g, S.name(self.rows)],
                                keywords=[])
        active = [a for a in op.inputs if isinstance(a, gast.Name) and self.feeds(s, a.id)]
        # an input the callee's result does not depend on gets None from it: no contribution
        connected = [(k, a) for k, (a, p) in enumerate(zip(active, unit.wrt))
                     if p not in unit.unconnected]
        if not connected:
            return [], []
        if len(active) == 1:
            return [], [(active[0].id, adjoint)]
        results = self.namer.at(s, "d_" + unit.name)
        return [S.assign(results, adjoint)], [
            (a.id, gast.Subscript(value=S.name(results), slice=S.const(k), ctx=gast.Load()))
            for k, a in connected]

    def names_an_axis(self, index):
        """Whether ``x[index]`` needs an axis of x (an int, a slice or an index array):
        then x, and an adjoint made of arrays of its shape, is no 0-d array, whose
        arithmetic gives NumPy scalars, which cannot be written into."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        return any(not (isinstance(p, gast.Constant) and (p.value is None or p.value is ...))
                   and not (isinstance(p, gast.Name) and p.id not in self.ints
                            and p.id not in self.ranks)  # an array, not () or ...
                   for p in parts)

    def is_basic(self, index):
        """Whether ``x[index]`` names each element at most once (ints and slices)."""
        if isinstance(index, gast.Tuple):
            return all(self.is_basic(e) for e in index.elts)
        if isinstance(index, gast.Slice):
            return True  # a slice never names an element twice, whatever its bounds
        if isinstance(index, gast.Constant):
            return index.value is None or isinstance(index.value, int)
        return isinstance(index, gast.Name) and index.id in self.ints


class _Scatter:
    """The adjoint of ``x[index]``: added in place when ``dx`` is an array of our own."""

    def __init__(self, index, g, dense):
        self.index = index
        self.g = g
        self.dense = dense  # the rule's expression: a new array

    def in_place(self, d, basic, refs, batched=None):
        """``d[index] += g``; for a batch of adjoints (``batched`` names its leading
        shape), at ``d[:, index]`` (a basic index) or by ``helpers.add_at`` past it."""
        if basic:
            index = batch_index(self.index) if batched else S.copy_node(self.index)
            target = gast.Subscript(value=S.name(d), slice=index, ctx=gast.Store())
            return gast.AugAssign(target=target, op=gast.Add(), value=S.copy_node(self.g))
        args = [S.name(d), _index_value(S.copy_node(self.index)), S.copy_node(self.g)]
        if batched:
            return gast.Expr(value=gast.Call(func=refs.helper("add_at"), keywords=[],
                                             args=args + [S.expr(f"len({batched})")]))
        return gast.Expr(value=gast.Call(func=S.expr("np.add.at"), args=args, keywords=[]))


class _ListItem:
    """The adjoint of ``seq[index]`` for a list ``seq``: added into its slot of ``dseq``."""

    def __init__(self, index, g):
        self.index = index
        self.g = g

    def add_to(self, d):
        slot = gast.Subscript(value=S.name(d), slice=S.copy_node(self.index), ctx=gast.Load())
        store = gast.Subscript(value=S.name(d), slice=S.copy_node(self.index),
                               ctx=gast.Store())
        return S.assign(store, gast.BinOp(left=slot, op=gast.Add(), right=S.copy_node(self.g)))


def batch_index(index):
    """A basic index (ints, slices, None) of an array, as the index of the same elements
    of each row of a batch of them: ``i`` -> ``:, i``."""
    elts = [S.copy_node(e) for e in index.elts] if isinstance(index, gast.Tuple) else [
        S.copy_node(index)]
    whole = gast.Slice(lower=None, upper=None, step=None)
    return gast.Tuple(elts=[whole] + elts, ctx=gast.Load())


# rules that read a container input as it is (max(pairs)), not as the array NumPy makes
_AS_GIVEN = (*WHOLE.values(), *SEVERAL.values())
_ELEMENTWISE = (np.clip, np.where)  # broadcasting functions that are not ufuncs


def _index_value(index):
    """An index as a value a rule can take (``1:3`` -> ``slice(1, 3, None)``)."""
    if isinstance(index, gast.Slice):
        return gast.Call(func=S.name("slice"), keywords=[], args=[
            S.const(None) if p is None else p for p in (index.lower, index.upper, index.step)])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[_index_value(e) for e in index.elts], ctx=gast.Load())
    return index


def _simplify(expr, same_shape, rows=None, ranks=None):
    """Drop ``unbroadcast(e, v)`` where no broadcasting happened; fold constants, and
    ``batch_axes()``, which the pass emitted knows (``rows``: the batch's leading shape,
    None without one); inline a rule helper's form for matrices where ``ranks`` (name
    -> ndim) says its arguments are (``dout @ W.T`` for ``matmul_lhs(dout, h, W)``);
    drop a rule helper's last argument where it is its default."""
    return _Simplify(same_shape, rows, ranks or {}).visit(expr)


class _Simplify:
    def __init__(self, same_shape, rows, ranks):
        self.same_shape = same_shape
        self.rows = rows
        self.ranks = ranks

    def visit(self, node):
        """``node`` simplified, its children first, as a NodeTransformer would: in a
        plain recursion, which costs a fraction of the visitor's dispatch (this runs on
        every contribution of every statement)."""
        S.transform_children(node, self.visit)
        kind = type(node)
        if kind is gast.Call:
            return self.visit_Call(node)
        if kind is gast.BinOp:
            return self.visit_BinOp(node)
        return node

    def visit_Call(self, node):
        if not isinstance(node.func, gast.Name):
            return node
        if node.func.id == "batch_axes" and not node.args:
            return S.const(0) if self.rows is None else S.expr(f"len({self.rows})")
        if (node.func.id == "unbroadcast" and len(node.args) == 2
                and self.same_shape(node.args[1])):
            return node.args[0]
        helper = getattr(helpers, node.func.id, None)
        if (hasattr(helper, "matrices") and not node.keywords and len(node.args) > 1
                and all(isinstance(a, gast.Name) and self.ranks.get(a.id) == 2
                        for a in node.args[1:])):
            form = matrix_form(helper, node.args)
            if form is not None:
                return form
        if node.args and isinstance(node.args[-1], gast.Constant) and not node.keywords:
            default = helper_defaults(node.func.id).get(len(node.args) - 1, _NONE)
            if default is not _NONE and node.args[-1].value == default:
                node.args = node.args[:-1]
        return node

    def visit_BinOp(self, node):
        if (isinstance(node.op, gast.Pow) and isinstance(node.right, gast.Constant)
                and node.right.value == 1):
            return node.left
        if isinstance(node.left, gast.Constant) and isinstance(node.right, gast.Constant):
            try:
                value = eval(compile(gast.gast_to_ast(gast.Expression(body=node)),
                                     "<fold>", "eval"))
            except Exception:
                return node
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return S.const(value)
        return node


_NONE = object()


@functools.lru_cache(maxsize=None)
def helper_defaults(name):
    """{position: default} of the parameters of the rule helper ``name`` (none if it is
    no helper)."""
    fn = getattr(helpers, name, None)
    if not callable(fn):
        return {}
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return {}
    return {k: p.default for k, p in enumerate(params) if p.default is not p.empty}


def how(expr, refs):
    """How a contribution changes its adjoint's state: (how, dense), see adjoint_state;
    ``refs``: the generated code's names (what ``unbroadcast`` means there)."""
    if isinstance(expr, _ListItem):
        return ITEM, OTHER
    if isinstance(expr, _Scatter):
        return SCATTER, how(expr.dense, refs)[0]
    return (ARITHMETIC if fresh(expr, refs) else OTHER), OTHER

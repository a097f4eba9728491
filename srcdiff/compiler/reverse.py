"""The reverse pass: from a normalised function, its forward and backward passes.

The backward pass walks the statements in reverse.  It reads primal values
from the variables themselves: when a statement overwrites a value that some
adjoint reads, the forward pass saves the old value first (into a named
variable outside loops, onto a stack inside them) and the backward pass
restores it right after that statement's adjoint.  So at every point of the
backward pass each variable holds the value it had at the matching point of
the forward pass, and nothing is saved that no adjoint reads.  Inside loops,
cheap operations on numbers are recomputed instead of stacked (see
``plan_recomputes``).

Adjoint state is tracked statically per name: unset (zero, no variable yet),
set, or owned (set, and an array nobody else refers to, so it may be updated
in place).  The first contribution assigns ``dx = ...``, later ones add; a
branch or loop whose paths disagree materialises zeros where one path has none.
"""
import copy
import operator
import os

import gast

from ..rules import traits_of
from ..rules.helpers import measured_args
from . import syntax as S
from .adjoint_state import (ARITHMETIC, ITEM, OTHER, OWNED, SCATTER, SET, UNSET, Flow,
                            advance, join, own)
from .aliasing import check_calls_in_place, check_views
from .analysis import Describer, Kind, activity, target_names, varied_names
from .facts import gather
from .inline import rule_syntax
from .optimize import live_names, propagate_copies
from .plan import Marks, Namer, Plan, make_plan
from .runtime import shape_of



class Reverser:
    def __init__(self, parsed, body, wrt, names, refs, compile_call, scalars=()):
        self.parsed = parsed
        self.body = body
        self.wrt = list(wrt)               # active parameters
        self.names = names
        self.refs = refs                   # the generated code's namespace
        self.compile_call = compile_call   # (fn, active mask, scalar mask) -> unit
        facts = self.facts = gather(body, parsed.params, scalars,
                                    Describer(parsed.resolve, parsed.source_map))
        self.ops = facts.ops
        self.active = activity(facts, self.wrt) | set(self.wrt)
        self.scalars, self.ints = facts.scalars, facts.ints
        check_views(facts, parsed.source_map)
        check_calls_in_place(facts, varied_names(facts, self.wrt), parsed.source_map)
        self.sequences = set(facts.packs)  # grows by the results of calls returning tuples
        self.written = facts.written
        self.primal = facts.primal  # the values' names
        self.loop_targets = facts.loop_targets
        self.adjoints = {}
        self.plan = Plan()
        self.namer = Namer(names)
        self.calls = {}           # id(statement) -> (compiled unit, tape variable)
        self.counters = {}        # id(loop) -> trip-count variable
        self.counter_stacks = {}  # id(loop) -> stack of trip counts, for nested loops
        self.fresh_names = {}  # (statement, purpose) -> name: the draft and the real one agree

    # ------------------------------------------------------------ entry point
    def run(self):
        ret = self.body[-1] if self.body and isinstance(self.body[-1], gast.Return) else None
        if ret is None or ret.value is None:
            raise self.parsed.source_map.error(self.parsed.node, "the function must end by "
                                               "returning a value to differentiate")
        outputs = ret.value.elts if isinstance(ret.value, gast.Tuple) else [ret.value]
        self.outputs = outputs
        # A draft marks the primal values the adjoints read, the plan saves them (and
        # what its own restores read), and the backward pass is emitted for the plan.
        self.backward_body(outputs)
        marks = self.marks()
        for _ in range(3):
            self.plan = make_plan(self.facts, marks, self.tapes(), self.namer)
            backward = self.backward_body(outputs)
            unplanned = {name: at - self.plan.reads_at.get(name, set())
                         for name, at in self.reads_at.items() if name in self.primal}
            if not any(unplanned.values()):
                break
            # the plan models every read a restore adds: this is a bug, made safe
            if os.environ.get("SRCDIFF_CHECKS") == "1":
                raise AssertionError(f"srcdiff internal error: reads the plan did not "
                                     f"foresee: {sorted(n for n, at in unplanned.items() if at)}")
            for name, at in self.reads_at.items():
                marks.reads_at.setdefault(name, set()).update(at)
        else:
            raise AssertionError("srcdiff internal error: the backward pass kept reading "
                                 "values the plan did not save")
        temporaries = set(self.adjoints.values()) - {self.adjoint(p) for p in self.wrt}
        propagate_copies(backward[0], temporaries)
        # the tape: what the backward pass reads before it assigns it (a loop's
        # counter, say, is its own)
        self.live = (live_names(backward[0]) & self.primal) - set(self.adjoints.values())
        self.measured = _shape_only(backward[0], self.live)
        self.held = self.facts.held
        forward = self.forward_body(ret)
        return forward, backward

    def fresh(self, s, hint):
        """A new name for ``hint`` at statement ``s``, the same on every run."""
        key = (id(s), hint)
        if key not in self.fresh_names:
            self.fresh_names[key] = self.names.fresh(hint)
        return self.fresh_names[key]

    def marks(self):
        return Marks({name: set(at) for name, at in self.reads_at.items()},
                     frozenset(self.coded))

    def tapes(self):
        return {sid: tape for sid, (_, tape) in self.calls.items()}

    def adjoint(self, name):
        if name not in self.adjoints:
            self.adjoints[name] = self.names.fresh("d" + name)
        return self.adjoints[name]

    # ------------------------------------------------------------ backward
    def backward_body(self, outputs):
        self.state = {}
        self.accumulated = set()  # adjoints updated while SET, where owning them would help
        self.flow = Flow(self.effects, self.owned)
        self.effect_cache = {}
        for out in outputs:
            if isinstance(out, gast.Name) and out.id in self.active:
                self.state[out.id] = SET
        self.reads_at = {}  # name -> statements whose adjoint code reads it
        self.coded = set()  # compound statements with adjoint code
        self.replayed = set()  # id(loop) of loops the backward pass replays
        code = self.reverse_block(self.body[:-1])
        results = []
        # None: no path from p to the result (TensorFlow's "unconnected")
        self.unconnected = tuple(p for p in self.wrt if self.state.get(p, UNSET) == UNSET)
        for p in self.wrt:
            results.append(S.const(None) if p in self.unconnected else S.name(self.adjoint(p)))
        value = results[0] if len(results) == 1 else gast.Tuple(elts=results, ctx=gast.Load())
        return code, value

    def reverse_block(self, stmts):
        code = []
        last_comment = None
        for s in reversed(stmts):
            block = self.reverse_stmt(s)
            if block and _is_comment(block[0]):
                if block[0].value.value == last_comment:
                    block = block[1:]  # one comment per source line
                else:
                    last_comment = block[0].value.value
            rerun = [st for r in self.plan.recompute_before.get(id(s), ()) for st in
                     self.forward_stmt(r)]
            at = 1 if block and _is_comment(block[0]) else 0
            code.extend(block[:at] + rerun + block[at:])
        return code

    def reverse_stmt(self, s):
        code = self._reverse_stmt(s)
        own = code if isinstance(s, gast.Assign) else [c for c in code if not isinstance(
            c, (gast.If, gast.For))]
        if isinstance(s, (gast.If, gast.For)):
            own = own + [c.test if isinstance(c, gast.If) else c.iter for c in code
                         if isinstance(c, (gast.If, gast.For))]
        for node in own:
            for name in S.loaded_names(node):
                self.reads_at.setdefault(name, set()).add(id(s))
        return code

    def _reverse_stmt(self, s):
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            if isinstance(target, gast.Subscript):
                code = self.reverse_setitem(s, target)
            elif isinstance(target, gast.Tuple):
                code = self.reverse_unpack(s, target_names(target))
            else:
                code = self.reverse_assign(s, target.id)
            # a call's tape saved in a loop: the previous iteration's, once this adjoint ran
            tape = self.call_tape(s)
            save = tape and self.plan.saves.get((id(s), tape[0]))
            return self.comment(s, code + ([self.restore(tape[0], save)] if save else []))
        return self._reverse_compound(s)

    def call_tape(self, s):
        """The tape variable of a call statement, as a list of at most one name."""
        return [self.calls[id(s)][1]] if id(s) in self.calls else []

    def _reverse_compound(self, s):
        if isinstance(s, gast.If):
            return self.reverse_if(s)
        if isinstance(s, (gast.For, gast.While)):
            return self.reverse_loop(s)
        return []

    def comment(self, s, code):
        """Head an adjoint block with the source line it comes from (not bare restores)."""
        if not hasattr(s, "lineno") or all(self.is_restore(c) for c in code):
            return code
        line = self.parsed.source_map.line(s)
        number = self.parsed.source_map.file_line(s)
        text = f"line {number}: {line.strip()}" if line else f"line {number}"
        return [Comment(text)] + code

    def reverse_assign(self, s, x):
        op = self.ops[id(s)]
        save = self.plan.saves.get((id(s), x))
        restore = [self.restore(x, save)] if save else []
        if x not in self.active or self.state.get(x, UNSET) == UNSET:
            return restore
        inputs = [a.id for a in op.inputs if isinstance(a, gast.Name)]
        if op.kind in (Kind.UNKNOWN, Kind.OPAQUE) and set(inputs) & self.active:
            raise self.no_rule(s, op)
        if isinstance(s.value, gast.BinOp) and set(inputs) & self.sequences:
            raise self.parsed.source_map.error(
                s, "cannot differentiate arithmetic on a list (xs + [v] joins lists)",
                hint="Keep arrays in separate variables, or join them with np.stack or "
                     "np.concatenate.")
        g, ans = S.name(self.adjoint(x)), S.name(x)
        pre = []
        self_reference = x in inputs
        if self_reference and save:
            # the inputs must see the old value: restore first, keep the new one as ans
            if self.reads_answer(op):
                kept = self.fresh(s, x + "_new")
                pre.append(S.assign(kept, S.name(x)))
                ans = S.name(kept)
            pre.append(restore.pop())
        setup, contributions = self.contributions(s, op, g, ans)
        pre += setup  # a callee's backward call: before its results are read
        self.state[x] = UNSET  # x's old value has its own adjoint, zero so far
        code = pre
        late = [(v, c) for v, c in contributions if v == x]
        for v, c in contributions:
            if v != x:
                code += self.contribute(v, c)
        if late:  # x = f(x, ...): every use of dx above is done
            total = late[0][1]
            for _, c in late[1:]:
                total = gast.BinOp(left=total, op=gast.Add(), right=c)
            code += self.contribute(x, total)
        return code + restore

    def reverse_unpack(self, s, targets):
        """``p, q = f(x)``: f's backward pass takes the adjoints of all its results."""
        op = self.ops[id(s)]
        restores = [self.restore(t, self.plan.saves[(id(s), t)]) for t in targets
                    if (id(s), t) in self.plan.saves]
        live = [t for t in targets if t in self.active and self.state.get(t, UNSET) != UNSET]
        if not live:
            return restores
        inputs = [a.id for a in op.inputs if isinstance(a, gast.Name)]
        split = traits_of(op.fn).splits if isinstance(s.value, gast.Call) else None
        if op.kind is not Kind.CALL and split is None:
            if set(inputs) & self.active:
                raise self.no_rule(s, op)
            for t in targets:  # new values with no gradient: the old ones get none of theirs
                self.state[t] = UNSET
            return restores
        douts = gast.Tuple(elts=[S.name(self.adjoint(t)) if t in live else self.zeros(t)
                                 for t in targets], ctx=gast.Load())
        for t in targets:
            self.state[t] = UNSET
        code = []
        if restores and len(live) < len(targets):  # the zeros measure values about to change
            results = self.fresh(s, "d_" + (op.fn.__name__ if op.fn else "call"))
            code, douts = [S.assign(results, douts)], S.name(results)
        code += restores
        if split is not None:  # the pieces of x: its adjoint is theirs joined back
            x = s.value.args[0]
            if isinstance(x, gast.Name) and x.id in self.active:
                axis = next((k.value for k in s.value.keywords if k.arg == "axis"), None)
                if axis is None:
                    axis = s.value.args[2] if len(s.value.args) > 2 else S.const(split)
                join = gast.Call(func=S.expr("np.concatenate"), args=[douts],
                                 keywords=[gast.keyword(arg="axis", value=axis)])
                code += self.contribute(x.id, join)
            return code
        setup, contributions = self.call_contributions(s, op, douts)
        code += setup
        for v, c in contributions:
            code += self.contribute(v, c)
        return code

    def reads_answer(self, op):
        """Whether the adjoint of ``op`` reads its result (a call's reads its own tape)."""
        if op.kind is not Kind.PRIMITIVE:
            return False
        return any(vjp is not None and "ans" in rule_syntax(vjp).reads()
                   for vjp in map(op.rule.vjp, range(len(op.inputs))))

    def contributions(self, s, op, g, ans):
        """(statements to run first, [(name, adjoint expression)]) for the statement's
        active inputs."""
        if op.kind is Kind.CALL:
            return self.call_contributions(s, op, g)
        return [], self.input_adjoints(s, op, g, ans)

    def input_adjoints(self, s, op, g, ans):
        """(name, adjoint expression) for each active input of a statement that is not
        a call of a compiled function."""
        out = []
        if op.kind is Kind.COPY:
            (a,) = op.inputs
            if a.id in self.active:
                out.append((a.id, g))
            return out
        if op.kind is Kind.PACK:  # seq = [a, b]: the adjoint of seq is the list [da, db]
            return [(a.id, gast.Subscript(value=g, slice=S.const(k), ctx=gast.Load()))
                    for k, a in enumerate(op.inputs)
                    if isinstance(a, gast.Name) and a.id in self.active]
        if op.kind is not Kind.PRIMITIVE:
            return out
        if op.fn is operator.getitem and getattr(op.inputs[0], "id", None) in self.sequences:
            return [(op.inputs[0].id, _ListItem(op.inputs[1], g))]
        result_scalar = all(self.is_scalar(a) for a in op.inputs)
        for i, a in enumerate(op.inputs):
            names = ([a] if isinstance(a, gast.Name) else [])
            if not names or a.id not in self.active:
                continue
            if op.fn is operator.getitem and i == 1:
                continue
            user_rule = getattr(op.fn, "srcdiff_user_rule", None)
            if user_rule is not None:
                expr = gast.Call(func=self.refs.helper("unbroadcast"), keywords=[],
                                 args=[self.user_rule(user_rule, i, g, ans, op), S.name(a.id)])
            else:
                vjp = op.rule.vjp(i)
                if vjp is None:
                    continue
                syntax = rule_syntax(vjp)
                self.refs.bind_globals(syntax)
                inputs = op.inputs if op.fn is not operator.getitem else [
                    op.inputs[0], _index_value(op.inputs[1])]
                expr = syntax.inline(i, g, ans, inputs, op.kwargs)
            others = [b for k, b in enumerate(op.inputs) if k != i]
            expr = _simplify(expr, lambda v: self.same_shape(v, a, others, result_scalar))
            if op.fn is operator.getitem:
                expr = _Scatter(op.inputs[1], g, expr)
            out.append((a.id, expr))
        return out

    def user_rule(self, rule, i, g, ans, op):
        """Input ``i``'s adjoint from a rule given to ``sd.register_gradient``: its
        returned expression inlined, or a call when it is more than one statement."""
        several = len(op.inputs) > 1
        try:
            syntax = rule_syntax(rule)
        except LookupError:
            call = gast.Call(func=self.refs.bind(rule, rule.__name__),
                             args=[g, ans] + list(op.inputs), keywords=[
                                 gast.keyword(arg=k, value=v) for k, v in op.kwargs.items()])
            return gast.Subscript(value=call, slice=S.const(i), ctx=gast.Load()) if several else call
        self.refs.bind_globals(syntax)
        body = syntax.inline(i, g, ans, op.inputs, op.kwargs)
        if isinstance(body, gast.Tuple):
            return body.elts[i]
        return gast.Subscript(value=body, slice=S.const(i), ctx=gast.Load()) if several else body

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

    def call_contributions(self, s, op, g):
        unit, tape = self.calls[id(s)] if id(s) in self.calls else self.call_unit(s, op)
        backward = self.refs.bind(unit.backward, unit.name + "_backward")
        adjoint = gast.Call(func=backward, args=[S.name(tape), g], keywords=[])
        active = [a for a in op.inputs if isinstance(a, gast.Name) and a.id in self.active]
        # an input the callee's result does not depend on gets None from it: no contribution
        connected = [(k, a) for k, (a, p) in enumerate(zip(active, unit.wrt))
                     if p not in unit.unconnected]
        if not connected:
            return [], []
        if len(active) == 1:
            return [], [(active[0].id, adjoint)]
        results = self.fresh(s, "d_" + unit.name)
        return [S.assign(results, adjoint)], [
            (a.id, gast.Subscript(value=S.name(results), slice=S.const(k), ctx=gast.Load()))
            for k, a in connected]

    def call_unit(self, s, op):
        mask = tuple(isinstance(a, gast.Name) and a.id in self.active for a in op.inputs)
        scalars = tuple(self.is_scalar(a) for a in op.inputs)
        unit = self.compile_call(op.fn, mask, scalars, s)
        tape = self.names.fresh(target_names(s.targets[0])[0] + "_tape")
        self.calls[id(s)] = (unit, tape)
        if unit.several and isinstance(s.targets[0], gast.Name):
            # t = f(x) with f returning a tuple: t[k]'s adjoint is the k-th of a list
            # (known from the dry run on: the passes after it use it)
            self.sequences.add(s.targets[0].id)
        return unit, tape

    def contribute(self, v, expr):
        """The statements that add ``expr`` to the adjoint of ``v``."""
        d = self.adjoint(v)
        how, dense = _how(expr)
        action = advance(self.state, self.accumulated, v, how, self.owned(v), dense)
        if action in ("zeros+item", "item"):  # one element of a list's adjoint
            zeros = [S.assign(d, self.zeros(v))] if action == "zeros+item" else []
            return zeros + [expr.add_to(d)]
        if action == "scatter":  # add into our own array: no full-size temporary per read
            return [expr.in_place(d, self.is_basic(expr.index))]
        if isinstance(expr, _Scatter):
            expr = expr.dense
        if action == "assign":
            if isinstance(expr, gast.Name) and expr.id == d:
                return []  # dx = dx: the variable already holds it
            return [S.assign(d, expr)]
        op = gast.Add()
        if isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.USub):
            op, expr = gast.Sub(), expr.operand  # dx - dy, not dx + -dy
        if action == "iadd":  # our own array: add into it rather than allocate another
            return [gast.AugAssign(target=S.name(d, gast.Store()), op=op, value=expr)]
        return [S.assign(d, gast.BinOp(left=S.name(d), op=op, right=expr))]

    def effects(self, s, state):
        """The effects on adjoint states (see adjoint_state) of assignment ``s``'s
        adjoint, reached in ``state``: the same as its emission's."""
        target = s.targets[0]
        if isinstance(target, gast.Subscript):
            x = target.value.id
            if x not in self.active or state.get(x, UNSET) == UNSET:
                return []
            v = s.value
            added = [("add", v.id, OTHER, OTHER)] if (isinstance(v, gast.Name)
                                                      and v.id in self.active) else []
            return added + [("own", x)]
        names = target_names(target)
        if not any(t in self.active and state.get(t, UNSET) != UNSET for t in names):
            return []
        if id(s) not in self.effect_cache:
            self.effect_cache[id(s)] = self.contribution_effects(s, target)
        return [("reset", t) for t in names] + self.effect_cache[id(s)]

    def contribution_effects(self, s, target):
        """("add", name, how, dense) for each contribution of live assignment ``s``."""
        op = self.ops[id(s)]
        if isinstance(target, gast.Tuple):
            split = traits_of(op.fn).splits if isinstance(s.value, gast.Call) else None
            if split is not None:
                x = s.value.args[0]
                return ([("add", x.id, OTHER, OTHER)]
                        if isinstance(x, gast.Name) and x.id in self.active else [])
            if op.kind is not Kind.CALL:
                return []  # refused by the emitter if an input is active
            douts = S.name("d")  # what the callee's backward call takes: any expression
            contributions = self.call_contributions(s, op, douts)[1]
        else:
            x = target.id
            contributions = self.contributions(s, op, S.name(self.adjoint(x)), S.name(x))[1]
            late = [c for v, c in contributions if v == x]
            contributions = [(v, c) for v, c in contributions if v != x]
            if late:  # x = f(x, ...): its old value's adjoint comes last, summed
                contributions.append((x, late[0] if len(late) == 1 else gast.BinOp(
                    left=late[0], op=gast.Add(), right=late[1])))
        return [("add", v) + _how(c) for v, c in contributions]

    def owned(self, name):
        """The state of a fresh adjoint: owned, unless it is a number (never written into)."""
        return SET if name in self.scalars else OWNED

    def is_basic(self, index):
        """Whether ``x[index]`` names each element at most once (ints and slices)."""
        if isinstance(index, gast.Tuple):
            return all(self.is_basic(e) for e in index.elts)
        if isinstance(index, gast.Slice):
            return True  # a slice never names an element twice, whatever its bounds
        if isinstance(index, gast.Constant):
            return index.value is None or isinstance(index.value, int)
        return isinstance(index, gast.Name) and index.id in self.ints

    def reverse_setitem(self, s, target):
        x = target.value.id
        save = self.plan.saves.get((id(s), x))
        code = []
        if x in self.active and self.state.get(x, UNSET) != UNSET:
            d = self.adjoint(x)
            index = target.slice
            v = s.value
            if isinstance(v, gast.Name) and v.id in self.active:
                part = gast.Subscript(value=S.name(d), slice=S.copy_node(index),
                                      ctx=gast.Load())
                if not self.is_basic(index):  # an index array may name an element twice
                    part = gast.Call(func=self.refs.helper("last_writes"), keywords=[],
                                     args=[S.name(d), _index_value(S.copy_node(index))])
                elif self.state.get(x) == OWNED:  # zeroed in place below: take no view of it
                    part = gast.Call(func=gast.Attribute(value=part, attr="copy",
                                                         ctx=gast.Load()), args=[], keywords=[])
                expr = gast.Call(func=self.refs.helper("unbroadcast"),
                                 args=[part, S.name(v.id)], keywords=[])
                code += self.contribute(v.id, expr)
            # The overwritten elements of the old x reach nothing: their adjoint is zero.
            if self.state.get(x) != OWNED:
                code.append(S.assign(d, S.expr(f"{d}.copy()")))
            own(self.state, self.accumulated, x)
            zero = gast.Subscript(value=S.name(d), slice=S.copy_node(index), ctx=gast.Store())
            code.append(S.assign(zero, S.const(0)))
        if save:
            code.append(self.restore_item(target, save))
        return code

    def is_restore(self, stmt):
        value = getattr(stmt, "value", None)
        return isinstance(stmt, gast.Assign) and (
            (isinstance(value, gast.Name) and value.id.endswith("_old") and
             value.id in {v for _, v in self.plan.saves.values()})
            or (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)
                and value.func.attr == "pop"))

    def restore(self, x, save):
        kind, var = save
        if kind == "stack":
            return S.assign(x, S.expr(f"{var}.pop()"))
        return S.assign(x, S.name(var))

    def restore_item(self, target, save):
        kind, var = save
        value = S.expr(f"{var}.pop()") if kind == "stack" else S.name(var)
        store = gast.Subscript(value=S.name(target.value.id), slice=S.copy_node(target.slice),
                               ctx=gast.Store())
        return S.assign(store, value)

    def reverse_if(self, s):
        before = dict(self.state)
        body = self.reverse_block(s.body)
        after_body = self.state
        self.state = dict(before)
        orelse = self.reverse_block(s.orelse)
        after_else = self.state
        merged, zero_body, zero_else = join(after_body, after_else, self.owned)
        body += [self.zeros_at(s, name) for name in zero_body]
        orelse += [self.zeros_at(s, name) for name in zero_else]
        self.state = merged
        if not _has_code(body) and not _has_code(orelse):
            return []
        self.coded.add(id(s))
        return [gast.If(test=S.copy_node(s.test), body=body or [gast.Pass()],
                        orelse=orelse if _has_code(orelse) else [])]

    def reverse_loop(self, s):
        entry = dict(self.state)
        head, accumulated = self.flow.head(s, entry)
        self.accumulated |= accumulated
        self.state = dict(head)
        body = self.reverse_block(s.body)
        out = self.state
        for name, value in head.items():
            if value != UNSET and out.get(name, UNSET) == UNSET:
                body.append(self.zeros_at(s, name))
            elif value == OWNED and out.get(name) == SET:
                body.append(S.assign(self.adjoint(name), self.copy_of(name)))
        self.state = head
        save = self.plan.saves.get((id(s), getattr(getattr(s, "target", None), "id", None)))
        restore = [self.restore(s.target.id, save)] if save else []
        if not _has_code(body):
            return restore  # the target's value from before the loop, if an adjoint reads it
        self.replayed.add(id(s))
        self.coded.add(id(s))
        pre = []
        for name, value in head.items():
            before = entry.get(name, UNSET)
            if value == UNSET:
                continue
            if before == UNSET:
                pre.append(S.assign(self.adjoint(name), self.zeros(name)))
            elif value == OWNED and before == SET:
                pre.append(S.assign(self.adjoint(name), self.copy_of(name)))
        counter = self.counter(s)
        if counter is not None and id(s) in self.counter_stacks:
            pre.insert(0, S.assign(counter, S.expr(f"{self.counter_stacks[id(s)]}.pop()")))
        if isinstance(s, gast.For):
            iterations = S.copy_node(s.iter)
            if counter is not None:
                iterations = gast.Subscript(value=iterations, slice=gast.Slice(
                    lower=None, upper=S.name(counter), step=None), ctx=gast.Load())
            loop = gast.For(target=S.copy_node(s.target),
                            iter=gast.Call(func=S.name("reversed"), args=[iterations],
                                           keywords=[]),
                            body=body, orelse=[], type_comment=None)
        else:
            loop = gast.For(target=S.name("_", gast.Store()),
                            iter=gast.Call(func=S.name("range"), args=[S.name(counter)],
                                           keywords=[]),
                            body=body, orelse=[], type_comment=None)
        return pre + [loop] + restore

    def copy_of(self, name):
        """A copy of ``name``'s adjoint to update in place (np.copy: it may be a number)."""
        d = self.adjoint(name)
        return S.expr(f"{d}.copy()" if name in self.sequences else f"np.copy({d})")

    def counter(self, s):
        """The trip-count variable of a loop that needs one (while, or for with break)."""
        if isinstance(s, gast.For) and not _breaks(s):
            return None
        if id(s) not in self.counters:
            counter = self.counters[id(s)] = self.names.fresh("n_iterations")
            if self.facts.loops_of[id(s)]:  # inside another loop: one count per outer iteration
                self.counter_stacks[id(s)] = self.names.fresh(counter + "_stack")
        return self.counters[id(s)]

    def zeros_at(self, s, name):
        """``dx = zeros like x`` where the backward pass leaves compound statement ``s``
        (a branch, or one iteration of a loop): it measures x as it was before ``s``,
        a read the plan must know of, as nested statements' reads are not ``s``'s own."""
        self.reads_at.setdefault(name, set()).add(id(s))
        return S.assign(self.adjoint(name), self.zeros(name))

    def zeros(self, name):
        if name in self.scalars:
            return S.const(0.0)
        if name in self.sequences:
            return S.expr(f"[np.zeros_like(item) for item in {name}]")
        return gast.Call(func=S.expr("np.zeros_like"), args=[S.name(name)], keywords=[])

    def no_rule(self, s, op):
        what = op.name or "this expression"
        if op.kind is Kind.OPAQUE:
            return self.parsed.source_map.error(
                s, f"cannot differentiate {what} over an active value",
                hint="Write the loop out with 'for'.")
        if op.kind is Kind.PACK:
            return self.parsed.source_map.error(
                s, "cannot differentiate a tuple or list holding an active value",
                hint="Keep arrays in separate variables, or join them with np.stack.")
        return self.parsed.source_map.error(
            s, f"cannot differentiate {what}: it has no derivative rule and no Python source",
            hint="Use a NumPy or srcdiff op that has a rule, or register one with "
                 "@sd.register_gradient.")

    # ------------------------------------------------------------ forward
    def forward_body(self, ret):
        plan = self.plan
        code = [S.assign(n, S.const(None)) for n in plan.init_none]
        code += [S.assign(v, gast.List(elts=[], ctx=gast.Load())) for v in plan.stacks]
        code += [S.assign(v, gast.List(elts=[], ctx=gast.Load()))
                 for v in self.counter_stacks.values()]
        code += self.forward_block(self.body[:-1])
        extra = [v for _, v in plan.saves.values()]
        extra += list(self.counters.values()) + list(self.counter_stacks.values())
        extra += list(self.tapes().values())
        tape = self.tape_names = list(dict.fromkeys(sorted(self.live) + extra))
        # a value saved for the backward pass may come from a branch not taken: define it
        definite = set(self.parsed.params) | {
            st.targets[0].id for st in self.body if isinstance(st, gast.Assign)
            and isinstance(st.targets[0], gast.Name)}
        top = {id(st) for st in self.body}  # a save inside an if may not run: not definite
        definite |= {v for k, (kind, v) in plan.saves.items() if kind == "name" and k in top}
        missing = [n for n in tape if n not in definite and n not in plan.init_none
                   and n not in plan.stacks and n not in self.counter_stacks.values()]
        code = [S.assign(n, S.const(None)) for n in missing] + code
        tape_value = gast.Tuple(elts=[self.kept(n) for n in self.tape_names], ctx=gast.Load())
        result = S.copy_node(ret.value)
        code.append(gast.Return(value=gast.Tuple(elts=[result, tape_value], ctx=gast.Load())))
        return code

    def consumed(self):
        """What the backward pass changes in place: its stacks, and arrays whose
        overwritten elements it restores."""
        stacks = [v for v in self.tape_names if v in self.plan.stacks
                  or v in self.counter_stacks.values()]
        written = sorted({name for (_, name), (kind, _) in self.plan.saves.items()
                          if name in self.written and name in self.tape_names})
        return stacks + written

    def kept(self, name):
        """What the forward pass keeps of ``name``: the value, or only its shape.

        An argument the function never rebinds is kept whole: the caller holds it
        anyway, and measuring it would cost time and save no memory."""
        if name in self.measured and name not in self.scalars and name not in self.held:
            return gast.Call(func=self.refs.bind(shape_of, "shape_of"), args=[S.name(name)],
                             keywords=[])
        return S.name(name)

    def forward_block(self, stmts):
        code = []
        for s in stmts:
            code.extend(self.forward_stmt(s))
        return code or [gast.Pass()]

    def forward_stmt(self, s):
        plan = self.plan
        pre = []
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            for name in target_names(target) + self.call_tape(s):
                save = plan.saves.get((id(s), name))
                if save is None:
                    continue
                if isinstance(target, gast.Subscript):  # keep the elements about to change
                    value = gast.Call(func=gast.Attribute(value=gast.Subscript(
                        value=S.name(name), slice=S.copy_node(target.slice),
                        ctx=gast.Load()), attr="copy", ctx=gast.Load()), args=[], keywords=[])
                else:
                    value = self.kept(name)
                pre.append(_save(save[0], save[1], value))
        if isinstance(s, gast.Assign):
            stmt = S.copy_node(s)
            op = self.ops.get(id(s))
            if id(s) in self.calls:
                unit, tape = self.calls[id(s)]
                forward = self.refs.bind(unit.forward, unit.name + "_forward")
                stmt.value.func = forward
                # the callee's tape keeps its arguments: one this function writes into
                # later must be a snapshot (unless the callee itself writes into it)
                stmt.value.args = [S.expr(f"{a.id}.copy()") if isinstance(a, gast.Name)
                                   and a.id in self.written and k not in unit.mutated else a
                                   for k, a in enumerate(stmt.value.args)]
                stmt.targets = [gast.Tuple(elts=[S.copy_node(s.targets[0]),
                                                 S.name(tape, gast.Store())], ctx=gast.Store())]
            elif isinstance(s.targets[0], gast.Tuple) and op is not None and op.kind is Kind.CALL:
                pass  # an inactive call with several results runs as written
            elif isinstance(stmt.value, gast.Call) and op is not None and op.forward:
                stmt.value.func = self.refs.function_expr(op.forward)
            return pre + [stmt]
        if isinstance(s, gast.If):
            return [gast.If(test=S.copy_node(s.test), body=self.forward_block(s.body),
                            orelse=self.forward_block(s.orelse) if s.orelse else [])]
        if isinstance(s, (gast.For, gast.While)):
            counter = self.counters.get(id(s)) if id(s) in self.replayed else None
            body = self.forward_block(s.body)
            if body == [gast.Pass()]:
                body = []
            code = []
            save = plan.saves.get((id(s), getattr(getattr(s, "target", None), "id", None)))
            if save is not None:
                code.append(_save(save[0], save[1], self.kept(s.target.id)))
            if counter is not None:
                code.append(S.assign(counter, S.const(0)))
                body = [S.stmt(f"{counter} += 1")] + body
            loop = copy.copy(s)
            loop.body = body or [gast.Pass()]
            code.append(loop)
            if counter is not None and id(s) in self.counter_stacks:
                code.append(S.stmt(f"{self.counter_stacks[id(s)]}.append({counter})"))
            return code
        return [S.copy_node(s)]


def Comment(text):
    """A marker statement that code generation turns into a ``#`` comment line."""
    return gast.Expr(value=S.const("\0comment\0" + text))


def _is_comment(s):
    return (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant)
            and isinstance(s.value.value, str) and s.value.value.startswith("\0comment\0"))


class _Scatter:
    """The adjoint of ``x[index]``: added in place when ``dx`` is an array of our own."""

    def __init__(self, index, g, dense):
        self.index = index
        self.g = g
        self.dense = dense  # the rule's expression: a new array

    def in_place(self, d, basic):
        target = gast.Subscript(value=S.name(d), slice=S.copy_node(self.index),
                                ctx=gast.Store())
        if basic:
            return gast.AugAssign(target=target, op=gast.Add(), value=S.copy_node(self.g))
        return gast.Expr(value=gast.Call(func=S.expr("np.add.at"), args=[
            S.name(d), _index_value(S.copy_node(self.index)), S.copy_node(self.g)],
            keywords=[]))


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


def _shape_only(code, names):
    """The names among ``names`` that the code reads only to measure them."""
    measured, used = set(), set()

    def visit(node, measuring):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            (measured if measuring else used).add(node.id)
            return
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name):
            positions = measured_args(node.func.id)
            visit(node.func, False)
            for k, arg in enumerate(node.args):
                visit(arg, k in positions and isinstance(arg, gast.Name))
            for kw in node.keywords:
                visit(kw.value, False)
            return
        for child in gast.iter_child_nodes(node):
            visit(child, False)

    for stmt in code:
        visit(stmt, False)
    return (measured - used) & set(names)


def _index_value(index):
    """An index as a value a rule can take (``1:3`` -> ``slice(1, 3, None)``)."""
    if isinstance(index, gast.Slice):
        return gast.Call(func=S.name("slice"), keywords=[], args=[
            S.const(None) if p is None else p for p in (index.lower, index.upper, index.step)])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[_index_value(e) for e in index.elts], ctx=gast.Load())
    return index


def _save(kind, var, value):
    if kind == "stack":
        return gast.Expr(value=gast.Call(func=gast.Attribute(value=S.name(var), attr="append",
                                                             ctx=gast.Load()),
                                         args=[value], keywords=[]))
    return S.assign(var, value)


def _has_code(stmts):
    return any(not isinstance(s, gast.Pass) and not _is_comment(s) for s in stmts)


def _breaks(loop):
    for n in gast.walk(loop):
        if isinstance(n, gast.Break):
            return True
    return False


def _simplify(expr, same_shape):
    """Drop ``unbroadcast(e, v)`` where no broadcasting happened; fold constants."""
    class Simplify(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if (isinstance(node.func, gast.Name) and node.func.id == "unbroadcast"
                    and len(node.args) == 2 and same_shape(node.args[1])):
                return node.args[0]
            return node

        def visit_BinOp(self, node):
            self.generic_visit(node)
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

    return Simplify().visit(expr)


def _how(expr):
    """How a contribution changes its adjoint's state: (how, dense), see adjoint_state."""
    if isinstance(expr, _ListItem):
        return ITEM, OTHER
    if isinstance(expr, _Scatter):
        return SCATTER, _how(expr.dense)[0]
    return (ARITHMETIC if isinstance(expr, (gast.BinOp, gast.UnaryOp)) else OTHER), OTHER

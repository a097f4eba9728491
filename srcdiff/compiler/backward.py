"""The backward pass: one block of adjoint code per statement, in reverse order.

:class:`Backward` emits the adjoint code of a normalised body for a given plan.
It reads primal values from the variables themselves: where a statement
overwrote a value some adjoint reads, the plan saved the old value, and the
block restores it right after the statement's adjoint, so at every point each
variable holds the value it had at the matching point of the forward pass.

Adjoint states (see adjoint_state) decide each contribution's form: the first
assigns ``dx = ...``, later ones add, into an owned array in place; a loop's
reversed body starts from the head state the dataflow found, so each body is
emitted once.  A block is headed by a comment naming its source line.

Emitted with ``rows`` (the name of the batch's leading shape), it is the batched
backward pass: every adjoint carries leading axes of rows (a vectorised jacobian),
zeros are made with them (``helpers.zeros_rows``), and the rule helpers keep them
(``helpers.batched``), indices of elements gain a leading ``:``.  What does not batch
(a rule without the trait ``batches``, an assignment at an index array, a list's
adjoint, the pieces of a split) raises ``NotBatched``.

Records it leaves: ``reads_at`` (name -> the statements whose adjoint code reads
it) and ``coded`` (branches and loops with adjoint code of their own), the marks
planning works from; and the Replay (trip counters, replayed loops).
"""
import gast

from ..rules import traits_of
from ..rules.containers import drop_item, join_lists, own_item, zero_adjoints, zeros_like
from . import syntax as S
from .managers import manager_of
from .adjoint_state import (OTHER, OWNED, SET, UNSET, Flow, advance, join, own, reuser,
                            written_into)
from .analysis import Kind, refusal, target_names
from .codegen import comment_marker, is_comment_marker
from .errors import NotBatched
from .contributions import _index_value, _Scatter, batch_index, how as how_of
from .plan import INPUT, RESULT, Marks, restored_elements
from .runtime import own_copy, put_back


class Backward:
    def __init__(self, facts, active, wrt, sequences, contrib, replay, namer, source_map,
                 rerun, maybe_sequences=frozenset()):
        self.facts = facts
        self.ops = facts.ops
        self.active = active
        self.wrt = wrt
        self.sequences = sequences
        self.maybe_sequences = maybe_sequences  # a container where bound to one only
        self.scalars = facts.scalars
        self.contrib = contrib
        self.replay = replay
        self.namer = namer
        self.source_map = source_map
        self.rerun = rerun    # a recomputed statement as the backward pass runs it
        self.refs = contrib.refs
        self.plan = None
        self.rows = None  # see emit
        # the flow calls back into the effects, never into the emitter: no reference
        # cycle keeps this pass's records for the garbage collector
        self.effects = _Effects(facts, active, contrib, namer)
        self.flow = Flow(self.effects.of, self.effects.owned, contrib.feeds)

    def adjoint(self, name):
        return self.namer.adjoint(name)

    def marks(self):
        return Marks({name: set(at) for name, at in self.reads_at.items()},
                     frozenset(self.coded), dict(self.versions))

    # ------------------------------------------------------------ backward
    def emit(self, plan, outputs, rows=None):
        """The backward pass for ``plan``, seeded with the adjoints of ``outputs``:
        (statements, the expression it returns); batched if ``rows`` names the
        batch's leading shape."""
        self.plan = plan
        self.rows = self.contrib.rows = rows
        self.state = {}
        self.accumulated = set()  # adjoints updated while SET, where owning them would help
        for out in outputs:
            if isinstance(out, gast.Name) and out.id in self.active:
                self.state[out.id] = SET
        self.reads_at = {}  # name -> statements whose adjoint code reads it
        self.coded = set()  # compound statements with adjoint code
        self.versions = {}  # (name, id) -> the one value x = f(x) reads of x (plan.Marks)
        self.replay.loops.clear()
        code = self.reverse_block(self.facts.body[:-1])
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
            if code and block and isinstance(s, (gast.If, gast.For, gast.While)):
                # ends the block before it (codegen.Block); none first, so elif stays elif
                block = [Comment("", None)] + block
            elif block and _is_comment(block[0]):
                if block[0].value.value == last_comment:
                    block = block[1:]  # one comment per source line
                else:
                    last_comment = block[0].value.value
            rerun = [self.rerun(r) for r in self.plan.recompute_before.get(id(s), ())]
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
            tape = self.replay.call_tape(s)
            save = tape and self.plan.saves.get((id(s), tape[0]))
            return self.comment(s, code + ([self.restore(tape[0], save)] if save else []))
        return self._reverse_compound(s)

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
        line = self.source_map.line(s)
        number = self.source_map.file_line(s)
        text = f"line {number}: {line.strip()}" if line else f"line {number}"
        return [Comment(text, number)] + code

    def reverse_assign(self, s, x):
        op = self.ops[id(s)]
        save = self.plan.saves.get((id(s), x))
        restore = [self.restore(x, save)] if save else []
        if x not in self.active or self.state.get(x, UNSET) == UNSET:
            return restore
        inputs = [a.id for a in op.inputs if isinstance(a, gast.Name)]
        if op.kind in (Kind.UNKNOWN, Kind.OPAQUE) and set(inputs) & self.active:
            raise self.no_rule(s, op)
        if (isinstance(s.value, gast.BinOp) and set(inputs) & self.sequences
                and op.fn is not join_lists):
            raise self.source_map.error(
                s, "cannot differentiate arithmetic on a list (only xs + ys of two lists, "
                   "which joins them, is modelled)",
                hint="Make it an array first (np.array([a, b])), or keep arrays in separate "
                     "variables and join them with np.stack or np.concatenate.")
        g, ans = S.name(self.adjoint(x)), S.name(x)
        g_owned = self.state.get(x) == OWNED  # x's adjoint, about to be let go
        pre = []
        version = self.version(s, op, x) if x in inputs else RESULT
        if version != RESULT and save:
            # the inputs must see the old value: restore first, keep the new one as ans
            if version != INPUT:
                kept = self.namer.at(s, x + "_new")
                pre.append(S.assign(kept, S.name(x)))
                ans = S.name(kept)
            pre.append(restore.pop())
        setup, contributions = self.contrib.of(s, op, g, ans)
        pre += setup  # a callee's backward call: before its results are read
        self.state[x] = UNSET  # x's old value has its own adjoint, zero so far
        code = pre
        late = [(v, c) for v, c in contributions if v == x]
        ordered = [(v, c) for v, c in contributions if v != x]
        if late:  # x = f(x, ...): every use of dx above is done
            total = late[0][1]
            for _, c in late[1:]:
                total = gast.BinOp(left=total, op=gast.Add(), right=c)
            ordered.append((x, total))
        last = reuser(g.id, [c for _, c in ordered], self.refs) if g_owned and not setup else None
        for k, (v, c) in enumerate(ordered):
            code += self.contribute(v, c, g.id if k == last else None)
        return code + restore

    def version(self, s, op, x):
        """Which of x's values the adjoint of ``x = f(x, ...)`` reads (plan.Marks): its
        expressions made with the result under a name of its own tell them apart."""
        kept = self.namer.at(s, x + "_new")
        setup, contributions = self.contrib.of(s, op, S.name(self.adjoint(x)), S.name(kept))
        nodes = setup + [c for _, c in contributions]
        if not all(isinstance(n, gast.AST) for n in nodes):
            return None  # an element's adjoint (a scatter, a list's item): both, say
        reads = set().union(*map(S.loaded_names, nodes))
        # a list's adjoint may start from zeros measured on the input (see zeros)
        old = x in reads or x in self.sequences or x in self.maybe_sequences
        version = INPUT if old and kept not in reads else RESULT if not old else None
        if version is not None:
            self.versions[x, id(s)] = version
        return version

    def reverse_unpack(self, s, targets):
        """``p, q = f(x)``: f's backward pass takes the adjoints of all its results."""
        op = self.ops[id(s)]
        restores = [self.restore(t, self.plan.saves[(id(s), t)]) for t in targets
                    if (id(s), t) in self.plan.saves]
        live = [t for t in targets if t in self.active and self.state.get(t, UNSET) != UNSET]
        if not live:
            return restores
        inputs = [a.id for a in op.inputs if isinstance(a, gast.Name)]
        split = traits_of(op.fn).splits if op.kind is Kind.SPLIT else None
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
            results = self.namer.at(s, "d_" + (op.fn.__name__ if op.fn else "call"))
            code, douts = [S.assign(results, douts)], S.name(results)
        code += restores
        if split is not None:  # the pieces of x: its adjoint is theirs joined back
            if self.rows is not None:
                raise NotBatched(f"the pieces of {op.fn.__name__} are joined along an axis")
            x = s.value.args[0]
            if isinstance(x, gast.Name) and self.contrib.feeds(s, x.id):
                axis = next((k.value for k in s.value.keywords if k.arg == "axis"), None)
                if axis is None:
                    axis = s.value.args[2] if len(s.value.args) > 2 else S.const(split)
                join = gast.Call(func=S.expr("np.concatenate"), args=[douts],
                                 keywords=[gast.keyword(arg="axis", value=axis)])
                code += self.contribute(x.id, join)
            return code
        setup, contributions = self.contrib.call(s, op, douts)
        code += setup
        for v, c in contributions:
            code += self.contribute(v, c)
        return code

    def contribute(self, v, expr, spent=None):
        """The statements that add ``expr`` to the adjoint of ``v``; ``spent``: an
        owned array that nothing reads after ``expr`` (see ``reuser``), which may hold
        its result."""
        d = self.adjoint(v)
        how, dense = how_of(expr, self.refs)
        action = advance(self.state, self.accumulated, v, how, self.effects.owned(v), dense)
        negated = isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.USub)
        if spent is not None and not (negated and action in ("add", "iadd")):
            expr = written_into(expr, spent, self.refs)  # (dx - dy makes no -dy at all)
        if self.rows is not None and action in ("zeros+item", "item"):
            raise NotBatched("a list's adjoint is written item by item")
        if action in ("zeros+item", "item"):  # one element of a list's adjoint
            zeros = [S.assign(d, self.zeros(v))] if action == "zeros+item" else []
            return zeros + [expr.add_to(d)]
        if action == "scatter" and self.contrib.names_an_axis(expr.index):
            # add into our own array: no full-size temporary per read
            return [expr.in_place(d, self.contrib.is_basic(expr.index), self.refs, self.rows)]
        if action == "scatter":  # x[()], x[...], x[None] may be of a 0-d x, whose
            action = "add"       # adjoint arithmetic made a NumPy scalar: no array
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

    def reverse_setitem(self, s, target):
        x = target.value.id
        save = self.plan.saves.get((id(s), x))
        code = []
        dropped = None
        if x in self.active and self.state.get(x, UNSET) != UNSET:
            d = self.adjoint(x)
            index = target.slice
            if self.rows is not None:  # the same elements of each row
                if not self.contrib.is_basic(index):
                    raise NotBatched("elements of an array are assigned at an index array")
                index = batch_index(index)
            v = s.value
            # a key or position of a container names one item, whatever its type
            item = x in self.sequences and not isinstance(index, (gast.Slice, gast.Tuple))
            if isinstance(v, gast.Name) and self.contrib.feeds(s, v.id):
                part = gast.Subscript(value=S.name(d), slice=S.copy_node(index),
                                      ctx=gast.Load())
                if not item and not self.contrib.is_basic(index):
                    # an index array may name an element twice
                    part = gast.Call(func=self.refs.helper("last_writes"), keywords=[],
                                     args=[S.name(d), _index_value(S.copy_node(index))])
                elif self.state.get(x) == OWNED and self.contrib.feeds(s, x):
                    # zeroed in place below: take no view of it
                    part = gast.Call(func=self.refs.bind(own_item, "own_item"), keywords=[],
                                     args=[S.name(d), S.copy_node(index)]) if item else \
                        gast.Call(func=gast.Attribute(value=part, attr="copy", ctx=gast.Load()),
                                  args=[], keywords=[])
                # an item replaced whole is as it was given; elements take a broadcast value
                expr = part if item else gast.Call(func=self.refs.helper("unbroadcast"),
                                                   args=[part, S.name(v.id)], keywords=[])
                if v.id == x:  # x[i] = x: the part is taken before the zeroing below, and
                    if not item and self.state.get(x) != OWNED:  # added after it
                        expr.args[0] = gast.Call(func=gast.Attribute(
                            value=part, attr="copy", ctx=gast.Load()), args=[], keywords=[])
                    taken = self.namer.at(s, d + "_written")
                    code.append(S.assign(taken, expr))
                    expr = S.name(taken)
                else:
                    code += self.contribute(v.id, expr)
            if not self.contrib.feeds(s, x):  # the old x was not varied: no adjoint
                self.state[x] = UNSET
            else:  # the overwritten elements of the old x reach nothing: their adjoint is 0
                if self.state.get(x) != OWNED:
                    code.append(S.assign(d, S.expr(f"{d}.copy()")))
                own(self.state, self.accumulated, x)
                if item:  # zeros shaped as the old item, which the restore below puts back
                    dropped = gast.Expr(value=gast.Call(
                        func=self.refs.bind(drop_item, "drop_item"), keywords=[],
                        args=[S.name(d), _index_value(S.copy_node(index)), S.name(x)]))
                else:
                    zero = gast.Subscript(value=S.name(d), slice=S.copy_node(index),
                                          ctx=gast.Store())
                    code.append(S.assign(zero, S.const(0)))
            if isinstance(v, gast.Name) and v.id == x and self.contrib.feeds(s, x):
                code += self.contribute(x, expr)
        if save:
            code.append(self.restore_item(target, save))
        if dropped is not None:
            code.append(dropped)
        for name in self.plan.snapshots.get(id(s), ()):  # views of x the write changed
            code.append(self.restore(name, self.plan.saves[id(s), name]))
        return code

    def is_restore(self, stmt):
        if getattr(stmt, "srcdiff_restore", False):
            return True
        value = getattr(stmt, "value", None)
        if (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)
                and value.func.attr == "copy" and not value.args):
            value = value.func.value  # a restored array the pass writes into: a copy
        return isinstance(stmt, gast.Assign) and (
            (isinstance(value, gast.Name) and value.id.endswith("_old") and
             value.id in {v for _, v in self.plan.saves.values()})
            or (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)
                and value.func.attr == "pop"))

    def restore(self, x, save):
        """``x`` bound again to its saved value: a copy if the pass writes into x (its
        restores of elements), for the tape's value must stay as the forward pass
        left it (a persistent tape, a jacobian's rows replay it)."""
        kind, var = save
        value = f"{var}.pop()" if kind == "stack" else var
        if x in restored_elements(self.facts, self.plan):
            if x in self.plan.init_none:  # None where the branch binding it did not run
                return S.assign(x, gast.Call(func=self.refs.bind(own_copy, "own_copy"),
                                             args=[S.expr(value)], keywords=[]))
            value += ".copy()"
        return S.assign(x, S.expr(value))

    def restore_item(self, target, save):
        kind, var = save
        value = S.expr(f"{var}.pop()") if kind == "stack" else S.name(var)
        x = target.value.id
        if x in self.sequences or x in self.maybe_sequences:  # a key new to a dict: deleted
            restore = gast.Expr(value=gast.Call(func=self.refs.bind(put_back, "put_back"), args=[
                S.name(x), _index_value(S.copy_node(target.slice)), value], keywords=[]))
            restore.srcdiff_restore = True  # is_restore
            return restore
        store = gast.Subscript(value=S.name(x), slice=S.copy_node(target.slice),
                               ctx=gast.Store())
        return S.assign(store, value)

    def reverse_if(self, s):
        before = dict(self.state)
        body = self.reverse_block(s.body)
        after_body = self.state
        self.state = dict(before)
        orelse = self.reverse_block(s.orelse)
        after_else = self.state
        merged, zero_body, zero_else = join(after_body, after_else, self.effects.owned,
                                            lambda name: self.contrib.feeds(s, name))
        body += [self.zeros_at(s, name) for name in zero_body]
        orelse += [self.zeros_at(s, name) for name in zero_else]
        self.state = merged
        if not _has_code(body) and not _has_code(orelse):
            return []
        self.coded.add(id(s))
        manager = manager_of(s)
        if manager is not None:  # always taken: no else (managers.py)
            return [gast.If(test=S.const(manager.adjoint()), body=body or [gast.Pass()],
                            orelse=[])]
        return [gast.If(test=S.copy_node(s.test), body=body or [gast.Pass()],
                        orelse=orelse if _has_code(orelse) else [])]

    def reverse_loop(self, s):
        entry = dict(self.state)
        head, accumulated = self.flow.head(s, entry)
        head = dict(head)  # the flow keeps its own
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
        self.replay.loops.add(id(s))
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
        if counter is not None and id(s) in self.replay.counter_stacks:
            pre.insert(0, S.assign(counter, S.expr(f"{self.replay.counter_stacks[id(s)]}.pop()")))
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
        if isinstance(s, gast.For) and id(s) not in self.facts.breaking:
            return None
        if id(s) not in self.replay.counters:
            counter = self.replay.counters[id(s)] = self.namer.at(s, "n_iterations")
            if self.facts.loops_of[id(s)]:  # inside another loop: one count per outer iteration
                self.replay.counter_stacks[id(s)] = self.namer.at(s, counter + "_stack")
        return self.replay.counters[id(s)]

    def zeros_at(self, s, name):
        """``dx = zeros like x`` where the backward pass leaves compound statement ``s``
        (a branch, or one iteration of a loop): it measures x as it was before ``s``,
        a read the plan must know of, as nested statements' reads are not ``s``'s own."""
        self.reads_at.setdefault(name, set()).add(id(s))
        return S.assign(self.adjoint(name), self.zeros(name))

    def zeros(self, name):
        if name in self.sequences:
            if self.rows is not None:
                raise NotBatched("a list's adjoint starts from zeros")
            return gast.Call(func=self.refs.bind(zero_adjoints, "zero_adjoints"),
                             args=[S.name(name)], keywords=[])
        if self.rows is not None:  # every adjoint has the rows, a number's too (not read)
            like = S.const(0.0) if name in self.scalars else S.name(name)
            return gast.Call(func=self.refs.helper("zeros_rows"), keywords=[],
                             args=[S.name(self.rows), like])
        if name in self.scalars:
            return S.const(0.0)
        if name in self.maybe_sequences:  # decided when it runs: Items, or an array
            if self.rows is not None:
                raise NotBatched("an adjoint that may be a list's starts from zeros")
            return gast.Call(func=self.refs.bind(zeros_like, "zeros_like"),
                             args=[S.name(name)], keywords=[])
        return gast.Call(func=S.expr("np.zeros_like"), args=[S.name(name)], keywords=[])

    def no_rule(self, s, op):
        return refusal(self.source_map, s, op)


class _Effects:
    """The effects on adjoint states (adjoint_state.py) of each assignment's adjoint,
    as the emitter's contributions make them: what the loop heads' dataflow reads."""

    def __init__(self, facts, active, contrib, namer):
        self.active = active
        self.contrib = contrib
        self.ops = facts.ops
        self.scalars = facts.scalars
        self.namer = namer
        self.refs = contrib.refs
        self.cache = {}  # id(assignment) -> its contributions' effects

    def of(self, s, state):
        """The effects on adjoint states (see adjoint_state) of assignment ``s``'s
        adjoint, reached in ``state``: the same as its emission's."""
        target = s.targets[0]
        if isinstance(target, gast.Subscript):
            x = target.value.id
            if x not in self.active or state.get(x, UNSET) == UNSET:
                return []
            v = s.value
            added = [("add", v.id, OTHER, OTHER)] if (isinstance(v, gast.Name)
                                                      and self.contrib.feeds(s, v.id)) else []
            return added + [("own", x) if self.contrib.feeds(s, x) else ("reset", x)]
        names = target_names(target)
        if not any(t in self.active and state.get(t, UNSET) != UNSET for t in names):
            return []
        if id(s) not in self.cache:
            self.cache[id(s)] = self.contribution_effects(s, target)
        return [("reset", t) for t in names] + self.cache[id(s)]

    def contribution_effects(self, s, target):
        """("add", name, how, dense) for each contribution of live assignment ``s``."""
        op = self.ops[id(s)]
        if isinstance(target, gast.Tuple):
            if op.kind is Kind.SPLIT:
                x = s.value.args[0]
                return ([("add", x.id, OTHER, OTHER)]
                        if isinstance(x, gast.Name) and self.contrib.feeds(s, x.id) else [])
            if op.kind is not Kind.CALL:
                return []  # refused by the emitter if an input is active
            douts = S.const(0.0)  # what the callee's backward call takes: any expression
            contributions = self.contrib.call(s, op, douts)[1]
        else:
            x = target.id
            contributions = self.contrib.of(s, op, S.name(self.namer.adjoint(x)), S.name(x))[1]
            late = [c for v, c in contributions if v == x]
            contributions = [(v, c) for v, c in contributions if v != x]
            if late:  # x = f(x, ...): its old value's adjoint comes last, summed
                contributions.append((x, late[0] if len(late) == 1 else gast.BinOp(
                    left=late[0], op=gast.Add(), right=late[1])))
        return [("add", v) + how_of(c, self.refs) for v, c in contributions]

    def owned(self, name):
        """The state of a fresh adjoint: owned, unless it is a number (never written into)."""
        return SET if name in self.scalars else OWNED


def Comment(text, line):
    """A marker statement that code generation turns into a ``#`` comment line heading
    the adjoint block of source line ``line`` (see ``codegen.Block``); with line None,
    one that only ends the block before it, and leaves no line."""
    return gast.Expr(value=S.const(comment_marker(text, line)))


def _is_comment(s):
    return (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant)
            and isinstance(s.value.value, str) and is_comment_marker(s.value.value))


def _has_code(stmts):
    return any(not isinstance(s, gast.Pass) and not _is_comment(s) for s in stmts)

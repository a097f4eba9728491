"""The forward pass: the function's statements, with the saves a plan asks for.

Built from records only: the Facts, the Plan, the Replay the backward pass left
(trip counters of the loops it replays, calls with their tapes) and what the
backward pass reads before assigning it (``live``), some of it only by shape.

Invariants: every stack exists before its first push and every save variable that
a branch may skip exists as None; a replayed loop counts its trips (onto a stack,
per outer iteration, when nested); the function returns ``(result, tape)``, the
tape holding exactly ``tape_names``, each value whole or, if the backward pass only
measures it, as its shape; a temporary is let go after its last read (release.py),
a value the tape measures turned into its shape there.
"""
import copy

import gast

from ..rules.containers import append
from ..rules.helpers import measured_args
from . import syntax as S
from .managers import manager_of
from .analysis import Kind, target_names
from .contributions import _index_value
from .dispatch import MethodCall
from .plan import restored_elements
from .release import delete, insert_after, release_points
from .runtime import (UNBOUND, ItemUnshared, Unshared, as_it_is, old_item, shape_of,
                      snapshot, unbound)


class Forward:
    def __init__(self, facts, replay, refs, written, updates=None, containers=frozenset()):
        self.facts = facts
        self.containers = containers  # names that may hold a list or dict (old_item)
        self.replay = replay
        self.refs = refs
        self.written = written  # arrays the body may write into, and what shares them
        self.plan = None
        self.measured = frozenset()  # values the backward pass only measures
        self.bare = frozenset()  # of those, the arrays kept as their bare shapes
        self.guards = {}  # id(statement) -> names it reads that may still be UNBOUND
        self.updates = updates or {}  # id(t += v) -> its CompileError if t is an array
        self.tape_names = []

    def snapshot(self, name):
        """A copy of what ``name`` holds, made before a write: an array's own; of a
        container, deep; a number as it is (what the name holds is known at run time)."""
        if self.facts.ranks.get(name.id, 0) > 0 and name.id not in self.containers:
            return S.expr(f"{name.id}.copy()")
        return gast.Call(func=self.refs.bind(snapshot, "snapshot"), args=[S.name(name.id)],
                         keywords=[])

    def body(self, plan, ret, live, measured, bare=frozenset()):
        """The forward pass for ``plan``, returning ``ret``'s value and a tape of the
        ``live`` values (those in ``measured`` by their shapes, of which those in
        ``bare`` by ``x.shape``: see bare_shapes.py)."""
        self.plan, self.measured, self.bare = plan, measured, bare
        extra = [v for _, v in plan.saves.values()]
        extra += list(self.replay.counters.values()) + list(self.replay.counter_stacks.values())
        extra += list(self.replay.tapes().values())
        tape = self.tape_names = list(dict.fromkeys(sorted(live) + extra))
        # a value saved for the backward pass may come from a branch not taken: define it
        definite = definitely_assigned(self.facts)
        top = {id(st) for st in self.facts.body}  # a save inside an if may not run: not definite
        definite |= {v for k, (kind, v) in plan.saves.items() if kind == "name" and k[0] in top}
        missing = [n for n in tape if n not in definite and n not in plan.init_none
                   and n not in plan.stacks and n not in self.replay.counter_stacks.values()]
        # the user's own reads of a value defined here must still fail where Python's would
        self.guards = _unbound_reads(self.facts,
                                     (set(plan.init_none) | set(missing)) & self.facts.primal)
        guarded = {name for names in self.guards.values() for name in names}
        code = [S.assign(n, self.unbound if n in guarded else S.const(None))
                for n in missing + plan.init_none]
        code += [S.assign(v, gast.List(elts=[], ctx=gast.Load())) for v in plan.stacks]
        code += [S.assign(v, gast.List(elts=[], ctx=gast.Load()))
                 for v in self.replay.counter_stacks.values()]
        code += self.block(self.facts.body[:-1])
        code += self.guarded(ret)
        result = S.copy_node(ret.value)
        code, shaped = self.released(code, result)
        tape_value = gast.Tuple(elts=[S.name(n) if n in shaped else self.kept(n)
                                      for n in self.tape_names], ctx=gast.Load())
        code.append(gast.Return(value=gast.Tuple(elts=[result, tape_value], ctx=gast.Load())))
        return code

    def released(self, code, result):
        """``code`` letting go of each temporary after its last read (release.py): a
        value the tape only measures becomes its shape there.  Also the names so
        shaped, which the tape then holds as they are."""
        shapes = {n for n in self.tape_names if not isinstance(self.kept(n), gast.Name)}
        whole = set(self.tape_names) - shapes
        params = self.facts.params  # the caller holds them: deleting frees nothing
        points = release_points(code, params, S.loaded_names(result) | whole,
                                self.facts.numbers | set(params))
        inserts, shaped = {}, set()
        for k, names in points:
            inserts[k] = [S.assign(n, self.kept(n)) for n in names if n in shapes]
            shaped |= {n for n in names if n in shapes}
            gone = [n for n in names if n not in shapes]
            inserts[k] += [delete(gone)] if gone else []
        return insert_after(code, inserts), shaped

    def consumed(self):
        """What the backward pass changes in place: its stacks, and arrays whose
        overwritten elements it restores."""
        stacks = [v for v in self.tape_names if v in self.plan.stacks
                  or v in self.replay.counter_stacks.values()]
        written = sorted(restored_elements(self.facts, self.plan) & set(self.tape_names))
        return stacks + written

    def kept(self, name):
        """What the forward pass keeps of ``name``: the value, or only its shape
        (``shape_of(x)``, or ``x.shape`` where that is all the backward pass reads):
        see :func:`kept_as_shape`."""
        if kept_as_shape(name, self.measured, self.facts):
            if name in self.bare:
                return gast.Attribute(value=S.name(name), attr="shape", ctx=gast.Load())
            return gast.Call(func=self.refs.bind(shape_of, "shape_of"), args=[S.name(name)],
                             keywords=[])
        return S.name(name)

    def block(self, stmts):
        code = []
        for s in stmts:
            code.extend(self.stmt(s))
        return code or [gast.Pass()]

    @property
    def unbound(self):
        return self.refs.bind(UNBOUND, "UNBOUND")

    def stmt(self, s):
        return self.guarded(s) + self._stmt(s)

    def guarded(self, s):
        """Checks that the names ``s`` reads are bound, where they may not be, that an
        update ``t += v`` others may see is of a number, and that one ``c[k] += v`` is
        of an item no other slot shares (aliasing.check_updates)."""
        checks = [_guard(name, self.unbound, self.refs.bind(unbound, "unbound"))
                  for name in self.guards.get(id(s), ())]
        if id(s) in self.updates:
            target, error = s.targets[0], self.updates[id(s)]
            if isinstance(target, gast.Name):
                check = Unshared(error)
                func, args = self.refs.bind(check, "unshared"), [S.name(target.id)]
            else:  # c[k] += v on a container a user function returned
                check = ItemUnshared(error)
                func = self.refs.bind(check, "item_unshared")
                args = [S.name(target.value.id), _index_value(S.copy_node(target.slice))]
            checks.append(gast.Expr(value=gast.Call(func=func, args=args, keywords=[])))
        return checks

    def _stmt(self, s):
        plan = self.plan
        pre = []
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            for name in target_names(target) + self.replay.call_tape(s):
                save = plan.saves.get((id(s), name))
                if save is None:
                    continue
                if isinstance(target, gast.Subscript) and name in self.containers:
                    value = gast.Call(func=self.refs.bind(old_item, "old_item"), keywords=[],
                                      args=[S.name(name), _index_value(S.copy_node(target.slice))])
                elif isinstance(target, gast.Subscript):  # keep the elements about to change
                    value = gast.Call(func=gast.Attribute(value=gast.Subscript(
                        value=S.name(name), slice=S.copy_node(target.slice),
                        ctx=gast.Load()), attr="copy", ctx=gast.Load()), args=[], keywords=[])
                else:
                    value = self.kept(name)
                    if isinstance(value, gast.Name) and _changes_in_place(s, self.facts):
                        # the name keeps the object the change mutates: keep its items
                        value = gast.Call(func=self.refs.bind(as_it_is, "as_it_is"),
                                          args=[value], keywords=[])
                pre.append(_save(save[0], save[1], value))
            for name in plan.snapshots.get(id(s), ()):  # a view the write changes too
                kind, var = plan.saves[id(s), name]
                pre.append(_save(kind, var, gast.Call(func=self.refs.bind(
                    snapshot, "snapshot"), args=[S.name(name)], keywords=[])))
        if isinstance(s, gast.Assign):
            if id(s) in self.replay.calls:
                stmt = S.copy_node(s)
                unit, tape = self.replay.calls[id(s)]
                forward = self.refs.bind(unit.forward, unit.name + "_forward")
                stmt.value.func = forward
                if isinstance(unit, MethodCall):  # obj.f(x): the receiver is its first input
                    stmt.value.args = [S.copy_node(s.value.func.value)] + stmt.value.args
                # the callee's tape keeps its arguments: one this function writes into
                # later (or into memory it shares: b = a; a[0] = v) must be a snapshot
                # (unless the callee itself writes into it); a container, deep: its
                # arrays are what is written
                stmt.value.args = [self.snapshot(a) if isinstance(a, gast.Name)
                                   and a.id in self.written and k not in unit.mutated else a
                                   for k, a in enumerate(stmt.value.args)]
                stmt.targets = [gast.Tuple(elts=[S.copy_node(s.targets[0]),
                                                 S.name(tape, gast.Store())], ctx=gast.Store())]
                return pre + [stmt]
            return pre + [self.computation(s)]
        if isinstance(s, gast.If):
            return [gast.If(test=S.copy_node(s.test), body=self.block(s.body),
                            orelse=self.block(s.orelse) if s.orelse else [])]
        if isinstance(s, (gast.For, gast.While)):
            counter = self.replay.counters.get(id(s)) if id(s) in self.replay.loops else None
            body = self.block(s.body)
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
            if counter is not None and id(s) in self.replay.counter_stacks:
                code.append(S.stmt(f"{self.replay.counter_stacks[id(s)]}.append({counter})"))
            return code
        return [S.copy_node(s)]

    def computation(self, s):
        """Assignment ``s`` as the generated code runs it: an ``sd.*`` op as NumPy."""
        stmt = S.copy_node(s)
        op = self.facts.ops[id(s)]
        if isinstance(stmt.value, gast.Call) and op.kind is not Kind.CALL and op.forward:
            stmt.value.func = self.refs.function_expr(op.forward)
        return stmt


def _changes_in_place(s, facts):
    """Whether assignment ``s`` rebinds its target to the very container it changes:
    ``xs = append(xs, v)``, and the statements of pop, insert, update (mutators.py)."""
    return facts.ops[id(s)].fn is append or hasattr(s, "srcdiff_changes")


def _save(kind, var, value):
    if kind == "stack":
        return gast.Expr(value=gast.Call(func=gast.Attribute(value=S.name(var), attr="append",
                                                             ctx=gast.Load()),
                                         args=[value], keywords=[]))
    return S.assign(var, value)


def kept_as_shape(name, measured, facts):
    """Whether the forward pass keeps only the shape of ``name``: the backward pass only
    measures it (``measured``), and it is no number and no argument never rebound
    (kept whole: the caller holds it anyway, and measuring it costs time for no memory)."""
    return name in measured and name not in facts.scalars and name not in facts.held


def shape_only(code, names):
    """The names among ``names`` that the code reads only to measure them."""
    measured, used = set(), set()
    for stmt in code:
        _measures(stmt, False, measured, used)
    return (measured - used) & set(names)


def _measures(node, measuring, measured, used):
    """Add the Names ``node`` reads to ``measured`` (read only to be measured: an
    argument in a ``measured_args`` position) or to ``used``."""
    if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
        (measured if measuring else used).add(node.id)
        return
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name):
        positions = measured_args(node.func.id)
        _measures(node.func, False, measured, used)
        for k, arg in enumerate(node.args):
            _measures(arg, k in positions and isinstance(arg, gast.Name), measured, used)
        for kw in node.keywords:
            _measures(kw.value, False, measured, used)
        return
    for child in S.children(node):
        _measures(child, False, measured, used)


def definitely_assigned(facts, before=None):
    """The names surely bound at the end of the body (a loop may run no iteration, a
    branch takes one arm); with ``before`` (a dict), also id(statement) -> those surely
    bound before it runs, recorded into it."""
    return _assigned(facts.body, set(facts.params), before)


def _assigned(stmts, defined, before):
    """The names surely bound after ``stmts`` run, ``defined`` before them (a set this
    changes: a copy for each arm and loop body, one set along a straight run, so that
    a long body costs no copy per statement but for ``before``'s records)."""
    for s in stmts:
        if before is not None:
            before[id(s)] = frozenset(defined)
        if isinstance(s, gast.Assign) and not isinstance(s.targets[0], gast.Subscript):
            defined.update(target_names(s.targets[0]))
        elif isinstance(s, gast.If) and manager_of(s):  # always taken (managers.py)
            defined = _assigned(s.body, defined, before)
        elif isinstance(s, gast.If):
            defined = (_assigned(s.body, set(defined), before)
                       & _assigned(s.orelse, set(defined), before))
        elif isinstance(s, gast.For):
            _assigned(s.body, defined | {s.target.id}, before)
        elif isinstance(s, gast.While):
            _assigned(s.body, set(defined), before)
    return defined


def _unbound_reads(facts, names):
    """id(statement) -> the names among ``names`` it reads that may be unbound there."""
    guards = {}
    if not names:
        return guards
    before = {}
    definitely_assigned(facts, before)
    for s in facts.in_order:
        if isinstance(s, gast.If):
            reads = S.loaded_names(s.test)
        elif isinstance(s, gast.For):
            reads = S.loaded_names(s.iter)
        elif isinstance(s, gast.While):
            reads = S.loaded_names(s.test)
        else:
            reads = S.loaded_names(s)
        unsure = sorted((reads & names) - before[id(s)])
        if unsure:
            guards[id(s)] = unsure
    return guards


def _guard(name, sentinel, raise_unbound):
    """``if name is UNBOUND: unbound("name")``."""
    return gast.If(test=gast.Compare(left=S.name(name), ops=[gast.Is()],
                                     comparators=[sentinel]),
                   body=[gast.Expr(value=gast.Call(func=raise_unbound, args=[S.const(name)],
                                                   keywords=[]))], orelse=[])

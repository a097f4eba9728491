"""Planning: what the forward pass keeps for the backward pass.

:func:`make_plan` is a pure function of records: the :class:`~.facts.Facts`, the
:class:`Marks` a backward pass left (which statements' adjoint code reads each
name, and which compound statements have adjoint code), and the tape variables of
calls.  It returns a :class:`Plan`; the only thing it changes is the namer, which
hands out the same save variables on every call.

Invariants of a plan:

* a value is saved iff some adjoint reads it after it was overwritten
  (:func:`needs_restore`): into a variable of its own outside loops, onto a
  stack (one per name, so pushes and pops nest) inside them;
* a write into elements (``x[i] = v``) overwrites every name sharing x's memory
  (a view ``y = x[1:]``, an alias ``y = x``, a container holding it or an item read
  back out of one: aliasing.sharing): each an adjoint reads from before the
  write is saved whole there (a snapshot), and restored after its adjoint;
* a cheap operation on numbers in a loop is recomputed by the backward pass
  instead of stacked (:func:`_recomputes`);
* it is closed: restores make the backward pass replay branches and loops that
  had no adjoint code, and restore elements by index, and those read values too;
  the plan is iterated over records until they add no read.
"""
from dataclasses import dataclass, field

import gast

from . import syntax as S
from .aliasing import sharing, shared_with
from .analysis import Kind, target_names
from .errors import InvariantError
from .facts import from_math


INPUT, RESULT = "input", "result"


@dataclass
class Marks:
    """What a backward pass reads: ``reads_at`` maps each name to the statements
    (ids) whose adjoint code reads it; ``coded`` holds the compound statements whose
    reversed body has adjoint code of its own; ``versions`` maps (name, id) of an
    assignment ``x = f(x, ...)`` whose adjoint reads only one of x's values to it:
    INPUT (the value f was called with) or RESULT (the value it returned)."""
    reads_at: dict
    coded: frozenset
    versions: dict = field(default_factory=dict)


@dataclass
class Plan:
    saves: dict = field(default_factory=dict)      # (id(stmt), name) -> ("stack"|"name", var)
    stacks: list = field(default_factory=list)     # stack variables, made at the start
    init_none: list = field(default_factory=list)  # names to define before their first save
    recompute_before: dict = field(default_factory=dict)  # id(stmt) -> assignments re-run
    recomputed: frozenset = frozenset()            # names the backward pass recomputes
    reads_at: dict = field(default_factory=dict)   # the marks it was planned for, closed
    versions: dict = field(default_factory=dict)   # of the marks (see Marks)
    snapshots: dict = field(default_factory=dict)  # id(x[i] = v) -> views of x saved whole


@dataclass
class Replay:
    """How the backward pass replays the forward pass, found as it is emitted: the
    compiled callee and tape variable of each call, the trip-count variables of the
    loops it replays that need one (a stack of them for a nested loop)."""
    calls: dict                                        # id(stmt) -> (unit, tape variable)
    counters: dict = field(default_factory=dict)       # id(loop) -> trip-count variable
    counter_stacks: dict = field(default_factory=dict)  # id(loop) -> stack of trip counts
    loops: set = field(default_factory=set)            # id(loop) of loops it replays

    def tapes(self):
        return {sid: tape for sid, (_, tape) in self.calls.items()}

    def call_tape(self, s):
        """The tape variable of a call statement, as a list of at most one name."""
        return [self.calls[id(s)][1]] if id(s) in self.calls else []


class Namer:
    """Names of the generated code that must be the same on every emission: the
    adjoint of each value, save variables, a statement's temporaries."""

    def __init__(self, names):
        self.names = names
        self.made = {}

    def adjoint(self, name):
        return self._get(("adjoint", name), "d" + name)

    def adjoints(self):
        """value name -> adjoint name, for every adjoint named so far."""
        return {key[1]: made for key, made in self.made.items() if key[0] == "adjoint"}

    def stack(self, name):
        return self._get(("stack", name), name + "_stack")

    def old(self, s, name):
        return self.at(s, name + "_old")

    def at(self, s, hint):
        """A name for ``hint`` at statement ``s``."""
        return self._get((id(s), hint), hint)

    def _get(self, key, hint):
        if key not in self.made:
            self.made[key] = self.names.fresh(hint)
        return self.made[key]


MAX_ROUNDS = 64  # each round adds a read or stops: far more than a function needs


def make_plan(facts, marks, tapes, namer, aliases=None, containers=frozenset()):
    """The plan for a backward pass that left ``marks``; ``tapes`` maps id(call
    statement) -> its tape variable; ``aliases`` as ``aliasing.sharing`` takes them;
    ``containers``: names that hold a list, tuple or dict wherever they are bound (a
    write into one of their slots changes no array they hold)."""
    reads_at = {name: set(at) for name, at in marks.reads_at.items()}
    for _ in range(MAX_ROUNDS):
        before, recomputed, inputs, planned_reads = _recomputes(facts, reads_at, tapes)
        reads = (set(reads_at) & facts.primal | inputs & facts.primal) - recomputed
        saves, stacks, init_none, snapshots = _saves(facts, reads, planned_reads, marks.versions,
                                                     tapes, namer, aliases, containers)
        added = _replay_reads(facts, marks.coded, saves)
        if all(at <= reads_at.get(name, set()) for name, at in added.items()):
            return Plan(saves, stacks, init_none, before, frozenset(recomputed), planned_reads,
                        marks.versions, snapshots)
        for name, at in added.items():
            reads_at.setdefault(name, set()).update(at)
    raise InvariantError("the plan of saves did not converge")


def needs_restore(facts, reads_at, s, name, versions):
    """Whether an adjoint reads the value ``name`` holds right before statement ``s``
    (``versions`` as in :class:`Marks`): a read anywhere in a loop that also contains
    ``s``, or one of that value (see :func:`_reads_value_before`)."""
    for r in reads_at.get(name, ()):
        if facts.loops_of[r] & facts.loops_of[id(s)]:
            return True
        if _reads_value_before(facts, versions, r, s, name):
            return True
    return False


def _reads_value_before(facts, versions, r, s, name):
    """Whether statement ``r``'s adjoint (outside ``s``'s loops) reads the value of
    ``name`` from right before ``s``.  Not if ``r`` is ``s`` and reads only the new
    value (``y = exp(x)``, ``y = tanh(y)``: it runs before the restore would); not
    if ``r`` reads only its own input (its own restore brings that back); not if
    ``r`` comes after ``s`` or on another arm of a branch; not if ``r`` is an
    assignment and ``name = ...`` runs on every path from it to ``s``: that
    statement's restore, which this read makes it plan, brings the value back."""
    version = versions.get((name, r))
    if r == id(s):
        own = (isinstance(s, gast.Assign) and not isinstance(s.targets[0], gast.Subscript)
               and name not in S.loaded_names(s.value))
        return not own and version != RESULT
    if version == INPUT or facts.order[r] > facts.order[id(s)] or exclusive(facts, r, id(s)):
        return False
    return not (isinstance(facts.statements[r], gast.Assign) and any(
        facts.order[r] < facts.order[id(t)] < facts.order[id(s)] and _on_every_path(facts, t, s)
        for t in facts.bindings.get(name, ())))


def _on_every_path(facts, t, s):
    """Whether statement ``t``, earlier than ``s``, is in a block that holds ``s``:
    then every path that reaches ``s`` from before ``t`` runs ``t``."""
    return (facts.arms_of[id(t)] <= facts.arms_of[id(s)]
            and facts.loops_of[id(t)] <= facts.loops_of[id(s)])


def restored_elements(facts, plan):
    """The names whose elements the backward pass writes back (saved at ``x[i] = v``):
    the only arrays it writes into that the tape holds."""
    return {name for sid, name in plan.saves
            if isinstance(facts.statements[sid], gast.Assign)
            and isinstance(facts.statements[sid].targets[0], gast.Subscript)
            and facts.statements[sid].targets[0].value.id == name}  # not a snapshot


def exclusive(facts, a, b):
    """Whether statements ``a`` and ``b`` are in different arms of one ``if``."""
    branches = dict(facts.arms_of[a])
    return any(branches.get(branch, arm) != arm for branch, arm in facts.arms_of[b])


def _saves(facts, reads, reads_at, versions, tapes, namer, aliases, containers):
    """(saves, stacks, names to define as None first, snapshots) for the values in
    ``reads``."""
    saves, stacks, init_none, snapshots = {}, [], [], {}
    groups = sharing(facts, aliases)
    defined, possibly = set(facts.params), set(facts.params)

    def save_for(s, name, in_loop):
        if not needs_restore(facts, reads_at, s, name, versions):
            return
        if not in_loop and name not in possibly:
            return  # nothing to keep: no value before this one
        if name not in defined and name not in init_none:
            init_none.append(name)  # a branch or loop not run may leave it unset
        if in_loop:
            stack = namer.stack(name)
            if stack not in stacks:
                stacks.append(stack)
            saves[id(s), name] = ("stack", stack)
        else:
            saves[id(s), name] = ("name", namer.old(s, name))

    for s in facts.in_order:  # forward order: a loop's target before its body
        in_loop = bool(facts.loops_of[id(s)])
        top = not in_loop and not facts.arms_of[id(s)]
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            if isinstance(target, gast.Subscript):
                x = target.value.id
                if x in reads:
                    save_for(s, x, in_loop)
                # the write changes what shares x's memory too; a slot of a container
                # is rebound, and no array it holds changes
                sharers = set() if x in containers else shared_with(groups, x) - {x}
                for n in sorted(sharers & reads):
                    save_for(s, n, in_loop)
                    if (id(s), n) in saves:
                        snapshots.setdefault(id(s), []).append(n)
            else:
                for name in target_names(target):
                    if name in reads:
                        save_for(s, name, in_loop)
                    possibly.add(name)
                    if top:
                        defined.add(name)
                if id(s) in tapes:  # one per iteration of a loop
                    save_for(s, tapes[id(s)], in_loop)
        elif isinstance(s, gast.For) and s.target.id in reads:
            save_for(s, s.target.id, in_loop)
            possibly.add(s.target.id)
    return saves, stacks, init_none, snapshots


def _replay_reads(facts, coded, saves):
    """The reads the restores of ``saves`` add: a branch or loop replayed only to
    restore values reads its condition or iterations; a restored element, its
    array and index.  name -> ids of the statements that read it."""
    replayed = set()
    added = {}
    for (sid, name), _ in saves.items():
        s = facts.statements[sid]
        if isinstance(s, (gast.For, gast.While)):
            continue  # a loop's target is restored after the loop, if it is replayed
        replayed |= facts.loops_of[sid] | {branch for branch, _ in facts.arms_of[sid]}
        target = s.targets[0]
        if isinstance(target, gast.Subscript) and name == target.value.id:  # by element
            for read in S.loaded_names(target):
                added.setdefault(read, set()).add(sid)
    for cid in replayed - coded:
        c = facts.statements[cid]
        head = c.test if isinstance(c, gast.If) else c.iter if isinstance(c, gast.For) else None
        for read in S.loaded_names(head) if head is not None else ():
            added.setdefault(read, set()).add(cid)
    return added


def _recomputes(facts, reads_at, tapes):
    """Numbers a loop's adjoints read, recomputed by the backward pass rather than
    stacked: a float operation or two cost less than a push and a pop, and the
    forward pass keeps only what the loop carries, as a hand-written loop does.

    ``t = f(u, ...)`` on Python numbers qualifies when it is t's only assignment,
    inside a loop; every adjoint that reads t is its own or a later statement's in
    the same block; and no statement in between writes u.  Right before the adjoint
    of the last of them, u holds its value from t's assignment again: t is re-run
    there.  Returns (statement -> assignments re-run before its adjoint, the names
    recomputed, the names the re-runs read, ``reads_at`` with those reads added)."""
    before, recomputed, inputs_read = {}, set(), set()
    reads_at = {name: set(at) for name, at in reads_at.items()}
    once = {n for n, c in facts.counts.items() if c == 1} - set(facts.params) - \
        facts.loop_targets
    for block in facts.blocks:
        if not facts.loops_of[id(block[0])]:
            continue
        spans = [range(facts.order[id(st)], facts.order[id(st)] + facts.extent[id(st)])
                 for st in block]
        for k in reversed(range(len(block))):
            t = _recomputable(facts, block[k], once, tapes)
            readers = [facts.order[r] for r in reads_at.get(t, ())]
            if t is None or not readers:
                continue
            later = [j for j in range(k, len(block)) if any(r in spans[j] for r in readers)]
            if sum(r in spans[j] for j in later for r in readers) != len(readers):
                continue  # read before it is assigned, or outside its block
            last = later[-1]
            inputs = S.loaded_names(block[k].value)
            if inputs & S.assigned_names(block[k + 1:last + 1], into=True):
                continue
            recomputed.add(t)
            before.setdefault(id(block[last]), []).insert(0, block[k])
            for u in inputs:
                reads_at.setdefault(u, set()).add(id(block[last]))
            inputs_read |= inputs
    return before, recomputed, inputs_read, reads_at


def _recomputable(facts, s, once, tapes):
    """The name ``s`` assigns, if re-running ``s`` is a cheap operation on numbers."""
    if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
        return None
    t, op = s.targets[0].id, facts.ops[id(s)]
    if t not in once or t not in facts.scalars or id(s) in tapes:
        return None
    if op.kind not in (Kind.PRIMITIVE, Kind.COPY) or op.kwargs or isinstance(
            s.value, gast.Call) and not (from_math(op.fn) or op.fn is float):
        return None
    numbers = facts.scalars | facts.ints
    if all(isinstance(a, gast.Constant) or getattr(a, "id", None) in numbers
           for a in op.inputs):
        return t
    return None

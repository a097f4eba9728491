"""Peephole passes over generated code: fewer temporaries, same values."""
import bisect
import collections

import gast

from . import syntax as S


def propagate_copies(code, candidates):
    """Remove copies ``a = b`` of adjoints: later uses of ``a`` read ``b`` instead.

    Only where that is plainly safe: ``a`` (one of ``candidates``) is assigned
    once in the whole function, all its uses follow the copy in the same block,
    and ``b`` is not reassigned before the last of them.  Copies are considered
    in the order they appear, over and over until none can go."""
    index = _Occurrences(code)
    while _propagate(code, candidates, index):
        pass
    return code


def _propagate(block, candidates, index):
    """One pass over ``block`` and the blocks inside it; whether anything changed."""
    changed = False
    k = 0
    while k < len(block):
        stmt = block[k]
        for child in _blocks(stmt):
            changed |= _propagate(child, candidates, index)
        copy = _copy(stmt)
        if copy is not None and copy[0] in candidates and index.removable(stmt, *copy):
            index.remove(stmt, *copy)
            del block[k]
            changed = True
        else:
            k += 1
    return changed


class _Place:
    """Where a statement is: statements are numbered in pre-order, so the
    statements inside this one are numbered ``num + 1`` to ``end - 1`` and the
    statements after it in its block up to ``block_end - 1``."""

    __slots__ = ("num", "end", "block", "block_end", "parent", "gone")

    def __init__(self, num, block, parent):
        self.num, self.block, self.parent = num, block, parent
        self.end = self.block_end = None
        self.gone = False


class _Occurrences:
    """Where each name is read and written in ``code``, kept current while copies go.

    Invariants: ``writes[n]`` lists the places of the statements that store ``n``
    (once per store, in pre-order: it only ever loses its one entry when a copy
    into ``n`` goes); ``reads[n]`` lists ``(Name node, place)`` for every other
    occurrence of ``n``, and those of removed statements, whose places are marked
    ``gone``.  Places are keyed by statement identity: the generated code holds no
    statement object in two places (checked over the test suite's units).
    Statements are only ever deleted, so the numbering stays in order."""

    def __init__(self, code):
        self.places = {}   # id(statement) -> _Place
        self.reads = collections.defaultdict(list)
        self.writes = collections.defaultdict(list)
        self._number(code, None, 0)

    def _number(self, block, parent, num):
        places = []
        for stmt in block:
            place = self.places[id(stmt)] = _Place(num, block, parent)
            places.append(place)
            children = list(_blocks(stmt))
            for n in _names_outside(stmt, children):
                if type(n.ctx) is gast.Store:
                    self.writes[n.id].append(place)
                else:
                    self.reads[n.id].append((n, place))
            num += 1
            for child in children:
                num = self._number(child, place, num)
            place.end = num
        for place in places:
            place.block_end = num
        return num

    def removable(self, stmt, a, b):
        """Whether the copy ``stmt`` (``a = b``) may go: the conditions of
        :func:`propagate_copies`, read off the occurrences."""
        if len(self.writes[a]) != 1:
            return False
        copy = self.places[id(stmt)]
        uses = [place for _, place in self.reads[a] if not place.gone]
        if not all(copy.num < place.num < copy.block_end for place in uses):
            return False  # a is read somewhere else too
        if not uses:
            return True
        last = max(uses, key=lambda place: place.num)
        while last.block is not copy.block:
            last = last.parent  # the statement of the copy's block that holds the use
        nums = [place.num for place in self.writes[b]]  # in order
        first = bisect.bisect_right(nums, copy.num)
        return first == len(nums) or nums[first] >= last.end  # b is unchanged till then

    def remove(self, stmt, a, b):
        """Rename the reads of ``a`` to ``b`` and forget the copy ``stmt``."""
        moved = self.reads.pop(a, [])
        for node, _ in moved:
            if isinstance(node.ctx, gast.Load):
                node.id = b
        self.reads[b].extend(moved)
        self.places[id(stmt)].gone = True  # its read of b
        self.writes[a] = []


def _names_outside(stmt, blocks):
    """The Name nodes of ``stmt`` that are not inside its statement ``blocks``."""
    for field in stmt._fields:
        value = getattr(stmt, field, None)
        if any(value is block for block in blocks):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, gast.AST):
                for n in S.walk(item):
                    if type(n) is gast.Name:
                        yield n


def _copy(stmt):
    if (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Name)
            and stmt.targets[0].id != stmt.value.id):
        return stmt.targets[0].id, stmt.value.id
    return None


def _blocks(stmt):
    for field in ("body", "orelse"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
            yield block


def live_names(code):
    """The names ``code`` may read before assigning them: what it needs from outside."""
    reads, _ = _summary(code)
    return reads


def live_after(stmts, live_out=frozenset()):
    """For each statement of the block ``stmts``, the names live right after it (that
    a later statement, or ``live_out`` after the block, may read before assigning)."""
    after = [frozenset()] * len(stmts)
    live = set(live_out)
    for k in reversed(range(len(stmts))):
        after[k] = frozenset(live)
        reads, kills = _statement_summary(stmts[k])
        live = (live - kills) | reads
    return after


def unread_after(stmts, candidates, live_out=frozenset()):
    """For each statement ``k`` of the block ``stmts``, ``(unread, kills)``: the names
    of ``candidates[k]`` not live right after it (``candidates[k] - live_after(stmts,
    live_out)[k]``) and :func:`statement_kills` of it.  One backward walk that
    updates one set of live names in place: a copy of it for each statement would
    make a long block's cost quadratic."""
    found = [None] * len(stmts)
    live = set(live_out)
    for k in reversed(range(len(stmts))):
        reads, kills = _statement_summary(stmts[k])
        found[k] = (set(candidates[k]) - live, kills)
        live -= kills
        live |= reads
    return found


def statement_kills(s):
    """The names statement ``s`` assigns on every path through it."""
    return _statement_summary(s)[1]


# Liveness, backwards.  Every statement maps the names live after it to those live
# before it as ``live -> reads | (live - kills)``, and so does every block of them:
# a statement is summarised once, as that pair, by one walk of it.

def _summary(stmts):
    """(reads, kills) of a block: the names it may read before assigning them, and
    those it assigns on every path through it."""
    reads, kills = set(), set()
    for s in reversed(stmts):
        s_reads, s_kills = _statement_summary(s)
        reads -= s_kills
        reads |= s_reads
        kills |= s_kills
    return reads, kills


def _statement_summary(s):
    if isinstance(s, gast.If):
        body_reads, body_kills = _summary(s.body)
        else_reads, else_kills = _summary(s.orelse)
        return body_reads | else_reads | S.loaded_names(s.test), body_kills & else_kills
    if isinstance(s, (gast.For, gast.While)):
        # what any iteration reads before assigning it is live at the loop's head (a
        # later iteration's reads are an earlier one's), the loop's own target aside;
        # the body may not run at all, so it kills nothing
        body_reads, _ = _summary(s.body)
        if isinstance(s, gast.For):
            return (body_reads - S.names_in(s.target)) | S.loaded_names(s.iter), set()
        return body_reads | S.loaded_names(s.test), set()
    if isinstance(s, gast.Assign) and not any(
            type(t) is not gast.Name and any(isinstance(n, gast.Subscript) for n in S.walk(t))
            for t in s.targets):
        return S.loads_and_stores(s)  # a.b = v reads a
    reads = S.loaded_names(s)
    if isinstance(s, gast.AugAssign):
        reads |= S.names_in(s.target)
    return reads, set()

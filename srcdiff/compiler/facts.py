"""Facts about a normalised function body, gathered in one walk.

:func:`gather` returns a frozen :class:`Facts`: the op of each assignment (each
right-hand side is described exactly once), each statement's place in forward
order with the loops and branch arms around it, every statement list, how often
each name is assigned, and the kinds of names (Python numbers, ints, immutable
numbers, ranks of arrays, lists built from literals, arrays written into).  Later
passes read these records and never walk the body again for a fact recorded here.

Invariant: every ``Assign`` of the body has an entry in ``ops``, ``order``,
``loops_of`` and ``arms_of``; every compound statement has one in ``order``,
``loops_of`` and ``arms_of``.
"""
import math
from dataclasses import dataclass
from types import MappingProxyType

import gast
import numpy as np

from ..rules import traits_of
from . import syntax as S
from .analysis import Kind, target_names


@dataclass(frozen=True)
class Facts:
    params: tuple           # the parameter names, in order
    body: list              # the normalised statements (the final return last)
    assigns: tuple          # every Assign, in forward order, at any depth
    ops: MappingProxyType   # id(assign or expression statement) -> its Op
    statements: MappingProxyType  # id(statement) -> the statement, at any depth
    in_order: tuple         # every statement, in forward (pre-)order: a compound before
                            # the statements inside it
    extent: MappingProxyType    # id(statement) -> how many statements it spans, itself
                                # included: those from its place in ``order`` on
    order: MappingProxyType     # id(statement) -> place in forward order
    loops_of: MappingProxyType  # id(statement) -> frozenset of id(loop) around it
    arms_of: MappingProxyType   # id(statement) -> frozenset of (id(if), arm) around it
    blocks: tuple           # every non-empty statement list, the body first
    loops: tuple            # every For and While, outer before inner
    breaking: frozenset     # id(loop) of loops with a ``break`` anywhere inside
    exprs: tuple            # every bare expression statement (a call for its effect)
    counts: MappingProxyType    # name -> how many assignments bind it
    bindings: MappingProxyType  # name -> the assignments ``name = ...`` (one target), in
                                # forward order
    primal: frozenset       # the parameters and every name the body binds
    loop_targets: frozenset  # names bound by ``for``
    unpacked: frozenset     # names bound by unpacking (of whatever kind f returns)
    packs: frozenset        # names bound to a list or tuple literal somewhere
    written: frozenset      # arrays written into by ``x[i] = v``
    updated: frozenset      # names updated by ``x += v`` (in_place assignments)
    held: frozenset         # parameters the function never rebinds nor writes into
    scalars: frozenset      # names that always hold a Python number
    ints: frozenset         # names that always hold a Python int
    numbers: frozenset      # names that always hold an immutable number (a Python number
                            # or a NumPy scalar: np.sum(x), v[i] of a vector): x += v
                            # rebinds them, and no write reaches them through another name
    ranks: MappingProxyType  # name -> the ndim every value it holds has (parameters: as
                             # the compile was keyed; unknown ones are absent)


def gather(body, params, scalar_params, describe, param_ranks=None):
    """The :class:`Facts` of ``body``; ``scalar_params`` are the parameters passed
    Python numbers, ``param_ranks`` the ndim of those passed arrays (where known),
    ``describe`` maps a right-hand side to its Op."""
    assigns, ops, order, loops_of, arms_of, statements = [], {}, {}, {}, {}, {}
    blocks, loops, exprs, in_order, extent, breaking = [], [], [], [], {}, set()

    into = (assigns, ops, order, loops_of, arms_of, statements, blocks, loops, exprs,
            in_order, extent, breaking)
    _walk(body, frozenset(), frozenset(), into, describe)
    counts, by_name, unpacked, written, updated = {}, {}, set(), set(), set()
    for s in assigns:
        target = s.targets[0]
        if isinstance(target, gast.Subscript):
            written.add(target.value.id)
        elif isinstance(target, gast.Tuple):
            unpacked.update(target_names(target))
        else:
            by_name.setdefault(target.id, []).append(s)
            if getattr(s, "in_place", False):
                updated.add(target.id)
        for name in target_names(target):
            counts[name] = counts.get(name, 0) + 1
    loop_targets = {s.target.id for s in loops if isinstance(s, gast.For)}
    bound = set(counts) | loop_targets
    packs = {name for name, values in by_name.items()
             if any(ops[id(v)].kind is Kind.PACK for v in values)}
    literal_lists = {name for name, values in by_name.items()
                     if all(isinstance(v.value, (gast.List, gast.Tuple)) for v in values)}
    # what each right-hand side reads, for the passes below (each walks it once)
    loads = {id(s): S.loaded_names(s.value) for values in by_name.values() for s in values}
    scalars = _scalar_names(by_name, literal_lists, loop_targets, unpacked, set(params),
                            set(scalar_params), ops, loads)
    ints = _int_names(by_name, loop_targets, unpacked, loads)
    # names bound otherwise than by an assignment of a known right-hand side
    opaque = (set(params) - set(scalar_params)) | unpacked | loop_targets
    known = {**dict(param_ranks or {}), **{n: 0 for n in scalars | ints}}
    ranks = _ranks(by_name, known, opaque - set(known), scalars | ints, ints, ops, loads)
    numbers = _number_names(by_name, scalars | ints, opaque, ranks, ints, ops, loads,
                            _only_indexed(literal_lists - written, in_order))
    frozen = MappingProxyType
    return Facts(
        params=tuple(params), body=body, assigns=tuple(assigns), ops=frozen(ops),
        statements=frozen(statements), in_order=tuple(in_order), extent=frozen(extent),
        breaking=frozenset(breaking),
        order=frozen(order), loops_of=frozen(loops_of), arms_of=frozen(arms_of),
        blocks=tuple(blocks), loops=tuple(loops), exprs=tuple(exprs), counts=frozen(counts),
        bindings=frozen({n: tuple(v) for n, v in by_name.items()}), primal=frozenset(set(params) | bound), loop_targets=frozenset(loop_targets),
        unpacked=frozenset(unpacked), packs=frozenset(packs), written=frozenset(written),
        updated=frozenset(updated), held=frozenset(set(params) - bound - written),
        scalars=frozenset(scalars), ints=frozenset(ints), numbers=frozenset(numbers),
        ranks=frozen(ranks))


def _walk(stmts, outer, arms, into, describe):
    """``gather``'s one walk: the statements ``stmts``, inside the loops ``outer`` and
    the branch arms ``arms``, recorded into ``gather``'s records ``into``.  (A function
    of its own, not a closure that calls itself: that is a reference cycle, which would
    keep every record for the garbage collector.)"""
    (assigns, ops, order, loops_of, arms_of, statements, blocks, loops, exprs, in_order,
     extent, breaking) = into
    if stmts:
        blocks.append(stmts)
    for s in stmts:
        order[id(s)] = len(order)
        statements[id(s)] = s
        in_order.append(s)
        loops_of[id(s)], arms_of[id(s)] = outer, arms
        if isinstance(s, gast.Assign):
            assigns.append(s)
            ops[id(s)] = describe(s.value)
        elif isinstance(s, gast.Expr):
            exprs.append(s)
            ops[id(s)] = describe(s.value)
        elif isinstance(s, gast.Break):
            breaking.update(outer)
        elif isinstance(s, gast.If):
            _walk(s.body, outer, arms | {(id(s), 0)}, into, describe)
            _walk(s.orelse, outer, arms | {(id(s), 1)}, into, describe)
        elif isinstance(s, (gast.For, gast.While)):
            loops.append(s)
            _walk(s.body, outer | {id(s)}, arms, into, describe)
        extent[id(s)] = len(order) - order[id(s)]


# ---------------------------------------------------------------- kinds of values

def from_math(fn):
    """Whether ``fn`` is one of the ``math`` module's functions (numbers in and out)."""
    return getattr(fn, "__module__", None) == "math" or getattr(fn, "__self__", None) is math


def _full_reduction(op):
    """Whether ``op`` reduces one array to a number: no axis, and no ``keepdims=``
    but a constant False (``np.sum(x, keepdims=True)`` is an array, which ``+=``
    writes into)."""
    keep = op.kwargs.get("keepdims")
    return (traits_of(op.fn).reduces and len(op.inputs) == 1 and "axis" not in op.kwargs
            and (keep is None or isinstance(keep, gast.Constant) and keep.value is False))


def _scalar_names(by_name, literal_lists, loop_targets, unpacked, params, scalar_params, ops,
                  loads):
    """Names that always hold a Python number: no broadcasting can happen through them.

    A parameter passed an array is not one, whatever it is assigned later; nor is a
    name bound by unpacking."""

    def scalar(node, names):
        return _is_scalar(node, names, by_name, literal_lists)

    def call_scalar(s, names):
        op = ops[id(s)]
        fn, traits = op.fn, traits_of(op.fn)
        if _full_reduction(op):
            return True
        if (isinstance(fn, np.ufunc) or _picks_one(op)) and op.inputs and not op.kwargs:
            return all(scalar(a, names) for a in op.inputs)
        return traits.number or from_math(fn)

    def assigned_scalar(s, names):
        if isinstance(s.value, gast.Call):
            return call_scalar(s, names)
        return scalar(s.value, names)

    candidates = set(scalar_params) | set(by_name) | loop_targets
    names = candidates - (params - scalar_params) - unpacked
    # an item of a literal list reads the list's elements too
    extra = {name: [e for v in values for e in v.value.elts]
             for name, values in by_name.items() if name in literal_lists}
    return greatest(names, names - scalar_params - loop_targets, by_name, extra,
                     assigned_scalar, loads)


def _is_scalar(node, names, by_name, literal_lists):
    """Whether the expression ``node`` is a Python number when ``names`` are (see
    ``_scalar_names``; a function of its own: a closure calling itself is a cycle)."""
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, gast.Name):
        return node.id in names
    if isinstance(node, gast.BinOp):
        return (_is_scalar(node.left, names, by_name, literal_lists)
                and _is_scalar(node.right, names, by_name, literal_lists))
    if isinstance(node, gast.UnaryOp):
        return _is_scalar(node.operand, names, by_name, literal_lists)
    if isinstance(node, gast.Subscript) and getattr(node.value, "id", None) in literal_lists:
        # an item of a list of numbers: for x in [a, b]
        return all(_is_scalar(e, names, by_name, literal_lists)
                   for v in by_name[node.value.id] for e in v.value.elts)
    return False


def greatest(names, open_, by_name, extra, holds, loads=None):
    """The greatest subset of ``names`` where ``holds(s, subset)`` for every assignment
    ``s`` of each name in ``open_`` (the others stay): a worklist that re-checks only
    the names whose assignments read a name just dropped.  ``loads``: id(s) ->
    ``S.loaded_names(s.value)``, if the caller has them."""
    readers = {}
    for name in open_:
        for s in by_name.get(name, ()):
            reads = set(loads[id(s)]) if loads is not None else S.loaded_names(s.value)
            reads |= {n for r in list(reads) for e in extra.get(r, ()) for n in S.loaded_names(e)}
            for read in reads:
                readers.setdefault(read, set()).add(name)
    names = set(names)
    todo = list(open_)
    while todo:
        name = todo.pop()
        if name in names and not all(holds(s, names) for s in by_name.get(name, ())):
            names.discard(name)
            todo.extend(readers.get(name, ()))
    return names


_INT_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)


def _int_names(by_name, loop_targets, unpacked, loads):
    """Names that always hold a Python int: loop counters and arithmetic on them."""

    names = (set(by_name) | loop_targets) - unpacked
    names = greatest(names, names - loop_targets, by_name, {},
                      lambda s, names: _is_int(s.value, names), loads)
    return names - {n for n in loop_targets if n in by_name}


def _is_int(node, names):
    """Whether the expression ``node`` is a Python int when ``names`` are."""
    if isinstance(node, gast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, gast.Name):
        return node.id in names
    if isinstance(node, gast.BinOp) and isinstance(node.op, _INT_OPS):
        return _is_int(node.left, names) and _is_int(node.right, names)
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name):
        return node.func.id in ("len", "int")
    return False


# ---------------------------------------------------------------- ranks and numbers

_MATMUL = (np.dot, np.matmul)
_MAKERS = (np.zeros, np.ones, np.empty, np.full)   # np.zeros(shape)
_LIKE = (np.zeros_like, np.ones_like, np.empty_like, np.full_like)  # np.zeros_like(x)


def _ranks(by_name, known, unknown, fixed, ints, ops, loads):
    """name -> ndim, for the names whose every value has one known ndim: ``known``
    gives the ndim of parameters and of ``fixed`` names (numbers and ints, settled
    already); names bound otherwise than by an assignment (``unknown``) are never in
    it.  A guess for each other name from its assignments, then the greatest subset
    of the guesses that every assignment (a parameter's too) confirms."""
    guess = dict(known)
    open_ = {n for n in by_name if n not in fixed and n not in unknown}
    readers = {}  # name -> the open names with an assignment that reads it
    for n in open_:
        for s in by_name[n]:
            for read in loads[id(s)] | _input_names(ops[id(s)]):
                readers.setdefault(read, set()).add(n)
    todo = open_
    while True:  # each round guesses at least one more name, or stops
        # a name none of whose assignments reads a name guessed last round has the
        # same (unknown) ranks as then: only the readers of those are tried again
        found = {n: r for n in todo if n not in guess for s in by_name[n]
                 if (r := rank_of(s.value, ops[id(s)], guess, ints)) is not None}
        if not found:
            break
        guess.update(found)
        todo = {reader for n in found for reader in readers.get(n, ())}

    def confirmed(s, names):
        within = {n: guess[n] for n in loads[id(s)] if n in names}
        return rank_of(s.value, ops[id(s)], within, ints) == guess[s.targets[0].id]

    kept = greatest(set(guess), open_ & set(guess), by_name, {}, confirmed, loads)
    return {n: guess[n] for n in kept}


def _input_names(op):
    """The names among ``op``'s inputs: with those its right-hand side loads, all the
    names whose ranks :func:`rank_of` may read."""
    return {a.id for a in op.inputs if isinstance(a, gast.Name)}


def rank_of(value, op, ranks, ints):
    """The ndim of right-hand side ``value`` (described by ``op``), given the ndim of
    the names it reads (``ranks``) and the names holding Python ints; None if unknown."""
    if isinstance(value, (gast.Constant, gast.Name)):
        return _atom_rank(value, ranks)
    if isinstance(value, gast.Subscript):
        return _indexed_rank(value, ranks, ints)
    fn = op.fn
    if op.kind is Kind.NONE and isinstance(value, gast.Call) and value.args:
        first = value.args[0]
        if fn in _LIKE:
            return _atom_rank(first, ranks)
        if fn in _MAKERS:
            return len(first.elts) if isinstance(first, gast.Tuple) else (
                1 if _atom_rank(first, ranks) == 0 else None)
        return None
    inputs = [_atom_rank(a, ranks) for a in op.inputs]
    if op.kind is not Kind.PRIMITIVE or None in inputs:
        return None
    if fn is np.outer:
        return 2
    if fn in _MATMUL and len(inputs) == 2:
        return {(1, 1): 0, (1, 2): 1, (2, 1): 1, (2, 2): 2}.get(tuple(inputs))
    if _full_reduction(op):
        return 0
    if isinstance(fn, np.ufunc) and not op.kwargs or fn in (np.transpose, np.copy):
        return max(inputs)  # elementwise: broadcast to the highest rank
    if _picks_one(op):
        return inputs[0] if len(set(inputs)) == 1 else None
    return None


def _picks_one(op):
    """Whether ``op`` is ``max(a, b, ...)`` or ``min(a, b, ...)``: one of its inputs."""
    return op.fn in (max, min) and len(op.inputs) > 1


def _atom_rank(node, ranks):
    if isinstance(node, gast.Constant):
        return 0 if isinstance(node.value, (int, float)) and not isinstance(
            node.value, bool) else None
    return ranks.get(node.id) if isinstance(node, gast.Name) else None


def _indexed_rank(value, ranks, ints):
    """The ndim of ``x[index]`` for an array x of known ndim: an int drops an axis, a
    slice keeps one, ``None`` adds one; anything else (an index array) is unknown."""
    rank = ranks.get(getattr(value.value, "id", None))
    index = value.slice
    for p in index.elts if isinstance(index, gast.Tuple) else [index]:
        if rank is None:
            return None
        if isinstance(p, gast.Constant) and p.value is None:
            rank += 1
        elif (isinstance(p, gast.Constant) and type(p.value) is int
              or isinstance(p, gast.Name) and p.id in ints):
            rank -= 1
        elif not isinstance(p, gast.Slice):
            return None
    return rank if rank is not None and rank >= 0 else None


def _only_indexed(lists, statements):
    """Those of ``lists`` that every statement reads only as ``xs[...]`` (never whole:
    not copied, passed, returned nor written into under another name)."""
    lists = set(lists)
    for s in statements:
        if not lists:
            break
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Subscript) and \
                isinstance(s.value.value, gast.Name):
            lists -= S.loaded_names(s.value.slice) | S.loaded_names(s.targets[0])
        elif isinstance(s, gast.Assign) and _is_len(s.value):
            lists -= S.loaded_names(s.targets[0])
        elif isinstance(s, (gast.For, gast.While, gast.If)):
            lists -= S.loaded_names(s.iter if isinstance(s, gast.For) else s.test)
        else:
            lists -= S.loaded_names(s)
    return lists


def _is_len(node):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and node.func.id == "len" and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], gast.Name))


def _number_names(by_name, fixed, unknown, ranks, ints, ops, loads, literal_lists=()):
    """Names that always hold an immutable number: ``fixed`` (Python numbers and
    ints), full reductions, ``u @ v`` of vectors, an element ``x[i, j]`` of an array
    of known ndim (a NumPy scalar: a copy), an item of a list only ever bound to
    literals of numbers and never written into (``literal_lists``), and arithmetic
    on numbers; never a name bound otherwise than by an assignment (``unknown``)."""

    def number(s, names):
        value, op = s.value, ops[id(s)]
        if isinstance(value, gast.Name):
            return value.id in names
        if isinstance(value, gast.Constant):
            return _atom_rank(value, {}) == 0
        if isinstance(value, gast.Subscript):
            held = getattr(value.value, "id", None)
            if held in literal_lists and not isinstance(value.slice, gast.Slice):
                return all(isinstance(e, gast.Constant) and _atom_rank(e, {}) == 0
                           or getattr(e, "id", None) in names
                           for b in by_name[held] for e in b.value.elts)
            return _indexed_rank(value, ranks, ints) == 0
        fn, traits = op.fn, traits_of(op.fn)
        if op.kind is Kind.NONE or traits.number or from_math(fn):
            return traits.number or from_math(fn)
        if op.kind is not Kind.PRIMITIVE:
            return False
        if _full_reduction(op):
            return True
        if fn in _MATMUL:
            return rank_of(value, op, ranks, ints) == 0
        return (isinstance(fn, np.ufunc) or _picks_one(op)) and not op.kwargs and all(
            isinstance(a, gast.Constant) or getattr(a, "id", None) in names
            for a in op.inputs)

    names = set(fixed) | (set(by_name) - unknown)
    items = {xs: [b.value for b in by_name[xs]] for xs in literal_lists}  # xs[i] reads them
    return greatest(names, names - set(fixed), by_name, items, number, loads)

"""Fold the spread adjoint of a full reduction into the product that consumes it.

The adjoint of ``r = np.mean(a)`` (or ``np.sum(a)``, any rule whose adjoint of ``a``
is ``unreduce(s, a, None, False)``) is the number ``s`` spread over ``a``'s shape: a
zero-strided array the size of ``a``.  Its one reader is, as a rule, the adjoint of
the elementwise statement that made ``a``, multiplying it by a factor of ``a``'s
shape (``da * (2 * x)`` for ``a = x ** 2``).  There the spread is needless: ``s``
times that factor is the same array (``s`` broadcast by the multiplication itself),
computed without making the spread.  And a factor ``c * x`` with ``c`` a power of two
takes ``c`` into the number (``x * (2 * s)``): the same products, rounded once.

Invariant: a fold changes no value, shape or dtype of any adjoint.  It is made only
where every condition below holds, else the code is left as it is:

- ``da = unreduce(s, a, None, False)`` (``unreduce`` the rules' helper) is the only
  assignment of ``da``, which is read exactly once, later in the same block, as an
  operand of a product (``da * e``, ``e * da``) or a quotient ``da / e``, and nothing
  between the two assigns a name ``s`` reads;
- ``e`` has ``a``'s shape: it is made by arithmetic, and ufuncs of one argument, from
  numbers (constants, names that always hold numbers) and names of ``a``'s shape, at
  least one.  Those are ``a``, the names it copies (``a = b``, each assigned once), and
  the one input that is not a number of the elementwise ufunc that made it (``a = x
  ** 2``: x).  The one read of ``da`` is in the adjoint of that statement, where each
  name holds the value it had when the statement ran (backward.py), so the shapes
  are those of that moment;
- ``s`` is made a NumPy number by :func:`helpers.spread_number` as the spread is, so
  that it takes part in type promotion as the spread array would.

Only the backward pass of one adjoint at a time is folded, and only in a unit
without a batched pass: in that pass ``s`` holds a row per adjoint, no number, and it
runs on the same tape, which must keep what the spread measures.
"""
import math

import gast
import numpy as np

from ..rules import helpers
from . import syntax as S
from .analysis import Kind


def fold_spreads(code, result, facts, refs):
    """``code`` (a backward pass's statements, changed in place, returning ``result``)
    with each spread adjoint that may be folded folded (see the module doc)."""
    reads, writes = _occurrences(code)
    returned = S.loaded_names(result)
    for block in _blocks(code):
        k = 0
        while k < len(block):
            if not _fold(block, k, reads, writes, returned, facts, refs):
                k += 1
    return code


def _fold(block, k, reads, writes, returned, facts, refs):
    """Fold the spread block[k] makes, if it may be; whether it did (and removed it)."""
    spread = _spread(block[k], refs)
    if spread is None:
        return False
    d, s, a = spread
    if len(writes.get(d, ())) != 1 or len(reads.get(d, ())) != 1 or d in returned:
        return False
    node, parent, stmt = reads[d][0]
    if not isinstance(parent, gast.BinOp) or not any(stmt is t for t in block[k + 1:]):
        return False
    j = next(i for i in range(k + 1, len(block)) if block[i] is stmt)
    needed = S.loaded_names(s)
    if any(S.assigned_names([t]) & needed for t in block[k + 1:j]):
        return False
    if isinstance(parent.op, gast.Mult):
        other = parent.right if parent.left is node else parent.left
    elif isinstance(parent.op, gast.Div) and parent.left is node:
        other = parent.right
    else:
        return False
    if not _shaped(other, _same_shape(a.id, facts), facts, refs):
        return False
    number = gast.Call(func=refs.helper("spread_number"), args=[s], keywords=[])
    _replace(parent, node, number)
    if isinstance(parent.op, gast.Mult):
        _take_power_of_two(parent, number)
    for name in needed:  # s is read in stmt now
        reads[name] = [(n, p, stmt if t is block[k] else t) for n, p, t in reads[name]]
    del block[k]
    return True


def _spread(stmt, refs):
    """(adjoint name, the number, the reduced name) of ``d = unreduce(s, a, None,
    False)``, else None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Call)):
        return None
    call = stmt.value
    if not (isinstance(call.func, gast.Name) and refs.bound.get(call.func.id)
            is helpers.unreduce and len(call.args) == 4 and not call.keywords):
        return None
    s, a, axis, keepdims = call.args
    if not (isinstance(a, gast.Name) and _is_const(axis, None) and _is_const(keepdims, False)):
        return None
    return stmt.targets[0].id, s, a


def _is_const(node, value):
    return isinstance(node, gast.Constant) and node.value is value


def _same_shape(a, facts):
    """Names that hold arrays of ``a``'s shape wherever the adjoint of the statement
    that made ``a`` runs: ``a``, what it copies, and the array input of the elementwise
    ufunc that made it (see the module doc); none if ``a`` may be a number."""
    if a in facts.numbers:
        return set()
    names = {a}
    while a not in facts.params and len(facts.bindings.get(a, ())) == 1 and (
            facts.counts.get(a) == 1):
        made = facts.bindings[a][0]
        op = facts.ops[id(made)]
        if op.kind is Kind.COPY and isinstance(op.inputs[0], gast.Name):
            a = op.inputs[0].id
            names.add(a)
            continue
        if (op.kind is Kind.PRIMITIVE and _elementwise(op.fn) and not op.kwargs
                and len(op.inputs) == op.fn.nin):
            arrays = [x for x in op.inputs if not _number(x, facts)]
            if len(arrays) == 1 and isinstance(arrays[0], gast.Name):
                names.add(arrays[0].id)
        break
    return names


def _elementwise(fn):
    return isinstance(fn, np.ufunc) and fn.nout == 1 and fn.signature is None


def _number(node, facts):
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (int, float, complex))
    return isinstance(node, gast.Name) and (node.id in facts.numbers or node.id in facts.scalars)


def _shaped(e, names, facts, refs):
    """Whether ``e`` surely has the shape the ``names`` share: see the module doc."""
    kinds = set()

    def visit(node):
        if isinstance(node, gast.Name) and node.id in names:
            kinds.add("array")
            return True
        if _number(node, facts):
            return True
        if isinstance(node, gast.BinOp):
            return not isinstance(node.op, gast.MatMult) and visit(node.left) and visit(
                node.right)
        if isinstance(node, gast.UnaryOp):
            return visit(node.operand)
        if (isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords
                and isinstance(node.func, gast.Attribute)
                and isinstance(node.func.value, gast.Name) and refs.bound.get(
                    node.func.value.id) is np):
            fn = getattr(np, node.func.attr, None)
            return _elementwise(fn) and fn.nin == 1 and visit(node.args[0])
        return False

    return visit(e) and "array" in kinds


def _take_power_of_two(product, number):
    """``number * (c * x)`` as ``x * (c * number)`` for ``c`` a power of two: the same
    values (scaling by c is exact), one array operation less."""
    other = product.right if product.left is number else product.left
    if not (isinstance(other, gast.BinOp) and isinstance(other.op, gast.Mult)):
        return
    for c, x in ((other.left, other.right), (other.right, other.left)):
        if _power_of_two(c):
            product.left = x
            product.right = gast.BinOp(left=c, op=gast.Mult(), right=number)
            return


def _power_of_two(node):
    if not isinstance(node, gast.Constant) or type(node.value) not in (int, float):
        return False
    value = node.value
    return value > 0 and math.isfinite(value) and math.frexp(value)[0] == 0.5


def _replace(parent, old, new):
    for field in ("left", "right"):
        if getattr(parent, field) is old:
            setattr(parent, field, new)


def _blocks(code):
    """Every statement list of ``code``, itself first."""
    yield code
    for stmt in code:
        for field in ("body", "orelse"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                yield from _blocks(block)


def _occurrences(code):
    """(name -> [(Name node, its parent, its statement)] of each read, name -> [the
    statements that assign it]) over ``code``, at any depth; a read in a compound
    statement's header counts as the compound statement's."""
    reads, writes = {}, {}
    for stmt in code:
        _occur(stmt, None, stmt, reads, writes)
    return reads, writes


def _occur(node, parent, stmt, reads, writes):
    """``_occurrences`` of ``node`` (a child of ``parent``, in ``stmt``), added to
    ``reads`` and ``writes`` (a function of its own: a closure calling itself is a
    reference cycle, left for the garbage collector)."""
    if isinstance(node, gast.Name):
        if isinstance(node.ctx, gast.Load):
            reads.setdefault(node.id, []).append((node, parent, stmt))
        else:
            writes.setdefault(node.id, []).append(stmt)
        return
    for child in S.children(node):
        _occur(child, node, child if isinstance(child, gast.stmt) else stmt, reads, writes)

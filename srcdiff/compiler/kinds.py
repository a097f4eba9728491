"""Kinds: what the in-place pass (in_place.py) knows of an expression's value.

A *kind* is ``(dtype, shape class)``: the value is an ndarray of that inexact dtype,
of the same shape as every other value of its class.  A large array parameter of the
lean unit (its dtype is in the cache key, cache.lean_dtypes) starts a class of its
own; a same-dtype ufunc, and arithmetic with a Python number or with an array of the
same kind, keep it; ``(dtype, NUMBER)`` is a NumPy number (a full reduction, the seed),
``(SHAPE, class)`` the shape of a class's values, and a full reduction's spread of a
number over a shape, or an ``unbroadcast`` with nothing to undo, has the kind those say.
:class:`Expressions` also says which expressions are elementwise (``elementwise``)
and which calls read their operands without effects (``_READERS``).

Invariant: a kind is only ever given to a value that has it when the code runs, for
every call that selects the unit; anything not proven has no kind (None).
"""
import copy

import gast
import numpy as np

from . import syntax as S
from ..rules.helpers import one_minus_square, unbroadcast, unbroadcast_to, unreduce
from .runtime import into, shape_of

# ufuncs whose result has their inexact operand's dtype and shape
UNARY = frozenset([
    np.negative, np.positive, np.square, np.sqrt, np.exp, np.exp2, np.expm1, np.log,
    np.log2, np.log10, np.log1p, np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan,
    np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh])
BINARY = frozenset([np.add, np.subtract, np.multiply, np.true_divide])
_OPERATORS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
              gast.Div: np.true_divide}
_REDUCTIONS = frozenset([np.sum, np.mean])  # they read an array and keep no reference
_SAME = frozenset([unbroadcast, unbroadcast_to])  # the array itself, or a new one
_READERS = _SAME | _REDUCTIONS | {unreduce, one_minus_square, shape_of}  # no effects
NUMBER = "number"  # the shape class of a NumPy number: (dtype, NUMBER) is its kind
SHAPE = "shape"    # the dtype of a shape: (SHAPE, shape class) is its kind


class Expressions:
    """What the expressions of one unit are; ``refs`` (codegen.Refs) resolves the
    names and attributes they call."""

    def __init__(self, refs):
        self.refs = refs

    def resolve(self, node):
        if isinstance(node, gast.Name):
            bound = self.refs.bound
            return bound[node.id] if node.id in bound else self.refs.user.get(node.id)
        if isinstance(node, gast.Attribute):
            owner = self.resolve(node.value)
            return getattr(owner, node.attr, None) if owner is not None else None
        return None

    def seed_kind(self, result, kinds):
        """The kind of a result that is a NumPy number, ``result`` (a forward pass's
        returned expression), or None."""
        known = self.kind(result, kinds) if isinstance(result, gast.Name) else None
        return known if known is not None and known[1] is NUMBER else None

    @staticmethod
    def param_kinds(known):
        """The kinds of the large array parameters, ``known``: name -> (dtype, rank)."""
        return {p: (d, p) for p, (d, r) in known.items() if r and d.kind in "fc"}

    def elementwise(self, node):
        """(ufunc, operands) if ``node`` is one of :data:`UNARY` or :data:`BINARY`, as
        an operator, a call, or an adjoint's ``into(out, ufunc, *operands)``."""
        if isinstance(node, gast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)], [node.left, node.right]
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
            return np.negative, [node.operand]
        if isinstance(node, gast.Call) and not node.keywords and not any(
                isinstance(a, gast.Starred) for a in node.args):
            fn = self.resolve(node.func)
            if fn is into and len(node.args) >= 3:
                fn, args = self.resolve(node.args[1]), node.args[2:]
            else:
                args = node.args
            if (fn in UNARY or fn in BINARY) and len(args) == fn.nin:
                return fn, list(args)
        return None

    def factor_steps(self, node):
        """(the elementwise steps of ``node``, its operand's name) if ``node`` is a unary
        function of one name: a ufunc, or tanh's slope ``one_minus_square(v)``."""
        found = self.elementwise(node)
        if found is not None and len(found[1]) == 1 and isinstance(found[1][0], gast.Name):
            return [found], found[1][0].id
        if (self._is(node, one_minus_square) and len(node.args) == 1 and not node.keywords
                and isinstance(node.args[0], gast.Name)):
            v = node.args[0].id
            return [(np.multiply, [S.name(v), S.name(v)]),
                    (np.subtract, [S.const(1), S.name(v)])], v
        return None

    def kind(self, node, kinds):
        """(dtype, shape class) if ``node`` is proven an inexact ndarray of them."""
        if isinstance(node, gast.Name):
            return kinds.get(node.id)
        if (self._is(node, unreduce) and len(node.args) == 4 and all(
                isinstance(a, gast.Constant) and a.value in (None, False) for a in node.args[2:])):
            g, v = (self.kind(a, kinds) for a in node.args[:2])  # a full reduction's spread
            return (g[0], v[1]) if g is not None and g[1] is NUMBER and _sized(v) else None
        if _measured(node) and node.attr == "shape" or self._is(node, shape_of):
            v = kinds.get(node.value.id if _measured(node) else getattr(node.args[0], "id", ""))
            return (SHAPE, v[1]) if _array(v) else None
        if self.unbroadcast_of(node, kinds) is not None:
            return self.kind(node.args[0], kinds)
        if self._is(node, np.sum) or self._is(node, np.mean):
            a = self.kind(node.args[0], kinds) if len(node.args) == 1 and not node.keywords \
                else None
            return (a[0], NUMBER) if a is not None and a[1] is not NUMBER else None
        found = self.elementwise(node)
        if found is None:
            made = self.factor_steps(node)
            return kinds.get(made[1]) if made is not None else None
        ufunc, operands = found
        a = self.kind(operands[0], kinds)
        if len(operands) == 1:
            return a if a is None or a[1] is not NUMBER else None
        if a is not None and self.keeps(a, operands[1], kinds):
            return a
        b = self.kind(operands[1], kinds)
        return b if b is not None and self.keeps(b, operands[0], kinds) else None

    def unbroadcast_of(self, node, kinds):
        """``e`` where ``node`` is ``unbroadcast(e, v)`` (or ``unbroadcast_to``) with
        nothing to undo: ``e`` an array of v's shape class, so that it returns ``e``."""
        if len(getattr(node, "args", ())) == 2 and any(self._is(node, f) for f in _SAME):
            e, v = (self.kind(a, kinds) for a in node.args)
            if _array(e) and _sized(v) and e[1] == v[1]:
                return node.args[0]
        return None

    def simplified(self, node, kinds):
        """``node`` with each ``unbroadcast`` that has nothing to undo as its array."""
        e = self.unbroadcast_of(node, kinds)
        if e is not None:
            return e
        if isinstance(node, (gast.Call, gast.BinOp, gast.UnaryOp)):
            changed = None
            for field, value in gast.iter_fields(node):
                if isinstance(value, gast.expr):
                    new = self.simplified(value, kinds)
                elif field == "args":
                    new = [self.simplified(v, kinds) for v in value]
                    new = value if all(a is b for a, b in zip(new, value)) else new
                else:
                    continue
                if new is not value:
                    changed = changed or copy.copy(node)
                    setattr(changed, field, new)
            return changed or node
        return node

    def keeps(self, kind, other, kinds):
        """Whether arithmetic of an array of ``kind`` with ``other`` gives one of
        ``kind``: ``other`` is an array of that kind, a NumPy number of its dtype, or a
        Python number."""
        if not _array(kind):
            return False
        if _number(other):
            return True
        known = self.kind(other, kinds)
        return known == kind or known == (kind[0], NUMBER)

    def _ufunc_call(self, node):
        """Whether ``node`` calls a ufunc (np.tanh, scipy.special.expit) without ``out``:
        a new array (or number) that refers to none of its operands."""
        return (isinstance(node, gast.Call) and isinstance(self.resolve(node.func), np.ufunc)
                and not node.keywords)

    def _is(self, node, fn):
        return isinstance(node, gast.Call) and self.resolve(node.func) is fn


def _simple(s):
    return (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name))


def _array(kind):
    """Whether ``kind`` is an array's (not a NumPy number's or a shape's)."""
    return kind is not None and kind[1] is not NUMBER and kind[0] is not SHAPE


def _sized(kind):
    """Whether ``kind`` is an array's or a shape's: it has a shape class."""
    return kind is not None and kind[1] is not NUMBER


def _measured(node):
    """Whether ``node`` is ``n.shape`` (``ndim``, ``size``, ``dtype``): a read that
    keeps no reference, and that a write which keeps shape and dtype does not change."""
    return (isinstance(node, gast.Attribute) and node.attr in ("shape", "ndim", "size", "dtype")
            and isinstance(node.value, gast.Name))


def _number(node):
    """A Python int or float constant: arithmetic keeps an inexact array's dtype."""
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)

"""In place: the lean unit's elementwise results computed into arrays nobody reads again.

NumPy makes a new array for each result: ``t = np.tanh(s)`` holds s and t at once
although s dies there.  For a call with a large array (cache.LEAN_BYTES; unit.py,
"lean") the compiler rewrites the forward and backward passes as an expert writes
them, one operation per statement::

    np.tanh(s, out=s)                        # s's kind is proven (below)
    dy *= y                                  # so are dy's and y's
    h_2 = np.add(h_1, b1, out=spare(h_1, b1))   # not proven: checked when it runs

``runtime.spare(out, *others)`` is ``out`` where the result is exactly an array of
out's shape and dtype, else None (NumPy then makes a new one).  A factor of an
adjoint computed from a dead saved value is computed in its array
(``np.cos(e, out=e)``, tanh's ``1 - y * y`` as ``np.multiply(y, y, out=y)`` and
``np.subtract(1, y, out=y)``); and where such a value is read by the next adjoint's
product too (sin's ``cos(e)`` before exp's ``e``), that product's plain factor is
applied first: ``de *= e; np.cos(e, out=e); de *= e``.  That reorders a product of
elementwise factors: the gradient is the same within float rounding (a few ulps),
not bit for bit; every other rewrite computes exactly the same values.

A nested operation whose operand dies is computed first, in that operand's array and
under its name (``dx += dy * np.cos(x)``: ``dy *= np.cos(x); dx += dy``); an array a
statement reads twice is read last in its own array, after a named temporary
(``dy * y * (1 - y)``: ``dy_y = dy * y``, then ``1 - y`` in y's array); an
``unbroadcast`` with nothing to undo is its array.  Only in statements whose every
call is a ufunc or a helper without effects (``_READERS``), so no order changes
anything else.

An array is written into only where, on the straight-line top-level statements of a
body (anything in a branch or loop is left as it is, and every name it mentions
counts as shared), it is

1. *owned* (ownership.py): made by the code itself, never an argument, the
   cotangent, an element of a container or a view, and read since only where no
   reference to it can be kept;
2. *dead*: no name of it is read after the statement (a measurement aside: a write
   keeps shape and dtype), and the statement reads it once;
3. *of the result's shape and dtype*: proven from its *kind* (kinds.py: the large
   arguments' dtypes, kept by same-dtype arithmetic; a seed's, as the spending walk
   runs only for a seed of the result's dtype, ``Unit.seed``), else checked by
   ``spare`` when it runs.

Invariant: a write goes only into an array that no other name, container, view or
caller can observe and that nothing reads afterwards, and gives exactly the array
the plain unit makes (but for the reordered products above).  A tape slot is
written into only by ``backward_spent``, which only ``Unit.spend`` (the tape's last
walk) runs.
"""

import copy

import gast
import numpy as np

from . import syntax as S
from .kinds import _READERS, _array, _number, _simple
from .ownership import Ownership, _Arrays
from .runtime import into, spare

_AUGMENTED = {np.add: gast.Add, np.subtract: gast.Sub, np.multiply: gast.Mult,
              np.true_divide: gast.Div}
_COMMUTATIVE = frozenset([np.add, np.multiply])  # exactly, in IEEE arithmetic


class InPlace(Ownership):
    """The pass over one function body; ``refs`` (codegen.Refs) resolves the calls it
    reads and binds the names it adds (``np``, ``spare``); ``taken``: the names the
    unit's code uses already."""

    def __init__(self, refs, taken):
        super().__init__(refs)
        self.taken = set(taken)  # the names the unit's code uses: temporaries avoid them
        self._plain_of = {}  # id(statement) -> (statement, its plain form)

    def factor(self, node, kinds):
        """(the statements that compute ``node`` in its operand's array, that operand's
        name) if ``node`` is a unary function of one name (``factor_steps``)."""
        found = self.factor_steps(node)
        if found is None:
            return None
        steps, v = found
        proven = _array(kinds.get(v))
        return [self._written(v, ufunc, args, v, proven) for ufunc, args in steps], v

    def run(self, stmts, live_out=frozenset(), owned=None, kinds=None):
        """``stmts`` (top-level statements, then a return that reads ``live_out``)
        computed in place where proven, as a new list; the arrays it owns after them
        (see :meth:`spendable`) and the kinds of the names then.  With ``owned`` (a
        backward pass), the first statement unpacks the tape: ``owned`` are the slots
        whose arrays are the pass's own (a spent tape's); ``kinds``: the names' kinds
        before the first statement (a forward pass) or after it (a backward pass)."""
        arrays = _Arrays()
        kinds = dict(kinds or {})
        after = self._live_after(stmts, live_out)
        out = []
        k = 0
        while k < len(stmts):
            s = stmts[k]
            if k == 0 and owned is not None:
                for n in S.assigned_names([s]):
                    if n in owned:
                        arrays.fresh(n)
                out.append(s)
                k += 1
                continue
            done = None
            if _simple(s):
                done = self._reordered(stmts, k, after, arrays, kinds)
            if done is None:
                pre, now, temporaries = self._hoisted(self._plain(s), after[k], arrays, kinds)
                made = self._rewrite(now.targets[0].id, now.value, after[k], arrays,
                                     kinds) if _simple(now) else None
                made = pre + (made if made is not None else [now])
                if temporaries:  # read by that statement only
                    made.append(gast.Delete(targets=[S.name(n, gast.Del())
                                                     for n in temporaries]))
                done = (made, k) if made != [self._plain(s)] else None
            if done is None:
                out.append(s)
                self._track(s, arrays, kinds)
                k += 1
                continue
            made, last = done
            for t in stmts[k:last + 1]:  # ownership and kinds follow the values computed
                self._track(t, arrays, kinds)
            out.extend(made)
            k = last + 1
        return out, arrays, kinds

    def _plain(self, s):
        """``s``, an adjoint's ``t = into(out, ufunc, *operands)`` (adjoint_state.py) as
        ``t = ufunc(*operands)``: this pass decides where it is written (the same object
        each time, so that an unchanged one is kept as it was)."""
        if _simple(s) and self._is(s.value, into) and len(s.value.args) >= 3:
            cached = self._plain_of.get(id(s))
            if cached is None or cached[0] is not s:
                plain = S.assign(s.targets[0].id, gast.Call(
                    func=s.value.args[1], args=s.value.args[2:], keywords=[]))
                cached = self._plain_of[id(s)] = (s, plain)
            return cached[1]
        return s

    def _hoisted(self, s, live, arrays, kinds):
        """(statements, ``s`` after them): each elementwise operation inside ``s``'s
        value with a free operand computed beforehand into that operand's array, under
        its name, innermost first (``dx += unbroadcast(dz * y, x)`` as ``dz *= y`` then
        ``dx += unbroadcast(dz, x)``); ``s``'s value itself only if it is augmented.
        Only where every call in ``s`` is one this module knows to have no effect, so
        that computing part of it first changes nothing else."""
        augmented = isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name)
        if not (_simple(s) or augmented) or not self._pure(s.value):
            return [], s, []
        target = s.target.id if augmented else s.targets[0].id
        pre, temporaries, value = [], [], self.simplified(s.value, kinds)
        while True:
            found = self._hoistable(value, live, target, arrays, kinds, augmented)
            if found is None:
                found = self._split(value, live, target, arrays)
                if found is None:
                    break
                temporaries.append(found[2])
                arrays.fresh(found[2])
            node, made, name = found
            kind = self.kind(node, kinds)
            pre += made
            value = _replaced(value, node, S.name(name))
            if kind is not None:
                kinds[name] = kind
            else:
                kinds.pop(name, None)
        if not pre and value is s.value:
            return [], s, []
        s = copy.copy(s)
        s.value = value
        return pre, s, temporaries

    def _split(self, value, live, target, arrays):
        """(the first elementwise operation of ``value`` to run that reads a dead array
        ``value`` reads more than once, ``t = `` it, t): a named temporary, after which
        that array's last read may compute in it (``dy * y * (1 - y)``: ``dy_y = dy *
        y``, then ``1 - y`` in y's array).  None if there is none."""
        counts = {}
        for m in S.walk(value):
            if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Load):
                counts[m.id] = counts.get(m.id, 0) + 1
        dead = set()
        for n in counts:
            names = arrays.names(n)
            if names and not (names - {target}) & live and sum(
                    counts.get(m, 0) for m in names) > 1:
                dead |= names
        if not dead:
            return None
        node = self._first_reading(value, dead, top=True)
        if node is None:
            return None
        name = self._fresh(_name_of(node))
        return node, [S.assign(name, node)], name

    def _first_reading(self, node, names, top=False):
        """The first elementwise operation of operands that are names or numbers to
        run in ``node`` (not ``node`` itself, if ``top``) that reads one of ``names``."""
        for each in _in_running_order(node):
            found = None if top and each is node else self.elementwise(each)
            if found is not None and all(
                    isinstance(o, gast.Name) or _number(o) for o in found[1]) and any(
                    getattr(o, "id", None) in names for o in found[1]):
                return each
        return None

    def _fresh(self, base):
        """A name no code of the unit uses, from ``base``."""
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def _hoistable(self, whole, live, target, arrays, kinds, top):
        """(an elementwise node in ``whole``, not itself unless ``top``, the statements
        computing it into a free operand, that operand's name), first to run, or None."""
        for node in _in_running_order(whole):
            found = self._hoisted_one(node, whole, live, target, arrays, kinds, top) if (
                top or node is not whole) else None
            if found is not None:
                return found
        return None

    def _hoisted_one(self, node, whole, live, target, arrays, kinds, top):
        found = self.elementwise(node)
        if found is None:
            return None
        ufunc, operands = found
        for k, o in enumerate(operands):
            if not (isinstance(o, gast.Name) and o.id != target
                    and self._free(o.id, whole, live, target, arrays)
                    and not (top and target in arrays.names(o.id))):
                continue  # (``t += ...`` reads t: never written before it under a name)
            if len(operands) == 1:
                return node, [self._written(o.id, ufunc, operands, o.id,
                                            _array(kinds.get(o.id)))], o.id
            other = operands[1 - k]
            known = kinds.get(o.id)
            proven = known is not None and self.keeps(known, other, kinds)
            if proven and (k == 0 or ufunc in _COMMUTATIVE):  # ``o *= expression``
                return node, [gast.AugAssign(target=S.name(o.id, gast.Store()),
                                             op=_AUGMENTED[ufunc](), value=other)], o.id
            if isinstance(other, gast.Name) or _number(other):
                return node, [self._written(o.id, ufunc, operands, o.id, proven)], o.id
        return None

    def _pure(self, node):
        """Whether every call in ``node`` is elementwise or one of the helpers that
        only read (and nothing is evaluated conditionally or in a nested scope)."""
        for n in S.walk(node):
            if isinstance(n, (gast.IfExp, gast.BoolOp, gast.Lambda, gast.NamedExpr,
                              gast.comprehension)):
                return False
            if isinstance(n, gast.Call) and self.elementwise(n) is None and not any(
                    self._is(n, f) for f in _READERS):
                return False
        return True

    def _rewrite(self, t, value, live, arrays, kinds):
        """``t = value`` computed in place into a free operand's array, as statements,
        or None."""
        found = self.elementwise(value)
        if found is None:
            return None
        ufunc, operands = found
        names = [o.id if isinstance(o, gast.Name) else None for o in operands]
        if len(operands) == 1:
            v = names[0]
            if v is None or not self._free(v, value, live, t, arrays):
                return None
            return [self._written(t, ufunc, operands, v, _array(kinds.get(v)))]
        for k, o in enumerate(operands):  # a factor whose operand dies here: in its array
            made = self.factor(o, kinds) if names[1 - k] is not None else None
            if made is None or not self._free(made[1], value, live, t, arrays):
                continue
            pre, v = made
            rest = list(operands)
            rest[k] = S.name(v)
            return pre + self._binary(t, ufunc, rest, lambda n: n == v or self._free(
                n, value, live, t, arrays), kinds)
        free = lambda n: self._free(n, value, live, t, arrays)  # noqa: E731
        for k, o in enumerate(operands):  # a free name and an expression
            other = operands[1 - k]
            if names[k] is None or names[1 - k] is not None or _number(other) or not (
                    free(names[k]) and self._pure(other)):
                continue
            known = kinds.get(names[k])
            if known is not None and self.keeps(known, other, kinds):
                return self._binary(t, ufunc, operands, lambda n: n == names[k], kinds)
            # unproven: spare reads the expression's value, made once under a name
            temporary = self._fresh(_name_of(other))
            rest = list(operands)
            rest[1 - k] = S.name(temporary)
            return [S.assign(temporary, other)] + self._binary(
                t, ufunc, rest, lambda n: n == names[k], kinds) + [
                gast.Delete(targets=[S.name(temporary, gast.Del())])]
        if any(n is None and not _number(o) for n, o in zip(names, operands)):
            return None
        return self._binary(t, ufunc, operands, free, kinds) or None

    def _binary(self, t, ufunc, operands, free, kinds):
        """``t = ufunc(a, b)`` (two names) into whichever is free, proven first: as
        statements, or [] where neither is."""
        a, b = operands
        best = None
        for k, o in enumerate(operands):
            if not isinstance(o, gast.Name) or not free(o.id):
                continue
            other = operands[1 - k]
            known = kinds.get(o.id)
            proven = known is not None and self.keeps(known, other, kinds)
            if best is None or proven and not best[1]:
                best = (k, proven)
        if best is None:
            return []
        k, proven = best
        out = operands[k]
        if proven and t == out.id and (k == 0 or ufunc in _COMMUTATIVE):
            return [gast.AugAssign(target=S.name(t, gast.Store()), op=_AUGMENTED[ufunc](),
                                   value=operands[1 - k])]
        return [self._written(t, ufunc, operands, out.id, proven)]

    def _written(self, t, ufunc, operands, out, proven):
        """``t = ufunc(*operands, out=out)`` (``np.ufunc(out, out=out)`` alone where t
        is out), checked by ``spare`` unless ``proven``."""
        if proven:
            where = S.name(out)
        else:
            others = [o for o in operands if not (isinstance(o, gast.Name) and o.id == out)]
            where = gast.Call(func=self.refs.bind(spare, "spare"),
                              args=[S.name(out)] + [copy.deepcopy(o) for o in others],
                              keywords=[])
        call = self._call(ufunc, [copy.deepcopy(o) for o in operands], where)
        if proven and t == out:
            return gast.Expr(value=call)
        return S.assign(t, call)

    def _call(self, ufunc, args, out):
        func = gast.Attribute(value=self.refs.bind(np, "np"), attr=ufunc.__name__,
                              ctx=gast.Load())
        return gast.Call(func=func, args=args, keywords=[gast.keyword(arg="out", value=out)])

    def _reordered(self, stmts, k, after, arrays, kinds):
        """``t1 = a * f(v)`` then ``t2 = t1 * v``, v dying there: as ``t1 = a * v``,
        f(v) in v's array, ``t2 = t1 * v``; and the index of the second statement.
        (A product's factors reordered: within rounding, see the module docstring.)"""
        s = stmts[k]
        t1 = s.targets[0].id
        found = self.elementwise(s.value)
        if found is None or found[0] is not np.multiply:
            return None
        operands = found[1]
        for i, o in enumerate(operands):
            made = self.factor(o, kinds)
            a = operands[1 - i]
            if made is None or not isinstance(a, gast.Name):
                continue
            pre, v = made
            j = k + 1
            while j < len(stmts) and (_marker(stmts[j]) or isinstance(
                    stmts[j], gast.Delete) and not S.names_in(stmts[j]) & {v, t1}):
                j += 1
            if j == len(stmts) or not _simple(stmts[j]):
                return None
            second = self.elementwise(stmts[j].value)
            if second is None or second[0] is not np.multiply or sorted(
                    getattr(o2, "id", "") for o2 in second[1]) != sorted([t1, v]):
                return None
            t2 = stmts[j].targets[0].id
            names = arrays.names(v)
            reads = sum(1 for m in S.walk(s.value) if isinstance(m, gast.Name)
                        and names and m.id in names)
            if (not names or names & after[j] or t1 in after[j] or reads != 1
                    or a.id in names or t1 in names or t2 == v):
                return None
            first = self._binary(t1, np.multiply, [a, S.name(v)], lambda n: n == a.id and (
                self._free(n, s.value, after[k], t1, arrays)), kinds) or [
                S.assign(t1, gast.BinOp(left=S.name(a.id), op=gast.Mult(), right=S.name(v)))]
            scratch = dict(kinds)
            scratch[t1] = self.kind(s.value, kinds)
            # t1 is a's array or a new one: the pass's own, as v is, and both die here
            last = self._binary(t2, np.multiply, [S.name(t1), S.name(v)],
                                lambda n: n in (v, t1), scratch)
            return first + pre + stmts[k + 1:j] + last, j
        return None


def _in_running_order(node):
    """``node`` and the calls and operators in it whose operands it runs first,
    operands before what reads them (Python's order of evaluation)."""
    if isinstance(node, gast.Call):
        children = node.args
    elif isinstance(node, (gast.BinOp, gast.UnaryOp)):
        children = list(gast.iter_child_nodes(node))
    else:
        return
    for child in children:
        yield from _in_running_order(child)
    yield node


def _replaced(tree, node, new):
    """A copy of ``tree`` with ``node`` (found by identity) replaced by ``new``."""
    if tree is node:
        return new
    tree = copy.copy(tree)
    for field, value in gast.iter_fields(tree):
        if isinstance(value, list):
            setattr(tree, field, [_replaced(v, node, new) if isinstance(v, gast.AST) else v
                                  for v in value])
        elif isinstance(value, gast.AST):
            setattr(tree, field, _replaced(value, node, new))
    return tree


def _name_of(node):
    """A temporary's name that says what it holds: ``dy_y`` for ``dy * y``, ``cos_y``
    for ``np.cos(y)`` (fresh names are made from it)."""
    names = [n.id for n in S.walk(node) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Load) and n.id != "np"]
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
        names = [node.func.attr] + names[1:] if names and names[0] == getattr(
            node.func.value, "id", None) else [node.func.attr] + names
    return "_".join(names[:3]) or "t"


def _marker(s):
    """A block's comment (codegen.comment_marker): a statement that does nothing."""
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) and isinstance(
        s.value.value, str)

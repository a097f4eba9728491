"""The state of each adjoint at each point of the backward pass, as a dataflow.

An adjoint is UNSET (zero, no variable yet), SET (a variable that may share its
array with another value), or OWNED (an array nobody else refers to, so later
contributions may add into it in place).  Statements change states through their
*effects*, in the order the backward pass runs them:

* ``("reset", x)``: x is assigned here, so its old value's adjoint starts at zero;
* ``("add", v, how)``: a contribution to v's adjoint; ``how`` is ``ARITHMETIC``
  (a fresh array), ``ITEM`` (one slot of a list's adjoint), ``SCATTER`` (into
  the elements of ``x[index]``, in place when owned; ``dense`` says whether its
  out-of-place form is a fresh array) or ``OTHER``;
* ``("own", x)``: x's adjoint is written into in place (a subscript write).

:class:`Flow` computes, from the effects of each statement, the state a loop's
reversed body starts every iteration with (its *head*): the emitter reads heads
and never emits a body more than once to discover them.  A branch joins its
arms; an adjoint set on one arm only is materialised as zeros on the other.
Nested loops are analysed once per distinct entry state (memoised), so the
analysis takes time linear in the nesting depth.

An OWNED adjoint about to be let go (that of a statement's target, whose
contributions have read it) may also hold the last of them: :func:`reuser` finds
which, :func:`written_into` writes it so (``runtime.into``, in place where the
result has the array's shape and dtype).

Invariant: :func:`advance` is the only place a contribution changes a state; the
emitter and this analysis both call it, so they agree statement by statement.
"""
import gast

from . import syntax as S
from .errors import InvariantError
from ..rules.helpers import unbroadcast
from .runtime import into

UNSET, SET, OWNED = 0, 1, 2
ARITHMETIC, ITEM, SCATTER, OTHER = "arithmetic", "item", "scatter", "other"


def advance(state, accumulated, name, how, owned, dense=OTHER):
    """Apply one contribution to ``name``'s adjoint in ``state`` (changed in place).

    Returns what the emitter writes: ``"zeros+item"``/``"item"`` (a list slot),
    ``"scatter"`` (in place into x[index]), ``"assign"`` (``dx = e``), ``"add"``
    (``dx = dx + e``) or ``"iadd"`` (``dx += e``).  ``owned`` is the state of a
    fresh array for ``name`` (SET for a number, which is never written into);
    ``accumulated`` collects adjoints added into while merely SET."""
    current = state.get(name, UNSET)
    if how == ITEM:
        state[name] = OWNED
        return "zeros+item" if current == UNSET else "item"
    if how == SCATTER:
        if current == OWNED:
            return "scatter"
        how = dense
    if current == UNSET:
        state[name] = owned if how == ARITHMETIC else SET
        return "assign"
    if current == SET:
        accumulated.add(name)
    state[name] = owned
    return "iadd" if current == OWNED else "add"


def own(state, accumulated, name):
    """``x[i] = 0`` on x's adjoint: written in place, so it must be x's own."""
    if state.get(name) != OWNED:
        accumulated.add(name)
    state[name] = OWNED


def join(a, b, owned, live=None):
    """The state after a branch whose arms end in ``a`` and ``b``; and the names to
    zero at the end of each arm (set on the other arm only).  An adjoint that
    ``live(name)`` says nothing before the branch reads (the value there was not
    varied) is dropped: no zeros for it."""
    merged, zero_a, zero_b = {}, [], []
    for name in sorted(set(a) | set(b)):
        if live is not None and not live(name):
            continue
        x, y = a.get(name, UNSET), b.get(name, UNSET)
        if x == UNSET and y != UNSET:
            zero_a.append(name)
            x = owned(name)
        elif y == UNSET and x != UNSET:
            zero_b.append(name)
            y = owned(name)
        if x != UNSET:
            merged[name] = min(x, y)
    return merged, zero_a, zero_b


class Flow:
    """Loop heads from statement effects.  ``effects(s, state)`` lists the effects of
    the adjoint of assignment ``s`` reached in ``state``; ``owned(name)`` is the
    state of a fresh array for ``name``; ``feeds(s, name)`` whether the value of
    ``name`` before ``s`` gets an adjoint (see analysis.adjoint_inputs)."""

    MAX_ROUNDS = 64  # a head only rises in a finite lattice: far more than it needs

    def __init__(self, effects, owned, feeds):
        self.effects = effects
        self.owned = owned
        self.feeds = feeds
        self.loops = {}  # (id(loop), entry state) -> (head, accumulated)

    def head(self, loop, entry):
        """The state every reversed iteration of ``loop`` starts with, entered in
        ``entry``; and the adjoints its body adds into while merely SET."""
        key = (id(loop), frozenset(entry.items()))
        if key not in self.loops:
            self.loops[key] = self._fixpoint(loop, entry)
        return self.loops[key]

    def _fixpoint(self, loop, entry):
        head, seen = dict(entry), set()
        for _ in range(self.MAX_ROUNDS):
            accumulated = set()
            out = self.block(loop.body, dict(head), accumulated)
            seen |= accumulated
            new = dict(head)
            for name, value in out.items():
                if value != UNSET and head.get(name, UNSET) == UNSET:
                    new[name] = self.owned(name)  # zeros are made before the loop
                elif value != UNSET:
                    new[name] = min(head[name], value) if head[name] != UNSET else value
            # an adjoint owned at the end of each iteration is worth owning at the
            # start, if the body adds into it in place then (one copy before the loop)
            for name, value in out.items():
                if value == OWNED and new.get(name) == SET and name in accumulated:
                    new[name] = OWNED
            if new == head:
                return head, frozenset(seen)
            head = new
        raise InvariantError(f"the adjoint states of the loop at line "
                             f"{getattr(loop, 'lineno', '?')} did not converge")

    def block(self, stmts, state, accumulated):
        """The state after the reversed ``stmts``, entered in ``state`` (changed)."""
        for s in reversed(stmts):
            state = self.stmt(s, state, accumulated)
        return state

    def stmt(self, s, state, accumulated):
        if isinstance(s, gast.If):
            a = self.block(s.body, dict(state), accumulated)
            b = self.block(s.orelse, dict(state), accumulated)
            return join(a, b, self.owned, lambda name: self.feeds(s, name))[0]
        if isinstance(s, (gast.For, gast.While)):
            head, seen = self.head(s, state)
            accumulated |= seen
            return dict(head)
        if isinstance(s, gast.Assign):
            apply(self.effects(s, state), state, accumulated, self.owned)
        return state


def apply(effects, state, accumulated, owned):
    """Apply a statement's effects to ``state`` (changed in place)."""
    for effect in effects:
        if effect[0] == "reset":
            state[effect[1]] = UNSET
        elif effect[0] == "own":
            own(state, accumulated, effect[1])
        else:
            _, name, how, dense = effect
            advance(state, accumulated, name, how, owned(name), dense)


def fresh(expr, refs):
    """Whether contribution ``expr`` is a new array that refers to no other (arithmetic
    on arrays, or such summed back to an input's shape): what the adjoint it is
    assigned to may own."""
    return isinstance(_summed(expr, refs), (gast.BinOp, gast.UnaryOp))


_UFUNCS = {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply",
           gast.Div: "true_divide", gast.USub: "negative"}


def reuser(g, exprs, refs):
    """The index of the contribution among ``exprs`` (a statement's, in the order they
    are added) that may be written into the owned array of adjoint ``g``, let go after
    them: the last that reads g, if g is an operand of its outermost arithmetic (or of
    the arithmetic ``unbroadcast`` sums back to an input's shape) and every other that
    reads g makes a new array (one that shared g's memory, ``da = g`` of ``y = a - b``,
    would see the write); None if none may."""
    reading = [k for k, e in enumerate(exprs)
               if not isinstance(e, gast.AST) or g in S.loaded_names(e)]
    if not reading or not all(isinstance(exprs[k], gast.AST) and fresh(exprs[k], refs)
                              for k in reading[:-1]):
        return None
    last = _summed(exprs[reading[-1]], refs)
    return reading[-1] if _operands(last, g) is not None else None


def written_into(expr, g, refs):
    """Contribution ``expr`` (see :func:`reuser`) with its arithmetic on ``g`` as
    ``into(g, ufunc, *operands)``."""
    inner = _summed(expr, refs)
    ufunc = gast.Attribute(value=S.name("np"), attr=_UFUNCS[type(inner.op)], ctx=gast.Load())
    written = gast.Call(func=refs.bind(into, "into"), keywords=[],
                        args=[S.name(g), ufunc] + _operands(inner, g))
    if inner is expr:
        return written
    return gast.Call(func=expr.func, args=[written] + expr.args[1:], keywords=expr.keywords)


def _summed(expr, refs):
    """What ``unbroadcast(e, v)`` sums back to v's shape (it returns e or a new array):
    e; else ``expr`` itself."""
    if (isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and expr.args
            and refs.bound.get(expr.func.id) is unbroadcast):
        return expr.args[0]
    return expr


def _operands(expr, g):
    """The operands of ``expr``'s outermost operation if it has a ufunc (``_UFUNCS``),
    ``g`` is one of them and the others are names or constants, else None.  (An operand
    that is itself a new array, ``g * -(y ** 2 - 1)``, is one NumPy already writes the
    result into, for an array large enough to matter.)"""
    if type(getattr(expr, "op", None)) not in _UFUNCS:
        return None
    operands = [expr.left, expr.right] if isinstance(expr, gast.BinOp) else [expr.operand]
    if not (any(isinstance(o, gast.Name) and o.id == g for o in operands) and all(
            isinstance(o, (gast.Name, gast.Constant)) for o in operands)):
        return None
    return operands

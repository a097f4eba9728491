"""``xs.pop(i)``, ``xs.insert(i, v)`` and ``d.update(...)`` as forms already modelled.

Each is lowered (by the normaliser, anf.py) into statements in the grammar of
normalize.py, with no adjoint logic of its own:

- ``v = xs.pop(i)``: ``v = xs[i]`` (IndexError where ``pop`` raises one: an empty
  list, an index out of range), then ``xs = xs[:i] + xs[i:][1:]``, the list without
  that item (``xs[:-1]`` for ``pop()``, ``xs[i + 1:]`` for a constant ``i``);
- ``xs.insert(i, v)``: ``xs = xs[:i] + [v] + xs[i:]``, whose slices clamp ``i``
  exactly as ``insert`` does;
- ``d.update({k: v, ...}, k2=v2)``: every key and value evaluated, then ``d[k] = v``
  for each in order (``d[k] = v`` is modelled: in_place.py).

A rebinding equals the change in place only where no other name, container or
caller holds the list: every statement it emits is marked ``srcdiff_changes`` with
(the container's name, the method), and ``containers.check_appends`` refuses, as for ``append``,
a change to a container the function did not make as a literal, or one read whole
before a later change.  Invariant: the statements returned compute what the method
computes, for a list (a dict) that nothing else shares.
"""
import gast

from . import syntax as S

METHODS = frozenset({"pop", "insert", "update"})


def lowers(call, resolves):
    """Whether ``call`` is a method of :data:`METHODS` on a local name, with the
    arguments the method takes (any other call is left to the passes that refuse)."""
    func = call.func
    if not (isinstance(func, gast.Attribute) and func.attr in METHODS
            and isinstance(func.value, gast.Name) and not resolves(func)):
        return False
    n, keywords = len(call.args), call.keywords
    if func.attr == "pop":
        return n <= 1 and not keywords
    if func.attr == "insert":
        return n == 2 and not keywords
    return n <= 1 and all(k.arg is not None for k in keywords)


def lower(lowering, call):
    """Emit (through ``lowering``, an anf.ExpressionLowering) the statements that
    compute ``call`` (see :func:`lowers`); the atom holding its result."""
    name = call.func.value.id
    emit = _Emitter(lowering, name, call.func.attr, call)
    return getattr(emit, call.func.attr)(*call.args, keywords=call.keywords)


class _Emitter:
    def __init__(self, lowering, name, method, at):
        self.lowering, self.name, self.method, self.at = lowering, name, method, at

    def assign(self, target, value, hint=None):
        """Emit ``target = value`` marked; a fresh name of ``hint`` if no target."""
        target = target or self.lowering.names.temp(hint)
        s = S.assign(target, value)
        s.srcdiff_changes = (self.name, self.method)
        self.lowering.emit(s, self.at)
        return S.name(target) if isinstance(target, str) else target

    def part(self, lower=None, upper=None, of=None):
        return self.assign(None, gast.Subscript(
            value=of or S.name(self.name), slice=gast.Slice(lower=lower, upper=upper, step=None),
            ctx=gast.Load()), "part")

    def rebind(self, *parts):
        joined = parts[0]
        for p in parts[1:-1]:
            joined = self.assign(None, gast.BinOp(left=joined, op=gast.Add(), right=p), "part")
        self.assign(self.name, gast.BinOp(left=joined, op=gast.Add(), right=parts[-1]))

    def pop(self, index=None, keywords=()):
        i = S.const(-1) if index is None else self.lowering.atom(index, "i")
        item = self.assign(None, gast.Subscript(value=S.name(self.name), slice=i,
                                                ctx=gast.Load()), "popped")
        constant = isinstance(i, gast.Constant) and type(i.value) is int
        if constant and i.value == -1:
            self.assign(self.name, gast.Subscript(value=S.name(self.name), slice=gast.Slice(
                lower=None, upper=S.const(-1), step=None), ctx=gast.Load()))
        elif constant:  # i + 1 is not 0: xs[i + 1:] is what follows the item
            self.rebind(self.part(upper=i), self.part(lower=S.const(i.value + 1)))
        else:
            self.rebind(self.part(upper=i), self.part(S.const(1), of=self.part(lower=i)))
        return item

    def insert(self, index, value, keywords=()):
        i = self.lowering.atom(index, "i")
        v = self.lowering.atom(value, "v")
        item = self.assign(None, gast.List(elts=[v], ctx=gast.Load()), "part")
        self.rebind(self.part(upper=i), item, self.part(lower=i))
        return S.const(None)

    def update(self, other=None, keywords=()):
        pairs = []
        if other is not None:
            if not (isinstance(other, gast.Dict) and None not in other.keys):
                raise self.lowering.source_map.error(
                    other, f"cannot differentiate {self.name}.update(...) of anything but "
                    "a dict literal or keywords", hint=f"Write {self.name}[k] = v for each "
                    f"key (for k in other: {self.name}[k] = other[k]).")
            pairs = [(self.lowering.atom(k, "key"), self.lowering.atom(v, "v"))
                     for k, v in zip(other.keys, other.values)]
        pairs += [(S.const(k.arg), self.lowering.atom(k.value, "v")) for k in keywords]
        for key, value in pairs:  # all evaluated first, then written in order
            self.assign(gast.Subscript(value=S.name(self.name), slice=key, ctx=gast.Store()),
                        value)
        return S.const(None)

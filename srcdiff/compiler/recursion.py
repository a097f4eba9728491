"""Recursive calls: a unit that calls itself, directly or through others, calls itself
at run time; it is compiled once, not unrolled.

While the unit of ``(fn, key)`` is being compiled, a call that asks for that same
unit (recursion) gets a :class:`Recursive` stand-in: generated code calls its
``forward`` and ``backward``, which run the unit's once it is built.  What a caller
needs to know before that (which results, which arguments it writes into, which
active arguments its result depends on) is assumed from the source and checked
against the built unit: a wrong assumption is a CompileError, never a gradient
computed under it.  How deep the recursion goes is decided when it runs, like a
loop's trip count; each call keeps its own tape.
"""
import functools
import threading

import gast

from .errors import CompileError, InvariantError
from .unit import ANY
from .exits import has_early_return
from .parse import parse_function, unit_name


class Recursive:
    """Stands for the unit of ``fn`` with ``active`` parameters while it is compiled."""

    def __init__(self, fn, active):
        code = fn.__code__
        self.fn = fn
        self.name = unit_name(fn)
        # one per active argument, lifted ones and *args' included: a caller pairs
        # them with its arguments (their names only need to differ from ``unconnected``)
        params = code.co_varnames[:code.co_argcount]
        self.wrt = [params[k] if k < len(params) else f"<argument {k}>"
                    for k, a in enumerate(active) if a]
        self.mutated = ()       # assumed, checked by resolve
        self.aliased = tuple(range(len(active)))  # not known while it compiles: any
        self.unconnected = ()   # assumed, checked by resolve
        self.free_reads = frozenset([ANY])  # not known while it compiles: any
        self.free_writes = frozenset()      # assumed, checked by resolve
        self.unit = None        # the unit, once built
        self.called = False     # whether a call was compiled against the assumptions
        self._checking = threading.local()

        def forward(*args):
            return self.unit.forward(*args)

        def backward(tape, d_out):
            return self.unit.backward(tape, d_out)
        self.forward, self.backward = forward, backward

    @functools.cached_property
    def several(self):
        """Whether it returns several results: asked only of a stand-in that is called
        (every compile makes one), checked by resolve."""
        return _returns_a_tuple(self.fn)

    def resolve(self, unit):
        """Check the assumptions against the built ``unit``, then run it when called."""
        if self.called:
            if len(unit.wrt) != len(self.wrt):
                raise InvariantError(f"{self.fn.__qualname__}: the stand-in assumed "
                                     f"{len(self.wrt)} active arguments, the unit has "
                                     f"{len(unit.wrt)}")
            wrong = ("returns several results" if unit.several != self.several else
                     "writes into its arguments" if unit.mutated else
                     "writes into a global or closure value" if unit.free_writes else
                     f"does not use its argument(s) {', '.join(unit.unconnected)}"
                     if unit.unconnected else None)
            if wrong is not None:
                raise CompileError(f"cannot compile the recursive function "
                                   f"{self.fn.__qualname__}: it {wrong}",
                                   hint="Return one value (or one tuple literal), compute on "
                                        "copies, and pass every differentiated argument on.")
        self.unit = unit

    def is_current(self):
        """The unit's answer (once built; a cycle of calls answers once)."""
        if self.unit is None:
            return False  # its compile failed: whoever called it compiles again
        if getattr(self._checking, "on", False):
            return True
        self._checking.on = True
        try:
            return self.unit.is_current()
        finally:
            self._checking.on = False


def _returns_a_tuple(fn):
    """Whether ``fn``'s one return is its last statement and returns several results."""
    body = parse_function(fn).node.body
    return (not has_early_return(body) and isinstance(body[-1], gast.Return)
            and isinstance(body[-1].value, gast.Tuple) and len(body[-1].value.elts) > 1)

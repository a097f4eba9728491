"""The compiled unit: a function's forward/backward pair, as the runtime calls it.

A :class:`Unit` is the compiled adjoint of one function for one choice of
active parameters: ``forward(*args) -> (result, tape)`` computes the function
and keeps what the backward pass reads; ``backward(tape, dresult)`` returns the
adjoints of the active parameters.  Both are plain NumPy code.  A unit compiled
``batched`` has a second backward pass over the same tape, ``backward_rows(tape,
dresults, rows)``, for a batch of adjoints with the leading shape ``rows`` (one
walk for a whole jacobian), or None and ``not_batched`` saying why.

A call with an array argument of ``cache.LEAN_BYTES`` or more runs the function's
*lean* unit, compiled beside the plain one (``lean`` holds the large arrays'
dtypes): the same values, computed in place into arrays its code owns
(in_place.py), and ``backward_spent``, the backward pass that ``spend`` runs, also
into the saved arrays of the tape it empties.  Smaller calls run the plain unit,
which writes into nothing but the adjoints it owns (adjoint_state.py).

Invariant: a unit never writes into the caller's arrays (``run`` hands the code
copies or read-only views), and it is current while every free name its code was
built on (``dependencies``) still means the same object.  driver.py builds units;
the cache is cache.py.
"""

import weakref

import numpy as np

from .. import _recording, nest
from ..rules.helpers import batched as batch_of_rows
from .errors import CompileError


# The key, among a unit's ``free_reads``/``free_writes``, of any value from outside
# the function: what a call the compiler cannot see into may read or write
# (free_effects.py).
ANY = "any outside value"


class Unit:
    __slots__ = ("name", "forward", "backward", "source", "blocks", "params", "wrt", "_fn",
                 "dependencies", "mutated", "aliased", "callees", "unconnected", "several",
                 "depth", "filename", "specialised", "numbers_alike", "backward_rows",
                 "not_batched", "backward_spent", "lean", "seed", "free_reads",
                 "free_writes", "__weakref__")

    def __init__(self, name, forward, backward, source, params, wrt, fn, dependencies,
                 mutated=(), aliased=()):
        self.name = name
        self.forward = forward
        self.backward = backward
        self.source = source
        self.params = params          # all parameter names
        self.wrt = wrt                # the active ones, in order
        self._fn = weakref.ref(fn)    # weak: the cache must not keep a function alive
        self.dependencies = dependencies  # (namespace or cell, name, object) the code was built on
        self.mutated = mutated        # indices of parameters the function writes into
        self.aliased = aliased        # indices of parameters its result may share objects with
        self.blocks = ()              # where each source line's adjoint block lies in source
        self.callees = ()             # the compiled units of the functions it calls
        self.unconnected = ()         # active parameters the result does not depend on
        self.several = False          # whether it returns a tuple of results
        self.depth = 0                # how deep a container it returns (0: none)
        # the name of the generated code in tracebacks and ``linecache``
        self.filename = forward.__code__.co_filename
        self.specialised = False      # made for Python floats (numbers.py): guarded
        # whether it computes the same given NumPy numbers for 0-d arrays (numbers.py)
        self.numbers_alike = False
        self.backward_rows = None     # the batched backward pass (compiled ``batched``)
        self.not_batched = None       # why it has none, if it was asked for
        self.lean = None              # memory-lean: the large arrays' dtypes (in_place.py)
        self.backward_spent = None    # a lean unit's backward pass for a spent tape
        self.seed = None              # the dtype of seed it is for (None: any)
        # the keys of the globals and closure values its backward pass may read, and
        # of those its forward pass may write into (free_effects.py)
        self.free_reads = self.free_writes = frozenset()

    @property
    def fn(self):
        """The function compiled, or None once it is gone."""
        return self._fn()

    def run(self, args):
        """The forward pass: ``(result, tape)``.

        ``args`` (a list) is changed in place to what compiled code may see: a copy
        of each argument the function writes into, a read-only view of every other
        array.  Compiled code never writes into the caller's arrays (which may be a
        Tensor's, a Variable's or a value saved on a tape), and a write the compiler
        did not model (``out=x``, ``np.copyto(x, v)``) is an error, not a gradient
        that ignores it.  A read-only array gets its view too: asking its flags would
        cost every writable one (assigning an attribute is refused, and a call whose
        result is discarded, ``x.setflags(...)``, counts as a write: that argument is
        copied)."""
        mutated = self.mutated
        ndarray = np.ndarray
        for i, arg in enumerate(args):
            if mutated and i in mutated:
                args[i] = _own_copy(arg)
            elif type(arg) is ndarray:  # a read-only one too: no flags to ask, faster
                args[i] = view = arg.view()
                view.setflags(False)  # write=False, by position: half the cost of a keyword
        try:  # the tapes recording now told that compiled code runs (see _recording)
            return _recording.run_compiled(self.name, self.forward, args)
        except ValueError as exc:
            if "read-only" not in str(exc):
                raise
            raise CompileError(
                f"{self.name} wrote into a read-only array ({exc}): an argument, written "
                "in a way srcdiff does not model, or a read-only view",
                hint="Write into a copy (x = x.copy()) or with x[...] = value.") from None

    def spend(self, taken, g):
        """The backward pass over the tape in the list ``taken`` (``y, *taken =
        unit.run(args)``), which it empties: as nothing else holds the tape then, the
        backward pass frees each saved value after the last adjoint that reads it.
        Only for a tape walked once; one walked again (a persistent tape, a pullback,
        a jacobian's rows) goes to ``backward`` as it is, and stays whole.  A lean
        unit's (in_place.py) computes into the saved arrays it reads last too
        (``backward_spent``, for a seed that is a number of dtype ``seed``); its ``backward``
        writes only into arrays it makes."""
        spent = self.backward_spent
        if spent is not None and (self.seed is None or _seed_of(g, self.seed)):
            return spent(taken.pop(), g)
        return self.backward(taken.pop(), g)

    def backward_batch(self, tape, g):
        """The batched backward pass for ``g``, a stack of adjoints of the result (one
        leading axis of rows): the stack of what ``backward`` gives for each."""
        with batch_of_rows(1):
            return self.backward_rows(tape, g, np.shape(g)[:1])

    def is_current(self):
        """Whether every free name the code was built on still means the same object."""
        for scope, name, obj in self.dependencies:
            if scope.get(name, GONE) is not obj:
                return False
        for callee in self.callees:  # a loop, not all(...): every cached call asks this
            if not callee.is_current():
                return False
        return True


GONE = object()  # what a dependency records for a name then unbound


def _seed_of(g, dtype):
    """Whether ``g`` is a number whose spread over an array (``rules.helpers._spread``)
    has ``dtype``: a NumPy number or 0-d array of it, or a Python float for float64."""
    if type(g) is float:
        return dtype == _FLOAT64
    return getattr(g, "dtype", None) == dtype and g.ndim == 0


_FLOAT64 = np.dtype(np.float64)


def _own_copy(value):
    """A copy of an argument that compiled code may write into: of each array, in
    containers of the same types; any other object is its own (np.array would turn
    it into an array of objects, and a ragged list into an error)."""
    if isinstance(value, (list, tuple, dict)):
        return nest.rebuilt(value, [_own_copy(v) for v in nest.items(value)])
    return np.array(value) if isinstance(value, np.ndarray) else value

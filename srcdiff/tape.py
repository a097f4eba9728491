"""GradientTape: records operations on watched values and walks them backwards.

A record is one tuple: the primitive's rule, the values it was applied to, the
arrays behind them, its keywords and the Tensor it produced, laid out by arity so
that a call of one or two inputs makes one tuple, not three (see ``_fields``):
``(rule, a, x, out)``, ``(rule, a, b, x, y, out)`` without keywords, else
``(rule, args, raw, kwargs, out)``.  The backward walk visits the records in
reverse and calls each input's vjp.  When another tape is recording at that moment
the vjps run on the Tensors themselves, so the gradient computation is recorded in
turn: that is how nested tapes give higher derivatives.  Otherwise they run on the
raw arrays, which is the fast path.  A tape used once, with large values, first turns
its records into entries that keep only the values their rules read (``_slim``), so
the others are freed before the walk.
"""
import contextlib
import enum
import functools
import logging

import numpy as np

from . import nest
from ._recording import STATE, compiled_code_met, refuse_without_rule
from .errors import InvalidArgumentError
from .rules import is_nondifferentiable, registry, rule_of
from .rules.helpers import batched
from .rules.registry import Rule, primitive_name
from .tensor import (IndexedSlices, Tensor, Variable, _ArrayLike, _new, _raw, cast,
                     convert_to_tensor)

logger = logging.getLogger("srcdiff")


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


# Reading a Variable under a tape is recorded as an identity from the variable
# to the Tensor read, so the variable itself can be a gradient source.
_READ = Rule(None, (lambda g, ans, x: g,), "ReadVariableOp")

_NOT_PERSISTENT = ("A non-persistent GradientTape can only be used to compute one set of "
                   "gradients (or jacobians)")


class _Records:
    """What one tape holds: the records and the ids of values they can reach."""

    __slots__ = ("records", "tracked", "watched", "variables", "complex")

    def __init__(self):
        self.records = []
        # ids of watched values and of results computed from them: floating (or complex)
        # ones only, as no gradient reaches others
        self.tracked = set()
        self.watched = []      # keeps watched Tensors alive, so their ids stay theirs
        self.variables = {}    # watched Variables by construction order
        # Whether a complex value was watched or recorded: only then does the
        # backward walk check each adjoint for TensorFlow's conjugation.
        self.complex = False

    def add(self, rule, args, raw, kwargs, out):
        """Keep a record: ``out``, what ``rule``'s primitive made of ``args``, is now tracked."""
        self.records.append(_laid_out(rule, args, raw, kwargs, out))
        self.tracked.add(id(out))
        if out._value.dtype.kind == "c":
            self.complex = True


_RULES = registry._VJPS
_NDARRAY = np.ndarray
_FLOAT64 = np.dtype(np.float64)
_LARGE = 1 << 16  # bytes of a value from which a tape slims its records before its one walk
_NO_KWARGS = {}  # shared by the records of calls without keywords: one dict less to keep each


def _laid_out(rule, args, raw, kwargs, out):
    """The record of a call (see the module's docstring): one tuple, by arity."""
    if not kwargs:
        if len(args) == 1:
            return rule, args[0], raw[0], out
        if len(args) == 2:
            return rule, *args, *raw, out
    return rule, args, raw, kwargs or _NO_KWARGS, out


def _fields(record):
    """``(rule, args, raw, kwargs, out)`` of a record, whatever its layout."""
    if len(record) == 4:
        rule, a, x, out = record
        return rule, (a,), (x,), _NO_KWARGS, out
    if len(record) == 6:
        rule, a, b, x, y, out = record
        return rule, (a, b), (x, y), _NO_KWARGS, out
    return record


class GradientTape:
    """Record operations for automatic differentiation (TensorFlow 2's API).

    Operations on watched values inside the ``with`` block are recorded along the path
    Python takes; trainable Variables read inside are watched automatically.  See
    ``gradient``, ``jacobian``, ``batch_jacobian``, ``watch``, ``stop_recording``.
    Example::

        >>> import srcdiff as sd
        >>> x = sd.constant(3.0)
        >>> with sd.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> print(tape.gradient(y, x))
        srcdiff.Tensor(6.0, shape=(), dtype=float32)
    """

    # the state of a new tape, which each sets as its own as it changes
    _recording = False
    _tape = None                # the _Records, while held
    _released_variables = ()    # the variables it watched, once released
    _compiled = None            # the name of compiled code while it runs (run_compiled)
    _stack = None               # STATE.tapes of the thread recording on it

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables

    # --- the recording context ---
    def __enter__(self):
        """Enters a context inside which operations are recorded on this tape."""
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to "
                             "re-enter an already-active tape.")
        if self._tape is None:
            self._tape = _Records()
        # the stack of the thread that records: a gradient asked from another thread
        # stops the recording there, not in the asking thread's stack
        self._stack = STATE.tapes
        self._stack.append(self)
        self._recording = True
        return self

    def __exit__(self, typ, value, traceback):
        """Exits the recording context, no further operations are traced."""
        if self._recording:
            self._stack.remove(self)
            self._recording = False

    def _push_tape(self):
        self.__enter__()

    def _pop_tape(self):
        if not self._recording:
            raise ValueError("Tape is not recording.")
        self.__exit__(None, None, None)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording operations on this tape."""
        if self._tape is None:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._pop_tape()
        try:
            yield
        finally:
            self._push_tape()

    def reset(self):
        """Clear everything recorded, as if the context were exited and re-entered."""
        self._pop_tape()
        self._tape = None
        self._push_tape()

    # --- watching ---
    def watch(self, tensor):
        """Ensure ``tensor`` (or every tensor of a nested structure) is traced."""
        if self._tape is None:
            self._tape = _Records()
        tape = self._tape
        tracked, watched = tape.tracked, tape.watched
        given = type(tensor)  # a Tensor, a list or tuple of them: no walk to flatten them
        for t in ((tensor,) if given is Tensor else tensor if given is list or given is tuple
                  else nest.flatten(tensor)):
            if type(t) is Tensor:  # the common case first
                kind = t._value.dtype.kind
                if kind == "f":
                    tracked.add(id(t))
                    watched.append(t)
                    continue
            if type(t) is not Tensor and isinstance(t, Variable):
                self._watch_variable(t, _differentiable(t, "watched"))
            elif type(t) is Tensor or isinstance(t, Tensor):
                kind = t._array().dtype.kind
                if kind in "fc" or _differentiable(t, "watched"):
                    tracked.add(id(t))
                    watched.append(t)
                    if kind == "c":
                        tape.complex = True
            elif isinstance(t, (list, tuple, dict)):  # nested in a list or tuple
                self.watch(t)
            else:
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, "
                                 "not tf.Tensor or tf.Variable or ExtensionType.")

    def _watch_variable(self, variable, differentiable):
        """Watch ``variable``: ``watched_variables()`` lists it whatever its dtype (as
        TensorFlow's does), but only a ``differentiable`` one is tracked."""
        self._tape.variables[variable._uid] = variable
        if differentiable:
            self._tape.tracked.add(id(variable))

    def watched_variables(self):
        """The variables watched by this tape, in order of construction."""
        if self._tape is None:
            return self._released_variables
        return tuple(v for _, v in sorted(self._tape.variables.items()))

    # --- called by srcdiff.tensor while this tape records ---
    def _record(self, fn, args, raw, kwargs, out, rule=None):
        tape = self._tape
        tracked = tape.tracked
        for a in args:
            if id(a) in tracked:
                break
        else:
            return
        dtype = out._value.dtype
        if dtype is not _FLOAT64 and dtype.kind not in "fc":  # the commonest dtype first
            if dtype.kind == "O" and not is_nondifferentiable(fn):
                # numbers a Python function made of a watched value (np.frompyfunc):
                # their gradient would be lost, not zero
                refuse_without_rule(primitive_name(fn))
            return  # no gradient reaches other dtypes
        if self._compiled:  # compiled code runs, begun while this tape recorded
            compiled_code_met(primitive_name(fn), self._compiled)
        if rule is None:  # the table first: rule_of also asks fn itself
            rule = _RULES.get(fn) or rule_of(fn)
        if rule is None:
            if not is_nondifferentiable(fn):
                refuse_without_rule(primitive_name(fn))
            return
        if kwargs and (key := rule.unmodelled(kwargs)) is not None:
            refuse_without_rule(f"{primitive_name(fn)} with {key}=")
        # _Records.add, inlined: this runs once per recorded operation
        tape.records.append(_laid_out(rule, args, raw, kwargs, out))
        tracked.add(id(out))
        if dtype is not _FLOAT64 and dtype.kind == "c":
            tape.complex = True

    # ``_record`` of one and two inputs without keywords (``tensor._run1``, ``_run2``),
    # its commonest case unrolled: the inputs tested one by one, a float64 result by
    # identity, the rule from the table, the record made directly; anything else
    # (another dtype, compiled code running, a rule the table lacks) takes ``_record``.
    def _record1(self, fn, a, x, out):
        """``_record(fn, (a,), (x,), None, out)``."""
        tape = self._tape
        tracked = tape.tracked
        if id(a) in tracked:
            if (out._value.dtype is not _FLOAT64 or self._compiled
                    or (rule := _RULES.get(fn)) is None):
                return self._record(fn, (a,), (x,), None, out)
            tape.records.append((rule, a, x, out))
            tracked.add(id(out))

    def _record2(self, fn, a, b, x, y, out):
        """``_record(fn, (a, b), (x, y), None, out)``."""
        tape = self._tape
        tracked = tape.tracked
        if id(a) in tracked or id(b) in tracked:
            if (out._value.dtype is not _FLOAT64 or self._compiled
                    or (rule := _RULES.get(fn)) is None):
                return self._record(fn, (a, b), (x, y), None, out)
            tape.records.append((rule, a, b, x, y, out))
            tracked.add(id(out))

    def _record_call(self, entry, args, raw, out):
        """``_record(entry, args, raw, None, out, entry)`` of a compiled function's call
        (function.py) while this tape alone records, which tracks one of ``args``: the
        record made directly, in the layout of any arity."""
        if out._value.dtype.kind not in "fc":
            return  # no gradient reaches other dtypes
        if self._compiled:  # compiled code runs, begun while this tape recorded
            compiled_code_met(entry.name, self._compiled)
        tape = self._tape
        tape.records.append((entry, args, raw, _NO_KWARGS, out))
        tape.tracked.add(id(out))
        if out._value.dtype.kind == "c":
            tape.complex = True

    def _read_variable(self, variable, snapshot):
        tape = self._tape
        if (self._watch_accessed_variables and variable.trainable
                and id(variable) not in tape.tracked and variable._uid not in tape.variables):
            # watched silently, whatever its dtype: TensorFlow warns of explicit watches only
            self._watch_variable(variable, snapshot._value.dtype.kind in "fc")
        if id(variable) in tape.tracked:
            tape.add(_READ, (variable,), (snapshot._value,), None, snapshot)

    def _tracks_any(self, values):
        tracked = self._tape.tracked
        return any(id(v) in tracked for v in values)

    # --- gradients ---
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """The gradient of ``target`` with respect to each of ``sources``.

        The result has the structure of ``sources``; a source the target does
        not depend on gets None (or zeros with ``UnconnectedGradients.ZERO``)."""
        if self._recording or self._tape is None:  # else a use has nothing to check
            self._begin_use("gradient")
        unconnected = (unconnected_gradients if type(unconnected_gradients)
                       is UnconnectedGradients else _unconnected(unconnected_gradients))
        flat_sources, shallow = _check_sources(sources)
        records = self._tape.records
        if (len(records) == 1 and records[0][-1] is target and output_gradients is None
                and not (self._persistent or self._tape.complex or STATE.tapes)):
            grads = self._backprop_one(target, flat_sources)  # (the target a Tensor it made)
        else:
            if type(target) is Tensor:  # the common case, without the generic walk
                targets = [target]
            else:
                targets = nest.flatten(target)
                if not all(isinstance(t, (Tensor, Variable)) for t in targets):
                    raise TypeError("Argument `target` should be a list or nested structure "
                                    "of Tensors, Variables or CompositeTensors to be "
                                    f"differentiated, but received {target!r}.")
            if output_gradients is None:
                output_gradients = [None] * len(targets)
            else:
                output_gradients = nest.flatten(output_gradients)
                if any(g is None for g in output_gradients):
                    # TensorFlow seeds with ones only when output_gradients is None itself
                    raise ValueError(
                        "Attempt to convert a value (None) with an unsupported type "
                        "(<class 'NoneType'>) to a Tensor: an entry of output_gradients is "
                        "None; pass ones_like(target) to seed a target with ones")
                if len(output_gradients) != len(targets):
                    raise ValueError(f"output_gradients has {len(output_gradients)} entries, "
                                     f"but there are {len(targets)} targets")
            grads = self._backprop(targets, flat_sources, output_gradients)
            self._end_use()
        results = _finished(grads, flat_sources, unconnected)
        if not shallow:
            return nest.pack_sequence_as(sources, results)
        kind = type(sources)
        if kind is list:
            return results
        return tuple(results) if kind is tuple else results[0]

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """The jacobian of ``target`` with respect to each of ``sources``:
        ``target.shape + source.shape`` for each source."""
        self._begin_use("jacobian", experimental_use_pfor)
        unconnected = _unconnected(unconnected_gradients)
        flat_sources = _check_sources(sources)[0]
        target = _as_target(target)
        size = int(target.size)
        seeds = np.reshape(np.eye(size, dtype=target.dtype), (size,) + tuple(target.shape))
        columns = self._cotangent_rows(target, seeds, flat_sources, experimental_use_pfor)
        results = []
        for column, source in zip(columns, flat_sources):
            shape = tuple(target.shape) + tuple(source.shape)
            if column is None:
                results.append(_finish(None, source, unconnected, shape))
            else:
                results.append(_finish(np.reshape(column, shape), source, unconnected))
        self._end_use()
        return nest.pack_sequence_as(sources, results)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example jacobians: ``[b, y..., x...]`` where ``target[i]`` depends only
        on ``source[i]``."""
        self._begin_use("batch_jacobian", experimental_use_pfor)
        _unconnected(unconnected_gradients)
        target = _as_target(target)
        (source,) = _check_sources([source])[0]
        for value in (target, source):
            if value.ndim < 2:
                raise ValueError(f"Shape {value.shape} must have rank at least 2")
        if target.shape[0] != source.shape[0]:
            raise ValueError(
                "Need first dimension of target shape "
                f"({tuple(target.shape)}) and source shape ({tuple(source.shape)}) to match.")
        batch = target.shape[0]
        inner = int(np.prod(target.shape[1:], dtype=np.int64))
        # One walk per inner target element, all batch rows at once.
        seeds = np.zeros((inner, batch, inner), dtype=target.dtype)
        seeds[np.arange(inner), :, np.arange(inner)] = 1
        seeds = seeds.reshape((inner,) + tuple(target.shape))
        (column,) = self._cotangent_rows(target, seeds, [source], experimental_use_pfor)
        shape = (batch,) + tuple(target.shape[1:]) + tuple(source.shape[1:])
        if column is None:
            self._end_use()
            return _finish(np.zeros(shape, source.dtype), source, UnconnectedGradients.ZERO)
        result = np.reshape(np.moveaxis(column, 0, 1), shape)  # [inner, b, x...] to [b, y..., x...]
        self._end_use()
        return _finish(result, source, UnconnectedGradients.NONE)

    def _begin_use(self, what, use_pfor=True):
        if self._tape is None:
            raise RuntimeError(_NOT_PERSISTENT)
        if not use_pfor and not self._persistent:
            # TensorFlow's loop (rather than vectorized) jacobian needs the tape many times.
            raise RuntimeError("GradientTape must be created with persistent=True to compute "
                               "the jacobian with eager execution enabled and with "
                               "experimental_use_pfor set to False.")
        if self._recording:
            if not self._persistent:
                self._pop_tape()
            else:
                logger.warning(
                    "Calling GradientTape.%s on a persistent tape inside its context is "
                    "significantly less efficient than calling it outside the context (it "
                    "causes the gradient ops to be recorded on the tape, leading to "
                    "increased CPU and memory usage). Only call GradientTape.%s inside the "
                    "context if you actually want to trace the gradient in order to compute "
                    "higher order derivatives.", what, what)

    def _end_use(self):
        if not self._persistent and self._tape is not None:  # not released already
            # Release every record; the watched variables stay known, as in TensorFlow.
            self._released_variables = (self.watched_variables() if self._tape.variables
                                        else ())
            self._tape = None

    def _cotangent_rows(self, target, seeds, sources, vectorised):
        """The adjoints of ``sources`` for each of ``seeds`` (cotangents shaped like
        ``target``): per source an array ``[len(seeds), *source.shape]``, or None
        where no seed reaches the source.

        Vectorised, one backward walk carries all the seeds at once, as a leading
        batch axis of every adjoint; otherwise each seed has its own walk (what
        TensorFlow does without pfor)."""
        if not len(seeds):
            return [None] * len(sources)
        if vectorised:
            with batched(1):
                return self._backprop([target], sources, [seeds], batched=True)
        rows = [self._backprop([target], sources, [seed]) for seed in seeds]
        columns = []
        for k, source in enumerate(sources):
            column = [row[k] for row in rows]
            if all(g is None for g in column):
                columns.append(None)
                continue
            column = [np.zeros(source.shape, source.dtype) if g is None else g for g in column]
            columns.append(_stack_rows(column, (len(seeds),) + tuple(source.shape)))
        return columns

    def _backprop(self, targets, sources, output_gradients, batched=False):
        """The adjoints of ``sources`` (None where unconnected), one backward walk.

        ``batched``: each output gradient is a stack of them, and every adjoint
        carries that leading batch axis; a rule without the trait ``batches`` runs row by row."""
        tape = self._tape
        count = len(tape.records)  # a persistent tape may record the walk itself: stop here
        traced = bool(STATE.tapes)  # another tape records: run the rules on Tensors
        # As in TensorFlow, a source gets a gradient only if the tape tracks it (watched,
        # or computed from a watched value) or it is a target itself: a constant beside
        # a watched input gets None.
        tracked, target_ids = tape.tracked, {id(t) for t in targets}
        source_ids = {id(s) for s in sources if id(s) in tracked or id(s) in target_ids}
        reaches = self._depending_on(source_ids, count)

        grads = {}
        for t, g in zip(targets, output_gradients):
            if id(t) in reaches:
                _accumulate(grads, id(t), _seed(t, g, traced, batched))
        if not grads:
            return [None] * len(sources)

        if self._persistent or traced:
            records = tape.records[:count]
        else:
            # Used once: the walk takes the records out as it goes, so the values only
            # they keep are freed as soon as their rule has run.  The tape is released
            # first, so that a walk cut short by an error is never reused.
            records = tape.records
            self._end_use()
        taking, STATE.taking = STATE.taking, records is tape.records
        try:
            if records is tape.records and not (traced or tape.complex) and _large(records):
                # Used once, with large values: free now those no rule reads (see _slim).
                # (Not with complex values: their conjugation asks each input's dtype.)
                _slim(records)
                _walk_entries(_taken(records), grads, source_ids, reaches, batched, False)
            else:
                _walk(records, grads, source_ids, reaches, traced, batched, tape.complex)
        finally:
            STATE.taking = taking
        return [*map(grads.get, map(id, sources))]

    def _backprop_one(self, target, sources):
        """``_backprop`` of a tape used once that holds one record, of ``target`` (a
        compiled function's call, a single operation), seeded with ones: its rule
        alone, for the inputs that are sources (nothing to follow, slim or order)."""
        tape = self._tape
        self._end_use()
        record = tape.records.pop()
        once = record[0].once
        if once is not None and id(target) not in map(id, sources):
            grads = once(sources, tape.tracked)  # its own walk (a compiled function's)
            if grads is not None:
                return grads
        source_ids = tape.tracked.intersection(map(id, sources))
        rule, args, raw, kwargs, out = _fields(record)
        g = _seed(target, None, False)
        grads = {id(target): g}  # the target's own, should it be a source too
        taking, STATE.taking = STATE.taking, True
        try:
            if rule.joint is not None:
                _joint_step(rule, g, out, args, raw, source_ids, grads)
            else:
                _walk_plain([record], grads, source_ids, source_ids | {id(target)})
        finally:
            STATE.taking = taking
        return [*map(grads.get, map(id, sources))]

    def _depending_on(self, source_ids, count):
        """The ids of the sources and of the values the first ``count`` records
        computed from them: the walk computes adjoints for these only."""
        tape = self._tape
        tracked = tape.tracked  # (an integer Variable is listed as watched, not tracked)
        if (source_ids.issuperset(map(id, tape.watched))
                and all(id(v) in source_ids or id(v) not in tracked
                        for v in tape.variables.values())):
            # Every watched value is a source, and everything tracked was computed
            # from a watched value: no need to follow the records.  The set itself
            # when no op can join it during the walk (the tape is not recording).
            if not self._recording and source_ids <= tape.tracked:
                return tape.tracked
            return tape.tracked | source_ids
        reaches = set(source_ids)
        for record in tape.records[:count]:
            for a in _fields(record)[1]:
                if id(a) in reaches:
                    reaches.add(id(record[-1]))
                    break
        return reaches


def _walk(records, grads, source_ids, reaches, traced, batched, conjugating):
    """The backward walk: each record's adjoint, when it has one, goes through its
    rule to the inputs that reach a source, added to what they already have.

    ``records`` is emptied, last first.  ``traced``: the rules run on Tensors
    (another tape records them); ``batched``: adjoints carry a batch axis;
    ``conjugating``: complex values need TensorFlow's conjugation.  Without any of
    these (the common case) the walk is ``_walk_plain``."""
    if not (traced or batched or conjugating):
        return _walk_plain(records, grads, source_ids, reaches)
    _walk_entries(_entries(records, traced), grads, source_ids, reaches, batched, conjugating)


def _entries(records, traced):
    """The records, taken out of ``records`` last first, as entries ``(rule, input
    keys, values, kwargs, key, ans)``: the Tensors when ``traced``, else the arrays."""
    pop = records.pop
    while records:
        rule, args, raw, kwargs, out = _fields(pop())
        if traced:
            yield rule, [id(a) for a in args], args, kwargs, id(out), out
        else:
            yield rule, [id(a) for a in args], raw, kwargs, id(out), out._value


def _taken(records):
    """The entries in ``records`` (see ``_slim``), taken out of it last first."""
    pop = records.pop
    while records:
        yield pop()


def _slim(records):
    """Turn each record of a tape used once, in place, into an entry (see ``_entries``)
    that keeps only the arrays its rule reads, None for the others: a value no rule
    reads (the input of ``exp``, the result of ``sin``) is then freed before the walk
    starts, unless the caller holds it.

    The keys are the ids of Tensors that were all alive together (the records held
    them), and the walk meets no other keys: an id reused after a Tensor is freed
    cannot be mistaken for one of them."""
    for n, record in enumerate(records):
        rule, args, raw, kwargs, out = _fields(record)
        reads_ans, reads_inputs = _reads(rule, len(raw))
        records[n] = (rule, [id(a) for a in args],
                      [v if read else None for v, read in zip(raw, reads_inputs)], kwargs,
                      id(out), out._value if reads_ans else None)


def _large(records):
    """Whether ``records`` hold large values (worth a pass to ``_slim`` them), judged
    in constant time by a few records: the first and the last two, their inputs and
    results (a loss's reduction reads values as large as any, as a rule).  Judging
    each record as it is made would cost every operation more than this whole check."""
    for record in records[:1] + records[max(len(records) - 2, 1):]:
        _, _, raw, _, out = _fields(record)
        for value in (*raw, out._value):
            if type(value) is _NDARRAY and value.nbytes >= _LARGE:
                return True
    return False


def _reads(rule, count):
    """(whether ``rule`` reads its result, whether it reads each of ``count`` inputs),
    read off the syntax of its vjps (the compiler's ``RuleSyntax.reads``); everything,
    where that cannot be read."""
    everything = True, (True,) * count
    if rule.argnum_vjp is not None:  # its vjp may be made per call: no syntax cached for it
        return everything
    reads = [_vjp_reads(vjp) for vjp in rule.vjps if vjp is not None]
    if any(r is None for r in reads):
        return everything
    ans, inputs = False, [False] * count
    for names, params, positional, vararg in reads:
        ans = ans or "ans" in names
        for i in range(count):
            if i < positional:
                inputs[i] = inputs[i] or params[i] in names
            else:  # past the named inputs: a *args parameter, if the vjp has one
                inputs[i] = inputs[i] or vararg is None or vararg in names
    return ans, tuple(inputs)


_VJP_READS = {}


def _vjp_reads(vjp):
    """(names read, parameter names, how many are positional, the *args name) of a
    vjp, or None where its source cannot be read.  Cached per vjp function."""
    try:
        return _VJP_READS[vjp]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return None
    from .compiler.inline import rule_syntax  # the compiler imports this module
    try:
        syntax = rule_syntax(vjp)
        found = (syntax.reads(), syntax.params, len(syntax.params) - len(syntax.kwonly),
                 syntax.vararg)
    except Exception:  # any rule whose syntax cannot be read: it reads everything
        found = None
    _VJP_READS[vjp] = found
    return found


def _walk_entries(entries, grads, source_ids, reaches, batched, conjugating):
    """``_walk`` of entries (see ``_entries``): with a batch axis, conjugation, or
    Tensors as values."""
    get, pop = grads.get, grads.pop
    for rule, keys, values, kwargs, key, ans in entries:
        # Only what reaches a source has an adjoint: ``key`` not in ``reaches`` finds None.
        g = get(key) if key in source_ids else pop(key, None)
        if g is None:
            continue
        if type(g) is IndexedSlices and rule is not _READ:
            g = g.dense()
        for i, key in enumerate(keys):
            if key in reaches and (vjp := rule.vjp(i)) is not None:
                d = _vjp_general(vjp, rule, g, ans, values, kwargs, i, batched, conjugating)
                if d is not None:  # None: a compiled adjoint found no path to this input
                    _accumulate(grads, key, d)


def _walk_plain(records, grads, source_ids, reaches):
    """``_walk`` on arrays, with no batch axis and no conjugation: each vjp is one
    plain call.  This is the tape's hottest loop, so one and two inputs with a vjp
    each (nearly every record, laid out apart: see ``_fields``) are unrolled: a call
    with its arguments spelled out runs in the interpreter's own loop, where
    ``vjp(g, ans, *values)`` costs a C-level call more (as much as a small vjp), and
    a loop over the inputs costs as much again.  Each ``previous + d`` is
    ``_accumulate``, inlined.  A rule with a joint form (a compiled function's) is
    called once for all its inputs."""
    get, pop = grads.get, grads.pop
    pop_record = records.pop  # the caller's list: emptied, last record first
    while records:
        record = pop_record()
        n = len(record)
        if n == 6:
            rule, a, b, x, y, out = record
        elif n == 4:
            rule, a, x, out = record
        else:
            rule, args, raw, kwargs, out = record
        key = id(out)
        # Only what reaches a source has an adjoint: ``key`` not in ``reaches`` finds None.
        g = get(key) if key in source_ids else pop(key, None)
        if g is None:
            continue
        if type(g) is IndexedSlices and rule is not _READ:
            g = g.dense()
        vjps = rule.vjps
        if n == 4 and vjps:
            key = id(a)
            vjp = vjps[0] if key in reaches else None
            d = None if vjp is None else vjp(g, out._value, x)
        elif n == 6 and len(vjps) == 2:
            ans = out._value
            key = id(a)
            vjp = vjps[0] if key in reaches else None
            if vjp is not None and (d := vjp(g, ans, x, y)) is not None:
                previous = get(key)
                grads[key] = d if previous is None else previous + d
            key = id(b)  # the second input's adjoint: added below
            vjp = vjps[1] if key in reaches else None
            d = None if vjp is None else vjp(g, ans, x, y)
        else:
            rule, args, raw, kwargs, out = _fields(record)
            if rule.joint is not None:  # one call for every input (a compiled function's)
                _joint_step(rule, g, out, args, raw, reaches, grads)
                continue
            ans = out._value
            for i, a in enumerate(args):
                key = id(a)
                if key in reaches and (vjp := rule.vjp(i)) is not None:
                    d = vjp(g, ans, *raw, **kwargs)
                    if d is not None:
                        _accumulate(grads, key, d)
            continue
        if d is not None:  # None: a compiled adjoint found no path to this input
            previous = get(key)
            grads[key] = d if previous is None else previous + d


def _joint_step(rule, g, out, args, raw, reaches, grads):
    """A record's step in a walk by its rule's joint form: one call for all the
    inputs in ``reaches``, each adjoint added to what ``grads`` holds for it."""
    wanted = [i for i, a in enumerate(args) if id(a) in reaches]
    if not wanted:
        return
    found = rule.joint(g, out._value, raw, wanted)
    for i in wanted:
        if (d := found.get(i)) is not None:
            key = id(args[i])
            previous = grads.get(key)
            grads[key] = d if previous is None else previous + d


def _vjp_general(vjp, rule, g, ans, values, kwargs, i, batched, conjugating):
    """Input ``i``'s adjoint, row by row for a rule that does not batch, conjugated
    for complex values."""
    if batched and not (rule is _READ or rule.traits.batches):
        vjp = functools.partial(_vjp_by_rows, vjp)
    if conjugating and _is_complex(g, values[i]):
        return _conjugate_vjp(vjp, g, ans, values, kwargs, values[i])
    return vjp(g, ans, *values, **kwargs)


def _vjp_by_rows(vjp, g, ans, *values, **kwargs):
    """``vjp`` for a batch of adjoints ``g``, one row at a time: for a rule that
    expects a single adjoint shaped like its result."""
    with batched(0):  # a rule may walk a tape of its own (custom_gradient)
        rows = [vjp(row, ans, *values, **kwargs) for row in g]
    rows = [row.dense() if isinstance(row, IndexedSlices) else row for row in rows]
    if all(row is None for row in rows):
        return None  # no path to this input (what a compiled adjoint may answer)
    zero = np.zeros_like(next(row for row in rows if row is not None))
    return np.stack([zero if row is None else row for row in rows])


def _is_complex(g, value):
    return np.iscomplexobj(_raw(g)) or np.iscomplexobj(_raw(value))


def _conjugate_vjp(vjp, g, ans, values, kwargs, value):
    """TensorFlow's convention for complex values: the adjoint is conjugated."""
    d = np.conjugate(vjp(np.conjugate(g), ans, *values, **kwargs))
    if not np.iscomplexobj(_raw(value)):
        d = np.real(d)
    return d


def _accumulate(grads, key, g):
    previous = grads.get(key)
    grads[key] = g if previous is None else previous + g


def _seed(target, g, traced, batched=False):
    """The starting adjoint of one target: ones, or the given output gradient
    (a stack of them in a batched walk)."""
    value = target._value if type(target) is Tensor else target._array()
    if g is None:  # ones of the target's dtype: nothing to check or convert
        g = np.empty(value.shape, value.dtype)  # np.ones, without its Python layers
        g.fill(1)
        return Tensor(g) if traced else g
    if not batched:
        g = _output_gradient(g, value)
    if traced:
        return g if isinstance(g, _ArrayLike) else Tensor(np.asarray(g, dtype=value.dtype))
    return np.asarray(_raw(g), dtype=value.dtype)


def _output_gradient(g, value):
    """A user's output gradient ``g`` for a target holding ``value``, as TensorFlow takes
    it: broadcast to the target's shape (TensorFlow's rules broadcast it against the
    target's values), else InvalidArgumentError; a Tensor of another floating dtype is
    InvalidArgumentError too, as TensorFlow's kernels refuse it (ndarrays and Python
    numbers take the target's dtype, as they do beside a Tensor)."""
    raw = _raw(g)
    if isinstance(g, _ArrayLike) and raw.dtype != value.dtype and raw.dtype.kind in "fc":
        raise InvalidArgumentError(f"output_gradients of dtype {raw.dtype.name} for a "
                                   f"target of dtype {value.dtype.name}: cast it first")
    shape = np.shape(raw)
    if shape == value.shape:
        return g
    try:
        broadcast = np.broadcast_shapes(shape, value.shape) == value.shape
    except ValueError:
        broadcast = False
    if not broadcast:
        raise InvalidArgumentError(f"Mismatch between the shape of output_gradients "
                                   f"{tuple(shape)} and the shape of the target "
                                   f"{tuple(value.shape)}: it must broadcast to it")
    if isinstance(g, _ArrayLike):
        return np.broadcast_to(g, value.shape)  # recorded, when another tape records
    return np.broadcast_to(raw, value.shape).copy()


def _as_target(target):
    if target is None:
        raise TypeError("Argument `target` should be a Tensor or Variable, but received None.")
    if isinstance(target, (Tensor, Variable)):
        return target
    raise TypeError(f"target must be a Tensor or Variable, got {type(target).__name__}")


def _check_sources(sources):
    """``(flat, shallow)``: the sources as a flat list, each checked (TensorFlow's
    warning for an integer one), and whether they are a Tensor or Variable or a plain
    list or tuple of them (the common cases, which need no walk of a nested structure)."""
    kind = type(sources)
    shallow = kind is Tensor or kind is Variable
    floating = False  # whether every source is known to be a real floating Tensor
    if shallow:
        flat = [sources]
    elif kind is list or kind is tuple:
        flat = sources
        shallow = floating = True
        for s in sources:
            if type(s) is Tensor and s._value.dtype.kind == "f":
                continue  # the common case
            floating = False
            if type(s) is not Tensor and type(s) is not Variable:
                shallow = False
                break
    if not shallow:
        flat = nest.flatten(sources)
        for s in flat:
            if not isinstance(s, (Tensor, Variable)):
                raise TypeError(f"sources must be Tensors or Variables, got {s!r} of type "
                                f"{type(s).__name__!r}")
    if not floating:
        for s in flat:
            if s._array().dtype.kind not in "fc":
                _differentiable(s, "source")
    return flat, shallow


_NOT_DIFFERENTIABLE = {  # TensorFlow's warnings, logged where TensorFlow logs them
    "watched": "The dtype of the watched tensor must be floating (e.g. tf.float32), got tf.%s",
    "source": "The dtype of the source tensor must be floating (e.g. tf.float32) when "
              "calling GradientTape.gradient, got tf.%s",
}


def _differentiable(value, role):
    """Whether ``value`` can carry a gradient; if not, say so (its gradient is None)."""
    dtype = value.dtype
    if dtype.kind in "fc":
        return True
    logger.warning(_NOT_DIFFERENTIABLE[role], dtype.name)
    return False


def _unconnected(value):
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients)
                                    else value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}") from None


# the NumPy number type of each floating dtype: an adjoint of a 0-d value may be one
_NUMBER_OF = {np.dtype(t): t for t in (np.float16, np.float32, np.float64, np.longdouble,
                                       np.complex64, np.complex128)}


def _finish(g, source, unconnected, shape=None):
    """A gradient as the user receives it: a Tensor of the source's dtype, or None."""
    dtype = source._value.dtype if type(source) is Tensor else source._array().dtype
    kind = type(g)
    if kind is not float or dtype is not _FLOAT64:  # the commonest case needs no checks
        if dtype.kind not in "fc":  # no gradient reaches integers: None, or zeros as in TF
            if unconnected is UnconnectedGradients.ZERO:
                return Tensor(np.zeros(shape if shape is not None else source.shape, dtype))
            return None
        if not (kind is _NDARRAY and g.dtype == dtype or kind is float
                or kind is _NUMBER_OF.get(dtype)):  # not an array of the dtype, or a number
            if g is None:
                if unconnected is UnconnectedGradients.ZERO:
                    return Tensor(np.zeros(shape if shape is not None else source.shape,
                                           source.dtype))
                return None
            if isinstance(g, IndexedSlices):
                return g
            if isinstance(g, _ArrayLike):
                return g if g.dtype == source.dtype else cast(g, source.dtype)
            if np.iscomplexobj(g) and not np.iscomplexobj(source):
                g = np.real(g)  # a real source's gradient, as TensorFlow casts it
            return Tensor(np.asarray(g, dtype=source.dtype))
    result = _new(Tensor)  # Tensor(g) without the __init__ frame
    result._value = g if kind is _NDARRAY else np.array(g, dtype)
    return result


def _finished(grads, sources, unconnected):
    """``_finish`` of each gradient, the commonest case inline: a float (what code
    compiled for numbers returns) or an array of the source's dtype, float64."""
    results = []
    for g, source in zip(grads, sources):
        kind = type(g)
        if (kind is float or kind is _NDARRAY and g.dtype is _FLOAT64) and (
                type(source) is Tensor and source._value.dtype is _FLOAT64):
            result = _new(Tensor)
            result._value = np.array(g) if kind is float else g
        else:
            result = _finish(g, source, unconnected)
        results.append(result)
    return results


def _stack_rows(rows, shape):
    if any(isinstance(r, _ArrayLike) for r in rows):
        rows = [convert_to_tensor(r) for r in rows]
        return np.reshape(np.stack(rows), shape)
    return np.reshape(np.stack([np.asarray(_raw(r)) for r in rows]), shape)

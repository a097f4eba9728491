"""The one piece of global state the tape needs: this thread's recording tapes."""
import threading


class _State(threading.local):
    def __init__(self):
        self.tapes = []  # the tapes recording on this thread, outermost first
        # > 0 while a custom_gradient function computes its value: its operations are
        # recorded (so that its grad_fn can be differentiated again, as in TensorFlow),
        # but its grad_fn stands in for any of them that has no rule.
        self.custom_forward = 0
        # > 0 while srcdiff runs code written for the compiler on the tape, where a
        # Python number made of a followed Tensor is refused (see eager_numbers.py)
        self.exact = 0
        # True while a backward walk that takes its tape's records runs (a tape used
        # once, while no tape records): a rule recorded on that tape only is asked for
        # this walk only, and may consume what it alone holds (function.py's tapes)
        self.taking = False
        # > 0 while compiled code runs whose backward pass runs later, under no tape (a
        # pullback's): what it reads of globals is kept as it was (runtime.FreeValues)
        self.later = 0


STATE = _State()


def run_compiled(name, forward, args):
    """``forward(*args)``, the compiled code of ``name``, with the tapes recording now
    told it runs: it computes on arrays, so an operation it records onto one of them
    reads a watched value it did not take as an input (see compiled_code_met).  Each
    tape is told in an attribute of its own, ``_compiled`` (the name, or None), which
    it asks as it records each operation: a read far cheaper than a thread-local's."""
    tapes = STATE.tapes
    if not tapes:  # nothing to tell
        return forward(*args)
    if len(tapes) == 1:  # the common case, without the lists
        tape = tapes[0]
        was, tape._compiled = tape._compiled, name
        try:
            return forward(*args)
        finally:
            tape._compiled = was
    told = tuple(tapes)
    before = [tape._compiled for tape in told]  # an outer run's, to restore
    for tape in told:
        tape._compiled = name
    try:
        return forward(*args)
    finally:
        for tape, was in zip(told, before):
            tape._compiled = was


def refuse_without_rule(name):
    """A watched value reached ``name``, which has no derivative rule."""
    if not STATE.custom_forward:
        raise LookupError(
            f"srcdiff has no gradient for {name}, which was applied to a watched value; "
            "use an op with a rule, or register one with sd.register_gradient")


def compiled_code_met(op, name):
    """The compiled code of ``name`` applied ``op`` to a value a tape watches that is
    not one of its inputs (a Variable an object holds, say): its gradient would be
    lost, so the call is refused."""
    from .compiler.errors import CompileError  # the compiler imports this module
    raise CompileError(
        f"the compiled code of {name} applied {op} to a Tensor or Variable that a "
        f"recording tape watches but that is not an input of {name}: its gradient would "
        "be lost",
        hint="Pass it as an argument, or read it from a global or closure name (or an "
             "attribute chain of one, or of an argument) in a function srcdiff compiles: "
             "those become inputs.")

"""The one piece of global state the tape needs: this thread's recording tapes."""
import threading


class _State(threading.local):
    def __init__(self):
        self.tapes = []  # the tapes recording on this thread, outermost first
        # > 0 while a custom_gradient function computes its value: its operations are
        # recorded (so that its grad_fn can be differentiated again, as in TensorFlow),
        # but its grad_fn stands in for any of them that has no rule.
        self.custom_forward = 0


STATE = _State()


def refuse_without_rule(name):
    """A watched value reached ``name``, which has no derivative rule."""
    if not STATE.custom_forward:
        raise LookupError(
            f"srcdiff has no gradient for {name}, which was applied to a watched value; "
            "use an op with a rule, or register one with sd.register_gradient")

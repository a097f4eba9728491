"""The one piece of global state the tape needs: this thread's recording tapes."""
import threading


class _State(threading.local):
    def __init__(self):
        self.tapes = []  # the tapes recording on this thread, outermost first


STATE = _State()

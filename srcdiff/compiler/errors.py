"""CompileError: Python the compiler cannot transform, pointed at with a caret.

A CompileError reaches the user from the public entry point they called
(:func:`entry_point`): its message locates their code, so the dozens of compiler
frames it passed through are dropped, unless ``SRCDIFF_DEBUG=1`` asks for them.
"""
import functools
import os


class CompileError(Exception):
    """Raised for source the compiler cannot differentiate.

    The message names the file, line and column, quotes the source line with a
    caret under the offending construct, and says what to do instead.  Catch it to
    choose another route (``@sd.function(fallback="eager")`` does so for you)::

        try:
            dx = sd.grad(f)(x)
        except sd.CompileError as error:
            print(error)        # File "model.py", line 12, column 5: ... and a hint
    """

    __module__ = "srcdiff"  # as tracebacks name it: what users catch is sd.CompileError

    def __init__(self, message, filename=None, lineno=None, col=None, line=None, hint=None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.line = line
        self.hint = hint
        super().__init__(self._format())

    def _format(self):
        parts = [self.message]
        if self.filename is not None and self.lineno is not None:
            parts.insert(0, f'File "{self.filename}", line {self.lineno}, column {(self.col or 0) + 1}:')
        if self.line is not None:
            text = self.line.rstrip()
            indent = len(text) - len(text.lstrip())
            parts.append("    " + text.lstrip())
            parts.append("    " + " " * max((self.col or 0) - indent, 0) + "^")
        if self.hint:
            parts.append(self.hint)
        return "\n".join(parts)


def entry_point(fn):
    """``fn``, a public entry point of srcdiff (``sd.grad(f)(x)``, a call of an
    ``@sd.function``...), raising a CompileError as if from its own frame: the
    internal frames and the exception chain are dropped (``SRCDIFF_DEBUG=1`` keeps
    them).  An entry point calling another keeps one frame of each."""
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CompileError as error:
            raise for_user(error)  # srcdiff's frames are hidden: SRCDIFF_DEBUG=1 shows them
    return entry


def for_user(error):
    """``error`` as a public entry point raises it (see :func:`entry_point`)."""
    if os.environ.get("SRCDIFF_DEBUG") == "1":
        return error
    error.__cause__ = None
    error.__suppress_context__ = True
    return error.with_traceback(None)


class SourceMap:
    """Where a parsed function came from, to point errors at the user's lines."""

    def __init__(self, filename, first_line, lines, col_offset=0):
        self.filename = filename
        self.first_line = first_line  # file line number of the parsed source's line 1
        self.lines = lines            # the file's lines (1-based access via line())
        self.col_offset = col_offset  # columns removed by dedenting

    def file_line(self, node):
        return self.first_line + getattr(node, "lineno", 1) - 1

    def line(self, node):
        n = self.file_line(node)
        return self.lines[n - 1] if 0 < n <= len(self.lines) else None

    def error(self, node, message, hint=None):
        return CompileError(message, self.filename, self.file_line(node),
                            getattr(node, "col_offset", 0) + self.col_offset, self.line(node), hint)


class InvariantError(AssertionError):
    """A compiler pass produced output that breaks its stated invariant.

    A bug in srcdiff, never the user's fault: it is not a :class:`CompileError`."""


class NotBatched(Exception):
    """A construct whose adjoint code cannot take a batch of adjoints (a leading axis of
    rows): the unit has no batched backward pass, and its jacobians run row by row.
    Never an error the user sees; its message says why, for ``cache_info``."""

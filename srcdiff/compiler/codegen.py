"""Code generation: syntax tree to readable source, compiled and registered with linecache.

The source comes with its map (:class:`Block`): where the adjoint block of each
source line lies in the text, read from the statements themselves, not the text.
"""
import ast
import builtins
import heapq
import itertools
import linecache
import re
import threading
import types
from collections.abc import Sequence
from typing import NamedTuple

import gast
import numpy as np

from . import syntax as S
from .convert import to_ast
from .errors import CompileError
from .managers import as_with, manager_of

_COMMENT = "\0comment\0"


class Refs:
    """The generated code's namespace: the user's free names plus what srcdiff adds.

    Names the compiler introduces (``np``, ``unbroadcast``, compiled callees)
    are bound here; a clash with a different object of the user's is an error
    rather than a silent rebinding."""

    def __init__(self, user_namespace):
        self.user = user_namespace
        self.bound = {"np": np}

    def _take(self, name, obj):
        for k in itertools.count():
            candidate = name if k == 0 else f"{name}_{k}"
            mine = self.bound.get(candidate, _MISSING)
            if mine is obj:
                return candidate
            if mine is _MISSING:
                theirs = self.user.get(candidate, _MISSING)
                if theirs is _MISSING or theirs is obj:
                    self.bound[candidate] = obj
                    return candidate

    def bind(self, obj, hint):
        return S.name(self._take(hint, obj))

    def helper(self, name):
        from ..rules import helpers
        return self.bind(getattr(helpers, name), name)

    def bind_globals(self, syntax):
        """Bind the free names a rule body uses, under the names the rule uses."""
        for name in syntax.globals_used():
            obj = syntax.globals.get(name, getattr(builtins, name, _MISSING))
            if obj is _MISSING:
                raise CompileError(f"rule {syntax.fn.__qualname__} uses unknown name {name!r}",
                                   hint=f"Define {name!r} at the module level of the rule, "
                                        "or import it there.")
            if self._take(name, obj) != name:
                raise CompileError(
                    f"the name {name!r}, which srcdiff's generated code needs for "
                    f"{getattr(obj, '__name__', obj)}, means something else in the function's "
                    "module", hint=f"Rename the module-level {name!r}.")

    def function_expr(self, fn):
        """A readable expression for a library function: ``np.sum``, ``math.exp``."""
        name = getattr(fn, "__name__", None)
        if name is not None:
            if getattr(np, name, None) is fn:
                return S.expr(f"np.{name}")
            if getattr(np.linalg, name, None) is fn:
                return S.expr(f"np.linalg.{name}")
        return self.bind(fn, name or "fn")


_MISSING = object()


class Block(NamedTuple):
    """The adjoint block one source line produced, as it lies in the generated text.

    ``first`` (its ``# line N`` comment) to ``last`` are 1-based lines of the text
    ``to_source`` returned: the comment's statement and the ones after it in the same
    body, up to the next comment or a compound statement holding blocks of its own
    (the structure around blocks belongs to none).  ``context``: the headers of the
    compound statements around it, outermost first (``else:`` for an else branch)."""
    line: int         # the line of the user's file
    first: int
    last: int
    context: tuple


def comment_marker(text, line):
    """A string constant that ``to_source`` turns into ``# text``, heading the block of
    source line ``line``; with line None, one it drops, which ends the block before it.
    The text is in hex: unparsed, the marker is a line read back without parsing it."""
    return f"{_COMMENT}{line or 0}\0{text.encode().hex()}"


# a marker statement as ast.unparse writes it (a docstring if it opens a body)
_MARKER_LINE = re.compile(r"\s*(\'\'\'|\'|\"\"\"|\")\\x00comment\\x00(\d+)\\x00([0-9a-f]*)\1")


def is_comment_marker(value):
    return value.startswith(_COMMENT)


def to_source(functions):
    """Readable Python source for a list of gast FunctionDefs, and its adjoint blocks
    (a sequence of :class:`Block`, in the order of the text, see :class:`Blocks`)."""
    module = gast.Module(body=[_with_blocks(f) for f in functions], type_ignores=[])
    tree = to_ast(module)
    _locate_statements(tree.body)
    text = ast.unparse(tree)  # clean output: np.tanh(W @ x), no redundant parentheses
    lines, _ = _commented(text)
    return "\n".join(lines) + "\n", Blocks(text)


def _commented(text):
    """The lines of unparsed ``text`` with each marker written as its comment (a blank
    line before it, but after a header) or dropped (an end of block), and where each
    line of ``text`` went: (lines, {line of ``text``: its line in them})."""
    lines = []
    moved = {}
    for number, line in enumerate(text.splitlines(), 1):
        found = _MARKER_LINE.fullmatch(line) if "\\x00comment" in line else None
        if found is not None and found[2] == "0":
            continue  # an end of block: no line
        if found is not None:
            indent = line[:len(line) - len(line.lstrip())]
            if lines and lines[-1].strip() and not lines[-1].rstrip().endswith(":"):
                lines.append("")
            lines.append(f"{indent}# {bytes.fromhex(found[3]).decode()}")
        else:
            lines.append(line)
        moved[number] = len(lines)
    return lines, moved


class Blocks(Sequence):
    """The :class:`Block` s of generated source, found when first asked for (by the
    side-by-side view, srcdiff/view.py): from the unparsed text, parsed back, where
    each statement lies.  Parsing it was a large part of a long function's compile,
    and most units are never viewed; the text is let go once they are found."""

    def __init__(self, text):
        self._text = text  # as unparsed: markers are statements
        self._found = None
        self._lock = threading.Lock()

    def _blocks(self):
        with self._lock:
            if self._found is None:
                self._found, self._text = _find_blocks(self._text), None
            return self._found

    def __getitem__(self, k):
        return self._blocks()[k]

    def __len__(self):
        return len(self._blocks())


def _find_blocks(text):
    """The blocks of unparsed ``text``, numbered as in the lines ``_commented`` makes."""
    try:  # the same statements, parsed back: where each lies in ``text``
        parsed = ast.parse(text).body
    except (SyntaxError, RecursionError):  # beyond Python: compile_source says so
        return ()
    _, moved = _commented(text)
    return tuple(Block(line, moved[first], moved[last], context)
                 for line, first, last, context in _blocks(parsed, (), text.splitlines()))


def _with_blocks(node):
    """``node`` with each branch that stands for a ``with`` block written as one
    (managers.py), in place."""
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(node, field, None)
        if stmts:
            setattr(node, field, [_with_blocks(as_with(s) if manager_of(s) else s)
                                  for s in stmts])
    return node


def _locate_statements(body):
    """Give each statement in ``body``, at any depth, the ``lineno`` that ``ast.unparse``
    reads (it looks up type comments by line; a Module of ours has none, so any line
    does): all that ``ast.fix_missing_locations``, which walks every expression too,
    would do for it."""
    for stmt in body:
        if not hasattr(stmt, "lineno"):
            stmt.lineno = 1
        for field in ("body", "orelse", "finalbody"):
            _locate_statements(getattr(stmt, field, ()))
        for part in getattr(stmt, "handlers", []) + getattr(stmt, "cases", []):
            _locate_statements(part.body)


def _marker_of(stmt):
    """The source line of a marker statement, None for any other statement."""
    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str) and is_comment_marker(stmt.value.value)):
        return int(stmt.value.value[len(_COMMENT):].split("\0", 1)[0])
    return None


def _blocks(body, context, text):
    """(source line, first, last, context) of each block in the ``ast`` statements
    ``body`` and the bodies nested in them, in textual order; ``text``: their lines."""
    head = last = None  # (source line, first line) of the block being read; its end
    for stmt in body:
        line = _marker_of(stmt)
        nested = [] if line is not None else list(_nested(stmt, context, text))
        # the function's return ends a block: it is no source line's adjoint
        if head is not None and (line is not None or nested or isinstance(stmt, ast.Return)):
            yield (*head, last, context)
            head = None
        if line:  # 0: an end of block
            head = (line, stmt.lineno)
        yield from nested
        last = stmt.end_lineno
    if head is not None:
        yield (*head, last, context)


def _nested(stmt, context, text):
    if isinstance(stmt, ast.FunctionDef):  # the forward and backward functions
        yield from _blocks(stmt.body, context, text)
    if not isinstance(stmt, (ast.If, ast.For, ast.While)):
        return
    header = text[stmt.lineno - 1].strip()
    yield from _blocks(stmt.body, context + (header,), text)
    orelse = stmt.orelse
    if len(orelse) == 1 and text[orelse[0].lineno - 1].lstrip().startswith("elif "):
        yield from _nested(orelse[0], context + (header,), text)  # unparsed as elif
    elif orelse:
        yield from _blocks(orelse, context + (header, "else:"), text)


def compile_source(text, namespace, label):
    """Compile generated ``text``; tracebacks and debuggers can show its lines.

    The code's globals are only the names of ``namespace`` it reads: a function's
    own module dictionary holds the function itself, and compiled code that kept
    it would keep the function alive through the cache.  The caller frees the
    ``linecache`` entry (named by the code's ``co_filename``) with the code, by
    :func:`release`."""
    filename = _FILENAMES.take(label)
    try:
        code = compile(text, filename, "exec")
    except (SyntaxError, RecursionError) as exc:  # Python's limits on nesting, e.g. 100 levels
        raise CompileError(f"the code generated for {label} is beyond what Python compiles: "
                           f"{exc.msg if isinstance(exc, SyntaxError) else exc}",
                           hint="Nest fewer blocks: split the function, or replace a long "
                                "chain of elif or of early exits by a lookup.") from None
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {name: namespace[name] for name in _names_read(code) if name in namespace}
    exec(code, scope)
    return scope


class _Filenames:
    """The file names of generated code, ``<srcdiff LABEL #N>``: N is the least number
    that no live unit of that label holds, so a function compiled again and again (a
    lambda made in a loop) reuses its names: CPython keeps some 80 bytes for every
    distinct file name it ever compiled.  No lock (each list and heap operation is
    atomic): ``release`` runs in finalizers, wherever the collector happens to run."""

    def __init__(self):
        self.free = {}  # label -> heap of released numbers
        self.made = {}  # label -> how many numbers were ever taken

    def take(self, label):
        try:
            number = heapq.heappop(self.free.setdefault(label, []))
        except IndexError:
            number = self.made[label] = self.made.get(label, 0) + 1
        return f"<srcdiff {label} #{number}>"

    def release(self, filename):
        label, _, number = filename[len("<srcdiff "):-1].rpartition(" #")
        heapq.heappush(self.free.setdefault(label, []), int(number))


_FILENAMES = _Filenames()


def release(filename):
    """Free the lines and the name of generated code whose unit is freed."""
    linecache.cache.pop(filename, None)
    _FILENAMES.release(filename)


def _names_read(code):
    """The global (and attribute) names ``code`` and the code nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names

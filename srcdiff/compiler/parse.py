"""Parse a function's source into a gast tree and resolve its free names."""
import builtins
import inspect
import linecache
import textwrap
import threading

import gast

from .errors import CompileError, SourceMap

# Held while syntax trees are built or compiled: CPython 3.11's conversion between C
# and Python syntax trees keeps one recursion counter per interpreter, and two threads
# doing it at once fail with "AST constructor recursion depth mismatch" (gh-106905).
SYNTAX_LOCK = threading.RLock()


class Parsed:
    """A function's syntax tree, where it came from, and what its free names are."""

    def __init__(self, fn, node, source_map, namespace):
        self.fn = fn
        self.node = node              # the gast FunctionDef
        self.source_map = source_map
        self.namespace = namespace    # free names: closure cells over globals over builtins

    @property
    def params(self):
        return [a.id for a in self.node.args.args]

    def resolve(self, expr):
        """The object a Name or attribute chain of free names denotes, or raise KeyError."""
        if isinstance(expr, gast.Name):
            if expr.id in self.namespace:
                return self.namespace[expr.id]
            raise KeyError(expr.id)
        if isinstance(expr, gast.Attribute):
            base = self.resolve(expr.value)
            try:
                return getattr(base, expr.attr)
            except AttributeError:
                raise KeyError(expr.attr) from None
        raise KeyError(type(expr).__name__)


def namespace_of(fn):
    """The names ``fn`` can see besides its locals: closure cells, globals, builtins."""
    namespace = dict(vars(builtins))
    namespace.update(fn.__globals__)
    if fn.__closure__:
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                namespace[var] = cell.cell_contents
            except ValueError:  # an empty cell: the name is not bound yet
                pass
    return namespace


def parse_function(fn):
    """Parse ``fn`` (a plain Python function) into a :class:`Parsed`."""
    with SYNTAX_LOCK:
        return _parse_function(fn)


def check_function(fn):
    """Raise CompileError unless ``fn`` is a Python function (with code to read)."""
    if not inspect.isfunction(fn):
        raise CompileError(f"cannot compile {fn!r}: only Python functions defined with "
                           "'def' have source to transform")


def _parse_function(fn):
    check_function(fn)
    if fn.__name__ == "<lambda>":
        raise CompileError(f"cannot compile the lambda {fn!r}: its source is not a "
                           "statement", hint="Define the function with 'def' instead.")
    code = fn.__code__  # not fn: inspect would read the source of fn.__wrapped__
    filename = inspect.getsourcefile(code) or code.co_filename
    try:
        lines, first_line = inspect.getsourcelines(code)
    except (OSError, TypeError) as exc:
        raise CompileError(f"cannot read the source of {fn.__qualname__}: {exc}",
                           hint="srcdiff compiles functions defined in a file or a notebook "
                                "cell; functions made with exec() have no source.") from None
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    col_offset = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = gast.parse(dedented)
    node = module.body[0]
    if not isinstance(node, gast.FunctionDef):
        raise CompileError(f"cannot compile {fn.__qualname__}: it is not a plain 'def'")
    node.decorator_list = []
    all_lines = linecache.getlines(filename) or lines
    source_map = SourceMap(filename, first_line or 1, all_lines, col_offset)
    _check_signature(node, source_map)
    return Parsed(fn, node, source_map, namespace_of(fn))


def _check_signature(node, source_map):
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise source_map.error(node, f"cannot compile {node.name}: only plain positional "
                               "parameters are supported (no *args, **kwargs, keyword-only)",
                               hint="Pass arrays as ordinary parameters.")

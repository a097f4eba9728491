"""Parse a function's source into a gast tree and resolve its free names.

Invariant of the output: the parsed ``FunctionDef`` is the code that runs.  The
source ``inspect`` finds is compiled again in a scope nested like the function's
own (classes for name mangling and ``super()``, functions for closure cells) and
must give the function's own bytecode: a file edited after import, which would
make the compiler differentiate other code, is refused.  Its expressions nest no
deeper than the later passes can recurse (``MAX_NESTING``).
"""
import __future__
import ast
import builtins
import contextlib
import copy
import functools
import inspect
import linecache
import sys
import threading
import types
import warnings

import gast
import numpy as np

from . import syntax as S
from .convert import to_gast
from .errors import CompileError, SourceMap
from .methods import FIXED

# How deep the later passes may recurse into one statement: copying a tree
# (``copy.deepcopy``) takes 4 frames a level, 6 through a list.  Within Python's
# default limit of 1000 frames this leaves 200 for the caller (measured: sums of
# 196 terms, calls nested 130 deep, elif chains of 130 plain arms compile).
MAX_NESTING = 800
_FRAMES = {False: 4, True: 6}  # by whether the child sits in a list

# Held while syntax trees are built or compiled: CPython 3.11's conversion between C
# and Python syntax trees keeps one recursion counter per interpreter, and two threads
# doing it at once fail with "AST constructor recursion depth mismatch" (gh-106905).
SYNTAX_LOCK = threading.RLock()

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


class Parsed:
    """A function's syntax tree, where it came from, and what its free names are."""

    def __init__(self, fn, node, source_map, namespace):
        self.fn = fn
        self.node = node              # the gast FunctionDef
        self.source_map = source_map
        self.namespace = namespace    # free names: closure cells over globals over builtins
        self.functions = {}           # parameter -> the function the unit is compiled for
        self.passed = {}              # parameter -> what a callee reads (unit._lift)
        self.appended = {}            # callee name -> the parameters its calls get (_lift)
        self.closures = {}            # name -> what a callee reads (closures.py)

    @property
    def params(self):
        return [a.id for a in self.node.args.args]

    @functools.cached_property
    def locals(self):
        """The function's parameters and the names it binds: they hide free names."""
        return set(self.params) | S.assigned_names(self.node.body)

    def resolve(self, expr):
        """The object a Name or attribute chain of free names denotes, or raise KeyError
        (a local of the same name as a global is the local: ``A.T`` on a parameter A);
        a parameter passed a function denotes it (see ``Cache.get``)."""
        if isinstance(expr, gast.Name):
            if expr.id in self.functions:
                return self.functions[expr.id]
            if expr.id in self.namespace and expr.id not in self.locals:
                return self.namespace[expr.id]
            raise KeyError(expr.id)
        if isinstance(expr, gast.Attribute):
            root, first = expr.value, expr.attr
            while isinstance(root, gast.Attribute):
                root, first = root.value, root.attr
            if isinstance(root, gast.Name) and root.id in self.functions and first not in FIXED:
                raise KeyError(root.id)  # a value the unit is passed: read when it runs
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


def check_function(fn, api):
    """Raise TypeError unless ``fn`` is (wraps) a Python function, which has source to
    compile; ``api`` names the caller in the message, e.g. ``"sd.grad"``."""
    inner = inspect.unwrap(fn)
    if inspect.isfunction(inner):
        return
    if isinstance(inner, (types.BuiltinFunctionType, np.ufunc)):
        what = f"{inner.__name__!r}, which is built in and has no Python source"
    elif inspect.ismethod(inner):
        what = f"the bound method {inner.__qualname__}"
    else:
        what = f"a {type(inner).__module__}.{type(inner).__qualname__} object"
    raise TypeError(f"{api} needs a Python function defined with 'def', got {what}; "
                    "call it from one instead, e.g. 'def f(x): return np.sin(x)'")


def parse_function(fn):
    """Parse ``fn`` (a plain Python function) into a :class:`Parsed`."""
    with SYNTAX_LOCK:
        return _parse_function(fn)


def require_function(fn):
    """Raise CompileError unless ``fn`` is a Python function (with code to read)."""
    if not inspect.isfunction(fn):
        raise CompileError(f"cannot compile {fn!r}: only Python functions defined with "
                           "'def' have source to transform",
                           hint="Call it from a function defined with 'def', and "
                                "differentiate that.")


def _parse_function(fn):
    require_function(fn)
    tree, source_map = read_lambda(fn) if fn.__code__.co_name == "<lambda>" else read_def(fn)
    _mangle(tree, fn.__qualname__)
    with _recursion_room():  # gast's conversion recurses a few frames a level
        node = to_gast(tree)
    node.decorator_list = []
    _check_signature(node, source_map)
    return Parsed(fn, node, source_map, namespace_of(fn))


def read_def(fn):
    """The ``def`` statement of the function ``fn`` (an ``ast`` node), checked to be the
    code that runs, and its :class:`SourceMap`; a CompileError if there is none."""
    code = fn.__code__  # not fn: inspect would read the source of fn.__wrapped__
    filename = inspect.getsourcefile(code) or code.co_filename
    try:
        # findsource calls linecache.checkcache first: an edited file is read again
        lines, first_line = inspect.getsourcelines(code)
    except (OSError, TypeError) as exc:
        raise CompileError(f"cannot read the source of {fn.__qualname__}: {exc}",
                           hint="srcdiff compiles functions defined in a file or a notebook "
                                "cell; functions made with exec() have no source.") from None
    source_map = SourceMap(filename, first_line or 1, linecache.getlines(filename) or lines)
    return _statement(fn, "".join(lines), source_map), source_map


def read_lambda(fn):
    """A ``def`` (an ``ast`` node) that returns the body of the lambda ``fn``, and the
    :class:`SourceMap` of its file: the lambda is found where its code says it is,
    and checked to be the code that runs."""
    node = find_lambda(fn)
    if node is None:
        code = fn.__code__
        line = linecache.getline(code.co_filename, code.co_firstlineno) or None
        raise CompileError(f"cannot read the source of the lambda {fn!r} (made with "
                           "eval() or exec(), or its file changed since)", code.co_filename,
                           code.co_firstlineno, max(line.find("lambda"), 0) if line else 0,
                           line, hint="Define the function with 'def' instead.")
    filename = inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename
    body = ast.copy_location(ast.Return(value=node.body), node.body)
    stmt = ast.copy_location(ast.FunctionDef(
        name=unit_name(fn), args=node.args, body=[body], decorator_list=[], returns=None,
        type_comment=None), node)
    source_map = SourceMap(filename, 1, linecache.getlines(filename))
    _check_nesting(stmt, source_map)
    return stmt, source_map


def find_lambda(fn):
    """The ``ast.Lambda`` of ``fn`` in its file (the innermost one holding the first
    position its code records), if it compiles to ``fn``'s code; else None."""
    code = fn.__code__
    if code.co_name != "<lambda>":
        return None
    positions = [p for p in code.co_positions() if p[0] is not None and p[2] is not None
                 and p[0] >= code.co_firstlineno]
    if not positions:
        return None
    # the first positioned instruction after RESUME lies inside the lambda's body
    line, _, col, _ = next((p for p in positions if (p[2], p[3]) != (0, 0)), positions[0])
    try:
        lambdas = _lambdas("".join(linecache.getlines(code.co_filename)))
    except (SyntaxError, ValueError):
        return None
    best = None
    for node in lambdas:
        if _contains(node.body, line, col):
            if best is None or _contains(best.body, node.body.lineno, node.body.col_offset):
                best = node
    # a copy: callers edit what they get, and the parsed file serves its other lambdas
    return copy.deepcopy(best) if best is not None and compiles_to(best, fn) else None


@functools.lru_cache(maxsize=16)
def _lambdas(source):
    """The ``ast.Lambda`` nodes of a file's ``source`` (parsed once per text: a rules
    module holds a hundred lambdas, each read on its own)."""
    return tuple(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Lambda))


def _contains(node, line, col):
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= (line, col) < end


def unit_name(fn):
    """The name generated code gives ``fn``'s passes (``NAME_forward``): its own, or
    ``lambda`` for a lambda."""
    return fn.__name__ if fn.__name__.isidentifier() else "lambda"


def _statement(fn, source, source_map):
    """The ``def`` statement ``source`` holds, its line 1 the source's first line,
    columns as in the file; refused if it nests too deeply or does not compile to
    ``fn``'s own code."""
    filename = source_map.filename
    changed = CompileError(
        f"the source of {fn.__qualname__} in {filename} is not the code that runs: the "
        "file changed after it was imported (or an import hook rewrote the function)",
        hint="Reload the module (or restart the interpreter) so that the code and its "
             "source agree.")
    indented = source[:1].isspace()
    try:  # under 'if 1:' an indented method parses as it is: dedenting would alter strings
        tree = ast.parse("if 1:\n" + source if indented else source)
    except SyntaxError:
        raise changed from None
    stmt = tree.body[0].body[0] if indented else tree.body[0]
    if indented:
        ast.increment_lineno(stmt, -1)
    _check_nesting(stmt, source_map)  # first: compiling it again recurses too
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or not compiles_to(
            stmt, fn):
        raise changed
    if isinstance(stmt, ast.AsyncFunctionDef):
        raise source_map.error(stmt, f"cannot compile {fn.__qualname__}: it is not a plain "
                               "'def'", hint="Differentiate a plain function the coroutine "
                                             "calls.")
    return stmt


def compiles_to(node, fn):
    """Whether ``node``, the ``ast`` of a def statement or a lambda read from ``fn``'s
    file, nested as ``fn.__qualname__`` says, compiles to ``fn.__code__`` (line numbers
    aside: moving code keeps its meaning)."""
    code = fn.__code__
    filename = code.co_filename
    stmt = ast.Expr(value=node) if isinstance(node, ast.Lambda) else node
    scopes = _scopes(fn.__qualname__)
    cells = [v for v in code.co_freevars if v != "__class__"]
    if cells and not any(kind == "def" for kind, _ in scopes):
        scopes.insert(0, ("def", "_"))  # a closure made without nesting: give it one
    placeholder = ast.Pass()  # where stmt goes, once the syntax around it is located
    body = [placeholder]
    for kind, name in reversed(scopes):
        if kind == "class":
            body = [ast.ClassDef(name=name, bases=[], keywords=[], body=body,
                                 decorator_list=[])]
            continue
        if cells:  # the innermost enclosing function holds the closure's cells
            body = [ast.parse(f"{v} = None").body[0] for v in cells] + body
            cells = []
        body = [ast.FunctionDef(name=name, args=ast.arguments(
            posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
            defaults=[]), body=body, decorator_list=[], returns=None, type_comment=None)]
    # 3.11 compiles a method call on an imported name differently: import them too
    imports = [ast.Import(names=[ast.alias(name="sys", asname=n)]) for n in _imported(filename)]
    module = ast.fix_missing_locations(ast.Module(body=imports + body, type_ignores=[]))
    # the parser located every node of the def, which fixing would walk again: only
    # the syntax made around it needs locations (a lambda's Expr takes its place's)
    holder = module
    while holder.body[-1] is not placeholder:
        holder = holder.body[-1]
    holder.body[-1] = stmt if hasattr(stmt, "lineno") else ast.copy_location(stmt, placeholder)
    if "@pytest_ar" in fn.__globals__:  # pytest rewrote the asserts of its module: so do we
        from _pytest.assertion.rewrite import rewrite_asserts
        module = copy.deepcopy(module)  # in place: the def compiled is the user's own
        rewrite_asserts(module, b"", filename)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the import showed them once already
            compiled = compile(module, filename, "exec", dont_inherit=True,
                               flags=code.co_flags & _FUTURE_FLAGS)
    except (SyntaxError, ValueError):
        return False
    for _, name in scopes + [("def", code.co_name)]:
        inner = [c for c in compiled.co_consts if inspect.iscode(c) and c.co_name == name]
        if len(inner) != 1:
            return False
        compiled = inner[0]
    return _fingerprint(compiled) == _fingerprint(code)


def _imported(filename):
    """The names the module in ``filename`` binds by importing, outside its functions."""
    return _imported_by("".join(linecache.getlines(filename)))


@functools.lru_cache(maxsize=16)  # a module's functions are compiled one after another
def _imported_by(text):
    try:
        stack = [ast.parse(text)]
    except (SyntaxError, ValueError):
        return ()
    names = []
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"]
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.Lambda, ast.expr)):
            stack.extend(ast.iter_child_nodes(node))
    return tuple(names)


def _scopes(qualname):
    """The enclosing scopes a qualified name records, outermost first: ("def", name)
    for a function (followed by ``<locals>``), ("class", name) for a class."""
    parts = qualname.split(".")[:-1]
    scopes = []
    k = 0
    while k < len(parts):
        name = parts[k] if parts[k].isidentifier() else "_"  # e.g. <lambda>, <listcomp>
        if k + 1 < len(parts) and parts[k + 1] == "<locals>":
            scopes.append(("def", name))
            k += 2
        else:
            scopes.append(("class", name))
            k += 1
    return scopes


def _mangle(tree, qualname):
    """Rename private names (``self.__k``) as Python does in a class (``self._C__k``),
    so the tree reads the attributes the function's code reads."""
    classes = [name for kind, name in _scopes(qualname) if kind == "class"]
    prefix = "_" + classes[-1].lstrip("_") if classes and classes[-1].strip("_") else None
    if prefix is None:
        return

    def mangled(name):
        private = name.startswith("__") and not name.endswith("__") and "." not in name
        return prefix + name if private else name

    for node in ast.walk(tree):
        for field in ("id", "attr", "arg"):
            if isinstance(getattr(node, field, None), str):
                setattr(node, field, mangled(getattr(node, field)))


def _fingerprint(value):
    """What decides what code does: its bytecode, names and constants, recursively;
    not its line numbers.  Constants by type and repr: 1, 1.0, -0.0 and True differ."""
    if inspect.iscode(value):
        return ("code", value.co_code, getattr(value, "co_exceptiontable", None), value.co_names,
                value.co_varnames, value.co_freevars, value.co_cellvars, value.co_flags,
                value.co_argcount, value.co_posonlyargcount, value.co_kwonlyargcount,
                tuple(map(_fingerprint, value.co_consts)))
    if isinstance(value, tuple):
        return ("tuple",) + tuple(map(_fingerprint, value))
    if isinstance(value, frozenset):
        return ("frozenset", frozenset(map(_fingerprint, value)))
    return (type(value), repr(value))


def _check_nesting(tree, source_map):
    """Refuse a statement whose expressions nest deeper than ``MAX_NESTING`` frames."""
    stack = [(tree, 0, tree)]
    while stack:  # a loop, not recursion: the tree may be deeper than Python allows
        node, depth, at = stack.pop()
        at = node if hasattr(node, "lineno") else at  # operators have no location
        if depth > MAX_NESTING:
            raise source_map.error(at, "this code nests too deeply for srcdiff, whose "
                                   "passes recurse once a level (a sum may have about 190 "
                                   "terms, an elif chain about 125 arms)",
                                   hint="Assign parts of a long expression to variables; "
                                        "split a long elif chain.")
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for child in value:
                    if isinstance(child, ast.AST):
                        stack.append((child, depth + _FRAMES[True], at))
            elif isinstance(value, ast.AST):
                stack.append((value, depth + _FRAMES[False], at))


_RECURSION = threading.Lock()


@contextlib.contextmanager
def _recursion_room(frames=5000):
    """Room for ``frames`` more Python frames (3.11 runs Python calls without C stack)."""
    with _RECURSION:  # the limit is global: one raise at a time
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + frames)
        try:
            yield
        finally:
            sys.setrecursionlimit(limit)


def _check_signature(node, source_map):
    """Refuse what the passes do not model, and make keyword-only parameters
    positional ones after the others, without defaults: compiled code is called
    with every parameter in that order (``function.with_defaults``; calls in compiled
    code: binding.py binds them by position)."""
    args = node.args
    if args.posonlyargs or (args.vararg and args.kwonlyargs):
        raise source_map.error(node, f"cannot compile {node.name}: only positional, "
                               "keyword-only parameters, *args and **kwargs (kwargs.py) "
                               "are supported (no *args beside keyword-only ones)",
                               hint="Pass arrays as ordinary parameters.")
    if args.kwonlyargs:
        args.args = args.args + args.kwonlyargs
        args.defaults, args.kwonlyargs, args.kw_defaults = [], [], []

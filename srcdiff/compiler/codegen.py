"""Code generation: syntax tree to readable source, compiled and registered with linecache."""
import ast
import builtins
import itertools
import linecache
import types

import gast
import numpy as np

from . import syntax as S
from .errors import CompileError

_COMMENT = "\0comment\0"
_counter = itertools.count()


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


def to_source(functions):
    """Readable Python source for a list of gast FunctionDefs."""
    module = gast.Module(body=functions, type_ignores=[])
    tree = ast.fix_missing_locations(gast.gast_to_ast(module))
    text = ast.unparse(tree)  # clean output: np.tanh(W @ x), no redundant parentheses
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("'\\x00comment", '"\\x00comment')):
            indent = line[:len(line) - len(line.lstrip())]
            comment = ast.literal_eval(stripped)[len(_COMMENT):]
            if lines and lines[-1].strip() and not lines[-1].rstrip().endswith(":"):
                lines.append("")
            lines.append(f"{indent}# {comment}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def compile_source(text, namespace, label):
    """Compile generated ``text``; tracebacks and debuggers can show its lines.

    The code's globals are only the names of ``namespace`` it reads: a function's
    own module dictionary holds the function itself, and compiled code that kept
    it would keep the function alive through the cache.  The caller frees the
    ``linecache`` entry (named by the code's ``co_filename``) with the code."""
    filename = f"<srcdiff {label} #{next(_counter)}>"
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


def _names_read(code):
    """The global (and attribute) names ``code`` and the code nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names

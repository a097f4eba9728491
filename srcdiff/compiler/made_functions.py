"""The function object of a lambda or local ``def`` passed as a value (closure
conversion), and the names it captures.

Its code is a constant of the enclosing function's code, found by name (a def) or
by the position of its body (a lambda); the function made of it has the enclosing
function's globals and cells, and says what it captures (``srcdiff_captures``):
the free names that are locals of the enclosing unit, each as what the function's
own code reads for it (its own name, or ``helper/W`` where a helper it calls reads
a lifted value).  Invariant: the function runs the code Python would run, and
every local it reads is among its captures; what cannot be so (``*args``,
``**kwargs``, keyword-only parameters, defaults that are not constants, decorators,
``global``/``nonlocal``, a local renamed by the compiler, a call of another local
function) is a CompileError at the lambda or def.
"""
import inspect
import types

import gast

from . import syntax as S


class FunctionMaker:
    """Makes the function values of the unit ``parsed`` (of ``fn``), whose locals are
    ``locals`` (``lifted`` among them) and whose local functions are ``local_defs``."""

    def __init__(self, parsed, locals_, lifted, local_defs):
        self.parsed = parsed
        self.fn = parsed.fn
        self.source_map = parsed.source_map
        self.locals = locals_
        self.lifted = lifted
        self.local_defs = local_defs

    def make(self, node, fdef):
        """(function, its captures) for the lambda or def ``node`` (``fdef`` its def
        form)."""
        refuse = None
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            refuse = "a function passed as a value may not take *args, **kwargs or " \
                     "keyword-only parameters"
        elif not all(isinstance(d, gast.Constant) for d in args.defaults):
            refuse = "the default values of a function passed as a value must be constants"
        elif fdef.decorator_list:
            refuse = "a decorated local function cannot be passed as a value"
        elif any(isinstance(n, (gast.Global, gast.Nonlocal)) for n in S.walk(fdef)):
            refuse = "a function passed as a value may not declare 'global' or 'nonlocal'"
        if refuse:
            raise self.source_map.error(node, refuse, hint="Define it at module level.")
        code = self.code_of(node)
        own = {a.id for a in args.args} | S.assigned_names(fdef.body)
        free = {n.id for n in S.walk(fdef) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load)} - own
        captures = sorted(free & self.locals)
        cells = set(self.fn.__code__.co_cellvars)
        reads = {}  # capture -> what the function's own code reads for it (its lifted)
        for c in captures:
            helper, _, inner = self.parsed.passed.get(c, "").partition("/")
            if c in code.co_freevars or (c in code.co_names and c in self.lifted):
                reads[c] = c  # a local, or a global Tensor lifted under its own name
            elif inner and helper in code.co_names:
                reads[c] = self.parsed.passed[c]  # what a helper it calls reads: helper/W
            else:  # a local of the unit the code does not read as one: refused
                raise self.source_map.error(node, f"a function made here reads {c!r}, which "
                                                  "the compiler renamed (*args, or a Tensor "
                                                  "read through an attribute)",
                                            hint="Pass that value as an argument.")
        for v in code.co_freevars:
            if v in self.local_defs:
                raise self.source_map.error(node, f"a function made here calls the local "
                                                  f"function {v!r}: not supported",
                                            hint=f"Define {v!r} at module level.")
            if v in cells and v not in captures:
                raise self.source_map.error(node, f"a function made here reads {v!r}, "
                                                  "which the compiler renamed (*args)",
                                            hint="Pass that value as an argument.")
        outer = dict(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()))
        closure = tuple(outer.get(v) or types.CellType() for v in code.co_freevars)
        defaults = tuple(d.value for d in args.defaults) or None
        fn = types.FunctionType(code, self.fn.__globals__, code.co_name, defaults,
                                closure or None)
        fn.srcdiff_captures = tuple(reads[c] for c in captures)
        return fn, captures

    def code_of(self, node):
        """The code object of the lambda or def ``node`` among the function's constants."""
        codes = [c for c in self.fn.__code__.co_consts if inspect.iscode(c)]
        if isinstance(node, gast.FunctionDef):
            found = [c for c in codes if c.co_name == node.name]
        else:
            body = node.body
            start = (self.source_map.file_line(body), body.col_offset + self.source_map.col_offset)
            end = (self.source_map.first_line + body.end_lineno - 1,
                   body.end_col_offset + self.source_map.col_offset)
            found = [c for c in codes if c.co_name == "<lambda>"
                     and start <= _first_position(c) < end]
        if len(found) != 1:
            raise self.source_map.error(node, "cannot find the code of this function "
                                              "(the file changed since it was imported?)",
                                        hint="Reload the module.")
        return found[0]



def _first_position(code):
    """(line, column) of the first instruction of ``code`` that has a place in its body
    (as parse.find_lambda reads it)."""
    positions = [p for p in code.co_positions() if p[0] is not None and p[2] is not None
                 and p[0] >= code.co_firstlineno and (p[2], p[3]) != (0, 0)]
    return (positions[0][0], positions[0][2]) if positions else (0, -1)

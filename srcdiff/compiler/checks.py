"""Invariant checks on what the compiler produces; a failure is a bug in srcdiff.

Run on every compile when ``SRCDIFF_CHECKS=1`` (the test suite sets it):

- :func:`check_anf`: a normalised function follows the grammar in the docstring
  of ``normalize.py``, exactly.
- :func:`check_pair`: the generated forward and backward passes
  (a) read (or ``del``) no name before it is assigned on every path to the read
  (or is a parameter, or a free name of the generated code's namespace), but for the
  forward pass's copies of the user's own reads that may fail the same way;
  (b) balance their stacks: for each stack, the backward pass's ``pop()`` calls,
  with the loops and branches around them, mirror the forward pass's
  ``append()`` calls, with loops matched by their header and branches by their
  test.  So every push is popped once, in the reversed loop of the loop that
  pushed it, on the arm of the branch that pushed it; and
  (c) agree on the tape: the backward pass unpacks the names the forward pass
  returns, in order.

A violation raises :class:`InvariantError` naming the function and the statement.
"""
import ast
import os
import re

import gast

from . import syntax as S
from .managers import manager_of
from .errors import InvariantError
from .anf import KEPT_WHOLE
from .methods import is_method_of


def enabled():
    """Whether compiles run the checks (read per compile: a test may switch them)."""
    return os.environ.get("SRCDIFF_CHECKS") == "1"


def _fail(func, node, what, source_map=None):
    where = f" (line {source_map.file_line(node)})" if source_map is not None else ""
    text = f"\n    {_unparse(node)}" if node is not None else ""
    raise InvariantError(f"{func.name}{where}: {what}{text}")


def _unparse(node):
    return gast.unparse(ast.fix_missing_locations(S.copy_node(node))).strip()


def _params(func):
    args = func.args
    return {a.id for a in args.posonlyargs + args.args + args.kwonlyargs
            + [args.vararg, args.kwarg] if a is not None}


# ---------------------------------------------------------------- A-normal form

def check_anf(func, source_map=None):
    """Check that the normalised FunctionDef ``func`` is in the grammar of normalize.py."""
    _Anf(func, source_map).function()


class _Anf:
    def __init__(self, func, source_map):
        self.func = func
        self.source_map = source_map
        self.locals = _params(func) | S.assigned_names(func.body)

    def fail(self, node, what):
        _fail(self.func, node, what, self.source_map)

    def function(self):
        body = self.func.body
        if not body or not isinstance(body[-1], gast.Return):
            self.fail(body[-1] if body else None, "the body does not end with its one return")
        value = body[-1].value
        if not (self.is_atom(value) or isinstance(value, gast.Tuple)
                and all(self.is_atom(e) for e in value.elts)):
            self.fail(body[-1], "a return value is an atom or a tuple of atoms")
        self.block(body[:-1], None)

    def block(self, stmts, loop):
        for k, s in enumerate(stmts):
            if isinstance(s, gast.Pass) and len(stmts) > 1:
                self.fail(s, "'pass' stands only for an empty block")
            elif isinstance(s, gast.If) and _is_flag_test(s):
                self.flag_test(s, loop, stmts[k + 1:])
            else:
                self.stmt(s, loop)

    def stmt(self, s, loop):
        if isinstance(s, gast.Assign):
            self.assign(s)
        elif isinstance(s, gast.If):
            self.expect_atom(s, s.test, "a branch test")
            self.block(s.body, loop)
            self.block(s.orelse, loop)
        elif isinstance(s, gast.For):
            self.for_header(s)
            self.block(s.body, s)
        elif isinstance(s, gast.While):
            self.expect_atom(s, s.test, "a while test")
            if s.orelse:
                self.fail(s, "a loop has no 'else'")
            self.block(s.body, s)
        elif isinstance(s, gast.Expr):
            if isinstance(s.value, (gast.Constant, gast.Yield, gast.YieldFrom, gast.Await)):
                self.fail(s, "an expression statement is a call kept for its effect")
        elif not isinstance(s, (gast.Pass, gast.Assert, gast.Raise)):
            self.fail(s, f"'{type(s).__name__}' is not in the grammar (exits are flags, "
                         "one final return)")

    def flag_test(self, s, loop, rest):
        """``if <flag>: break`` ends a loop body; in a while loop the re-evaluation of
        its test (statements that end by assigning the test's name) may follow."""
        if loop is None:
            self.fail(s, "'break' outside a loop")
        recompute = (isinstance(loop, gast.While) and isinstance(loop.test, gast.Name)
                     and rest and isinstance(rest[-1], gast.Assign)
                     and getattr(rest[-1].targets[0], "id", None) == loop.test.id
                     and not any(isinstance(n, gast.Break) for r in rest for n in gast.walk(r)))
        if rest and not recompute:
            self.fail(s, "'break' is only the flag test at the end of a loop body")

    def for_header(self, s):
        it = s.iter
        if not (isinstance(s.target, gast.Name) and _is_named_call(it, "range")
                and 1 <= len(it.args) <= 3 and not s.orelse):
            self.fail(s, "a loop is 'for <name> in range(<atoms>)' with no 'else'")
        for a in it.args:
            self.expect_atom(s, a, "a range bound")

    def assign(self, s):
        if len(s.targets) != 1:
            self.fail(s, "an assignment has one target")
        target, value = s.targets[0], s.value
        if isinstance(target, gast.Name):
            if not self.is_simple(value):
                self.fail(s, "the value is not one operation on atoms")
        elif isinstance(target, gast.Subscript):
            if not (isinstance(target.value, gast.Name) and self.is_index(target.slice)):
                self.fail(s, "an element write is '<name>[<index of atoms>] = <atom>'")
            self.expect_atom(s, value, "the value written into an element")
        elif isinstance(target, gast.Tuple):
            if not (all(isinstance(e, gast.Name) for e in target.elts)
                    and isinstance(value, gast.Call) and self.is_call(value)):
                self.fail(s, "an unpacking is '<name>, ... = <call on atoms>'")
        else:
            self.fail(s, "unsupported assignment target")

    def expect_atom(self, s, node, what):
        if not self.is_atom(node):
            self.fail(s, f"{what} is not an atom (a name, a constant, a module constant)")

    def is_atom(self, node):
        """A Name, a Constant, or a dotted module constant such as ``np.pi``."""
        if isinstance(node, gast.Attribute):
            while isinstance(node, gast.Attribute):
                node = node.value
            return isinstance(node, gast.Name) and node.id not in self.locals
        return isinstance(node, (gast.Name, gast.Constant))

    def is_simple(self, v):
        """One operation whose operands are atoms (conditions and literals kept whole)."""
        if self.is_atom(v) or isinstance(v, KEPT_WHOLE) or S.is_boolean(v):
            return True
        if isinstance(v, gast.BinOp):
            return self.is_atom(v.left) and self.is_atom(v.right)
        if isinstance(v, gast.UnaryOp):
            return self.is_atom(v.operand)
        if isinstance(v, gast.Call):
            return self.is_call(v)
        if isinstance(v, gast.Subscript):
            return self.is_atom(v.value) and self.is_index(v.slice)
        if isinstance(v, gast.Attribute):
            return self.is_atom(v.value)
        if isinstance(v, (gast.Tuple, gast.List)):
            return all(self.is_atom(e) for e in v.elts)
        return False

    def is_call(self, v):
        func = v.func
        callee = isinstance(func, gast.Name) or is_method_of(func) or (
            isinstance(func, gast.Attribute) and self.is_atom(func.value))
        return callee and all(self.is_argument(a) for a in v.args) and all(
            k.arg is not None and self.is_argument(k.value) for k in v.keywords)

    def is_argument(self, node):
        """An atom, or a literal tuple or list of arguments (``np.stack([a, b])``)."""
        if isinstance(node, (gast.Tuple, gast.List)):
            return all(self.is_argument(e) for e in node.elts)
        return self.is_atom(node)

    def is_index(self, node):
        if isinstance(node, gast.Slice):
            return all(p is None or self.is_atom(p) for p in (node.lower, node.upper, node.step))
        if isinstance(node, gast.Tuple):
            return all(self.is_index(e) for e in node.elts)
        return self.is_atom(node)


def _is_named_call(node, name):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and node.func.id == name and not node.keywords)


def _is_flag_test(s):
    return (isinstance(s.test, gast.Name) and len(s.body) == 1
            and isinstance(s.body[0], gast.Break) and not s.orelse)


# ---------------------------------------------------------------- generated pair

def check_pair(forward, backward, namespace, primal=None):
    """Check the generated forward/backward FunctionDefs; ``namespace`` holds the free
    names their code may read (the generated code's globals and builtins).

    ``primal`` is the normalised function the forward pass runs: where it reads a name
    it may not have assigned, Python raises for the user's code as for the forward
    pass, so the forward pass may repeat that read (on the same line), and no other."""
    users = _Defined(primal, namespace, strict=False).function() if primal else set()
    _Defined(forward, namespace, users).function()
    _Defined(backward, namespace).function()
    _check_tape(forward, backward)
    _check_stacks(forward, backward)


def _check_tape(forward, backward):
    """The backward pass unpacks, name for name, the tape the forward pass returns as
    ``return (result, (x, shape_of(y), z.shape, ...))``: a value, or what it keeps of
    it."""
    ret = forward.body[-1]
    if not (isinstance(ret, gast.Return) and isinstance(ret.value, gast.Tuple)
            and len(ret.value.elts) == 2 and isinstance(ret.value.elts[1], gast.Tuple)):
        _fail(forward, ret, "the forward pass ends with 'return (result, (tape, ...))'")
    kept = [e.args[0] if isinstance(e, gast.Call) and len(e.args) == 1 else
            e.value if isinstance(e, gast.Attribute) and e.attr == "shape" else e
            for e in ret.value.elts[1].elts]
    if not all(isinstance(e, gast.Name) for e in kept):
        _fail(forward, ret, "the tape holds names, or one call or shape of a name each")
    tape = backward.args.args[0].id
    unpack = [s for s in backward.body if isinstance(s, gast.Assign)
              and isinstance(s.value, gast.Name) and s.value.id == tape]
    unpacked = [e.id for e in unpack[0].targets[0].elts] if unpack else []
    if len(unpack) > 1 or unpacked != [e.id for e in kept]:
        _fail(backward, unpack[0] if unpack else None, "does not unpack the tape the forward "
              f"pass returns: {_unparse(ret.value.elts[1])}")


class _Defined:
    """Every local name read is assigned on every path to the read, and every other
    name is in the namespace; but for the reads ``allowed`` as (line, name).  Not
    ``strict``, it collects the reads that break this instead."""

    def __init__(self, func, namespace, allowed=(), strict=True):
        self.func = func
        self.namespace = namespace
        self.locals = _params(func) | S.assigned_names(func.body)
        self.allowed = allowed
        self.strict = strict
        self.broken = set()

    def function(self):
        self.block(self.func.body, _params(self.func))
        return self.broken

    def block(self, stmts, defined):
        """The names defined after ``stmts``, or None where no path falls through."""
        for s in stmts:
            if defined is None:
                break  # unreachable
            defined = self.stmt(s, set(defined))
        return defined

    def stmt(self, s, defined):
        if isinstance(s, gast.If) and manager_of(s):  # a with-block: always taken
            return self.block(s.body, defined)
        if isinstance(s, gast.If):
            self.reads(s, s.test, defined)
            return _meet(self.block(s.body, defined), self.block(s.orelse, defined))
        if isinstance(s, (gast.For, gast.While)):
            header = s.iter if isinstance(s, gast.For) else s.test
            self.reads(s, header, defined)
            # the first iteration sees only what was defined before the loop; after it,
            # the loop may not have run at all
            inner = defined | (S.names_in(s.target) if isinstance(s, gast.For) else set())
            self.block(s.body, inner)
            return defined
        if isinstance(s, gast.Delete):  # ``del x`` of an unbound x raises, as a read does
            gone = {t.id for t in s.targets}
            for name in sorted(gone - defined):
                _fail(self.func, s, f"deletes {name!r}, which is not assigned on every path "
                      "before it")
            return defined - gone
        self.reads(s, s, defined)
        if isinstance(s, (gast.Return, gast.Raise, gast.Break, gast.Continue)):
            return None
        return defined | S.assigned_names([s])

    def reads(self, s, node, defined):
        read = _reads(node)
        if isinstance(s, gast.AugAssign):  # x += v reads x
            read |= S.names_in(s.target)
        for name in sorted(read):
            fault = self.fault(name, defined)
            at = (getattr(s, "lineno", None), name)
            if fault is None or at in self.allowed:
                continue
            if self.strict:
                _fail(self.func, s, f"reads {name!r}, {fault}")
            self.broken.add(at)

    def fault(self, name, defined):
        """What is wrong with reading ``name`` where ``defined`` are assigned, or None."""
        if name in self.locals:
            return None if name in defined else "which is not assigned on every path before it"
        return None if name in self.namespace else "which is neither a local nor a name of " \
            "the generated code's namespace"


def _meet(a, b):
    """Defined after a branch: on both arms, ignoring an arm that does not fall through."""
    return a if b is None else b if a is None else a & b


_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.GeneratorExp, gast.DictComp)


def _reads(node):
    """The names ``node`` loads; a comprehension's own names are its own."""
    if isinstance(node, gast.Name):
        return {node.id} if isinstance(node.ctx, gast.Load) else set()
    found = set()
    for child in gast.iter_child_nodes(node):
        found |= _reads(child)
    if isinstance(node, _COMPREHENSIONS):
        found -= {n for g in node.generators for n in S.names_in(g.target)}
    return found


# --- stacks

_STACK = re.compile(r"\w+_stack(_\d+)? = \[\]")


def _check_stacks(forward, backward):
    stacks = _stacks(forward)
    pushes = _events(forward, forward.body, stacks, "append")
    pops = _events(backward, backward.body, stacks, "pop")
    for stack in sorted(stacks):
        expected, found = _trace(pushes, stack, reverse=True), _trace(pops, stack)
        if found != expected:
            _fail(backward, None, f"the pops of {stack!r} do not mirror its pushes: expected "
                                  f"{expected}, found {found}")


def _stacks(forward):
    """The stacks: ``X_stack = []`` among the forward pass's leading initialisations
    (``x = None``, ``x = UNBOUND``, ``x_stack = []``), where no user statement can be."""
    found = set()
    for s in forward.body:
        text = _unparse(s)
        if not re.fullmatch(r"\w+ = (None|UNBOUND(_\d+)?|\[\])", text):
            return found
        if _STACK.match(text):
            found.add(s.targets[0].id)
    return found


def _events(func, stmts, stacks, method):
    """The stack operations of ``stmts`` as a tree: ``stack`` for a call of ``method``
    on it, ``("loop", header, events)`` and ``("if", test, events, events)``."""
    out = []
    for s in stmts:
        if isinstance(s, gast.If):
            out.append(("if", _unparse(s.test), _events(func, s.body, stacks, method),
                        _events(func, s.orelse, stacks, method)))
        elif isinstance(s, (gast.For, gast.While)):
            out.append(("loop", _loop_header(s), _events(func, s.body, stacks, method)))
        else:
            out += _stack_calls(func, s, stacks, method)
    return out


def _stack_calls(func, s, stacks, method):
    """The stacks ``s`` calls ``method`` on; the backward pass pops nothing else."""
    out = []
    for n in gast.walk(s):
        if not (isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                and isinstance(n.func.value, gast.Name)):
            continue
        name, attr = n.func.value.id, n.func.attr
        if name in stacks and attr == method:
            out.append(name)
        elif name in stacks and attr != "copy" or attr == method == "pop":
            # (the backward pass pops a copy of each stack, so a tape can be replayed)
            _fail(func, s, f"calls {attr}() on {name!r}: the forward pass only appends to "
                           "its stacks, the backward pass only pops them")
    return out


def _loop_header(loop):
    """What identifies a loop and its reversal: ``for i in range(n)`` and
    ``for i in reversed(range(n)[:count])`` share ``("i", "range(n)")``; a while loop
    counting its trips in ``count`` and its replay ``for _ in range(count)`` share
    ``("_", "range(count)")``."""
    if isinstance(loop, gast.While):
        first = loop.body[0] if loop.body else None
        if isinstance(first, gast.AugAssign) and isinstance(first.target, gast.Name):
            return ("_", f"range({first.target.id})")
        return ("while", _unparse(loop.test))  # no count: no reversal can match it
    it = loop.iter
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "reversed":
        it = it.args[0]
        if isinstance(it, gast.Subscript) and isinstance(it.slice, gast.Slice):
            it = it.value  # only the first `count` iterations: the loop broke
    return (loop.target.id, _unparse(it))


def _trace(events, stack, reverse=False):
    """The events of one stack, with loops and branches that hold none of them dropped;
    with ``reverse``, in the order a backward pass meets them."""
    out = []
    for e in reversed(events) if reverse else events:
        if isinstance(e, str):
            out += [e] if e == stack else []
        else:
            inner = tuple(_trace(part, stack, reverse) for part in e[2:])
            out += [e[:2] + inner] if any(inner) else []
    return out

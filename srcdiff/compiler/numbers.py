"""Code specialised for Python floats: NumPy calls on them become their ``math`` twins.

A unit compiled for parameters passed Python floats or np.float64s (kinds ``"float"``
and ``"float64"``, see ``function.kind``) runs ``math.sin(y)`` where the function says ``np.sin(y)`` and
``y`` always holds a float or an np.float64 (:func:`doubles`): the same value as a
Python float, in a fraction of the time, differentiated by the rules of
``math.sin`` (no broadcasting to undo).

Exactness.  A name NumPy would give an np.float64 may now hold a Python float of
the same value (a *changed* name).  The two agree on ``+ - * / // %``, integral
powers and comparisons of doubles, and as arguments of ufuncs and ``math``
functions, but where Python raises (``x / 0.0``, ``math.sqrt(-1)``, a power that
overflows) and NumPy returns inf or nan.  Anywhere else (met by an array or a
NumPy scalar of another type, which NEP 50 would let a weak Python float take the
type of; in a container; returned; ``**`` of a non-integral power) a changed name
is first turned back by ``rules.numbers.as_float64``, and its adjoint comes back a
Python float (or the backward pass gives up).  The unit is guarded (:func:`guard`):
any exception in its forward or backward pass runs the unit made for NumPy values
instead, which returns what NumPy returns or raises what it raises.  So a
specialised unit gives the general unit's values, or the general unit runs.

The twins are the ``math`` functions whose results equal NumPy's float64 ones on
this build (:func:`twins`): NumPy's own SIMD ``exp``, ``log``, ``tanh``... differ
from the C library's in the last bit on machines with AVX-512, so they stay NumPy
calls.  Only bodies whose every call is a ufunc, a ``math`` function or a counting
builtin are specialised (:func:`_specialisable`): running them again is harmless.
"""
import functools
import math
import weakref

import gast
import numpy as np

from ..rules.numbers import MATH_TWINS, as_float64
from . import syntax as S
from .analysis import Describer, Kind, _bool_valued
from .facts import from_math, gather, greatest

DOUBLE_KINDS = ("float", "float64")  # parameter kinds (function.kind) specialised here
_CANDIDATES = ((np.sin, math.sin), (np.cos, math.cos))
_EXACT_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod)
_COUNTING = (range, len, int, float)  # builtins a specialised body may call
# math functions that return a float for float arguments (not floor, isnan...)
_FLOAT_MATH = set(MATH_TWINS) | {math.erf, math.erfc}


@functools.cache
def twins():
    """NumPy function -> ``math`` function giving the same float64 on this build.

    ``sqrt`` is correctly rounded in both (IEEE 754).  ``sin`` and ``cos`` are the C
    library's in NumPy builds that do not vectorise them: kept if they agree on a
    sample spread over twelve decades, where a vectorised one differs in a few per
    cent of values."""
    table = {np.sqrt: math.sqrt}
    rng = np.random.default_rng(7)
    sample = (rng.normal(size=2048) * np.logspace(-6, 6, 2048)).tolist()
    for numpy_fn, math_fn in _CANDIDATES:
        if all(numpy_fn(v) == math_fn(v) for v in sample):
            table[numpy_fn] = math_fn
    return table


def specialise(parsed, body, params, float_params, names, bind, describe, stand_ins=()):
    """Rewrite ``body`` (normalised, in place) for ``float_params`` passed Python floats;
    whether anything changed.  ``stand_ins`` (some of them, kind ``"float64"``) are
    floats passed for np.float64s: changed names from the start.  ``bind(obj, hint)`` names an object for the code (a
    Name ``parsed.resolve`` knows); ``describe`` maps a right-hand side to its Op."""
    facts = gather(body, params, float_params, describe)
    if not float_params or not _specialisable(facts, parsed):
        return False
    table = twins()
    dbl = doubles(facts, float_params, table, parsed)
    rewrite = {id(s): table[facts.ops[id(s)].fn] for s in facts.assigns
               if _target(s) in dbl and _twin_call(facts.ops[id(s)], table, dbl)}
    if not rewrite and not stand_ins:  # nothing gained: the general unit serves
        return False
    tests = _test_only(facts)
    changed = _changed(facts, rewrite, dbl, tests, stand_ins)
    unsafe = {id(s): loads for s in facts.in_order
              if (loads := _unsafe_loads(s, facts, changed, dbl, tests))}
    if any(isinstance(facts.statements[i], gast.While) for i in unsafe):
        return False  # a test evaluated again each round: no place for a conversion
    math_module = bind(math, "math")
    for s in facts.assigns:
        if id(s) in rewrite:
            s.value.func = gast.Attribute(value=math_module, attr=rewrite[id(s)].__name__,
                                          ctx=gast.Load())
    convert = bind(as_float64, "as_float64")
    for block in facts.blocks:
        out = []
        for s in block:
            for name in sorted(unsafe.get(id(s), ())):
                fresh = names.fresh(f"{name}_np")
                out.append(S.assign(fresh, gast.Call(func=convert, args=[S.name(name)],
                                                     keywords=[])))
                _rename_loads(s, name, fresh)
            out.append(s)
        block[:] = out
    return True


def _specialisable(facts, parsed):
    """No call but of ufuncs, ``math`` and counting builtins; no write into a value,
    no expression statement, no unpacking: running the body twice does nothing more."""
    if facts.exprs or facts.written or facts.updated or facts.unpacked:
        return False
    for s in facts.in_order:
        for node in S.walk(s) if not isinstance(s, (gast.If, gast.For, gast.While)) else (
                S.walk(getattr(s, "test", None) or s.iter)):
            if isinstance(node, gast.Call):
                try:
                    fn = parsed.resolve(node.func)
                except KeyError:
                    return False
                if not (isinstance(fn, np.ufunc) or from_math(fn) or fn in _COUNTING):
                    return False
    return all(facts.ops[id(s)].kind in (Kind.PRIMITIVE, Kind.COPY, Kind.NONE)
               for s in facts.assigns)


def numbers_alike(parsed, body, params, describe):
    """Whether ``body`` computes the same on NumPy numbers as on 0-d arrays of their
    dtype: a body :func:`_specialisable` has only ufuncs, ``math`` and arithmetic, no
    writes or methods, where a 0-d array acts as the NumPy number every ufunc on it
    returns, but for ``**``: a NumPy number's is the C library's ``pow``, an array's
    the ufunc's, and they differ in the last bit (x ** 3: one float64 in twenty, one
    float32 in five).
    Such a unit, compiled for numbers, serves 0-d arrays too (function.Units)."""
    powers = any(isinstance(node, gast.BinOp) and isinstance(node.op, gast.Pow)
                 for s in body for node in S.walk(s))
    return not powers and _specialisable(gather(body, params, (), describe), parsed)


def doubles(facts, float_params, table, parsed):
    """The names that always hold a Python float or an np.float64."""

    def double(node, names):
        if isinstance(node, gast.Constant):
            return type(node.value) is float
        return isinstance(node, gast.Name) and node.id in names

    def operand(node, names):  # what a double may meet and stay one
        return double(node, names) or _int_like(node, facts)

    def holds(s, names):
        value, op = s.value, facts.ops[id(s)]
        if isinstance(value, (gast.Name, gast.Constant)):
            return double(value, names)
        if isinstance(value, gast.BinOp) and isinstance(value.op, _EXACT_OPS + (gast.Pow,)):
            return (operand(value.left, names) and operand(value.right, names)
                    and (double(value.left, names) or double(value.right, names)))
        if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
            return double(value.operand, names)
        if isinstance(value, gast.Call) and not op.kwargs and _called(value, op, parsed):
            if op.fn in _FLOAT_MATH:
                return all(operand(a, names) for a in op.inputs)
            if isinstance(op.fn, np.ufunc):
                return (all(operand(a, names) for a in op.inputs)
                        and any(double(a, names) for a in op.inputs))
        return False

    by_name = {}
    for s in facts.assigns:
        by_name.setdefault(_target(s), []).append(s)
    candidates = (set(by_name) | set(float_params)) - facts.loop_targets
    candidates -= set(facts.params) - set(float_params)  # an array's name stays one
    return greatest(candidates, candidates - set(float_params), by_name, {}, holds)


def _called(value, op, parsed):
    """Whether the call ``value`` calls ``op.fn`` itself (``abs(y)`` is described as
    np.absolute but returns what abs returns)."""
    try:
        return parsed.resolve(value.func) is op.fn
    except KeyError:
        return False


def _twin_call(op, table, dbl):
    return (op.kind is Kind.PRIMITIVE and not op.kwargs and len(op.inputs) == 1
            and _hashable(op.fn) and op.fn in table
            and isinstance(op.inputs[0], gast.Name) and op.inputs[0].id in dbl)


def _hashable(fn):
    try:
        hash(fn)
        return True
    except TypeError:
        return False


def _int_like(node, facts):
    if isinstance(node, gast.Constant):
        return type(node.value) is int
    return isinstance(node, gast.Name) and node.id in facts.ints


def _target(s):
    target = s.targets[0]
    return target.id if isinstance(target, gast.Name) else None


def _test_only(facts):
    """Names read only as the test of an ``if`` or ``while`` (truthiness, which a bool
    and an np.bool_ share)."""
    tests, elsewhere = set(), set()
    for s in facts.in_order:
        if isinstance(s, (gast.If, gast.While)) and isinstance(s.test, gast.Name):
            tests.add(s.test.id)
            continue
        for node in _own_expressions(s):
            elsewhere |= S.loaded_names(node)
    return tests - elsewhere


def _changed(facts, rewrite, dbl, tests, stand_ins=()):
    """The least set of names that may hold a Python float where NumPy gave an
    np.float64: the twins' results and the ``stand_ins`` (parameters), and what copies
    and exact arithmetic make of them."""
    changed = {_target(s) for s in facts.assigns if id(s) in rewrite} | set(stand_ins)
    while True:
        more = {_target(s) for s in facts.assigns
                if _target(s) not in changed and _target(s) in dbl
                and _propagates(s, changed, dbl, facts)}
        if not more:
            return changed
        changed |= more


def _propagates(s, changed, dbl, facts):
    """Whether assignment ``s`` reads a changed name in a form whose result is a
    Python float then, as the operands' np.float64 result would be (see the doc)."""
    value = s.value
    if isinstance(value, gast.Name):
        return value.id in changed
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
        return getattr(value.operand, "id", None) in changed
    if isinstance(value, gast.BinOp) and _exact_binop(value, dbl, facts):
        return bool(S.loaded_names(value) & changed)
    return False


def _exact_binop(value, dbl, facts):
    """``a op b`` of doubles and ints that a Python float computes as np.float64 does,
    but where it raises: the four operations, and powers with an integral constant."""
    def operand(node):
        return (isinstance(node, gast.Constant) and type(node.value) in (int, float)
                or isinstance(node, gast.Name) and (node.id in dbl or node.id in facts.ints))

    if not (operand(value.left) and operand(value.right)):
        return False
    if isinstance(value.op, gast.Pow):
        exponent = value.right
        return isinstance(exponent, gast.Constant) and float(exponent.value).is_integer()
    return isinstance(value.op, _EXACT_OPS)


def _unsafe_loads(s, facts, changed, dbl, tests):
    """The changed names statement ``s`` reads (in its own expressions) where a Python
    float could differ from an np.float64: each is turned back first."""
    loads = set().union(*map(S.loaded_names, _own_expressions(s))) & changed
    if not loads:
        return loads
    if isinstance(s, (gast.If, gast.While)):
        return set() if isinstance(s.test, gast.Name) else loads
    if not isinstance(s, gast.Assign) or _target(s) is None:
        return loads
    value, op, target = s.value, facts.ops[id(s)], _target(s)
    if isinstance(value, gast.Name) or (
            isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd))):
        return set() if target in dbl else loads
    if isinstance(value, gast.BinOp):
        return set() if target in dbl and _exact_binop(value, dbl, facts) else loads
    if _bool_valued(value):
        primal = S.loaded_names(value) & facts.primal
        exact = all(n in dbl or n in facts.ints for n in primal)
        return set() if exact and target in tests else loads
    if isinstance(value, gast.Call) and not op.kwargs and (
            op.fn in _FLOAT_MATH or isinstance(op.fn, np.ufunc)) and all(
            isinstance(a, gast.Constant) or getattr(a, "id", None) in dbl
            or getattr(a, "id", None) in facts.ints for a in op.inputs):
        return set()  # math and ufuncs take a float as they take an np.float64
    return loads


def _own_expressions(s):
    """The expressions statement ``s`` itself evaluates (not those of its body)."""
    if isinstance(s, gast.Assign):
        return [s.value] + [t for t in s.targets if not isinstance(t, gast.Name)]
    if isinstance(s, (gast.If, gast.While)):
        return [s.test]
    if isinstance(s, gast.For):
        return [s.iter]
    if isinstance(s, (gast.Return, gast.Expr)):
        return [s.value] if s.value is not None else []
    return []


def _rename_loads(s, name, fresh):
    for expr in _own_expressions(s):
        for node in S.walk(expr):
            if isinstance(node, gast.Name) and node.id == name and isinstance(
                    node.ctx, gast.Load):
                node.id = fresh
    if isinstance(s, gast.Return) and isinstance(s.value, gast.Name) and s.value.id == name:
        s.value.id = fresh


def general_kinds(kinds):
    """The kinds of a unit made for NumPy values: a Python float is a number."""
    return tuple(True if k in DOUBLE_KINDS else k for k in kinds)


def guard(unit, reference, stand_ins=()):
    """Make ``unit`` (specialised) run the general unit ``reference()`` instead when
    its forward or its backward pass raises: see the module doc.  The arguments at
    ``stand_ins`` (floats passed for np.float64s, kind ``"float64"``) are turned back
    for it: it computes with NumPy's semantics, the caller's.

    Its tape is ``(general unit or None, saved, args)``: a backward pass that
    raises runs the general forward pass again on the same arguments."""
    forward, backward = unit.forward, unit.backward

    def as_given(args):
        if not stand_ins:
            return args
        return [as_float64(a) if i in stand_ins else a for i, a in enumerate(args)]

    def guarded_forward(*args):
        try:
            y, saved = forward(*args)
        except Exception:
            general = reference()
            y, saved = general.forward(*as_given(args))
            return y, (general, saved, None)
        return y, (None, saved, args)

    def guarded_backward(tape, g):
        general, saved, args = tape
        if general is not None:
            return general.backward(saved, g)
        try:
            return backward(saved, g)
        except Exception:
            general = reference()
            return general.backward(general.forward(*as_given(args))[1], g)

    unit.forward, unit.backward = guarded_forward, guarded_backward
    unit.specialised = True


def reference_of(unit, cache, key):
    """A function giving the general unit of ``unit``'s function for the cache ``key``
    (kinds made general): held weakly, as the cache holds functions."""
    owner = weakref.ref(unit)

    def reference():
        return cache.get(owner().fn, *key)

    return reference

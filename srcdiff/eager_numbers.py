"""Python numbers made of Tensors, where srcdiff runs code written for the compiler on the tape.

The tape records operations on Tensors; a Python number made of one (``float(t)``,
``math.sin(t)``, ``t.item()``, ``t.tolist()``) is a constant to it, as it is to
TensorFlow.  The compiler differentiates those conversions: ``math.sin`` has a rule,
``float`` is the identity.  So where srcdiff itself runs a function written for the
compiler on eager tapes (a derivative of a derivative, the backward step of a
compiled call that an outer tape records, ``fallback="eager"``), the tape would
drop silently what the compiled code keeps.  :func:`exactly` runs such a function:

* the ``math`` module and ``float`` its code reads as globals (and ``math``
  functions bound to global names: ``from math import sin``) are replaced by twins
  that, given a Tensor, raise what ``math`` would raise for its value and then apply
  the NumPy function computing the same number, which the tape records (in float64,
  as ``math`` computes);
* any other conversion of a Tensor a recording tape follows to a Python number
  (:func:`refuse_number`: ``float``, ``complex``, ``item``, ``tolist``, ``numpy``
  in a helper with globals of its own, say) raises :class:`CompileError`.  ``int``,
  ``bool`` and ``index`` stay allowed: their derivative is zero where it exists.

Invariant: while :func:`exactly` runs, a tape records every dependence the compiler
would differentiate, or the call raises; outside it the tape keeps TensorFlow's
behaviour.
"""
import dis
import functools
import math
import types

import numpy as np

from ._recording import STATE
from .compiler.errors import CompileError
from .rules.numbers import MATH_TWINS
from .tensor import _ArrayLike, _refuse_if_followed, cast, followed

# math functions of a number whose derivative is zero wherever it exists
_FLAT = (math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite)


def _value(a):
    return a._item() if isinstance(a, _ArrayLike) else a


def _twin(math_fn, numpy_fn):
    @functools.wraps(math_fn)
    def twin(*args):
        if not any(isinstance(a, _ArrayLike) for a in args):
            return math_fn(*args)
        math_fn(*map(_value, args))  # its errors: a domain, a size, a complex value
        return numpy_fn(*[cast(a, np.float64) if isinstance(a, _ArrayLike) else a
                          for a in args])
    return twin


def _flat(math_fn):
    @functools.wraps(math_fn)
    def flat(*args):
        return math_fn(*map(_value, args))
    return flat


def _float(x=0.0):
    """``float`` with a Tensor's derivative: the number as a 0-d float64 Tensor."""
    if not isinstance(x, _ArrayLike):
        return float(x)
    float(x._item())  # a Tensor of one element, and not complex
    return cast(x, np.float64).reshape(())


_MATH = types.ModuleType("math", "The math module, whose functions record their Tensors.")
_MATH.__dict__.update({k: v for k, v in vars(math).items() if not k.startswith("__")})
_MATH.__dict__.update({f.__name__: _twin(f, t) for f, t in MATH_TWINS.items()})
_MATH.__dict__.update({f.__name__: _flat(f) for f in _FLAT})
_REPLACEMENTS = {id(math): _MATH, **{id(f): getattr(_MATH, f.__name__)
                                     for f in (*MATH_TWINS, *_FLAT)}}


class _Overlay(dict):
    """Globals that are the live ``base``'s but for the replacements it holds itself."""

    def __init__(self, base, replacements):
        super().__init__(replacements)
        self.base = base

    def __missing__(self, name):
        return self.base[name]


def _with_twins(fn):
    """``fn`` reading the twins instead of ``math`` and ``float`` in its globals, its
    closure and its defaults, or ``fn`` itself when it reads none of them.  Never
    where ``fn`` writes them (a global, a ``nonlocal``): those writes must reach the
    scope they belong to."""
    if not isinstance(fn, types.FunctionType):
        return fn
    code = fn.__code__
    names, writes = _globals_of(code)
    live = fn.__globals__
    replacements = {} if writes else {n: _REPLACEMENTS[id(live[n])] for n in names
                                      if n in live and id(live[n]) in _REPLACEMENTS}
    if "float" in names and "float" not in live and not writes:
        replacements["float"] = _float
    cells = fn.__closure__ or ()
    if cells and not _writes_cells(code):
        cells = tuple(types.CellType(_REPLACEMENTS[id(c.cell_contents)])
                      if _holds_replaced(c) else c for c in cells)
    defaults = fn.__defaults__ and tuple(_REPLACEMENTS.get(id(d), d)
                                         for d in fn.__defaults__)
    if not replacements and cells == (fn.__closure__ or ()) and defaults == fn.__defaults__:
        return fn
    twin = types.FunctionType(code, _Overlay(live, replacements) if replacements else live,
                              fn.__name__, defaults, cells or None)
    twin.__kwdefaults__ = fn.__kwdefaults__
    return twin


def _holds_replaced(cell):
    try:
        return id(cell.cell_contents) in _REPLACEMENTS
    except ValueError:  # an empty cell: a local not yet assigned
        return False


@functools.lru_cache(maxsize=512)
def _writes_cells(code):
    return any(i.opname in ("STORE_DEREF", "DELETE_DEREF") and i.argval in code.co_freevars
               for i in dis.get_instructions(code))


@functools.lru_cache(maxsize=512)
def _globals_of(code):
    """The names ``code`` and the code nested in it may read as globals, and whether
    any of it writes a global."""
    names = set(code.co_names)
    writes = any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")
                 for i in dis.get_instructions(code))
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            inner, inner_writes = _globals_of(c)
            names |= inner
            writes |= inner_writes
    return frozenset(names), writes


def exactly(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on the eager tapes, recording what the compiler
    differentiates.  Where the tape cannot follow what the code does with a Tensor
    (NumPy writing it into an ndarray, ``out[i] = t``, or turning it into one,
    ``np.array([t, 1.0])``), the call raises CompileError: the code is valid for the
    compiler, which differentiates it, so NumPy's TypeError or ValueError would only
    say that this route cannot."""
    STATE.exact += 1
    try:
        return _with_twins(fn)(*args, **kwargs)
    except (TypeError, ValueError) as error:
        refusal = _refusal_behind(error)
        if refusal is None:
            raise
        raise refusal from error
    finally:
        STATE.exact -= 1


def _refusal_behind(error):
    """The CompileError that ``error`` stands for, or None: one NumPy turned into a
    ValueError (``out[i] = t`` calls ``float(t)``, which :func:`refuse_number` refuses),
    or the tape's refusal of a Tensor NumPy converted into an ndarray."""
    seen = error
    while seen is not None:
        if isinstance(seen, CompileError):
            return seen
        seen = seen.__cause__ or seen.__context__
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    if tb.tb_frame.f_code is not _refuse_if_followed.__code__:
        return None
    return CompileError(
        f"{error} srcdiff runs this function on the eager tape for a derivative of a "
        "derivative (or for fallback='eager'), and the tape cannot follow that.",
        hint="Build arrays of differentiated values with np.stack or np.concatenate, "
             "not np.array([...]) or writes into an ndarray (out[i] = v).")


def refuse_number(value, how):
    """Raise CompileError if ``value`` is followed by a recording tape while
    :func:`exactly` runs: turning it into a Python number (``how``) would drop its
    derivative, which the compiler keeps."""
    if STATE.exact and followed(value):
        raise CompileError(
            f"{how} of a value being differentiated makes a Python number, which carries "
            "no derivative on the eager tape: srcdiff runs this function on the tape for a "
            "derivative of a derivative (or for fallback='eager'); NumPy makes one too, to "
            "write it into an ndarray (out[i] = v). Use the NumPy function "
            "(np.sin, np.asarray(x, dtype=float)), or math and float in the function itself.")

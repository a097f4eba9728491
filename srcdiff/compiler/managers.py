"""``with`` blocks over context managers that change no value and no path.

``with np.errstate(divide="ignore"): body`` only changes which floating-point
warnings NumPy shows; ``warnings.catch_warnings()`` only restores the warning
filters the body sets.  Such a block computes what its body computes, so every pass
treats it as a branch that is always taken: the normaliser makes it
``if <Manager>: body``, whose test is a constant :class:`Manager` (true; it carries
the ``with`` items, and survives the passes' copies).  Code generation
(``as_with``) writes each such branch back as ``with <items>: body``, in the forward
pass and in the backward pass alike, so the adjoint of the body runs under the same
manager (with the warning filters the body set first replayed: a
``warnings.simplefilter("ignore")`` at its start silences the adjoint's warnings too).

Only the managers of ``_MANAGERS`` are modelled, with constant arguments that keep
control flow as it is (``np.errstate(all="raise")`` would turn a warning of the
adjoint into an error that the eager tape does not raise); a ``with ... as name``,
or any other manager (``contextlib.suppress`` changes the path taken), is refused.
"""
import contextlib
import warnings

import gast
import numpy as np

from . import syntax as S

_QUIET = ("ignore", "warn")
_ACTIONS = ("default", "error", "ignore", "always", "module", "once")
# manager -> {keyword: the constant values it may take}
_MANAGERS = {
    np.errstate: {k: _QUIET for k in ("all", "divide", "over", "under", "invalid")},
    warnings.catch_warnings: {"record": (True, False), "action": tuple(
        a for a in _ACTIONS if a != "error")},
    np.printoptions: None,  # any constant: printing only
    contextlib.nullcontext: {},
}
_FILTERS = (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings)
_HINT = ("Move the with-block outside the function you differentiate; np.errstate "
         "(ignore or warn), warnings.catch_warnings, np.printoptions and "
         "contextlib.nullcontext without 'as' are compiled.")


class Manager:
    """The constant test of a branch that stands for a ``with`` block: its items, and
    the statements its adjoint replays first (``prologue``)."""

    def __init__(self, items, prologue=(), backward=False):
        self.items = items
        self.prologue = tuple(prologue)
        self.backward = backward

    def adjoint(self):
        return Manager(self.items, self.prologue, backward=True)

    def __bool__(self):
        return True

    def __deepcopy__(self, memo):
        return self  # never changed: shared by every copy of the branch

    def __repr__(self):  # what checks.py compares between the passes
        return "with " + ", ".join(gast.unparse(S.copy_node(i.context_expr)).strip()
                                   for i in self.items)


def lower_with(s, resolve, source_map):
    """The test of the branch standing for the ``with`` statement ``s``: a Manager
    (a CompileError for a manager not modelled)."""
    for item in s.items:
        _check_item(item, resolve, source_map)
    prologue = []
    for b in s.body:  # the filters set first: replayed before the body's adjoint
        if not (isinstance(b, gast.Expr) and _resolved(b.value, resolve) in _FILTERS
                and all(isinstance(a, gast.Constant) for a in _arguments(b.value))):
            break
        prologue.append(S.copy_node(b))
    return Manager([S.copy_node(i) for i in s.items], prologue)


def _check_item(item, resolve, source_map):
    call = item.context_expr
    if item.optional_vars is not None:
        raise source_map.error(item.optional_vars, "'with ... as name' is not supported",
                               hint="Drop 'as name'. " + _HINT)
    fn = _resolved(call, resolve)
    if fn not in _MANAGERS:
        raise source_map.error(call, "this 'with' is not supported: only context managers "
                                     "that change no value and no path are", hint=_HINT)
    allowed = _MANAGERS[fn]
    if allowed is not None and call.args or not all(
            isinstance(a, gast.Constant) for a in _arguments(call)):
        raise source_map.error(call, "a context manager's arguments must be constant "
                                     "keywords", hint=_HINT)
    for k in call.keywords:
        if allowed is not None and (k.arg not in allowed or k.value.value not in allowed[k.arg]):
            raise source_map.error(k.value, f"{k.arg}={k.value.value!r} is not supported in "
                                            "a with-block: it may change the path taken",
                                   hint=_HINT)


def _arguments(call):
    return list(call.args) + [k.value for k in call.keywords]


def _resolved(node, resolve):
    if not isinstance(node, gast.Call):
        return None
    try:
        return resolve(node.func)
    except (KeyError, TypeError):
        return None


def manager_of(s):
    """The Manager of a branch standing for a ``with`` block, else None."""
    test = getattr(s, "test", None)
    if isinstance(s, gast.If) and isinstance(test, gast.Constant) and isinstance(
            test.value, Manager):
        return test.value
    return None


def as_with(s):
    """The ``with`` statement a Manager's branch ``s`` stands for (its else never
    runs: the test is true); an adjoint's replays the body's filters first."""
    manager = manager_of(s)
    prologue = [S.copy_node(p) for p in manager.prologue] if manager.backward else []
    return gast.With(items=[S.copy_node(i) for i in manager.items],
                     body=prologue + s.body, type_comment=None)

"""Names in generated code: fresh ones that collide with nothing, and the ones
generated code reads as globals, which no local may shadow.

Invariant: a name :class:`Names` hands out is a valid identifier, never a Python
keyword, never taken by the function, and never one generated code reads as a
global (``reserved()``); user locals with such names are renamed first.
"""
import dis
import functools
import keyword

import gast
import numpy as np

from .. import rules
from ..rules import containers, helpers
from . import syntax as S


# Bare names the passes emit besides srcdiff's helpers: loops replayed backwards
# (``for _ in range(n)``, ``reversed``), the backward pass's ``tape`` parameter,
# sequences indexed (``len``, ``min``, ``slice``), methods as NumPy (``float``, ``cast``,
# ``conj_method``),
# what an adjoint keeps of a value it only measures (``shape_of``), a local bound
# only to be saved and the check of a read of it (``UNBOUND``, ``unbound``), the free
# names' values read when the function runs (``free_values``), the copy of a view a
# write is about to change (``snapshot``) and a container's item it replaces
# (``old_item``, ``put_back``), a list as it was before a change in place (``as_it_is``),
# arithmetic written into an owned adjoint (``into``), the lean unit's check of an array
# to write into (``spare``), an input's adjoint among those a registered rule returned
# (``rule_adjoint``), the checks of an update in place (``unshared``, ``item_unshared``),
# the copy of a restored value that may be unbound (``own_copy``).
FREE_VALUES = "free_values"
EMITTED = frozenset({"np", "tape", "_", "range", "reversed", "len", "min", "float", "slice",
                     "cast", "shape_of", "UNBOUND", "unbound", FREE_VALUES, "snapshot",
                     "old_item", "put_back", "as_it_is", "into", "spare", "rule_adjoint",
                     "conj_method", "unshared", "item_unshared", "own_copy"})
# Compiled callees are bound as NAME_forward and NAME_backward.
CALLEE_SUFFIXES = ("_forward", "_backward")


def reserved():
    """Every name generated code may read as a global: what the passes emit, the
    helpers, the functions rules are called or run by, and the globals rule bodies
    read (inlined, they read them from the generated code's namespace)."""
    table = rules.all_rules()
    version = tuple(map(id, table.values()))  # a rule added or replaced changes it
    if _RESERVED[0] != version:
        _RESERVED[:] = [version, _reserved_by(table)]
    return _RESERVED[1]


_RESERVED = [None, frozenset()]  # (the rule table's version, its names)


def _reserved_by(table):
    names = set(EMITTED) | {n for module in (helpers, containers) for n in vars(module)
                            if not n.startswith("__")}
    for primitive, rule in table.items():
        for fn in _parts(primitive, rules.registry.RAW.get(primitive), rule.argnum_vjp,
                         *rule.vjps):
            if not _numpy_named(fn):  # a call of it is written np.NAME, else NAME
                names.add(getattr(fn, "__name__", ""))
            code = getattr(fn, "__code__", None)
            if code is not None:
                names |= _globals_read(code)
    return frozenset(n for n in names if n.isidentifier())


def _parts(*fns):
    """The functions among ``fns`` and inside their partials: a rule given to
    ``sd.register_gradient`` is registered as ``partial(_select_adjoint, rule)``."""
    for fn in fns:
        if isinstance(fn, functools.partial):
            yield from _parts(fn.func, *fn.args)
        elif callable(fn):
            yield fn


def _numpy_named(fn):
    name = getattr(fn, "__name__", None)
    return name is not None and fn in (getattr(np, name, None), getattr(np.linalg, name, None))


def _globals_read(code):
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            names |= _globals_read(const)
    return names


class Names:
    """Fresh names that collide with nothing in the function, are never a Python
    keyword (an adjoint ``d`` + ``el`` is not ``del``) and never a name the generated
    code reads as a global (``reserved()``, ``CALLEE_SUFFIXES``).

    ``taken`` only ever grows, so once ``hint_k`` is taken it stays taken: each hint
    keeps where its last search stopped instead of scanning ``hint_1, ...`` again."""

    def __init__(self, taken):
        self.taken = set(taken) | set(keyword.kwlist)
        self.reserved = reserved()
        self._next = {}  # hint -> a k such that hint_1 ... hint_{k-1} are all taken

    def reserves(self, name):
        """Whether generated code may read ``name`` as a global."""
        return name in self.reserved or name.endswith(CALLEE_SUFFIXES)

    def _free(self, name):
        return name not in self.taken and not self.reserves(name)

    def fresh(self, hint):
        hint = hint.strip("_") or "t"
        if not hint[0].isalpha():  # "__1_tape" of a target "__1": "1_tape" is no name
            hint = "t" + hint
        if self._free(hint):
            self.taken.add(hint)
            return hint
        return self.temp(hint)

    def temp(self, hint):
        """A name for an intermediate value computed for ``hint`` (``h`` -> ``h_1``):
        ``hint_k`` with the smallest free ``k``."""
        k = self._next.get(hint, 1)
        while not self._free(f"{hint}_{k}"):
            k += 1
        self._next[hint] = k + 1
        self.taken.add(f"{hint}_{k}")
        return f"{hint}_{k}"

    def rename_reserved(self, node):
        """Rename the locals (parameters too) of the FunctionDef ``node`` that would
        shadow a global of the generated code: a variable ``reversed`` becomes
        ``reversed_1``.  Free names are the user's globals: never renamed."""
        local = {a.id for a in node.args.args} | S.assigned_names(node.body)
        renamed = {n: self.temp(n) for n in sorted(local) if self.reserves(n)}
        for n in S.walk(node):
            if isinstance(n, gast.Name) and n.id in renamed:
                n.id = renamed[n.id]

"""Expressions to atoms: the expression half of the normaliser (normalize.py).

:class:`ExpressionLowering` turns an expression into one operation on atoms
(``simple``) or into an atom (``atom``), emitting an assignment to a fresh name for
each operation it takes out; conditions are kept whole (their value is a bool);
methods and array attributes become NumPy calls.  Invariant: what ``atom`` returns
is a name or a constant (or a module constant such as ``np.pi``), and each
statement emitted is in the grammar of normalize.py's docstring.
"""
import functools
import inspect

import gast
import numpy as np

from ..rules import containers
from ..rules.shapes import SEQUENCE_FORMS
from . import folds, mutators
from . import syntax as S
from .comprehensions import as_loops
from .methods import as_function_call
from . import walrus


# ndarray methods and attributes numeric code uses, as the NumPy functions they are.
METHODS = {
    "sum": "sum", "mean": "mean", "max": "max", "min": "min", "prod": "prod", "var": "var",
    "std": "std", "dot": "dot", "copy": "copy", "flatten": "ravel", "ravel": "ravel",
    "squeeze": "squeeze", "clip": "clip", "cumsum": "cumsum", "argmax": "argmax",
    "argmin": "argmin", "trace": "trace",
    "swapaxes": "swapaxes", "any": "any", "all": "all", "round": "round",
    "diagonal": "diagonal", "cumprod": "cumprod", "repeat": "repeat", "take": "take",
}
VARARG_METHODS = {"reshape": "reshape", "transpose": "transpose"}
DICT_VIEWS = ("keys", "values", "items")  # as lists (Normalizer.dict_view)
ARRAY_ATTRIBUTES = {"T": "transpose", "real": "real", "imag": "imag"}
STATIC_ATTRIBUTES = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes"}
# expressions kept whole: an error later only if an active value flows in
KEPT_WHOLE = (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp, gast.Dict,
              gast.Set, gast.JoinedStr)


class ExpressionLowering:
    def __init__(self, names, source_map, resolve):
        self.names = names
        self.source_map = source_map
        self.resolve = resolve   # expr -> object, KeyError for local names
        self.out = None          # the statements emitted so far, in the current block

    def emit(self, node, like=None):
        """Append ``node``; new nodes inside it take the location of ``like``."""
        if like is not None and hasattr(like, "lineno"):
            for n in S.walk(node):
                if isinstance(n, (gast.stmt, gast.expr)) and not hasattr(n, "lineno"):
                    gast.copy_location(n, like)
        self.out.append(node)

    def condition(self, test, hint="cond"):
        """A name holding the truth value of ``test`` (kept whole: bools have no adjoint)."""
        if isinstance(test, gast.Name):
            return test
        if isinstance(test, gast.Constant):
            return test
        if S.is_boolean(test):
            value = self.inactive(test)
        else:
            value = self.simple(test, hint)
        name = self.names.temp(hint) if hint == "cond" else hint
        self.emit(S.assign(name, value), test)
        return S.name(name)

    def inactive(self, node):
        """An expression evaluated as written (a condition: its value is a bool); a
        walrus where Python always evaluates it, first, is taken out (walrus.py)."""
        if isinstance(node, gast.BoolOp) and _has_walrus(node.values[0]):
            node = gast.BoolOp(op=node.op, values=[self.kept(node.values[0])]
                               + node.values[1:])
        elif isinstance(node, gast.Compare) and _has_walrus(node, node.comparators[1:]):
            first = node.comparators[0]
            node = gast.Compare(left=self.atom(node.left, "t"), ops=node.ops, comparators=[
                self.atom(first, "t") if _has_walrus(first) else first]
                + node.comparators[1:])
        elif (isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not)
              and _has_walrus(node.operand)):
            node = gast.UnaryOp(op=node.op, operand=self.kept(node.operand))
        walrus.refuse_kept(node, self.source_map)
        return node

    def kept(self, node):
        """``node`` with its walrus taken out, kept whole if it is a condition."""
        return self.inactive(node) if S.is_boolean(node) else self.atom(node, "t")

    def walrus(self, node):
        """``n := v``: ``n = v`` emitted now, and ``n`` read (walrus.py)."""
        target = node.target.id
        self.emit(S.assign(target, self.simple(node.value, target)), node)
        return S.name(target)

    def atom(self, node, hint, force_temp=False):
        """A Name or Constant holding the value of ``node``."""
        if S.is_atom(node) and not force_temp:
            return node
        if self.is_static(node) and not force_temp:
            return node
        if isinstance(node, gast.NamedExpr) and not force_temp:
            return self.walrus(node)
        value = self.simple(node, hint)
        name = self.names.temp(hint)
        self.emit(S.assign(name, value), node)
        return S.name(name)

    def is_static(self, node):
        """A module attribute such as ``np.pi`` or ``np.float32``: a constant here."""
        if isinstance(node, gast.Attribute):
            try:
                obj = self.resolve(node)
            except KeyError:
                return False
            return not callable(obj) or isinstance(obj, type)
        return False

    def simple(self, node, hint):
        """One primitive operation on atoms that computes ``node``."""
        if S.is_atom(node) or self.is_static(node):
            return node
        if isinstance(node, gast.BinOp):
            return gast.BinOp(left=self.atom(node.left, hint), op=node.op,
                              right=self.atom(node.right, hint))
        if isinstance(node, gast.UnaryOp):
            if isinstance(node.op, gast.Not):
                return self.inactive(node)
            operand = self.atom(node.operand, hint)
            if isinstance(node.op, gast.UAdd):
                return operand
            if isinstance(operand, gast.Constant) and isinstance(node.op, gast.USub):
                return S.const(-operand.value)
            return gast.UnaryOp(op=node.op, operand=operand)
        if S.is_boolean(node):
            return self.inactive(node)
        if isinstance(node, gast.Call):
            return self.call(node, hint)
        if isinstance(node, gast.Subscript):
            value = self.atom(node.value, hint)
            return gast.Subscript(value=value, slice=self.index(node.slice, hint),
                                  ctx=gast.Load())
        if isinstance(node, gast.Attribute):
            return self.attribute(node, hint)
        if isinstance(node, gast.IfExp):
            name = self.names.temp(hint)
            test = self.condition(node.test)
            saved, self.out = self.out, []
            self.emit(S.assign(name, self.simple(node.body, hint)), node)
            body, self.out = self.out, []
            self.emit(S.assign(name, self.simple(node.orelse, hint)), node)
            orelse, self.out = self.out, saved
            self.emit(gast.If(test=test, body=body, orelse=orelse), node)
            return S.name(name)
        if isinstance(node, (gast.Tuple, gast.List)):
            elts = [self.atom(e, hint) for e in node.elts]
            return type(node)(elts=elts, ctx=gast.Load())
        if isinstance(node, (gast.ListComp, gast.DictComp)):
            return self.comprehension(node, node)
        if isinstance(node, gast.Dict) and None not in node.keys:  # {**d}: kept whole
            return gast.Dict(keys=[self.atom(k, "key") for k in node.keys],
                             values=[self.atom(v, hint) for v in node.values])
        if isinstance(node, gast.Lambda):
            raise self.source_map.error(node, "a lambda is not supported: its body cannot be "
                                        "differentiated where it is called",
                                        hint="Define it with 'def' at module level.")
        if isinstance(node, KEPT_WHOLE):
            walrus.refuse_kept(node, self.source_map)
            return node  # kept whole: an error later only if an active value flows in
        if isinstance(node, (gast.Yield, gast.YieldFrom)):
            raise self.source_map.error(node, "generators are not supported",
                                        hint="Return a list or an array instead of yielding.")
        if isinstance(node, gast.NamedExpr):
            return self.walrus(node)
        raise self.source_map.error(node, f"'{type(node).__name__}' expressions are not "
                                    "supported", hint="Compute the value before the call, "
                                    "or in a function called on its result.")

    def comprehension(self, node, whole):
        """The name of the list a comprehension makes, its loops emitted first; ``whole``
        if it is not modelled (kept whole, to be refused if a gradient reaches it)."""
        lowered = as_loops(node, self.names)
        if lowered is None:
            return whole
        stmts, result = lowered
        for st in stmts:
            self.stmt(st)  # the statements half of the normaliser (normalize.py)
        return S.name(result)

    def index(self, node, hint):
        """An index whose parts are atoms: ``x[i, 1:n]``, ``x[:, None]``."""
        if isinstance(node, gast.Slice):
            parts = [None if p is None else self.atom(p, "i") for p in
                     (node.lower, node.upper, node.step)]
            return gast.Slice(lower=parts[0], upper=parts[1], step=parts[2])
        if isinstance(node, gast.Tuple):
            return gast.Tuple(elts=[self.index(e, hint) for e in node.elts], ctx=gast.Load())
        if isinstance(node, gast.Constant) or (isinstance(node, gast.Attribute)
                                               and self.is_static(node)):
            return node
        return self.atom(node, "i")

    def attribute(self, node, hint):
        value = node.value
        try:
            self.resolve(node)
            return node  # a module-level object, e.g. np.newaxis
        except KeyError:
            pass
        if node.attr in STATIC_ATTRIBUTES:
            return gast.Attribute(value=self.atom(value, hint), attr=node.attr, ctx=gast.Load())
        if node.attr in ARRAY_ATTRIBUTES:
            return _array_method(_np_call(ARRAY_ATTRIBUTES[node.attr],
                                          [self.atom(value, hint)], []), node.attr)
        return gast.Attribute(value=self.atom(value, hint), attr=node.attr, ctx=gast.Load())

    def call(self, node, hint):
        node = as_function_call(node, self.resolve) or node  # M(x), M.f(x): methods
        func = node.func
        if any(isinstance(a, gast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.source_map.error(node, "calls with *args or **kwargs are not supported",
                                        hint="Pass the arguments one by one.")
        if mutators.lowers(node, self._resolves):  # xs.pop(), d.update(...): rebindings
            return mutators.lower(self, node)
        if isinstance(func, gast.Attribute) and not self._resolves(func):
            # a method of a local value: x.sum(axis=0) -> np.sum(x, axis=0)
            obj = self.atom(func.value, hint)
            args = [self.call_arg(a, hint) for a in node.args]
            keywords = [gast.keyword(arg=k.arg, value=self.call_arg(k.value, hint))
                        for k in node.keywords]
            if func.attr in METHODS:
                return _array_method(_np_call(METHODS[func.attr], [obj] + args, keywords),
                                     func.attr)
            if func.attr in VARARG_METHODS:
                if len(args) != 1:
                    args = [gast.Tuple(elts=args, ctx=gast.Load())] if args else []
                return _array_method(_np_call(VARARG_METHODS[func.attr], [obj] + args,
                                              keywords), func.attr)
            if func.attr == "astype":
                return gast.Call(func=S.name("cast"), args=[obj] + args, keywords=keywords)
            if func.attr in ("conj", "conjugate") and not args and not keywords:
                return gast.Call(func=S.name("conj_method"), args=[obj], keywords=[])
            if func.attr == "item" and not keywords:
                return gast.Call(func=S.name("item"), args=[obj] + args, keywords=[])
            if func.attr in DICT_VIEWS and not args and not keywords and getattr(
                    node, "srcdiff_consumed", False):
                return self.dict_view(obj, func.attr, node)
            return gast.Call(func=gast.Attribute(value=obj, attr=func.attr, ctx=gast.Load()),
                             args=args, keywords=keywords)
        resolved = self._resolved(func)
        if resolved is functools.reduce:  # the loop it runs (folds.py)
            stmts, result = folds.as_loop(node, self.names, self.resolve, self.source_map)
            for st in stmts:
                self.stmt(st)  # the statements half of the normaliser (normalize.py)
            return S.name(result)
        zipped = self.zipped(node, resolved)
        if zipped is not None:
            return self.simple(gast.copy_location(zipped, node), hint)
        whole = resolved in containers.WHOLE and resolved not in SEQUENCE_FORMS  # np.array([a])
        if resolved in SEQUENCE_FORMS:  # multi_dot([a, b, c]): each its input
            args = [self.literal_arg(a, hint) for a in node.args]
            keywords = [gast.keyword(arg=k.arg, value=self.call_arg(k.value, hint))
                        for k in node.keywords]
            return gast.Call(func=func, args=args, keywords=keywords)
        if _consumes_at_once(resolved):
            for a in node.args:  # sorted(d.keys()): the view as the list it holds now
                if isinstance(a, gast.Call) and isinstance(a.func, gast.Attribute) and (
                        a.func.attr in DICT_VIEWS):
                    a.srcdiff_consumed = True
        args = [self.call_arg(a, hint) for a in node.args]
        for k in _data_positions(resolved, len(args), whole):
            if isinstance(args[k], gast.Tuple) and not _constant(args[k]):  # np.sum((a, b))
                args[k] = self.atom(args[k], hint)
        keywords = [gast.keyword(arg=k.arg, value=self.call_arg(k.value, hint))
                    for k in node.keywords]
        if not isinstance(func, (gast.Name, gast.Attribute)):
            func = self.atom(func, hint)
        return gast.Call(func=func, args=args, keywords=keywords)

    def zipped(self, node, fn):
        """``dict(zip(ks, vs))``, ``list(zip(a, b))`` or ``tuple(zip(a, b))`` as the
        comprehension it equals, ``{k: v for k, v in zip(ks, vs)}`` and the like (a loop
        over ``zip``, which normalize.py models), or None for any other call."""
        if fn not in (dict, list, tuple) or len(node.args) != 1 or node.keywords:
            return None
        inner = node.args[0]
        if not (isinstance(inner, gast.Call) and self._resolved(inner.func) is zip
                and inner.args and not inner.keywords
                and not any(isinstance(a, gast.Starred) for a in inner.args)
                and (fn is not dict or len(inner.args) == 2)):
            return None
        items = [S.name(self.names.fresh("item")) for _ in inner.args]
        loop = gast.comprehension(
            target=gast.Tuple(elts=[S.name(i.id, gast.Store()) for i in items],
                              ctx=gast.Store()),
            iter=inner, ifs=[], is_async=0)
        if fn is dict:
            return gast.DictComp(key=items[0], value=items[1], generators=[loop])
        made = gast.ListComp(elt=gast.Tuple(elts=items, ctx=gast.Load()), generators=[loop])
        return made if fn is list else gast.Call(func=node.func, args=[made], keywords=[])

    def dict_view(self, d, attr, at):
        """``d.keys()`` as the list of its keys (``list(d)``, no gradient: runtime.Keys);
        ``d.values()`` and ``d.items()`` as the lists ``[d[k] for k in d.keys()]`` and
        ``[(k, d[k]) for ...]``, whose loop is a dict loop (normalize.py): lists where
        Python gives views, so only for a call that reads them at once
        (``_consumes_at_once``); a view kept for later, which follows ``d``, stays
        unmodelled (refused when a gradient reaches it)."""
        if attr == "keys":
            return gast.copy_location(keys_of(d), at)
        key = S.name(self.names.fresh("key"))
        item = gast.Subscript(value=d, slice=key, ctx=gast.Load())
        comp = gast.ListComp(
            elt=item if attr == "values" else gast.Tuple(elts=[key, item], ctx=gast.Load()),
            generators=[gast.comprehension(
                target=S.name(key.id, gast.Store()), is_async=0, ifs=[],
                iter=gast.Call(func=gast.Attribute(value=d, attr="keys", ctx=gast.Load()),
                               args=[], keywords=[]))])
        for n in S.walk(comp):
            gast.copy_location(n, at)
        return self.comprehension(comp, comp)

    def literal_arg(self, node, hint):
        """An argument, a list or tuple literal kept as one (its items call arguments:
        an inner list a value of its own)."""
        if isinstance(node, (gast.List, gast.Tuple)):
            return type(node)(elts=[self.call_arg(e, hint) for e in node.elts],
                              ctx=gast.Load())
        return self.call_arg(node, hint)

    def call_arg(self, node, hint):
        if isinstance(node, gast.GeneratorExp):  # consumed by the call, at once
            node = self.comprehension(node, node)
        if isinstance(node, gast.Attribute) and self._resolves(node):
            return node  # a module's function passed by name (np.tanh): an atom
        if isinstance(node, gast.List) and not _constant(node):  # np.sum([a, b]): a value
            return self.atom(node, hint)                       # whose items get adjoints
        if isinstance(node, (gast.List, gast.Tuple)):  # shapes (n, 3), indices (ids,)
            return type(node)(elts=[self.call_arg(e, hint) for e in node.elts], ctx=gast.Load())
        if S.is_boolean(node):
            return self.atom(node, "cond")
        return self.atom(node, hint)

    def _resolved(self, node):
        try:
            return self.resolve(node)
        except (KeyError, TypeError):
            return None

    def _resolves(self, node):
        try:
            self.resolve(node)
            return True
        except KeyError:
            return False


def keys_of(d, taken=False):
    """``list(d)`` of a dict ``d``: its keys, which carry no gradient (analysis reads the
    mark; runtime.Keys checks ``d`` is a mapping when it runs).  ``taken``: ``d`` was
    taken for a dict where Python does not say it is one (``for k in d``)."""
    listed = gast.Call(func=S.name("list"), args=[d], keywords=[])
    listed.srcdiff_keys = "taken" if taken else True
    return listed


def _constant(node):
    """Whether ``node`` is a constant, or a list or tuple of them (nested or not)."""
    if isinstance(node, (gast.List, gast.Tuple)):
        return all(_constant(e) for e in node.elts)
    return isinstance(node, gast.Constant)


def _consumes_at_once(fn):
    """Whether ``fn`` reads all of an iterable it is given before it returns, keeping
    nothing that follows the iterable (a NumPy function, and the builtins of
    ``_EAGER``, not ``zip`` or ``map``): given ``d.values()``, it may be given the
    list of them (``dict_view``), which a later change to ``d`` does not change."""
    if any(fn is eager for eager in _EAGER):
        return True
    return isinstance(fn, np.ufunc) or (getattr(fn, "__module__", None) or "").startswith(
        "numpy")


def _data_positions(fn, n, whole):
    """The positions of ``fn``'s arguments that take values, where a tuple literal is a
    value whose items get adjoints (elsewhere a literal stays in the call: shapes and
    axes, ``np.reshape(x, (n, 3))``): all of a Python function's or a ufunc's, the first of
    a NumPy function that does not take a shape first, or of a container-reading call
    (``whole``).  An active item of a literal left in place is refused (analysis.py)."""
    fn = getattr(fn, "__numpy__", fn)
    fn = getattr(fn, "python_function", fn)
    if isinstance(fn, np.ufunc) or inspect.isfunction(fn) and not (
            getattr(fn, "__module__", None) or "").startswith(("numpy", "srcdiff")):
        return range(n)
    if whole or _takes_values_first(fn):
        return range(min(n, 1))
    return ()


def _takes_values_first(fn):
    if not (getattr(fn, "__module__", None) or "").startswith("numpy"):
        return False
    try:
        first = next(iter(inspect.signature(fn).parameters), None)
    except (TypeError, ValueError):
        return False
    return first not in (None, "shape")


_EAGER = (list, tuple, sorted, sum, len, max, min, set, frozenset, dict, any, all)


def _has_walrus(node, outside=()):
    """Whether ``node`` holds a walrus outside the subtrees ``outside``."""
    skip = {id(n) for o in outside for n in S.walk(o)}
    return any(type(n) is gast.NamedExpr and id(n) not in skip for n in S.walk(node))


def _array_method(call, attr):
    """Mark ``np.f(obj)`` written ``obj.f()`` (containers.check_array_methods)."""
    call.srcdiff_method = attr
    return call


def _np_call(name, args, keywords):
    return gast.Call(func=gast.Attribute(value=S.name("np"), attr=name, ctx=gast.Load()),
                     args=args, keywords=keywords)



"""``**kwargs`` as parameters of their own: a helper is compiled for the keyword
names a call passes into its ``**kwargs``, as it is for a count of ``*args``.

Callee side (:func:`expand_kwargs`): ``def h(x, **kw)`` compiled for the names
``("scale", "bias")`` is ``def h(x, kw_scale, kw_bias)``, the new parameters after
every other (keyword-only ones and ``*args``' included) and before lifted ones:
``kw["scale"]`` and ``kw.get("scale", d)`` are ``kw_scale`` (``d`` for a name not
passed; ``kw["other"]`` is the literal's, a KeyError if it runs), ``"scale" in kw`` and ``len(kw)`` are constants, ``g(**kw)`` passes
``scale=kw_scale, bias=kw_bias`` and ``{**kw}`` spreads them likewise, and any other
read of ``kw`` is the dict literal ``{"scale": kw_scale, "bias": kw_bias}``, which
later passes model or refuse.  Invariant of the output: the function has no
``**kwargs`` and does not name it; a body that binds it again, writes into it or
calls a method that does (``pop``, ``update``, ...) is refused.

Caller side (:func:`keyword_call`): a call ``h(x, scale=s, bias=b)`` of such a
helper binds every named parameter by position (binding.py), then passes
``s, b`` by position, to a :class:`KeywordCall` standing for ``h`` called with
those names.  Its ``python_function`` is :func:`keyword_form` ``(h, names)``: a
copy of ``h`` (same code, globals, closure, defaults) that says the names, one per
``(h, names)``, so the cache holds one unit per set of names, keyed by that
object.  A call the compiled code does not compile (no active input) calls the
stand-in, which calls ``h`` with the keywords as written.
"""
import inspect
import types
import weakref

import gast

from . import syntax as S
from .varargs import expand_parameter

_FORMS = weakref.WeakKeyDictionary()  # function -> {names: its KeywordCall}
_WRITERS = {"pop", "popitem", "update", "setdefault", "clear"}


def keywords_of(fn):
    """The keyword names ``fn`` (a :func:`keyword_form`) is compiled for, or None."""
    return getattr(fn, "srcdiff_keywords", None)


def takes_kwargs(fn):
    return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())


def keyword_call(fn, names):
    """The :class:`KeywordCall` of ``fn`` for the keyword names ``names``."""
    per_fn = _FORMS.setdefault(fn, {})
    if names not in per_fn:
        per_fn[names] = KeywordCall(keyword_form(fn, names), names)
    return per_fn[names]


def keyword_form(fn, names):
    """A copy of ``fn`` that says it is compiled for the keyword names ``names``; it
    holds nothing of ``fn`` itself (``_FORMS`` keys on ``fn`` weakly)."""
    form = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    form.__kwdefaults__ = fn.__kwdefaults__
    form.__qualname__ = fn.__qualname__
    form.__module__ = fn.__module__
    form.srcdiff_keywords = tuple(names)
    return form


class KeywordCall:
    """``h`` called with the keyword names ``names`` passed by position: arguments
    are the positional ones (keyword-only parameters' values last), then one value
    per name.  Compiled code compiles ``python_function``; Python calls ``h``."""

    __slots__ = ("python_function", "names", "_kwonly")

    def __init__(self, form, names):
        self.python_function = form
        self.names = tuple(names)
        self._kwonly = [p.name for p in inspect.signature(form).parameters.values()
                        if p.kind is p.KEYWORD_ONLY]

    def __call__(self, *args):
        cut = len(args) - len(self.names)
        start = cut - len(self._kwonly)
        keywords = dict(zip(self._kwonly, args[start:cut]))
        keywords.update(zip(self.names, args[cut:]))
        return self.python_function(*args[:start], **keywords)


def call_keywords(call, fn, source_map):
    """Split the keywords of ``call`` (of ``fn``, which takes ``**kwargs``): (the ones
    naming a parameter of ``fn``, [(name, value) of the ones into its ``**kwargs``]);
    ``**{"k": v}`` literals are spread, any other ``**mapping`` refused."""
    named = {p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    own, extra = [], []
    for k in call.keywords:
        if k.arg is None and isinstance(k.value, gast.Dict) and all(
                isinstance(key, gast.Constant) and isinstance(key.value, str)
                and key.value.isidentifier() for key in k.value.keys):
            pairs = [(key.value, v) for key, v in zip(k.value.keys, k.value.values)]
        elif k.arg is None:
            raise source_map.error(call, f"cannot compile this call of {fn.__qualname__}: "
                                         "it passes **mapping (its keys are known only "
                                         "when it runs)",
                                   hint="Pass each keyword by name (k=v).")
        else:
            pairs = [(k.arg, k.value)]
        for name, value in pairs:
            if name in named:
                own.append(gast.keyword(arg=name, value=value))
            else:
                if name in (n for n, _ in extra):
                    raise source_map.error(call, f"{fn.__qualname__}() got the keyword "
                                                 f"{name!r} twice", hint="Pass it once.")
                extra.append((name, value))
    return own, extra


def expand_kwargs(node, fn, names, source_map):
    """Give the FunctionDef ``node``'s ``**kwargs`` a parameter per name ``fn`` (a
    :func:`keyword_form`, else refused) is compiled for."""
    kwarg = node.args.kwarg
    if kwarg is None:
        return
    passed = keywords_of(fn)
    if passed is None:
        raise source_map.error(node, f"cannot compile {node.name}: **{kwarg.id} is "
                                     "supported in functions called from compiled code, "
                                     "not in the function differentiated itself",
                               hint="Call it from a function with named parameters.")
    params = {k: names.fresh(f"{kwarg.id}_{k}") for k in passed}
    if params:  # every caller passes each parameter by position (binding.py)
        node.args.defaults = []
    node.args.kwarg = None
    expand_parameter(node, kwarg, list(params.values()),
                     _Expand(kwarg.id, params, source_map), source_map)


class _Expand(gast.NodeTransformer):
    def __init__(self, name, params, source_map):
        self.name = name
        self.params = params  # keyword name -> its parameter
        self.source_map = source_map

    def is_kwargs(self, node):
        return isinstance(node, gast.Name) and node.id == self.name

    def literal(self):
        made = gast.Dict(keys=[S.const(k) for k in self.params],
                         values=[S.name(p) for p in self.params.values()])
        made.srcdiff_kwargs = True  # spread where it is spread (g(**kw), {**kw})
        return made

    def visit_Name(self, node):
        if not self.is_kwargs(node):
            return node
        return gast.copy_location(self.literal(), node)

    def visit_Subscript(self, node):
        index = node.slice
        if self.is_kwargs(node.value) and not isinstance(node.ctx, gast.Load):
            raise self.source_map.error(node, f"cannot compile a write into {self.name}",
                                        hint="Build a new dict, or use another name.")
        if self.is_kwargs(node.value) and isinstance(index, gast.Constant) and (
                index.value in self.params):
            return gast.copy_location(S.name(self.params[index.value]), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, gast.Attribute) and self.is_kwargs(func.value):
            if func.attr in _WRITERS:
                raise self.source_map.error(node, f"cannot compile {self.name}.{func.attr}"
                                                  "(): it changes the keywords",
                                            hint=f"Read {self.name}[key] or "
                                                 f"{self.name}.get(key, default).")
            key = node.args[0] if node.args else None
            if (func.attr == "get" and not node.keywords and 1 <= len(node.args) <= 2
                    and isinstance(key, gast.Constant) and isinstance(key.value, str)):
                if key.value in self.params:
                    return gast.copy_location(S.name(self.params[key.value]), node)
                default = node.args[1] if len(node.args) == 2 else S.const(None)
                return self.visit(default)
        if isinstance(func, gast.Name) and func.id == "len" and len(node.args) == 1 and (
                self.is_kwargs(node.args[0])):
            return gast.copy_location(S.const(len(self.params)), node)
        self.generic_visit(node)
        spread = []
        for k in node.keywords:  # g(**kw) after visiting: g(**{"a": kw_a})
            if k.arg is None and getattr(k.value, "srcdiff_kwargs", False):
                spread += [gast.keyword(arg=key.value, value=v)
                           for key, v in zip(k.value.keys, k.value.values)]
            else:
                spread.append(k)
        node.keywords = spread
        return node

    def visit_Compare(self, node):
        if (len(node.ops) == 1 and isinstance(node.ops[0], (gast.In, gast.NotIn))
                and self.is_kwargs(node.comparators[0])
                and isinstance(node.left, gast.Constant)):
            found = node.left.value in self.params
            return gast.copy_location(S.const(found == isinstance(node.ops[0], gast.In)), node)
        return self.generic_visit(node)

    def visit_Dict(self, node):
        self.generic_visit(node)
        keys, values = [], []
        for key, value in zip(node.keys, node.values):  # {**kw, "b": 1}: spread
            if key is None and getattr(value, "srcdiff_kwargs", False):
                keys += value.keys
                values += value.values
            else:
                keys.append(key)
                values.append(value)
        node.keys, node.values = keys, values
        return node

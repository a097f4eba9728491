"""Calls of callable objects as calls of functions: methods and partials.

``M(x)``, for a global or closure instance ``M`` whose class defines ``__call__`` in
Python, is ``M.__class__.__call__(M, x)``; ``M.f(x)`` is ``M.__class__.f(M, x)``.  The
method is then a user function like any other, compiled with ``self`` as an inactive
parameter: the attributes of ``self`` are read when it runs, constants to the
gradient.  ``P(x)``, for ``P = functools.partial(f, a, k=b)``, is
``P.func(P.args[0], x, k=P.keywords['k'])``: the bound values are constants.

Invariant: the rewritten call computes what the call did, as long as the name names
the same object; the unit that reads ``M.__class__`` is built on ``M``
(``unit._read_when_called`` makes it a dependency, as it does a partial, which is
callable), so rebinding it compiles again.  Inside a unit compiled for a function
value (``Cache.get``'s ``functions``), ``fn.__class__`` and ``fn.func`` are what that
value's are (``Parsed.resolve``).

An object holding Tensors or Variables is not rewritten (its calls stay unmodelled,
refused when active): compiled code runs on arrays, and a Variable read inside it
would be recorded by a tape apart from the compiled call.
"""
import functools
import inspect

import gast

from . import syntax as S

CLASS = "__class__"
FIXED = (CLASS, "func")  # attributes a function value's identity fixes


def as_function_call(call, resolve):
    """The call ``call`` with a method of a named object as its function, or None."""
    func = call.func
    if isinstance(func, gast.Name):
        receiver, attr = func, "__call__"
    elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        receiver, attr = func.value, func.attr
    else:
        return None
    try:
        obj = resolve(receiver)
    except KeyError:
        return None  # a local value
    if isinstance(func, gast.Name) and type(obj) is functools.partial:
        return _partial_call(call, func.id, obj)
    if not _has_method(obj, attr):
        return None
    method = gast.Attribute(value=gast.Attribute(value=S.name(receiver.id), attr=CLASS,
                                                 ctx=gast.Load()), attr=attr, ctx=gast.Load())
    return gast.copy_location(gast.Call(func=method, args=[S.name(receiver.id)] + call.args,
                                        keywords=call.keywords), call)


def _partial_call(call, name, partial):
    """``P(x)`` as ``P.func(P.args[0], x, k=P.keywords['k'])``; the call's own keywords
    win over the partial's, as they do when Python calls it."""
    def part(attr, key):
        return gast.Subscript(value=gast.Attribute(value=S.name(name), attr=attr,
                                                   ctx=gast.Load()),
                              slice=S.const(key), ctx=gast.Load())
    given = {k.arg for k in call.keywords}
    keywords = [gast.keyword(arg=k, value=part("keywords", k)) for k in partial.keywords
                if k not in given] + call.keywords
    args = [part("args", k) for k in range(len(partial.args))] + call.args
    func = gast.Attribute(value=S.name(name), attr="func", ctx=gast.Load())
    return gast.copy_location(gast.Call(func=func, args=args, keywords=keywords), call)


def _has_method(obj, attr):
    """Whether ``obj.attr`` is a method that its class defines as a Python function
    (not a module, a class, a function, a static or class method, or an attribute of
    the instance itself)."""
    if inspect.ismodule(obj) or isinstance(obj, type) or inspect.isroutine(obj):
        return False
    if inspect.getattr_static(obj, "python_function", None) is not None:
        return False  # it says what it computes (kwargs.KeywordCall): called as that
    if attr in getattr(obj, "__dict__", {}) or holds_tensors(obj):
        return False  # an attribute of its own, or Tensors and Variables (see below)
    try:
        found = inspect.getattr_static(type(obj), attr)
    except AttributeError:
        return False
    module = getattr(found, "__module__", "") or ""
    return inspect.isfunction(found) and module.split(".")[0] not in ("numpy", "scipy")


def holds_tensors(obj):
    """Whether an attribute of ``obj`` is a Tensor or Variable (see the docstring)."""
    return any(hasattr(v, "_array") for v in getattr(obj, "__dict__", {}).values())


def is_method_of(func):
    """Whether ``func`` is ``name.__class__.attr``, a method as_function_call made."""
    return (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Attribute)
            and func.value.attr == CLASS and isinstance(func.value.value, gast.Name))


def receivers(node):
    """The names whose class ``node`` reads (``M`` in ``M.__class__.f``)."""
    return {n.value.id for n in S.walk(node) if isinstance(n, gast.Attribute)
            and n.attr == CLASS and isinstance(n.value, gast.Name)}

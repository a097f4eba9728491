"""Calls of user functions bound by position.

Calls of user functions with keyword-only parameters, and calls to which unit._lift
appended arguments, bind every parameter by position (keywords moved into place,
defaults filled in), the appended ones after: keyword-only ones stay keywords where
nothing is appended, so a call that is not compiled runs as written.  A call of a
function that takes ``**kwargs`` passes the keywords into it by position too, after
every parameter, to a stand-in for the function compiled for their names
(kwargs.py).

Invariant of the output: a call rewritten here binds every positional parameter of
its callee by position, in the order compiled code takes them (parse.py puts
keyword-only ones after the others); what Python would reject (a missing or
repeated argument, too many by position) is a CompileError at the call.
"""
import inspect

import gast

from . import syntax as S
from .kwargs import call_keywords, keyword_call

CONSTANTS = (type(None), bool, int, float, complex, str)


class CallBinder:
    """Binds calls by position; ``bind(obj, hint)`` names an object (a default, a
    stand-in) for the generated code."""

    def __init__(self, source_map, bind):
        self.source_map = source_map
        self.bind = bind

    def keyword_call(self, call, fn, appended):
        """Make ``call`` (of ``fn``, which takes ``**kwargs``; its last ``appended``
        arguments added by unit._lift) a call of ``fn``'s :class:`KeywordCall` for the
        keywords it passes into them: each parameter by position, then those
        keywords' values, then the appended ones; the form compiled (kwargs.py)."""
        given = call.args[:len(call.args) - appended]
        call.keywords, extra = call_keywords(call, fn, self.source_map)
        if len(given) > len(positional_names(fn, keyword_only=False)) and (
                call.keywords or not inspect.getfullargspec(fn).varargs):
            raise self.source_map.error(call, f"{fn.__qualname__}() is given more "
                                              "arguments by position than it takes",
                                        hint="Pass each parameter once, extra ones by "
                                             "keyword.")
        values = self.positional(call, fn, given)
        stand_in = keyword_call(fn, tuple(name for name, _ in extra))
        call.func = self.bind(stand_in, fn.__name__)
        call.args = values + [value for _, value in extra] + call.args[len(given):]
        call.keywords = []
        return stand_in.python_function

    def rebind(self, call, fn, given, trailing):
        """Make ``call`` (of ``fn``, passing ``given`` by position) bind every parameter
        of ``fn``, then pass ``trailing``: by position, but for keyword-only parameters
        when nothing trails (a call that is not compiled runs as written)."""
        values = self.positional(call, fn, given)
        names = positional_names(fn)
        keyword_only = len(names) - len(positional_names(fn, keyword_only=False))
        if trailing or not keyword_only or len(given) > len(names):
            call.args, call.keywords = values + list(trailing), []
            return
        call.args = values[:len(names) - keyword_only]
        call.keywords = [gast.keyword(arg=n, value=v) for n, v in
                         zip(names[len(names) - keyword_only:], values[len(call.args):])]

    def positional(self, call, fn, given):
        """The arguments binding every positional parameter of ``fn`` in ``call``, whose
        positional arguments are ``given``: keywords moved into place, defaults
        (constants and functions) filled in."""
        names = positional_names(fn)
        if len(given) > len(names):
            return list(given)  # more: into *args, keywords refused by the caller
        values = dict(zip(names, given))
        for kw in call.keywords:
            if kw.arg is None or kw.arg not in names or kw.arg in values:
                raise self.source_map.error(call, f"{fn.__qualname__}() got an unexpected "
                                                  f"or repeated argument {kw.arg!r}",
                                            hint=f"Its parameters are {', '.join(names)}.")
            values[kw.arg] = kw.value
        defaults = {p.name: p.default for p in inspect.signature(fn).parameters.values()
                    if p.default is not p.empty}
        out = []
        for p in names:
            if p in values:
                out.append(values[p])
            elif p not in defaults:
                raise self.source_map.error(call, f"{fn.__qualname__}() is missing the "
                                                  f"argument {p!r}", hint=f"Pass {p!r}.")
            elif isinstance(defaults[p], CONSTANTS):
                out.append(S.const(defaults[p]))
            elif not hasattr(defaults[p], "_array"):  # an array, a function: as made
                out.append(self.bind(defaults[p], f"{p}_default"))
            else:  # a Tensor would be read apart from the tape
                raise self.source_map.error(call, f"the default of {p!r} in "
                                                  f"{fn.__qualname__} is a Tensor",
                                            hint=f"Pass {p!r} explicitly.")
        return out


def has_keyword_only(fn):
    """Whether ``fn`` has keyword-only parameters."""
    return any(p.kind is p.KEYWORD_ONLY for p in inspect.signature(fn).parameters.values())


def positional_names(fn, keyword_only=True):
    """The parameters of ``fn`` compiled code passes by position: keyword-only ones
    follow the others (parse._check_signature)."""
    kinds = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD") + ("KEYWORD_ONLY",) * keyword_only
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind.name in kinds]

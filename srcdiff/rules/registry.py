"""The table of derivative rules, shared by the eager tape and the compiler.

A rule is a vector-Jacobian product for one positional input of one primitive:
a small function ``vjp(g, ans, *args, **kwargs)`` written with NumPy calls,
where ``g`` is the adjoint of the result ``ans``.  Run on ndarrays it is the
tape's backward step; run on Tensors under an outer tape it is itself recorded
(higher derivatives); the compiler inlines its body into generated source.
"""

import functools
import inspect
import typing

import numpy as np

_VJPS = {}
_TRAITS = {}
_EXPANSIONS = {}
_FORMS = {}

# Each @primitive wrapper -> the function it wraps: what ``apply`` runs on arrays.
RAW = {}

# Set by srcdiff.tensor: the value types that route a primitive call through
# the recorder instead of running it on raw arrays.
TENSOR_TYPES = ()
APPLY = None


class Rule:
    """The derivative rules of one primitive: one vjp per positional input.

    ``argnum_vjp``, when set, serves every input of a primitive that takes any
    number of them (``concatenate(*xs)``) and is called as ``vjp(i, g, ans, ...)``.
    ``joint``, when set, gives the adjoints of several inputs from one call,
    ``joint(g, ans, values, wanted) -> {i: adjoint}`` for the indices ``wanted``:
    a primitive whose backward step serves every input at once (a compiled
    function's) is then run once by the plain walk, not once per input.  ``once``,
    when not None, is the whole walk of a tape used once that holds this rule's one
    record, seeded with ones: ``once(sources, tracked) -> [adjoint of each source]``
    (``tracked``: the ids of what the tape tracks), or None where it leaves that to
    ``joint``."""

    __slots__ = ("primitive", "vjps", "argnum_vjp", "name", "joint", "_parameters")
    once = None

    def __init__(self, primitive, vjps, name, argnum_vjp=None, joint=None):
        self.primitive = primitive
        self.vjps = vjps
        self.argnum_vjp = argnum_vjp
        self.name = name
        self.joint = joint
        self._parameters = None

    def vjp(self, i):
        """The vjp of input ``i`` as ``f(g, ans, *args, **kwargs)``, or None."""
        if self.argnum_vjp is not None:
            return functools.partial(self.argnum_vjp, i)
        return self.vjps[i] if i < len(self.vjps) else None

    @property
    def traits(self):
        """The :class:`Traits` of this rule's primitive."""
        return traits_of(self.primitive)

    def parameters(self):
        """({input name: default}, in order; {keyword: default} the rules model; how
        many arguments may be passed by position, None for any number).

        Read from the first vjp's signature, after ``g, ans``: a keyword a rule only
        swallows (``**kw``) is not modelled (unless the vjp says ``given_every_keyword``:
        a user's rule, given each), nor is ``out`` (a write in place); an
        argument beyond its positional parameters has no model (``math.log(x, base)``
        under a rule of ``x`` alone)."""
        if self._parameters is None:
            inputs, keywords = {}, {}
            fn = self.argnum_vjp or next((v for v in self.vjps if v is not None), None)
            params = list(inspect.signature(fn).parameters.values()) if fn else []
            params = params[3:] if self.argnum_vjp else params[2:]
            positional = None if any(p.kind is p.VAR_POSITIONAL for p in params) else sum(
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
            for p in params:
                if p.kind is p.VAR_KEYWORD and getattr(fn, "given_every_keyword", False):
                    keywords = _EveryKeyword(keywords)
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "out":
                    continue
                if p.kind is not p.KEYWORD_ONLY and (
                        self.argnum_vjp is not None or len(inputs) < len(self.vjps)):
                    inputs[p.name] = p.default
                else:
                    keywords[p.name] = p.default
            self._parameters = (inputs, keywords, positional)
        return self._parameters

    def unmodelled(self, kwargs):
        """The first of ``kwargs``' names that is neither an input nor a keyword the
        rules model (``where=``, ``out=``), or None: a call given one is refused, as its
        rule would ignore it."""
        inputs, keywords, _ = self.parameters()
        return next((k for k in kwargs if k not in inputs and k not in keywords), None)

    def __repr__(self):
        return f"<Rule {self.name}>"


class _EveryKeyword(dict):
    """The keywords a rule models when it is given every one (``**kwargs``)."""

    def __contains__(self, key):
        return True


def primitive_name(fn):
    module = getattr(fn, "__module__", None) or "numpy"
    name = getattr(fn, "__name__", repr(fn))
    if isinstance(fn, type(len)) and module == "builtins":
        return name
    if module.startswith("numpy"):  # its public modules: np.linalg.solve, np.fft.fft, np.sum
        module = next((m for m in ("numpy.linalg", "numpy.fft") if module.startswith(m)),
                      "numpy")
    return f"{module}.{name}"


class Traits(typing.NamedTuple):
    """What the compiler and the tape may assume about a primitive beyond its rule.

    One record per function, kept apart from its rule so that a rule registered
    later (``sd.register_gradient``) leaves the facts about the function standing.
    Each is recorded where the primitive's rule is registered, and tested on sample
    inputs (``tests/test_rules.py``, ``tests/test_jacobian_vectorised.py``)."""

    view: bool = False
    """Its result may share memory with its first argument (a write into one
    changes the other), so the compiler refuses to read it after such a write."""
    batches: bool = False
    """Its vjps accept adjoints with ``helpers.batch_axes()`` leading axes and give
    the same as row by row: they touch the adjoint only by right-aligned broadcasting,
    negative axes and the helpers that keep batch axes.  A fact about the rule, so
    registering another rule resets it; leaving it out costs time, never correctness."""
    reduces: bool = False
    """Given one array and no axis, it returns a number (a full reduction)."""
    number: bool = False
    """It returns a number whatever it is given (``float``, ``len``)."""
    nondifferentiable: bool = False
    """Its result never carries a gradient (a comparison, ``floor``, ``len``)."""
    splits: typing.Optional[int] = None
    """It cuts its first argument into pieces along this axis unless told another."""
    stand_in: typing.Optional[typing.Callable] = None
    """What compiled code calls in place of a call with one argument and no keyword:
    the same result, bit for bit and of the same type, for every argument, faster
    for the commonest (NumPy's dispatch layers cost more than a small array's sum)."""


_NO_TRAITS = Traits()


def declare(*primitives, **facts):
    """Record ``facts`` (fields of :class:`Traits`) about each of ``primitives``;
    facts not given keep their recorded value."""
    for p in primitives:
        _TRAITS[p] = traits_of(p)._replace(**facts)


def traits_of(primitive):
    """The recorded :class:`Traits` of ``primitive``, else those it carries itself as
    ``srcdiff_traits`` (as a tape entry of compiled code does), else all false."""
    try:
        traits = _TRAITS.get(primitive)
    except TypeError:  # an unhashable callable
        traits = None
    return traits if traits is not None else getattr(primitive, "srcdiff_traits", _NO_TRAITS)


def defvjp(primitive, *vjps, batches=None, **facts):
    """Register the vjps of ``primitive``, one per positional input, and ``facts``
    about it (see :class:`Traits`).

    ``None`` marks an input with no gradient (an index, a condition).  A ufunc's
    rule batches unless told otherwise: it is elementwise."""
    _VJPS[primitive] = Rule(primitive, vjps, primitive_name(primitive))
    if batches is None:
        batches = isinstance(primitive, np.ufunc)
    declare(primitive, batches=batches, **facts)
    return primitive


def defvjp_argnum(primitive, vjp, batches=False, **facts):
    """Register one vjp ``vjp(i, g, ans, *args, **kwargs)`` serving every input."""
    _VJPS[primitive] = Rule(primitive, (), primitive_name(primitive), argnum_vjp=vjp)
    declare(primitive, batches=batches, **facts)
    return primitive


def nondifferentiable(*primitives):
    """Mark functions whose results never carry a gradient (comparisons, floor)."""
    declare(*primitives, nondifferentiable=True)


def rule_of(primitive):
    """The rule of ``primitive``: from the table, or carried by the callable itself."""
    try:
        rule = _VJPS.get(primitive)
    except TypeError:  # unhashable callable
        rule = None
    return rule if rule is not None else getattr(primitive, "srcdiff_rule", None)


def is_nondifferentiable(primitive):
    return traits_of(primitive).nondifferentiable


def all_rules():
    return dict(_VJPS)


def all_traits():
    """Every primitive with recorded traits, and its :class:`Traits`."""
    return dict(_TRAITS)


def defexpansion(numpy_fn, expansion, named=None, **facts):
    """Differentiate ``numpy_fn`` through ``expansion``: the same function written
    with recorded primitives.  For NumPy functions with several results
    (``np.split``, ``np.linalg.eigh``), which no single tape record can hold.

    The compiler compiles an expansion as a call of a user function (a ``def``
    with one ``return``), unless the function splits (see :class:`Traits`).  On the
    tape, ``named``, a named tuple type, packs the results as NumPy does
    (``EighResult``; NumPy 1 returns plain tuples)."""
    _EXPANSIONS[numpy_fn] = (expansion, named)
    declare(numpy_fn, **facts)
    return expansion


# defform's value for a keyword that picks its form whatever it is given (``where=``);
# form_of's for a keyword given a value the compiler does not know.
ANY = object()
UNKNOWN = object()


def defform(numpy_fn, keyword, value, form):
    """Differentiate ``numpy_fn(..., keyword=value)`` (``value`` ANY: given at all) as
    ``form`` (a function of the same parameters) called the same way: for a keyword
    that changes what the call returns (``np.linalg.svd(a, compute_uv=False)`` is the
    singular values alone) or which elements it reads (``np.sum(a, where=mask)``)."""
    _FORMS.setdefault(numpy_fn, []).append((keyword, value, form))


def form_of(numpy_fn, given):
    """The form ``given`` (keyword -> value, UNKNOWN where not a constant, of a call of
    ``numpy_fn``) picks among those registered by :func:`defform`, or None."""
    for keyword, value, form in _FORMS.get(numpy_fn, ()):
        if keyword in given and (value is ANY or given[keyword] is not UNKNOWN and type(
                given[keyword]) is type(value) and given[keyword] == value):
            return form
    return None


def expansion_of(numpy_fn):
    """The expansion registered for ``numpy_fn``, or None."""
    return _EXPANSIONS.get(numpy_fn, (None,))[0]


def expand(numpy_fn, *args, **kwargs):
    """``numpy_fn(*args, **kwargs)`` through its expansion, packed as NumPy packs it."""
    expansion, named = _EXPANSIONS[numpy_fn]
    results = expansion(*args, **kwargs)
    return named._make(results) if hasattr(named, "_make") else results


def primitive(fn):
    """Make a NumPy-level function of srcdiff's own a primitive.

    On ndarrays it runs as written; given a Tensor it is applied through the
    recorder, like a NumPy function reached through ``__array_function__``."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        for a in args:
            if isinstance(a, TENSOR_TYPES):
                return APPLY(call, *args, **kwargs)
        return fn(*args, **kwargs)
    call.raw = fn
    RAW[call] = fn
    return call

"""The compiler's functional API: grad, value_and_grad, vjp, jacobian, adjoint_source.

Each compiles the function's adjoint once per choice of active inputs (see
``compiler.cache.Cache``) and runs the generated forward and backward passes
on plain arrays.
"""
import functools
import inspect
import numbers

import numpy as np

from .compiler.errors import CompileError, entry_point, for_user
from .compiler.parse import check_function
from .compiler.cache import CACHE
from .compiler.errors import InvariantError
from . import nest
from .nest import unwrapped as _raw
from .view import AdjointSource
from ._recording import STATE
from .rules.containers import CONTAINERS, Items, dense, zeros_like
from .function import (DERIVATIVES, Derivative, Units, by_position,
                       is_scalar as _is_scalar, on_tapes, one_array, on_tensors, recorded, split_aux,
                       with_defaults)


def _positions(fn, wrt):
    """``wrt`` (an index, a parameter name, or a tuple of them) as indices, and
    whether a single gradient (rather than a tuple) is asked for."""
    params = list(inspect.signature(inspect.unwrap(fn)).parameters)
    name = getattr(fn, "__qualname__", type(fn).__name__)
    single = not isinstance(wrt, (tuple, list))
    positions = []
    for w in ([wrt] if single else wrt):
        if isinstance(w, str):
            if w not in params:
                raise ValueError(f"{name} has no parameter {w!r}; "
                                 f"its parameters are {params}")
            positions.append(params.index(w))
        elif isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Integral):
            raise TypeError(f"wrt must be an int or a parameter name (or a tuple of them), "
                            f"got {w!r}")  # wrt=True: most likely has_aux=True was meant
        elif -len(params) <= w < len(params):
            positions.append(int(w) % len(params))
        else:
            raise ValueError(f"wrt={w!r} is not a parameter of {name}, which "
                             f"takes {params}")
    return tuple(positions), single


def _through_partial(make, f, wrt, *options):
    """``make(f, wrt, *options)`` (``grad``, ``value_and_grad``, ``jacobian``) for a
    ``functools.partial`` ``f``: the same partial of the derivative of the function it
    wraps (so a derivative of it is a partial too); ``wrt`` names the partial's
    parameters, the function's same ones.  None when ``f`` is no partial."""
    if type(f) is not functools.partial:
        return None
    params = list(inspect.signature(f).parameters)
    own = list(inspect.signature(inspect.unwrap(f.func)).parameters)
    positions, single = _positions(f, wrt)
    moved = [own.index(params[i]) for i in positions]
    inner = make(f.func, moved[0] if single else tuple(moved), *options)
    return functools.partial(inner, *f.args, **f.keywords)


def _prepare(units, args):
    """``(unit, what to pass it)`` for a call with ``args``: defaults filled in, each
    Tensor (or pytree of them) as its values (``Units.get(..., unwrap=True)``), in a
    list of its own (``Unit.run`` changes it)."""
    return units.get(with_defaults(units.fn, args), unwrap=True)


def _require_numbers(fn, args, positions):
    """Raise TypeError unless each argument at ``positions`` is a number, an array of
    numbers, or a pytree of them (``None`` leaves pass): the gradient of a string, an
    object or a bool is undefined, not zero (JAX refuses them too)."""
    ndarray = np.ndarray
    for i in positions:
        arg = args[i]
        kind = type(arg)
        if kind is ndarray:  # the common cases, from attributes (the commonest dtype's
            dtype = arg.dtype  # singleton first)
            if dtype is _FLOAT64 or dtype.kind in "fc":
                continue
        elif kind is float:
            continue
        nested = isinstance(arg, CONTAINERS)
        for leaf in nest.flatten(arg) if nested else (arg,):
            if _is_scalar(leaf) or leaf is None and nested or getattr(
                    leaf, "dtype", _OBJECT).kind in "iufc" and not isinstance(leaf, str):
                continue
            what = f"holds {_describe(leaf)}" if nested else f"is {_describe(leaf)}"
            raise TypeError(f"argument {i} of {fn.__qualname__} {what}, which has no "
                            "gradient: differentiate numbers and arrays of numbers (or "
                            "pytrees of them), and leave other arguments out of wrt")


_OBJECT = np.dtype(object)


def _like(g, arg):
    """A gradient with its argument's shape and dtype (zeros where it is unconnected),
    an array the caller may write into."""
    kind = type(arg)
    if kind is np.ndarray and type(g) is np.ndarray and g.shape == arg.shape and (
            g.dtype is arg.dtype or g.dtype == arg.dtype):
        return _writable(g)  # answered from attributes
    if kind is float and type(g) is float:
        return g
    if isinstance(arg, CONTAINERS):  # a pytree: the gradient has its structure
        return dense(g, arg, _like)
    if g is None:
        g = 0.0
    if _is_scalar(arg):
        if isinstance(arg, np.generic):  # np.float32(0.5): a gradient of its type
            return type(arg)(g if np.iscomplexobj(arg) else np.real(g))
        return float(np.real(g)) if not isinstance(arg, complex) else complex(g)
    arg = np.asarray(arg)
    g = np.asarray(g)
    if g.dtype.kind == "c" and arg.dtype.kind != "c":
        g = g.real  # a real argument's gradient: the real part, as TensorFlow casts it
    g = np.asarray(g, dtype=arg.dtype if arg.dtype.kind in "fc" else None)
    return np.broadcast_to(g, arg.shape).copy() if g.shape != arg.shape else _writable(g)


def _conjugated(g):
    """``g`` (a gradient, a pytree of them) in TensorFlow's convention, the tape's: the
    gradient of a complex argument is the conjugate of the adjoint the backward pass
    computes (JAX's)."""
    kind = type(g)
    if kind is np.ndarray:
        return np.conj(g) if g.dtype.kind == "c" else g
    if isinstance(g, CONTAINERS):
        return nest.pack_sequence_as(g, [_conjugated(v) for v in nest.flatten(g)])
    return g.conjugate() if isinstance(g, (complex, np.complexfloating)) else g


def _gradients(grads, raw, pairs):
    """``grads[k]`` for argument ``raw[i]``, for each ``(k, i)`` of ``pairs``, as
    :func:`_like` makes it, none twice.  The commonest, a fresh array of its argument's
    shape and dtype, is taken as it is without a call: a cached call's every frame counts
    (and a complex one conjugated, see :func:`_conjugated`)."""
    ndarray = np.ndarray
    out = []
    for k, i in pairs:
        g, arg = grads[k], raw[i]
        if type(g) is ndarray and type(arg) is ndarray:
            dtype = g.dtype  # real: the singletons of the commonest two, compared at once
            if ((dtype is _FLOAT64 or dtype is _FLOAT32) and dtype is arg.dtype
                    and g.base is None and g.shape == arg.shape):
                out.append(g)
                continue
        out.append(_conjugated(_like(g, arg)))
    if len(set(map(id, out))) == len(out):  # _distinct's common case, its frame spared
        return tuple(out)
    return _distinct(out)


_FLOAT64, _FLOAT32 = np.dtype(np.float64), np.dtype(np.float32)
_ONE = np.float64(1.0)  # the seed of an np.float64 result (numbers are immutable: shared)


def _writable(g):
    """``g``, or a copy if it is a read-only view (the zero-strided adjoint a full
    reduction spreads): the gradients handed to the caller are theirs to update."""
    return g if g.base is None or g.flags.writeable else g.copy()


def _numeric_output(fn, y):
    """Raise TypeError unless ``y`` (or each of a tuple of results) is a number or an
    array of numbers: the gradient of None, a string or a bool is undefined, not zero."""
    if isinstance(y, (tuple, list)):
        for part in y:
            _numeric_output(fn, part)
    elif not (_is_scalar(y) or getattr(y, "dtype", np.dtype(object)).kind in "iufc"):
        raise TypeError(f"{fn.__qualname__} must return numbers to be differentiated, "
                        f"but it returned {_describe(y)}")


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype}"
    if value is None or isinstance(value, (bool, np.generic)):
        return repr(value)
    return f"a {type(value).__qualname__} ({value!r:.40})"


def _scalar_output(fn, y):
    kind = type(y)
    if kind is float:  # scalar code stays on Python floats
        return 1.0
    if kind is np.float64 or kind is np.float32:  # np.mean's, np.sum's: one of its type
        return kind(1)
    if isinstance(y, tuple):
        raise ValueError(f"grad of {fn.__qualname__} needs a scalar output, but it returned "
                         f"a tuple of {len(y)}; if it returns (value, aux), pass has_aux=True")
    _numeric_output(fn, y)
    if isinstance(y, np.generic):  # a NumPy scalar, e.g. from np.mean: one of its type
        return type(y)(1)
    if np.ndim(y) != 0 and np.size(y) != 1:
        raise ValueError(f"grad of {fn.__qualname__} needs a scalar output, but it returned "
                         f"shape {np.shape(y)}; use sd.vjp for a vector-Jacobian product or "
                         "sd.jacobian for the full Jacobian")
    return np.ones_like(y)


def _distinct(grads):
    """``grads`` (a list) as a tuple in which no array appears twice (``wrt=(0, 0)``, or two
    parameters given one adjoint): each is the caller's to update."""
    if len(set(map(id, grads))) == len(grads):  # the common case: nothing to copy
        return tuple(grads)
    seen = set()
    out = []
    for g in grads:
        if id(g) in seen and isinstance(g, np.ndarray):
            g = g.copy()
        seen.add(id(g))
        out.append(g)
    return tuple(out)


def _as_tuple(grads, count):
    return grads if count > 1 else (grads,)


def _aux_cotangent(unit, out, seed):
    """The backward pass's cotangent for ``out = (value, aux)``: ``seed`` for the value,
    zero for aux, which is passed through, not differentiated.  A unit returning the
    pair as two results takes a tuple of adjoints; one returning it as one tuple
    (``return pair``), the adjoint of a container."""
    if unit.several:
        return seed, zeros_like(out[1])
    return Items(out, {0: seed})


def _derivative(kind, f, positions, single, has_aux=False):
    """``(Derivative, function)``: the function is None when ``f`` is not itself a
    derivative srcdiff made (compiled code computes it); else it computes the
    ``kind`` (``grad``...) derivative of ``f`` and is registered as one srcdiff made.

    A derivative of a derivative runs on nested eager tapes (``function.on_tapes``):
    compiling the inner derivative's wrapper is impossible, and compiling the function
    it wraps instead would give a lower derivative."""
    derivative = Derivative(kind, f, positions, single, has_aux)
    if f not in DERIVATIVES:
        return derivative, None
    compute = functools.wraps(f)(on_tapes(derivative))
    DERIVATIVES[compute] = derivative
    return derivative, compute


def value_and_grad(f, wrt=0, has_aux=False, verbose=False):
    """A function returning ``(f(*args), df/d args[wrt])`` through compiled adjoint code.

    ``wrt`` is as for :func:`grad`.  With ``has_aux=True``, ``f`` returns a pair
    ``(value, aux)``; ``aux`` (any pytree) is passed through, not differentiated, and
    the result is ``((value, aux), gradient)``::

        def loss(w, x):
            pred = np.tanh(x @ w)
            return np.sum(pred ** 2), {"pred": pred}

        (value, aux), dw = sd.value_and_grad(loss, has_aux=True)(w, x)

    Example::

        >>> import numpy as np, srcdiff as sd
        >>> def f(x):
        ...     return np.sum(x ** 2)
        >>> value, dx = sd.value_and_grad(f)(np.array([1.0, 2.0]))
        >>> print(value, dx)
        5.0 [2. 4.]
    """
    bound = _through_partial(value_and_grad, f, wrt, has_aux, verbose)
    if bound is not None:
        return bound
    check_function(f, "sd.value_and_grad")
    positions, single = _positions(f, wrt)
    derivative, on_tape = _derivative("value_and_grad", f, positions, single, has_aux)
    if on_tape is not None:
        return on_tape
    units = Units(f, positions)
    order = sorted(set(positions))  # the backward pass answers once a parameter, in order
    asked = [order.index(i) for i in positions]
    pairs = list(zip(asked, positions))  # (place in the backward's answer, argument)
    code = getattr(f, "__code__", None)  # how many arguments need no defaults (-1: any)
    arity = code.co_argcount if code is not None and not code.co_kwonlyargcount else -1

    @functools.wraps(f)
    def value_and_gradient(*args, **kwargs):
        # an entry point (see entry_point), its try and _prepare inline: a cached
        # call's every frame counts
        try:
            if kwargs:  # arguments by keyword: by parameter, as wrt names them
                args = by_position(f, args, kwargs)
            if STATE.tapes:  # else nothing records (recorded's own first test)
                taped = recorded(args)
                if taped is not None:  # an outer tape must see how the gradient depends
                    return on_tensors(derivative, taped)  # on them
            unit, raw = units.get(args if len(args) == arity else with_defaults(f, args),
                                  unwrap=True)
            y, *taken = unit.run(raw)  # the tape, walked once: the backward pass frees it
            _require_numbers(f, raw, order)  # after the run, whose errors say more
            if has_aux:
                seed = _scalar_output(f, split_aux(f, y)[0])
                grads = unit.spend(taken, _aux_cotangent(unit, y, seed))
            else:  # _scalar_output's commonest results inline
                kind = type(y)
                grads = unit.spend(taken, 1.0 if kind is float else _ONE if kind is np.float64
                                   else _scalar_output(f, y))
        except CompileError as error:
            raise for_user(error)  # srcdiff's frames are hidden: SRCDIFF_DEBUG=1 shows them
        if single:
            return y, _conjugated(_like(grads if len(order) == 1 else grads[asked[0]],
                                        raw[positions[0]]))
        return y, _gradients(grads if len(order) > 1 else (grads,), raw, pairs)

    if verbose:
        print(adjoint_source(f, wrt))
    DERIVATIVES[value_and_gradient] = derivative
    return value_and_gradient


def grad(f, wrt=0, has_aux=False, verbose=False):
    """A compiled function returning df/dx for the argument(s) ``wrt`` of scalar ``f``.

    ``wrt`` is an index or a parameter name (one gradient) or a tuple of them
    (a tuple of gradients).  Each gradient has its argument's shape and dtype, and
    an argument may be a pytree (dicts, lists, tuples of arrays and numbers): its
    gradient has its structure.  ``sd.grad(sd.grad(f))`` is the second derivative.
    The gradient of a complex argument is the tape's (TensorFlow's convention: the
    conjugate of JAX's).

    ``has_aux=True`` (JAX's convention): ``f`` returns ``(value, aux)``, the gradient
    is of ``value``, and the result is ``(gradient, aux)``, ``aux`` passed through::

        def loss(w, x):
            pred = x @ w
            return np.mean(pred ** 2), pred

        dw, pred = sd.grad(loss, has_aux=True)(w, x)

    ``verbose=True`` prints the generated adjoint source (see ``sd.adjoint_source``).
    Check a function's gradients, and the rules it relies on, with ``sd.check_grads``.

    Example (the function is compiled on the first call, then cached)::

        >>> import numpy as np, srcdiff as sd
        >>> def f(x, w):
        ...     return np.sum(np.sin(x) * w)
        >>> x, w = np.array([0.0, np.pi]), np.array([2.0, 3.0])
        >>> print(sd.grad(f)(x, w))                    # d/dx: cos(x) * w
        [ 2. -3.]
        >>> dx, dw = sd.grad(f, wrt=(0, "w"))(x, w)
        >>> print(np.round(dw, 12))                     # d/dw: sin(x)
        [0. 0.]
        >>> print(sd.grad(sd.grad(lambda t: t ** 3))(2.0))   # the second derivative
        12.0
    """
    bound = _through_partial(grad, f, wrt, has_aux, verbose)
    if bound is not None:
        return bound
    check_function(f, "sd.grad")
    derivative, on_tape = _derivative("grad", f, *_positions(f, wrt), has_aux)
    if on_tape is not None:
        return on_tape
    value_and_gradient = value_and_grad(f, wrt, has_aux, verbose)

    @functools.wraps(f)
    def gradient(*args, **kwargs):  # value_and_gradient is the entry point: one frame less
        value, g = value_and_gradient(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    DERIVATIVES[gradient] = derivative
    return gradient


@entry_point
def vjp(f, *args):
    """``(f(*args), pullback)``: ``pullback(dy)`` gives the adjoint of every argument.

    ``f`` may return an array: ``dy`` has its shape.  Example::

        >>> import numpy as np, srcdiff as sd
        >>> def f(x, a):
        ...     return x * a
        >>> y, pullback = sd.vjp(f, np.array([1.0, 2.0]), 3.0)
        >>> dx, da = pullback(np.array([1.0, 10.0]))
        >>> print(y, dx, da)
        [3. 6.] [ 3. 30.] 21.0
    """
    if type(f) is functools.partial:  # the function it wraps, the bound arguments first
        own = list(inspect.signature(inspect.unwrap(f.func)).parameters)
        given = [own.index(p) for p in list(inspect.signature(f).parameters)[:len(args)]]
        y, pull = vjp(f.func, *by_position(f.func, (*f.args, *args), f.keywords))
        return y, lambda dy: tuple(pull(dy)[i] for i in given)
    check_function(f, "sd.vjp")
    if f in DERIVATIVES or recorded(args) is not None:
        raise TypeError(f"sd.vjp runs compiled code on arrays: it cannot differentiate "
                        f"{f.__qualname__} when it is a derivative srcdiff made, nor be "
                        "recorded by a tape watching its arguments; use sd.jacobian, or "
                        "GradientTape.gradient with output_gradients")
    positions = tuple(i for i, a in enumerate(args) if _differentiable(a))
    unit, raw = _prepare(Units(f, positions), args)
    raw = [nest.frozen(a) for a in raw]  # the pullback runs later: what the call read stays
    STATE.later += 1  # and what it reads of globals (runtime.FreeValues)
    try:
        y, tape = unit.run(raw)
    finally:
        STATE.later -= 1
    _numeric_output(f, y)

    def pullback(dy):
        dy = np.asarray(_raw(dy))
        if np.shape(dy) != np.shape(y):
            raise ValueError(f"the cotangent has shape {np.shape(dy)}, but {f.__qualname__} "
                             f"returned shape {np.shape(y)}")
        grads = _as_tuple(unit.backward(tape, dy), len(positions)) if positions else ()
        by_position = dict(zip(positions, grads))
        return tuple(_like(by_position[i], raw[i]) if i in by_position else None
                     for i in range(len(args)))  # not the defaults it filled in

    return y, pullback


def _differentiable(value):
    """Whether ``sd.vjp`` gives ``value`` an adjoint: a number or an array of numbers,
    integers too (as ``sd.grad`` differentiates them), not a bool."""
    value = _raw(value)
    if _is_scalar(value):
        return isinstance(value, (int, float, complex, np.number)) and not isinstance(
            value, (bool, np.bool_))
    return np.asarray(value).dtype.kind in "iufc"


def jacobian(f, wrt=0):
    """A function returning the Jacobian of ``f`` with respect to ``args[wrt]``:
    shape ``output.shape + input.shape`` (a tuple of them for a tuple ``wrt``; for a
    tuple, list or dict of arrays, one per item in its structure, as ``jax.jacobian``).
    ``sd.jacobian(sd.grad(f))`` is the Hessian.  The compiled backward pass runs once,
    with a batch of cotangents.  Example::

        >>> import numpy as np, srcdiff as sd
        >>> def f(x):
        ...     return np.array([1.0, 2.0]) * x ** 2
        >>> print(sd.jacobian(f)(3.0))
        [ 6. 12.]
        >>> def g(x):
        ...     return np.sum(x ** 3)
        >>> print(sd.jacobian(sd.grad(g))(np.array([1.0, 2.0])))   # the Hessian
        [[ 6.  0.]
         [ 0. 12.]]
    """
    bound = _through_partial(jacobian, f, wrt)
    if bound is not None:
        return bound
    check_function(f, "sd.jacobian")
    positions, single = _positions(f, wrt)
    derivative, on_tape = _derivative("jacobian", f, positions, single)
    if on_tape is not None:
        return on_tape
    units = Units(f, positions, batched=True)

    @entry_point
    @functools.wraps(f)
    def jac(*args, **kwargs):
        if kwargs:
            args = by_position(f, args, kwargs)
        taped = recorded(args)
        if taped is not None:  # an outer tape must see how the Jacobian depends on them
            return on_tensors(derivative, taped)
        unit, raw = _prepare(units, args)
        order = sorted(set(positions))
        y, tape = unit.run(raw)
        _require_numbers(f, raw, order)
        if isinstance(y, tuple):
            raise TypeError(one_array(f))
        _numeric_output(f, y)
        y = np.asarray(y)
        seeds = np.eye(y.size, dtype=y.dtype if y.dtype.kind in "fc" else float)
        seeds = seeds.reshape((y.size,) + y.shape)  # one cotangent per element of y
        columns, units.row_by_row = _columns(unit, tape, seeds, [raw[i] for i in order])
        results = {i: _conjugated(column) for i, column in zip(order, columns)}
        return results[positions[0]] if single else _distinct([results[i] for i in positions])

    jac.cache_info = units.cache_info
    DERIVATIVES[jac] = derivative
    return jac


def _columns(unit, tape, seeds, values):
    """For each active argument (of ``values``), its Jacobian for ``seeds`` (one adjoint
    of the result ``y`` each, stacked: ``[y.size, *y.shape]``): ``y.shape + shape`` of
    each array in it, in the argument's structure (a tuple, list or dict of arrays gives
    one Jacobian per item, as JAX's and TensorFlow's do), in its precision, as sd.grad's
    gradients are; and why they took one walk per seed (None: one batched walk)."""
    count = len(values)
    rows, shape = len(seeds), seeds.shape[1:]
    why = unit.not_batched or ("it returns several results" if unit.several or unit.depth
                               else None if rows else "no rows")
    if why is None:  # each leaf's adjoints, stacked
        stacks = [_leaves(g, v) for g, v in zip(
            _as_tuple(unit.backward_batch(tape, seeds), count), values)]
    else:  # one walk per seed, its adjoints stacked leaf by leaf
        walks = [_as_tuple(unit.backward(tape, seed), count) for seed in seeds]
        stacks = [[_stack(column, x) for column, x in zip(
            zip(*[_leaves(w[j], v) for w in walks]), nest.flatten(v))] if walks
            else [None] * len(nest.flatten(v)) for j, v in enumerate(values)]

    def jacobian(g, value):
        own = np.shape(value)
        if g is None:  # the result does not depend on it
            g = np.zeros((rows,) + own)
        elif np.shape(g) != (rows,) + own:
            raise InvariantError(f"{unit.name}'s backward pass gave adjoints of shape "
                                 f"{np.shape(g)} for {(rows,) + own}")
        g = np.reshape(g, shape + own)
        dtype = np.asarray(value).dtype
        return g.astype(dtype, copy=False) if dtype.kind in "fc" else g

    columns = []
    for leaves, v in zip(stacks, values):
        found = [jacobian(g, x) for g, x in zip(leaves, nest.flatten(v))]
        columns.append(nest.pack_sequence_as(v, found) if isinstance(v, CONTAINERS)
                       else found[0])
    return columns, why


def _leaves(g, value):
    """The adjoint ``g`` of ``value`` (a pytree's, maybe sparse: rules/containers.py),
    leaf by leaf in ``nest.flatten`` order, None where it has none."""
    if not isinstance(value, CONTAINERS):
        return [g]
    return nest.flatten(dense(g, value, lambda a, _: a))


def _stack(adjoints, value):
    """One leaf's adjoints from a walk per seed, stacked (None: it has none)."""
    if all(a is None for a in adjoints):
        return None
    shape = np.shape(value)
    return np.stack([np.zeros(shape) if a is None else np.broadcast_to(a, shape)
                     for a in adjoints])


@entry_point
def adjoint_source(f, wrt=0, args=None):
    """The generated forward and backward passes of ``f`` for the argument(s) ``wrt``:
    the code that runs for example arguments ``args`` (their kinds: Python floats get
    code on ``math``, arrays of a rank...; an array of 64 KiB or more gets the lean
    unit, which computes in place, and its backward pass for a tape walked once,
    ``f_backward_spent``: compiler/in_place.py), or for arrays when none are given.  A str,
    shown in a notebook with each source line beside its adjoint block
    (:class:`srcdiff.view.AdjointSource`; ``.html_page()`` is a whole HTML page).
    ``python -m srcdiff show FILE.py:FUNC`` prints the same from the shell.  Example::

        >>> import numpy as np, srcdiff as sd
        >>> def f(x):
        ...     return np.sum(np.tanh(x))
        >>> code = sd.adjoint_source(f)
        >>> print(code.splitlines()[0])
        def f_forward(x):
        >>> "def f_backward(tape, dout):" in code
        True
    """
    f = getattr(f, "python_function", f)
    check_function(f, "sd.adjoint_source")
    positions, _ = _positions(f, wrt)
    if args is not None:
        return AdjointSource.of(_prepare(Units(f, positions), args)[0])
    count = len(inspect.signature(inspect.unwrap(f)).parameters)
    unit = CACHE.get(f, tuple(i in positions for i in range(count)))
    return AdjointSource.of(unit)

"""``sd.check_grads``: srcdiff's gradients against central finite differences.

The tool for checking derivatives srcdiff did not work out itself: a rule given to
``sd.register_gradient``, a ``sd.custom_gradient``, or a whole function built on them.
Order 1 compares the compiled gradient (``sd.grad``; ``sd.vjp`` with a fixed random
cotangent when ``f`` returns an array) with central differences of ``f``; order 2 also
compares the gradient of the directional derivative ``<grad f(x), v>`` (a
Hessian-vector product, which srcdiff computes on nested tapes) with central
differences of the compiled gradient, as JAX's ``check_grads`` does.

Invariant: every real floating entry of every checked argument (each leaf of a
pytree) is compared, nothing is sampled; a failure is an AssertionError naming the
argument and the worst entry, with both values and the tolerance it broke.
"""
import inspect

import numpy as np

from . import nest
from .api import _positions, grad, vjp
from .compiler.errors import entry_point
from .rules.containers import CONTAINERS
from .tape import GradientTape, UnconnectedGradients
from .tensor import _raw, convert_to_tensor

# (eps, rtol) by the least precise dtype involved: a central difference's error is
# about eps**2 (truncation) plus the dtype's resolution / eps (rounding)
_DEFAULTS = {np.dtype(np.float16): (1e-1, 5e-2), np.dtype(np.float32): (1e-3, 2e-3),
             np.dtype(np.float64): (1e-5, 1e-5)}


@entry_point
def check_grads(f, args, order=1, wrt=None, eps=None, rtol=None):
    """Check srcdiff's gradients of ``f`` at ``args`` against central finite differences.

    ``args`` is the tuple (or list) of arguments: arrays, numbers, or pytrees of them
    (nested dicts, lists, tuples).  ``wrt`` chooses the arguments checked, as in
    ``sd.grad`` (an index, a parameter name, or a tuple of them); by default every
    argument holding real floating values.  ``order=2`` checks second derivatives
    too: the gradient of ``<grad f(args), v>`` for a random direction ``v``.  ``f``
    may return an array (order 1 only): then ``<u, f(args)>`` for a random ``u`` is
    checked.  ``eps`` is the step, ``rtol`` the tolerance: an entry passes when
    ``|srcdiff - finite difference| <= rtol * (1 + |finite difference|)``; both
    default by dtype (float64: 1e-5 and 1e-5; float32: 1e-3 and 2e-3).

    Returns None; raises AssertionError naming the argument, the worst entry, both
    values and the tolerance.  Use it to check a rule of your own::

        def cube(x):
            return x ** 3

        @sd.register_gradient(cube)
        def cube_grad(g, ans, x):
            return g * 3.0 * x ** 2

        def f(x):
            return np.sum(cube(x))

        sd.check_grads(f, (np.array([0.5, -1.0, 2.0]),), order=2)
    """
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"check_grads takes the arguments as a tuple, e.g. (x,), "
                        f"got a {type(args).__qualname__}")
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    args = [nest.unwrapped(a) for a in args]
    checked = _checked(f, args, wrt)
    y = _output(f, args)
    low = min([_dtype(leaf) for i in checked for leaf in nest.flatten(args[i])
               if _dtype(leaf) is not None] + [y.dtype], key=lambda d: -np.finfo(d).eps)
    default_eps, default_rtol = _DEFAULTS.get(low, _DEFAULTS[np.dtype(np.float32)])
    tolerance = (eps or default_eps, rtol or default_rtol)
    rng = np.random.default_rng(0)
    if y.size == 1:
        value = _scalar(f)
        gradients = grad(f, wrt=tuple(checked))(*args)
    elif order == 2:
        raise ValueError(f"order=2 checks a function returning one number, but "
                         f"{f.__qualname__} returned shape {y.shape}; check a scalar "
                         "such as np.sum(u * f(x)) instead")
    else:
        u = rng.standard_normal(y.shape).astype(y.dtype)
        value = _contracted(f, u)
        gradients = [vjp(f, *args)[1](u)[i] for i in checked]
    _compare(f, "gradient", value, gradients, args, checked, tolerance)
    if order == 2:
        v = {i: [rng.standard_normal(np.shape(leaf)) if _dtype(leaf) is not None else None
                 for leaf in nest.flatten(args[i])] for i in checked}
        gradient = grad(f, wrt=tuple(checked))
        _compare(f, "gradient of the directional derivative <grad f, v> (a Hessian-vector "
             "product)", _directional(gradient, checked, v),
                 _hessian_vector(gradient, args, checked, v), args, checked, tolerance)


def _checked(f, args, wrt):
    """The positions of the arguments to check, each holding real floats."""
    if wrt is None:
        checked = [i for i, a in enumerate(args) if any(
            _dtype(leaf) is not None for leaf in nest.flatten(a))]
        if not checked:
            raise ValueError(f"none of the arguments of {f.__qualname__} holds real "
                             "floating values: there is no gradient to check")
    else:
        checked = list(dict.fromkeys(_positions(f, wrt)[0]))
    for i in checked:
        if i >= len(args):
            raise ValueError(f"wrt names {_name(f, i)}, but only {len(args)} arguments "
                             "were given")
        leaves = nest.flatten(args[i])
        if any(np.iscomplexobj(leaf) for leaf in leaves):
            raise ValueError(f"check_grads checks real arguments; {_name(f, i)} is complex: "
                             "check its real and imaginary parts as two real arguments")
        if not any(_dtype(leaf) is not None for leaf in leaves):
            raise ValueError(f"{_name(f, i)} holds no real floating values: there is no "
                             "gradient to check; leave it out of wrt")
    return checked


def _dtype(leaf):
    """The dtype of a real floating leaf (float64 for a Python float), else None."""
    dtype = np.asarray(leaf).dtype if not isinstance(leaf, (str, bytes)) else None
    return dtype if dtype is not None and dtype.kind == "f" else None


def _output(f, args):
    y = np.asarray(_raw(f(*args)))
    if y.dtype.kind not in "f":
        raise ValueError(f"check_grads needs {f.__qualname__} to return real floating "
                         f"values, but it returned dtype {y.dtype}")
    return y


def _scalar(f):
    return lambda args: float(np.asarray(_raw(f(*args)), np.float64).reshape(()))


def _contracted(f, u):
    u = u.astype(np.float64)
    return lambda args: float(np.sum(u * np.asarray(_raw(f(*args)), np.float64)))


def _directional(gradient, checked, v):
    """``args -> <gradient(*args), v>``, in float64."""
    def value(args):
        total = 0.0
        for i, g in zip(checked, gradient(*args)):
            for gl, vl in zip(nest.flatten(g), v[i]):
                if vl is not None:
                    total += float(np.sum(np.asarray(gl, np.float64) * vl))
        return total
    return value


def _hessian_vector(gradient, args, checked, v):
    """srcdiff's gradient of ``<gradient(*args), v>``: a tape records ``gradient``
    (which runs on nested tapes when its arguments are watched Tensors)."""
    watched = list(args)
    sources = []
    for i in checked:
        leaves = [convert_to_tensor(np.asarray(leaf)) if vl is not None else leaf
                  for leaf, vl in zip(nest.flatten(args[i]), v[i])]
        sources += [leaf for leaf, vl in zip(leaves, v[i]) if vl is not None]
        watched[i] = nest.pack_sequence_as(args[i], leaves)
    with GradientTape() as tape:
        tape.watch(sources)
        directional = 0.0
        for i, g in zip(checked, gradient(*watched)):
            for gl, vl in zip(nest.flatten(g), v[i]):
                if vl is not None:
                    directional = directional + (convert_to_tensor(gl) * vl).sum()
    if not sources or not hasattr(directional, "numpy"):
        raise AssertionError("srcdiff's gradient did not depend on the arguments on a tape")
    found = iter(tape.gradient(directional, sources,
                               unconnected_gradients=UnconnectedGradients.ZERO))
    return [nest.pack_sequence_as(args[i], [next(found).numpy() if vl is not None else None
                                            for vl in v[i]]) for i in checked]


def _compare(f, what, value, computed, args, checked, tolerance):
    """Raise AssertionError unless each entry of ``computed`` (by checked argument, a
    pytree like it) matches central differences of ``value`` (``args -> float``)."""
    eps, rtol = tolerance
    for i, g in zip(checked, computed):
        worst = None  # (excess, path, srcdiff's, finite difference's)
        failures = entries = 0
        leaves = nest.flatten(args[i])
        g_leaves = nest.flatten(g) if isinstance(args[i], CONTAINERS) else [g]
        for k, (leaf, path) in enumerate(zip(leaves, nest.flatten(_paths(args[i])))):
            if _dtype(leaf) is None:
                continue
            ours = np.asarray(_raw(g_leaves[k]) if k < len(g_leaves) else None, np.float64)
            if ours.shape != np.shape(leaf):
                raise AssertionError(
                    f"check_grads({f.__qualname__}): srcdiff's {what} with respect to "
                    f"{_name(f, i)}{path} has shape {ours.shape}, but the argument has "
                    f"shape {np.shape(leaf)}")
            for index in np.ndindex(np.shape(leaf)):
                estimate = _difference(value, args, i, k, index, eps)
                got = float(ours[index])
                allowed = rtol * (1 + abs(estimate))
                excess = abs(got - estimate) / allowed if np.isfinite(got) else np.inf
                entries += 1
                if excess > 1:
                    failures += 1
                    if worst is None or excess > worst[0]:
                        worst = (excess, path + _index(index), got, estimate, allowed)
        if worst is not None:
            _, where, got, estimate, allowed = worst
            raise AssertionError(
                f"check_grads({f.__qualname__}): the {what} with respect to {_name(f, i)} "
                f"is wrong at {_short(f, i)}{where}: srcdiff gives {got!r}, central finite "
                f"differences (eps={eps:g}) give {estimate!r}; |difference| "
                f"{abs(got - estimate):.3g} > tolerance {allowed:.3g} = rtol {rtol:g} * "
                f"(1 + |finite difference|). {failures} of {entries} entries differ.")


def _difference(value, args, i, k, index, eps):
    """The central difference of ``value`` along entry ``index`` of leaf ``k`` of
    argument ``i``, divided by the step as the dtype represents it."""
    leaves = nest.flatten(args[i])
    leaf = leaves[k]
    sides = []
    for sign in (1, -1):
        if isinstance(leaf, np.ndarray):
            moved = leaf.copy()
            moved[index] = moved[index] + sign * eps
            at = moved[index]
        else:
            moved = at = type(leaf)(leaf + sign * eps)
        shifted = list(args)
        shifted[i] = nest.pack_sequence_as(args[i], leaves[:k] + [moved] + leaves[k + 1:])
        sides.append((value(shifted), float(at)))
    (plus, x_plus), (minus, x_minus) = sides
    return (plus - minus) / (x_plus - x_minus)


def _paths(structure, path=""):
    """``structure`` with each leaf replaced by its path (``['W'][0]``): flattened, the
    paths come in ``nest.flatten``'s order."""
    if isinstance(structure, dict):
        return {key: _paths(value, f"{path}[{key!r}]") for key, value in structure.items()}
    if isinstance(structure, (list, tuple)):
        fields = getattr(structure, "_fields", None)
        parts = [_paths(value, f"{path}.{fields[n]}" if fields else f"{path}[{n}]")
                 for n, value in enumerate(structure)]
        return type(structure)(*parts) if fields else type(structure)(parts)
    return path


def _index(index):
    return f"[{', '.join(map(str, index))}]" if index else ""


def _parameters(f):
    try:
        return list(inspect.signature(inspect.unwrap(f)).parameters)
    except (TypeError, ValueError):
        return []


def _short(f, i):
    params = _parameters(f)
    return params[i] if i < len(params) else f"args[{i}]"


def _name(f, i):
    return f"{_short(f, i)!r} (argument {i})"

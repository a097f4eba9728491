"""How the compiler's tests check a gradient, and helper functions called across modules.

``check_grad(f, args, wrt)`` differentiates ``f`` three ways and compares:

- compiled: ``sd.grad(f, wrt)`` (the source transformation);
- eager: ``f`` run on ``sd.constant`` float64 inputs under ``sd.GradientTape``;
- central finite differences of the plain function in float64 (``util``).

It also checks what ``sd.grad`` promises for every call: each gradient has its
argument's shape and dtype, and no argument is modified; and, where the function's
unit has a batched backward pass (the one jacobians run), that it gives for a batch
of cotangents what the plain pass gives for each (``check_batched``).

``import_source`` writes generated source to a file and imports it (the compiler
reads functions back from their files).  The functions at the bottom are called by
programs in the test modules, so that calls into another module are exercised.
"""
import importlib.util
import inspect
import sys

import numpy as np

import srcdiff as sd
from srcdiff.api import _prepare
from srcdiff.function import Units
from util import numerical_grad

RTOL, ATOL = 1e-6, 1e-7


def check_grad(f, args, wrt=0, eager=True):
    """Assert compiled == eager == finite differences for ``f(*args)`` w.r.t. ``wrt``.

    ``eager=False`` for programs the eager tape cannot follow: writes into an
    ndarray (``out[i] = v``) or ``math.*`` on a Tensor turn the tracked value into
    a plain number, as they would in TensorFlow.  Returns the compiled gradients."""
    positions = _positions(f, wrt)
    before = [_copy(a) for a in args]
    compiled = sd.grad(f, wrt)(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b, err_msg="sd.grad modified an argument")
    grads = (compiled,) if not isinstance(wrt, (tuple, list)) else compiled
    assert isinstance(grads, tuple) and len(grads) == len(positions)
    for g, i in zip(grads, positions):
        _assert_like(g, args[i])
        np.testing.assert_allclose(g, finite_difference(f, args, i), rtol=1e-5, atol=1e-6,
                                   err_msg=f"compiled gradient w.r.t. argument {i} vs "
                                           "finite differences")
    if eager:
        for g, e, i in zip(grads, eager_grads(f, args, positions), positions):
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL,
                                       err_msg=f"compiled vs eager, argument {i}")
    check_batched(f, args, positions)
    return compiled


def check_three_ways(f, args, wrt=0):
    """``check_grad``, then ``@sd.function``'s value outside a tape and its gradient
    under one (the compiled call as one tape entry) against the eager tape's."""
    check_grad(f, args, wrt)
    compiled = sd.function(f)
    np.testing.assert_allclose(compiled(*args), f(*args), rtol=1e-12)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    taped = eager_grads(compiled, args, positions)
    for g, e in zip(taped, eager_grads(f, args, positions)):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-9, atol=1e-12)


BATCHED = {}  # why a unit has no batched backward pass -> how many programs said so


def check_batched(f, args, positions, rows=(1.0, -0.5, 2.0)):
    """Assert that the batched backward pass of ``f``'s unit (as ``sd.jacobian`` gets
    it) gives, for a batch of ``rows`` times the seed, the stack of what the plain
    backward pass gives for each; returns why there is none (None if there is one)."""
    order = sorted(set(positions))
    unit, raw = _prepare(Units(f, tuple(order), batched=True), list(args))
    if unit.backward_rows is None:
        BATCHED[unit.not_batched] = BATCHED.get(unit.not_batched, 0) + 1
        return unit.not_batched
    BATCHED[None] = BATCHED.get(None, 0) + 1
    y, tape = unit.run(raw)
    seeds = [r if type(y) is float else r * np.ones_like(y) for r in rows]
    per_row = [unit.backward(tape, seed) for seed in seeds]
    batch = unit.backward_batch(tape, np.stack([np.asarray(seed) for seed in seeds]))
    if len(order) == 1:
        per_row, batch = [(g,) for g in per_row], (batch,)
    for j, i in enumerate(order):
        if batch[j] is None:
            assert all(g[j] is None for g in per_row), f"argument {i}: batched None"
            continue
        expected = np.stack([np.broadcast_to(g[j], np.shape(args[i])) for g in per_row])
        np.testing.assert_allclose(batch[j], expected, rtol=1e-12, atol=1e-12,
                                   err_msg=f"batched vs row by row, argument {i}")
    return None


def finite_difference(f, args, i):
    """The gradient of scalar ``f`` w.r.t. ``args[i]`` by central differences."""
    def partial(x):
        varied = [_copy(a) for a in args]  # f may write into an argument
        varied[i] = float(x) if isinstance(args[i], float) else x.copy()
        return float(f(*varied))
    return numerical_grad(partial, args[i])


def eager_grads(f, args, positions):
    """Gradients from the eager tape: the active arguments as float64 constants."""
    inputs = [sd.constant(np.asarray(a, np.float64)) if k in positions else a
              for k, a in enumerate(args)]
    with sd.GradientTape() as tape:
        for k in positions:
            tape.watch(inputs[k])
        y = f(*inputs)
    if not isinstance(y, sd.Tensor):  # no active input reached the result
        return [np.zeros(np.shape(args[k])) for k in positions]
    grads = tape.gradient(y, [inputs[k] for k in positions])
    return [np.zeros(np.shape(args[k])) if g is None else np.asarray(g)
            for g, k in zip(grads, positions)]


def _assert_like(g, arg):
    if isinstance(arg, float):
        assert isinstance(g, float), f"gradient of a float is {type(g).__name__}"
        return
    assert isinstance(g, np.ndarray), f"gradient is {type(g).__name__}, not an ndarray"
    assert g.shape == np.shape(arg), f"gradient shape {g.shape} != argument's {np.shape(arg)}"
    assert g.dtype == np.asarray(arg).dtype, f"gradient dtype {g.dtype} != {arg.dtype}"


def _positions(f, wrt):
    params = list(inspect.signature(f).parameters)
    return [params.index(w) if isinstance(w, str) else w
            for w in (wrt if isinstance(wrt, (tuple, list)) else [wrt])]


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def import_source(directory, name, source):
    """Write ``source`` to ``directory/name.py`` and import it as a fresh module (the
    compiler reads a function's source from its file)."""
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds the source of functions through it
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------ called from other modules' programs

def scaled_sine(x, scale):
    """A helper in another module: sd.grad follows the call into this file."""
    return np.sin(x) * scale


def soft_clip(x, limit):
    """Another module's helper with a branch and a loop."""
    y = x
    for _ in range(2):
        if np.sum(y * y) > limit:
            y = np.tanh(y)
        else:
            y = y * 1.1
    return y


def helper_with_try(x):
    """A helper the compiler cannot transform: the error points into this file."""
    try:
        return x * 2.0
    except ValueError:
        return x


def apply(fn, z):
    """A helper given a function (in another module: called across modules)."""
    return fn(z) * 2.0


def apply_twice(fn, z):
    """A helper that hands the function it is given on to another."""
    return apply(fn, apply(fn, z))


class Dense:
    """A callable object whose attributes are arrays (constants to the gradient)."""

    def __init__(self, weights, bias):
        self.weights = weights
        self.bias = bias

    def __call__(self, x):
        return np.tanh(self.weights @ x + self.bias)

    def twice(self, x):
        return self(self(x)) * 2.0

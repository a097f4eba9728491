"""Closures passed to helpers (closures.py): a lambda or local function that reads
active locals of the function that makes it, handed to a user function, which calls
it, or hands it on.  The values it closes over are passed along with it, so their
gradients flow back.  Each program is checked three ways (``check_three_ways``:
``sd.grad`` vs the eager tape vs finite differences, then ``@sd.function`` outside
and under a tape); what is not modelled is refused with a CompileError."""
import functools

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import Dense, apply, apply_twice, check_three_ways

RNG = np.random.default_rng(11)
X = RNG.uniform(0.2, 0.9, size=3)
W = RNG.normal(size=3)


def euler(rhs, y, h, n):
    for k in range(n):
        y = y + h * rhs(y, h * k)
    return y


def integrate(f, y0, steps, *args):  # examples/ode_net.py's rk4, in small
    y = y0
    states = [y0]
    for k in range(steps):
        y = y + 0.1 * f(y, 0.1 * k, *args)
        states.append(y)
    return np.stack(states)


def walk(f, y, n):  # recursive: it hands the closure on to itself
    if n == 0:
        return y
    return walk(f, f(y), n - 1)


def with_defaults(v, act, scale=2.0, shift=0.5):
    return act(v) * scale + shift


def keyword_caller(rhs, y):
    return rhs(y, t=0.5) + rhs(t=1.0, y=y)


# --- lambdas and local functions passed to helpers --------------------------------

def lambda_over_a_parameter(x, w):
    return np.sum(apply(lambda t: np.tanh(t * w), x))


def lambda_over_computed_locals(x, w):
    s = np.sum(x * w)
    a = np.sin(w)
    return np.sum(apply(lambda t: t * s + a, x) * apply(lambda t: t * t, x))


def local_def_passed_and_called(x, w):
    def act(t):
        u = t * w
        if np.sum(u) > 0:
            return np.tanh(u)
        return u * u
    return np.sum(apply(act, x) + act(x) + apply_twice(act, x * x))


def handed_on_through_two_helpers(x, w):
    return np.sum(apply_twice(lambda t: np.sin(t) * w, x))


def ode_with_a_closure(x, w):
    return np.sum(euler(lambda y, t: -y * w + np.cos(t) * x, x, 0.1, 4))


def closure_over_a_list_of_layers(x, w):
    layers = [(np.outer(w, w), w), (np.eye(3) * 0.5, x * 0.1)]

    def dynamics(y, t):
        for m, b in layers:
            y = np.tanh(y @ m + b)
        return y
    return np.sum(integrate(dynamics, x, 3))


def helper_with_star_args(x, w):
    return np.sum(integrate(lambda y, t, c: y * c * w, x, 3, x))


def closure_sees_a_rebinding(x, w):
    a = w
    scale = lambda t: t * a  # noqa: E731
    first = apply(scale, x)
    a = np.exp(w)  # Python reads a when scale runs: the new value from here on
    return np.sum(first + apply(scale, x))


def a_new_closure_every_trip(x, w):
    y = x
    for k in range(3):
        c = w * float(k + 1)
        y = apply(lambda t: np.sin(t) * c, y)
    return np.sum(y)


def keywords_and_defaults(x, w):
    return np.sum(with_defaults(x, lambda t: t * w, shift=1.5)
                  + with_defaults(act=lambda t: np.cos(t) + w, v=x)
                  + keyword_caller(lambda y, t, k=2.0: y * w * t * k, x))


def to_a_recursive_helper(x, w):
    return np.sum(walk(lambda t: np.sin(t) * w + x, x, 3))


PROGRAMS = [to_a_recursive_helper, lambda_over_a_parameter, lambda_over_computed_locals,
            local_def_passed_and_called, handed_on_through_two_helpers, ode_with_a_closure,
            closure_over_a_list_of_layers, helper_with_star_args, closure_sees_a_rebinding,
            a_new_closure_every_trip, keywords_and_defaults]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_a_closure_passed_to_a_helper_gets_its_gradients(f):
    check_three_ways(f, (X.copy(), W.copy()), wrt=(0, 1))
    check_three_ways(f, (-X, 0.5 * W), wrt=(0, 1))


def test_the_closure_reads_the_value_at_the_call():
    # a plain check against the definition, besides the eager tape
    g = sd.grad(closure_sees_a_rebinding, 1)(X, W)
    np.testing.assert_allclose(g, 2 * X + 2 * X * np.exp(W), rtol=1e-12)


# --- functools.partial made in the body ---------------------------------------------

def mixed(a, x, c=1.0):
    return np.sin(a * x) * c


def times(p, q):
    return p * q


def partial_called(x, w):
    p = functools.partial(mixed, w, c=x)
    return np.sum(p(x) + p(x, c=w))  # the call's keyword wins


def partial_to_helpers(x, w):
    p = functools.partial(mixed, w, c=x)
    return np.sum(apply(p, x) + apply_twice(p, x))


def partial_of_a_ufunc(x, w):
    p = functools.partial(np.multiply, w)
    return np.sum(apply(p, x) * p(x))


def partial_keeps_the_values_it_was_given(x, w):
    a = w
    p = functools.partial(times, a)
    a = np.exp(w)  # p still multiplies by w
    return np.sum(p(x) * a)


@pytest.mark.parametrize("f", [partial_called, partial_to_helpers, partial_of_a_ufunc,
                               partial_keeps_the_values_it_was_given],
                         ids=lambda f: f.__name__)
def test_a_partial_of_active_values_gets_their_gradients(f):
    check_three_ways(f, (X.copy(), W.copy()), wrt=(0, 1))


# --- bound methods and callable instances held in locals ----------------------------

LAYER = Dense(RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3))


def methods_held_in_locals(x, w):
    layer = LAYER  # a callable instance: its attributes are constants
    twice = LAYER.twice  # a bound method
    return np.sum(layer(x) * w + twice(x) * w + apply(layer, x * w) + apply_twice(layer, w))


def test_a_bound_method_or_instance_in_a_local_is_called_as_its_method():
    check_three_ways(methods_held_in_locals, (X.copy(), W.copy()), wrt=(0, 1))


# --- refused ------------------------------------------------------------------------

def method_bound_twice(x):
    g = LAYER.twice
    if np.sum(x) > 0:
        g = LAYER
    return np.sum(g(x))


def returns_a_partial(x):
    p = functools.partial(times, x)
    return np.sum(p(x)), p


def rebinds_a_partial(x):
    p = functools.partial(times, x)
    p = functools.partial(times, x * 2.0)
    return np.sum(p(x))


def returns_a_lambda(x):
    s = np.sum(x)
    return np.sum(x), lambda t: t * s


def stores_a_lambda(x):
    fs = [lambda t: t * x]
    return np.sum(apply(fs[0], x))


def to_numpy(x):
    return np.sum(np.apply_along_axis(lambda t: t * x[0], 0, x))


def writes_nonlocal(x):
    total = x

    def act(t):
        nonlocal total
        total = total + t
        return t * x
    return np.sum(apply(act, x) + total)


def into_star_args(x):
    return np.sum(integrate(lambda y, t, c: c(y), x, 2, lambda y: y * x))


def reads_star_args(x, *rest):
    return np.sum(apply(lambda t: t * rest[0], x))


def calls_another_local_function(x):
    def inner(t):
        return t * x
    return np.sum(apply(lambda t: inner(t) * 2.0, x))


@pytest.mark.parametrize("f, words", [
    (returns_a_lambda, "lambda is not supported"),
    (stores_a_lambda, "lambda is not supported"),
    (to_numpy, "lambda is not supported"),
    (writes_nonlocal, "nonlocal"),
    (into_star_args, r"\*args"),
    (calls_another_local_function, "local function"),
    (reads_star_args, "renamed"),
    (returns_a_partial, "partial 'p' is used other than"),
    (rebinds_a_partial, "partial"),
    (method_bound_twice, "no derivative rule"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_closures_not_modelled_are_refused(f, words):
    with pytest.raises(sd.CompileError, match=words):
        sd.grad(f)(*(X.copy(),) * (2 if f is reads_star_args else 1))

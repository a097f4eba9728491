"""Functions as values and recursion in compiled code: local functions (lambdas and
nested defs, closures over active locals) inlined, default parameter values of the
differentiated function, function values passed to helpers, recursive and mutually
recursive helpers.  Each program is checked three ways: ``sd.grad`` (compiled vs
eager vs finite differences), ``@sd.function`` outside a tape (its value) and under
a tape (its gradient vs the eager tape's)."""
import functools

import numpy as np
import pytest

import srcdiff as sd
from srcdiff.compiler.cache import CACHE
from compiler_programs import (Dense, apply, apply_twice, check_grad, check_three_ways,
                               eager_grads)

RNG = np.random.default_rng(9)
X = RNG.uniform(0.2, 0.9, size=3)
W = RNG.normal(size=3)


# --- lambdas as the differentiated function -----------------------------------

MODULE_LAMBDA = lambda x: np.sum(np.tanh(x * W) ** 2)  # noqa: E731
LAMBDA_WITH_A_DEFAULT = lambda x, c=0.5: np.sum(np.exp(x * c)) * c  # noqa: E731
TWO_ON_ONE_LINE = (lambda x: np.sum(x ** 3), lambda x: np.sum(np.cos(x) * W))  # noqa: E731
RECURSIVE_LAMBDA = lambda x, n: x if n == 0 else np.sin(RECURSIVE_LAMBDA(x, n - 1)) * x  # noqa
CALLS_A_HELPER = lambda x: np.sum(power(x, 2) * W)  # noqa: E731


def top_recursive_lambda(x):
    return np.sum(RECURSIVE_LAMBDA(x, 3))


@pytest.mark.parametrize("f", [MODULE_LAMBDA, LAMBDA_WITH_A_DEFAULT, *TWO_ON_ONE_LINE,
                               CALLS_A_HELPER, top_recursive_lambda],
                         ids=["module", "default", "first_on_a_line", "second_on_a_line",
                              "calls_a_helper", "recursive"])
def test_a_lambda_is_compiled_like_a_def(f):
    check_three_ways(f, (X.copy(),))


def test_a_lambda_without_source_is_refused():
    made = eval("lambda x: x * 2.0")  # noqa: S307  (no file holds its source)
    with pytest.raises(sd.CompileError, match="lambda"):
        sd.grad(made)(1.0)


# --- local functions ----------------------------------------------------------

def closure_over_active_local(x):
    a = np.sin(x)
    scale = lambda t, k=2.0: t * a * k  # noqa: E731
    return np.sum(scale(x) + scale(x * x, k=0.5))


def nested_defs_calling_each_other(x):
    s = np.sum(x)

    def act(t):
        if s > 0:
            return np.tanh(t) * s
        u = t * W * 0.3
        return u * u

    def twice(t):
        return act(act(t))
    y = twice(x)
    for i in range(3):
        y = y + act(y * float(i))
    return np.sum(y)


def closure_reads_the_value_at_call_time(x):
    a = x

    def times_a(t):
        return t * a
    y = times_a(x)
    a = np.exp(x)  # the closure sees the new a on the next call
    return np.sum(y + times_a(x))


def nested_def_with_a_loop_and_a_return_inside(x):
    def first_large(t):
        for i in range(3):
            if t[i] > 0.5:
                return t * t[i]
        return t
    return np.sum(first_large(x) + first_large(x * 0.1))


def writes_into_an_enclosing_array(x):
    out = np.zeros(3)

    def put(v, k):
        out[k] = v[k] * v[0]
        return v
    return np.sum(put(x, 0) * out + put(x, 2) + out)


def times(p, q):
    return p * q


def reads_before_the_call_what_the_call_changes(x):
    a = np.zeros(3)

    def reset(v):
        np.copyto(a, np.ones(3))  # in place: what was read before the call stays
        return v
    y = np.sum(a[0] * x + reset(x) + a[1] * x)
    a[0] = 0.0
    return y + np.sum(times(q=a[0] * x, p=reset(x)))


@pytest.mark.parametrize("f", [closure_over_active_local, nested_defs_calling_each_other,
                               closure_reads_the_value_at_call_time,
                               nested_def_with_a_loop_and_a_return_inside,
                               reads_before_the_call_what_the_call_changes],
                         ids=lambda f: f.__name__)
def test_local_functions_are_inlined(f):
    check_three_ways(f, (X.copy(),))
    check_three_ways(f, (-X,))


def test_a_local_function_writing_into_an_enclosing_array():
    # the eager tape cannot follow writes into an ndarray: compiled vs finite differences
    for x in (X.copy(), -X):
        g = check_grad(writes_into_an_enclosing_array, (x,), eager=False)
        taped = eager_grads(sd.function(writes_into_an_enclosing_array), (x,), (0,))[0]
        np.testing.assert_allclose(taped, g, rtol=1e-12)


def returns_a_local_function(x):
    def inner(t):
        return t * 2.0
    return np.sum(inner(x)), inner


def rebinds_a_local_function(x):
    f = lambda t: t * 2.0  # noqa: E731
    if np.sum(x) > 0:
        f = np.tanh
    return np.sum(f(x))


def defined_in_a_branch(x):
    if np.sum(x) > 0:
        def inner(t):
            return t * 2.0
        return np.sum(inner(x))
    return np.sum(x)


def called_in_a_while_test(x):
    small = lambda t: np.sum(t) < 10.0  # noqa: E731
    while small(x):
        x = x * 2.0
    return np.sum(x)


def recursive_local(x):
    def inner(t, n):
        if n == 0:
            return t
        return inner(t * 2.0, n - 1)
    return np.sum(inner(x, 2))


@pytest.mark.parametrize("f, words", [
    (returns_a_local_function, "used other than by calling it"),
    (rebinds_a_local_function, "bound again"),
    (defined_in_a_branch, "top level"),
    (called_in_a_while_test, "'while' test"),
    (recursive_local, "is recursive"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_local_functions_not_modelled_are_refused(f, words):
    with pytest.raises(sd.CompileError, match=words):
        sd.grad(f)(X.copy())


# --- default parameter values of the differentiated function ------------------

def with_defaults(v, c=2.0, w=W):
    return np.sum(np.sin(v * c) * w)


def test_defaults_of_the_differentiated_function_are_bound():
    check_three_ways(with_defaults, (X.copy(),))
    check_three_ways(with_defaults, (X.copy(), 3.0), wrt=(0, 1))
    np.testing.assert_allclose(sd.grad(with_defaults, wrt="c")(X, 2.0),
                               np.sum(np.cos(X * 2.0) * W * X))
    y, pullback = sd.vjp(with_defaults, X)
    assert len(pullback(1.0)) == 1  # one adjoint per argument given, not per default


def identity(t):
    return t


def dense(v, k, activation=identity):
    return activation(v * k)


def helper_with_a_function_default(v):
    return np.sum(dense(v, 2.0) + dense(v, 3.0, np.tanh))


def activated(v, act=np.tanh):
    return np.sum(act(v) * W)


def test_a_default_that_is_a_function_is_called():
    check_three_ways(helper_with_a_function_default, (X.copy(),))
    check_three_ways(activated, (X.copy(),))
    check_three_ways(activated, (X.copy(), np.sin))
    # each function passed is its own compile: no unit of tanh answers for sin
    np.testing.assert_allclose(sd.grad(activated)(X, np.sin), np.cos(X) * W)
    np.testing.assert_allclose(sd.grad(activated)(X), (1 - np.tanh(X) ** 2) * W)


# --- recursion ------------------------------------------------------------------

def power(x, n):
    if n == 0:
        return x * 0.0 + 1.0
    return x * power(x, n - 1)


def product_tree(x):  # divide and conquer: the depth follows the shape
    if x.shape[0] == 1:
        return np.sin(x[0])
    h = x.shape[0] // 2
    return product_tree(x[:h]) * product_tree(x[h:]) + 1.0


def even_steps(x, n):
    if n == 0:
        return x
    return np.sin(odd_steps(x, n - 1))


def odd_steps(x, n):
    if n == 0:
        return x * 2.0
    return np.cos(even_steps(x, n - 1)) * x


def swaps(a, b, n):  # the active argument moves: two units that call each other
    if n == 0:
        return a * np.exp(b)
    return swaps(b * 0.5, a, n - 1) + a


def top_power(x):
    return np.sum(power(x, 3))


def top_tree(x):
    return product_tree(x)


def top_mutual(x):
    return np.sum(even_steps(x, 3) + odd_steps(x, 4))


def top_swaps(x, y):
    return np.sum(swaps(x, y, 3))


@pytest.mark.parametrize("f", [top_power, top_tree, top_mutual], ids=lambda f: f.__name__)
def test_recursion_calls_one_compiled_unit(f):
    x = RNG.uniform(0.2, 0.9, size=5)
    check_three_ways(f, (x,))
    check_three_ways(f, (-x,))


def test_recursion_with_arguments_that_change_places():
    check_three_ways(top_swaps, (X.copy(), W.copy()), wrt=0)
    check_three_ways(top_swaps, (X.copy(), W.copy()), wrt=(0, 1))


def star_steps(n, *xs):  # the active arguments are *args: the stand-in counts them all
    if n == 0:
        return xs[0] * xs[1]
    return star_steps(n - 1, np.sin(xs[0]), xs[1] * 2.0) + xs[1]


def top_star_steps(x, y):
    return np.sum(star_steps(2, x, y))


def test_recursion_whose_active_arguments_are_star_args():
    check_three_ways(top_star_steps, (X.copy(), W.copy()), wrt=(0, 1))


def sum_of_powers(x, n):
    if n == 0:
        return np.sum(x * 0.0)
    return np.sum(x ** 2) + sum_of_powers(x * 0.5, n - 1)


def test_a_recursive_function_is_compiled_once_for_every_depth():
    sd.clear_cache()
    check_three_ways(sum_of_powers, (X.copy(), 4))
    assert "sum_of_powers_forward_1(" in sd.adjoint_source(sum_of_powers)  # not unrolled
    g = sd.grad(sum_of_powers)
    np.testing.assert_allclose(g(X, 2), 2 * X * (1 + 0.25))
    units = CACHE.size(sum_of_powers)
    np.testing.assert_allclose(g(X, 7), 2 * X * sum(0.25 ** k for k in range(7)))
    assert CACHE.size(sum_of_powers) == units  # a deeper recursion: the same unit


def passes_on_an_argument_it_never_uses(x, y, n):
    if n == 0:
        return np.sum(x * 2.0)
    return passes_on_an_argument_it_never_uses(x, y, n - 1) * np.sum(x)


def drops_an_argument(x, y, n):
    if n == 0:
        return np.sum(x * 2.0)
    return drops_an_argument(x, x, n - 1) * np.sum(x)


def test_recursion_through_an_argument_no_path_uses():
    dx, dy = sd.grad(passes_on_an_argument_it_never_uses, wrt=(0, 1))(X, W, 2)
    np.testing.assert_array_equal(dy, np.zeros(3))
    check_grad(passes_on_an_argument_it_never_uses, (X, W, 2), wrt=0)


def writes_its_argument(x, n):
    x[0] = 1.0
    if n == 0:
        return x
    return writes_its_argument(x * 2.0, n - 1)


def test_recursion_the_compiler_does_not_model_is_refused():
    with pytest.raises(sd.CompileError, match="does not use its argument"):
        sd.grad(drops_an_argument, wrt=(0, 1))(X, W, 2)
    with pytest.raises(sd.CompileError, match="writes into its arguments"):
        sd.grad(lambda_writes)(X.copy())


def lambda_writes(x):
    return np.sum(writes_its_argument(x, 2))


# --- functions passed as arguments ------------------------------------------------

def swish(t):
    return t * np.tanh(t)


def euler(rhs, y, h, n):
    for _ in range(n):
        y = y + h * rhs(y)
    return y


def logistic(y):
    return y * (1.0 - y) + np.sin(y)


def activations(x):
    return np.sum(apply(np.tanh, x) + apply(swish, x * x) + apply_twice(np.sin, x))


def ode(x):
    return np.sum(euler(logistic, x, 0.1, 4) * euler(np.cos, x, 0.2, 2))


def through_two_levels(x):
    return np.sum(apply_twice(swish, x))


@pytest.mark.parametrize("f", [activations, ode, through_two_levels], ids=lambda f: f.__name__)
def test_a_function_passed_to_a_helper_is_compiled_in(f):
    check_three_ways(f, (X.copy(),))
    check_three_ways(f, (-X,))


ACTIVATION = np.tanh


def reads_a_global_activation(x):
    return np.sum(apply(ACTIVATION, x))


def test_the_helper_follows_the_function_a_global_names():
    global ACTIVATION
    check_grad(reads_a_global_activation, (X.copy(),))
    ACTIVATION = swish  # rebound: compiled again, for swish
    try:
        check_grad(reads_a_global_activation, (X.copy(),))
        np.testing.assert_allclose(sd.grad(reads_a_global_activation)(X),
                                   2 * (np.tanh(X) + X / np.cosh(X) ** 2))
    finally:
        ACTIVATION = np.tanh


def rebinds_its_function(fn, z):
    if np.sum(z) > 10.0:
        fn = np.sin
    return fn(z)


def passes_a_function_the_helper_rebinds(x):
    return np.sum(rebinds_its_function(np.tanh, x))


def test_function_values_not_modelled_are_refused():
    with pytest.raises(sd.CompileError):
        sd.grad(passes_a_function_the_helper_rebinds)(X.copy())


# --- callable instances and bound methods -------------------------------------------

class Scaled:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, x):
        return self.scale * np.sin(x)


LAYER = Dense(RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3))
SCALED = Scaled(np.array([1.0, 2.0, 3.0]))


def calls_a_layer(x):
    return np.sum(LAYER(x) * x + LAYER.twice(x))


def calls_a_method(x):
    return np.sum(SCALED.apply(x) + apply(LAYER, x))


@pytest.mark.parametrize("f", [calls_a_layer, calls_a_method], ids=lambda f: f.__name__)
def test_callable_instances_and_methods_are_compiled_with_self_constant(f):
    check_three_ways(f, (X.copy(),))


def test_attributes_of_self_are_read_when_called_and_rebinding_compiles_again():
    global SCALED
    before = SCALED
    try:
        check_grad(calls_a_method, (X.copy(),))
        SCALED.scale = np.array([3.0, 0.0, 1.0])  # written into: read when it runs
        check_grad(calls_a_method, (X.copy(),))
        SCALED = Dense(np.eye(3), np.zeros(3))  # another class: another method
        SCALED.apply = None
        with pytest.raises((AttributeError, TypeError, sd.CompileError)):
            sd.grad(calls_a_method)(X)
        SCALED = Scaled(np.ones(3))
        check_grad(calls_a_method, (X.copy(),))
    finally:
        SCALED = before
        SCALED.scale = np.array([1.0, 2.0, 3.0])


HOLDS_A_VARIABLE = Dense(sd.Variable(np.eye(3)), np.zeros(3))


def calls_an_object_holding_a_variable(x):
    return np.sum(HOLDS_A_VARIABLE(x))


def test_an_object_holding_variables_is_refused():
    with pytest.raises(sd.CompileError):
        sd.grad(calls_an_object_holding_a_variable)(X.copy())


# --- *args ----------------------------------------------------------------------

def weighted_terms(x, *terms):
    total = x * 0.0
    for k in range(len(terms)):
        total = total + terms[k] * float(k + 1)
    return total * x


def product_of(x, *factors):
    for f in factors:
        x = x * f
    return x


def first_two(x, *rest):
    a, b = rest
    return x * a + np.sin(b) + rest[-1]


def relays(x, *rest):
    return weighted_terms(x, *rest) + first_two(x, *rest) + np.sum(np.stack(rest), axis=0)


def varargs(x):
    return np.sum(relays(x, x * x, np.cos(x)) + weighted_terms(x) + product_of(x, 2.0 * x, x))


def varargs_at_the_top(x, *ys):
    return np.sum(x * ys[0] + np.tanh(ys[1]) * x)


def test_varargs_are_parameters_of_their_own():
    check_three_ways(varargs, (X.copy(),))
    check_three_ways(varargs_at_the_top, (X.copy(), W.copy(), -X), wrt=(0, 1))


def rebinds_its_varargs(x, *rest):
    rest = rest[:1]
    return x * rest[0]


def takes_keywords(x, **options):
    return x * options["scale"]


@pytest.mark.parametrize("helper", [rebinds_its_varargs, takes_keywords],
                         ids=lambda f: f.__name__)
def test_varargs_not_modelled_are_refused(helper):
    def loss(x):
        return np.sum(helper(x, x))
    with pytest.raises(sd.CompileError):
        sd.grad(loss)(X.copy())


# --- functools.partial -----------------------------------------------------------

def mixed(a, c, b=2.0):
    return a * b + np.sin(a) * c


BOUND_C = functools.partial(mixed, c=np.array([1.0, 2.0, 3.0]), b=3.0)
BOUND_A = functools.partial(mixed, np.array([0.5, -0.5, 1.5]))


def calls_partials(x):
    return np.sum(BOUND_C(x) + BOUND_C(x, b=0.5) + BOUND_A(x) * apply(BOUND_C, x))


def test_partials_are_calls_of_their_function_with_constants_bound():
    check_three_ways(calls_partials, (X.copy(),))


class Settings:
    pass


SETTINGS = Settings()
SETTINGS.act = np.tanh


def passes_an_attribute_of_data(x):
    return np.sum(apply(SETTINGS.act, x))


def test_a_function_read_from_a_data_object_is_not_compiled_in():
    with pytest.raises(sd.CompileError):  # SETTINGS.act may change while a unit stays
        sd.grad(passes_an_attribute_of_data)(X.copy())


SCALE = sd.Variable(np.array([1.0, 2.0, 3.0]), name="scale")


def lambda_reads_a_variable(x):
    f = lambda t: np.sin(t * SCALE)  # noqa: E731
    return np.sum(f(x) * x)


def test_a_variable_read_by_a_local_function_gets_its_gradient():
    x = sd.constant(X)
    grads = []
    for fn in (sd.function(lambda_reads_a_variable), lambda_reads_a_variable):
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        grads.append([np.asarray(g) for g in tape.gradient(y, [x, SCALE])])
    for compiled, eager in zip(*grads):
        np.testing.assert_allclose(compiled, eager, rtol=1e-12)

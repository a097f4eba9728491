"""Wrappers are never skipped: a ``functools.wraps`` decorator is compiled as written
(or refused), and a derivative of a derivative srcdiff made is the higher derivative
(computed on nested eager tapes), never the lower one."""
import functools

import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad, numerical_jacobian

X = np.array([0.3, 0.6, 0.9])


def f(x):
    return np.sin(x) * x ** 3


def df(x):
    return np.cos(x) * x ** 3 + 3 * x ** 2 * np.sin(x)


def d2f(x):
    return -np.sin(x) * x ** 3 + 6 * x ** 2 * np.cos(x) + 6 * x * np.sin(x)


def d3f(x):
    return -x ** 3 * np.cos(x) - 9 * x ** 2 * np.sin(x) + 18 * x * np.cos(x) + 6 * np.sin(x)


def total(x):
    return np.sum(f(x))


def g(x, y):
    return x * x * y + np.sin(y)


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


def doubled_any(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return wrapper


# ------------------------------------------------ decorators

def test_a_wraps_decorator_is_compiled_not_skipped():
    np.testing.assert_allclose(sd.grad(doubled(total))(X), 2 * df(X))
    compiled = sd.function(doubled(total))
    x = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = compiled(x)
    assert float(y) == pytest.approx(2 * np.sum(f(X)))
    np.testing.assert_allclose(tape.gradient(y, x), 2 * df(X))


def test_a_decorated_callee_is_compiled_not_skipped():
    scaled = doubled(total)

    def outer(x):
        return scaled(x) + 1.0

    np.testing.assert_allclose(sd.grad(outer)(X), 2 * df(X))


def test_a_decorator_the_compiler_cannot_read_is_refused():
    with pytest.raises(sd.CompileError, match=r"\*args"):
        sd.grad(doubled_any(total))(X)
    # a user's decorator around a derivative srcdiff made is not taken for that derivative
    with pytest.raises(sd.CompileError, match="cannot (differentiate|compile)"):
        sd.grad(doubled(sd.grad(f)))(0.7)  # its code is srcdiff's, compiled as written


# ------------------------------------------------ derivatives of derivatives

@pytest.mark.parametrize("x", [0.7, -1.3])
def test_second_and_third_derivatives(x):
    assert sd.grad(sd.grad(f))(x) == pytest.approx(d2f(x), rel=1e-12)
    assert sd.grad(sd.grad(sd.grad(f)))(x) == pytest.approx(d3f(x), rel=1e-12)
    value, second = sd.value_and_grad(sd.grad(f))(x)
    assert (value, second) == pytest.approx((df(x), d2f(x)), rel=1e-12)
    assert isinstance(sd.grad(sd.grad(f))(x), float)


def test_the_jacobian_of_a_gradient_is_the_hessian():
    hessian = sd.jacobian(sd.grad(total))(X)
    np.testing.assert_allclose(hessian, np.diag(d2f(X)), rtol=1e-12)

    def coupled(x):
        return np.sum(np.tanh(x) * x[::-1])

    hessian = sd.jacobian(sd.grad(coupled))(X)
    np.testing.assert_allclose(hessian, numerical_jacobian(sd.grad(coupled), X), rtol=1e-6)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12)
    assert hessian.shape == (3, 3) and hessian.dtype == X.dtype


def test_mixed_partials_with_wrt():
    x, y = 0.5, 2.0
    assert sd.grad(sd.grad(g, wrt=0), wrt=1)(x, y) == pytest.approx(2 * x)
    assert sd.grad(sd.grad(g, wrt="y"), wrt="x")(x, y) == pytest.approx(2 * x)
    dxy, dyy = sd.grad(sd.grad(g, wrt=1), wrt=(0, 1))(x, y)
    assert (dxy, dyy) == pytest.approx((2 * x, -np.sin(y)))
    assert sd.grad(sd.grad(g, wrt=0), wrt=0)(x, y) == pytest.approx(2 * y)
    dg_dx = sd.grad(g, wrt=0)
    assert sd.grad(dg_dx, wrt=0)(x, y) == pytest.approx(numerical_grad(lambda v: dg_dx(v, y), x))


def test_a_gradient_of_a_non_scalar_gradient_is_refused():
    with pytest.raises(ValueError, match="scalar output.*sd.jacobian"):
        sd.grad(sd.grad(total))(X)
    with pytest.raises(TypeError, match="one array"):
        sd.jacobian(sd.grad(g, wrt=(0, 1)))(0.5, 2.0)


class _Callable:
    def __call__(self, x):
        return x * x


@pytest.mark.parametrize("fn", [np.sin, _Callable(), functools.partial(np.sin)],
                         ids=["ufunc", "object", "partial of a ufunc"])
def test_a_callable_that_is_not_a_function_is_refused(fn):
    with pytest.raises(TypeError, match="needs a Python function defined with 'def'"):
        sd.grad(fn)(0.5)


def test_derivatives_of_a_partial_are_those_of_its_function():
    x, y = 0.5, 2.0
    assert sd.grad(functools.partial(g, y=y))(x) == pytest.approx(sd.grad(g)(x, y))
    assert sd.grad(sd.grad(functools.partial(g, x)))(y) == pytest.approx(-np.sin(y))


# ------------------------------------------------ derivatives under a tape

def test_a_tape_sees_how_a_gradient_depends_on_what_it_watches():
    x = sd.constant(0.7, dtype=sd.float64)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * sd.grad(f)(x)
    assert float(tape.gradient(y, x)) == pytest.approx(df(0.7) + 0.7 * d2f(0.7), rel=1e-12)


@pytest.mark.parametrize("make", [sd.constant, sd.Variable], ids=["Tensor", "Variable"])
def test_a_tape_sees_how_a_jacobian_depends_on_what_it_watches(make):
    x = make(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        value, gradient = sd.value_and_grad(total)(x)
        y = np.sum(sd.jacobian(f)(x)) + gradient[0] + value
    expected = d2f(X) + df(X)
    expected[0] += d2f(X[0])
    np.testing.assert_allclose(tape.gradient(y, x), expected, rtol=1e-12)


def test_sd_vjp_refuses_what_it_cannot_differentiate_exactly():
    with pytest.raises(TypeError, match="sd.vjp.*derivative srcdiff made"):
        sd.vjp(sd.grad(f), 0.7)
    x = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match="recorded by a tape"):
            sd.vjp(f, x)
    y, pullback = sd.vjp(f, X)  # not watched: compiled as before
    np.testing.assert_allclose(pullback(np.ones(3))[0], df(X), rtol=1e-12)


# A derivative of a derivative runs the function on eager tapes, which cannot follow a
# Tensor NumPy writes into an ndarray or makes one of; the compiler differentiates
# those.  NumPy turned the refusal into a ValueError (out[i] = t calls float(t)), or
# the tape raised a TypeError: valid code must be differentiated or refused, never that.

def written_into_an_ndarray(x):
    y = np.zeros(2)
    y[0] = x
    y[1] = x ** 2
    return np.sum(y * x)


def made_into_an_array(x):
    r = np.array([x, 2 * x, x ** 2])
    r[1] = r[1] * x
    return np.sum(r ** 2)


@pytest.mark.parametrize("fn", [written_into_an_ndarray, made_into_an_array],
                         ids=lambda f: f.__name__)
def test_a_second_derivative_is_exact_or_refused_as_a_compile_error(fn):
    first = sd.grad(fn)
    assert first(0.8) == pytest.approx(numerical_grad(fn, 0.8), rel=1e-6)
    try:
        second = sd.grad(first)(0.8)
    except sd.CompileError as error:
        assert "ndarray" in str(error)
        return
    assert second == pytest.approx(numerical_grad(first, 0.8, eps=1e-5), rel=1e-5)


def updates_its_data(y, s, d):
    y -= 1.0  # the caller's array, in Python: sd.grad's contract is to leave it alone
    d["w"] *= 2.0
    return np.sum(y * d["w"]) * s ** 3


def ignores_s(x, s):
    return np.sum(2.0 * x)


@pytest.mark.parametrize("kind", [sd.grad, sd.jacobian])
def test_a_higher_derivative_leaves_arrays_it_does_not_differentiate_alone(kind):
    # the nested tapes run the function as written, on copies of the other arrays
    y, w = np.array([1.0, 3.0]), np.array([0.5, -2.0])
    expected = 6 * 2.0 * np.sum((y - 1.0) * 2 * w)  # d²/ds² of c s³ at s = 2
    for _ in range(2):  # the same answer twice, the arrays as they were
        d2 = kind(sd.grad(updates_its_data, 1), 1)(y, 2.0, {"w": w})
        assert float(d2) == pytest.approx(expected)
        np.testing.assert_array_equal(y, [1.0, 3.0])
        np.testing.assert_array_equal(w, [0.5, -2.0])


@pytest.mark.parametrize("outer", [0, 1])
def test_a_derivative_of_a_gradient_that_ignores_its_argument_is_zero(outer):
    # sd.grad(ignores_s, 1) returns a number that no tape recorded: its derivative is 0
    x = np.array([0.3, -1.2])
    got = sd.grad(sd.grad(ignores_s, 1), outer)(x, 2.0)
    np.testing.assert_array_equal(got, np.zeros_like(x) if outer == 0 else 0.0)
    value, d = sd.value_and_grad(sd.grad(ignores_s, 1), 1)(x, 2.0)
    assert (value, d) == (0.0, 0.0)

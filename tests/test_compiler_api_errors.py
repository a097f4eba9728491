"""The functional API's edge cases give the right answer or a clear error, never a
wrong number or a crash (issue 8): a parameter asked for twice, a function that
returns no number (class 12), and callables without Python source (class 14)."""
import functools
import math
import re

import numpy as np
import pytest

import srcdiff as sd

X = np.array([0.5, 1.0, 1.5])
Y = np.array([2.0, -1.0, 0.25])


def cube(x):
    return np.sum(x ** 3)


def product(x, y):
    return np.sum(x * y ** 2)


def square(x):
    return x ** 2


@pytest.mark.parametrize("wrt", [(0, 0), (0, "x"), ("x", 0, "x")])
def test_a_parameter_asked_for_twice_gets_the_full_gradient_each_time(wrt):
    grads = sd.grad(cube, wrt=wrt)(X)
    assert len(grads) == len(wrt)
    for g in grads:
        np.testing.assert_allclose(g, 3 * X ** 2)
    grads[0][:] = 0.0  # each is the caller's own array
    np.testing.assert_allclose(grads[1], 3 * X ** 2)


@pytest.mark.parametrize("wrt", [(0, 1, 0), (1, 0, 1), (1, 1, 0)])
def test_repeated_parameters_keep_their_order_among_others(wrt):
    value, grads = sd.value_and_grad(product, wrt=wrt)(X, Y)
    assert value == pytest.approx(np.sum(X * Y ** 2))
    expected = {0: Y ** 2, 1: 2 * X * Y}
    for g, i in zip(grads, wrt, strict=True):
        np.testing.assert_allclose(g, expected[i])


def test_a_jacobian_asked_for_twice():
    first, second = sd.jacobian(square, wrt=(0, 0))(X)
    np.testing.assert_allclose(first, np.diag(2 * X))
    np.testing.assert_allclose(second, np.diag(2 * X))
    assert first is not second


def returns_none(x):
    y = x * 2.0
    return None


def returns_text(x):
    y = x * 2.0
    return "done"


def returns_bool(x):
    return np.sum(x) > 1.0


def returns_objects(x):
    y = np.array([1.0, "a"], dtype=object)  # no gradient flows in: it runs as written
    return y


def vjp_output(f, x):
    return sd.vjp(f, x)[0]


APIS = {
    "grad": lambda f, x: sd.grad(f)(x),
    "value_and_grad": lambda f, x: sd.value_and_grad(f)(x),
    "jacobian": lambda f, x: sd.jacobian(f)(x),
    "vjp": vjp_output,
}


@pytest.mark.parametrize("api", list(APIS))
@pytest.mark.parametrize("fn, said", [
    (returns_none, "returned None"), (returns_text, "returned a str ('done')"),
    (returns_bool, f"returned {np.True_!r}"),
    (returns_objects, "returned an array of dtype object")])
def test_a_function_returning_no_number_is_a_type_error(api, fn, said):
    with pytest.raises(TypeError, match=re.escape(
            f"{fn.__name__} must return numbers to be differentiated, but it {said}")):
        APIS[api](fn, X)


class Scaled:
    def __call__(self, x):
        return np.sum(x * 2.0)

    def method(self, x):
        return np.sum(x * 2.0)


NOT_FUNCTIONS = {
    "np.sin": (np.sin, "'sin', which is built in"),
    "math.exp": (math.exp, "'exp', which is built in"),
    "abs": (abs, "'abs', which is built in"),
    "partial": (functools.partial(np.sin), "'sin', which is built in"),
    "instance": (Scaled(), f"a {__name__}.Scaled object"),
    "bound method": (Scaled().method, "the bound method Scaled.method"),
}
WRAPPERS = {
    "sd.grad": lambda f: sd.grad(f)(X),
    "sd.value_and_grad": lambda f: sd.value_and_grad(f)(X),
    "sd.jacobian": lambda f: sd.jacobian(f)(X),
    "sd.vjp": lambda f: sd.vjp(f, X),
    "sd.function": lambda f: sd.function(f)(X),
    "sd.adjoint_source": lambda f: sd.adjoint_source(f),
}


@pytest.mark.parametrize("api", list(WRAPPERS))
@pytest.mark.parametrize("kind", list(NOT_FUNCTIONS))
def test_a_callable_without_python_source_is_a_type_error(api, kind):
    fn, described = NOT_FUNCTIONS[kind]
    if kind == "partial" and api in ("sd.function", "sd.adjoint_source"):
        described = "a functools.partial object"  # the others differentiate its function
    with pytest.raises(TypeError) as info:
        WRAPPERS[api](fn)
    message = str(info.value)
    assert message.startswith(f"{api} needs a Python function defined with 'def', got "
                              f"{described}")
    assert "call it from one instead" in message


def test_the_command_line_reports_a_callable_without_source_in_one_line(tmp_path, capsys):
    from srcdiff.__main__ import main
    path = tmp_path / "aliases.py"
    path.write_text("import numpy as np\nsine = np.sin\n")
    with pytest.raises(SystemExit) as info:
        main(["show", f"{path}:sine"])
    assert info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("python -m srcdiff: error: sd.adjoint_source needs a Python "
                            "function") and error.count("\n") == 1

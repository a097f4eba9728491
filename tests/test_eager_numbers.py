"""Code written for the compiler, run on eager tapes by srcdiff (eager_numbers.py):
``math`` and ``float`` keep their derivatives there, any other Python number made of
a value being differentiated is refused, and the tape alone keeps TensorFlow's
behaviour (such a number is a constant)."""
import math
from math import sin as imported_sin

import numpy as np
import pytest

import srcdiff as sd
from srcdiff.eager_numbers import _FLAT, exactly
from srcdiff.rules.numbers import MATH_TWINS

from util import module_from_source, numerical_grad

# a point inside every twin's domain (acosh needs > 1, asin/acos/atanh < 1)
_AT = {math.acosh: 1.6}


def _second(f, x):
    """The derivative of the compiled first derivative, by finite differences."""
    first = sd.grad(f)
    return numerical_grad(lambda v: first(float(v)), np.float64(x))


@pytest.mark.parametrize("math_fn", list(MATH_TWINS), ids=lambda f: f.__name__)
def test_second_derivative_through_each_math_function(math_fn):
    x = _AT.get(math_fn, 0.6)
    if math_fn in (math.atan2, math.pow, math.hypot):
        def f(v):
            return math_fn(v, 0.7) * v + math_fn(0.8, v) * v ** 2
    else:
        def f(v):
            return math_fn(v) * v ** 3
    assert sd.grad(sd.grad(f))(x) == pytest.approx(_second(f, x), rel=1e-6, abs=1e-8)


def test_math_functions_imported_by_name_and_float():
    def f(v):
        return imported_sin(v) * float(v) ** 2 + math.floor(v) * v

    x = 1.3
    assert sd.grad(sd.grad(f))(x) == pytest.approx(_second(f, x), rel=1e-6)
    assert sd.jacobian(sd.grad(f))(np.array([x])) == pytest.approx(
        np.diag([_second(f, x)]), rel=1e-6)


def test_higher_derivative_of_a_compiled_call_under_nested_tapes():
    @sd.function
    def f(v):
        return math.sin(v) * v ** 3

    x = sd.constant(0.7, dtype="float64")
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    assert float(g) == pytest.approx(math.cos(0.7) * 0.7 ** 3 + 3 * math.sin(0.7) * 0.7 ** 2)
    assert float(outer.gradient(g, x)) == pytest.approx(_second(f.python_function, 0.7))


def test_fallback_eager_keeps_math_derivatives():
    def refused(v):
        if v > 0 and (s := math.sin(v)) > 0:  # := in and's right operand: refused
            return s * v
        return v

    f = sd.function(refused, fallback="eager")
    x = sd.constant(0.5, dtype="float64")
    with pytest.warns(UserWarning):
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
    assert float(tape.gradient(y, x)) == pytest.approx(math.cos(0.5) * 0.5 + math.sin(0.5))


def test_a_helper_with_globals_of_its_own_is_refused(tmp_path):
    helper = module_from_source(tmp_path / "helper_math.py", """
        import math
        def h(v):
            return math.sin(v)
    """)

    def f(v):
        return helper.h(v) * v

    assert sd.grad(f)(0.4) == pytest.approx(math.cos(0.4) * 0.4 + math.sin(0.4))
    with pytest.raises(sd.CompileError, match="float"):
        sd.grad(sd.grad(f))(0.4)


def test_a_function_writing_globals_is_not_rewritten_and_is_refused(tmp_path):
    module = module_from_source(tmp_path / "writes_globals.py", """
        import math
        calls = 0
        def f(v):
            global calls
            calls += 1
            return math.sin(v) * v
    """)
    with pytest.raises(sd.CompileError):
        sd.grad(sd.grad(module.f))(0.4)


@pytest.mark.parametrize("convert", [lambda v: v.item(), lambda v: v.tolist(), complex],
                         ids=["item", "tolist", "complex"])
def test_other_conversions_are_refused_on_nested_tapes(convert):
    x = sd.constant(0.3, dtype="float64")
    with sd.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(sd.CompileError):
            exactly(lambda v: convert(v) * v, x)


def test_math_errors_are_math_s():
    def f(v):
        return math.log(v) * v

    with pytest.raises(ValueError, match="math domain error"):
        sd.grad(sd.grad(f))(-1.0)


@pytest.mark.parametrize("math_fn", _FLAT, ids=lambda f: f.__name__)
def test_flat_math_functions_take_tensors_on_nested_tapes(math_fn):
    def f(v):
        return float(math_fn(v)) * v ** 2

    assert sd.grad(sd.grad(f))(1.5) == pytest.approx(2 * float(math_fn(1.5)))


def test_the_tape_alone_keeps_tensorflow_s_constants():
    x = sd.constant(0.7, dtype="float64")
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = math.sin(x) * x ** 3  # a Python float times a Tensor: sin is a constant
    assert float(tape.gradient(y, x)) == pytest.approx(math.sin(0.7) * 3 * 0.7 ** 2)

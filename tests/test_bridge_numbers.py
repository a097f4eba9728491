"""``@sd.function`` under a tape on numbers: a Tensor holding a float64 number (a 0-d
array) reaches code specialised for numbers as a Python float standing for an
np.float64 (``function.Units``, compiler/numbers.py).  Its values and gradients are
the eager tape's, NumPy's semantics (nan, inf, float64 met by float32) included;
a float32 reaches the same body as an np.float32 (code for NumPy numbers), a body
that is not specialised gets the array; units are cached."""
import math
import warnings

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import finite_difference
from test_specialised_numbers import loop


def divides(x, a):
    d = np.sin(x) - np.sin(x)   # 0.0: NumPy gives inf where a float raises
    return a / d + x


def by_zero(x, a):
    return a / x + np.sin(a)  # x = 0.0: inf, where a / 0.0 of floats raises


def power(x, a):
    return x ** 1.5 * a + np.sin(a)  # x < 0: nan, where a Python float gives a complex


ONES32 = np.ones(3, dtype=np.float32)


def meets_float32(x, a):
    v = np.sin(x) * ONES32[0] * x  # float64, as the 0-d array makes it (NEP 50)
    return v * a


def scales_float32(x, a):
    return x * ONES32[0] * np.sin(a)  # x a float would make it a float32


def returns_x(x, a):
    y = np.sin(a) * 2.0
    return x + y * 0.0 + x


def with_method(x, a):
    return np.sin(x.copy()) * a  # not specialised: the array is passed


def math_only(x, a):
    y = x
    for _ in range(3):
        y = math.sin(y) * a + math.cos(x * y)  # nothing to rewrite: floats run it as written
    return y


def math_divides(x, a):
    return a / (x - x) + math.sin(a)  # np.float64s give inf where floats raise


CORPUS = [loop, divides, by_zero, power, meets_float32, scales_float32, returns_x, with_method]


def through(f, inputs, watched):
    """Value and gradients of ``f`` at ``inputs`` on a tape watching ``watched``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with sd.GradientTape() as tape:
            tape.watch([inputs[i] for i in watched])
            y = f(*inputs)
        return y, tape.gradient(y, [inputs[i] for i in watched])


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.allclose(
        a, b, rtol=1e-13, atol=0, equal_nan=True)


@pytest.mark.parametrize("f", CORPUS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("args", [(0.7, 0.9), (-1.2, 0.3), (0.0, 1.5)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bridge_equals_the_eager_tape(f, args, dtype):
    compiled = sd.function(f)
    inputs = [sd.constant(a, dtype=dtype) for a in args]
    y, grads = through(compiled, inputs, (0, 1))
    y_eager, grads_eager = through(f, inputs, (0, 1))
    assert same(y, y_eager)
    assert all(same(g, e) for g, e in zip(grads, grads_eager))
    converted = [n for _, n in compiled.units.known.values() if n]
    # a body with a method gets arrays, and a float32 met by ** (see powers)
    assert bool(converted) == (f is not with_method and not (
        dtype is np.float32 and f is power))


@pytest.mark.parametrize("f", [loop, power, meets_float32], ids=lambda f: f.__name__)
def test_bridge_equals_value_and_grad_and_finite_differences(f):
    args = (0.7, 0.9)
    value, expected = sd.value_and_grad(f, (0, 1))(*args)
    y, grads = through(sd.function(f), [sd.constant(a, dtype=sd.float64) for a in args],
                       (0, 1))
    assert np.isclose(float(y), value, rtol=1e-13)
    for i, (g, e) in enumerate(zip(grads, expected)):
        assert np.isclose(float(g), e, rtol=1e-13)
        assert np.isclose(float(g), finite_difference(f, args, i), rtol=1e-5)


@pytest.mark.parametrize("f", [math_only, math_divides], ids=lambda f: f.__name__)
def test_math_code_on_float64_numbers_runs_specialised_with_numpys_semantics(f):
    # the Tensors' 0-d arrays are passed as floats standing for np.float64s, though no
    # NumPy call needed a twin; where a float raises, NumPy's result (the array's) stands
    args = (0.7, 0.9)
    compiled = sd.function(f)
    y, grads = through(compiled, [sd.constant(a, dtype=sd.float64) for a in args], (0, 1))
    assert [n for _, n in compiled.units.known.values() if n]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert same(y, f(*map(np.float64, args)))
    if np.isfinite(float(y)):
        for i, g in enumerate(grads):
            assert np.isclose(float(g), finite_difference(f, args, i), rtol=1e-5)


def powers(x, a):
    return x ** 3 * a + np.abs(x) ** 1.5 + a ** -2


def test_a_float32_met_by_a_power_computes_as_the_array():
    # np.float32(v) ** 3 is C's powf, np.array(v, np.float32) ** 3 the ufunc's: they
    # differ in the last bit for about one value in five, so the array is passed and the
    # values are the general unit's (sd.value_and_grad's for 0-d arrays), bit for bit
    compiled = sd.function(powers)
    general = sd.value_and_grad(powers, (0, 1))
    for v in np.random.default_rng(3).uniform(-3.0, 3.0, 40):
        inputs = [sd.constant(v, dtype=sd.float32), sd.constant(0.9, dtype=sd.float32)]
        y, grads = through(compiled, inputs, (0, 1))
        y_general, grads_general = general(*map(np.asarray, inputs))  # 0-d arrays
        assert same(y, y_general) and all(map(same, grads, grads_general))
        y_eager, grads_eager = through(powers, inputs, (0, 1))  # the tape's rules
        assert np.allclose(y, y_eager, rtol=1e-6)
        assert np.allclose(grads, grads_eager, rtol=1e-5)
    assert not [n for _, n in compiled.units.known.values() if n]


def test_a_number_watched_after_the_call_gets_numpys_gradient():
    # the call is compiled again with x active: x stays a stand-in for an np.float64
    compiled = sd.function(by_zero)
    x, a = sd.constant(0.0, dtype=sd.float64), sd.constant(0.9, dtype=sd.float64)
    results = []
    for f in (compiled, by_zero):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with sd.GradientTape(persistent=True) as tape:
                tape.watch(a)
                y = f(x, a)
                tape.watch(x)
            results.append([y] + tape.gradient(y, [a, x]))
    assert all(same(c, e) for c, e in zip(*results))
    assert np.isinf(float(results[0][2]))


def test_variables_floats_and_numpy_numbers():
    compiled = sd.function(loop)
    x = sd.Variable(0.7, dtype=sd.float64)
    for a in (0.9, np.float32(0.9), np.float64(0.9), np.array(0.9)):
        with sd.GradientTape() as tape:  # a trainable Variable read is watched
            y = compiled(x, a)
        dx = tape.gradient(y, x)
        with sd.GradientTape() as tape:
            y_eager = loop(x, a)
        assert same(y, y_eager) and same(dx, tape.gradient(y_eager, x))


def test_the_unit_is_cached_per_argument_types():
    sd.clear_cache()
    compiled = sd.function(loop)
    inputs = [sd.constant(0.5, dtype=sd.float64), sd.constant(0.9, dtype=sd.float64)]
    through(compiled, inputs, (0, 1))
    first = compiled.cache_info()
    for _ in range(3):
        through(compiled, inputs, (0, 1))
    info = compiled.cache_info()
    assert info.misses == first.misses and info.hits == first.hits + 3
    assert info.currsize == first.currsize == 1  # the unit for numbers, nothing else
    through(compiled, [sd.constant(0.5), sd.constant(0.9)], (0, 1))  # float32: np.float32s
    assert compiled.cache_info().misses == first.misses + 1
    sd.clear_cache()
    through(compiled, inputs, (0, 1))
    assert compiled.cache_info().misses == first.misses + 2  # forgotten with the cache

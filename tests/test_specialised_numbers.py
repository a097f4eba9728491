"""Code specialised for Python floats (compiler/numbers.py): on floats, ``np.sin``
becomes ``math.sin``; the values and gradients are those of the unit made for NumPy
values (the same bits), where NumPy returns nan or inf the specialised code does too,
and other numbers (np.float32, np.float64) get the general unit."""
import math
import random
import warnings

import numpy as np
import pytest

import srcdiff as sd
from srcdiff.compiler.cache import CACHE
from compiler_programs import finite_difference, import_source


def loop(x, a):
    y = x
    for i in range(30):
        y = np.sin(y) * a + np.cos(x * y)
    return y


def mixed(x, a):
    s = np.sqrt(x * x + 1.0) + math.sin(a)
    if np.cos(s) > 0.2:
        s = s * np.sin(a) - np.cos(s) / 3.0
    t = s ** 2 + np.tanh(a)  # no twin for tanh: a NumPy call on a float
    return t * 0.5 + a


def container(x, a):
    parts = [np.sin(x), np.cos(a)]   # a changed value put in a list: turned back
    return parts[0] * parts[1] + np.sin(x) ** 1.5


def meets_an_array(x, a):
    v = np.sin(x) * np.ones(3, dtype=np.float32)  # float32: a Python float would not widen
    return np.sum(v) * a


def divides(x, a):
    d = np.sin(x) - np.sin(x)   # 0.0: np.float64 / 0.0 is inf, float / 0.0 raises
    return a / d + x


def square_root(x, a):
    return np.sqrt(x) * a       # x < 0: nan, where math.sqrt raises


def grows(x, a):
    y = x
    for i in range(12):
        y = y * y * 1e10        # inf; then sin(inf) is nan, where math.sin raises
    return np.sin(y) + np.cos(a)


def by_python(x, a):
    return 1.0 / x + np.sin(a)  # a float the caller passed: x = 0.0 raises, as in Python


CORPUS = [loop, mixed, container, meets_an_array, divides, square_root, grows, by_python]


def general(f, args):
    """Value and gradients of the unit made for NumPy values on the same arguments."""
    unit = CACHE.get(f, (True,) * len(args), (True,) * len(args))
    assert not unit.specialised
    with np.errstate(all="ignore"):
        y, tape = unit.run(list(args))
        return y, unit.backward(tape, type(y)(1) if np.ndim(y) == 0 else np.ones_like(y))


def same(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("f", CORPUS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("args", [(0.7, 0.9), (-1.2, 0.3), (0.0, 1.5)])
def test_values_and_gradients_are_the_general_units(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            expected = general(f, args)
        except ZeroDivisionError:
            with pytest.raises(ZeroDivisionError):  # raised by the function itself
                sd.value_and_grad(f, (0, 1))(*args)
            return
        y, grads = sd.value_and_grad(f, (0, 1))(*args)
    assert same(y, expected[0]) and type(y) is type(expected[0])
    assert all(same(g, e) for g, e in zip(grads, expected[1]))
    assert all(type(g) is float for g in grads)


@pytest.mark.parametrize("f", [loop, mixed, container, meets_an_array],
                         ids=lambda f: f.__name__)
def test_gradients_match_finite_differences(f):
    args = (0.7, 0.9)
    grads = sd.grad(f, (0, 1))(*args)
    for i, g in enumerate(grads):
        assert np.isclose(g, finite_difference(f, args, i), rtol=1e-5, atol=1e-6)


def _code(source):
    """The generated statements, without the comments quoting the function."""
    return "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))


def test_specialised_code_uses_math_and_the_general_code_numpy():
    floats = _code(sd.adjoint_source(loop, (0, 1), args=(0.5, 0.9)))
    assert "math.sin(" in floats and "math.cos(" in floats and "np.sin" not in floats
    arrays = sd.adjoint_source(loop, (0, 1))
    assert "np.sin(" in arrays and "math.sin" not in arrays
    numbers = sd.adjoint_source(loop, (0, 1), args=(np.float64(0.5), np.float64(0.9)))
    assert "np.sin(" in numbers


@pytest.mark.parametrize("f, args, message", [
    (square_root, (-1.0, 2.0), "sqrt of a negative"),
    (grows, (3.0, 0.5), "overflow to inf"),
    (divides, (0.4, 2.0), "division by zero"),
])
def test_nan_and_inf_where_numpy_gives_them(f, args, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y, grads = sd.value_and_grad(f, (0, 1))(*args)
        eager = f(*args)
    assert same(y, eager), message
    assert not np.isfinite(y) or not all(np.isfinite(grads)), message


def test_float32_and_float64_arguments_get_the_general_unit():
    for kind in (np.float32, np.float64):
        args = (kind(0.7), kind(0.9))
        y, grads = sd.value_and_grad(loop, (0, 1))(*args)
        assert type(y) is type(loop(*args)) and y == loop(*args)
        assert all(type(g) is kind for g in grads)
        assert "np.sin(" in sd.adjoint_source(loop, (0, 1), args=args)


def test_function_on_floats_runs_specialised_code():
    f = sd.function(loop)
    assert f(0.5, 0.9) == loop(0.5, 0.9)
    assert type(f(0.5, 0.9)) is type(loop(0.5, 0.9))


# --- random scalar programs ------------------------------------------------------

def _program(rng):
    """A function of floats x, a: a loop of random smooth updates with np twins."""
    names = ["x", "a", "y", "z"]
    lines = ["def prog(x, a):", "    y = x * 0.5", "    z = a + 0.25",
             f"    for i in range({rng.randint(1, 6)}):"]
    for _ in range(rng.randint(1, 5)):
        u, v = rng.choice(names), rng.choice(names)
        form = rng.choice([f"np.sin({u}) * {v}", f"np.cos({u} * {v})", f"{u} - np.sin({v})",
                           f"np.sqrt({u} * {u} + 1.0) * 0.5", f"{u} / (2.0 + np.cos({v}))",
                           f"math.sin({u}) + np.cos({v}) ** 2", f"{u} * 0.3 + {v} * 0.2",
                           f"np.tanh({u}) + {v}"])
        lines.append(f"        {rng.choice(['y', 'z'])} = {form}")
        if rng.random() < 0.3:
            lines += [f"        if np.sin({u}) > 0.1:", f"            y = y * 0.9 + z * 0.1"]
    lines.append(f"    return y * z + {rng.choice(names)}")
    return "import math\nimport numpy as np\n\n\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(40))
def test_random_scalar_programs(tmp_path, seed):
    rng = random.Random(seed)
    module = import_source(tmp_path, f"scalar_prog_{seed}", _program(rng))
    args = (rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5))
    y, grads = sd.value_and_grad(module.prog, (0, 1))(*args)
    expected = general(module.prog, args)
    assert same(y, expected[0]) and all(same(g, e) for g, e in zip(grads, expected[1]))
    assert same(y, module.prog(*args))
    for i, g in enumerate(grads):
        assert np.isclose(g, finite_difference(module.prog, args, i), rtol=1e-4, atol=1e-5)

"""The compile cache: a hit does not recompile, a redefined function or a rebound
callee recompiles (and ``last_miss`` says why), ``sd.clear_cache()`` forgets all."""
import textwrap

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import import_source

X = np.array([0.3, 0.6, 0.9])

SOURCE = textwrap.dedent("""
    import numpy as np
    import srcdiff as sd


    def helper(x):
        return np.sin(x)


    def loss(x, scale):
        return np.sum(helper(x) * scale)


    compiled = sd.function(loss)
""")


@pytest.fixture
def module(tmp_path):
    sd.clear_cache()
    return import_source(tmp_path, "cached_program", SOURCE)


def test_a_hit_does_not_recompile(module):
    f = module.compiled
    assert f.cache_info().hits == 0 and f.cache_info().misses == 0
    y = f(X, 2.0)
    info = f.cache_info()
    assert (info.hits, info.misses, info.currsize) == (0, 1, 1)
    assert "first call" in info.last_miss
    for _ in range(3):
        assert f(X, 2.0) == y
    info = f.cache_info()
    assert (info.hits, info.misses, info.currsize) == (3, 1, 1)


def test_each_choice_of_active_inputs_is_compiled_once(module):
    f = module.compiled
    x, s = sd.constant(X), sd.constant(2.0, dtype=sd.float64)
    for _ in range(2):
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = f(x, s)
        dx = tape.gradient(y, x)
    np.testing.assert_allclose(dx, np.cos(X) * 2.0)
    with sd.GradientTape() as tape:
        tape.watch([x, s])
        f(x, s)
    info = f.cache_info()
    assert (info.hits, info.misses, info.currsize) == (1, 2, 2)
    assert "active inputs" in info.last_miss


def test_a_redefined_function_recompiles(module, tmp_path):
    g = sd.grad(module.loss)
    np.testing.assert_allclose(g(X, 1.0), np.cos(X))
    changed = import_source(tmp_path, "cached_program",
                            SOURCE.replace("np.sin(x)", "np.tanh(x) * x"))
    np.testing.assert_allclose(sd.grad(changed.loss)(X, 1.0),
                               (1 - np.tanh(X) ** 2) * X + np.tanh(X))
    assert changed.compiled(X, 1.0) == pytest.approx(np.sum(np.tanh(X) * X))
    assert changed.compiled.cache_info().misses == 1


def test_a_rebound_callee_recompiles(module):
    f = module.compiled
    x = sd.constant(X)

    def gradient():
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = f(x, 1.0)
        return tape.gradient(y, x)

    np.testing.assert_allclose(gradient(), np.cos(X))
    gradient()
    assert f.cache_info().hits == 1

    def new_helper(x):
        return x ** 3
    module.helper = new_helper  # loss now calls another function
    np.testing.assert_allclose(gradient(), 3 * X ** 2)
    info = f.cache_info()
    assert info.misses == 2
    assert "rebound" in info.last_miss and "loss" in info.last_miss
    assert f(X, 1.0) == pytest.approx(np.sum(X ** 3))


def test_sd_grad_sees_a_rebound_callee(module):
    np.testing.assert_allclose(sd.grad(module.loss)(X, 1.0), np.cos(X))
    module.helper = np.exp  # now a NumPy primitive
    np.testing.assert_allclose(sd.grad(module.loss)(X, 1.0), np.exp(X))


def test_clear_cache(module):
    f = module.compiled
    f(X, 1.0)
    f(X, 1.0)
    assert f.cache_info().currsize == 1
    sd.clear_cache()
    assert f.cache_info().currsize == 0
    f(X, 1.0)
    info = f.cache_info()
    assert info.misses == 2 and info.currsize == 1

"""The compile cache: a hit does not recompile, a redefined function or a rebound
callee recompiles (and ``last_miss`` says why), ``sd.clear_cache()`` forgets all;
the cache holds functions weakly: dropped functions are freed with their units."""
import gc
import linecache
import textwrap
import weakref

import numpy as np
import pytest

import srcdiff as sd
from srcdiff.compiler.cache import CACHE
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
    # a scale of shape (1,): a 0-d one would first try the unit for numbers (see
    # test_bridge_numbers.py), one more compile
    x, s = sd.constant(X), sd.constant([2.0], dtype=sd.float32)
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


def test_each_rank_of_an_argument_is_compiled_once(module):
    # the rank decides whether x[i] is a number or a view of a row
    f = module.compiled
    for x in (X, X[None, :], X, X[None, :]):
        assert f(x, 2.0) == pytest.approx(np.sum(np.sin(x)) * 2.0)
    info = f.cache_info()
    assert (info.hits, info.misses, info.currsize) == (2, 2, 2)
    assert "kinds of arguments" in info.last_miss


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


def make_rebindable():
    a = 1.0

    def scaled(x):
        return np.sum(a * np.sin(x))

    def rebind(value):
        nonlocal a
        a = value
    return scaled, rebind


def test_a_rebound_closure_cell_is_read_when_called_without_compiling_again():
    f, rebind = make_rebindable()
    gradient, compiled = sd.grad(f), sd.function(f)
    np.testing.assert_allclose(gradient(X), np.cos(X))
    assert compiled(X) == pytest.approx(np.sum(np.sin(X)))
    rebind(3.0)
    np.testing.assert_allclose(gradient(X), 3 * np.cos(X))
    assert compiled(X) == pytest.approx(3 * np.sum(np.sin(X)))
    assert compiled.cache_info().misses == 1


BATCH = np.zeros(3)


def minibatch_loss(w):
    return np.sum((BATCH * w - 1.0) ** 2)


def test_a_global_rebound_between_calls_is_the_one_the_gradient_sees():
    # a minibatch loop: each step rebinds the data; each gradient must use that batch
    global BATCH
    gradient, compiled = sd.grad(minibatch_loss), sd.function(minibatch_loss)
    w = np.array([0.5, -1.0, 2.0])
    rng = np.random.default_rng(3)
    for _ in range(4):
        BATCH = rng.normal(size=3)
        np.testing.assert_allclose(gradient(w), 2 * (BATCH * w - 1.0) * BATCH, rtol=1e-12)
        assert compiled(w) == pytest.approx(np.sum((BATCH * w - 1.0) ** 2))
    assert compiled.cache_info().misses == 1  # read when called: never compiled again
    BATCH = 2.0  # another kind of value: the same code serves it
    np.testing.assert_allclose(gradient(w), 2 * (2.0 * w - 1.0) * 2.0, rtol=1e-12)


def test_under_a_tape_the_backward_pass_uses_the_batch_of_its_forward_pass():
    global BATCH
    BATCH = np.array([1.0, 2.0, 3.0])
    w = sd.Variable([0.5, -1.0, 2.0], dtype=np.float64)
    f = sd.function(minibatch_loss)
    with sd.GradientTape() as tape:
        y = f(w)
    first = BATCH
    BATCH = np.array([-5.0, 0.0, 7.0])  # rebound before the gradient is asked for
    np.testing.assert_allclose(tape.gradient(y, w), 2 * (first * w.numpy() - 1.0) * first,
                               rtol=1e-12)


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


# ------------------------------------------------ memory over time

def make(a):
    def scaled(x):
        return np.sum(a * np.sin(x))
    return scaled


CELL = "import numpy as np\n\n\ndef cell(x):\n    return np.sum(np.cos(x) * x)\n"


def _generated_lines():
    return {name for name in linecache.cache if name.startswith("<srcdiff ")}


def _units_of(fn):
    """Weak references to ``fn`` and its compiled unit (compiling it first), the one
    ``sd.grad(fn)(X)`` uses: x active, an array of rank 1."""
    unit = CACHE.get(fn, (True,), (False,), ranks=(1,))
    return weakref.ref(fn), weakref.ref(unit)


def test_dropped_closures_are_freed_with_their_units():
    sd.clear_cache()
    lines = _generated_lines()
    refs = []
    for k in range(300):
        f = make(float(k))
        np.testing.assert_allclose(sd.grad(f)(X), k * np.cos(X))
        refs.append(_units_of(f))
    del f
    gc.collect()
    assert [r for pair in refs for r in pair if r() is not None] == []
    assert _generated_lines() == lines  # each unit's source left linecache with it


def test_a_rerun_cell_keeps_one_unit():
    """Re-running a notebook cell redefines its function: the old one and its
    unit are freed, and ``cache_info`` counts the units of one function only."""
    sd.clear_cache()
    filename = "<ipython-input-cache-test>"
    linecache.cache[filename] = (len(CELL), None, CELL.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    refs = []
    try:
        for _ in range(150):
            exec(compile(CELL, filename, "exec"), namespace)
            np.testing.assert_allclose(sd.grad(namespace["cell"])(X),
                                       np.cos(X) - X * np.sin(X))
            refs.append(_units_of(namespace["cell"]))
            compiled = sd.function(namespace["cell"])
            compiled(X)
            assert compiled.cache_info().currsize == 2  # active and inactive x
        gc.collect()
        assert sum(r() is not None for pair in refs for r in pair) == 2  # the last pair
    finally:
        del linecache.cache[filename]


def test_clear_cache_frees_the_generated_sources():
    sd.clear_cache()
    lines = _generated_lines()
    f = make(2.0)
    sd.grad(f)(X)
    assert len(_generated_lines() - lines) == 1
    sd.clear_cache()
    assert _generated_lines() == lines

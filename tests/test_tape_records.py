"""The tape's record layouts and its fast recording path (tape.py ``_laid_out``,
``_record1``, ``_record2``, ``_walk_plain``).

Each program runs twice on the same values: as srcdiff runs it (a Tensor operator or a
one-input op records through ``_record1``/``_record2`` into a compact record), and with
every call recorded by the general ``_record`` into the general layout ``(rule, args,
raw, kwargs, out)``.  The two must give the same gradients bit for bit, and those must
match finite differences: broadcasting where an adjoint is summed back, size-1
dimensions, scalars, float32, nested tapes, a persistent tape walked twice."""
import numpy as np
import pytest

import srcdiff as sd
from srcdiff import tape as tape_module
from util import numerical_jacobian


def _general(monkeypatch):
    """Record every call by ``_record``, in the general layout."""
    G = sd.GradientTape
    monkeypatch.setattr(G, "_record1", lambda self, fn, a, x, out:
                        self._record(fn, (a,), (x,), None, out))
    monkeypatch.setattr(G, "_record2", lambda self, fn, a, b, x, y, out:
                        self._record(fn, (a, b), (x, y), None, out))
    monkeypatch.setattr(tape_module, "_laid_out", lambda rule, args, raw, kwargs, out:
                        (rule, args, raw, kwargs or tape_module._NO_KWARGS, out))


def program(x, y):
    """Operators with Tensors and floats on either side, one-input ops, a reduction."""
    u = sd.sin(x) * y + 0.5
    v = sd.tanh(u) - x
    w = 2.0 * sd.exp(-v) / (y + 1.5)
    return sd.reduce_sum(w * w - y)


SHAPES = {
    "same shapes": ((4,), (4,)),
    "broadcast both ways": ((3, 1), (4,)),
    "size-1 dimensions": ((1, 4), (3, 1)),
    "scalar beside a vector": ((), (5,)),
    "scalars": ((), ()),
}


def _values(shapes, dtype):
    rng = np.random.default_rng(7)
    return [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]


def _gradient(values, persistent=False, walks=1):
    x, y = (sd.constant(v) for v in values)
    with sd.GradientTape(persistent=persistent) as tape:
        tape.watch([x, y])
        loss = program(x, y)
    return [[g.numpy() for g in tape.gradient(loss, [x, y])] for _ in range(walks)]


@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compact_records_give_the_general_path_s_gradients(monkeypatch, shapes, dtype):
    values = _values(shapes, dtype)
    fast = _gradient(values, persistent=True, walks=2)
    with monkeypatch.context() as m:
        _general(m)
        general = _gradient(values, persistent=True, walks=2)
    for fast_walk, general_walk in zip(fast, general):
        for f, g in zip(fast_walk, general_walk):
            assert f.dtype == g.dtype == dtype and f.shape == g.shape
            np.testing.assert_array_equal(f, g)
    np.testing.assert_array_equal(fast[0][0], fast[1][0])  # the second walk as the first
    if dtype is np.float64:
        for i, g in enumerate(fast[0]):
            def f(v, i=i):
                args = [sd.constant(a) for a in values]
                args[i] = sd.constant(v)
                return program(*args).numpy()
            np.testing.assert_allclose(g, numerical_jacobian(f, values[i]), rtol=1e-6,
                                       atol=1e-8)


def test_a_tape_used_once_walks_compact_records():
    values = _values(SHAPES["broadcast both ways"], np.float64)
    np.testing.assert_array_equal(_gradient(values)[0][1],
                                  _gradient(values, persistent=True)[0][1])


def _second_derivative(x0):
    x = sd.constant(x0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = sd.reduce_sum(sd.sin(x) * x + 0.5 * x * x - sd.exp(-x))
        g = inner.gradient(y, x)
    return g.numpy(), outer.gradient(g, x).numpy()


def test_nested_tapes_record_compactly_and_differentiate_twice(monkeypatch):
    x0 = np.array([0.3, -1.1, 0.8])
    first, second = _second_derivative(x0)
    with monkeypatch.context() as m:
        _general(m)
        general = _second_derivative(x0)
    np.testing.assert_array_equal(first, general[0])
    np.testing.assert_array_equal(second, general[1])
    # d/dx (sin x * x + x^2 / 2 - exp(-x)) and its derivative
    np.testing.assert_allclose(first, np.cos(x0) * x0 + np.sin(x0) + x0 + np.exp(-x0))
    np.testing.assert_allclose(second, -np.sin(x0) * x0 + 2 * np.cos(x0) + 1 - np.exp(-x0))


def test_every_layout_reads_back_as_its_call():
    rule = tape_module._RULES[np.multiply]
    a, b, out = (sd.constant(1.0), sd.constant(2.0), sd.constant(2.0))
    calls = [((a,), (1.0,), None), ((a, b), (1.0, 2.0), None), ((a, b), (1.0, 2.0), {"k": 1}),
             ((a, b, out), (1.0, 2.0, 2.0), None)]
    for args, raw, kwargs in calls:
        record = tape_module._laid_out(rule, args, raw, kwargs, out)
        assert record[0] is rule and record[-1] is out
        assert tape_module._fields(record) == (rule, args, raw, kwargs or {}, out)

"""A tape used once whose single record made the target walks that record's rule
alone (tape.py ``_backprop_one``).  Each case is computed twice, on a tape used once
(that path) and on a persistent tape (the general walk), and the gradients must be
the same, None where one is None; the values are checked against finite
differences where the source is an input of the record."""
import numpy as np
import pytest

import srcdiff as sd


@sd.function
def compiled_pair(x, a):
    return np.sin(x) * a + np.cos(x * a)


@sd.function
def compiled_sum(x, a):
    return np.sum(np.tanh(x) * a)


@sd.function
def compiled_one(x):
    return np.tanh(x) * x


@sd.function
def compiled_three(x, a, b):
    return np.sin(x * a) + b * x


@sd.function
def compiled_layer(w, b, data, scale):
    return np.sum(np.tanh(data @ w + b) * scale)


DATA = np.array([[0.5, -1.2, 0.3], [2.0, 0.1, -0.7]])


def _on_data(w, b):  # the Tensors first, then an ndarray and a number: not watched
    return compiled_layer(w, b, DATA, 1.5)


def _eager_pair(x, a):
    return sd.sin(x) * a


def _gradients(persistent, program, values, watched, sources, unconnected):
    # float64, as the compiled path for numbers takes them (see Function's bridge);
    # a case of float32 values says so
    tensors = [sd.constant(v if isinstance(v, np.float32) else np.asarray(v, np.float64))
               for v in values]
    with sd.GradientTape(persistent=persistent) as tape:
        tape.watch([tensors[i] for i in watched])
        y = program(*tensors)
    chosen = [y if s == "y" else tensors[s] for s in sources]
    return tape.gradient(y, chosen, unconnected_gradients=unconnected)


CASES = {
    # name: (program, values, watched, sources)
    "compiled, both watched": (compiled_pair, (0.3, 1.7), (0, 1), (0, 1)),
    "compiled, arrays": (compiled_sum, (np.array([0.1, -0.4, 0.9]), np.array([2.0, 0.5, -1.0])),
                         (0, 1), (1, 0)),
    "compiled, the same input twice": (lambda x, a: compiled_pair(x, x), (0.3, 1.7), (0,), (0,)),
    "compiled, the same input twice, asked twice": (lambda x, a: compiled_pair(x, x),
                                                    (0.3, 1.7), (0,), (0, 0)),
    "compiled, one input": (lambda x, a: compiled_one(x), (0.3, 1.7), (0,), (0,)),
    "compiled, three inputs": (compiled_three, (0.3, 1.7, -0.6), (0, 1, 2), (0, 1, 2)),
    "compiled, three inputs asked out of order": (compiled_three, (0.3, 1.7, -0.6), (0, 1, 2),
                                                  (2, 0, 1)),
    "compiled, three inputs, one twice": (lambda x, a, b: compiled_three(x, a, x),
                                          (0.3, 1.7, -0.6), (0, 1), (0, 1)),
    "compiled, three inputs, one twice, asked as given": (
        lambda x, a, b: compiled_three(x, a, x), (0.3, 1.7, -0.6), (0, 1), (0, 1, 0)),
    "compiled, float32": (compiled_pair, (np.float32(0.3), np.float32(1.7)), (0, 1), (1, 0)),
    "compiled, one input unwatched": (compiled_pair, (0.3, 1.7), (0,), (0, 1)),
    "compiled, the target a source too": (compiled_pair, (0.3, 1.7), (0, 1), ("y", 1)),
    "compiled, nothing watched is a source": (compiled_pair, (0.3, 1.7), (0,), (1,)),
    "compiled, data after the Tensors": (_on_data, (np.array([0.2, -0.5, 1.0]), 0.4),
                                         (0, 1), (0, 1)),
    "compiled, data after the Tensors, asked out of order": (
        _on_data, (np.array([0.2, -0.5, 1.0]), 0.4), (0, 1), (1, 0)),
    "compiled, data after the Tensors, one watched": (
        _on_data, (np.array([0.2, -0.5, 1.0]), 0.4), (1,), (0, 1)),
    "one eager op": (lambda x, a: x * a, (0.3, 1.7), (0, 1), (1, 0)),
    "one eager op, a source twice": (lambda x, a: x * a, (0.3, 1.7), (0, 1), (0, 0)),
    "one eager op of one input": (lambda x, a: sd.exp(x), (0.3, 1.7), (0, 1), (0, 1, "y")),
}


@pytest.mark.parametrize("unconnected", [sd.UnconnectedGradients.NONE,
                                         sd.UnconnectedGradients.ZERO])
@pytest.mark.parametrize("name", sorted(CASES))
def test_one_record_equals_the_general_walk(name, unconnected):
    program, values, watched, sources = CASES[name]
    fast = _gradients(False, program, values, watched, sources, unconnected)
    general = _gradients(True, program, values, watched, sources, unconnected)
    assert len(fast) == len(general) == len(sources)
    for f, g in zip(fast, general):
        assert (f is None) == (g is None)
        if f is not None:
            assert f.dtype == g.dtype and f.shape == g.shape
            np.testing.assert_allclose(f.numpy(), g.numpy(), rtol=1e-13, atol=0)


@pytest.mark.parametrize("name", ["compiled, both watched", "compiled, arrays",
                                  "compiled, the same input twice", "one eager op",
                                  "compiled, the same input twice, asked twice",
                                  "compiled, one input", "compiled, three inputs",
                                  "compiled, three inputs, one twice",
                                  "compiled, three inputs, one twice, asked as given",
                                  "compiled, data after the Tensors",
                                  "compiled, data after the Tensors, asked out of order"])
def test_one_record_against_finite_differences(name):
    program, values, watched, sources = CASES[name]
    grads = _gradients(False, program, values, watched, sources, sd.UnconnectedGradients.NONE)
    eps = 1e-6
    for s, g in zip(sources, grads):
        base = [np.asarray(v, np.float64) for v in values]
        numeric = np.zeros_like(base[s])
        for k in np.ndindex(base[s].shape):
            up = [v.copy() for v in base]
            down = [v.copy() for v in base]
            up[s][k] += eps
            down[s][k] -= eps
            total = lambda vs: float(np.sum(program(*[sd.constant(v) for v in vs]).numpy()))
            numeric[k] = (total(up) - total(down)) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_a_tape_of_one_record_is_used_once():
    x = sd.constant(0.5)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = compiled_pair(x, x)
    assert tape.gradient(y, x) is not None
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_an_integer_source_among_floating_ones_gets_none(caplog):
    x = sd.constant(0.5)
    n = sd.constant(3)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    gx, gn = tape.gradient(y, [x, n])
    assert gx.numpy() == 2.0 and gn is None
    assert "must be floating" in caplog.text

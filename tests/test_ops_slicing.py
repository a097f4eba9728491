"""split, slice, boolean_mask, pad, repeat, roll, nn.embedding_lookup, nn.dropout and
math.reciprocal_no_nan: values against NumPy, tape gradients against finite differences,
and TensorFlow's refusals (InvalidArgumentError) where NumPy would accept."""
import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad

RNG = np.random.default_rng(5)
X = RNG.uniform(-2, 2, (4, 6))
W = RNG.uniform(-2, 2, 128)


def weighted(pieces):
    """A scalar that weighs every entry of ``pieces`` (a Tensor, array or list) differently."""
    pieces = pieces if isinstance(pieces, (list, tuple)) else [pieces]
    flat = [np.reshape(p, -1) if isinstance(p, np.ndarray) else sd.reshape(p, [-1])
            for p in pieces]
    total, start = 0.0, 0
    for p in flat:
        n = int(np.shape(p)[0])
        total = total + (np.sum(p * W[start:start + n]) if isinstance(p, np.ndarray)
                         else sd.reduce_sum(p * W[start:start + n]))
        start += n
    return total


CASES = {  # name: (the op on a Tensor, the same on an ndarray)
    "split": (lambda t: sd.split(t, 3, axis=1), lambda a: np.split(a, 3, axis=1)),
    "split sizes": (lambda t: sd.split(t, [1, -1, 2], axis=-1),
                    lambda a: np.split(a, [1, 4], axis=-1)),
    "slice": (lambda t: sd.slice(t, [1, 2], [2, -1]), lambda a: a[1:3, 2:]),
    "boolean_mask": (lambda t: sd.boolean_mask(t, X > 0), lambda a: a[X > 0]),
    "boolean_mask axis": (lambda t: sd.boolean_mask(t, [True, False, True, True, False, True],
                                                    axis=1),
                          lambda a: a[:, [0, 2, 3, 5]]),
    "pad": (lambda t: sd.pad(t, [[1, 2], [0, 1]], constant_values=3.0),
            lambda a: np.pad(a, [[1, 2], [0, 1]], constant_values=3.0)),
    "pad reflect": (lambda t: sd.pad(t, [[1, 2], [3, 1]], "REFLECT"),
                    lambda a: np.pad(a, [[1, 2], [3, 1]], "reflect")),
    "pad symmetric": (lambda t: sd.pad(t, [[1, 2], [3, 1]], mode="symmetric"),
                      lambda a: np.pad(a, [[1, 2], [3, 1]], "symmetric")),
    "repeat": (lambda t: sd.repeat(t, [1, 0, 2, 1], axis=0),
               lambda a: np.repeat(a, [1, 0, 2, 1], axis=0)),
    "repeat flat": (lambda t: sd.repeat(t, 2), lambda a: np.repeat(a, 2)),
    "roll": (lambda t: sd.roll(t, [1, -2], axis=[0, 1]), lambda a: np.roll(a, (1, -2), (0, 1))),
    "embedding_lookup": (lambda t: sd.nn.embedding_lookup(t, [[0, 3], [2, 2]]),
                         lambda a: a[[[0, 3], [2, 2]]]),
}


@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients(name):
    op, reference = CASES[name]
    x = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        out = op(x)
        loss = weighted(out)
    expected = reference(X)
    for got, want in zip(out if isinstance(out, list) else [out],
                         expected if isinstance(expected, list) else [expected]):
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(),
                               numerical_grad(lambda a: weighted(reference(a)), X), atol=1e-7)


@pytest.mark.parametrize("call", [
    lambda x: sd.split(x, 4, axis=1), lambda x: sd.split(x, [1, 2], axis=1),
    lambda x: sd.slice(x, [3, 0], [2, 1]), lambda x: sd.slice(x, [-1, 0], [1, 1]),
    lambda x: sd.pad(x, [[4, 0], [0, 0]], "REFLECT"), lambda x: sd.pad(x, [[-1, 0], [0, 0]]),
    lambda x: sd.boolean_mask(x, [True, False]),
], ids=["split uneven", "split sizes", "slice past the end", "slice before the start",
        "reflect too wide", "negative padding", "mask shape"])
def test_what_tensorflow_refuses(call):
    with pytest.raises(sd.errors.InvalidArgumentError):
        call(sd.constant(X))


def test_embedding_lookup_of_a_variable_has_a_sparse_gradient():
    table = sd.Variable(X)
    with sd.GradientTape() as tape:
        loss = sd.reduce_sum(sd.nn.embedding_lookup(table, [1, 3, 1]) * 2.0)
    g = tape.gradient(loss, table)
    assert isinstance(g, sd.IndexedSlices)
    dense = np.zeros_like(X)
    dense[[1, 3]] = [[4.0], [2.0]]
    np.testing.assert_array_equal(sd.convert_to_tensor(g).numpy(), dense)


def test_dropout_scales_what_it_keeps_and_its_gradient_is_that_scale():
    sd.random.set_seed(3)
    x = sd.constant(np.ones(4000, np.float32))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.nn.dropout(x, rate=0.25)
    assert y.dtype == np.float32
    values = y.numpy()
    assert set(np.unique(values)) == {0.0, np.float32(1 / 0.75)}
    assert abs(np.mean(values == 0) - 0.25) < 0.03
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), values)
    rows = sd.nn.dropout(sd.ones([5, 300]), 0.5, noise_shape=[5, 1]).numpy()
    assert all(len(set(row)) == 1 for row in rows)  # one draw per row
    np.testing.assert_array_equal(sd.nn.dropout(x, 0.0).numpy(), x.numpy())
    with pytest.raises(ValueError):
        sd.nn.dropout(x, 1.0)


def test_reciprocal_no_nan():
    x = sd.constant([0.0, 2.0, -4.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.math.reciprocal_no_nan(x)
    assert y.numpy().tolist() == [0.0, 0.5, -0.25]
    assert tape.gradient(y, x).numpy().tolist() == [0.0, -0.25, -0.0625]
    assert sd.math.softmax is sd.nn.softmax and sd.math.log_softmax is sd.nn.log_softmax

"""The bare shape kept of an array the backward pass only unbroadcasts to
(compiler/bare_shapes.py: ``x.shape`` and ``unbroadcast_to``), beside the general
``shape_of`` it stands for.

Each program is checked three ways (compiled, eager tape, finite differences), and
its backward pass against the one of a unit compiled with a batched pass (which keeps
``shape_of``) bit for bit; the generated source says which path was taken."""
import numpy as np
import pytest

from srcdiff.api import _prepare
from srcdiff.function import Units
from srcdiff.rules.helpers import unbroadcast, unbroadcast_to

from compiler_programs import check_grad

rng = np.random.default_rng(9)


def layer(W, b, X):
    h = np.tanh(X @ W + b)
    return np.sum(h * h)


def rebound(x, b):
    y = x * 2.0
    y = y + b
    return np.sum(np.sin(y))


def branchy(x, b):
    if np.sum(x) > 0:
        y = x + b
    else:
        y = x - b
    return np.sum(y * y)


def measured_twice(x, b):
    y = x @ x.T
    z = y + b
    return np.sum(z * z) + np.mean(y, axis=0)[0]  # unreduce measures y too


def both_ways(f, args):
    """Gradients of the general pass and of the plain one, and the plain one's source."""
    wrt = tuple(range(len(args)))
    out = []
    for batched in (True, False):
        unit, raw = _prepare(Units(f, wrt, batched=batched), list(args))
        y, tape = unit.run(raw)
        out.append(unit.backward(tape, type(y)(1)))
    return out[0], out[1], unit.source


@pytest.mark.parametrize("shapes", [((3, 4), (4,), (5, 3)), ((3, 1), (4,), (5, 3)),
                                    ((3, 4), (1,), (5, 3)), ((3, 4), (5, 1), (5, 3))],
                         ids=["bias", "stretched-result", "size-1-bias", "column"])
def test_a_broadcast_operand_is_kept_as_its_bare_shape(shapes):
    args = tuple(rng.normal(size=s) for s in shapes)
    general, fast, source = both_ways(layer, args)
    assert "h_1 = h_1.shape" in source and "unbroadcast_to(" in source
    for g, h in zip(general, fast):
        assert g.dtype == h.dtype
        np.testing.assert_array_equal(g, h)
    check_grad(layer, args, (0, 1))


@pytest.mark.parametrize("f", [rebound, branchy, measured_twice], ids=lambda f: f.__name__)
def test_values_bound_twice_or_measured_otherwise_keep_shape_of(f):
    args = (rng.normal(size=(3, 3)), rng.normal(size=3))
    general, fast, source = both_ways(f, args)
    assert ".shape\n" not in source.split("def ")[1]  # the forward pass keeps no bare shape
    for g, h in zip(general, fast):
        np.testing.assert_array_equal(g, h)
    check_grad(f, args, (0, 1))


def test_float32_keeps_its_dtype():
    args = tuple(rng.normal(size=s).astype(np.float32) for s in ((3, 4), (4,), (5, 3)))
    general, fast, source = both_ways(layer, args)
    assert "unbroadcast_to(" in source
    for g, h, a in zip(general, fast, args):
        assert g.dtype == h.dtype == a.dtype
        np.testing.assert_array_equal(g, h)


@pytest.mark.parametrize("g_shape, x_shape", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), (1, 4)),
                                              ((3, 4), (3, 1)), ((2, 3, 4), (3, 1)), ((3,), ())])
def test_unbroadcast_to_is_unbroadcast_given_the_shape(g_shape, x_shape):
    g, x = rng.normal(size=g_shape), rng.normal(size=x_shape)
    np.testing.assert_array_equal(unbroadcast_to(g, x.shape), unbroadcast(g, x))
    assert unbroadcast_to(2.5, ()) == 2.5

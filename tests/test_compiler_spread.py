"""The spread adjoint of a full reduction folded into the product that reads it
(compiler/spread.py), beside the general path it stands for.

Each program is checked three ways (compiled, eager tape, finite differences), and
its folded backward pass against the unfolded one of the same program (a unit
compiled with a batched pass is never folded) bit for bit, dtypes included; the
generated source only says which path was taken."""
import numpy as np
import pytest

import srcdiff as sd
from srcdiff.api import _prepare
from srcdiff.function import Units
from srcdiff.rules.helpers import spread_number, unreduce

from compiler_programs import check_grad

rng = np.random.default_rng(5)


def squared_error(a, b):
    return np.mean((a - b) ** 2)


def cubes(x):
    return np.sum(x ** 3)


def sines(x):
    return np.mean(np.sin(x))


def tanhs(x):
    return np.sum(np.tanh(x) * 0.5)


def over_axis(x):
    return np.sum(np.mean(x ** 2, axis=0))


def kept_dims(x):
    return np.sum(np.mean(x ** 2, keepdims=True))


def two_arrays(x, y):
    return np.sum(x * y)


def scaled(x):
    return np.sum(x / 3)


def negated(x):
    return np.sum(-x)


def read_twice(x):
    y = x ** 2
    return np.mean(y) + np.sum(y * x)


def copied(x):
    y = x ** 2
    z = y
    return np.mean(z)


def as_float(x):
    return float(np.mean(x ** 2))


def unfolded_and_folded(f, args, wrt):
    """The gradients of the unfolded and the folded backward passes, and the folded
    unit's source."""
    out = []
    for batched in (True, False):
        unit, raw = _prepare(Units(f, wrt, batched=batched), list(args))
        y, tape = unit.run(raw)
        seed = 1.0 if type(y) is float else type(y)(1)
        grads = unit.backward(tape, seed)
        out.append(grads if len(wrt) > 1 else (grads,))
    return out[0], out[1], unit.source


def assert_same_bits(general, fast):
    for g, h in zip(general, fast):
        assert type(g) is type(h)
        assert np.asarray(g).dtype == np.asarray(h).dtype
        np.testing.assert_array_equal(g, h)


FOLDED = [
    (squared_error, lambda: (rng.normal(size=(3, 4)), rng.normal(size=4)), (0, 1)),
    (squared_error, lambda: (rng.normal(size=(1, 4)), rng.normal(size=(3, 1))), (0, 1)),
    (squared_error, lambda: (rng.normal(size=(3, 4)), rng.normal(size=(3, 4))), (0, 1)),
    (cubes, lambda: (rng.normal(size=(2, 5)),), (0,)),
    (sines, lambda: (rng.normal(size=6),), (0,)),
    (copied, lambda: (rng.normal(size=(2, 3)),), (0,)),
]


@pytest.mark.parametrize("f, make, wrt", FOLDED, ids=lambda v: getattr(v, "__name__", ""))
def test_a_spread_read_by_a_product_of_its_shape_is_folded(f, make, wrt):
    args = make()
    general, fast, source = unfolded_and_folded(f, args, wrt)
    assert "unreduce" not in source and "spread_number" in source
    assert_same_bits(general, fast)
    check_grad(f, args, wrt)


def test_squares_take_their_two_into_the_number():
    a, b = rng.normal(size=(3, 4)), rng.normal(size=4)
    source = unfolded_and_folded(squared_error, (a, b), (0, 1))[2]
    assert "* (2 * spread_number(" in source


KEPT = [
    (over_axis, lambda: (rng.normal(size=(3, 4)),)),     # the spread is no number
    (kept_dims, lambda: (rng.normal(size=(3, 4)),)),
    (two_arrays, lambda: (rng.normal(size=(3, 4)), rng.normal(size=4))),  # y broadcasts
    (scaled, lambda: (rng.normal(size=(3, 4)),)),        # the factor is a number
    (negated, lambda: (rng.normal(size=(3, 4)),)),       # no factor
    (read_twice, lambda: (rng.normal(size=(3, 4)),)),    # the spread is added to
]


@pytest.mark.parametrize("f, make", KEPT, ids=lambda v: getattr(v, "__name__", ""))
def test_other_spreads_are_made_as_they_were(f, make):
    args = make()
    wrt = tuple(range(len(args)))
    general, fast, source = unfolded_and_folded(f, args, wrt)
    assert "unreduce" in source
    assert_same_bits(general, fast)
    check_grad(f, args, wrt)


def test_a_spread_met_by_a_number_first_is_kept():
    x = rng.normal(size=(3, 4))
    general, fast, source = unfolded_and_folded(tanhs, (x,), (0,))
    assert "unreduce" in source  # the spread meets `* 0.5` first
    assert_same_bits(general, fast)
    check_grad(tanhs, (x,), 0)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_the_fold_keeps_dtypes(dtype):
    a = (rng.normal(size=(3, 4)) * 4).astype(dtype)
    b = (rng.normal(size=4) * 4).astype(dtype)
    general, fast, source = unfolded_and_folded(squared_error, (a, b), (0, 1))
    assert "spread_number" in source
    assert_same_bits(general, fast)
    da, db = sd.grad(squared_error, (0, 1))(a, b)
    expected = [2 * (a - b) / a.size, -np.sum(2 * (a - b), axis=0) / a.size]
    for g, e, arg in zip((da, db), expected, (a, b)):
        # an int argument's gradient is a float64 one (as the eager tape's)
        assert g.dtype == (arg.dtype if dtype is np.float32 else np.float64)
        assert g.shape == arg.shape
        np.testing.assert_allclose(g, e, rtol=1e-6 if dtype is np.float32 else 1e-15)


def test_a_python_float_seed_promotes_as_the_spread_did():
    """``float(...)`` hands the mean a Python float adjoint: the spread of it is float64,
    and so is the number folded in its place (a Python float would keep float32)."""
    x = rng.normal(size=(3, 4)).astype(np.float32)
    general, fast, source = unfolded_and_folded(as_float, (x,), (0,))
    assert "spread_number" in source
    assert_same_bits(general, fast)
    unit, raw = _prepare(Units(as_float, (0,)), [x])
    y, tape = unit.run(raw)
    assert unit.backward(tape, 1.0).dtype == np.float64
    check_grad(as_float, (x.astype(np.float64),), 0, eager=False)  # float() ends a tape


def test_a_zero_dimensional_argument():
    x = np.array(1.5)
    general, fast, _ = unfolded_and_folded(cubes, (x,), (0,))
    assert_same_bits(general, fast)
    assert sd.grad(cubes)(x) == 3 * 1.5 ** 2


@pytest.mark.parametrize("g", [np.float64(0.5), np.float32(0.5), 0.5, np.array(0.5),
                               np.array(0.5, np.float32), 2, 0.5 + 1j])
def test_spread_number_is_the_number_a_spread_holds(g):
    number = spread_number(g)
    spread = unreduce(g, np.zeros((2, 3)), None, False)
    assert isinstance(number, np.generic) and number.dtype == spread.dtype
    assert number == spread[0, 0]


# np.mean(x) runs as its stand-in, reductions.mean_of (the Traits field stand_in)

def mean_only(x):
    return np.mean(x)


def mean_over_axis(x):
    return np.sum(np.mean(x, axis=0) ** 2)


@pytest.mark.parametrize("x", [rng.normal(size=(3, 4)), rng.normal(size=(4, 6))[:, ::2],
                               np.array(2.5), np.float64(2.5), 2.5,
                               rng.normal(size=5).astype(np.float32),
                               np.arange(6).reshape(2, 3), np.zeros((0, 3)),
                               np.array([np.inf, -np.inf, 1.0]), [1.0, 2.0, 4.0],
                               rng.normal(size=3) + 1j],
                         ids=["float64", "strided", "0-d", "numpy-number", "float", "float32",
                              "ints", "empty", "inf-inf", "list", "complex"])
def test_mean_of_is_np_mean_bit_for_bit(x):
    import warnings
    from srcdiff.rules.reductions import mean_of
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        expected = np.mean(x)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = mean_of(x)
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


def test_the_forward_pass_calls_the_stand_in_for_one_argument_only():
    x = rng.normal(size=(3, 4))
    assert "mean_of(x)" in sd.adjoint_source(mean_only, args=(x,))
    source = sd.adjoint_source(mean_over_axis, args=(x,))
    assert "np.mean(x, axis=0)" in source and "mean_of" not in source
    for f in (mean_only, mean_over_axis):
        check_grad(f, (x,), 0)
    check_grad(mean_only, (x.astype(np.float32),), 0)

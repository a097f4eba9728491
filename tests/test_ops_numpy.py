"""NumPy on Tensors (API.md section 1): ufuncs, NumPy functions and ndarray methods
are recorded primitives with rules; each gradient is checked against finite differences.

Every function here runs on ndarrays (for the finite differences) and on Tensors
(through ``__array_ufunc__``/``__array_function__`` and the Tensor methods)."""
import numpy as np
import pytest

import srcdiff as sd
from srcdiff.rules import rule_of
from test_ops import check_gradients

RNG = np.random.default_rng(1)


def real(*shape):
    return lambda: RNG.uniform(-2, 2, shape)


def positive(*shape):
    return lambda: RNG.uniform(0.5, 2, shape)


def unit(*shape):
    return lambda: RNG.uniform(-0.8, 0.8, shape)


def matrix(n):
    return lambda: RNG.uniform(-0.5, 0.5, (n, n)) + n * np.eye(n)


def case(f, *inputs, id):
    return pytest.param(f, inputs, id=id)


UFUNCS = {  # the arithmetic and transcendental ufuncs, with domains of their inputs
    np.add: (real, real), np.subtract: (real, real), np.multiply: (real, real),
    np.divide: (real, positive), np.power: (positive, real), np.float_power: (positive, real),
    np.mod: (real, positive), np.fmod: (real, positive), np.maximum: (real, real),
    np.minimum: (real, real), np.fmax: (real, real), np.fmin: (real, real),
    np.arctan2: (real, real), np.hypot: (real, real), np.logaddexp: (real, real),
    np.logaddexp2: (real, real), np.negative: (real,), np.positive: (real,),
    np.abs: (real,), np.fabs: (real,), np.sign: (real,), np.square: (real,),
    np.sqrt: (positive,), np.cbrt: (positive,), np.reciprocal: (positive,), np.exp: (real,),
    np.exp2: (real,), np.expm1: (real,), np.log: (positive,), np.log2: (positive,),
    np.log10: (positive,), np.log1p: (positive,), np.sin: (real,), np.cos: (real,),
    np.tan: (unit,), np.arcsin: (unit,), np.arccos: (unit,), np.arctan: (real,),
    np.sinh: (real,), np.cosh: (real,), np.tanh: (real,), np.arcsinh: (real,),
    np.arctanh: (unit,), np.deg2rad: (real,), np.rad2deg: (real,),
}

FUNCTIONS = [
    *[case(ufunc, *[domain(2, 3) for domain in domains], id=ufunc.__name__)
      for ufunc, domains in UFUNCS.items()],
    case(lambda x: np.sum(x, axis=0), real(2, 3), id="sum"),
    case(lambda x: np.mean(x, axis=(0, 1), keepdims=True), real(2, 3, 2), id="mean"),
    case(lambda x: np.max(x, axis=1), real(2, 3), id="max"),
    case(lambda x: np.min(x), real(2, 3), id="min"),
    case(lambda x: np.prod(x, axis=-1), real(2, 3), id="prod"),
    case(lambda x: np.var(x, ddof=1), real(2, 3), id="var"),
    case(lambda x: np.std(x, axis=0), real(2, 3), id="std"),
    case(lambda x: np.cumsum(x, axis=1), real(2, 3), id="cumsum"),
    case(np.dot, real(2, 3), real(3, 2), id="dot"),
    case(np.matmul, real(4, 2, 3), real(3, 2), id="matmul"),
    case(np.outer, real(3), real(4), id="outer"),
    case(np.inner, real(2, 3), real(3), id="inner"),
    case(np.trace, real(3, 3), id="trace"),
    case(lambda x: np.transpose(x, (1, 0, 2)), real(2, 3, 2), id="transpose"),
    case(lambda x: np.reshape(x, (3, 2)), real(2, 3), id="reshape"),
    case(np.squeeze, real(1, 3), id="squeeze"),
    case(lambda x: np.expand_dims(x, 0), real(2, 3), id="expand_dims"),
    case(lambda x, y: np.concatenate([x, y], axis=1), real(2, 3), real(2, 1), id="concatenate"),
    case(lambda x, y: np.concatenate((x, y), axis=None), real(2, 3), real(2),
         id="concatenate-flat"),
    case(lambda x, y: np.stack([x, y, x]), real(2, 3), real(2, 3), id="stack"),
    case(lambda x, y: np.hstack([x, y]), real(2, 3), real(2, 2), id="hstack"),
    case(lambda x, y: np.vstack([x, y]), real(3), real(2, 3), id="vstack"),
    case(lambda x, y: np.where(x > y, x, y), real(2, 3), real(3), id="where"),
    case(lambda x: np.clip(x, -0.5, 1.0), real(2, 3), id="clip"),
    case(lambda x: np.einsum("ij,kj->ik", x, x), real(2, 3), id="einsum"),
    case(lambda x, y: np.tensordot(x, y, axes=([1], [0])), real(2, 3), real(3, 2), id="tensordot"),
    case(np.linalg.inv, matrix(3), id="inv"),
    case(np.linalg.det, matrix(3), id="det"),
    case(np.linalg.solve, matrix(3), real(3), id="solve"),
    case(lambda x: np.linalg.norm(x, axis=1), real(2, 3), id="linalg.norm"),
    case(lambda x: np.linalg.slogdet(-x).logabsdet, matrix(3), id="slogdet"),
    case(lambda x: np.split(x, 2)[1][:, :2] * np.split(x, [1, 3], axis=1)[1][:1], real(2, 4),
         id="split"),
    case(lambda x: np.array_split(x, 3)[0] + 2 * np.array_split(x, 3)[2], real(5),
         id="array_split"),
    case(lambda x: np.hsplit(x, 2)[0] + np.vsplit(x, 2)[1].T, real(2, 2), id="hsplit-vsplit"),
    case(np.diag, real(3), id="diag"),
    case(lambda x: np.diag(x, 1), real(3, 4), id="diag-of-matrix"),
    case(lambda x: np.diagonal(x, 0, 1, 2), real(2, 3, 3), id="diagonal"),
    case(lambda x, w: np.average(x, 1, w), real(2, 3), positive(3), id="average"),
    case(lambda x: np.sort(x, axis=0), real(3, 2), id="sort"),
    case(lambda x: np.take_along_axis(x, np.array([[1], [0]]), axis=1), real(2, 3),
         id="take_along_axis"),
    case(lambda x: np.repeat(x, [2, 0, 1], axis=1), real(2, 3), id="repeat"),
    case(lambda x: np.pad(x, ((1, 0), (0, 2))), real(2, 3), id="pad"),
    case(lambda x: np.roll(x, 1, axis=0), real(2, 3), id="roll"),
    case(lambda x: np.flip(np.tril(np.triu(x, -1))), real(3, 3), id="flip-triu-tril"),
    case(lambda x: np.tile(np.broadcast_to(x, (2, 3)), 2), real(3), id="tile-broadcast_to"),
    case(lambda x: np.take(x, [0, 2, 2]), real(2, 3), id="take"),
    case(lambda x: np.moveaxis(np.swapaxes(x, 0, 1), 0, -1), real(2, 3, 2),
         id="swapaxes-moveaxis"),
    case(lambda x: np.add.reduce(x) + np.maximum.reduce(x, axis=1).sum(), real(3, 3),
         id="ufunc.reduce"),
    case(lambda x: np.add.accumulate(x) * np.multiply.reduce(x), real(3), id="ufunc.accumulate"),
    # ndarray methods and attributes
    case(lambda x: x.T, real(2, 3), id=".T"),
    case(lambda x: x.sum(axis=1) + x.mean() + x.var() + x.std(), real(2, 3),
         id=".sum.mean.var.std"),
    case(lambda x: x.max(axis=0) * x.min() * x.prod(), real(2, 3), id=".max.min.prod"),
    case(lambda x: x.reshape(3, 2) @ x.reshape((2, 3)), real(2, 3), id=".reshape"),
    case(lambda x: x.transpose(1, 0) + x.transpose(), real(3, 3), id=".transpose"),
    case(lambda x: x.dot(x.T), real(2, 3), id=".dot"),
    case(lambda x: x.copy() * x.astype(np.float64), real(2, 3), id=".copy.astype"),
    case(lambda x: x.flatten() + x.ravel(), real(2, 3), id=".flatten.ravel"),
    case(lambda x: x.cumsum(axis=0) + x.clip(-1, 1), real(2, 3), id=".cumsum.clip"),
    case(lambda x: x.squeeze() + x.swapaxes(0, 1)[:, 0], real(1, 3), id=".squeeze.swapaxes"),
    case(lambda x: x[1:, ::-1] * x[[0, 0]][:, None], real(3, 2), id="getitem"),
    case(lambda x: x[x > 0] * 2, real(2, 3), id="getitem-mask"),
    case(lambda x: (x ** 2 - 3 / (x + 5) + abs(x) - x % 1.5) @ x.T, real(2, 3), id="operators"),
]


@pytest.mark.parametrize("f, inputs", FUNCTIONS)
def test_numpy_on_tensors_is_recorded_and_differentiated(f, inputs):
    values = [make() for make in inputs]
    tensors = [sd.constant(v) for v in values]
    out = f(*tensors)
    assert isinstance(out, sd.Tensor)  # NumPy on Tensors gives Tensors
    np.testing.assert_allclose(out.numpy(), f(*values), rtol=1e-12)
    check_gradients(f, *values)


@pytest.mark.parametrize("name, numpy_fn", [
    ("sin", np.sin), ("add", np.add), ("abs", np.absolute), ("maximum", np.maximum),
    ("sigmoid", None), ("round", np.rint)])
def test_an_op_and_its_numpy_function_are_one_primitive(name, numpy_fn):
    op = getattr(sd, name)
    if numpy_fn is not None:
        assert op.__numpy__ is numpy_fn
    assert rule_of(op.__numpy__) is not None or name == "round"


def test_numpy_results_of_several_values_are_tensors():
    x = sd.constant(np.arange(6.0))
    pieces = np.split(x, 3)
    assert len(pieces) == 3 and all(isinstance(p, sd.Tensor) for p in pieces)
    sign, logabsdet = np.linalg.slogdet(sd.constant(-np.eye(3)))
    assert isinstance(sign, sd.Tensor) and sign.numpy() == -1 and logabsdet.numpy() == 0
    with pytest.raises(ValueError, match="equal division"):
        np.split(x, 4)


def test_sizes_and_dims():
    x = sd.constant(np.zeros((2, 3)))
    assert x.size == 6 and x.ndim == 2 and np.ndim(x) == 2 and np.shape(x) == (2, 3)

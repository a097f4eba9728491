"""srcdiff against TensorFlow itself, where TensorFlow is installed (skipped otherwise):
the same program on the same float32 and float64 inputs gives the same values, dtypes,
shapes and tape gradients, edge points included (zeros, ties, infinities).  The other
test modules pin each convention without TensorFlow; this one catches a drift from it."""
import os

import numpy as np
import pytest

import srcdiff as sd

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

EDGE = [0.0, -0.0, 1.0, -1.0, 6.0, 0.5, -2.5, np.inf, -np.inf]
PROGRAMS = {  # name: (the program on a module, a float input's values)
    "relu": (lambda m, x: m.nn.relu(x), EDGE),
    "relu6": (lambda m, x: m.nn.relu6(x), EDGE),
    "leaky_relu": (lambda m, x: m.nn.leaky_relu(x), EDGE),
    "elu": (lambda m, x: m.nn.elu(x), EDGE[:7]),
    "selu": (lambda m, x: m.nn.selu(x), EDGE[:7]),
    "softsign": (lambda m, x: m.nn.softsign(x), EDGE),
    "abs": (lambda m, x: m.abs(x), EDGE),
    "sign": (lambda m, x: m.sign(x), EDGE),
    "sqrt": (lambda m, x: m.sqrt(m.abs(x)), EDGE),
    "acosh": (lambda m, x: m.acosh(x), EDGE),
    "log": (lambda m, x: m.math.log(m.abs(x)), EDGE),
    "xlogy": (lambda m, x: m.math.xlogy(x, m.abs(x)), EDGE[:7]),
    "divide_no_nan": (lambda m, x: m.math.divide_no_nan(m.ones_like(x), x), EDGE[:7]),
    "pow zero base": (lambda m, x: m.pow(m.abs(x) - m.abs(x), x), EDGE[:7]),
    "maximum ties": (lambda m, x: m.maximum(x, m.abs(x)), EDGE[:7]),
    "clip_by_value": (lambda m, x: m.clip_by_value(x, -1.0, 1.0), EDGE),
    "reduce_max ties": (lambda m, x: m.reduce_max(m.reshape(m.abs(x[:6]), [2, 3]), axis=1),
                        EDGE),
    "reduce_logsumexp": (lambda m, x: m.reduce_logsumexp(m.reshape(x[:6], [3, 2]), axis=-1,
                                                         keepdims=True), EDGE),
    "norm": (lambda m, x: m.norm(m.reshape(x[:6], [2, 3]), axis=1), EDGE),
    "spectral norm": (lambda m, x: m.norm(m.reshape(x[:6], [2, 3]), ord=2, axis=[0, 1]),
                      [0.5, -1.0, 2.0, 0.3, 1.5, -0.7]),
    "softmax": (lambda m, x: m.nn.softmax(m.reshape(x[:6], [2, 3])), EDGE),
    "log_softmax": (lambda m, x: m.nn.log_softmax(m.reshape(x[:6], [2, 3]), axis=0), EDGE),
    "sigmoid_ce": (lambda m, x: m.nn.sigmoid_cross_entropy_with_logits(
        labels=m.ones_like(x) * 0.3, logits=x), EDGE),
    "top_k": (lambda m, x: m.math.top_k(m.abs(x[:7]), k=3).values, EDGE),
    "empty reduce_max": (lambda m, x: m.reduce_max(m.reshape(x[:0], [0, 2]), axis=0), EDGE),
    "floordiv": (lambda m, x: m.math.floordiv(x, 0.1) * x, EDGE[:7]),
    "gather": (lambda m, x: m.gather(x, [2, 0, 2]), EDGE),
    "split": (lambda m, x: m.split(x, [2, -1, 3])[1] * 2.0, EDGE),
    "pad reflect": (lambda m, x: m.pad(m.reshape(x[:6], [2, 3]), [[1, 1], [2, 0]], "REFLECT"),
                    EDGE),
    "einsum": (lambda m, x: m.einsum("ij,kj->ik", m.reshape(x[:6], [2, 3]),
                                     m.reshape(x[:6], [2, 3])), EDGE[:7]),
}


def run(module, program, values, dtype):
    """The program's value and its tape gradient (of a weighted sum) in ``module``."""
    x = module.constant(np.array(values, dtype))
    with module.GradientTape() as tape:
        tape.watch(x)
        y = program(module, x)
        weights = np.linspace(0.5, 1.5, int(np.prod(y.shape))).reshape(y.shape).astype(dtype)
        loss = module.reduce_sum(y * weights)
    g = tape.gradient(loss, x)  # TensorFlow's gather gives an IndexedSlices: densified
    return y, (None if g is None else module.convert_to_tensor(g).numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", PROGRAMS)
def test_values_dtypes_and_gradients_match_tensorflow(name, dtype):
    program, values = PROGRAMS[name]
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    with np.errstate(all="ignore"):
        (ty, tg), (sy, sg) = run(tf, program, values, dtype), run(sd, program, values, dtype)
    assert (sy.dtype, tuple(sy.shape)) == (np.dtype(ty.dtype.as_numpy_dtype), tuple(ty.shape))
    np.testing.assert_allclose(sy.numpy(), ty.numpy(), rtol=rtol, atol=rtol)
    assert (sg is None) == (tg is None)
    if tg is not None:
        np.testing.assert_allclose(sg, tg, rtol=rtol, atol=rtol)

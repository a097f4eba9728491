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


# --- dtypes: TensorFlow's ops never promote one Tensor to another's dtype ---

def outcome(module, program):
    """``program(module)`` as comparable across modules: the name of the exception it
    raises, or the dtype and value of its result."""
    try:
        out = program(module)
    except Exception as error:  # noqa: BLE001 (the type is what is compared)
        return type(error).__name__
    return np.dtype(getattr(out.dtype, "as_numpy_dtype", out.dtype)), out.numpy().tolist()


def _f64(m, value):
    return m.constant(value, m.float64)


MIXED_DTYPES = {  # name: a program on a module; TensorFlow's outcome is the expected one
    "add f32 f64": lambda m: m.add(m.constant(1.0), _f64(m, 2.0)),
    "add f64 f32": lambda m: m.math.add(_f64(m, 2.0), m.constant(1.0)),
    "matmul": lambda m: m.matmul(m.ones((2, 2)), m.ones((2, 2), m.float64)),
    "maximum": lambda m: m.maximum(m.constant([1.0, 3.0]), _f64(m, [2.0, 2.0])),
    "where": lambda m: m.where(m.constant([True, False]), m.ones(2), m.zeros(2, m.float64)),
    "concat": lambda m: m.concat([m.ones(2), m.ones(2, m.float64)], 0),
    "stack": lambda m: m.stack([m.constant(1.0), _f64(m, 2.0)]),
    "Variable": lambda m: m.multiply(m.Variable([1.0, 2.0]), _f64(m, 3.0)),
    "complex": lambda m: m.add(m.constant(1.0 + 2.0j), m.constant(1.0)),
    "Python float": lambda m: m.add(_f64(m, 0.1), 0.2),
    "NumPy number": lambda m: m.maximum(m.constant(1.0), np.float64(3.1)),
    "ndarray of the dtype": lambda m: m.matmul(m.ones((2, 2)), np.full((2, 2), 0.1, np.float32)),
    "cast first": lambda m: m.add(m.cast(m.constant(1.5), m.float64), _f64(m, 0.1)),
    "assign f64": lambda m: m.Variable(1.0).assign(_f64(m, 2.0)),
    "assign_add int": lambda m: m.Variable(1.0).assign_add(m.constant(2)),
    "assign NumPy number": lambda m: m.Variable(1.0).assign_sub(np.float64(0.1)),
}


@pytest.mark.parametrize("name", MIXED_DTYPES)
def test_ops_on_mixed_dtypes_raise_or_convert_as_tensorflow(name):
    program = MIXED_DTYPES[name]
    assert outcome(sd, program) == outcome(tf, program)


NUMPY_PROMOTES = {  # name: (a program TensorFlow refuses or computes in float32, NumPy's)
    "operator": (lambda m: m.constant([1.0, 2.0]) * _f64(m, [3.0, 0.1]),
                 np.float32([1.0, 2.0]) * np.float64([3.0, 0.1])),
    "ndarray": (lambda m: m.add(m.constant([1.0, 2.0]), np.array([3.0, 0.1])),
                np.float32([1.0, 2.0]) + np.array([3.0, 0.1])),
    "int ndarray": (lambda m: m.multiply(m.constant([1.0, 2.0]), np.array([3, 4])),
                    np.float32([1.0, 2.0]) * np.array([3, 4])),
}


@pytest.mark.parametrize("name", NUMPY_PROMOTES)
def test_operators_and_ndarrays_keep_numpys_promotion(name):
    """Where srcdiff departs from TensorFlow on purpose: an operator is a NumPy primitive,
    and an ndarray is what compiled code computes on, so that a NumPy program computes on
    the tape what it computes compiled: what NumPy computes from the same values."""
    program, expected = NUMPY_PROMOTES[name]
    assert outcome(tf, program) != outcome(sd, program)  # else the departure is gone
    assert outcome(sd, program) == (expected.dtype, expected.tolist())


def _refused_by_the_compiler(x, w):
    try:  # (the compiler refuses try/except: the function runs on the eager tape)
        return sd.reduce_sum(sd.multiply(x, w))
    except ZeroDivisionError:
        return None


def test_code_run_for_the_compiler_promotes_as_compiled_code():
    """An op's refusal of mixed dtypes is for eager user code: a function written for the
    compiler computes on the tape (its eager fallback) what its compiled form would."""
    x, w = sd.constant([1.0, 2.0]), sd.constant([3.0, 0.5], sd.float64)
    with pytest.raises(sd.errors.InvalidArgumentError):
        _refused_by_the_compiler(x, w)
    with pytest.warns(Warning, match="try/except"), sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.function(_refused_by_the_compiler, fallback="eager")(x, w)
    assert y.dtype == np.float64 and y.numpy() == 4.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.float32([3.0, 0.5]))


def mixed_second_derivative(m):
    """A second derivative through casts: the backward walks' rules mix float32 and
    float64 on purpose (the outer tape records the inner walk's), and must not be refused."""
    x, w = m.constant([0.5, -1.0, 2.0]), _f64(m, [1.5, 0.3, -0.7])
    with m.GradientTape() as outer:
        outer.watch(x)
        with m.GradientTape() as inner:
            inner.watch(x)
            x64 = m.cast(x, m.float64)
            y = m.reduce_sum(m.sin(x64) * w + x64 ** 3)
        dx = inner.gradient(y, x)
        z = m.reduce_sum(m.concat([dx, m.cast(w, m.float32)], 0) ** 2)
    ddx = outer.gradient(z, x)
    return m.stack([dx, ddx])


def test_gradients_through_casts_mix_dtypes_as_tensorflow():
    (dtype, value), (expected_dtype, expected) = (outcome(sd, mixed_second_derivative),
                                                  outcome(tf, mixed_second_derivative))
    assert dtype == expected_dtype
    np.testing.assert_allclose(value, expected, rtol=1e-5)


# --- the tape: watched variables, output gradients ---

def _variables(m):
    return (m.Variable(3), m.Variable(2.0), m.Variable(5.0, trainable=False), m.Variable(True),
            m.Variable(np.int64(4)))


WATCHING = {  # name: (watch_accessed_variables, the indices of _variables watched)
    "read": (True, ()),
    "read, not accessed": (False, ()),
    "watched": (True, (4, 2, 0)),
    "watched, not accessed": (False, (3, 2)),
}


def watched(m, name):
    """The (dtype, value) of each variable ``watched_variables()`` gives, in its order,
    after reading them all (in reverse order of construction) and watching some."""
    accessed, indices = WATCHING[name]
    variables = _variables(m)
    with m.GradientTape(watch_accessed_variables=accessed) as tape:
        for i in indices:
            tape.watch(variables[i])
        for v in reversed(variables):
            v.read_value()
    return [(np.dtype(getattr(v.dtype, "as_numpy_dtype", v.dtype)), v.numpy().item())
            for v in tape.watched_variables()]


@pytest.mark.parametrize("name", WATCHING)
def test_watched_variables_are_tensorflows_whatever_their_dtype(name):
    assert watched(sd, name) == watched(tf, name)


def test_an_integer_variable_read_is_watched_silently(caplog):
    """TensorFlow warns of an explicit watch of an integer value only."""
    v = sd.Variable(3)
    with sd.GradientTape() as tape:
        y = v * 2
    assert tape.watched_variables() == (v,) and not caplog.records
    assert tape.gradient(y, v) is None and caplog.records  # the source's warning


OUTPUT_GRADIENTS = {  # name: output_gradients for the targets [y1, y2]
    "None": None,
    "None first": lambda m: [None, m.constant(2.0)],
    "None second": lambda m: [m.constant(2.0), None],
    "all None": lambda m: [None, None],
    "nested None": lambda m: [[m.constant(2.0)], [None]],
    "given": lambda m: [m.constant(2.0), m.constant(-1.0)],
}


def gradient_seeded(m, name):
    """The gradient of [x1 ** 2, x2 ** 3] at (2, 3) seeded with OUTPUT_GRADIENTS[name]."""
    seeds = OUTPUT_GRADIENTS[name]
    x1, x2 = m.constant(2.0), m.constant(3.0)
    with m.GradientTape() as tape:
        tape.watch([x1, x2])
        y1, y2 = x1 ** 2, x2 ** 3
    return m.stack(tape.gradient([y1, y2], [x1, x2],
                                 output_gradients=seeds and seeds(m)))


@pytest.mark.parametrize("name", OUTPUT_GRADIENTS)
def test_a_none_output_gradient_is_tensorflows_error(name):
    assert outcome(sd, lambda m: gradient_seeded(m, name)) == outcome(
        tf, lambda m: gradient_seeded(m, name))

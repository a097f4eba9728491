"""Tensor value semantics (API.md section 1): printing, dtypes, operators, indexing,
Python protocols, NumPy interop and array methods; every differentiable operation
is checked to be recorded, against central finite differences."""
import operator

import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad

RNG = np.random.default_rng(1)


def assert_tensor_equal(t, expected, dtype=None):
    assert isinstance(t, sd.Tensor)
    expected = np.asarray(expected)
    assert t.dtype == (expected.dtype if dtype is None else dtype)
    np.testing.assert_array_equal(t.numpy(), expected)


def assert_gradient_matches(f, x0):
    """f (Tensor -> scalar Tensor, also ndarray -> scalar) is recorded by a tape:
    its gradient at x0 equals central finite differences."""
    x = sd.constant(np.asarray(x0, dtype=np.float64))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x)
    assert g is not None, "the operation was not recorded"
    expected = numerical_grad(lambda v: np.asarray(f(sd.constant(v)).numpy()), x0)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6, atol=1e-9)


# --- printing ----------------------------------------------------------------------------

@pytest.mark.parametrize("value, text", [
    (6.0, "<srcdiff.Tensor: shape=(), dtype=float32, numpy=6.0>"),
    (0.1, "<srcdiff.Tensor: shape=(), dtype=float32, numpy=0.10000000149011612>"),
    (3, "<srcdiff.Tensor: shape=(), dtype=int32, numpy=3>"),
    (True, "<srcdiff.Tensor: shape=(), dtype=bool, numpy=True>"),
    ([1.0, 2.0], "<srcdiff.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], "
                 "dtype=float32)>"),
    ([[1.0], [2.0]], "<srcdiff.Tensor: shape=(2, 1), dtype=float32, numpy=\n"
                     "array([[1.],\n       [2.]], dtype=float32)>"),
], ids=["float", "float32-as-python", "int", "bool", "vector", "matrix"])
def test_repr_is_tensorflows(value, text):
    # TensorFlow shows a scalar as the Python number it holds, and starts a
    # multi-line array on a line of its own.
    assert repr(sd.constant(value)) == text


@pytest.mark.parametrize("value, text", [
    (6.0, "srcdiff.Tensor(6.0, shape=(), dtype=float32)"),
    ([1.0, 2.0], "srcdiff.Tensor([1. 2.], shape=(2,), dtype=float32)"),
    ([[8.0, 8.0]], "srcdiff.Tensor([[8. 8.]], shape=(1, 2), dtype=float32)"),
    ([[8.0, 8.0], [8.0, 8.0]], "srcdiff.Tensor(\n[[8. 8.]\n [8. 8.]], shape=(2, 2), "
                               "dtype=float32)"),
], ids=["scalar", "vector", "one-row", "matrix"])
def test_str_is_tensorflows(value, text):
    assert str(sd.constant(value)) == text


def test_shape_prints_as_a_tuple_and_answers_tensorshape_questions():
    t = sd.zeros((4, 1))
    assert str(t.shape) == repr(t.shape) == "(4, 1)"
    assert t.shape == (4, 1) and t.shape[0] == 4
    assert t.shape.as_list() == [4, 1]
    assert (t.shape.rank, t.shape.num_elements()) == (2, 4)
    assert (t.ndim, t.size, t.dtype) == (2, 4, np.float32)


def test_numpy_is_a_copy_and_the_tensor_stays_immutable():
    t = sd.constant([1.0, 2.0])
    array = t.numpy()
    assert isinstance(array, np.ndarray)
    array[0] = 100.0
    assert_tensor_equal(t, np.float32([1.0, 2.0]))
    view = np.asarray(t)
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 100.0
    with pytest.raises(TypeError):
        t[0] = 100.0


def test_numpy_of_a_scalar_is_a_numpy_scalar():
    value = sd.constant(3.0).numpy()
    assert type(value) is np.float32 and value == 3.0


def test_tensors_are_unhashable_and_ref_is_the_key():
    t = sd.constant(1.0)
    with pytest.raises(TypeError):
        hash(t)
    assert {t.ref(): "t"}[t.ref()] == "t"
    assert t.ref().deref() is t


# --- dtypes of constant and convert_to_tensor --------------------------------------------

@pytest.mark.parametrize("convert", [sd.constant, sd.convert_to_tensor])
@pytest.mark.parametrize("value, dtype", [
    (1.0, np.float32), (1, np.int32), (True, np.bool_), ([1, 2], np.int32),
    ([1, 2.5], np.float32), (2 ** 40, np.int64), (1 + 2j, np.complex128),
    (np.float64(1.0), np.float64), (np.array([1.0]), np.float64), (np.arange(3), np.int64),
    (np.float16([1.0]), np.float16),
], ids=["float", "int", "bool", "int-list", "mixed-list", "big-int", "complex",
        "np.float64", "float64-array", "int64-array", "float16-array"])
def test_python_numbers_take_tensorflows_dtypes_and_arrays_keep_theirs(convert, value, dtype):
    t = convert(value)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), value)


def test_constant_takes_dtype_and_shape():
    assert_tensor_equal(sd.constant(1, dtype=sd.float64), np.float64(1.0))
    assert_tensor_equal(sd.constant(0.5, shape=(2, 3)), np.full((2, 3), 0.5, np.float32))
    assert_tensor_equal(sd.constant([1, 2, 3, 4], shape=[2, 2]), np.int32([[1, 2], [3, 4]]))


def test_convert_to_tensor_of_tensors_variables_and_nested_lists():
    t = sd.constant([1.0, 2.0])
    assert sd.convert_to_tensor(t) is t
    v = sd.Variable([3.0, 4.0])
    from_variable = sd.convert_to_tensor(v)
    assert type(from_variable) is sd.Tensor
    assert_tensor_equal(from_variable, np.float32([3.0, 4.0]))
    assert_tensor_equal(sd.convert_to_tensor([[t, t], [t, v]]),
                        np.float32([[[1, 2], [1, 2]], [[1, 2], [3, 4]]]))
    with pytest.raises(ValueError, match="requested dtype float64 for Tensor with dtype "
                                         "float32"):
        sd.convert_to_tensor(t, dtype=sd.float64)


def test_convert_to_tensor_of_nested_tensors_is_recorded():
    assert_gradient_matches(
        lambda x: sd.reduce_sum(sd.convert_to_tensor([[x[0], x[1]], [x[1] * x[1], 2.0]]) ** 2),
        [0.5, -1.5])


# --- operators ---------------------------------------------------------------------------

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.floordiv, operator.mod]


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_operators_compute_what_numpy_computes(op):
    a0, b0 = np.float32([1.5, -2.0, 3.0]), np.float32([0.5, 4.0, -1.25])
    b = sd.constant(b0)
    base = np.abs(a0) if op is operator.pow else a0  # no nan from a negative base
    expected = op(base, b0)
    assert_tensor_equal(op(sd.constant(base), b), expected)
    # with Python numbers and ndarrays on either side; the Tensor's float32 stays
    assert_tensor_equal(op(sd.constant(base), 2.0), op(base, np.float32(2.0)))
    assert_tensor_equal(op(2.0, b), op(np.float32(2.0), b0))
    assert_tensor_equal(op(base, b), expected)  # ndarray on the left: reflected
    assert_tensor_equal(op(sd.constant(base), b0), expected)


@pytest.mark.parametrize("f", [
    lambda x: (x + 2.0) * (3.0 - x) / (x * x + 1.0),
    lambda x: 2.0 / (x + 3.0) - (x - 1.0) ** 2,
    lambda x: 2.0 ** x + x ** 3.0 + (x * x) ** x,
    lambda x: -x * abs(x) + +x,
    lambda x: np.float64([1.0, 2.0, 3.0]) * x + x / np.float64([2.0, 4.0, 8.0]),
    lambda x: np.float64([1.0, -1.0, 2.0]) - x,
    lambda x: np.float64([[1.0, 2.0, 3.0]]) @ x[:, None] + x @ x,
    lambda x: (x % 0.8) * x,
], ids=["add-sub-mul-div", "reflected-div", "pow-both-sides", "neg-abs-pos",
        "ndarray-on-either-side", "ndarray-minus", "matmul-reflected", "mod"])
def test_operators_with_numbers_and_ndarrays_are_recorded(f):
    assert_gradient_matches(lambda x: sd.reduce_sum(f(x)), [0.3, 1.2, 2.1])


def test_floor_division_has_no_gradient():
    x = sd.constant([1.5, 2.5])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x // 1.0
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge,
                                operator.eq, operator.ne], ids=lambda op: op.__name__)
def test_comparisons_give_bool_tensors(op):
    a0 = np.float32([1.0, 2.0, 3.0])
    a = sd.constant(a0)
    assert_tensor_equal(op(a, 2.0), op(a0, 2.0))
    assert_tensor_equal(op(2.0, a), op(2.0, a0))
    assert_tensor_equal(op(a, sd.constant(a0[::-1])), op(a0, a0[::-1]))
    with sd.GradientTape() as tape:  # a comparison is not differentiable, and not an error
        tape.watch(a)
        assert op(a, 2.0).dtype == np.bool_


# --- indexing ----------------------------------------------------------------------------

M = np.arange(24.0).reshape(4, 6)


@pytest.mark.parametrize("index", [
    1, -1, slice(1, 3), (slice(None), 2), (Ellipsis, 0), (None, 1), (slice(None), None, 3),
    (slice(None, None, -2), slice(1, 5, 2)), np.array([3, 0, 3]), [1, 2],
    (np.array([0, 2]), np.array([1, 5])), M[:, 0] > 5, M > 10, (1, Ellipsis, None),
], ids=["int", "negative", "slice", "column", "ellipsis", "newaxis", "newaxis-middle",
        "steps", "int-array", "int-list", "paired-arrays", "bool-rows", "bool-mask",
        "int-ellipsis-newaxis"])
def test_indexing_is_numpys_and_recorded(index):
    assert_tensor_equal(sd.constant(M)[index], M[index])
    assert_gradient_matches(lambda x: sd.reduce_sum(sd.sin(x[index])), M / 10)


def test_tensors_as_indices():
    t = sd.constant(M)
    assert_tensor_equal(t[sd.constant(2)], M[2])
    assert_tensor_equal(t[sd.constant([3, 1])], M[[3, 1]])
    assert_tensor_equal(t[1, sd.constant(4)], M[1, 4])
    assert_tensor_equal(t[t > 20.0], M[M > 20.0])
    assert_tensor_equal(t[sd.constant(1):sd.constant(3)], M[1:3])
    assert_gradient_matches(lambda x: sd.reduce_sum(x[sd.constant([0, 0, 2])] ** 2), M / 10)


# --- Python protocols --------------------------------------------------------------------

def test_one_element_tensors_convert_to_python_scalars():
    assert bool(sd.constant(0.5)) is True and bool(sd.constant([0.0])) is False
    assert float(sd.constant([[2.5]])) == 2.5
    assert int(sd.constant(3.9)) == 3
    assert ["a", "b", "c"][sd.constant(2)] == "c"
    assert operator.index(sd.constant(np.int64(7))) == 7
    with pytest.raises(TypeError):
        operator.index(sd.constant(1.0))  # as for a float ndarray
    with pytest.raises(ValueError, match="ambiguous"):
        bool(sd.constant([1.0, 2.0]))
    with pytest.raises(TypeError, match="one-element"):
        float(sd.constant([1.0, 2.0]))


def test_while_loop_on_a_norm_runs():
    b = sd.constant([1.0, 1.0])
    steps = 0
    while sd.norm(b) < 1000:
        b = b * 2
        steps += 1
    assert steps == 10  # sqrt(2) * 2**10 > 1000 > sqrt(2) * 2**9


def test_len_and_iteration_over_axis_0():
    t = sd.constant(M)
    assert len(t) == 4
    rows = list(t)
    assert all(isinstance(r, sd.Tensor) for r in rows)
    np.testing.assert_array_equal(np.stack([r.numpy() for r in rows]), M)
    assert_gradient_matches(lambda x: sum(row[0] * row[1] for row in x), M / 10)
    for scalar_use in (len, iter):
        with pytest.raises(TypeError):
            scalar_use(sd.constant(1.0))


def test_array_protocol():
    t = sd.constant(M)
    assert type(np.asarray(t)) is np.ndarray
    np.testing.assert_array_equal(np.asarray(t), M)
    assert np.array(t, dtype=np.float32).dtype == np.float32
    assert np.array(t).flags.writeable


# --- NumPy functions on Tensors ----------------------------------------------------------

@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.sin(x)),
    lambda x: np.sum(np.sum(x * x, axis=0) * np.float64([1.0, 2.0, 3.0])),
    lambda x: np.sum(np.matmul(x, x.T) ** 2),
    lambda x: np.sum(np.where(x > 0.2, x ** 2, -x)),
    lambda x: np.sum(np.concatenate([x, 2 * x], axis=1) ** 2),
    lambda x: np.mean(np.exp(x)) + np.max(x) * np.prod(x),
    lambda x: np.sum(np.maximum(x, 0.4) * np.tanh(x)),
    lambda x: np.add.reduce(x * x, axis=1)[0],
], ids=["sin", "sum-axis", "matmul", "where", "concatenate", "mean-max-prod", "maximum",
        "add.reduce"])
def test_numpy_functions_on_tensors_return_tensors_and_are_recorded(f):
    x0 = np.array([[0.1, 0.5, -0.3], [0.7, -0.2, 0.9]])
    assert isinstance(f(sd.constant(x0)), sd.Tensor)
    np.testing.assert_allclose(f(sd.constant(x0)).numpy(), f(x0))
    assert_gradient_matches(f, x0)


def test_numpy_function_without_a_rule_on_a_watched_tensor_is_lookup_error_naming_it():
    x = sd.constant([0.5, 1.5])
    with sd.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(LookupError, match="numpy.nextafter"):
            np.nextafter(x, 2.0)
        with pytest.raises(LookupError, match="numpy.add.reduceat"):
            np.add.reduceat(x, [0])
        # values not watched may pass: there is nothing to differentiate
        assert isinstance(np.nextafter(sd.constant([0.5]), 1.0), sd.Tensor)


# --- array methods -----------------------------------------------------------------------

@pytest.mark.parametrize("method", [
    lambda x: x.T, lambda x: x.sum(), lambda x: x.sum(axis=1), lambda x: x.mean(axis=0),
    lambda x: x.var(), lambda x: x.max(axis=1), lambda x: x.min(), lambda x: x.prod(),
    lambda x: x.reshape(3, 2), lambda x: x.reshape((6,)), lambda x: x.transpose(),
    lambda x: x.transpose(1, 0), lambda x: x.dot(x.T), lambda x: x.copy(),
    lambda x: x.flatten(), lambda x: x.ravel(), lambda x: x.std(axis=0),
], ids=["T", "sum", "sum-axis", "mean-axis", "var", "max-axis", "min", "prod", "reshape",
        "reshape-tuple", "transpose", "transpose-axes", "dot", "copy", "flatten", "ravel",
        "std"])
def test_array_methods_are_numpys_and_recorded(method):
    x0 = np.array([[0.1, 0.5, -0.3], [0.7, -0.2, 0.9]])
    assert_tensor_equal(method(sd.constant(x0)), method(x0))
    assert_gradient_matches(lambda x: sd.reduce_sum(sd.sin(method(x))), x0)


def test_astype_casts_and_float_casts_are_recorded():
    x0 = np.array([0.5, 1.5])
    assert_tensor_equal(sd.constant(x0).astype(np.int32), x0.astype(np.int32))
    x = sd.constant(x0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.reduce_sum(x.astype(np.float32) ** 2)
    assert_tensor_equal(tape.gradient(y, x), 2 * x0)  # back in the source's float64


def test_size_and_ndim_attributes():
    t = sd.constant(M)
    assert (t.size, t.ndim) == (24, 2)


def test_format_specs_format_the_value_as_tensorflow_does():
    # TensorFlow formats a tensor's value with NumPy: f"{loss:.3f}" works on a scalar
    assert f"{sd.constant(1.23456):.3f}" == "1.235"
    assert f"{sd.Variable(2.5):6.2f}" == "  2.50"
    assert f"{sd.constant(3.0)}" == "3.0"
    with pytest.raises(TypeError):
        f"{sd.constant([1.0, 2.0]):.3f}"

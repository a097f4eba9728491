"""The Python and NumPy protocols a TensorFlow user meets on Tensors: Python lists beside
a Tensor in an operator (converted as TensorFlow converts them), ``format``, ``round``,
``np.trace``, ``np.asarray``, and every NumPy function that takes a sequence of arrays.

Each join is checked against NumPy on the same arrays (values and dtype) and its
gradient against central finite differences; the functions NumPy never hands to a
Tensor (``np.array([t1, t2])``, ``np.sum([t1, t2])``) must refuse a value a tape
follows rather than drop its gradient."""
import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad

RNG = np.random.default_rng(7)


def gradients(f, arrays):
    """The tape's gradients of ``sum(f(*xs) * weights)`` at ``arrays`` (float64), and the
    finite-difference ones; ``f`` must also run on ndarrays."""
    weights = RNG.normal(size=np.shape(f(*arrays)))
    xs = [sd.constant(a) for a in arrays]
    with sd.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
        loss = sd.reduce_sum(y * weights)
    taped = tape.gradient(loss, xs)

    def numeric(k):
        def at(v):
            args = list(arrays)
            args[k] = v
            return np.sum(f(*args) * weights)
        return numerical_grad(at, arrays[k])
    return [None if g is None else g.numpy() for g in taped], \
        [numeric(k) for k in range(len(arrays))]


def assert_gradients_match(f, arrays):
    taped, numeric = gradients(f, arrays)
    for k, (g, n) in enumerate(zip(taped, numeric)):
        assert g is not None, f"input {k} was not recorded"
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-9, err_msg=f"input {k}")


# --- a Python list beside a Tensor in an operator (TensorFlow's tutorial code) ------------

def test_the_tutorials_list_at_matmul_with_a_variable_differentiates():
    """TF's "Introduction to gradients" builds ``y = x @ w + b`` with ``x`` a nested list."""
    w = sd.Variable(RNG.normal(size=(3, 2)))
    b = sd.Variable(RNG.normal(size=2))
    x = [[1., 2., 3.]]
    with sd.GradientTape() as tape:
        y = x @ w + b
        loss = sd.reduce_mean(y ** 2)
    dw, db = tape.gradient(loss, [w, b])
    f = lambda w0, b0: np.mean((np.array(x) @ w0 + b0) ** 2)  # noqa: E731
    np.testing.assert_allclose(dw.numpy(), numerical_grad(lambda v: f(v, b.numpy()), w.numpy()),
                               rtol=1e-6)
    np.testing.assert_allclose(db.numpy(), numerical_grad(lambda v: f(w.numpy(), v), b.numpy()),
                               rtol=1e-6)


def test_a_python_list_takes_the_tensors_dtype_as_in_tensorflow():
    w = sd.Variable(sd.ones((3, 2)))  # float32
    assert ([[1., 2., 3.]] @ w).dtype == np.float32  # NumPy alone would give float64
    assert ([[1, 2, 3]] @ w).dtype == np.float32
    assert (w.T @ [1., 2., 3.]).dtype == np.float32
    t = sd.constant([0.1, 0.2])
    assert bool(np.all((t == [0.1, 0.2]).numpy()))  # compared in float32, as TF does
    assert (t + (1, 2)).dtype == np.float32
    # what NumPy does with a lone Python number where TF would refuse: float64; no wrap
    assert (sd.constant([1, 2]) * [0.5, 0.5]).dtype == np.float64
    big = sd.constant(np.int8([1])) + [1000]
    np.testing.assert_array_equal(big.numpy(), [1001])


@pytest.mark.parametrize("f", [
    lambda a, b: [a, 2.0 * a] * b,
    lambda a, b: b @ [[1.0, 2.0], [3.0, 4.0]] - (a, a),
    lambda a, b: [[0.5, 0.5]] / (b + 3.0) + [a, b[0]],
], ids=["list-of-tensors-times", "matmul-right-minus-tuple", "divide-list-of-mixed"])
def test_lists_in_operators_are_recorded(f):
    assert_gradients_match(lambda a, b: np.asarray(f(a, b)) if isinstance(a, np.ndarray)
                           else f(a, b), [RNG.normal(size=2), RNG.normal(size=(2, 2))])


# --- format, round, trace ------------------------------------------------------------------

def test_format_spec_formats_the_value_as_tensorflow_does():
    loss = sd.constant(0.123456)
    assert f"{loss:.3f}" == "0.123" == f"{float(loss):.3f}"
    assert f"{sd.Variable(2.5):6.2f}" == "  2.50"
    assert f"{sd.constant([1.0, 2.0])}" == str(np.float32([1.0, 2.0]))
    with pytest.raises(TypeError):  # NumPy's (and TF's) answer for an array with a spec
        f"{sd.constant([1.0, 2.0]):.3f}"


def test_round_is_pythons_for_a_scalar_and_numpys_with_digits():
    assert round(sd.constant(2.5)) == 2 and type(round(sd.constant(3.7))) is int
    assert round(sd.constant(-0.5)) == round(-0.5)
    x = sd.constant([1.234, 5.678])
    np.testing.assert_array_equal(round(x, 1).numpy(), np.round(np.float32([1.234, 5.678]), 1))
    np.testing.assert_array_equal(round(x).numpy(), [1.0, 6.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = round(x, 1)
    assert tape.gradient(y, x) is None  # as tf.round: no gradient


@pytest.mark.parametrize("f", [
    lambda m: np.trace(m), lambda m: m.trace(), lambda m: m.trace(1),
    lambda m: np.trace(m, offset=-1), lambda m: sd.linalg.trace(m),
], ids=["np.trace", "method", "method-offset", "np-offset", "sd.linalg"])
def test_trace(f):
    m = RNG.normal(size=(3, 3))
    if f.__code__.co_names[-1:] != ("linalg",):
        np.testing.assert_allclose(f(sd.constant(m)).numpy(), f(m))
    assert_gradients_match(lambda m: f(sd.constant(m)).numpy() if isinstance(m, np.ndarray)
                           else f(m), [m])


# --- np.asarray and the conversions NumPy does itself ----------------------------------------

def test_asarray_is_an_ndarray_except_of_a_value_a_tape_follows():
    x, other = sd.constant([1.0, 2.0]), sd.constant([3.0])
    assert type(np.asarray(x)) is np.ndarray  # outside a tape: TensorFlow's behaviour
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        np.testing.assert_array_equal(np.asarray(other), [3.0])  # not followed: fine
        np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])  # the explicit way out
        with tape.stop_recording():
            np.testing.assert_array_equal(np.asarray(y), [2.0, 4.0])
        for followed in (x, y):
            with pytest.raises(TypeError, match="np.stack"):
                np.asarray(followed)
    np.testing.assert_array_equal(np.asarray(y), [2.0, 4.0])


def test_a_trainable_variable_read_by_numpy_under_a_tape_is_refused():
    v = sd.Variable([1.0, 2.0])
    with sd.GradientTape():
        with pytest.raises(TypeError, match="no gradient flows"):
            np.asarray(v)
    with sd.GradientTape(watch_accessed_variables=False):
        np.testing.assert_array_equal(np.asarray(v), [1.0, 2.0])


@pytest.mark.parametrize("convert", [
    np.array, np.asarray, np.asanyarray, np.sum, np.mean, np.prod, np.max, np.min,
    lambda xs: np.linalg.norm(xs), lambda xs: np.cumsum(xs), lambda xs: np.sort(xs),
], ids=["array", "asarray", "asanyarray", "sum", "mean", "prod", "max", "min", "norm",
        "cumsum", "sort"])
def test_a_list_of_tensors_numpy_converts_itself(convert):
    """NumPy never hands these calls to a Tensor: it converts the list itself, which
    would drop the gradient, so a followed Tensor in it is refused; others convert."""
    a, b = sd.constant([1.0, 2.0]), sd.constant([3.0, 5.0])
    expected = convert([a.numpy(), b.numpy()])
    np.testing.assert_array_equal(np.asarray(convert([a, b])), expected)
    with sd.GradientTape() as tape:
        tape.watch(a)
        np.testing.assert_array_equal(np.asarray(convert([sd.constant(b.numpy()), b])),
                                      convert([b.numpy(), b.numpy()]))
        with pytest.raises(TypeError, match="np.stack"):
            convert([a, b])
        with pytest.raises(TypeError, match="np.stack"):
            convert([[1.0, 2.0], a * 2.0])
    # and the recorded way says the same
    assert_gradients_match(lambda a, b: np.sum(np.stack([a, b]) ** 2), [a.numpy(), b.numpy()])


def test_constant_of_a_list_of_followed_tensors_is_refused_convert_to_tensor_records_it():
    a = sd.constant([1.0, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(a)
        with pytest.raises(TypeError, match="no gradient flows"):
            sd.constant([a, a])
        y = sd.reduce_sum(sd.convert_to_tensor([a, 3.0 * a]))
    np.testing.assert_array_equal(tape.gradient(y, a).numpy(), [4.0, 4.0])


def test_divmod_is_floor_division_and_remainder():
    x = sd.constant([7.5, -7.5])
    for q, r in (divmod(x, 2.0), divmod(x, [2.0, 2.0])):
        np.testing.assert_array_equal(q.numpy(), np.floor_divide(x.numpy(), 2.0))
        np.testing.assert_array_equal(r.numpy(), np.remainder(x.numpy(), 2.0))
    q, r = divmod(10.0, x)
    np.testing.assert_array_equal(r.numpy(), np.remainder(10.0, x.numpy()))
    assert_gradients_match(lambda x: divmod(x, 2.0)[1], [np.array([0.7, 3.1, -2.3])])


def test_constant_of_a_tensor_is_the_tensor_as_in_tensorflow():
    x = sd.constant([1.0, 2.0])
    assert sd.constant(x) is x
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.reduce_sum(sd.constant(x) ** 2)
        with pytest.raises(TypeError, match="no gradient flows"):
            sd.constant(x, dtype=sd.float64)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0])


# --- the NumPy functions that take a sequence of arrays --------------------------------------

CONSTANT = np.array([[0.5, -1.0, 2.0]])

# name -> (the function, on Tensors and on ndarrays alike; the shapes of its inputs)
JOINS = {
    "concatenate": (lambda a, b: np.concatenate([a, b]), [(2, 3), (1, 3)]),
    "concatenate-axis-1": (lambda a, b: np.concatenate((a, b), axis=1), [(2, 3), (2, 1)]),
    "concatenate-axis-None": (lambda a, b: np.concatenate([a, b], axis=None), [(2, 3), (4,)]),
    "concatenate-constant": (lambda a, b: np.concatenate([a, CONSTANT, b], 0), [(2, 3), (1, 3)]),
    "concatenate-list": (lambda a, b: np.concatenate([a, [[1.0, 2.0, 3.0]], b]),
                         [(2, 3), (1, 3)]),
    "concatenate-list-of-tensors": (lambda a, b: np.concatenate([a, [b[0], 2.0 * b[1]]]),
                                    [(3,), (2,)]),
    "stack": (lambda a, b: np.stack([a, b]), [(2, 3), (2, 3)]),
    "stack-axis-last": (lambda a, b: np.stack((a, b, a), axis=-1), [(2, 3), (2, 3)]),
    "stack-0d": (lambda a, b: np.stack([a, b]), [(), ()]),
    "hstack-1d": (lambda a, b: np.hstack([a, b]), [(3,), (2,)]),
    "hstack-2d": (lambda a, b: np.hstack((a, b)), [(2, 3), (2, 1)]),
    "hstack-0d": (lambda a, b: np.hstack([a, b, a]), [(), ()]),
    "hstack-0d-1d": (lambda a, b: np.hstack([a, b]), [(), (3,)]),
    "vstack-1d": (lambda a, b: np.vstack([a, b]), [(3,), (3,)]),
    "vstack-0d": (lambda a, b: np.vstack([a, b]), [(), ()]),
    "vstack-2d-1d": (lambda a, b: np.vstack([a, b]), [(2, 3), (3,)]),
    "dstack": (lambda a, b: np.dstack([a, b]), [(2, 3), (2, 3)]),
    "dstack-1d": (lambda a, b: np.dstack([a, b]), [(3,), (3,)]),
    "dstack-0d": (lambda a, b: np.dstack([a, b]), [(), ()]),
    "column_stack-1d": (lambda a, b: np.column_stack([a, b]), [(3,), (3,)]),
    "column_stack-2d-1d": (lambda a, b: np.column_stack((a, b, CONSTANT[0])), [(3, 2), (3,)]),
    "column_stack-0d": (lambda a, b: np.column_stack([a, b]), [(), ()]),
    "block-2x2": (lambda a, b: np.block([[a, b], [b.T, a[:1, :1]]]), [(2, 2), (2, 1)]),
    "block-1d": (lambda a, b: np.block([a, b]), [(2,), (3,)]),
    "block-deeper-than-rank": (lambda a, b: np.block([[a], [b]]), [(2,), (2,)]),
    "block-0d": (lambda a, b: np.block([[a, b, 1.0]]), [(), ()]),
    "block-ranks": (lambda a, b: np.block([[a, b]]), [(2, 2, 1), (2, 2, 3)]),
    "block-one-array": (lambda a, b: np.block(a) * b, [(2, 3), ()]),
    "block-constant": (lambda a, b: np.block([[a, np.ones((2, 1))], [b, 2.0]]), [(2, 2), (1, 2)]),
    "multi_dot": (lambda a, b: np.linalg.multi_dot([a, b, a]), [(2, 3), (3, 2)]),
}


def _arrays(shapes):
    return [RNG.normal(size=shape) for shape in shapes]


@pytest.mark.parametrize("name", JOINS)
def test_a_join_equals_numpys_and_is_recorded(name):
    f, shapes = JOINS[name]
    arrays = _arrays(shapes)
    result = f(*[sd.constant(a) for a in arrays])
    expected = f(*arrays)
    assert isinstance(result, sd.Tensor)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_array_equal(result.numpy(), expected)
    assert_gradients_match(f, arrays)


@pytest.mark.parametrize("name", JOINS)
def test_a_join_of_variables_records_their_reads(name):
    f, shapes = JOINS[name]
    arrays = _arrays(shapes)
    variables = [sd.Variable(a) for a in arrays]
    with sd.GradientTape() as tape:
        y = sd.reduce_sum(f(*variables) ** 2)
    grads = tape.gradient(y, variables)
    for v, g in zip(variables, grads):
        assert g is not None and g.shape == v.shape


def test_a_join_keeps_numpys_dtype_argument_and_refuses_out():
    a, b = sd.constant([1.0, 2.0]), sd.constant([3.0])
    assert np.concatenate([a, b], dtype=np.float64).dtype == np.float64
    assert np.hstack([a, b], dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="Cannot cast"):
        np.concatenate([a, b], dtype=np.int32)
    with pytest.raises(TypeError, match="out="):
        np.concatenate([a, b], out=np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="out="):  # out given by position
        np.concatenate([a, b], 0, np.zeros(3, np.float32))


@pytest.mark.parametrize("call, error", [
    (lambda a: np.block([(a, a)]), TypeError),
    (lambda a: np.block([[a], a]), ValueError),
    (lambda a: np.block([[a], []]), ValueError),
    (lambda a: np.hstack([a, np.ones((2, 2))]), ValueError),
    (lambda a: np.concatenate([a, a], axis=0, bad=1), TypeError),
], ids=["block-tuple", "block-depths", "block-empty", "hstack-shapes", "unknown-keyword"])
def test_a_join_refuses_what_numpy_refuses(call, error):
    a = sd.constant([1.0, 2.0])
    with pytest.raises(error):
        call(a)
    with pytest.raises(error):
        call(a.numpy())


def test_joins_without_a_tape_return_tensors():
    a, b = sd.constant([1.0, 2.0]), sd.constant([3.0, 4.0])
    for join in (np.column_stack, np.dstack, np.hstack, np.vstack, np.block, np.stack):
        out = join([a, b])
        assert isinstance(out, sd.Tensor)
        np.testing.assert_array_equal(out.numpy(), join([a.numpy(), b.numpy()]))


# --- a list argument of any other NumPy function ---------------------------------------------

@pytest.mark.parametrize("f", [
    lambda a, b: np.matmul([[1.0, 2.0]], b) * a,
    lambda a, b: np.add([a, a], b),
    lambda a, b: np.multiply(b, [[0.5, 1.5], a]),
    lambda a, b: np.where([True, False], [2.0, 3.0], a) * b,
    lambda a, b: np.einsum("i,ij->j", [1.0, -1.0], b) + a,
], ids=["matmul-list", "add-list-of-tensors", "multiply-nested", "where-list", "einsum-list"])
def test_a_list_where_a_rule_differentiates_is_an_array_or_a_recorded_stack(f):
    assert_gradients_match(f, [RNG.normal(size=2), RNG.normal(size=(2, 2))])


def test_a_followed_tensor_in_a_list_no_rule_differentiates_is_refused():
    a, b = sd.constant([1.0, 2.0]), sd.constant([3.0, 4.0])
    np.testing.assert_array_equal(np.lexsort((a, -b)).numpy(), [1, 0])
    with sd.GradientTape() as tape:
        tape.watch(a)
        with pytest.raises(LookupError, match="numpy.lexsort"):
            np.lexsort((a, -b))
        # a list that holds only values no tape follows is a parameter like any other
        np.testing.assert_array_equal(np.pad(a, [(1, 0)]).numpy(), [0.0, 1.0, 2.0])


def _cube(v):
    return v ** 3


@pytest.mark.parametrize("make, error, match", [
    (lambda: np.frompyfunc(_cube, 1, 1), LookupError, "no gradient for"),  # a ufunc
    (lambda: np.vectorize(_cube, otypes=[object]), TypeError, "no gradient flows")])
def test_numbers_a_python_function_made_of_a_watched_tensor_are_refused(make, error, match):
    # an object array of them: no rule follows them (the ufunc's gradient came back None)
    x = sd.constant([0.5, 2.0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(error, match=match):
            make()(x)
    np.testing.assert_array_equal(make()(sd.constant([0.5, 2.0])), [0.125, 8.0])


@pytest.mark.parametrize("reduce", [np.max, np.min, np.prod])
def test_the_tape_refuses_a_keyword_no_rule_models(reduce):
    # np.sum(x, where=mask) once got the gradient of np.sum(x): where= was swallowed
    # (np.sum's and np.mean's where= are modelled now, test_compiler_keywords.py)
    values = np.array([0.5, 1.0, 1.5])
    x = sd.Variable(values)
    initial = {"initial": 1.0} if reduce in (np.max, np.min) else {}  # where= needs one
    with pytest.raises(LookupError, match="with where="):
        with sd.GradientTape():
            reduce(x, where=values > 0.7, **initial)
    with sd.GradientTape() as tape:  # unwatched: no gradient asked, nothing refused
        y = reduce(sd.constant(values), where=values > 0.7, **initial)
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("given", ["append", "prepend", "both"])
def test_diff_with_an_end_given_by_keyword_differentiates_each_input(given):
    # append= once went to prepend's place: np._NoValue, filled in for the skipped
    # prepend, was taken for a value
    weights = RNG.normal(size=6)
    ends = {"append": ["append"], "prepend": ["prepend"], "both": ["prepend", "append"]}[given]

    def f(v, *end):
        out = np.diff(v, **dict(zip(ends, end)))
        return np.sum(out * weights[:out.shape[0]])
    assert_gradients_match(f, [RNG.normal(size=4)] + [RNG.normal(size=1) for _ in ends])


WRITERS = {
    "copyto": lambda buf, t: np.copyto(buf, t),
    "put": lambda buf, t: np.put(buf, [0, 2, 1], t),
    "putmask": lambda buf, t: np.putmask(buf, np.array([True, False, True]), t),
    "place": lambda buf, t: np.place(buf, np.array([True, False, True]), t),
    "put_along_axis": lambda buf, t: np.put_along_axis(buf, np.array([2, 0, 1]), t, 0),
}


@pytest.mark.parametrize("write", WRITERS.values(), ids=WRITERS)
def test_numpys_writers_write_an_untracked_tensor_and_refuse_a_followed_one(write):
    # under a tape they once wrote into the copy the tape keeps: the array unchanged
    values = np.array([0.5, 1.2, -0.7])
    expected = np.zeros(3)
    write(expected, values)
    buf = np.zeros(3)
    with sd.GradientTape():
        write(buf, sd.constant(values))  # no tape follows it: written as its values
    np.testing.assert_array_equal(buf, expected)
    x = sd.Variable(values)
    with sd.GradientTape():
        with pytest.raises(TypeError, match="carries no gradient"):
            write(np.zeros(3), x)
    with pytest.raises(TypeError, match="immutable"):
        write(sd.constant(np.zeros(3)), values)


UFUNC_METHODS = {
    "multiply.outer": lambda v: np.multiply.outer(v, v),
    "maximum.accumulate": np.maximum.accumulate,
    "logaddexp.reduce": np.logaddexp.reduce,
    "add.reduceat": lambda v: np.add.reduceat(v, [0, 2]),
}


@pytest.mark.parametrize("method", UFUNC_METHODS.values(), ids=UFUNC_METHODS)
def test_a_ufunc_method_without_a_rule_refuses_a_variable_not_yet_read(method):
    # a Variable given directly was not seen as watched: its gradient came back None
    v = sd.Variable(np.array([0.3, 1.2, 0.7]))
    with sd.GradientTape():
        with pytest.raises(LookupError, match="no gradient for numpy"):
            method(v)

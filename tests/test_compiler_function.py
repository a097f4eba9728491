"""``@sd.function``: outside a tape it computes the function's values; under a tape its
gradients equal the eager tape's (arguments, a global Variable, a closure Variable,
``self.kernel``), nested tapes included, and persistent tapes may ask again."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import finite_difference
from util import numerical_grad

RNG = np.random.default_rng(5)
X = RNG.uniform(0.5, 1.5, size=(3,))
Y = RNG.uniform(0.5, 1.5, size=(3,))
GLOBAL_W = sd.Variable(RNG.normal(size=(3,)), name="global_w")


def plain(x, y):
    s = np.sum(x * y)
    if s > 1.0:
        z = np.sin(x) * y
    else:
        z = x ** 3
    for _ in range(2):
        z = np.tanh(z) + x
    return np.sum(z * z)


compiled = sd.function(plain)


def reads_global(x):
    return np.sum(np.tanh(GLOBAL_W * x) * x)


def make_closure():
    w = sd.Variable(RNG.normal(size=(3,)), name="closure_w")

    def reads_closure(x):
        return np.sum(np.exp(w * 0.5) * x ** 2)
    return reads_closure, w


class Layer:
    def __init__(self):
        self.kernel = sd.Variable(RNG.normal(size=(2, 3)), name="kernel")
        self.bias = sd.Variable(np.zeros(2), name="bias", trainable=False)

    def __call__(self, x):
        return np.tanh(self.kernel @ x + self.bias)

    compiled_call = sd.function(__call__)


def writes_elements(x):
    out = np.zeros(2)
    out[0] = x[0] * x[1]
    out[1] = np.sin(x[2])
    return np.sum(out * out)


def gradients(fn, args, sources, **tape_options):
    """``fn(*args)`` under a tape watching every Tensor argument; its gradients."""
    with sd.GradientTape(**tape_options) as tape:
        for a in args:
            if isinstance(a, sd.Tensor):
                tape.watch(a)
        y = fn(*args)
    return y, tape.gradient(y, sources)


def assert_close(actual, expected):
    for a, e in zip(actual, expected):
        if e is None:
            assert a is None
        else:
            np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-9, atol=1e-12)


# --- outside a tape ---

@pytest.mark.parametrize("args", [(X, Y), (X * 0.1, Y)])
def test_outside_a_tape_computes_the_functions_value(args):
    assert compiled(*args) == pytest.approx(plain(*args), rel=1e-12)


def two_outputs(x):
    return np.sin(x), np.sum(x)


def test_outside_a_tape_tensors_in_tensors_out():
    y = compiled(sd.constant(X), Y)
    assert isinstance(y, sd.Tensor)
    assert float(y) == pytest.approx(plain(X, Y), rel=1e-12)
    a, b = sd.function(two_outputs)(X)
    np.testing.assert_allclose(a, np.sin(X))
    assert b == pytest.approx(np.sum(X))


def test_outside_a_tape_the_arguments_are_left_alone():
    x = X.copy()
    assert sd.function(writes_elements)(x) == pytest.approx(writes_elements(X.copy()))
    np.testing.assert_array_equal(x, X)


def writes_into_its_argument(x):
    x[0] = 0.0
    x[1] += 1.0
    return np.sum(np.sin(x) * x)


def d_writes_into_its_argument(x):
    """The gradient of the function above with respect to the x it was called with."""
    z = x.copy()
    z[0], z[1] = 0.0, z[1] + 1.0
    d = np.cos(z) * z + np.sin(z)
    d[0] = 0.0
    return d


def test_outside_a_tape_an_argument_the_function_writes_into_is_left_alone():
    x, t = X.copy(), sd.constant(X)
    expected = writes_into_its_argument(X.copy())
    compiled_writer = sd.function(writes_into_its_argument)
    assert compiled_writer(x) == pytest.approx(expected, rel=1e-12)
    assert float(compiled_writer(t)) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(t.numpy(), X)


@pytest.mark.parametrize("make", [sd.constant, sd.Variable], ids=["Tensor", "Variable"])
def test_under_a_tape_an_argument_the_function_writes_into_is_left_alone(make):
    x = make(X.copy())
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        before = x * x  # saves x's value on the tape
        y = sd.function(writes_into_its_argument)(x)
    np.testing.assert_array_equal(x.numpy(), X)
    np.testing.assert_allclose(tape.gradient(y, x), d_writes_into_its_argument(X), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(before, x), 2 * X, rtol=1e-12)
    expected = numerical_grad(lambda v: writes_into_its_argument(v.copy()), X)
    np.testing.assert_allclose(d_writes_into_its_argument(X), expected, rtol=1e-6)


def writes_with_out(x):
    np.sin(x, out=x)
    return np.sum(x * x)


def writes_with_ufunc_at(x):
    np.add.at(x, [0, 1], 2.0)
    return np.sum(x * x)


def writes_through_a_helper(x):
    add_one_at_zero(x)
    return np.sum(x * x)


def add_one_at_zero(v):
    np.add.at(v, [0], 1.0)  # ufunc.at writes through read-only views: NumPy ignores the flag


@pytest.mark.parametrize("fn", [writes_with_out, writes_with_ufunc_at, writes_through_a_helper])
def test_a_write_the_compiler_does_not_model_changes_a_copy_or_is_refused(fn):
    x = X.copy()
    expected = fn(X.copy())  # Python's value: computed after the write
    # run: the write goes to a copy of the argument (compiled code never writes into
    # the caller's arrays, which may be a Tensor's); for a gradient: refused
    np.testing.assert_allclose(sd.function(fn)(x), expected, rtol=1e-12)
    np.testing.assert_array_equal(x, X)
    with pytest.raises(sd.CompileError, match="in place"):
        sd.grad(fn)(x)
    np.testing.assert_array_equal(x, X)


# --- under a tape: the eager tape's gradients ---

@pytest.mark.parametrize("scale", [1.0, 0.1])
def test_gradients_of_arguments_equal_the_eager_tapes(scale):
    x, y = sd.constant(X * scale), sd.constant(Y)
    value, grads = gradients(compiled, (x, y), [x, y])
    eager_value, eager_grads = gradients(plain, (x, y), [x, y])
    assert float(value) == pytest.approx(float(eager_value), rel=1e-12)
    if eager_grads[1] is None:
        # y reaches the result only on the branch not taken: the eager tape never saw
        # it (None); a compiled function, like tf.function's cond, answers zeros
        np.testing.assert_array_equal(grads[1], np.zeros_like(Y))
        grads, eager_grads = grads[:1], eager_grads[:1]
    assert_close(grads, eager_grads)
    np.testing.assert_allclose(grads[0], finite_difference(plain, (X * scale, Y), 0),
                               rtol=1e-6)


def test_an_unwatched_argument_gets_the_gradient_the_eager_tape_gives():
    # As in TensorFlow: an argument never watched gets None, one watched after the
    # call (while the tape records) its gradient: the call is compiled again with it
    # active; an unrelated tensor gets None.
    x, y, unrelated = sd.constant(X), sd.constant(Y), sd.constant(Y)
    grads = {}
    for name, fn in (("compiled", compiled), ("eager", plain)):
        with sd.GradientTape(persistent=True) as tape:
            tape.watch(x)
            value = fn(x, y)
        grads[name] = tape.gradient(value, [x, y, unrelated])
        with tape:
            tape.watch(y)
        grads[name, "watched after"] = tape.gradient(value, [x, y, unrelated])
    assert grads["compiled"][1:] == grads["eager"][1:] == [None, None]
    assert grads["compiled", "watched after"][2] is None
    assert_close(grads["compiled"][:1], grads["eager"][:1])
    assert_close(grads["compiled", "watched after"][:2], grads["eager", "watched after"][:2])
    np.testing.assert_allclose(grads["compiled"][0], finite_difference(plain, (X, Y), 0),
                               rtol=1e-6)
    np.testing.assert_allclose(grads["compiled", "watched after"][1],
                               finite_difference(plain, (X, Y), 1), rtol=1e-6)


def _tanh_product(w, x):
    return np.sum(np.tanh(x * w))


def _tanh_product_of_a_leaf(w, data):
    return np.sum(np.tanh(data["x"][0] * w))


@pytest.mark.parametrize("f, pack", [(_tanh_product, lambda x: x),
                                     (_tanh_product_of_a_leaf, lambda x: {"x": [x]})],
                         ids=["array", "in a pytree"])
def test_an_array_written_after_the_call_does_not_change_the_gradient(f, pack):
    grads = []
    for g in (sd.function(f), f):
        w, x = sd.constant(Y), X.copy()
        with sd.GradientTape() as tape:
            tape.watch(w)
            y = g(w, pack(x))
        x[...] = 0.0  # after the call: the backward step reads what the call read
        grads.append(tape.gradient(y, w))
    np.testing.assert_allclose(grads[0], grads[1])
    np.testing.assert_allclose(grads[1], X * (1 - np.tanh(X * Y) ** 2))


def test_the_same_tensor_as_two_arguments():
    x = sd.constant(X)
    _, grads = gradients(compiled, (x, x), [x])
    _, eager_grads = gradients(plain, (x, x), [x])
    assert_close(grads, eager_grads)


def test_a_global_variable():
    x = sd.constant(X)
    _, grads = gradients(sd.function(reads_global), (x,), [x, GLOBAL_W])
    _, eager_grads = gradients(reads_global, (x,), [x, GLOBAL_W])
    assert grads[1] is not None
    assert_close(grads, eager_grads)


def test_a_closure_variable():
    reads_closure, w = make_closure()
    x = sd.constant(X)
    _, grads = gradients(sd.function(reads_closure), (x,), [x, w])
    _, eager_grads = gradients(reads_closure, (x,), [x, w])
    assert grads[1] is not None
    assert_close(grads, eager_grads)


def test_self_kernel_of_an_object():
    layer = Layer()
    x = sd.constant(X)
    loss = lambda call, x: sd.reduce_sum(call(x) ** 2)  # noqa: E731
    _, grads = gradients(lambda x: loss(layer.compiled_call, x), (x,),
                         [layer.kernel, layer.bias, x])
    _, eager_grads = gradients(lambda x: loss(layer, x), (x,), [layer.kernel, layer.bias, x])
    assert grads[0] is not None and grads[1] is None  # bias is not trainable: not watched
    assert_close(grads, eager_grads)


def test_an_unwatched_argument_next_to_a_watched_variable():
    layer = Layer()
    x = sd.constant(X)
    _, grads = gradients(lambda: layer.compiled_call(x), (), [layer.kernel, x])
    _, eager_grads = gradients(lambda: layer(x), (), [layer.kernel, x])
    assert_close(grads, eager_grads)


def test_variables_are_not_watched_when_the_tape_says_so():
    x = sd.constant(X)
    f = sd.function(reads_global)
    with sd.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = f(x)
    dx, dw = tape.gradient(y, [x, GLOBAL_W])
    assert dw is None
    np.testing.assert_allclose(dx, finite_difference(reads_global, (X,), 0), rtol=1e-6)


def test_the_compiled_adjoint_differentiates_what_the_tape_cannot_follow():
    # writes into an ndarray lose track of Tensors on the eager tape; the compiled
    # function is one tape entry whose adjoint handles them
    x = sd.constant(X)
    _, (dx,) = gradients(sd.function(writes_elements), (x,), [x])
    np.testing.assert_allclose(dx, finite_difference(writes_elements, (X,), 0), rtol=1e-6)


def test_a_compiled_function_among_eager_operations():
    x = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        h = sd.sin(x) * 2.0
        y = compiled(h, x) * sd.reduce_sum(h)
    (dx,) = tape.gradient(y, [x])
    expected = numerical_grad(lambda v: plain(np.sin(v) * 2.0, v) * np.sum(np.sin(v) * 2.0), X)
    np.testing.assert_allclose(dx, expected, rtol=1e-6)


# --- nested and persistent tapes ---

def second_derivative(fn, x0):
    x = sd.constant(x0)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = fn(x, x)
        dx = inner.gradient(y, x)
    return dx, outer.gradient(dx, x)


def test_nested_tapes_give_the_second_derivative():
    dx, ddx = second_derivative(compiled, X)
    eager_dx, eager_ddx = second_derivative(plain, X)
    assert_close([dx, ddx], [eager_dx, eager_ddx])
    first = lambda v: numerical_grad(lambda u: plain(u, u), v)  # noqa: E731
    np.testing.assert_allclose(dx, first(X), rtol=1e-6)
    np.testing.assert_allclose(ddx, numerical_grad(lambda v: np.sum(first(v)), X, eps=1e-4),
                               rtol=1e-4)


def test_persistent_tape_asks_twice():
    x, y = sd.constant(X), sd.constant(Y)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        value = compiled(x, y)
        other = compiled(y, x) * 2.0
    first = tape.gradient(value, [x, y])
    again = tape.gradient(value, [x, y])
    swapped = tape.gradient(other, [x, y])
    _, eager = gradients(plain, (x, y), [x, y])
    _, eager_swapped = gradients(lambda a, b: plain(b, a) * 2.0, (x, y), [x, y])
    assert_close(first, eager)
    assert_close(again, eager)
    assert_close(swapped, eager_swapped)
    del tape


def test_jacobian_through_a_compiled_function():
    layer = Layer()
    x = sd.constant(X)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = layer.compiled_call(x)
        eager_y = layer(x)
    np.testing.assert_allclose(tape.jacobian(y, x), tape.jacobian(eager_y, x), rtol=1e-9)

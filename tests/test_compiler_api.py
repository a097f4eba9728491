"""The compiler's functional API: sd.grad's wrt forms, shapes and dtypes, inputs left
alone, the scalar-output error; sd.value_and_grad, sd.vjp and sd.jacobian against
finite differences."""
import functools

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad, finite_difference
from util import numerical_jacobian

RNG = np.random.default_rng(4)
W = RNG.normal(size=(2, 3))
X = RNG.normal(size=(3,))


def loss(W, x, scale):
    h = np.tanh(W @ x)
    return np.sum(h ** 2) * scale


def layer(W, x):
    return np.tanh(W @ x)


# --- wrt ---

@pytest.mark.parametrize("wrt, positions", [
    (0, [0]), (1, [1]), (-2, [1]), ("W", [0]), ("x", [1]), ("scale", [2]),
    ((0, 1), [0, 1]), (("x", "W"), [1, 0]), ((1, "scale", 0), [1, 2, 0]),
])
def test_wrt_forms(wrt, positions):
    args = (W, X, 1.5)
    grads = sd.grad(loss, wrt)(*args)
    many = isinstance(wrt, tuple)
    assert isinstance(grads, tuple) == many
    for g, i in zip(grads if many else (grads,), positions):
        np.testing.assert_allclose(g, finite_difference(loss, args, i), rtol=1e-6, atol=1e-8)


def test_wrt_default_is_the_first_argument():
    np.testing.assert_allclose(sd.grad(loss)(W, X, 1.0), sd.grad(loss, 0)(W, X, 1.0))


@pytest.mark.parametrize("wrt", [3, -4, "y", (0, "nope")])
def test_wrt_not_a_parameter(wrt):
    with pytest.raises(ValueError, match="parameter"):
        sd.grad(loss, wrt)(W, X, 1.0)


# --- shapes, dtypes, inputs ---

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_has_the_arguments_dtype_and_shape(dtype):
    w, x = W.astype(dtype), X.astype(dtype)
    dw, dx = sd.grad(loss, (0, 1))(w, x, 2.0)
    assert (dw.dtype, dw.shape) == (np.dtype(dtype), w.shape)
    assert (dx.dtype, dx.shape) == (np.dtype(dtype), x.shape)
    np.testing.assert_allclose(dw, finite_difference(loss, (W, X, 2.0), 0), rtol=1e-4,
                               atol=1e-5)


def broadcast_into_scalar(a, x):
    return np.sum(a * x)


def test_gradient_of_a_broadcast_argument_has_its_shape():
    check_grad(broadcast_into_scalar, (np.array(0.5), X), (0, 1))
    check_grad(broadcast_into_scalar, (np.ones((1, 3)), np.ones((2, 3))), (0, 1))
    check_grad(broadcast_into_scalar, (0.5, X), (0, 1))


def writes_its_input(x):
    x[0] = x[0] * 3.0
    x *= 2.0
    return np.sum(x * x)


def test_inputs_are_never_modified():
    x = X.copy()
    g = sd.grad(writes_its_input)(x)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_allclose(g, finite_difference(writes_its_input, (X,), 0), rtol=1e-6)
    y, _ = sd.value_and_grad(writes_its_input)(x)
    np.testing.assert_array_equal(x, X)
    assert y == pytest.approx(writes_its_input(X.copy()))


def test_tensors_and_variables_are_accepted():
    g = sd.grad(loss, (0, 1))(sd.constant(W), sd.Variable(X), 1.0)
    np.testing.assert_allclose(g[1], finite_difference(loss, (W, X, 1.0), 1), rtol=1e-6)


# --- non-scalar output ---

def test_non_scalar_output_is_a_clear_error():
    with pytest.raises(ValueError, match="scalar") as info:
        sd.grad(layer)(W, X)
    assert "vjp" in str(info.value) and "jacobian" in str(info.value)
    assert "(2,)" in str(info.value)


# --- value_and_grad, vjp, jacobian ---

def test_value_and_grad():
    value, (dw, dx) = sd.value_and_grad(loss, (0, 1))(W, X, 0.5)
    assert value == pytest.approx(loss(W, X, 0.5))
    np.testing.assert_allclose(dw, finite_difference(loss, (W, X, 0.5), 0), rtol=1e-6)
    np.testing.assert_allclose(dx, finite_difference(loss, (W, X, 0.5), 1), rtol=1e-6)


def test_vjp_against_finite_differences():
    y, pullback = sd.vjp(layer, W, X)
    np.testing.assert_allclose(y, layer(W, X))
    dy = RNG.normal(size=y.shape)
    dw, dx = pullback(dy)
    jw = numerical_jacobian(lambda w: layer(w, X), W)
    jx = numerical_jacobian(lambda x: layer(W, x), X)
    np.testing.assert_allclose(dw, np.tensordot(dy, jw, axes=1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, np.tensordot(dy, jx, axes=1), rtol=1e-6, atol=1e-8)
    # the pullback may be used again, with another cotangent
    np.testing.assert_allclose(pullback(2 * dy)[1], 2 * dx, rtol=1e-12)


def count_rows(m, n):
    return m[:n] * 2.0


def test_vjp_pullback_reads_what_the_call_read():
    def f(w, x):
        return np.tanh(x * w)

    w, x = np.array([0.5, 0.7]), np.array([1.0, 2.0])
    _, pullback = sd.vjp(f, w, x)
    x[...] = 0.0  # after the call, before the pullback
    dw = pullback(np.ones(2))[0]
    np.testing.assert_allclose(dw, [1.0, 2.0] * (1 - np.tanh([0.5, 1.4]) ** 2))


def scaled_by(x, n, label, flag):
    return x * n if flag else x


def test_vjp_of_integer_arguments_is_their_derivative_as_in_grad():
    y, pullback = sd.vjp(count_rows, W, 1)
    dm, dn = pullback(np.ones_like(y))
    assert dn == 0.0  # a slice bound: the function is flat in it
    np.testing.assert_allclose(dm, np.array([[2.0] * 3, [0.0] * 3]))
    dy = np.array([1.0, -2.0, 0.5])
    dx, dn, dlabel, dflag = sd.vjp(scaled_by, X, 3, "three", True)[1](dy)
    assert dn == pytest.approx(np.sum(dy * X)) == sd.grad(
        lambda_free_scaled, 1)(X, 3, dy)
    assert dlabel is None and dflag is None  # a string and a bool have no adjoint
    np.testing.assert_allclose(dx, 3 * dy)


def lambda_free_scaled(x, n, dy):
    return np.sum(scaled_by(x, n, "three", True) * dy)


def test_arguments_by_keyword_bind_as_python_binds_them():
    positional = sd.value_and_grad(loss, ("W", "scale"))(W, X, 2.0)
    by_keyword = sd.value_and_grad(loss, ("W", "scale"))(W, scale=2.0, x=X)
    np.testing.assert_allclose(by_keyword[0], positional[0])
    for a, b in zip(by_keyword[1], positional[1]):
        np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(sd.grad(loss)(x=X, W=W, scale=2.0), positional[1][0])
    np.testing.assert_allclose(sd.jacobian(layer, "x")(W, x=X),
                               sd.jacobian(layer, "x")(W, X))
    with pytest.raises(TypeError, match="unexpected keyword"):
        sd.grad(loss)(W, X, 2.0, bias=1.0)
    with pytest.raises(TypeError, match="multiple values"):
        sd.grad(loss)(W, X, 2.0, W=W)


def test_a_partial_is_differentiated_through_the_function_it_wraps():
    """As JAX users write ``grad(partial(loss, x=X))``: the bound arguments are
    constants, ``wrt`` names the partial's parameters, a call's keywords win."""
    by_keyword = functools.partial(loss, x=X)
    np.testing.assert_allclose(sd.grad(by_keyword)(W, scale=1.5),
                               finite_difference(loss, (W, X, 1.5), 0), rtol=1e-6)
    by_position = functools.partial(loss, W)
    dx, dscale = sd.grad(by_position, (0, "scale"))(X, 2.0)
    np.testing.assert_allclose(dx, finite_difference(loss, (W, X, 2.0), 1), rtol=1e-6)
    assert dscale == pytest.approx(finite_difference(loss, (W, X, 2.0), 2), rel=1e-6)
    value, dw = sd.value_and_grad(functools.partial(by_keyword, scale=0.5))(W)
    assert value == pytest.approx(loss(W, X, 0.5))
    np.testing.assert_allclose(dw, finite_difference(loss, (W, X, 0.5), 0), rtol=1e-6)
    np.testing.assert_allclose(sd.jacobian(functools.partial(layer, W))(X),
                               sd.jacobian(layer, 1)(W, X))
    y, pullback = sd.vjp(functools.partial(layer, x=X), W)
    dy = RNG.normal(size=y.shape)
    (dw,) = pullback(dy)
    np.testing.assert_allclose(dw, sd.vjp(layer, W, X)[1](dy)[0])
    with pytest.raises(ValueError, match="parameter"):
        sd.grad(by_position, "W")


def test_vjp_cotangent_shape_is_checked():
    _, pullback = sd.vjp(layer, W, X)
    with pytest.raises(ValueError, match="shape"):
        pullback(np.ones(3))


def test_jacobian_against_finite_differences():
    jw, jx = sd.jacobian(layer, (0, 1))(W, X)
    assert jw.shape == (2, 2, 3) and jx.shape == (2, 3)
    np.testing.assert_allclose(jw, numerical_jacobian(lambda w: layer(w, X), W), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(jx, numerical_jacobian(lambda x: layer(W, x), X), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(sd.jacobian(layer, "x")(W, X), jx)


def matrix_valued(x):
    return np.outer(x, np.sin(x))


def test_jacobian_of_a_matrix_output():
    j = sd.jacobian(matrix_valued)(X)
    assert j.shape == (3, 3, 3)
    np.testing.assert_allclose(j, numerical_jacobian(matrix_valued, X), rtol=1e-6, atol=1e-8)


def test_verbose_prints_the_adjoint_source(capsys):
    sd.grad(loss, verbose=True)
    printed = capsys.readouterr().out
    assert printed.strip() == sd.adjoint_source(loss).strip()
    assert "def loss_backward" in printed


def running_products(x):
    out = x * 1.0
    for i in range(1, 4):
        s = np.sum(out * out)  # reads the whole array, which the loop then overwrites
        out[i] = s * x[i]
    return out


def test_pullback_replays_and_leaves_the_value_alone():
    # the backward pass pops stacks and restores overwritten elements: a second
    # pullback must see the same tape, and the returned value must not change
    x = RNG.uniform(0.2, 0.5, size=4)
    y, pullback = sd.vjp(running_products, x)
    value = y.copy()
    first = pullback(np.ones(4))[0]
    np.testing.assert_array_equal(y, value)
    np.testing.assert_allclose(first, np.ones(4) @ numerical_jacobian(running_products, x),
                               rtol=1e-6)
    np.testing.assert_allclose(pullback(np.ones(4))[0], first, rtol=1e-12)


def test_jacobian_of_a_loop():
    x = RNG.uniform(0.2, 0.5, size=4)
    np.testing.assert_allclose(sd.jacobian(running_products)(x),
                               numerical_jacobian(running_products, x), rtol=1e-6, atol=1e-9)


def total(x):
    return np.sum(x)


def test_gradients_are_arrays_the_caller_may_update():
    # np.sum's adjoint is spread as a read-only zero-strided view inside the
    # backward pass; what the caller gets is an ordinary array of its own
    g = sd.grad(total)(X)
    g *= 2.0
    np.testing.assert_array_equal(g, np.full(3, 2.0))
    np.testing.assert_array_equal(sd.grad(total)(X), np.ones(3))
    _, pullback = sd.vjp(total, X)
    (dx,) = pullback(np.float64(1.0))
    dx += 1.0
    np.testing.assert_array_equal(pullback(np.float64(1.0))[0], np.ones(3))


def cube(x):
    return x * x * x


def test_a_numpy_scalar_argument_gets_a_gradient_of_its_type():
    g = sd.grad(cube)(np.float32(0.5))
    assert type(g) is np.float32 and g == np.float32(0.75)
    assert type(sd.grad(cube)(0.5)) is float


# --- no adjoint work for values the inputs asked for do not reach ---

def data_reassigned(w, x):
    x = np.tanh(x)
    return np.sum(w * x)


def data_then_mixed(w, x):
    x = np.tanh(x) * w  # the new x carries w's gradient; the x it read does not
    return np.sum(w * x)


def data_mixed_in_a_branch(w, x):
    x = np.tanh(x)
    if np.sum(w) > 0:
        x = x * w
    return np.sum(x)


def data_updated(w, x):
    x += w
    return np.sum(x * x)


def data_written_into(w, x):
    x = x * 2.0
    x[0] = w[0]
    return np.sum(x * w)


def scaled_sines(a, b):
    return np.sin(a) * b


def data_given_to_a_callee_then_mixed(w, x):
    h = scaled_sines(x, w)
    x = x * w
    return np.sum(h) + np.sum(x)


def _assigned_in(source, line):
    """The names the backward pass assigns in the adjoint block of source ``line``."""
    names, inside = set(), False
    for text in source.split("_backward(")[1].splitlines():
        text = text.strip()
        if text.startswith("# line"):
            inside = text.split(": ", 1)[1].startswith(line)
        elif inside and "=" in text and not text.startswith("return"):
            names.add(text.split("=")[0].strip().rstrip("+-").strip())
    return names


@pytest.mark.parametrize("fn, line, eager", [
    (data_reassigned, "x = np.tanh(x)", True),
    (data_then_mixed, "x = np.tanh(x) * w", True),
    (data_mixed_in_a_branch, "x = x * w", True),
    (data_updated, "x += w", False),        # writes into x: the tape cannot follow
    (data_written_into, "x = x * 2.0", False),
    (data_given_to_a_callee_then_mixed, "h = scaled_sines(x, w)", True),
], ids=lambda v: getattr(v, "__name__", ""))
def test_no_adjoint_for_a_value_the_inputs_asked_for_do_not_reach(fn, line, eager):
    source = sd.adjoint_source(fn, "w")
    assert "dx" not in _assigned_in(source, line), source
    assert "np.zeros_like(x)" not in source and "d_scaled_sines" not in source
    args = (X.copy(), X * 0.5 + 0.1)
    check_grad(fn, args, "w", eager=eager)
    check_grad(fn, args, ("w", "x"), eager=eager)  # x asked for too: all of its adjoint


def test_a_function_under_a_tape_watching_some_inputs_computes_only_theirs():
    compiled = sd.function(data_then_mixed)
    w, x = sd.Variable(X.copy()), sd.constant(X * 0.5 + 0.1)
    with sd.GradientTape() as tape:
        y = compiled(w, x)
    dw = tape.gradient(y, w)
    np.testing.assert_allclose(dw, finite_difference(data_then_mixed, (X, X * 0.5 + 0.1), 0),
                               rtol=1e-6)
    # the unit for w active, x not, both vectors (key: active, numbers, lifted, ranks,
    # functions, batched)
    (unit,) = [u for key, u in sd.compiler.cache.CACHE.units[data_then_mixed].items()
               if key[0] == (True, False) and key[3] == (1, 1) and not key[5]]
    assert "1 - x" not in unit.source  # np.tanh's rule: the adjoint of the x it read

"""Every GradientTape example of the seed documents (/work/shared/seeds/) run with
``import srcdiff as tf``, asserting what the seed shows.

One test per notebook cell or docstring example.  Where a seed was produced by
an older TensorFlow than 2.21, the comment says what 2.21 (the reference) does.
"""
import inspect
import logging
import re

import numpy as np
import pytest

import srcdiff as tf

PERSISTENT_WARNING = (
    "Calling GradientTape.gradient on a persistent tape inside its context is "
    "significantly less efficient than calling it outside the context (it causes the "
    "gradient ops to be recorded on the tape, leading to increased CPU and memory usage). "
    "Only call GradientTape.gradient inside the context if you actually want to trace the "
    "gradient in order to compute higher order derivatives.")

# The seed printed TF 2.0's message, which lacks a space ("used tocompute"); API.md
# fixes the message to TF 2.21's.
NON_PERSISTENT_ERROR = ("A non-persistent GradientTape can only be used to compute one set "
                        "of gradients (or jacobians)")


def tf_repr(text):
    """A repr printed by TensorFlow, as srcdiff prints it (no op ids, srcdiff's name)."""
    return re.sub(r"tf\.Tensor: (id=\d+, )?", "srcdiff.Tensor: ", text)


def tf_str(text):
    return text.replace("tf.Tensor(", "srcdiff.Tensor(")


def assert_tensor(t, expected, dtype=np.float32):
    assert isinstance(t, tf.Tensor)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(expected, dtype))


# --- seed 000: a Chinese tutorial notebook, TF 2.0 ---------------------------------------

def test_reshaped_variable_repr():
    x = tf.reshape(tf.Variable(range(4), dtype=tf.float32), (4, 1))
    assert repr(x) == tf_repr(
        "<tf.Tensor: id=10, shape=(4, 1), dtype=float32, numpy=\n"
        "array([[0.],\n"
        "       [1.],\n"
        "       [2.],\n"
        "       [3.]], dtype=float32)>")


def test_gradient_of_2_xT_x():
    x = tf.reshape(tf.Variable(range(4), dtype=tf.float32), (4, 1))
    with tf.GradientTape() as t:
        t.watch(x)
        y = 2 * tf.matmul(tf.transpose(x), x)

    dy_dx = t.gradient(y, x)
    assert repr(dy_dx) == tf_repr(
        "<tf.Tensor: shape=(4, 1), dtype=float32, numpy=\n"
        "array([[ 0.],\n"
        "       [ 4.],\n"
        "       [ 8.],\n"
        "       [12.]], dtype=float32)>")


def test_persistent_gradients_inside_context_warn_twice(caplog):
    x = tf.reshape(tf.Variable(range(4), dtype=tf.float32), (4, 1))
    with caplog.at_level(logging.WARNING):
        with tf.GradientTape(persistent=True) as g:
            g.watch(x)
            y = x * x
            z = y * y
            dz_dx = g.gradient(z, x)  # 108.0 (4*x^3 at x = 3)
            dy_dx = g.gradient(y, x)  # 6.0
    assert [r.getMessage() for r in caplog.records] == [PERSISTENT_WARNING] * 2
    assert all(r.levelno == logging.WARNING for r in caplog.records)
    assert_tensor(dz_dx, [[0.], [4.], [32.], [108.]])
    assert_tensor(dy_dx, [[0.], [2.], [4.], [6.]])


def test_help_shows_tf_signatures():
    assert str(inspect.signature(tf.GradientTape)) == (
        "(persistent=False, watch_accessed_variables=True)")
    none = "<UnconnectedGradients.NONE: 'none'>"
    assert str(inspect.signature(tf.GradientTape.gradient)) == (
        f"(self, target, sources, output_gradients=None, unconnected_gradients={none})")
    for method in (tf.GradientTape.jacobian, tf.GradientTape.batch_jacobian):
        assert str(inspect.signature(method)).endswith(
            f"unconnected_gradients={none}, parallel_iterations=None, "
            "experimental_use_pfor=True)")
    for name in ("batch_jacobian", "gradient", "jacobian", "reset", "stop_recording",
                 "watch", "watched_variables", "__enter__", "__exit__"):
        assert getattr(tf.GradientTape, name).__doc__


def test_help_docstring_x_times_x():
    x = tf.constant(3.0)
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    dy_dx = g.gradient(y, x)  # Will compute to 6.0
    assert_tensor(dy_dx, 6.0)


def test_help_docstring_nested_tapes():
    x = tf.constant(3.0)
    with tf.GradientTape() as g:
        g.watch(x)
        with tf.GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy_dx = gg.gradient(y, x)     # Will compute to 6.0
    d2y_dx2 = g.gradient(dy_dx, x)  # Will compute to 2.0
    assert_tensor(dy_dx, 6.0)
    assert_tensor(d2y_dx2, 2.0)


def test_help_docstring_persistent_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
        z = y * y
    dz_dx = g.gradient(z, x)  # 108.0 (4*x^3 at x = 3)
    dy_dx = g.gradient(y, x)  # 6.0
    del g  # Drop the reference to the tape
    assert_tensor(dz_dx, 108.0)
    assert_tensor(dy_dx, 6.0)


def test_help_docstring_watch_accessed_variables_false():
    variable_a = tf.Variable(3.0)
    variable_b = tf.Variable(2.0)
    with tf.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(variable_a)
        y = variable_a ** 2  # Gradients will be available for `variable_a`.
        z = variable_b ** 3  # No gradients will be available since `variable_b` is
                             # not being watched.
    assert_tensor(tape.gradient(y, variable_a), 6.0)
    assert tape.gradient(z, variable_b) is None
    assert tape.watched_variables() == (variable_a,)


def test_help_docstring_keras_layers_built_inside_unwatched_tape():
    inputs = tf.ones((3, 5))
    a = tf.keras.layers.Dense(32)
    b = tf.keras.layers.Dense(32)

    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a.variables)  # Since `a.build` has not been called at this point
                                 # `a.variables` will return an empty list and the
                                 # tape will not be watching anything.
        result = b(a(inputs))
        grads = tape.gradient(result, a.variables)  # The result of this computation will be
                                                    # a list of `None`s since a's variables
                                                    # are not being watched.
    assert len(a.variables) == 2
    assert grads == [None, None]
    assert result.shape == (3, 32)
    assert tape.watched_variables() == ()


def test_help_docstring_batch_jacobian():
    with tf.GradientTape() as g:
        x = tf.constant([[1., 2.], [3., 4.]], dtype=tf.float32)
        g.watch(x)
        y = x * x
    batch_jacobian = g.batch_jacobian(y, x)
    # batch_jacobian is [[[2,  0], [0,  4]], [[6,  0], [0,  8]]]
    assert_tensor(batch_jacobian, [[[2, 0], [0, 4]], [[6, 0], [0, 8]]])


def test_help_docstring_jacobian():
    with tf.GradientTape() as g:
        x = tf.constant([1.0, 2.0])
        g.watch(x)
        y = x * x
    jacobian = g.jacobian(y, x)
    # jacobian value is [[2., 0.], [0., 4.]]
    assert_tensor(jacobian, [[2., 0.], [0., 4.]])


def test_help_docstring_reset_equals_a_new_tape():
    w = tf.Variable(2.0)

    def loss_fn():
        return w * w

    def other_loss_fn():
        return 3.0 * w

    with tf.GradientTape() as t:
        loss = loss_fn()
    with tf.GradientTape() as t:
        loss += other_loss_fn()
    expected = t.gradient(loss, w)  # Only differentiates other_loss_fn, not loss_fn

    # The following is equivalent to the above
    with tf.GradientTape() as t:
        loss = loss_fn()
        t.reset()
        loss += other_loss_fn()
    got = t.gradient(loss, w)  # Only differentiates other_loss_fn, not loss_fn

    assert_tensor(expected, 3.0)
    assert_tensor(got, 3.0)


def test_help_docstring_reset_inside_control_flow():
    w = tf.Variable(2.0)
    k = 1.0
    with tf.GradientTape() as t:
        loss = w * w
        if loss > k:
            t.reset()
            loss = 5.0 * w
    assert_tensor(t.gradient(loss, w), 5.0)


def test_help_docstring_stop_recording_around_gradient():
    model = tf.keras.layers.Dense(2)
    inputs = tf.constant([[1.0, -2.0, 0.5]])
    model(inputs)  # build

    def compute_loss(model):
        return tf.reduce_sum(model(inputs) ** 2)

    with tf.GradientTape(persistent=True) as t:
        loss = compute_loss(model)
        with t.stop_recording():
            # The gradient computation below is not traced, saving memory.
            grads = t.gradient(loss, model.variables)
    kernel, bias = model.variables
    out = inputs.numpy() @ kernel.numpy() + bias.numpy()
    np.testing.assert_allclose(grads[0].numpy(), inputs.numpy().T @ (2 * out), rtol=1e-6)
    np.testing.assert_allclose(grads[1].numpy(), (2 * out).sum(0), rtol=1e-6)
    # Nothing of the gradient computation was recorded: there is no second derivative.
    assert t.gradient(grads[0], model.variables) == [None, None]


def f_while_if(a):
    b = a * 2
    while tf.norm(b) < 1000:
        b = b * 2
    if tf.reduce_sum(b) > 0:
        c = b
    else:
        c = 100 * b
    return c


@pytest.mark.parametrize("seed", range(6))  # seeds 4 and 5 draw a < 0: the else branch
def test_gradient_through_python_while_and_if_is_c_over_a(seed):
    tf.random.set_seed(seed)
    a = tf.random.normal((1, 1), dtype=tf.float32)
    with tf.GradientTape() as t:
        t.watch(a)
        c = f_while_if(a)
    same = t.gradient(c, a) == c / a
    assert repr(same) == "<srcdiff.Tensor: shape=(1, 1), dtype=bool, numpy=array([[ True]])>"


# --- seed 001: notes on tf.GradientTape, TF 2.0 ------------------------------------------

def test_constant_repr():
    x = tf.constant(3.0)
    assert repr(x) == tf_repr("<tf.Tensor: id=0, shape=(), dtype=float32, numpy=3.0>")


def test_first_derivative_of_x_squared_prints(capsys):
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    dy_dx = tape.gradient(y, x)  # Will compute to 6.0

    print(dy_dx)
    print("Value:", dy_dx.numpy())
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(6.0, shape=(), dtype=float32)\nValue: 6.0\n")


def test_second_derivative_of_x_squared(capsys):
    x = tf.constant(3.0)
    with tf.GradientTape() as tape2:
        tape2.watch(x)
        with tf.GradientTape() as tape3:
            tape3.watch(x)
            y = x * x
        dy_dx = tape3.gradient(y, x)
    d2y_d2x = tape2.gradient(dy_dx, x)

    print("Function: y = x * x, x = 3.0")
    print("First Derivative:", dy_dx.numpy())
    print("Second Derivative:", d2y_d2x.numpy())
    assert capsys.readouterr().out == (
        "Function: y = x * x, x = 3.0\nFirst Derivative: 6.0\nSecond Derivative: 2.0\n")


def test_persistent_tape_computes_multiple_gradients(capsys):
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as persistent_tape:
        persistent_tape.watch(x)
        y = x * x
        z = y * y
    dz_dx = persistent_tape.gradient(z, x)  # 108.0 (4*x^3 at x = 3)
    dy_dx = persistent_tape.gradient(y, x)  # 6.0
    print("First derivative of function y = x ^ 4 at x = 3 is", dz_dx.numpy())

    del persistent_tape
    assert capsys.readouterr().out == "First derivative of function y = x ^ 4 at x = 3 is 108.0\n"
    assert_tensor(dy_dx, 6.0)


def test_disable_automatic_tracking(capsys):
    variable_a = tf.Variable(3.0, name='x1')
    variable_b = tf.Variable(2.0, name='x2')

    with tf.GradientTape(persistent=True, watch_accessed_variables=False) as disable_tracking_tape:
        disable_tracking_tape.watch(variable_a)
        y = variable_a ** 2  # Gradients will be available for `variable_a`.
        z = variable_b ** 3  # No gradients will be available since `variable_b` is
                             # not being watched.
    gradient_1 = disable_tracking_tape.gradient(y, variable_a)  # 6.0
    gradient_2 = disable_tracking_tape.gradient(z, variable_b)  # None

    print(gradient_1)
    print(gradient_2)
    assert capsys.readouterr().out == tf_str("tf.Tensor(6.0, shape=(), dtype=float32)\nNone\n")
    assert (variable_a.name, variable_b.name) == ("x1:0", "x2:0")


# --- seed 002: the tf.GradientTape reference, TF 2.4 -------------------------------------

def test_reference_x_squared_at_3(capsys):
    x = tf.constant(3.0)
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    dy_dx = g.gradient(y, x)
    print(dy_dx)
    assert capsys.readouterr().out == tf_str("tf.Tensor(6.0, shape=(), dtype=float32)\n")


def test_reference_nested_tapes_at_5(capsys):
    x = tf.constant(5.0)
    with tf.GradientTape() as g:
        g.watch(x)
        with tf.GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy_dx = gg.gradient(y, x)  # dy_dx = 2 * x
    d2y_dx2 = g.gradient(dy_dx, x)  # d2y_dx2 = 2
    print(dy_dx)
    print(d2y_dx2)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(10.0, shape=(), dtype=float32)\ntf.Tensor(2.0, shape=(), dtype=float32)\n")


def test_reference_persistent_tape(capsys):
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
        z = y * y
    dz_dx = g.gradient(z, x)  # (4*x^3 at x = 3)
    print(dz_dx)
    dy_dx = g.gradient(y, x)
    print(dy_dx)
    del g  # Drop the reference to the tape
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(108.0, shape=(), dtype=float32)\ntf.Tensor(6.0, shape=(), dtype=float32)\n")


def test_reference_watch_accessed_variables_false(capsys):
    x = tf.Variable(2.0)
    w = tf.Variable(5.0)
    with tf.GradientTape(
            watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(x)
        y = x ** 2  # Gradients will be available for `x`.
        z = w ** 3  # No gradients will be available as `w` isn't being watched.
    dy_dx = tape.gradient(y, x)
    print(dy_dx)
    # No gradients will be available as `w` isn't being watched.
    dz_dy = tape.gradient(z, w)
    print(dz_dy)
    assert capsys.readouterr().out == tf_str("tf.Tensor(4.0, shape=(), dtype=float32)\nNone\n")


def test_reference_stop_recording(capsys):
    x = tf.constant(4.0)
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            y = x ** 2
    dy_dx = tape.gradient(y, x)
    print(dy_dx)
    assert capsys.readouterr().out == "None\n"


def test_reference_batch_jacobian_mismatched_first_dimension_is_value_error():
    # "ValueError ... if first dimension of `target` and `source` do not match."
    with tf.GradientTape() as g:
        x = tf.constant([[1., 2.], [3., 4.]])
        g.watch(x)
        y = tf.reshape(tf.reduce_sum(x * x), (1, 1))
    with pytest.raises(ValueError):
        g.batch_jacobian(y, x)


def test_reference_watch_of_a_non_tensor_is_value_error():
    # "ValueError if it encounters something that is not a tensor."
    with tf.GradientTape() as g:
        with pytest.raises(ValueError):
            g.watch("x")


def test_reference_gradient_on_used_non_persistent_tape_is_runtime_error():
    # "RuntimeError If called on a used, non-persistent tape" (gradient, jacobian,
    # batch_jacobian alike).
    x = tf.constant([[1., 2.]])
    for use in ("gradient", "jacobian", "batch_jacobian"):
        with tf.GradientTape() as g:
            g.watch(x)
            y = x * x
        g.gradient(y, x)
        with pytest.raises(RuntimeError, match=re.escape(NON_PERSISTENT_ERROR)):
            getattr(g, use)(y, x)


# --- seed 003: a basic GradientTape notebook ---------------------------------------------

def test_gradient_of_squared_sum_prints(capsys):
    x = tf.ones((2, 2))

    with tf.GradientTape() as t:
        # Record the actions performed on tensor x with `watch`
        t.watch(x)

        # Define y as the sum of the elements in x
        y = tf.reduce_sum(x)

        # Let z be the square of y
        z = tf.square(y)

    # Get the derivative of z wrt the original input tensor x
    dz_dx = t.gradient(z, x)
    print(dz_dx)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(\n[[8. 8.]\n [8. 8.]], shape=(2, 2), dtype=float32)\n")


def test_tape_expires_after_one_use(capsys):
    x = tf.constant(3.0)

    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        z = y * y

    # z = x^4, dz/dx = 4*x^3 at x = 3 --> 108.0
    dz_dx = t.gradient(z, x)
    print(dz_dx)

    # If you try to compute dy/dx after the gradient tape has expired:
    try:
        dy_dx = t.gradient(y, x)  # 6.0
        print(dy_dx)
    except RuntimeError as e:
        print(e)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(108.0, shape=(), dtype=float32)\n") + NON_PERSISTENT_ERROR + "\n"


def test_persistent_tape_can_be_used_twice(capsys):
    # To make sure that the gradient tape can be used multiple times, set persistent=True
    x = tf.constant(3.0)

    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y

    dz_dx = t.gradient(z, x)
    print(dz_dx)
    assert capsys.readouterr().out == tf_str("tf.Tensor(108.0, shape=(), dtype=float32)\n")
    assert repr(t.gradient(y, x)) == tf_repr("<tf.Tensor: shape=(), dtype=float32, numpy=6.0>")


def test_nested_first_gradient_inside_outer_block(capsys):
    x = tf.Variable(1.0)

    with tf.GradientTape() as tape_2:
        with tf.GradientTape() as tape_1:
            y = x * x * x
        dy_dx = tape_1.gradient(y, x)
    d2y_dx2 = tape_2.gradient(dy_dx, x)

    print(dy_dx)
    print(d2y_dx2)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(3.0, shape=(), dtype=float32)\ntf.Tensor(6.0, shape=(), dtype=float32)\n")


def test_nested_first_gradient_outside_outer_block_gives_none(capsys):
    x = tf.Variable(1.0)

    with tf.GradientTape() as tape_2:
        with tf.GradientTape() as tape_1:
            y = x * x * x

    # The first gradient call is outside the outer with block
    # so the tape will expire after this
    dy_dx = tape_1.gradient(y, x)

    # The tape is now expired and the gradient output will be `None`
    d2y_dx2 = tape_2.gradient(dy_dx, x)

    print(dy_dx)
    print(d2y_dx2)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(3.0, shape=(), dtype=float32)\nNone\n")


def test_nested_outside_outer_block_gives_none_even_when_persistent():
    # "this still won't work even if you set persistent=True for both gradient tapes."
    x = tf.Variable(1.0)
    with tf.GradientTape(persistent=True) as tape_2:
        with tf.GradientTape(persistent=True) as tape_1:
            y = x * x * x
    dy_dx = tape_1.gradient(y, x)
    assert_tensor(dy_dx, 3.0)
    assert tape_2.gradient(dy_dx, x) is None


def test_nested_both_gradients_inside_inner_block(capsys):
    x = tf.Variable(1.0)

    with tf.GradientTape() as tape_2:
        with tf.GradientTape() as tape_1:
            y = x * x * x
            dy_dx = tape_1.gradient(y, x)
            # this is acceptable
            d2y_dx2 = tape_2.gradient(dy_dx, x)

    print(dy_dx)
    print(d2y_dx2)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(3.0, shape=(), dtype=float32)\ntf.Tensor(6.0, shape=(), dtype=float32)\n")


def test_nested_second_gradient_inside_outer_block(capsys):
    x = tf.Variable(1.0)

    with tf.GradientTape() as tape_2:
        with tf.GradientTape() as tape_1:
            y = x * x * x
            dy_dx = tape_1.gradient(y, x)
        # this is also acceptable
        d2y_dx2 = tape_2.gradient(dy_dx, x)

    print(dy_dx)
    print(d2y_dx2)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(3.0, shape=(), dtype=float32)\ntf.Tensor(6.0, shape=(), dtype=float32)\n")


def test_nested_second_gradient_outside_both_blocks(capsys):
    x = tf.Variable(1.0)

    with tf.GradientTape() as tape_2:
        with tf.GradientTape() as tape_1:
            y = x * x * x
            dy_dx = tape_1.gradient(y, x)
    # this is also acceptable
    d2y_dx2 = tape_2.gradient(dy_dx, x)

    print(dy_dx)
    print(d2y_dx2)
    assert capsys.readouterr().out == tf_str(
        "tf.Tensor(3.0, shape=(), dtype=float32)\ntf.Tensor(6.0, shape=(), dtype=float32)\n")


# --- seed 004: TensorFlow 2.0 alpha notebook ---------------------------------------------

def test_gradient_of_sum_times_sum():
    x = tf.ones((2, 2,))

    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x)
        z = tf.multiply(y, y)

    # Derivative of z, with respect to x (original input tensor)
    dz_dx = t.gradient(z, x)
    for i in [0, 1]:
        for j in [0, 1]:
            assert dz_dx[i][j].numpy() == 8.0


def test_gradient_with_respect_to_intermediate_value():
    x = tf.ones((2, 2))

    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x)
        z = tf.multiply(y, y)

    # Derivative of z, with respect to y (intermediate value) using Tape
    dz_dy = t.gradient(z, y)
    assert dz_dy.numpy() == 8.0


def test_persistent_tape_then_drop_reference():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    dz_dx = t.gradient(z, x)
    dy_dx = t.gradient(y, x)

    del t           # drop Tape reference
    assert (dz_dx.numpy(), dy_dx.numpy()) == (108.0, 6.0)


def f_for_if(x, y):
    output = 1.0
    for i in range(y):
        if i > 1 and i < 5:
            output = tf.multiply(output, x)
    return output


def grad_for_if(x, y):
    with tf.GradientTape() as t:
        t.watch(x)
        out = f_for_if(x, y)
    return t.gradient(out, x)


def test_gradient_through_python_for_and_if():
    x = tf.convert_to_tensor(2.0)

    assert grad_for_if(x, 6).numpy() == 12.0
    assert grad_for_if(x, 5).numpy() == 12.0
    assert grad_for_if(x, 4).numpy() == 4.0


def test_higher_order_gradient_of_variable_cubed():
    # create TF variable initialized to 1.0

    x = tf.Variable(1.0)

    with tf.GradientTape() as t:
        with tf.GradientTape() as t2:
            y = x * x * x

        # compute gradient inside t Context Manager - making gradient computation
        # differentiable too

        dy_dx = t2.gradient(y, x)
    d2y_dx2 = t.gradient(dy_dx, x)

    assert dy_dx.numpy() == 3.0
    assert d2y_dx2.numpy() == 6.0

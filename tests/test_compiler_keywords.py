"""Keyword arguments of calls with a derivative rule: a keyword that names an input
is that input (it gets its gradient); one the rule models is passed to it; any
other (``initial=`` of a max, ``out=``) is refused, since the rule
would ignore it and the gradient would be of another function."""
import functools
import math

import numpy as np
import pytest

import srcdiff as sd
from srcdiff.rules.registry import rule_of
from compiler_programs import check_grad, check_three_ways

X = np.array([0.3, -0.7, 1.1, 0.2])
LO = np.array([-0.5, 0.0, 0.4, 0.1])
W = np.array([1.0, 2.0, 0.5, 1.5])


def clip_with_keyword_bounds(x, lo):
    return np.sum(np.clip(x, a_min=lo, a_max=1.0) * x)


def clip_with_positional_bounds(x, lo):
    return np.sum(np.clip(x, lo, 1.0) * x)


def average_with_weights(x, w):
    return np.average(x * x, weights=w)


def sum_with_modelled_keywords(x, w):
    return np.sum(np.sum(np.outer(x, w), axis=1, keepdims=True) ** 2)


@pytest.mark.parametrize("fn, args", [
    (clip_with_keyword_bounds, (X, LO)), (clip_with_positional_bounds, (X, LO)),
    (average_with_weights, (X, W)), (sum_with_modelled_keywords, (X, W))],
    ids=lambda v: getattr(v, "__name__", ""))
def test_keywords_that_name_inputs_get_their_gradients(fn, args):
    check_grad(fn, args, wrt=(0, 1))


def keyword_and_position_agree(x, lo):
    return np.sum(np.clip(x, a_min=lo, a_max=1.0)) - np.sum(np.clip(x, lo, 1.0))


def test_a_keyword_input_and_a_positional_one_give_the_same_gradient():
    g = sd.grad(keyword_and_position_agree, (0, 1))(X, LO)
    np.testing.assert_allclose(g[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(g[1], 0.0, atol=1e-12)


def sum_where(x):
    return np.sum(x * x, where=x > 0)


def mean_where_along_an_axis(x):
    m = np.reshape(x, (2, 2))
    return np.sum(np.mean(np.sin(m) * m, axis=1, keepdims=True, where=m < 1.0) ** 2)


def sum_where_a_row_mask_broadcasts(x):
    m = np.reshape(x, (2, 2))
    return np.sum(np.exp(np.sum(m * m, axis=0, where=np.array([True, False]), initial=1.0)))


@pytest.mark.parametrize("fn", [sum_where, mean_where_along_an_axis,
                                sum_where_a_row_mask_broadcasts], ids=lambda f: f.__name__)
def test_where_leaves_elements_out_of_the_reduction_and_its_gradient(fn):
    # where= was once ignored by the tape: the gradient of the whole sum
    check_three_ways(fn, (X,))


def max_where(x):
    return np.max(x, where=x > 0, initial=-1.0)


def max_initial(x):
    return np.max(x, initial=2.0)


def reshape_in_fortran_order(x):
    m = np.reshape(x, (2, 2), order="F")
    return np.sum(m * np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_a_reshape_in_fortran_order_is_differentiated_in_that_order():
    # once refused here, and on the tape given the adjoint in C order: the rule ignored it
    check_grad(reshape_in_fortran_order, (X,), wrt=(0,))


def sum_into_out(x):
    out = np.zeros(())
    np.sum(x, out=out)
    return np.sum(x * out)


def mean_into_out(x):
    buf = np.zeros(())
    y = np.mean(x * x, out=buf)
    return y * 1.0


@pytest.mark.parametrize("fn", [max_where, max_initial, mean_into_out],
                         ids=lambda f: f.__name__)
def test_keywords_without_a_model_are_refused(fn):
    with pytest.raises(sd.CompileError) as info:
        sd.grad(fn)(X.copy())
    assert "=..." in str(info.value)


def log_in_a_base(x):
    return math.log(x[0], 2.0) * x[1]


def test_more_positional_arguments_than_the_rule_takes_are_refused():
    # math.log's rule is of x alone: the base, passed by position, would be ignored
    with pytest.raises(sd.CompileError, match="math.log"):
        sd.grad(log_in_a_base)(np.array([3.0, 2.0]))
    assert rule_of(math.log).parameters()[2] == 1


def sum_where_inactive(x, data):
    scale = np.sum(data, where=data > 0)   # no gradient flows through it
    return np.sum(x) * scale


def test_a_keyword_without_a_model_on_inactive_values_runs_as_written():
    data = np.array([1.0, -2.0, 3.0])
    check_grad(sum_where_inactive, (X, data), wrt=0)


def enumerate_from_one(x):
    t = 0.0
    for i, v in enumerate(x, start=1):
        t = t + i * v
    return t


def enumerate_from_a_value(x, first):
    t = 0.0
    for i, v in enumerate(x, first):
        t = t + i * v * v
    return t


def test_enumerate_counts_from_its_start():
    check_grad(enumerate_from_one, (X,))
    check_grad(enumerate_from_a_value, (X, 3), wrt=0)


def zip_strict(x, y):
    t = 0.0
    for a, b in zip(x, y, strict=True):
        t = t + a * b
    return t


def test_a_zip_keyword_is_refused():
    with pytest.raises(sd.CompileError, match="zip"):
        sd.grad(zip_strict)(X, X)


# --- helpers with keyword-only parameters (parse._check_signature) -------------------

def scaled_activation(v, *, scale, act=np.tanh, shift=0.5):
    return act(v) * scale + shift


def keyword_only_helper(x, w):
    return np.sum(scaled_activation(x, scale=w) * scaled_activation(w, act=np.sin, scale=x)
                  + scaled_activation(x, shift=2.0, scale=3.0, act=lambda t: t * w))


def defaults_and_a_closure(v, act, c=2.0):
    return act(v) * c


def default_filled_before_a_closure(x, w):  # the closure's values follow every parameter
    return np.sum(defaults_and_a_closure(x, lambda t: np.cos(t) * w))


def keyword_only_at_the_top(x, w, *, k=3.0, act=np.tanh):
    return np.sum(act(x * w) * k)


def steps_for(v, *, per=2, extra):
    return len(v) * per + extra


def keyword_only_helper_without_a_gradient(x, w):  # not compiled: runs as written
    y = x
    for _ in range(steps_for(x, extra=1)):
        y = np.sin(y * w)
    return np.sum(y)


@pytest.mark.parametrize("fn", [keyword_only_helper, default_filled_before_a_closure,
                                keyword_only_at_the_top,
                                keyword_only_helper_without_a_gradient],
                         ids=lambda f: f.__name__)
def test_keyword_only_parameters_are_bound_by_name(fn):
    check_three_ways(fn, (X, W), wrt=(0, 1))


def keyword_defaults_in_comprehensions(x, w):  # every comprehension form binds its calls
    listed = sum([scaled_activation(v, scale=2.0) for v in x])
    generated = sum(scaled_activation(v, scale=u, shift=u) for v, u in zip(x, w))
    keyed = {k: scaled_activation(v, scale=w[k]) for k, v in enumerate(x)}
    nested = [[scaled_activation(a * b, scale=1.5) for a in x] for b in w[:2]]
    picked = [defaults_and_a_closure(v, np.sin) for v in x if scaled_activation(v, scale=1.0) > 0]
    return listed + generated + sum(keyed.values()) + sum(nested[1]) + sum(picked)


def closure_with_a_default_in_a_comprehension(x, w):
    act = lambda t, k=3.0: np.sin(t * w[0]) * k  # noqa: E731 (w: a capture appended)
    return sum_over(act, x)


def sum_over(fn, xs):
    return sum([fn(v) for v in xs]) + sum(fn(v, 0.5) for v in xs)


def keyword_only_helpers_called_in_comprehensions(x, w):
    made = functools.partial(scaled_activation, scale=2.5)
    spread = sum([kwargs_helper(v, scale=w[0]) for v in x])
    return sum([made(v) for v in x]) + spread


def kwargs_helper(v, **options):
    return np.tanh(v) * options.get("scale", 1.0)


@pytest.mark.parametrize("fn", [keyword_defaults_in_comprehensions,
                                closure_with_a_default_in_a_comprehension,
                                keyword_only_helpers_called_in_comprehensions],
                         ids=lambda f: f.__name__)
def test_calls_in_comprehensions_are_bound_as_anywhere_else(fn):
    # they were left as written: the compiled helper (keyword-only parameters
    # positional, without defaults) missed them, and a closure's capture filled a default
    check_three_ways(fn, (X, W), wrt=(0, 1))


def a_loop_variable_named_as_a_helper(x):
    return sum([scaled_activation(v) for scaled_activation, v in zip([np.sin, np.cos], x)])


def test_a_comprehension_variable_hides_the_function_of_its_name():
    # not bound as the helper (which misses 'scale'): a function value, refused
    with pytest.raises(sd.CompileError, match="no derivative rule"):
        sd.grad(a_loop_variable_named_as_a_helper)(X)


def star_args_and_keyword_only(v, *rest, k=1.0):
    return v * k


@pytest.mark.parametrize("helper, words", [  # **kwargs: test_compiler_kwargs.py
    (star_args_and_keyword_only, r"\*args beside keyword-only")],
    ids=lambda v: getattr(v, "__name__", ""))
def test_signatures_not_modelled_are_refused(helper, words):
    def loss(x):
        return np.sum(helper(x, k=2.0))
    with pytest.raises(sd.CompileError, match=words):
        sd.grad(loss)(X.copy())


def sum_with_an_initial_value(x):
    return np.sum(np.tanh(x), initial=np.sum(x * x)) * np.sum(x, initial=0.5)


def test_an_initial_value_is_added_to_the_sum_and_gets_its_gradient():
    check_three_ways(sum_with_an_initial_value, (X,))


def nan_to_num_in_place(x):
    z = x * 2.0
    y = np.nan_to_num(z, copy=False, posinf=x[2])
    return np.sum(z * x) + np.sum(y)


def test_a_write_in_place_by_a_keyword_is_refused_on_both_engines():
    # nan_to_num(copy=False) wrote into z unseen: its gradient came from the old z
    with pytest.raises(TypeError, match="copy=False"):
        sd.grad(nan_to_num_in_place)(X)
    with pytest.raises(TypeError, match="copy=False"):
        with sd.GradientTape():
            nan_to_num_in_place(sd.Variable(X))

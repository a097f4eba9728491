"""``**kwargs`` helpers and methods with keyword-only or ``**kwargs`` parameters
(kwargs.py, dispatch.py): compiled == eager == finite differences, in the three
modes (``sd.grad``, ``@sd.function`` outside a tape and under one), or a CompileError."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_three_ways

X = np.array([0.3, -0.7, 1.1])


def scaled(x, **kw):
    return x * kw["scale"]


def forwards(x, **kw):
    return scaled(np.sin(x), **kw) + kw.get("bias", 0.0)


def options(x, n=2, *, c, **opts):
    t = x * c * n
    if "shift" in opts:  # constant per set of names: the other branch never runs
        t = t + opts["shift"]
    return t * len(opts)


def wrapper(*args, **kwargs):
    return options(*args, **kwargs)


def repeated(x, n, **kw):
    return x if n == 0 else repeated(x * kw["s"], n - 1, **kw)


def spreads(x, **kw):
    both = {**kw, "extra": 2.0}
    return sum(v * x for v in both.values())


def active_keyword(x):
    return np.sum(scaled(x, scale=x * x))


def forwarded(x):
    return np.sum(forwards(x, scale=2.0 * x, bias=np.cos(x))) + np.sum(forwards(x, scale=3.0))


def keyword_only_and_kwargs(x):
    return np.sum(options(x, c=x, shift=np.exp(x), other=1.0) + options(x, 3, c=2.0, more=x))


def through_a_wrapper(x):
    return np.sum(wrapper(x, 2, c=x * x, shift=x))


def recursive(x):
    return np.sum(repeated(x, 3, s=np.sin(x)))


def dict_literal_spread(x):
    return np.sum(scaled(x, **{"scale": np.tanh(x)}))


def kwargs_read_as_a_dict(x):
    return np.sum(spreads(x, a=x, b=np.sin(x)))


def inactive_call(x):
    n = np.sum(scaled(np.ones(3), scale=2.0))  # no active input: runs as written
    return np.sum(x) * n


class Scale:
    def __init__(self, w):
        self.w = w

    def apply(self, a, *, gain=1.0, **extra):
        out = a * self.w * gain
        if "bias" in extra:
            out = out + extra["bias"]
        return out


class Sine:
    def apply(self, a, *, gain=1.0, **extra):
        return np.sin(a) * gain + extra.get("bias", 0.0)


LAYERS = [Scale(np.array([0.5, 2.0, -1.0])), Sine(), Scale(np.array([1.5, 1.0, 0.2]))]


def method_keyword_and_kwargs(x):
    for layer in LAYERS:  # looked up when it runs (dispatch.py)
        x = layer.apply(x, gain=np.sum(x), bias=x * x)
    return np.sum(x)


def method_keyword_only(x):
    for layer in LAYERS:
        x = layer.apply(x, gain=2.0)
    return np.sum(x)


@pytest.mark.parametrize("fn", [active_keyword, forwarded, keyword_only_and_kwargs,
                                through_a_wrapper, recursive, dict_literal_spread,
                                kwargs_read_as_a_dict, inactive_call,
                                method_keyword_and_kwargs, method_keyword_only])
def test_kwargs_are_differentiated_three_ways(fn):
    check_three_ways(fn, (X.copy(),))


def test_each_set_of_names_is_its_own_unit():
    def two(x):
        return np.sum(scaled(x, scale=x) + forwards(x, scale=x, bias=x))
    g = sd.grad(two)(X.copy())
    np.testing.assert_allclose(g, 2 * X + 1 + np.sin(X) + np.cos(X) * X)


def missing(x, **kw):
    return x * kw["absent"]


def test_a_missing_keyword_raises_as_python_does():
    with pytest.raises(KeyError):
        sd.grad(lambda x: np.sum(missing(x, scale=x)))(X.copy())


def writes_kwargs(x, **kw):
    kw["scale"] = 2.0
    return x * kw["scale"]


def pops_kwargs(x, **kw):
    return x * kw.pop("scale")


def mapping_call(x):
    d = {"scale": x}
    return np.sum(scaled(x, **d))


def top_level(x, **kw):
    return np.sum(x)


@pytest.mark.parametrize("fn", [lambda x: np.sum(writes_kwargs(x, scale=x)),
                                lambda x: np.sum(pops_kwargs(x, scale=x)),
                                mapping_call, top_level])
def test_what_kwargs_does_not_model_is_refused(fn):
    with pytest.raises(sd.CompileError) as info:
        sd.grad(fn)(X.copy())
    assert info.value.hint


def layer(x, w, *, scale=1.0, training=False):
    y = np.tanh(x * w) * scale
    if training:
        y = y * 0.5
    return np.sum(y)


def _eager_gradient(fn, x, w, **kwargs):
    with sd.GradientTape() as tape:
        tape.watch([x, w])
        y = fn(x, w, **kwargs)
    return y, tape.gradient(y, [x, w])


@pytest.mark.parametrize("kwargs", [{}, {"training": True}, {"scale": 3.0},
                                    {"scale": 2.0, "training": True}], ids=str)
def test_an_sd_function_called_with_keywords_under_a_tape(kwargs):
    x, w = sd.constant(X), sd.constant(np.array([0.5, 2.0, -1.0]))
    got, (gx, gw) = _eager_gradient(sd.function(layer), x, w, **kwargs)
    want, (ex, ew) = _eager_gradient(layer, x, w, **kwargs)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-12)
    # the arguments by name too, outside a tape
    np.testing.assert_allclose(sd.function(layer)(w=w, x=x, **kwargs).numpy(), want.numpy(),
                               rtol=1e-12)


def test_keywords_in_a_second_derivative_through_an_sd_function():
    f = sd.function(layer)
    x, w = sd.constant(X), sd.constant(np.array([0.5, 2.0, -1.0]))
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = f(x, w, scale=3.0)
        d = inner.gradient(y, x)
    t = np.tanh(X * w.numpy())  # d = 3 w (1 - t^2); its derivative -6 w^2 t (1 - t^2)
    np.testing.assert_allclose(outer.gradient(d, x).numpy(),
                               -6.0 * w.numpy() ** 2 * t * (1 - t ** 2), rtol=1e-10)


def test_keywords_of_an_sd_function_method():
    class Model:
        def __init__(self):
            self.w = sd.Variable(np.array([0.5, 2.0, -1.0]))

        @sd.function
        def __call__(self, x, training=False):
            y = np.sum(np.sin(self.w * x))
            return y * 2.0 if training else y

    m = Model()
    for training in (False, True):
        with sd.GradientTape() as tape:
            y = m(sd.constant(X), training=training)
        want = np.cos(m.w.numpy() * X) * X * (2.0 if training else 1.0)
        np.testing.assert_allclose(tape.gradient(y, m.w).numpy(), want, rtol=1e-12)


def rests(x, *rest):
    return np.sum(x) * (1.0 + sum(rest))


def test_a_star_args_function_called_by_keyword():
    np.testing.assert_allclose(sd.grad(rests)(x=X), np.ones(3))
    np.testing.assert_allclose(sd.grad(rests)(X, 1.0, 2.0), np.full(3, 4.0))

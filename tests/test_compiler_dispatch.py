"""Method calls resolved when they run (compiler/dispatch.py): ``obj.f(x)`` on a local
value, whose class may change from call to call (a list of layers of different
classes).  Each program is checked three ways (``sd.grad`` against the eager tape
and finite differences, ``@sd.function`` outside a tape and under one); a method the
compiler cannot compile is a CompileError at the call, raised when it runs."""
import collections
import contextlib

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad
from util import numerical_grad
from test_compiler_containers import check_tree
from test_compiler_functions import check_three_ways

RNG = np.random.default_rng(11)
X = RNG.normal(size=(4, 3))
W = RNG.normal(size=(3, 3))
B = RNG.normal(size=3)


class Affine:
    def __init__(self, gain):
        self.gain = gain  # an array of the object's own: a constant to the gradient

    def forward(self, params, x):
        weights, bias = params
        return self.gain * (x @ weights) + bias


class Squash:
    def forward(self, params, x):  # no parameters: its adjoint of params is zero
        return np.tanh(x)


class Scale:
    def __init__(self, power):
        self.power = power

    def forward(self, params, x, shift=0.0):
        (s,) = params
        return self.activate(x * s + shift)

    def activate(self, y):  # self.activate: resolved when it runs, inside a method
        return y ** self.power


LAYERS = [Affine(np.array([1.0, 0.5, -2.0])), Squash(), Scale(2), Affine(0.3)]


def network(params, x):
    for layer, p in zip(LAYERS, params):
        x = layer.forward(p, x)
    return np.sum(x)


def network_with_keywords(params, x):
    total = 0.0
    for layer, p in zip(LAYERS, params):
        x = layer.forward(p, x, shift=0.5) if isinstance(layer, Scale) else layer.forward(p, x)
        total = total + np.sum(x * x)
    return total


PARAMS = [(W, B), (), (np.array(0.7),), (W.T * 0.5, -B)]


@pytest.mark.parametrize("fn", [network, network_with_keywords])
def test_a_list_of_objects_of_different_classes(fn):
    check_tree(fn, PARAMS, X)


def test_the_class_is_read_when_the_call_runs():
    """The same compiled function, the global list changed in place: each call takes
    the methods of the objects it meets (no unit is made stale by it)."""
    grad = sd.grad(network)
    before = grad(PARAMS, X)
    saved = LAYERS[1]
    try:
        LAYERS[1] = Scale(3)
        params = [PARAMS[0], (np.array(1.3),), PARAMS[2], PARAMS[3]]
        after = check_tree(network, params, X)
        assert not np.allclose(after[0][0], before[0][0])
    finally:
        LAYERS[1] = saved


# --- the receiver differentiated: a namedtuple with methods ---------------------

class Linear(collections.namedtuple("Linear", "W b")):
    def apply(self, x):
        return x @ self.W + self.b


class Gate(collections.namedtuple("Gate", "w")):
    def apply(self, x):
        return x * np.tanh(self.w)


def stack_of_pytrees(layers, x):
    for layer in layers:
        x = np.sin(layer.apply(x))
    return np.sum(x)


def test_a_receiver_that_is_differentiated_gets_its_gradient():
    check_tree(stack_of_pytrees, [Linear(W, B), Gate(B * 2.0), Linear(W.T, -B)], X)


# --- several results, a model passed as an argument --------------------------------

class Splitter:
    def halves(self, x):
        return x[:, :2] * 2.0, np.cos(x[:, 2:])


def unpacked(x, splitter):
    a, b = splitter.halves(x)
    return np.sum(a * a) + np.sum(b)


def test_a_method_whose_results_are_unpacked():
    check_three_ways(unpacked, (X, Splitter()))


# --- refused when it runs ---------------------------------------------------------

class Holder:
    def __init__(self):
        self.scale = lambda t: t * 2.0  # an attribute of the object, not a method

    def pair(self, x):
        return x, x * 2.0

    def doubles_in_place(self, x):
        x[0] = 0.0
        return x


class Guarded:
    def forward(self, x):
        with contextlib.suppress(FloatingPointError):  # a statement the compiler refuses
            return np.log(x * x)


class WithVariable:
    def __init__(self):
        self.w = sd.Variable(np.ones(3))

    def forward(self, x):
        return x * 2.0


def call_of_a_builtin_method(x, other):
    table = {"w": x * 2.0}
    return np.sum(table.__getitem__("w"))  # no Python source (get has a model)


def call_of_an_attribute(x, holder):
    return np.sum(holder.scale(x))


def call_of_several_results_kept_together(x, holder):
    both = holder.pair(x)
    return np.sum(both)


def call_that_writes_into_its_argument(x, holder):
    y = x * 1.0
    return np.sum(holder.doubles_in_place(y))


def call_on_an_object_holding_a_variable(x, obj):
    return np.sum(obj.forward(x))


@pytest.mark.parametrize("fn, other, words", [
    (call_of_a_builtin_method, Holder(), "not a function written in Python"),
    (call_of_an_attribute, Holder(), "an attribute of the object"),
    (call_of_several_results_kept_together, Holder(), "returns several results"),
    (call_that_writes_into_its_argument, Holder(), "writes into its arguments"),
    (call_on_an_object_holding_a_variable, WithVariable(), "Tensors or Variables"),
])
def test_a_method_the_compiler_cannot_compile_is_refused_when_it_runs(fn, other, words):
    x = X[0].copy()
    with pytest.raises(sd.CompileError) as info:
        sd.grad(fn)(x, other)
    error = info.value
    assert words in error.message
    assert error.filename == __file__ and error.hint
    assert "." in error.line and "(" in error.line  # it points at the call


def call_of_a_method_the_compiler_refuses(x, obj):
    return np.sum(obj.forward(x))


def test_a_refusal_inside_the_method_points_at_the_method():
    with pytest.raises(sd.CompileError) as info:
        sd.grad(call_of_a_method_the_compiler_refuses)(X[0].copy(), Guarded())
    assert info.value.filename == __file__ and "with contextlib.suppress" in info.value.line


def test_a_jacobian_through_methods_resolved_when_they_run():
    """The caller's batched pass is refused (one walk per row instead), never wrong."""
    def rows(x):
        for layer, p in zip(LAYERS, PARAMS):
            x = layer.forward(p, x)
        return x[0]
    jac = sd.jacobian(rows)(X)
    for k in range(3):
        np.testing.assert_allclose(jac[k], numerical_grad(lambda v: rows(v)[k], X),
                                   rtol=1e-5, atol=1e-6)


def differentiated_object(layer, x):
    return np.sum(layer.forward(PARAMS[0], x))


def test_an_object_that_is_not_a_pytree_is_not_differentiated():
    """Its attributes would be constants where a gradient was asked for: refused."""
    with pytest.raises(sd.CompileError, match="only a namedtuple's fields"):
        sd.grad(differentiated_object)(Affine(np.ones(3)), X)


def test_a_method_never_asked_for_a_gradient_runs_as_written():
    """An inactive call is plain Python: a builtin method is fine there."""
    def f(x, table):
        k = table.get("k")
        return np.sum(x * k)
    check_grad(f, (X[0], {"k": 3.0}))

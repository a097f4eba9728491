"""The short paths of a call: a tape's gradient for a Tensor or a flat list of sources,
an ``@sd.function`` call whose tape inputs are its arguments, and read-only arrays
passed to compiled code as they are.  Each must give what the general path gives."""
import collections
import gc
import logging

import numpy as np
import pytest

import srcdiff as sd
from util import numerical_jacobian

Pair = collections.namedtuple("Pair", "a b")


def _eager_and_compiled(fn):
    return [("eager", fn), ("compiled", sd.function(fn))]


def _loss(x, a):
    return np.sum(np.sin(x) * a) + np.sum(x * x)


def _expected(x, a):
    """d loss / dx and d loss / da, analytically."""
    return np.cos(x) * a + 2 * x, np.sin(x)


# --- GradientTape.gradient: the structure and the values of what it returns ---
@pytest.mark.parametrize("structure", ["tensor", "list", "tuple", "namedtuple", "dict",
                                       "nested"])
@pytest.mark.parametrize("engine", ["eager", "compiled"])
def test_gradient_has_the_structure_of_the_sources(structure, engine):
    x = sd.constant(np.array([0.1, 0.2, 0.3]))
    a = sd.Variable(np.array([1.5, -2.0, 0.5]))
    fn = dict(_eager_and_compiled(_loss))[engine]
    sources = {"tensor": x, "list": [x, a], "tuple": (x, a), "namedtuple": Pair(x, a),
               "dict": {"x": x, "a": a}, "nested": [x, (a,)]}[structure]
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = fn(x, a)
    got = tape.gradient(y, sources)
    dx, da = _expected(x.numpy(), a.numpy())
    if structure == "tensor":
        np.testing.assert_allclose(got.numpy(), dx)
        return
    assert type(got) is type(sources)
    if structure == "dict":
        flat = [got["x"], got["a"]]
    elif structure == "nested":
        assert type(got[1]) is tuple
        flat = [got[0], got[1][0]]
    else:
        flat = got
    np.testing.assert_allclose(flat[0].numpy(), dx)
    np.testing.assert_allclose(flat[1].numpy(), da)


@pytest.mark.parametrize("engine", ["eager", "compiled"])
def test_gradient_of_unwatched_integer_and_unconnected_sources(engine, caplog):
    fn = dict(_eager_and_compiled(_loss))[engine]
    x = sd.constant(np.array([0.1, 0.2]))
    a = sd.constant(np.array([1.0, 2.0]))  # never watched: None, as in TensorFlow
    other = sd.constant(np.array([3.0]))   # watched, but y does not depend on it
    count = sd.constant(np.array([1, 2]))  # an integer: None, with TensorFlow's warning
    with sd.GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = fn(x, a)
    with caplog.at_level(logging.WARNING, logger="srcdiff"):
        dx, da, dother, dcount = tape.gradient(y, [x, a, other, count])
    assert "must be floating" in caplog.text
    np.testing.assert_allclose(dx.numpy(), _expected(x.numpy(), a.numpy())[0])
    assert da is None and dother is None and dcount is None
    for zero in (sd.UnconnectedGradients.ZERO, "zero"):
        dx2, dother = tape.gradient(y, (x, other), unconnected_gradients=zero)
        np.testing.assert_allclose(dx2.numpy(), dx.numpy())  # a persistent tape: again
        np.testing.assert_array_equal(dother.numpy(), [0.0])
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="zeros")


@pytest.mark.parametrize("engine", ["eager", "compiled"])
def test_gradient_with_output_gradients_and_a_list_of_targets(engine):
    def f(x):
        return np.sin(x) * 2.0

    fn = dict(_eager_and_compiled(f))[engine]
    x = sd.constant(np.array([0.1, 0.2, 0.3]))
    seed = np.array([1.0, -1.0, 3.0])
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
        z = x * 1.0
    got = tape.gradient(y, x, output_gradients=sd.constant(seed))
    np.testing.assert_allclose(got.numpy(), 2 * np.cos(x.numpy()) * seed)
    both = tape.gradient([y, z], [x])
    np.testing.assert_allclose(both[0].numpy(), 2 * np.cos(x.numpy()) + 1)
    with pytest.raises(ValueError, match="Mismatch between the shape"):
        tape.gradient(y, x, output_gradients=np.ones(2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_in_the_dtype_of_each_source(dtype):
    f = sd.function(lambda x, w: np.sum(x * w))
    x = sd.constant(np.array([1.0, 2.0], dtype))
    w = sd.Variable(np.array([3.0, 4.0], np.float64))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = f(x, w)
    dx, dw = tape.gradient(y, [x, w])
    assert dx.dtype == dtype and dw.dtype == np.float64
    np.testing.assert_allclose(dx.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(dw.numpy(), [1.0, 2.0])


def test_sources_must_be_tensors_or_variables():
    x = sd.constant(1.0)
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="sources must be Tensors or Variables"):
        tape.gradient(y, [x, 1.0])


# --- an @sd.function call: tape inputs that are not its arguments one for one ---
def _mixed(data, w, params):
    return np.sum(np.tanh(data @ w) * params["scale"]) + params["shift"] ** 2


@pytest.mark.parametrize("engine", ["eager", "compiled"])
def test_arrays_and_pytrees_beside_tensors(engine):
    fn = dict(_eager_and_compiled(_mixed))[engine]
    rng = np.random.default_rng(1)
    data = rng.normal(size=(3, 2))  # an ndarray first: tape input 0 is argument 1
    w = sd.constant(rng.normal(size=(2, 4)))
    params = {"scale": sd.constant(rng.normal(size=4)), "shift": sd.constant(0.7)}
    with sd.GradientTape() as tape:
        tape.watch([w, params])
        y = fn(data, w, params)
    dw, dparams = tape.gradient(y, [w, params])
    t = np.tanh(data @ w.numpy())
    scale = params["scale"].numpy()
    np.testing.assert_allclose(dw.numpy(), data.T @ ((1 - t ** 2) * scale))
    np.testing.assert_allclose(dparams["scale"].numpy(), t.sum(axis=0))
    np.testing.assert_allclose(dparams["shift"].numpy(), 2 * 0.7)


def _three(a, b, c):
    return np.sum(np.sin(a) * b + c * a)


@pytest.mark.parametrize("kinds", ["TTT", "TTA", "TAF", "ATT", "FTA", "TAT", "AAT"])
@pytest.mark.parametrize("watch_all", [True, False])
def test_tensors_arrays_and_numbers_in_any_order(kinds, watch_all):
    """A call's tape inputs are its Tensors, wherever they stand among ndarrays and
    numbers: each Tensor watched gets its gradient, whether or not the Tensors come
    first (the tape inputs then are or are not the arguments of their positions)."""
    values = [np.array([0.3, -1.2]), np.array([2.0, 0.5]), np.array([1.5, -0.4])]
    args = [sd.constant(v) if k == "T" else v if k == "A" else float(v[0])
            for k, v in zip(kinds, values)]
    plain = [v if k != "F" else float(v[0]) for k, v in zip(kinds, values)]
    tensors = [a for a in args if isinstance(a, sd.Tensor)]
    watched = tensors if watch_all else tensors[:1]
    for fn in (sd.function(_three), _three):
        with sd.GradientTape() as tape:
            tape.watch(watched)
            y = fn(*args)
        grads = tape.gradient(y, tensors)
        for k, (t, g) in enumerate(zip(tensors, grads)):
            i = [j for j, a in enumerate(args) if a is t][0]
            if not any(t is w for w in watched):
                assert g is None
                continue

            def at(v, i=i):
                return _three(*[v if j == i else p for j, p in enumerate(plain)])
            np.testing.assert_allclose(g.numpy(), numerical_jacobian(at, plain[i]),
                                       rtol=1e-6, atol=1e-9)


def _pair(x, y):
    return np.sin(x) * y + x * x


def _scalar_pair(x, y):
    return np.sum(_pair(x, y))


@pytest.mark.parametrize("case", ["same tensor twice", "watched after", "float32",
                                  "vector result", "0-d result", "target a source",
                                  "only one source", "persistent", "walked twice"])
def test_a_tape_holding_one_call_gives_the_eager_gradient(case):
    """A tape used once that holds one compiled call walks it by the call's own step
    (``_CompiledCall.once``) in the common case, by the general walk otherwise: the
    eager tape's gradients, every source alike, either way."""
    dtype = np.float32 if case == "float32" else np.float64
    x = sd.constant(np.array([0.3, -1.2], dtype))
    y = x if case == "same tensor twice" else sd.constant(np.array([2.0, 0.5], dtype))
    if case == "0-d result":
        x, y = sd.constant(np.float64(0.3)), sd.constant(np.float64(-0.7))
    fn = _pair if case in ("vector result", "0-d result") else _scalar_pair
    results = []
    for f in (fn, sd.function(fn)):
        with sd.GradientTape(persistent=case in ("persistent", "walked twice")) as tape:
            tape.watch(x)
            if case != "watched after":
                tape.watch(y)
            out = f(x, y)
            if case == "watched after":
                tape.watch(y)
        sources = {"only one source": [y], "target a source": [x, y, out]}.get(case, [x, y])
        grads = tape.gradient(out, sources)
        if case == "walked twice":
            again = tape.gradient(out, sources)
            for g, h in zip(grads, again):
                np.testing.assert_array_equal(g.numpy(), h.numpy())
        results.append([None if g is None else g.numpy() for g in grads])
    eager, compiled = results
    for g, h in zip(eager, compiled):
        assert (g is None) == (h is None)
        if g is not None:
            assert h.dtype == g.dtype
            np.testing.assert_allclose(h, g, rtol=1e-6 if dtype is np.float32 else 1e-12)
    # and the eager tape is right: each source's gradient by finite differences
    if case not in ("float32", "target a source", "same tensor twice"):
        plain = [v.numpy().astype(np.float64) for v in (x, y)]
        by_source = {id(x): 0, id(y): 1}
        for source, g in zip(sources, eager):
            i = by_source[id(source)]

            def total(v, i=i):
                return np.sum(fn(*[v if j == i else p for j, p in enumerate(plain)]))
            np.testing.assert_allclose(g, numerical_jacobian(total, plain[i]),
                                       rtol=1e-6, atol=1e-9)


def test_watch_takes_nested_lists_tuples_and_dicts():
    x, y, z, w = (sd.constant(v) for v in ([1.0, 2.0], 3.0, [0.5], 2.0))
    with sd.GradientTape() as tape:
        tape.watch([x, [y, (z,)], {"k": w}])
        loss = sd.reduce_sum(x * y) + sd.reduce_sum(z) * w
    dx, dy, dz, dw = tape.gradient(loss, [x, y, z, w])
    np.testing.assert_allclose(dx.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(dy.numpy(), 3.0)
    np.testing.assert_allclose(dz.numpy(), [2.0])
    np.testing.assert_allclose(dw.numpy(), 0.5)


# --- with_defaults: a call that leaves parameters to their defaults ---
def _defaults(x, a=2.0, *, b=3.0):
    return np.sum(x * a * b)


def _positional(x, a=2.0):
    return np.sum(x * a)


@pytest.mark.parametrize("fn, args, expected", [
    (_defaults, (np.ones(2),), 6.0), (_defaults, (np.ones(2), 5.0), 15.0),
    (_positional, (np.ones(2),), 2.0), (_positional, (np.ones(2), 4.0), 4.0)])
def test_defaults_are_filled_in(fn, args, expected):
    np.testing.assert_allclose(sd.grad(fn)(*args), [expected] * 2)
    x = sd.constant(args[0])
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.function(fn)(x, *args[1:])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [expected] * 2)


# a global named like a builtin: a Variable the function reads, not the builtin
input = sd.Variable(np.array([2.0, 3.0]))  # noqa: A001


def _reads_a_global_named_like_a_builtin(x):
    total = 0.0
    for i in range(2):
        total = total + np.sum(x * input)
    return total


def test_a_global_named_like_a_builtin_is_captured():
    f = sd.function(_reads_a_global_named_like_a_builtin)
    x = sd.constant(np.array([1.0, -1.0]))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    dx, dv = tape.gradient(y, [x, input])
    np.testing.assert_allclose(dx.numpy(), [4.0, 6.0])
    np.testing.assert_allclose(dv.numpy(), [2.0, -2.0])


# --- read-only arrays passed to compiled code as they are ---
def _writes_a_local_copy(x, w):
    y = x.copy()
    y[0] = 10.0
    return np.sum(y * w)


def _writes_its_argument(x, w):
    x[0] = 10.0
    return np.sum(x * w)


def _writes_unmodelled(x, w):
    done = np.put(x, [0], 10.0)  # no model: taken to write into x (its result is None)
    return np.sum(x * w)


def _array(read_only):
    x = np.array([1.0, 2.0, 3.0])
    x.flags.writeable = not read_only
    return x


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("fn", [_writes_a_local_copy, _writes_its_argument])
def test_a_write_into_a_copy_leaves_the_callers_array(fn, read_only):
    x, w = _array(read_only), np.array([1.0, -1.0, 2.0])
    value, (dx, dw) = sd.value_and_grad(fn, (0, 1))(x, w)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    assert x.flags.writeable is not read_only
    np.testing.assert_allclose(value, 10.0 - 2.0 + 6.0)
    np.testing.assert_allclose(dx, [0.0, -1.0, 2.0])
    np.testing.assert_allclose(dw, [10.0, 2.0, 3.0])
    assert sd.function(fn)(x, w) == value
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("read_only", [False, True])
def test_an_unmodelled_write_into_an_argument_is_taken_for_a_write(read_only):
    # a call with no model may write into what it is given: on a differentiated value
    # it is refused; on another, the function runs on a copy, as for a modelled write
    x, w = _array(read_only), np.array([1.0, -1.0, 2.0])
    with pytest.raises(sd.CompileError, match="in place"):
        sd.grad(_writes_unmodelled)(x, w)
    assert sd.function(_writes_unmodelled)(x, w) == 10.0 - 2.0 + 6.0
    np.testing.assert_allclose(sd.grad(_writes_unmodelled, 1)(x, w), [10.0, 2.0, 3.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    t = sd.constant(x)
    with sd.GradientTape() as tape:
        tape.watch(t)
        with pytest.raises(sd.CompileError, match="in place"):
            sd.function(_writes_unmodelled)(t, w)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])


def test_under_a_tape_a_write_leaves_the_callers_array_and_the_gradient():
    f = sd.function(_writes_its_argument)
    x, w = np.array([1.0, 2.0, 3.0]), sd.constant(np.array([1.0, -1.0, 2.0]))
    with sd.GradientTape() as tape:
        tape.watch(w)
        y = f(x, w)
    x[1] = 100.0  # after the call: the gradient reads the array as the call did
    np.testing.assert_allclose(tape.gradient(y, w).numpy(), [10.0, 2.0, 3.0])


def _doubles_its_argument(W, x):
    x[0] = 2 * x[0]  # into a copy; run on that copy again, it would double twice
    return np.tanh(W @ x)


def _ways_to_run_the_forward_pass_again():
    """Every later use of a bridge call that runs the compiled forward pass again, on
    the arguments the call kept: each (name, lambda f, W, x: (y, d/dW, d/dx))."""
    def vectorised_jacobian(f, W, x):
        with sd.GradientTape(persistent=True) as tape:
            tape.watch([W, x])
            y = f(W, x)
        return y, tape.jacobian(y, W), tape.jacobian(y, x)

    def watched_after_the_call(f, W, x):  # the call ran with x inactive
        with sd.GradientTape(persistent=True) as tape:
            tape.watch(W)
            y = f(W, x)
            tape.watch(x)
        return y, tape.jacobian(y, W), tape.jacobian(y, x)

    return [vectorised_jacobian, watched_after_the_call]


@pytest.mark.parametrize("way", _ways_to_run_the_forward_pass_again(),
                         ids=lambda way: way.__name__)
def test_a_write_into_an_argument_is_not_run_twice(way):
    """The values a bridge call keeps for another forward pass are the arguments as
    given, never the copy the first pass wrote into."""
    W0, x0 = np.arange(6.0).reshape(2, 3) / 10, np.array([1.0, 2.0, 3.0])
    W, x = sd.constant(W0), sd.constant(x0)
    y, dW, dx = way(sd.function(_doubles_its_argument), W, x)
    np.testing.assert_allclose(y.numpy(), _doubles_its_argument(W0, x0.copy()))
    np.testing.assert_allclose(dW.numpy(), numerical_jacobian(
        lambda v: _doubles_its_argument(v, x0.copy()), W0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dx.numpy(), numerical_jacobian(
        lambda v: _doubles_its_argument(W0, v.copy()), x0), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(x.numpy(), x0)


# --- what a call under a tape leaves behind ---
@pytest.mark.parametrize("walked", [False, True])
def test_a_call_under_a_tape_leaves_no_reference_cycle(walked):
    """The tape entry's saved values are freed with the tape, not by the cyclic collector
    some calls later (which cost a bridge call more than its backward pass)."""
    f = sd.function(_loss)
    x, a = sd.constant(np.array([0.1, 0.2])), sd.constant(np.array([1.0, 2.0]))

    def call():
        with sd.GradientTape() as tape:
            tape.watch([x, a])
            y = f(x, a)
        if walked:
            tape.gradient(y, [x, a])

    call()  # compiled here
    gc.collect()
    gc.disable()
    try:
        call()
        assert gc.collect() == 0
    finally:
        gc.enable()

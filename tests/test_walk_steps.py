"""Walk steps (srcdiff/walk_steps.py): each rule's backward step generated from its
vjps' syntax gives exactly what calling the vjps one by one gives, for every rule
and example of test_rules; the tape's gradients with and without steps agree, and
agree with finite differences, where ``unbroadcast`` must really sum."""
import itertools

import numpy as np
import pytest

import srcdiff as sd
from srcdiff import tape as tape_module, walk_steps
from srcdiff.rules import rule_of
from srcdiff.rules.registry import Rule
from srcdiff.rules.shapes import concatenate
from test_rules import Arg, cases, draw, random_like
from util import numerical_grad


def by_vjps(rule, g, ans, args, raw, reaches, grads):
    """The step's contract, written out: each reached input's vjp, added up."""
    for i, a in enumerate(args):
        vjp = rule.vjps[i]
        if id(a) in reaches and vjp is not None:
            d = vjp(g, ans, *raw)
            if d is not None:
                previous = grads.get(id(a))
                grads[id(a)] = d if previous is None else previous + d


def same(a, b):
    assert type(a) is type(b)
    if isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b)
        assert np.array_equal(a, b, equal_nan=True)
    else:
        assert a == b or (a != a and b != b)


STEPPED = [c for c in cases()  # calls without keywords, one argument per vjp
           if not c.values[2] and len(c.values[1]) == len(rule_of(c.values[0]).vjps)
           and walk_steps.step_of(rule_of(c.values[0])) is not None]


def test_most_rules_have_a_step():
    """The elementwise rules all do: the tape's commonest records."""
    for fn in (np.add, np.subtract, np.multiply, np.true_divide, np.power, np.sin, np.exp,
               np.tanh, np.negative, np.log, np.maximum, np.sum, np.matmul):
        assert walk_steps.step_of(rule_of(fn)) is not None, fn
    assert len(STEPPED) > 150


@pytest.mark.parametrize("fn, args, kwargs", STEPPED)
def test_a_step_equals_the_vjps_called_one_by_one(fn, args, kwargs):
    """Bit for bit, for every subset of the inputs reached, with and without an
    adjoint already held (broadcast inputs, scalars, complex values included)."""
    rule = rule_of(fn)
    step = walk_steps.step_of(rule)
    rng = np.random.default_rng(0)
    raw = draw(args, rng)
    ans = fn(*raw)
    g = random_like(ans, rng)
    if isinstance(g, np.ndarray):
        g = g.astype(np.result_type(ans))
    inputs = [i for i, a in enumerate(args) if isinstance(a, Arg)]
    args = [object() if isinstance(a, Arg) else a for a in args]  # stand-ins: ids alone
    for held, reached in itertools.product((False, True), itertools.chain.from_iterable(
            itertools.combinations(inputs, n) for n in range(len(inputs) + 1))):
        reaches = {id(args[i]) for i in reached}
        start = {id(args[i]): np.ones(np.shape(raw[i])) for i in reached} if held else {}
        expected, got = dict(start), dict(start)
        by_vjps(rule, g, ans, args, raw, reaches, expected)
        assert step(g, ans, tuple(args), tuple(raw), reaches, got) is None
        assert expected.keys() == got.keys()
        for key in expected:
            same(got[key], expected[key])


def test_a_record_with_more_inputs_than_vjps_is_left_to_the_general_walk():
    step = walk_steps.step_of(rule_of(np.sum))
    x = np.arange(6.0).reshape(2, 3)
    grads = {}
    assert step(np.ones(3), x.sum(0), (x, 0), (x, 0), {id(x)}, grads) is True
    assert grads == {}


def test_rules_whose_vjps_cannot_be_inlined_have_no_step():
    scale = 3.0
    closure = Rule(np.sin, (lambda g, ans, x: g * scale,), "closure")
    varargs = Rule(np.sin, (lambda g, ans, *xs: g,), "varargs")
    builtin = Rule(np.sin, (np.negative,), "builtin")
    for rule in (closure, varargs, builtin):
        assert walk_steps.step_of(rule) is None
    assert walk_steps.step_of(rule_of(concatenate)) is None  # one vjp for every input


def test_a_generated_step_reads_as_the_rule_does():
    source = walk_steps.step_of(rule_of(np.multiply)).source
    assert "_d = _g * _x1" in source and "_d = unbroadcast(_d, _x0)" in source


def fresh_steps(monkeypatch, hot):
    """No rule stepped yet; the walks step once ``hot`` records have been walked."""
    steps = {}
    monkeypatch.setattr(walk_steps, "STEPS", steps)
    monkeypatch.setattr(walk_steps, "_walked", 0)
    monkeypatch.setattr(walk_steps, "STEPPING", False)
    monkeypatch.setattr(walk_steps, "HOT", hot)
    return steps


@pytest.fixture(params=["steps", "vjps"])
def walk(request, monkeypatch):
    """The tape walked with its rules' steps from the first walk, or with every vjp
    called one by one."""
    fresh_steps(monkeypatch, 1 if request.param == "steps" else 10 ** 9)
    return request.param


def program(x, y):
    """Broadcasting where unbroadcast must sum (y of shape (3, 1) against x's (4,)),
    size-1 axes, a 0-d value and a Python float beside Tensors."""
    s = sd.reduce_sum(x)                # 0-d
    z = sd.sin(x) * y + 0.5             # (3, 4): x's adjoint sums rows, y's columns
    w = sd.tanh(z) - sd.exp(-z) * s     # a 0-d factor broadcast to (3, 4)
    return sd.reduce_sum(w * w / (1.0 + y * y))


def analytic(x, y):
    return (numerical_grad(lambda v: program(sd.constant(v), sd.constant(y)).numpy(), x),
            numerical_grad(lambda v: program(sd.constant(x), sd.constant(v)).numpy(), y))


POINT = (np.linspace(-1.0, 1.0, 4), np.array([[0.5], [-0.3], [1.2]]))


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-6), (np.float32, 2e-3)])
def test_gradients_by_steps_match_finite_differences(walk, dtype, rtol):
    x, y = (sd.constant(v.astype(dtype)) for v in POINT)
    with sd.GradientTape() as tape:
        tape.watch([x, y])
        loss = program(x, y)
    dx, dy = tape.gradient(loss, [x, y])
    assert dx.dtype == dtype and dx.shape == (4,) and dy.shape == (3, 1)
    ex, ey = analytic(*POINT)
    np.testing.assert_allclose(dx.numpy(), ex, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(dy.numpy(), ey, rtol=rtol, atol=rtol)


def test_steps_give_the_general_walks_gradients_bit_for_bit(monkeypatch):
    def gradients():
        x, y = (sd.constant(v) for v in POINT)
        with sd.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            loss = program(x, y)
        first = tape.gradient(loss, [x, y])
        again = tape.gradient(loss, [y, x])  # a persistent tape walked twice
        return [g.numpy() for g in first + again]

    fresh_steps(monkeypatch, 10 ** 9)
    unrolled = gradients()
    steps = fresh_steps(monkeypatch, 1)
    stepped = gradients()
    assert rule_of(np.multiply) in steps and rule_of(np.tanh) in steps
    for a, b in zip(stepped, unrolled):
        assert np.array_equal(a, b)
    assert np.array_equal(stepped[0], stepped[3]) and np.array_equal(stepped[1], stepped[2])


def test_the_walks_step_once_the_process_has_walked_many_records(monkeypatch):
    steps = fresh_steps(monkeypatch, 5)
    x = sd.constant(np.array([0.5, 1.5]))
    grads = []
    for _ in range(2):  # three records a walk: the second walk steps
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = sd.reduce_sum(sd.sin(sd.sin(x)))
        grads.append(tape.gradient(y, x).numpy())
        assert (rule_of(np.sin) in steps) == (len(grads) == 2)
    assert steps[rule_of(np.sin)] is not None
    assert np.array_equal(grads[0], grads[1])
    np.testing.assert_allclose(grads[0], np.cos(np.sin(x.numpy())) * np.cos(x.numpy()))


def test_second_derivatives_through_steps(walk):
    """The inner walk runs under the outer tape (rules on Tensors); the outer one on arrays."""
    x = sd.constant(np.array([0.3, -0.7, 1.1]))
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            y = sd.reduce_sum(sd.sin(x) * x)
        dx = inner.gradient(y, x)
        z = sd.reduce_sum(dx * dx)
    h = outer.gradient(z, x)

    def first(v):
        return np.cos(v) * v + np.sin(v)
    expected = numerical_grad(lambda v: np.sum(first(v) ** 2), x.numpy())
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-6)


def test_the_same_tensor_twice_gets_both_adjoints(walk):
    x = sd.constant(np.array([1.0, 2.0]))
    with sd.GradientTape() as tape:
        tape.watch(x)
        y = sd.reduce_sum(x * x + x - x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), 2 * x.numpy() + 0.0)


def test_results_of_other_dtypes_are_not_recorded(walk):
    """No gradient reaches an integer result: the cast back to float is a constant."""
    x = sd.constant(np.array([1.5, 2.5]))
    with sd.GradientTape() as tape:
        tape.watch(x)
        n = sd.cast(x, sd.int32)
        y = sd.reduce_sum(sd.cast(n, sd.float64) * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 2.0])

"""Numbers a loop's adjoints read are recomputed by the backward pass, not stacked.

A loop on Python floats then keeps only what it carries from one iteration to the
next, as hand-written code does.  A value may be recomputed only where its inputs
hold their values from its assignment again; each program below puts that to the
test (compiled == eager == finite differences) beside what the generated code stacks.
"""
import math
import re

import pytest

import srcdiff as sd
from compiler_programs import check_grad
from srcdiff.compiler.cache import CACHE


def stacks(fn, args, wrt):
    """The names the forward pass of ``fn`` for these argument kinds pushes on stacks."""
    active = tuple(i in wrt for i in range(len(args)))
    unit = CACHE.get(fn, active, tuple(isinstance(a, float) for a in args))
    forward = unit.source.split("_backward(")[0]
    return sorted(set(re.findall(r"(\w+)_stack\.append\(", forward)))


def recurrence(x, a):
    y = x
    for i in range(20):
        y = math.sin(y) * a + math.cos(x * y)
    return y


def input_overwritten_before_the_read(x, a):
    y = x
    for i in range(6):
        t = y * y          # t's input, y, changes before t is read
        y = y * a
        y = y + t * a
    return y


def read_before_assigned(x, a):
    y = x
    for i in range(6):
        if i > 0:
            y = y * t      # last iteration's t
        t = y * 0.5 + a
    return y + t


def chain(x, a):
    y = x
    for i in range(6):
        u = y * a
        v = u * u + a      # v reads u: u is recomputed first
        w = v * y
        y = w * 0.25 + u
    return y


def in_a_branch(x, a):
    y = x
    for i in range(8):
        if y > 1.0:
            t = y * a
            y = t * t * 0.5
        else:
            t = y + a
            y = t * y
    return y


def nested(x, a):
    y = x
    for i in range(3):
        s = y * a
        for j in range(3):
            y = y * 0.5 + s * s * 0.1
        y = y + s
    return y


def counter_input(x, a):
    y = x
    for i in range(5):
        k = i * 0.5        # an int input, restored by the backward loop itself
        y = y * (a + k)
    return y


PROGRAMS = [recurrence, input_overwritten_before_the_read, read_before_assigned, chain,
            in_a_branch, nested, counter_input]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_gradients_are_right(fn):
    check_grad(fn, (0.7, 0.9), (0, 1), eager=fn is not recurrence)  # math.* on Tensors


def test_a_float_loop_stacks_only_what_it_carries():
    assert stacks(recurrence, (0.7, 0.9), (0, 1)) == ["y"]
    assert stacks(chain, (0.7, 0.9), (0, 1)) == ["y"]


def test_a_value_whose_input_changes_before_its_read_is_stacked():
    assert "t" in stacks(input_overwritten_before_the_read, (0.7, 0.9), (0, 1))


def test_a_value_read_before_its_assignment_is_stacked():
    assert "t" in stacks(read_before_assigned, (0.7, 0.9), (0, 1))


def test_the_backward_pass_recomputes_before_the_first_read():
    source = CACHE.get(recurrence, (True, True), (True, True)).source
    backward = source.split("_backward(")[1]
    lines = [line.strip() for line in backward.splitlines()]
    # y_3 = x * y: recomputed once y is restored, before the adjoint that reads it
    recompute = lines.index("y_3 = x * y")
    assert lines.index("y = y_stack.pop()") < recompute
    assert recompute < next(k for k, line in enumerate(lines) if "math.sin(y_3)" in line)


def test_arrays_are_never_recomputed():
    import numpy as np

    def rnn(W, h):
        for t in range(4):
            h = np.tanh(W @ h)
        return np.sum(h)

    W, h = np.eye(3) * 0.5, np.ones(3)
    check_grad(rnn, (W, h), 0)
    assert stacks(rnn, (W, h), (0,)) == ["h"]
    source = CACHE.get(rnn, (True, False), (False, False)).source
    code = [line for line in source.splitlines() if not line.strip().startswith("#")]
    assert sum("np.tanh(" in line for line in code) == 1  # in the forward pass only
    assert sd.grad(rnn)(W, h).shape == (3, 3)

"""Activity: a name gets an adjoint only if it is varied (depends on an active
input) and useful (the result depends on it)."""
import math

import numpy as np

from compiler_passes import facts_of
from srcdiff.compiler.analysis import activity, varied_names


def mixed(x, data):
    scale = np.sum(data)          # not varied: data is not active
    h = np.tanh(x) * scale        # varied and useful
    unused = np.exp(x)            # varied, not useful
    n = len(data)                 # an int
    out = np.sum(h) / n
    return out


def test_active_is_varied_and_useful():
    facts = facts_of(mixed)
    active = activity(facts, ["x"])
    assert {"h", "out"} <= active
    assert not {"scale", "unused", "n", "data"} & active
    assert "unused" in varied_names(facts, ["x"])


def test_nothing_is_active_without_an_active_input():
    facts = facts_of(mixed)
    assert activity(facts, []) == set()


def chain(x):
    a = x
    for _ in range(200):
        a = a * 1.01
    b = a + 1.0
    return b


def test_activity_flows_through_loops_and_copies():
    facts = facts_of(chain)
    assert {"a", "b"} <= activity(facts, ["x"])


def through_a_branch(x, flag):
    y = 0.0
    if flag > 0:
        y = x * 2.0
    z = y + 1.0
    return math.sin(z)


def test_activity_reaches_through_one_arm():
    facts = facts_of(through_a_branch, numbers=("x", "flag"))
    active = activity(facts, ["x"])
    assert {"y", "z"} <= active and "flag" not in active

"""Adjoint states as a dataflow: what one contribution does to a state, how branches
join, and the head state a loop's reversed body starts every iteration with."""
import numpy as np

from compiler_passes import reverse_of
from srcdiff.compiler.adjoint_state import (ARITHMETIC, ITEM, OTHER, OWNED, SCATTER, SET,
                                            UNSET, advance, join)


def test_the_first_contribution_assigns_and_a_fresh_array_is_owned():
    state, acc = {}, set()
    assert advance(state, acc, "x", ARITHMETIC, OWNED) == "assign"
    assert state["x"] == OWNED
    assert advance(state, acc, "x", OTHER, OWNED) == "iadd"   # into our own array
    assert acc == set()


def test_an_adjoint_that_may_share_its_array_is_added_out_of_place():
    state, acc = {}, set()
    assert advance(state, acc, "x", OTHER, OWNED) == "assign"   # dx = g: g's array
    assert state["x"] == SET
    assert advance(state, acc, "x", ARITHMETIC, OWNED) == "add"
    assert state["x"] == OWNED and acc == {"x"}


def test_a_number_is_never_owned():
    state, acc = {}, set()
    advance(state, acc, "t", ARITHMETIC, SET)
    assert state["t"] == SET


def test_list_items_and_scatters():
    state, acc = {}, set()
    assert advance(state, acc, "xs", ITEM, OWNED) == "zeros+item"
    assert advance(state, acc, "xs", ITEM, OWNED) == "item"
    state = {"x": OWNED}
    assert advance(state, acc, "x", SCATTER, OWNED) == "scatter"
    state = {"x": SET}
    assert advance(state, acc, "x", SCATTER, OWNED, dense=ARITHMETIC) == "add"


def test_a_join_zeroes_what_one_arm_left_unset():
    merged, zero_a, zero_b = join({"x": OWNED}, {"y": SET}, lambda name: OWNED)
    assert merged == {"x": OWNED, "y": SET}
    assert zero_a == ["y"] and zero_b == ["x"]
    assert join({"x": SET}, {"x": OWNED}, lambda name: OWNED)[0] == {"x": SET}
    assert join({"x": UNSET}, {}, lambda name: OWNED)[0] == {}


def nested(x):
    y = x
    for i in range(2):
        for j in range(2):
            for k in range(2):
                y = np.sin(y) * 0.9 + x
    return np.sum(y)


def test_nested_loops_are_each_emitted_once():
    # the generated backward pass has one reversed loop per forward loop, and the
    # flow found each loop's head from one analysis per entry state
    pair = reverse_of(nested)
    loops = [n for s in pair.backward for n in _walk(s) if type(n).__name__ == "For"]
    assert len(loops) == 3


def _walk(node):
    import gast
    return gast.walk(node)

"""Planning: a value is saved iff some adjoint reads it after it was overwritten;
inside loops on a stack, outside in a variable of its own; cheap operations on
numbers in loops are recomputed instead; a branch replayed only to restore a
value has its condition planned for too."""
import math

import numpy as np

from compiler_passes import assigned, reverse_of


def saved(pair):
    """name -> sorted kinds of the saves the plan makes for it."""
    out = {}
    for (_, name), (kind, _) in pair.plan.saves.items():
        out.setdefault(name, []).append(kind)
    return {name: sorted(kinds) for name, kinds in out.items()}


def overwritten_after_a_read(x):
    y = np.sin(x)
    z = y * x          # z's adjoint reads y
    y = np.cos(x)      # ... which this overwrites
    return np.sum(z + y)


def test_a_value_read_before_it_is_overwritten_is_saved_in_a_variable():
    assert saved(reverse_of(overwritten_after_a_read)) == {"y": ["name"]}


def read_only_by_its_own_adjoint(x):
    y = x * 2.0
    z = y + 1.0        # its adjoint reads nothing of y
    y = np.exp(x)      # its adjoint reads the new y only: the old one is never read
    return np.sum(y * z)


def test_no_save_for_a_value_only_its_own_adjoint_reads():
    assert saved(reverse_of(read_only_by_its_own_adjoint)) == {}


def never_overwritten(x, W):
    h = np.tanh(W @ x)
    return np.sum(h * h)


def test_nothing_saved_in_straight_line_code_without_overwrites():
    pair = reverse_of(never_overwritten)
    assert saved(pair) == {} and pair.plan.stacks == []


def rnn(W, xs, h):
    for t in range(3):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def test_a_value_overwritten_in_a_loop_goes_on_one_stack():
    pair = reverse_of(rnn, wrt=["W"])
    kinds = saved(pair)
    assert kinds["h"] == ["stack"]
    assert pair.plan.stacks == ["h_stack"] or "h_stack" in pair.plan.stacks


def scalar_loop(x, a):
    y = x
    for i in range(5):
        y = math.sin(y) * a + math.cos(x * y)
    return y


def test_numbers_computed_in_a_loop_are_recomputed_not_stacked():
    pair = reverse_of(scalar_loop, numbers=("x", "a"))
    assert set(saved(pair)) == {"y"}     # only what the loop carries
    assert pair.plan.recomputed          # sin(y), x * y, ... are re-run
    assert not pair.plan.recomputed & {"y", "x", "a"}


def read_in_the_other_arm(x, data, flag):
    y = np.sin(data)
    if flag > 0:
        z = x * y          # x's adjoint reads y
    else:
        y = np.cos(data)   # overwritten in the other arm only
        z = x * 2.0
    return np.sum(z)


def read_after_the_branch(x, data, flag):
    y = np.sin(data)
    if flag > 0:
        y = np.cos(data)
    z = x * y
    w = x * y
    y = np.tanh(data)
    return np.sum(z * w)


def test_a_read_in_the_other_arm_of_a_branch_needs_no_save():
    assert saved(reverse_of(read_in_the_other_arm, wrt=["x"])) == {}
    # but a read that follows the branch needs the values the branch overwrote
    assert saved(reverse_of(read_after_the_branch, wrt=["x"])) == {"y": ["name"]}


def restored_in_a_branch(a, b):
    y = a
    c = 1.0
    for i in range(4):
        if i == 1:
            c = 3.0    # no adjoint of its own: the branch is replayed to restore c
        y = math.sin(y) * b * c
    return y


def test_a_branch_replayed_only_to_restore_reads_its_condition():
    pair = reverse_of(restored_in_a_branch, numbers=("a", "b"))
    assert "c" in saved(pair)
    branch = next(s for s in pair.facts.statements.values()
                  if type(s).__name__ == "If")
    condition = branch.test.id
    assert id(branch) in pair.plan.reads_at.get(condition, set())
    assert condition in saved(pair)   # the condition is overwritten every iteration


def exp_sin_tanh(x):
    y = np.exp(x)      # its adjoint reads its result, which the next line overwrites
    y = np.sin(y)      # reads its input: the exp's result, saved here
    y = np.tanh(y)     # reads its result only: the sin's result is read by nobody
    return np.sum(y)


def test_only_the_value_an_adjoint_reads_is_saved():
    """A rebinding's restore is planned only for reads of the value it overwrites:
    not for its own adjoint's reads of its result, nor for earlier reads that a
    rebinding in between restores for them (issue 11: no dead saves)."""
    pair = reverse_of(exp_sin_tanh)
    exp, sin, tanh = assigned(pair.facts, "y")
    assert set(pair.plan.saves) == {(id(sin), "y")}


def rebound_in_one_arm(x, flag):
    y = np.exp(x)          # reads its result: the value before tanh if the arm is skipped
    if flag > 0:
        y = y * 2.0        # rebinds y on one path only
    y = np.tanh(y)
    return np.sum(y)


def test_a_rebinding_on_one_path_only_restores_nothing_for_the_other():
    pair = reverse_of(rebound_in_one_arm, wrt=["x"])
    exp, doubled, tanh = assigned(pair.facts, "y")
    assert (id(tanh), "y") in pair.plan.saves
    assert (id(doubled), "y") in pair.plan.saves

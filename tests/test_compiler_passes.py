"""Small passes of the compiler on hand-written input: fresh names, liveness, copy
propagation and the activity fixpoint (each linear in the code's size; here, what
they compute)."""
import gast

from srcdiff.compiler import syntax as S
from srcdiff.compiler.analysis import _grow
from srcdiff.compiler.names import Names
from srcdiff.compiler.optimize import live_names, propagate_copies


def test_fresh_names_take_the_smallest_free_suffix():
    names = Names({"h", "h_1", "h_3"})
    assert [names.fresh("h"), names.fresh("h"), names.temp("h"), names.fresh("x")] == [
        "h_2", "h_4", "h_5", "x"]
    assert names.temp("x") == "x_1" and names.fresh("_x_") == "x_2"


def code(text):
    return S.stmts(text)


def test_live_names_of_nested_loops_and_branches():
    block = code(
        "for i in range(n):\n"
        "    for j in range(m):\n"
        "        y = z * w\n"
        "        z = y\n"
        "    if c:\n"
        "        u = 1\n"
        "    else:\n"
        "        u = 2\n"
        "        v = 3\n"
        "    t = u + v\n"
        "r = t + i\n")
    # z is read before the assignment on a later iteration; v only on one path; the
    # loops may not run, so t and i may come from outside
    assert live_names(block) == {"range", "n", "m", "z", "w", "c", "v", "t", "i"}


def source(block):
    return "\n".join(gast.dump(s) for s in block)


def test_copies_are_propagated_where_safe():
    block = code("a = b\nc = a * 2\nd = a + c\ne = d\n")
    propagate_copies(block, {"a", "e"})  # e is never read: its copy just goes
    assert source(block) == source(code("c = b * 2\nd = b + c\n"))


def test_copies_stay_when_the_source_changes_or_the_copy_is_read_elsewhere():
    changed = code("a = b\nb = 3\nc = a\n")
    propagate_copies(changed, {"a"})
    assert source(changed) == source(code("a = b\nb = 3\nc = a\n"))
    nested = code("if k:\n    a = b\n    c = a\nd = a\n")
    propagate_copies(nested, {"a"})
    assert source(nested) == source(code("if k:\n    a = b\n    c = a\nd = a\n"))


def test_grow_follows_edges_listed_in_any_order():
    chain = [({f"v{k}"}, {f"v{k + 1}"}) for k in reversed(range(50))]
    assert _grow({"v0"}, chain) == {f"v{k}" for k in range(51)}
    assert _grow({"v3"}, chain) == {f"v{k}" for k in range(3, 51)}

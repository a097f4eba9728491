"""In-place updates of an object another name shares (compiler/aliasing.py,
``check_updates``).

``t += v`` on an array changes it in place in NumPy, so every name and container
sharing it changes too; the generated code rebinds ``t`` to ``t + v``.  Where another
name that may share the array is read after the update, the two would differ: the
value and the gradient were silently wrong (a row of a matrix, an array held by a list
or dict, the loop variable over a list of arrays, what a helper returns of its
arguments).  Those programs are refused; updates nothing else sees are differentiated
as before.  So are writes ``x[i] = v`` into memory another name shares by more than one
view or copy (``check_shared_writes``; one view is check_views' to follow)."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad

X = np.array([0.3, -0.7, 1.1])


def a_row_updated_through_its_name(x):
    m = np.outer(x, x)
    r = m[0]
    r *= 2.0
    return np.sum(m * x)


def a_row_at_a_variable_index(x):
    m = np.outer(x, x)
    i = 1
    r = m[i]
    r += x
    return np.sum(m * x)


def the_rows_of_a_loop(x):
    m = np.outer(x, x)
    for row in m:
        row *= 2.0
    return np.sum(m * x)


def the_items_of_a_loop_over_a_list(x):
    xs = [x * 1.0, x * 2.0]
    for e in xs:
        e += x
    return np.sum(xs[0] * xs[1])


def an_item_of_a_list_by_name(x):
    y = x * 1.0
    xs = [y]
    t = xs[0]
    t *= 2.0
    return np.sum(y * x)


def an_item_of_a_list_read_back(x):
    xs = [x * 1.0, x * 2.0]
    t = xs[0]
    t *= 2.0
    return np.sum(xs[0] * x)


def an_item_unpacked(x):
    xs = [x * 1.0, x * 2.0]
    a, b = xs
    a += x
    return np.sum(xs[0] * b)


def a_name_held_by_a_list(x):
    y = x * 1.0
    xs = [y]
    y += 1.0
    return np.sum(xs[0] * x)


def a_dict_item_shared_with_a_name(x):
    w = x * 1.0
    d = {"w": w}
    d["w"] -= 0.1 * x
    return np.sum(w * x)


def a_list_item_shared_with_a_name(x):
    y = x * 1.0
    xs = [y, x * 2.0]
    xs[0] *= 3.0
    return np.sum(y * xs[1])


def a_dict_item_read_by_name(x):
    d = {"a": x * 1.0}
    a = d["a"]
    a += x
    return np.sum(d["a"] * x)


def an_item_of_a_list_of_numbers_replaced_through_another_name(x):
    xs = [x[0], x[1]]
    ys = xs
    ys[0] = x * 1.0
    t = xs[0]
    t += x
    return np.sum(ys[0] * x)


def first(xs):
    return xs[0]


def itself(a):
    return a


def packed(a, b):
    return [a, b * 2.0]


def an_item_a_helper_returns(x):
    xs = [x * 1.0, x * 2.0]
    t = first(xs)
    t += x
    return np.sum(xs[0] * x)


def an_argument_a_helper_returns(x):
    y = x * 1.0
    t = itself(y)
    t *= 3.0
    return np.sum(y * x)


def a_list_a_helper_builds(x):
    y = x * 1.0
    xs = packed(y, x)
    t = xs[0]
    t -= x ** 2
    return np.sum(y * x)


SHARED = [a_row_updated_through_its_name, a_row_at_a_variable_index, the_rows_of_a_loop,
          the_items_of_a_loop_over_a_list, an_item_of_a_list_by_name,
          an_item_of_a_list_read_back, an_item_unpacked, a_name_held_by_a_list,
          a_dict_item_shared_with_a_name, a_list_item_shared_with_a_name,
          a_dict_item_read_by_name, an_item_of_a_list_of_numbers_replaced_through_another_name,
          an_item_a_helper_returns, an_argument_a_helper_returns, a_list_a_helper_builds]


def _rebinding(fn, x):
    """``fn``'s value with each ``op=`` rebinding its target, as generated code does:
    the update's own array is copied first, so nothing else sees the change."""
    import ast
    import inspect
    import textwrap
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))

    class Rebind(ast.NodeTransformer):
        def visit_AugAssign(self, node):
            load = ast.fix_missing_locations(ast.parse(ast.unparse(node.target), mode="eval")).body
            return ast.copy_location(ast.Assign(targets=[node.target], value=ast.BinOp(
                left=load, op=node.op, right=node.value)), node)

    tree = ast.fix_missing_locations(Rebind().visit(tree))
    space = dict(globals())
    exec(compile(tree, "<rebound>", "exec"), space)
    return space[fn.__name__](x.copy())


@pytest.mark.parametrize("fn", SHARED, ids=lambda f: f.__name__)
def test_an_update_another_name_sees_is_refused(fn):
    # the program's value depends on the update being in place: rebinding differs
    assert not np.isclose(fn(X.copy()), _rebinding(fn, X))
    with pytest.raises(sd.CompileError, match="memory that two values share"):
        sd.grad(fn)(X)


def a_fresh_array(x):
    a = x * 1.0
    a *= x
    a += 1.0
    return np.sum(a)


def the_items_of_an_unshared_dict(x):
    d = {"w": x * 1.0, "b": x ** 2}
    d["w"] -= 0.1 * x
    d["b"] *= x
    return np.sum(d["w"] * d["b"])


def an_item_of_an_unshared_list(x):
    xs = [x, x * 2.0]
    xs[0] = xs[0] * 3.0
    xs[1] += x
    return np.sum(xs[0] * xs[1])


def a_list_extended(x):
    out = [x]
    out += [x * 2.0]
    return np.sum(out[1] * x) + np.sum(x)


def an_element_of_a_vector(x):
    y = x * 1.0
    e = y[0]
    e += 5.0
    return np.sum(y * x) + e


def a_number_from_a_list_of_numbers(x):
    xs = [x[0] * 2.0, x[1]]
    t = xs[0]
    t += x[2]
    return t * xs[1]


def the_numbers_of_a_loop_over_a_list(x):
    xs = [x[0] * 2.0, x[1]]
    s = 0.0
    for e in xs:
        e += x[2]
        s = s + e * e
    return s + xs[0]


def rows_updated_in_an_array(x):
    out = np.zeros((3, 3))
    for i in range(3):
        out[i] += x * i
        out[i] *= x
    return np.sum(out ** 2)


def layer(x, w):
    return np.tanh(x * w)


def a_fresh_result_of_a_helper(x):
    w = x * 0.5
    h = layer(x, w)
    h += w
    return np.sum(h * w) + np.sum(x * w)


UNSHARED = [a_fresh_array, the_items_of_an_unshared_dict, an_item_of_an_unshared_list,
            a_list_extended, an_element_of_a_vector, a_number_from_a_list_of_numbers,
            the_numbers_of_a_loop_over_a_list, rows_updated_in_an_array,
            a_fresh_result_of_a_helper]


@pytest.mark.parametrize("fn", UNSHARED, ids=lambda f: f.__name__)
def test_an_update_nothing_else_sees_is_differentiated(fn):
    check_grad(fn, (X.copy(),), eager=fn is not rows_updated_in_an_array)


# --- writes (x[i] = v) into memory shared other than by one view or copy ------------

def a_write_through_a_view_of_a_view(x):
    b = x * 1.0
    a = b[1:]
    c = a[:1]
    c[0] = 5.0
    return np.sum(b * x)


def a_write_seen_through_a_view_of_a_view(x):
    b = x * 1.0
    a = b[::-1]
    c = a.reshape(3, 1)
    b[0] = 7.0
    return np.sum(c[:, 0] * x)


def a_write_through_a_copy_of_a_copy(x):
    b = x * 1.0
    a = b
    c = a
    c[1] = 3.0
    return np.sum(b * x)


def a_write_into_an_item_of_a_list(x):
    y = x * 1.0
    xs = [y]
    t = xs[0]
    t[1] = 5.0
    return np.sum(y * x)


def a_write_into_what_a_helper_returns(x):
    y = x * 1.0
    t = first([y])
    t[0] = 7.0
    return np.sum(y * x)


def a_write_into_an_array_a_list_holds(x):
    y = x * 1.0
    xs = [y]
    y[2] = 4.0
    return np.sum(xs[0] * x)


WRITES = [a_write_through_a_view_of_a_view, a_write_seen_through_a_view_of_a_view,
          a_write_through_a_copy_of_a_copy, a_write_into_an_item_of_a_list,
          a_write_into_what_a_helper_returns, a_write_into_an_array_a_list_holds]


@pytest.mark.parametrize("fn", WRITES, ids=lambda f: f.__name__)
def test_a_write_another_name_sees_is_refused(fn):
    with pytest.raises(sd.CompileError, match="memory that two values share"):
        sd.grad(fn)(X)


def a_slot_of_a_list_replaced(x):
    y = x * 2.0
    xs = [y, x]
    xs[0] = xs[0] * 3.0
    return np.sum(xs[0] * y)


def a_buffer_and_its_rows(x):
    out = np.zeros((4, 3))
    out[0] = x
    for t in range(3):
        h = out[t]
        out[t + 1] = np.sin(h) * x
    return np.sum(out ** 2)


@pytest.mark.parametrize("fn", [a_slot_of_a_list_replaced, a_buffer_and_its_rows],
                         ids=lambda f: f.__name__)
def test_a_write_nothing_else_sees_is_differentiated(fn):
    check_grad(fn, (X.copy(),), eager=fn is a_slot_of_a_list_replaced)


# --- t += v on a name the compiler cannot prove a number: checked when it runs ------

def scaled(a):
    return a * 2.0


def an_item_of_a_helpers_result(x):
    y = scaled(x)       # its rank is not known when compiled: y[0] may be a row
    t = y[0]
    t += np.sum(y)
    return t * np.sum(y)


def test_an_update_of_what_may_be_a_number_runs_when_it_is_one():
    check_grad(an_item_of_a_helpers_result, (X.copy(),))


def test_an_update_of_what_may_be_a_number_is_refused_when_it_is_an_array():
    m = np.outer(X, X)
    assert not np.allclose(an_item_of_a_helpers_result(m.copy()),
                           _rebinding(an_item_of_a_helpers_result, m))
    with pytest.raises(sd.CompileError, match="updates an array in place"):
        sd.grad(lambda_free_sum)(m)


def lambda_free_sum(m):
    return np.sum(an_item_of_a_helpers_result(m))

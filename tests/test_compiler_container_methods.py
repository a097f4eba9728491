"""``list.pop``, ``list.insert``, ``dict.update`` (mutators.py) and ``functools.reduce``
(folds.py): compiled == eager == finite differences, and what stays refused."""
import functools
import operator

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad

X = np.array([0.3, -0.7, 1.1, 0.5])


def times(a, b):
    return a * b


def pop_last_as_a_value(x):
    xs = [x[0], x[1], x[2]]
    last = xs.pop()
    return last * sum(xs) + len(xs)


def pop_first_as_a_statement(x):
    xs = [x[0], x[1] * 2.0, np.sin(x[2])]
    xs.pop(0)
    return xs[0] * xs[1]


def pop_negative_and_middle(x):
    xs = [x[0], x[1], x[2], x[3]]
    a = xs.pop(-2)
    b = xs.pop(1)
    return a * b + xs[0] * xs[-1] ** 2


def pop_at_an_index_computed(x):
    xs = [x[0], x[1], x[2], x[3] * 3.0]
    i = len(xs) - 4
    j = -len(xs) + 1
    a = xs.pop(i)
    b = xs.pop(j)
    return a * b * xs[0] * xs[1]


def pop_in_a_loop(x):
    xs = [x[0], x[1], x[2], x[3]]
    s = 0.0
    while xs:
        last = xs.pop()
        s = s * x[0] + last
    return s


def pop_and_append_as_a_stack(x):
    xs = [x[0]]
    for i in range(1, 4):
        top = xs.pop()
        xs.append(top * x[i])
        xs.append(np.sin(top))
    return sum(xs) * xs[0]


def pop_of_rows_into_tuple_targets(x):
    m = np.outer(x, x)
    xs = [(m[0], m[1]), (m[2], m[3])]
    a, b = xs.pop(0)
    return np.sum(a * b) + np.sum(xs[0][0])


def insert_at_0_and_at_the_end(x):
    xs = [x[0]]
    xs.insert(0, x[1] * 3.0)
    xs.insert(len(xs), np.exp(x[2]))
    xs.insert(-1, x[3])
    xs.insert(100, x[0] * x[1])
    return xs[0] * xs[1] + xs[2] * xs[3] - xs[4]


def insert_of_arrays_in_a_loop(x):
    xs = [x]
    for i in range(3):
        xs.insert(i % 2, xs[-1] * x[i])
    return np.sum(xs[0] * xs[1]) + np.sum(xs[2] + xs[3])


def update_overwriting_keys(x):
    d = {"a": x[0], "b": x[1]}
    d.update({"b": d["a"] * 2.0, "c": x[2]}, a=np.sin(x[3]))
    return d["a"] * d["b"] + d["c"] * d["a"]


def update_of_arrays_in_a_loop(x):
    d = {"w": x}
    for i in range(3):
        d.update(w=d["w"] * x[i], v=np.tanh(d["w"]))
    return np.sum(d["w"] + d["v"])


def reduce_lambda(x):
    return functools.reduce(lambda a, b: a * b + a, [x[0], x[1], x[2]])


def reduce_lambda_with_initial(x):
    a = 2.0  # the lambda's parameters are its own
    return functools.reduce(lambda a, v: a * v, x, a) + a


def reduce_named_function(x):
    return functools.reduce(times, (x[0], x[1], np.exp(x[2])))


def reduce_operator_over_arrays(x):
    m = np.outer(x, x)
    return np.sum(functools.reduce(operator.add, [m, m * x, np.sin(m)]))


def reduce_operator_mul_with_initial(x):
    return functools.reduce(operator.mul, [x[0], x[1]], x[2]) + functools.reduce(
        operator.mul, [], x[3])


def reduce_one_item(x):
    return functools.reduce(times, [x[0] * 2.0])


def reduce_in_a_loop(x):
    s = 0.0
    for i in range(3):
        s = s + functools.reduce(lambda a, b: a - b * x[i], [x[i], x[i + 1]])
    return s


GRADS = [pop_last_as_a_value, pop_first_as_a_statement, pop_negative_and_middle,
         pop_at_an_index_computed, pop_in_a_loop, pop_and_append_as_a_stack,
         pop_of_rows_into_tuple_targets, insert_at_0_and_at_the_end,
         insert_of_arrays_in_a_loop, update_overwriting_keys, update_of_arrays_in_a_loop,
         reduce_lambda, reduce_lambda_with_initial, reduce_named_function,
         reduce_operator_over_arrays, reduce_operator_mul_with_initial, reduce_one_item,
         reduce_in_a_loop]


@pytest.mark.parametrize("fn", GRADS, ids=lambda f: f.__name__)
def test_differentiated_as_python_runs_it(fn):
    check_grad(fn, (X.copy(),))


def pop_from_empty(x):
    xs = [x[0]]
    xs.pop()
    last = xs.pop()
    return last * x[1]


def pop_out_of_range(x):
    xs = [x[0], x[1]]
    v = xs.pop(2)
    return v * x[1]


def reduce_of_nothing(x):
    return functools.reduce(operator.add, []) * x[0]


@pytest.mark.parametrize("fn, error", [(pop_from_empty, IndexError),
                                       (pop_out_of_range, IndexError),
                                       (reduce_of_nothing, TypeError)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_raises_where_python_raises(fn, error):
    with pytest.raises(error):
        fn(X.copy())
    with pytest.raises(error):
        sd.grad(fn)(X.copy())


def pop_from_an_argument(xs):
    last = xs.pop()
    return last * 2.0


def pop_from_a_list_another_name_holds(x):
    xs = [x[0], x[1]]
    ys = xs
    xs.pop()
    return sum(ys)


def insert_into_a_list_read_whole_before(x):
    xs = [x[0], x[1]]
    s = sum(xs)
    xs.insert(0, x[2])
    return s * xs[0]


def pop_from_a_comprehension(x):
    xs = [v * 2.0 for v in x]
    last = xs.pop()
    return last * x[0]


def update_of_a_dict_packed_before(x):
    d = {"a": x[0]}
    pair = [d]
    d.update(a=x[1])
    return pair[0]["a"]


def update_from_pairs(x):
    d = {"a": x[0]}
    d.update([("a", x[1])])
    return d["a"]


def pop_inside_an_expression(x):
    xs = [x[0], x[1]]
    return x[2] * xs.pop()


def pop_in_a_loop_over_the_list(x):
    xs = [x[0], x[1], x[2]]
    s = 0.0
    for v in xs:
        s = s + v * xs.pop()
    return s


def pop_from_a_dict(x):
    d = {"a": x[0], "b": x[1]}
    v = d.pop("a")
    return v * d["b"]


def reduce_lambda_with_a_default(x):
    return functools.reduce(lambda a, b=1.0: a * b, [x[0], x[1]])


@pytest.mark.parametrize("fn, says", [
    (pop_from_a_list_another_name_holds, "before a later xs.pop"),
    (insert_into_a_list_read_whole_before, "before a later xs.insert"),
    (pop_from_a_comprehension, "did not make as a literal"),
    (update_of_a_dict_packed_before, "before a later d.update"),
    (update_from_pairs, "dict literal or keywords"),
    (pop_inside_an_expression, "inside an expression"),
    (pop_in_a_loop_over_the_list, "pop"),
    (reduce_lambda_with_a_default, "only lambda a, b"),
    (pop_from_a_dict, "pop(...) on a dict"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_refused_with_what_to_write_instead(fn, says):
    with pytest.raises(sd.CompileError) as info:
        sd.grad(fn)(X.copy())
    assert says in str(info.value) and info.value.hint


def test_pop_from_an_argument_is_refused():
    with pytest.raises(sd.CompileError, match="did not make as a literal"):
        sd.grad(pop_from_an_argument)([1.0, 2.0])

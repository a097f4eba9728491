"""What a ``for`` loop iterates over (normalize.py runs ``for x in xs`` by position,
``x = xs[i]``; runtime.Positions checks, when the loop is reached, that positions
give what iteration gives).

A dict iterates over its keys, not ``d[0], d[1], ...``: a loop over a dict crashed
with a KeyError, or, with int keys, silently read the values in place of the keys.
Sets, iterators and dict views have no positions.  These are refused with a
CompileError at the loop; the sequences positions do enumerate are differentiated.
``for k in d`` runs over the keys where ``d`` is evidently a dict (made by a dict
display just before, or read as ``d[k]`` in the body), and runtime.Keys refuses
anything else there, as runtime.Positions refuses a dict in a loop by position.
``list(d)`` and ``tuple(d)`` hold a dict's keys, which carry no gradient even when
they are ints (the rule gave the adjoint of key ``k`` to the value at ``d[k]``)."""
import collections

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad, finite_difference

X = np.array([0.3, -0.7, 1.1])
PARAMS = {"a": np.array([1.0, 2.0, 3.0]), "b": np.array([0.5, 0.5, -1.0])}


def over_a_dict_argument(x, params):
    s = 0.0
    for k in params:
        s = s + np.sum(params[k] * x)
    return s


def over_a_dict_with_int_keys(x):
    d = {0: x * 2.0, 1: x * 3.0}
    s = 0.0
    for k in d:
        s = s + k * np.sum(x)
    return s


def over_a_dict_made_by_a_call(x):  # not evidently a dict: run by position, refused
    d = dict(zip([0, 1], [x * 2.0, x * 3.0]))
    s = 0.0
    for k in d:
        s = s + k * np.sum(x)
    return s


def over_a_set(x):
    s = 0.0
    for k in {1, 2}:
        s = s + x[k] * k
    return s


def over_a_dict_view(x):
    d = {"a": x * 2.0, "b": x * 3.0}
    vs = d.values()
    s = 0.0
    for v in vs:
        s = s + np.sum(v ** 2)
    return s


def over_a_generator(x):
    s = 0.0
    for v in (x[i] * 2.0 for i in range(3)):
        s = s + v * v
    return s


def enumerate_a_dict(x):
    d = {0: x, 1: x * 2.0}
    s = 0.0
    for i, k in enumerate(d):
        s = s + (i + k) * np.sum(x)
    return s


def zip_a_dict(x):
    d = {0: x, 1: x * 2.0}
    s = 0.0
    for k, v in zip(d, [x, x]):
        s = s + k * np.sum(v)
    return s


def reversed_a_dict(x):
    d = {0: x, 1: x * 2.0}
    s = 0.0
    for k in reversed(d):
        s = s + k * np.sum(x) + s
    return s


REFUSED = [over_a_dict_made_by_a_call, over_a_set, enumerate_a_dict, zip_a_dict,
           reversed_a_dict]


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_a_loop_over_what_positions_do_not_enumerate_is_refused(fn):
    with pytest.raises(sd.CompileError, match="runs over the positions") as error:
        sd.grad(fn)(X)
    assert "for " in error.value.line  # it points at the loop


@pytest.mark.parametrize("fn", [over_a_dict_view, over_a_generator], ids=lambda f: f.__name__)
def test_a_loop_over_a_view_or_a_generator_is_refused(fn):
    with pytest.raises(sd.CompileError):
        sd.grad(fn)(X)


def over_the_keys_in_loops_and_branches(x, params):
    d = {"c": x * 0.5}
    d["b"] = np.sin(x)  # insertion order: c, then b
    s = 0.0
    for j in range(2):
        for k in d:
            if k == "c":
                s = s + np.sum(d[k] * params["a"]) * (j + 1.0)
            else:
                d[k] = d[k] * s  # a store by the loop's key: the keys stay as they are
        for k in params:
            s = s * 0.5 + np.sum(np.tanh(params[k] * x))
    return s + np.sum(d["b"])


@pytest.mark.parametrize("fn, args", [
    (over_a_dict_argument, (X, PARAMS)),
    (over_a_dict_with_int_keys, (X,)),
    (over_the_keys_in_loops_and_branches, (X, PARAMS)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_a_loop_over_the_keys_of_a_dict_is_differentiated(fn, args):
    check_grad(fn, args)
    np.testing.assert_allclose(sd.function(fn)(*args), fn(*args), rtol=1e-12)


def test_the_keys_of_a_dict_argument_get_the_gradients_of_its_items():
    g = sd.grad(over_the_keys_in_loops_and_branches, wrt=1)(X, PARAMS)
    assert list(g) == list(PARAMS)
    for k in PARAMS:
        def of_item(v, k=k):
            return over_the_keys_in_loops_and_branches(X, {**PARAMS, k: v})
        np.testing.assert_allclose(g[k], finite_difference(of_item, (PARAMS[k],), 0),
                                   rtol=1e-5, atol=1e-6)


def over_a_list_by_its_items(x, xs):
    s = 0.0
    for k in xs:
        s = s + np.sum(xs[k] * x)
    return s


def test_a_loop_reading_a_list_by_its_items_is_refused_when_it_runs():
    with pytest.raises(sd.CompileError, match="keys of a dict.*not a list") as error:
        sd.grad(over_a_list_by_its_items)(X, [1, 0])
    assert error.value.hint


def adds_a_key(x):
    d = {"a": x, "b": x * 2.0}
    for k in d:
        d[k + "2"] = d[k] * 3.0
    return np.sum(d["a"])


def adds_a_key_in_a_loop_over_items(x):
    d = {"a": x, "b": x * 2.0}
    for k, v in d.items():
        d["n"] = v
    return np.sum(d["a"])


def removes_a_key(x):
    d = {"a": x, "b": x * 2.0}
    s = 0.0
    for k in d.keys():
        s = s + np.sum(d[k])
        d.pop("a")
    return s


@pytest.mark.parametrize("fn", [adds_a_key, adds_a_key_in_a_loop_over_items, removes_a_key],
                         ids=lambda f: f.__name__)
def test_a_loop_over_keys_that_it_changes_is_refused(fn):
    """Python raises RuntimeError there; a loop over a list of the keys would not."""
    with pytest.raises(RuntimeError):
        fn(X)
    with pytest.raises(sd.CompileError, match="add or remove keys") as error:
        sd.grad(fn)(X)
    assert "for " in error.value.line and error.value.hint


Pair = collections.namedtuple("Pair", "first second")
PAIR = Pair(np.array([1.0, 2.0, 0.5]), np.array([-1.0, 0.3, 2.0]))


def over_a_list(x):
    s = 0.0
    for v in [x, x ** 2, np.sin(x)]:
        s = s + np.sum(v * s + v)
    return s


def over_a_tuple_and_a_namedtuple(x):
    s = 0.0
    for v in (x, x * 2.0):
        s = s + np.sum(v ** 2)
    pair = PAIR
    for v in pair:
        s = s + np.sum(v * x)
    return s


def over_the_rows_of_an_array(x):
    m = np.outer(x, x)
    s = 0.0
    for row in m:
        s = s + np.sum(row ** 2) * s + 1.0
    for v in x:
        s = s + v * v
    return s


def over_a_range_and_a_str(x):
    s = 0.0
    for i in range(1, 3):
        s = s + x[i] ** 2
    for c in "ab":
        s = s + x[len(c)] * s
    return s


def enumerate_zip_reversed(x):
    xs = [x, x * 2.0]
    s = 0.0
    for i, v in enumerate(xs):
        s = s + i * np.sum(v ** 2)
    for v, w in zip(xs, x):
        s = s + np.sum(v) * w
    for v in reversed(xs):
        s = s * 0.5 + np.sum(np.sin(v))
    return s


def over_a_dicts_keys_items_and_values(x):
    d = {0: x * 2.0, 1: x * 3.0}
    s = 0.0
    for k in d.keys():
        s = s + k * np.sum(d[k])
    for k, v in d.items():
        s = s + k * np.sum(v ** 2)
    for v in d.values():
        s = s + np.sum(v)
    return s


def over_the_list_of_a_dict(x):
    d = {0: x * 2.0, 1: x * 3.0}
    s = 0.0
    for k in list(d):
        s = s + k * np.sum(d[k])
    for k in tuple(d):
        s = s + k * np.sum(d[k] ** 2)
    return s


POSITIONAL = [over_a_list, over_a_tuple_and_a_namedtuple, over_the_rows_of_an_array,
              over_a_range_and_a_str, enumerate_zip_reversed,
              over_a_dicts_keys_items_and_values, over_the_list_of_a_dict]


@pytest.mark.parametrize("fn", POSITIONAL, ids=lambda f: f.__name__)
def test_a_loop_over_positions_is_differentiated(fn):
    check_grad(fn, (X.copy(),))


def test_the_keys_of_a_dict_as_a_list_carry_no_gradient():
    def keys_times_values(x):
        d = {0: x * 2.0, 1: x * 3.0, 2: x}
        ks = list(d)
        return ks[1] * np.sum(d[2]) + ks[2] * np.sum(d[0]) + np.sum(tuple(d)[1] * x)

    check_grad(keys_times_values, (X.copy(),))


def nests_itself(x):
    y = np.sum(x ** 2)
    y = [y, y * 2.0]
    y = y[0] + y[1]
    return y


def nests_itself_in_a_loop(x):
    y = [x]
    for i in range(3):
        y = [y, x]
    return np.sum(x)


@pytest.mark.parametrize("fn", [nests_itself, nests_itself_in_a_loop],
                         ids=lambda f: f.__name__)
def test_a_container_holding_itself_is_refused(fn):
    with pytest.raises(sd.CompileError, match="nested without bound"):
        sd.grad(fn)(X)

"""Compiled gradients through calls: NumPy functions, ``math.*`` on Python floats,
``sd.*`` ops, array methods and attributes, and user functions in this module and
another one.  Each is checked against the eager tape and finite differences."""
import math

import numpy as np
import pytest

import compiler_programs
import srcdiff as sd
from compiler_programs import check_grad, scaled_sine

RNG = np.random.default_rng(2)
X = RNG.uniform(0.5, 1.5, size=(3,))
M = RNG.uniform(0.5, 1.5, size=(2, 3))
S = RNG.uniform(0.5, 1.5, size=(3, 3))


def ids(v):
    return getattr(v, "__name__", "")


# --- NumPy functions ---

def elementwise(x):
    return np.sum(np.sin(x) * np.cos(x) + np.exp(-x) + np.log(x) + np.sqrt(x) + np.tanh(x)
                  + np.square(x) + np.power(x, 3) + np.arctan(x) + np.log1p(x))


def reductions(m):
    return (np.sum(m, axis=0) @ np.mean(m, axis=0) + np.max(m) + np.prod(np.min(m, axis=1))
            + np.var(m) + np.linalg.norm(m))


def keyword_arguments(m):
    kept = np.sum(m, axis=1, keepdims=True)
    return np.sum(np.mean(m * kept, axis=-1) ** 2)


def shape_functions(m, x):
    stacked = np.stack([x, x * 2.0])
    joined = np.concatenate([m, stacked], axis=0)
    column = np.reshape(joined, (-1, 1))
    tiled = np.transpose(np.tile(x, (2, 1)))
    return np.sum(column * 0.5) + np.sum(tiled @ m) + np.sum(np.expand_dims(x, 0) * m)


def linear_algebra(s, x):
    y = np.dot(s, x) + np.matmul(s, s) @ x
    z = np.linalg.solve(s + 3.0 * np.eye(3), x)
    return np.sum(y * z) + np.trace(s) + np.einsum("ij,j->", s, x)


def selection(x):
    y = np.where(x > 1.0, x * 2.0, np.sin(x))
    return np.sum(np.maximum(y, 1.2) + np.clip(x, 0.7, 1.3) + np.abs(x - 1.0))


@pytest.mark.parametrize("f, args, wrt", [
    (elementwise, (X,), 0),
    (reductions, (M,), 0),
    (keyword_arguments, (M,), 0),
    (shape_functions, (M, X), (0, 1)),
    (linear_algebra, (S, X), (0, 1)),
    (selection, (X,), 0),
], ids=ids)
def test_numpy_functions(f, args, wrt):
    check_grad(f, args, wrt)


# --- math.* on Python floats ---

def math_functions(a, b):
    c = math.sin(a) * math.exp(b) + math.log(a + b) - math.sqrt(b)
    return c * math.tanh(a) + math.cos(a * b) + a ** 2 / math.pi


def math_and_arrays(x, a):
    return np.sum(x * math.sin(a)) + math.cosh(a) * a


@pytest.mark.parametrize("f, args, wrt", [
    (math_functions, (0.4, 0.9), (0, 1)),
    (math_and_arrays, (X, 0.4), (0, 1)),
], ids=ids)
def test_math_on_python_floats(f, args, wrt):
    # math.sin(tensor) is a plain float on the eager tape (as in TensorFlow): no eager reference
    check_grad(f, args, wrt, eager=False)


# --- sd.* ops ---

def srcdiff_ops(m, x):
    h = sd.nn.sigmoid(sd.matmul(m, sd.expand_dims(x, 1)))
    s = sd.reduce_sum(sd.square(h)) + sd.reduce_mean(sd.exp(x))
    t = sd.math.log(sd.reduce_sum(sd.nn.softmax(m, axis=-1) * m))
    return s + t + sd.reduce_logsumexp(x) + sd.nn.l2_loss(sd.tanh(m))


def srcdiff_keywords(m):
    p = sd.matmul(m, m, transpose_b=True)
    return sd.reduce_max(sd.reduce_sum(p, axis=1, keepdims=True)) + sd.reduce_sum(
        sd.pow(m, 2.0) * sd.maximum(m, 1.0))


def srcdiff_reshape(m):
    return sd.reduce_sum(sd.reshape(m, (3, 2))[0])


def srcdiff_transpose_perm(m):
    return sd.reduce_sum(sd.transpose(m, perm=[1, 0])[0])


def srcdiff_concat_stack(m):
    return sd.reduce_sum(sd.concat([m, m * m], axis=0) * sd.stack([m, m], axis=0)[0, 0])


@pytest.mark.parametrize("f, args, wrt", [
    (srcdiff_ops, (M, X), (0, 1)),
    (srcdiff_keywords, (M,), 0),
    (srcdiff_reshape, (M,), 0),
    (srcdiff_transpose_perm, (M,), 0),
    (srcdiff_concat_stack, (M,), 0),
], ids=ids)
def test_srcdiff_ops(f, args, wrt):
    check_grad(f, args, wrt)


# --- array methods and attributes ---

def methods(m, x):
    a = m.sum(axis=0)
    b = m.T
    c = m.reshape(3, 2)
    d = m.reshape((6,))
    e = x.dot(a) + x.dot(b).sum()
    return e + c.mean() + (d ** 2).sum() + m.max() + c.transpose().prod() + m.var()


def attributes(m):
    rows = m.shape[0]
    scale = 1.0 / m.size + m.ndim
    return np.sum(m.T @ m) * scale / rows + m.flatten().min() + m.ravel().std()


def copies(x):
    y = x.copy()
    z = np.copy(x)
    return np.sum(y * z * x.astype(np.float64))


@pytest.mark.parametrize("f, args, wrt", [
    (methods, (M, X), (0, 1)),
    (attributes, (M,), 0),
    (copies, (X,), 0),
], ids=ids)
def test_array_methods(f, args, wrt):
    check_grad(f, args, wrt)


# --- user functions ---

def square_plus(x, c):
    y = x * x
    return y + c


def calls_same_module(x, c):
    y = square_plus(x, c)
    z = square_plus(np.sin(y), 1.0)  # the same callee, with a different active mask
    return np.sum(z * square_plus(c, x))


def calls_other_module(x, c):
    y = scaled_sine(x, c)
    return np.sum(compiler_programs.soft_clip(y, 2.0) * y)


def calls_nested(x):
    return np.sum(calls_same_module(x, x * 0.5) + square_plus(x, 0.0))


def constant_argument_call(x):
    scale = square_plus(2.0, 1.0)  # no active input: the callee needs no adjoint
    return np.sum(square_plus(x, scale))


@pytest.mark.parametrize("f, args, wrt", [
    (calls_same_module, (X, 0.3), (0, 1)),
    (calls_same_module, (X, X[::-1].copy()), 1),
    (calls_other_module, (X, 1.3), (0, 1)),
    (calls_other_module, (X * 3, 1.3), 0),
    (calls_nested, (X,), 0),
    (constant_argument_call, (X,), 0),
], ids=ids)
def test_user_functions(f, args, wrt):
    check_grad(f, args, wrt)


# --- calls found wrong by the random programs (test_compiler_random_programs.py) ---

def sine_times(a, b):
    return np.sin(a) * b


def first_only(a, b):
    return a[::-1] * 2.0  # b reaches nothing: its adjoint is None


def flip_or_sine(a, b):
    if a[1] > 0.0:
        c = -a * b
    else:
        c = np.sin(a)
    return c


def rebinds_its_argument(x, y):
    v = x * 1.0
    v = sine_times(v, y)  # the callee's backward call precedes the reads of its results
    return np.sum(v)


def passes_an_unconnected_input(x, s):
    t = s * 1.0
    v = first_only(np.cos(x), t)
    return np.sum(v) * t


def call_in_a_loop(x):
    for _ in range(2):
        x = flip_or_sine(x, x)  # each iteration's tape (and branch) is its own
    return np.sum(x)


def passes_an_array_it_then_writes(x):
    buf = np.zeros(3)
    for _ in range(2):
        buf[0] = np.sum(x)
        x = np.cos(scaled_sine(buf, 2.0))  # the callee's tape must not see later writes
    return np.sum(x)


@pytest.mark.parametrize("f, args, wrt, eager", [
    (rebinds_its_argument, (X, X[::-1].copy()), (0, 1), True),
    (passes_an_unconnected_input, (X, 0.8), (0, 1), True),
    (call_in_a_loop, (np.array([0.5, 0.5, 0.9]),), 0, True),
    (passes_an_array_it_then_writes, (X,), 0, False),
], ids=ids)
def test_calls_found_by_random_programs(f, args, wrt, eager):
    check_grad(f, args, wrt, eager=eager)


def test_a_callee_with_the_callers_name_is_its_own_function(tmp_path):
    # loss in one module calls loss of another: the generated loss_forward must call
    # the callee's compiled code, not itself (it recursed forever)
    from util import module_from_source
    inner = module_from_source(tmp_path / "inner_loss.py", """
        import numpy as np
        def loss(w):
            return np.sum(w * w)
    """)
    outer = module_from_source(tmp_path / "outer_loss.py", """
        import numpy as np
        inner = None  # set below: the other module's loss
        def loss(w):
            return inner(np.sin(w)) * 2.0
    """)
    outer.inner = inner.loss
    w = np.array([0.3, -1.2])
    g = sd.grad(outer.loss)(w)
    np.testing.assert_allclose(g, 4.0 * np.sin(w) * np.cos(w), rtol=1e-12)


A = np.eye(3) * 5.0  # a global that parameters below hide
B = np.ones(3)


def parameter_named_like_a_global(A):
    return np.sum(A.T * A.sum()) + np.sum(A[0])


def local_named_like_a_global(x):
    B = np.outer(x, x)
    return np.sum(B.T @ x) + B.sum()


@pytest.mark.parametrize("fn, arg", [
    (parameter_named_like_a_global, np.arange(9.0).reshape(3, 3) / 7.0),
    (local_named_like_a_global, np.array([0.3, -0.6, 1.2]))],
    ids=lambda v: getattr(v, "__name__", ""))
def test_a_local_hides_the_global_of_the_same_name(fn, arg):
    # A.T and A.sum() must read the parameter, not the module's A
    check_grad(fn, (arg,))


# --- starred arguments of a length known when compiling ---

def weighted(a, b, c=1.0):
    return a * b + c


def counted(a, *more):
    return a * len(more) + more[0] * more[-1]


def starred_tuple_argument(x):
    args = (x, 2.0)
    return np.sum(np.multiply(*args))


def starred_list_argument(x):
    pair = [np.sin(x), x * x]
    return np.sum(np.hypot(*pair)) + len(pair)


def starred_between_arguments(x):
    pair = (np.cos(x), 0.5)
    return np.sum(weighted(x, *pair)) + np.sum(weighted(*pair, x))


def starred_display_argument(x):
    return np.sum(weighted(x, *(x, 3.0)) + counted(x, *[np.sin(x), x], x))


def starred_in_a_loop(m):
    total = 0.0
    for row in m:
        pair = (row, np.tanh(row))  # bound once: each pass makes a pair
        total = total + np.sum(weighted(*pair))
    return total


@pytest.mark.parametrize("f, args", [
    (starred_tuple_argument, (X,)),
    (starred_list_argument, (X,)),
    (starred_between_arguments, (X,)),
    (starred_display_argument, (X,)),
    (starred_in_a_loop, (M,)),
], ids=ids)
def test_starred_arguments(f, args):
    compiler_programs.check_three_ways(f, args)


def starred_vector(x):
    pair = (x, np.sin(x))
    return np.multiply(*pair)


def test_starred_arguments_jacobian():
    np.testing.assert_allclose(sd.jacobian(starred_vector)(X),
                               np.diag(np.sin(X) + X * np.cos(X)), rtol=1e-12)


def starred_rebound(x):
    t = (x, x)
    t = (x, x, x)
    return np.sum(np.add(*t))


def starred_grown_list(x):
    xs = [x, x]
    xs.append(x)
    return np.sum(np.add(*xs))


def starred_call_result(x):
    return np.sum(np.add(*np.split(x, [1, 2])[:2]))


def starred_parameter(x, pair):
    return np.sum(np.add(*pair) * x)


@pytest.mark.parametrize("f, says", [
    (starred_rebound, "bound more than once"),
    (starred_grown_list, "the list may change"),
    (starred_call_result, "length not known"),
    (starred_parameter, "not bound to a tuple or list display"),
], ids=ids)
def test_starred_arguments_of_unknown_length_are_refused(f, says):
    with pytest.raises(sd.CompileError, match=says) as info:
        sd.grad(f)(X, *([(X, X)] if f is starred_parameter else []))
    assert info.value.lineno and info.value.hint


# --- builtin max and min of several arguments: the argument Python picks gets it all ---

def largest_of_three(a, b):
    return max(a, b, a * b) * 2.0 + min(a, 0.5 * b)


def largest_in_a_loop(x):
    s = 0.0
    for k in range(3):
        top = max(np.sum(x) * k, np.sin(x[k]), -1.0)
        if top > 0.5:
            s = s + min(top, x[0] * x[1])
        else:
            s = s + top * top
    return s


def largest_of_pairs(x):  # tuples compare item by item; the whole pair is picked
    p = (np.sum(x), x * 2.0)
    q = (np.sum(x * x), x)
    best = max(p, q)
    return best[0] * np.sum(best[1])


def smallest_of_one_element_arrays(x):
    return np.sum(min(x[0:1], x[1:2] * 2.0, 0.5) * 3.0)


@pytest.mark.parametrize("f, args, wrt", [
    (largest_of_three, (1.5, 0.7), (0, 1)),
    (largest_of_three, (-1.5, 0.7), (0, 1)),
    (largest_of_three, (1.5, 2.7), (0, 1)),
    (largest_in_a_loop, (X,), 0),
    (largest_in_a_loop, (np.array([0.2, 0.1, -0.9]),), 0),
    (largest_of_pairs, (np.array([0.3, 0.4, 0.1]),), 0),
    (largest_of_pairs, (np.array([1.3, 0.4, 0.1]),), 0),
    (smallest_of_one_element_arrays, (np.array([0.3, 0.4]),), 0),
    (smallest_of_one_element_arrays, (np.array([0.8, 0.1]),), 0),
    (smallest_of_one_element_arrays, (np.array([0.8, 0.4]),), 0),
], ids=ids)
def test_builtin_max_and_min_of_several(f, args, wrt):
    check_grad(f, args, wrt)


def larger(a, b):
    return max(a, b) * 2.0


def smaller(a, b):
    return min(a, b) * 2.0


@pytest.mark.parametrize("f", [larger, smaller], ids=ids)
@pytest.mark.parametrize("a, b", [(1.0, 1.0), (np.nan, 1.0), (1.0, np.nan)])
def test_builtin_max_and_min_pick_as_python_does(f, a, b):
    """Ties, and a NaN beside a number, keep the first argument (no later one beats
    it), as Python and the eager tape do, where np.maximum's rule gave zeros."""
    assert sd.grad(f, (0, 1))(a, b) == (2.0, 0.0)
    x, y = sd.constant(a, dtype=sd.float64), sd.constant(b, dtype=sd.float64)
    with sd.GradientTape() as tape:
        tape.watch([x, y])
        z = f(x, y)
    dx, dy = tape.gradient(z, [x, y])
    assert float(dx) == 2.0 and dy is None


def larger_of_arrays(x):
    return np.sum(max(x, x * 2.0))


def test_builtin_max_of_arrays_raises_as_python_does():
    with pytest.raises(ValueError, match="ambiguous"):
        sd.grad(larger_of_arrays)(X)


def larger_by_a_key(a, b):
    return max(a, b, key=abs) * 3.0 + min(a * b, b, key=abs)


def score(v):
    return (v - 0.25) ** 2


def nearest_of_several(a, b):
    return min(a, b * 2.0, a * b, key=score) + max([a, b], key=score, default=0.0)


def largest_or_a_default(a, b):
    picked = [t for t in (a, b) if t > 0.0]
    return max(picked, default=a * b) - min(picked, key=abs, default=b)


@pytest.mark.parametrize("f", [larger_by_a_key, nearest_of_several, largest_or_a_default],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("a, b", [(1.5, -2.0), (-0.6, 0.5), (-0.3, -0.4), (0.7, 0.2)])  # no ties
def test_builtin_max_and_min_with_a_key_or_a_default_pick_as_python_does(f, a, b):
    check_grad(f, (a, b), wrt=(0, 1))


def largest_of_a_slice(x):  # an array's numbers are the items (an empty one: the default)
    return max(x[1:]) * 1.5 + min(x[3:], default=np.sum(x * x)) + max(x, key=abs)


def test_builtin_max_and_min_of_an_array_made_inside():
    check_grad(largest_of_a_slice, (np.array([0.3, -0.7, 1.1]),))
    check_grad(largest_of_a_slice, (np.array([0.3, 1.7, -1.1, 0.2]),))


def guarded_by_math_predicates(x, a):
    y = x * a
    if math.isfinite(y) and not math.isnan(x) and not math.isinf(a):
        return y * y + math.isclose(y, 1.0)
    return 0.0 * y


@pytest.mark.parametrize("args", [(0.7, 1.3), (1.0, 1.0), (-2.0, 0.25)])
def test_math_predicates_have_no_gradient_and_are_compiled(args):
    # math.isfinite, isnan, isinf and isclose give bools: constants to the gradient
    check_grad(guarded_by_math_predicates, args, wrt=(0, 1))


# --- what a callee's tape keeps of an argument the caller later writes into ----------
# A snapshot of it: an array's copy, a container's deep copy, a number as it is (the
# forward pass called .copy() on each, which tuples, lists and floats lack: fuzzing).

def product_of_pair(t):
    p, q = t
    return p * q + np.cos(p)


def scaled_items(items, k):
    return [e * k for e in items]


def pair_passed_then_a_list_holding_its_item_rebinds_a_slot(x, y):
    z = product_of_pair((y, x))
    items = [x, y]
    items[0] = y * 2.0
    return np.sum(z) + np.sum(items[0] * items[1])


def list_passed_then_a_slot_rebound(x, y):
    items = [x, y * 2.0]
    z = scaled_items(items, 2.0)[0]
    items[1] = x * y
    return np.sum(z * y) + np.sum(items[1] * items[0])


def number_held_by_a_written_dict_passed(x, s):
    t = s * 1.0
    d = {"u": x, "v": t}
    t = d["v"]
    d["u"] = x * t
    z = scaled_items([x, x], t)[1]
    return np.sum(z * d["u"]) + t


@pytest.mark.parametrize("fn, args", [
    (pair_passed_then_a_list_holding_its_item_rebinds_a_slot, (X, X[::-1] * 0.5)),
    (list_passed_then_a_slot_rebound, (X, X[::-1] * 0.5)),
    (number_held_by_a_written_dict_passed, (X, 0.7))], ids=lambda v: getattr(v, "__name__", ""))
def test_an_argument_a_callee_keeps_is_snapshotted_as_what_it_is(fn, args):
    check_grad(fn, args, wrt=(0, 1))

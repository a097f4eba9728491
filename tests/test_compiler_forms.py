"""Every form of Python, with an active value flowing through it: the compiler
either differentiates it correctly (compiled == eager == finite differences) or
refuses it with a CompileError.  There is no third outcome.

``EXPRESSIONS`` and ``STATEMENTS`` classify every gast node class; a node class
added to gast (a new Python form) fails ``test_every_form_is_classified`` until
it is listed here with programs that use it.  Call shapes (positional, keyword,
starred, literal-wrapped, method) are forms too."""
import contextlib
import functools
import math

import gast
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import check_grad

X = np.array([0.3, -0.7, 1.1])


class Box:
    def __init__(self, v):
        self.v = v

    def total(self):
        return np.sum(self.v)


# --- expressions -----------------------------------------------------------------

def attribute_static(x):
    return np.sum(x) * x.shape[0] + np.pi * np.sum(x)


def attribute_of_an_object(x):
    b = Box(x)
    return np.sum(b.v)


def attribute_transpose(x):
    m = np.outer(x, x)
    return np.sum(m.T * m)


def binop(x):
    return np.sum(x * x - x / 2.0 + x ** 2 - 3.0 % (x + 4.0))


def binop_matmul(x):
    m = np.outer(x, x)
    return np.sum(m @ x)


def binop_without_rule(x):
    return np.sum(x << 1)


def boolop_condition(x):
    y = x
    if np.sum(x) > 0 and np.max(x) < 5.0:
        y = x * 2.0
    return np.sum(y)


def boolop_value(x):
    y = np.sum(x) or 1.0
    return y * 2.0


def call_positional(x):
    return np.sum(np.clip(x, -0.5, 0.5) * x)


def call_keyword(x):
    return np.sum(np.sum(x * x, axis=0, keepdims=True))


def call_keyword_without_a_model(x):
    return np.max(x, where=x > 0, initial=0.0)


def call_method_conj(x):
    z = x * (1.0 + 2.0j)
    return np.sum(np.real(z.conj() * z)) + np.sum(x.conjugate() * x)


def call_method_conj_of_a_real_array_written_after(x):
    z = x * 1.0
    v = z.conj()  # z itself: a real array's conj() is no copy
    z[0] = 5.0
    return np.sum(v * x)


def call_keyword_of_a_module_constant(x):  # dtype= reads np: no write into it
    y = np.sin(x)
    z = np.array([1.0, 2.0, 3.0], dtype=np.float64)
    return np.sum(y * z)


def call_keyword_picking_a_form(x):
    return np.sum(x * x, where=x > 0)


def call_starred(x):
    args = (x, 2.0)
    return np.sum(np.multiply(*args))


def call_starred_of_unknown_length(x):
    parts = np.split(x, 3)  # how many: known when it runs
    return np.sum(np.add(*parts[:2]))


def summed(a, *more):
    return a * len(more) + more[0] * more[-1]


def passes_varargs_on(a, *more):
    return summed(a, *more) + np.sin(more[1])


def call_passes_varargs_on(x):
    return np.sum(passes_varargs_on(x, x * x, 2.0 * x))


def call_in_a_list_literal(x):
    return np.sum(np.hstack([x, 2.0 * x]))


def method_item(x):  # one element as a Python number
    return x.item(0) * x.item(2) + np.reshape(x, (3, 1)).item((2, 0)) + np.sum(x[:1]).item()


def call_block(x):
    m = np.outer(x, x)
    return np.sum(np.block([[m, x[:, None]], [x[None, :], np.zeros((1, 1))]]) ** 2)


def call_method_known(x):
    return x.sum() * x.mean()


def call_method_unknown(x):
    m = np.outer(x, x)
    return np.sum(m.compress([True, False, True], axis=0))


def call_method_of_a_builtin_modelled(x):
    d = {"a": x}
    return np.sum(d.get("a") * d.get("b", 2.0))


def call_dict_of_zip(x):
    d = dict(zip(["a", "b"], [x, x * 2.0]))
    return np.sum(d["a"] * d["b"])


def call_list_pop(x):  # as indexing, then the list rebound without the item
    xs = [x[0], x[1], x[2]]
    last = xs.pop()
    xs.pop(0)
    return last * xs[0]


def call_list_pop_of_an_argument(xs):
    return xs.pop()  # the caller's list would change: refused


def call_functools_reduce(x):  # as the loop it runs, the lambda inlined
    return functools.reduce(lambda a, b: a * b, [x[0], x[1]], x[2])


def statement_list_insert(x):
    xs = [x[0]]
    xs.insert(0, x[1] * 2.0)
    return xs[0] * xs[1]


def statement_dict_update(x):  # as d[k] = v for each key, overwriting
    d = {"a": x[0]}
    d.update({"a": x[1]}, b=x[2])
    return d["a"] * d["b"]


def list_comprehension_appending(x):
    acc = [x[0]]
    [acc.append(v * x[1]) for v in x[1:]]  # a change the comprehension would hide
    return sum(acc)


def condition_changing_a_dict(x):
    d = {"a": x[0]}
    if d.update({"b": x[1] * 2.0}) is None:
        return d["a"] * d["b"]
    return d["a"]


def for_over_a_list_it_extends(x):
    xs = [x[0]]
    for v in xs:  # Python's loop runs over the items appended too
        if len(xs) < 3:
            xs.append(v * x[1])
    return sum(xs)


def for_over_a_list_it_rebinds(x):
    xs = [x[0], x[1]]
    for v in xs:  # over the list as it was: the name is rebound, the list unchanged
        xs = xs + [v * x[2]]
    return sum(xs)


def for_over_the_keys_of_a_dict(x):  # the keys, in insertion order
    d = {"b": x * 2.0, "a": np.sin(x)}
    s = 0.0
    for k in d:
        s = s * 0.5 + np.sum(d[k])
    return s


def for_over_a_dict_it_rekeys(x):  # Python raises RuntimeError
    d = {"a": x}
    for k in d:
        d[k + "2"] = d[k] * 2.0
    return np.sum(d["a"])


def for_else(x):
    s = 0.0
    for i in range(3):
        if x[i] > 1.0:  # X[2]: the else clause does not run
            break
        s = s + x[i] ** 2
    else:
        s = s * 2.0
    for i in range(2):
        s = s + np.sin(x[i])
    else:  # no break: it runs
        s = s * np.sum(x)
    return s


def while_else_with_a_break_in_it(x):
    total = 0.0
    for j in range(3):
        k = 0
        while k < 2:
            total = total + x[k] * j
            k += 1
        else:
            if j == 1:
                break  # out of the for loop
        total = total + np.sum(x ** 2)
    return total


def call_method_diagonal(x):
    m = np.outer(x, x)
    return np.sum(m.diagonal() * m.cumprod(axis=1)[0])


def call_user_method(x):
    return Box(x).total()


class Affine:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, a):
        return self.scale * np.sin(a)

    def twice(self, a):
        return self(self(a))


AFFINE = Affine(np.array([0.5, 2.0, -1.0]))


def call_callable_instance(x):
    return np.sum(AFFINE(x) * x)


def call_method_of_a_global(x):
    return np.sum(AFFINE.twice(x))


class Sine:
    def apply(self, a):
        return np.sin(a)


class Shift:
    def __init__(self, by):
        self.by = by

    def apply(self, a):
        return a + self.by


MAPS = [Sine(), Shift(np.array([0.5, -1.0, 2.0])), Sine()]


def call_method_of_a_local(x):
    for m in MAPS:  # the method called depends on the item: looked up when it runs
        x = m.apply(x)
    return np.sum(x)


def call_method_held_in_a_local(x):
    twice = AFFINE.twice
    return np.sum(twice(x) * x)


def helper(a, b=2.0):
    return a * b


def call_user_function_keyword(x):
    return np.sum(helper(x, b=3.0))


def keyword_only_helper(a, *, b=2.0, c):
    return a * b + c


def call_keyword_only_parameters(x):
    return np.sum(keyword_only_helper(x, c=x * x) + keyword_only_helper(c=1.0, a=x, b=x))


def kwargs_helper(a, **options):
    return a * options["b"]


def call_kwargs_parameters(x):
    return np.sum(kwargs_helper(x, b=3.0) + kwargs_helper(x, b=np.sin(x)))


def forwards_kwargs(a, **options):
    return kwargs_helper(np.cos(a), **options)


def call_kwargs_forwarded(x):
    return np.sum(forwards_kwargs(x, b=x * x))


def call_kwargs_from_a_mapping(x):
    options = {"b": x}
    return np.sum(kwargs_helper(x, **options))


class Tally:
    """Methods and a property named like ndarray's."""

    def __init__(self, w):
        self.w = w

    def sum(self, v):
        return np.sum(self.w * v)

    def reshape(self, v):
        return v * self.w

    @property
    def T(self):
        return self.w


TALLIES = [Tally(np.array([1.0, 2.0, 3.0]))]


def call_array_method_names_of_an_object(x):
    t = 0.0
    for tally in TALLIES:  # tally.sum(x) is Tally.sum, not np.sum(tally, x)
        t = t + tally.sum(x) + np.sum(tally.reshape(x) * tally.T)
    return t


def halving(a, n):
    return a if n == 0 else halving(np.sin(a) * 0.5, n - 1) + a


def call_recursive_helper(x):
    return np.sum(halving(x, 3))


def applied(fn, a):
    return fn(a) * a


def call_with_a_function_argument(x):
    return np.sum(applied(np.tanh, x) + applied(helper, x))


TRIPLED = functools.partial(helper, b=3.0)


def call_partial(x):
    return np.sum(TRIPLED(x) + applied(TRIPLED, x) + TRIPLED(x, b=0.5))


def call_partial_made_here(x):
    p = functools.partial(helper, b=x)  # bound to an active value
    return np.sum(p(x) + applied(p, x))


def compare(x):
    flags = x > 0
    return np.sum(x * flags)


def constant(x):
    return np.sum(x) + 1.5


def dict_literal(x):
    d = {"a": x, "b": x * 2.0}
    return np.sum(d["a"] * d["b"])


def dict_unpacking(x):
    d = {**{"a": x}}
    return np.sum(d["a"])


def dict_comprehension(x):
    d = {k: x * k for k in range(2)}
    return np.sum(d[1])


def dict_comprehension_values(x):
    d = {k: x * k for k in range(2)}
    return np.sum(sum(d.values()))


def dict_views_consumed(x):  # keys(), values(), items() read at once by a call
    d = {"b": x * 2.0, "a": np.sin(x)}
    first = sorted(d.keys())[0]
    return np.sum(d[first] * np.stack(list(d.values()))) + sum(
        np.sum(v * v) * len(k) for k, v in sorted(d.items()))


def dict_view_kept(x):  # a view follows the dict: the list of the items then would not
    d = {"a": x}
    values = d.values()
    d["b"] = x * 2.0
    return sum(np.sum(v) for v in values)


def dict_views_of_a_list(x):  # a list has no items(): refused where Python would raise
    xs = [x, x * 2.0]
    return sum(np.sum(v) for _, v in xs.items())


def sorted_and_max_of_pairs(x):  # items that are containers: each pair's adjoint its own
    pairs = sorted([(np.sum(x * x), x), (np.sum(x), 2.0 * x)])
    best = max(pairs)
    return best[0] * np.sum(best[1]) + np.sum(pairs[0][1] * pairs[1][1])


def max_and_min_of_several(x):  # the argument Python picks (the first of equal ones)
    return max(x[0], x[1] * 2.0, np.sum(x)) * min(x[2], 0.5, x[0] * x[1])


def max_by_a_key(x):
    return max(x[0], x[1], key=abs)


def max_with_a_default(x):  # the default, of an empty list
    xs = [v for v in [x[0], x[1]] if v > 5.0]
    return max(xs, default=x[2] * 2.0) + min([x[0], x[1]], key=abs, default=0.0)


def formatted_value(x):
    label = f"{np.sum(x):.3f}"
    return np.sum(x) * len(label)


def formatted_value_of_a_gradient(x):
    s = f"{x}"
    return np.sum(x) + 0.0 * len(s)


def generator_expression(x):
    return sum(v * v for v in x)


def generator_kept_for_later(x):
    squares = (v * v for v in x)
    return sum(squares)


def if_expression(x):
    y = x * 2.0 if np.sum(x) > 0 else x * 3.0
    return np.sum(y)


def lambda_form(x):
    a = np.sin(x)
    f = lambda t, k=2.0: t * a * k  # noqa: E731  (a closure over an active local)
    return np.sum(f(x) + f(x * x, k=0.5))


def lambda_escapes(x):
    return np.sum(np.apply_along_axis(lambda t: t * 2.0, 0, x))


def lambda_passed_to_a_helper(x):
    a = np.sin(x)
    return np.sum(applied(lambda t: t * a, x))  # a closure: a is passed along with it


def nested_def_passed_to_a_helper(x):
    def scaled(t):
        return np.tanh(t) * x
    return np.sum(applied(scaled, x))


def lambda_returned(x):
    return np.sum(x), lambda t: t * x


def list_literal(x):
    xs = [x, x * 2.0]
    return np.sum(xs[0] * xs[1])


def list_comprehension(x):
    return np.sum(np.stack([x * k for k in range(3)]))


def list_comprehension_nested(x):
    j = 5.0  # the comprehension's own j leaves this one alone
    ys = [x[i] * x[j] for i in range(3) for j in range(i) if j != 1]
    return sum(ys) * j


def name(x):
    y = x
    return np.sum(y)


def named_expression(x):
    if (y := np.sum(x)) > 0:
        return y * 2.0
    return y


def named_expression_in_right_operand(x):
    if np.sum(x) > 0 and (y := np.max(x)) > 0:  # bound only if the left holds
        return y
    return 0.0


def named_expression_in_a_comprehension(x):
    ys = [y for v in x if (y := np.sin(v)) > 0.0]
    return sum(ys) * y


def set_literal(x):
    s = {np.sum(x)}
    return s.pop()


def set_comprehension_of_numbers(x):
    kept = {k % 2 for k in range(4)}  # inactive: a membership test
    return sum(x[i] for i in range(3) if i in kept)


def set_comprehension(x):
    s = {float(v) for v in x}
    return sum(s)


def starred_unpacking(x):
    first, *rest = x
    return first * sum(rest)


def subscript(x):
    return x[0] * x[1:].sum() + x[-1] ** 2


def subscript_of_a_list_before_a_later_append(x):
    hs = [x]
    for _ in range(2):
        hs.append(np.sin(hs[-1]) * hs[0])
    return np.sum(hs[-1])


def subscript_slice_of_a_list_before_a_later_append(x):
    hs = [x]
    for _ in range(2):
        hs.append(sum(hs[-2:]))
    return np.sum(hs[-1])


def subscript_slice_written_in_an_array(x):
    a = np.zeros(5)
    a[1:4] = x * 2.0
    return np.sum(a * a)


def subscript_slice_written_in_a_list(x):
    xs = [x, x, x]
    xs[0:2] = [x * 2.0, x * 3.0]
    return np.sum(xs[0] + xs[1] + xs[2])


def subscript_slice_of_a_list_then_a_slot_written(x):  # a new list, not a view
    xs = [x, x * 2.0]
    ys = xs[:]
    ys[0] = np.sin(x)
    return np.sum(xs[0] * ys[0] + ys[1])


def tuple_literal(x):
    t = (x, x * 3.0)
    return np.sum(t[0] * t[1])


def pair_product(p):
    return p[0] * p[1]


def tuple_literal_passed(x):  # a value: each item's adjoint its own
    return np.sum(pair_product((x, np.sin(x)))) + np.sum(pair_product((x[0], x[2])))


def tuple_literal_read_whole(x):  # np.sum((a, b)) reads the tuple as an array
    return np.sum((x, x * x)) + np.sum(np.maximum((x[0], x[1]), x[2]))


def tuple_literal_as_a_shape(x):  # a shape stays in the call
    n = x.shape[0]
    tiled = np.transpose(np.tile(x, (2, 1)), (1, 0))
    return np.sum(np.reshape(x, (n, 1)) * np.ones((n, 2)) * tiled)


def tuple_literal_in_an_index_place(x):  # np.take's indices: no gradient, refused if active
    return np.sum(np.take(x, (0, 2)))


def tuple_literal_of_values_in_a_shape_place(x):
    return np.sum(np.reshape(x, (x[0], 3)))


def unary(x):
    return np.sum(-x) + np.sum(+x)


def invert_a_mask(x):
    return np.sum(~(x > 0) * x)


def yield_form(x):
    yield np.sum(x)


def yield_from_form(x):
    yield from [np.sum(x)]


# --- statements ------------------------------------------------------------------

def ann_assign(x):
    y: np.ndarray = x * 2.0
    return np.sum(y)


def assert_statement(x):
    assert x.shape == (3,)
    return np.sum(x)


def aug_assign(x):
    y = x * 1.0
    y += x
    y *= 2.0
    return np.sum(y)


def aug_assign_after_an_alias_rebound(x):  # z holds a new array again at the update
    y = x * 2.0
    z = y
    z = z + 1.0
    z += x
    return np.sum(z * y)


def make_two(x):
    return [x * 1.0, x * 2.0]


def aug_assign_of_an_item_a_helper_returned(x):  # its items are checked when it runs
    a = make_two(x)
    a[0] += x
    return np.sum(a[0] * a[1])


def break_continue(x):
    y = x
    for k in range(5):
        if k == 1:
            continue
        if k == 3:
            break
        y = y * 1.5
    return np.sum(y)


def class_definition(x):
    class Local:
        pass
    return np.sum(x)


def delete(x):
    y = x * 2.0
    z = y
    del y
    return np.sum(z)


def expression_statement(x):
    np.sum(x)
    return np.sum(x * x)


def for_loop(x):
    y = 0.0
    for v in x:
        y = y + v * v
    return y


def function_definition(x):
    s = np.sum(x)

    def inner(t):
        if s > 0:  # an early return
            return np.tanh(t) * s
        return t * t
    return np.sum(inner(inner(x)) + inner(x * 0.5))


def function_definition_recursive(x):
    def inner(t, n):
        return t if n == 0 else inner(t * 2.0, n - 1)
    return np.sum(inner(x, 2))


def global_statement(x):
    global X
    return np.sum(x * X)


def if_statement(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = x * 3.0
    return np.sum(y)


def import_statement(x):
    import math as m
    return np.sum(x) * m.pi


def import_from(x):
    from math import pi
    return np.sum(x) * pi


def match_statement(x):
    match 1:
        case 1:
            y = x * 2.0
        case _:
            y = x
    return np.sum(y)


def nonlocal_statement(x):
    y = x

    def inner():
        nonlocal y
        y = y * 2.0
    inner()
    return np.sum(y)


def pass_statement(x):
    pass
    return np.sum(x)


def raise_statement(x):
    if np.sum(x) > 100.0:
        raise ValueError("too big")
    return np.sum(x)


def return_early(x):
    if np.sum(x) > 0:
        return np.sum(x * 2.0)
    return np.sum(x)


def try_statement(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return np.sum(y)


def try_finally_statement(x):
    try:
        y = x * 2.0
    finally:
        z = np.sin(x)
    return np.sum(y * z)


def try_finally_returning(x):
    try:
        return np.sum(x)
    finally:
        print("done")


def while_loop(x):
    y = x
    while np.sum(y * y) < 10.0:
        y = y * 1.5
    return np.sum(y)


def with_statement(x):
    with np.errstate(all="ignore"):
        y = x * 2.0
    return np.sum(y)


def with_suppress(x):
    with contextlib.suppress(ValueError):  # may skip the rest of the block
        y = x * 2.0
    return np.sum(y)


async def async_function(x):
    return np.sum(x)


GRAD, REFUSE = "differentiated", "refused"
# differentiated where the tape is not: a conversion to a Python number leaves the tape
# (as .numpy() leaves TensorFlow's), so compiled == finite differences alone
COMPILED = "differentiated compiled"

# Every gast expression class: (program, expected outcome) pairs using it.
EXPRESSIONS = {
    "Attribute": [(attribute_static, GRAD), (attribute_of_an_object, REFUSE),
                  (attribute_transpose, GRAD)],
    "BinOp": [(binop, GRAD), (binop_matmul, GRAD), (binop_without_rule, REFUSE)],
    "BoolOp": [(boolop_condition, GRAD), (boolop_value, REFUSE)],
    "Call": [(call_positional, GRAD), (call_keyword, GRAD), (call_list_pop, GRAD),
             (call_list_pop_of_an_argument, REFUSE), (call_functools_reduce, GRAD),
             (call_keyword_without_a_model, REFUSE), (call_keyword_picking_a_form, GRAD),
             (call_keyword_of_a_module_constant, GRAD),
             (call_method_conj, GRAD), (call_method_conj_of_a_real_array_written_after, REFUSE), (call_starred, GRAD),
             (call_starred_of_unknown_length, REFUSE),
             (call_in_a_list_literal, GRAD), (call_method_known, GRAD),
             (call_method_unknown, REFUSE), (call_method_diagonal, GRAD),
             (call_method_of_a_builtin_modelled, GRAD), (call_dict_of_zip, GRAD), (method_item, COMPILED),
             (call_user_method, REFUSE),
             (call_user_function_keyword, GRAD), (call_recursive_helper, GRAD),
             (call_keyword_only_parameters, GRAD), (call_kwargs_parameters, GRAD),
             (call_kwargs_forwarded, GRAD), (call_kwargs_from_a_mapping, REFUSE),
             (call_array_method_names_of_an_object, REFUSE),
             (call_with_a_function_argument, GRAD), (call_callable_instance, GRAD),
             (call_method_of_a_global, GRAD), (call_partial, GRAD),
             (call_method_of_a_local, GRAD), (call_block, GRAD),
             (call_partial_made_here, GRAD), (call_method_held_in_a_local, GRAD),
             (dict_views_consumed, GRAD), (dict_view_kept, REFUSE),
             (dict_views_of_a_list, REFUSE),
             (sorted_and_max_of_pairs, GRAD), (max_and_min_of_several, GRAD),
             (max_by_a_key, GRAD), (max_with_a_default, GRAD)],
    "Compare": [(compare, GRAD)],
    "Constant": [(constant, GRAD)],
    "Dict": [(dict_literal, GRAD), (dict_unpacking, REFUSE)],
    "DictComp": [(dict_comprehension, GRAD), (dict_comprehension_values, GRAD)],
    "FormattedValue": [(formatted_value, GRAD)],
    "GeneratorExp": [(generator_expression, GRAD), (generator_kept_for_later, REFUSE)],
    "IfExp": [(if_expression, GRAD)],
    "JoinedStr": [(formatted_value_of_a_gradient, GRAD)],
    "Lambda": [(lambda_form, GRAD), (lambda_escapes, REFUSE), (call_functools_reduce, GRAD),
               (lambda_passed_to_a_helper, GRAD), (lambda_returned, REFUSE)],
    "List": [(list_literal, GRAD)],
    "ListComp": [(list_comprehension, GRAD), (list_comprehension_nested, GRAD),
                 (list_comprehension_appending, REFUSE), (condition_changing_a_dict, REFUSE)],
    "Name": [(name, GRAD)],
    "NamedExpr": [(named_expression, GRAD), (named_expression_in_a_comprehension, GRAD),
                  (named_expression_in_right_operand, REFUSE)],
    "Set": [(set_literal, REFUSE)],
    "SetComp": [(set_comprehension, REFUSE), (set_comprehension_of_numbers, GRAD)],
    "Starred": [(starred_unpacking, GRAD), (call_starred, GRAD),
                (call_starred_of_unknown_length, REFUSE),
                (call_passes_varargs_on, GRAD)],
    "Subscript": [(subscript, GRAD), (subscript_slice_written_in_an_array, COMPILED),
                  (subscript_of_a_list_before_a_later_append, GRAD),
                  (subscript_slice_of_a_list_before_a_later_append, REFUSE),
                  (subscript_slice_written_in_a_list, REFUSE),
                  (subscript_slice_of_a_list_then_a_slot_written, GRAD)],
    "Tuple": [(tuple_literal, GRAD), (tuple_literal_passed, GRAD),
              (tuple_literal_read_whole, COMPILED),
              (tuple_literal_as_a_shape, GRAD), (tuple_literal_in_an_index_place, GRAD),
              (tuple_literal_of_values_in_a_shape_place, REFUSE)],
    "UnaryOp": [(unary, GRAD), (invert_a_mask, GRAD)],
    "Yield": [(yield_form, REFUSE)],
    "YieldFrom": [(yield_from_form, REFUSE)],
    "Await": [(async_function, REFUSE)],
}

STATEMENTS = {
    "AnnAssign": [(ann_assign, GRAD)],
    "Assert": [(assert_statement, GRAD)],
    "Assign": [(name, GRAD), (starred_unpacking, GRAD)],
    "AugAssign": [(aug_assign, GRAD), (aug_assign_after_an_alias_rebound, GRAD),
                  (aug_assign_of_an_item_a_helper_returned, GRAD)],
    "Break": [(break_continue, GRAD)],
    "ClassDef": [(class_definition, REFUSE)],
    "Continue": [(break_continue, GRAD)],
    "Delete": [(delete, REFUSE)],
    "Expr": [(expression_statement, GRAD), (statement_list_insert, GRAD),
             (statement_dict_update, GRAD)],
    "For": [(for_loop, GRAD), (for_else, GRAD), (for_over_a_list_it_extends, REFUSE),
            (for_over_a_list_it_rebinds, GRAD), (for_over_the_keys_of_a_dict, GRAD),
            (for_over_a_dict_it_rekeys, REFUSE)],
    "FunctionDef": [(function_definition, GRAD), (nested_def_passed_to_a_helper, GRAD),
                    (function_definition_recursive, REFUSE),
                    (nonlocal_statement, REFUSE)],
    "Global": [(global_statement, REFUSE)],
    "If": [(if_statement, GRAD)],
    "Import": [(import_statement, REFUSE)],
    "ImportFrom": [(import_from, REFUSE)],
    "Match": [(match_statement, REFUSE)],
    "Nonlocal": [(nonlocal_statement, REFUSE)],
    "Pass": [(pass_statement, GRAD)],
    "Raise": [(raise_statement, GRAD)],
    "Return": [(return_early, GRAD)],
    "Try": [(try_statement, REFUSE), (try_finally_statement, GRAD),
            (try_finally_returning, REFUSE)],
    "While": [(while_loop, GRAD), (while_else_with_a_break_in_it, GRAD)],
    "With": [(with_statement, GRAD), (with_suppress, REFUSE)],
    "AsyncFunctionDef": [(async_function, REFUSE)],
    "AsyncFor": [(async_function, REFUSE)],
    "AsyncWith": [(async_function, REFUSE)],
}

# gast classes the Python 3 parser of this interpreter never produces (Python 2's
# statements; template strings of Python 3.14), and the one try-star form, which
# parses only where exception groups do.
NOT_PRODUCED = {"Repr", "Exec", "Print", "Interpolation", "TemplateStr", "TryStar",
                "TypeAlias"}


def _classes(base):
    return {c.__name__ for c in vars(gast).values()
            if isinstance(c, type) and issubclass(c, base) and c is not base}


def test_every_form_is_classified():
    assert _classes(gast.expr) == set(EXPRESSIONS) | (_classes(gast.expr) & NOT_PRODUCED)
    assert _classes(gast.stmt) == set(STATEMENTS) | (_classes(gast.stmt) & NOT_PRODUCED)


def _cases():
    seen = set()
    for table in (EXPRESSIONS, STATEMENTS):
        for form, programs in table.items():
            for fn, outcome in programs:
                if (fn, outcome) not in seen:
                    seen.add((fn, outcome))
                    yield pytest.param(fn, outcome, id=f"{form}-{fn.__name__}")


@pytest.mark.parametrize("fn, outcome", list(_cases()))
def test_each_form_is_differentiated_or_refused(fn, outcome):
    if outcome in (GRAD, COMPILED):
        check_grad(fn, (X.copy(),), eager=outcome == GRAD)
    else:
        with pytest.raises((sd.CompileError, TypeError)) as info:
            sd.grad(fn)(X.copy())
        if info.type is TypeError:  # only a function srcdiff cannot compile at all
            assert "function" in str(info.value)
        else:  # where, and what to do instead
            error = info.value
            assert error.filename and error.lineno and error.line, str(error)
            assert error.hint, f"a refusal without a hint: {error}"


def test_a_form_inside_a_helper_is_held_to_the_same_standard():
    def outer(x):
        return attribute_of_an_object(x) + 1.0
    with pytest.raises(sd.CompileError):
        sd.grad(outer)(X.copy())


def summed_helper(a, b=2.0):
    return np.sum(helper(a, b))


@pytest.mark.parametrize("fn, slope", [(functools.partial(summed_helper, b=3.0), 3.0),
                                       (np.sin, None), (math.exp, None)],
                         ids=["partial", "ufunc", "math"])
def test_callables_that_are_not_functions_are_differentiated_or_refused(fn, slope):
    x = X.copy() if slope else 0.3
    try:
        g = sd.grad(fn)(x)
    except (TypeError, sd.CompileError):
        return
    expected = np.full(3, slope) if slope else np.cos(x) if fn is np.sin else math.exp(x)
    np.testing.assert_allclose(g, expected)

"""Python the compiler cannot transform raises sd.CompileError naming the file, line
and column, quoting the source line with a caret, and saying what to do instead;
``@sd.function(fallback="eager")`` runs such a function on the eager tape."""
import contextlib
import inspect
import math
import warnings

import numpy as np
import pytest

import compiler_programs
import srcdiff as sd
from compiler_programs import check_grad, finite_difference

X = np.array([0.5, 1.0, 1.5])

_made = {}
exec("def made_by_exec(x):\n    return x * 2.0\n", _made)  # a function without source
made_by_exec = _made["made_by_exec"]


def generator(x):
    yield x * 2.0


def uses_try(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return np.sum(y)


COUNTER = 0


def writes_global(x):
    global COUNTER
    COUNTER = COUNTER + 1
    return np.sum(x)


def make_nonlocal_writer():
    calls = 0

    def writes_nonlocal(x):
        nonlocal calls
        calls = calls + 1
        return np.sum(x)
    return writes_nonlocal


def uses_lambda(x):  # a lambda bound to a name and called is inlined; this one is not
    return np.sum(np.vectorize(lambda v: v * 2.0)(x))


def nested_def(x):  # a nested def that is called is inlined; one passed on is not
    def double(v):
        return v * 2.0
    return np.sum(np.vectorize(double)(x))


def no_source(x):
    y = made_by_exec(x)
    return np.sum(y)


def no_rule(x):
    y = np.nextafter(x, 2.0)
    return np.sum(y)


def uses_with(x):
    with contextlib.suppress(ValueError):
        y = x * 2.0
    return np.sum(y)


def set_comprehension(x):
    ys = {v * 2.0 for v in x}
    return np.sum(np.array(sorted(ys)))


def calls_a_bad_helper(x):
    return np.sum(compiler_programs.helper_with_try(x))


CASES = {
    # function: (text at the error, words of the message, words of the advice)
    generator: ("yield x", "generators are not supported", "Return a list"),
    uses_try: ("try:", "'try' is not supported", "outside the function"),
    writes_global: ("global COUNTER", "'global' is not supported", "Return the value"),
    make_nonlocal_writer(): ("nonlocal calls", "'nonlocal' is not supported",
                             "Return the value"),
    uses_lambda: ("lambda v", "lambda is not supported", "Define it with 'def'"),
    nested_def: ("double)(x)", "local function 'double' is used other than by calling it",
                 "module level"),
    no_source: ("made_by_exec(x)", "cannot read the source of made_by_exec",
                "exec() have no source"),
    no_rule: ("np.nextafter(x, 2.0)",
              "cannot differentiate numpy.nextafter: it has no derivative rule",
              "sd.register_gradient"),
    uses_with: ("contextlib.suppress", "this 'with' is not supported",
                "outside the function"),
    set_comprehension: ("{v * 2.0 for v in x}", "comprehension", "for"),
}


def location(fn, text):
    """(file, line, column) of ``text`` in ``fn``'s source, 1-based."""
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return inspect.getsourcefile(fn), first + k, line.index(text) + 1
    raise AssertionError(f"{text!r} is not in {fn.__name__}")


def check_message(error, fn, text):
    """The message names the file and line, quotes the line, and puts a caret under it
    (at the statement's start or at ``text`` itself)."""
    filename, line, col = location(fn, text)
    source_line = open(filename).read().splitlines()[line - 1]
    message = str(error)
    assert message.startswith(f'File "{filename}", line {line}, column ')
    assert (error.filename, error.lineno) == (filename, line)
    lines = message.splitlines()
    quoted = lines.index("    " + source_line.strip())
    caret = lines[quoted + 1]
    assert caret.strip() == "^"
    indent = len(source_line) - len(source_line.lstrip())
    caret_col = caret.index("^") - 4 + indent + 1
    assert caret_col == error.col + 1
    assert caret_col in (indent + 1, col)  # the statement or the construct itself
    assert f"column {caret_col}:" in lines[0]


@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_unsupported_construct(fn):
    text, what, advice = CASES[fn]
    with pytest.raises(sd.CompileError) as info:
        sd.grad(fn)(X)
    check_message(info.value, fn, text)
    assert what in str(info.value)
    assert advice in str(info.value)


def test_the_error_points_into_the_callees_module():
    with pytest.raises(sd.CompileError) as info:
        sd.grad(calls_a_bad_helper)(X)
    check_message(info.value, compiler_programs.helper_with_try, "try:")


def test_a_function_without_a_rule_on_an_inactive_value_is_fine():
    # np.nextafter is only a problem when a gradient must flow through it
    def weighted(x, w):
        return np.sum(x * np.nextafter(w, 2.0))
    g = sd.grad(weighted, 0)(X, X)
    np.testing.assert_allclose(g, np.nextafter(X, 2.0))


def test_errors_are_compile_errors_with_their_parts():
    with pytest.raises(sd.CompileError) as info:
        sd.grad(uses_try)(X)
    error = info.value
    assert isinstance(error, Exception)
    assert error.hint and error.hint in str(error)
    assert error.line.strip() == "try:"


# --- fallback="eager" ---

def math_then_try(x):
    try:
        y = np.sin(x) * x
    except ValueError:
        y = x
    return np.sum(y)


def test_fallback_runs_eagerly_with_one_warning():
    f = sd.function(math_then_try, fallback="eager")
    with pytest.warns(UserWarning, match="eager") as record:
        value = f(X)
    assert len(record) == 1
    assert "'try' is not supported" in str(record[0].message)
    assert record[0].filename == __file__  # the warning names the caller's line
    by_keyword = sd.function(math_then_try, fallback="eager")
    with pytest.warns(UserWarning, match="eager") as record:
        assert by_keyword(x=X) == pytest.approx(math_then_try(X))
    assert record[0].filename == __file__
    assert value == pytest.approx(math_then_try(X))
    x = sd.constant(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        dx = tape.gradient(y, x)
    np.testing.assert_allclose(dx, finite_difference(math_then_try, (X,), 0), rtol=1e-6)


def test_without_fallback_the_error_is_raised():
    f = sd.function(math_then_try)
    with pytest.raises(sd.CompileError, match="'try' is not supported"):
        f(X)
    with pytest.raises(ValueError, match="fallback"):
        sd.function(math_then_try, fallback="tape")


def test_math_module_functions_are_not_mistaken_for_user_code():
    def uses_math(a):
        return math.sin(a) * a
    assert sd.grad(uses_math)(0.3) == pytest.approx(math.cos(0.3) * 0.3 + math.sin(0.3))


# --- calls that pass an active value through without a rule: refused, never zero ---

def listed(x):
    ys = list([x, 2.0 * x])
    return np.sum(ys[0] + ys[1])


def as_tuple(x):
    t = tuple([x, x])
    return np.sum(t[0])


def sorted_numbers(x):
    s = sorted([np.sum(x), 2.0])
    return s[0]


def nested_in_a_tuple(x):
    y = np.hstack(((x, x),))
    return np.sum(y)


def test_a_tuple_nested_in_a_call_is_differentiated():
    # once a gradient of zeros, then refused; the eager tape loses it (np.hstack of a
    # tuple of Tensors inside a tuple), so the compiled gradient is checked alone
    check_grad(nested_in_a_tuple, (X.copy(),), eager=False)


@pytest.mark.parametrize("fn", [listed, as_tuple], ids=lambda f: f.__name__)
def test_list_and_tuple_of_a_literal_are_copies_with_gradients(fn):
    # once a gradient of zeros, then refused; now copies whose adjoint goes item by item
    check_grad(fn, (X.copy(),))


def test_sorted_of_an_active_value_in_a_literal_is_differentiated():
    check_grad(sorted_numbers, (X.copy(),))  # once a gradient of zeros, then refused


def next_floats_of_a_literal(x):
    return np.sum(np.nextafter([np.sum(x), 2.0, 3.0], 4.0))


@pytest.mark.parametrize("fn", [next_floats_of_a_literal], ids=lambda f: f.__name__)
def test_a_call_without_a_rule_given_an_active_value_in_a_literal_is_refused(fn):
    # these once compiled to a gradient of zeros
    with pytest.raises(sd.CompileError, match="cannot differentiate") as info:
        sd.grad(fn)(X)
    assert "no derivative rule" in str(info.value)


def where_on_an_active_condition(x):
    y = np.where(x, 1.0, x * 2.0)
    return np.sum(y)


def test_an_active_input_without_a_derivative_is_refused():
    # it once got no contribution at all: a silent zero where the rule had no vjp
    with pytest.raises(sd.CompileError, match="argument 1: its rule has no derivative"):
        sd.grad(where_on_an_active_condition)(X)


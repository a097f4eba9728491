"""The normaliser's output grammar, on small functions (see compiler/normalize.py):
one operation per assignment on names and constants, augmented assignment as an
update flagged in place, methods and attributes as NumPy calls, exits as flags."""
import gast
import numpy as np

from compiler_passes import normalised, source


def nested_calls(x, W):
    y = np.sin(np.cos(x)) + W.T @ x
    return np.sum(y)


def test_nested_expressions_become_one_operation_per_assignment():
    body, _ = normalised(nested_calls)
    assert source(body).splitlines() == [
        "y_1 = np.cos(x)",
        "y_2 = np.sin(y_1)",
        "y_3 = np.transpose(W)",
        "y_4 = y_3 @ x",
        "y = y_2 + y_4",
        "out = np.sum(y)",
        "return out",
    ]


def augmented(x, y):
    x += y
    x *= 2.0
    return np.sum(x)


def test_augmented_assignment_is_an_update_flagged_in_place():
    body, _ = normalised(augmented)
    updates = body[:2]
    assert source(updates).splitlines() == ["x = x + y", "x = x * 2.0"]
    assert all(getattr(s, "in_place", False) for s in updates)


def methods(x):
    return x.sum(axis=0).mean() + x.reshape(2, 3).T.max()


def test_methods_and_attributes_are_numpy_calls():
    text = source(normalised(methods)[0])
    for call in ("np.sum(x, axis=0)", "np.mean(", "np.reshape(x, (2, 3))", "np.transpose(",
                 "np.max("):
        assert call in text, (call, text)
    assert "x.sum(" not in text and ".T" not in text


def unpacking(x, y):
    a, b = y, x
    return np.sum(a * b)


def test_a_tuple_of_names_is_unpacked_into_copies():
    body, _ = normalised(unpacking)
    assert source(body[:2]).splitlines() == ["a = y", "b = x"]


def early_exits(x):
    for i in range(3):
        if i > 1:
            break
        x = x * 2.0
    return x


def test_break_becomes_flags_and_one_final_return():
    body, _ = normalised(early_exits)
    assert isinstance(body[-1], gast.Return)
    assert sum(isinstance(n, gast.Return) for n in gast.walk(gast.Module(body=body,
                                                                        type_ignores=[]))) == 1
    loop = next(s for s in body if isinstance(s, gast.For))
    # the only break left is the flag test that ends the loop's body
    breaks = [n for n in gast.walk(loop) if isinstance(n, gast.Break)]
    assert len(breaks) == 1
    last = loop.body[-1]
    assert isinstance(last, gast.If) and isinstance(last.body[0], gast.Break)
    assert not any(isinstance(n, gast.Continue) for n in gast.walk(loop))


def a_condition(x):
    if np.sum(x) > 0 and np.max(x) < 3:
        x = x * 2.0
    return x


def test_conditions_are_kept_whole_and_named():
    text = source(normalised(a_condition)[0])
    assert "np.sum(x)" in text and "np.max(x)" in text
    branch = [s for s in normalised(a_condition)[0] if isinstance(s, gast.If)]
    assert len(branch) == 1 and isinstance(branch[0].test, gast.Name)

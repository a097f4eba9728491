"""The compiler differentiates the code that runs: its parsed source is checked
against the function's own bytecode, so a file edited after import is refused
(issue 8, class 10), while unchanged functions in every kind of scope compile."""
import linecache

import numpy as np
import pytest

import srcdiff as sd
from util import module_from_source, numerical_grad

X = np.array([0.5, 1.0, 1.5])


@pytest.fixture
def module(tmp_path):
    """``module(text)`` imports ``text`` as a new module from a file of its own."""
    count = iter(range(1000))
    return lambda text: module_from_source(tmp_path / f"edited_{next(count)}.py", text)


def edit(path, old, new):
    """Replace ``old`` by ``new`` in the file (its size changes, so linecache sees it)."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


SOURCE = """\
import numpy as np


def f(x):
    return np.sum(np.sin(x) * 3.0)
"""


def test_an_unchanged_file_compiles(module):
    mod = module(SOURCE)
    np.testing.assert_allclose(sd.grad(mod.f)(X), 3.0 * np.cos(X))


@pytest.mark.parametrize("old, new", [
    ("3.0", "4.0"),                                  # another constant
    ("np.sin", "np.cos"),                            # another function
    ("def f(x):", "\ndef f(x):"),                    # the def moved: inspect finds other lines
    ("def f(x):\n", "def f(x):\n    x = x * 2.0\n"),  # a statement more
])
def test_a_file_edited_after_import_is_refused(module, old, new):
    mod = module(SOURCE)
    edit(mod.path, old, new)
    with pytest.raises(sd.CompileError, match="changed after it was imported") as info:
        sd.grad(mod.f)(X)
    assert str(mod.path) in str(info.value) and "Reload the module" in str(info.value)


def test_an_edit_linecache_already_holds_is_seen(module):
    mod = module(SOURCE)
    linecache.getlines(str(mod.path))  # cached before the edit: checkcache must drop it
    edit(mod.path, "3.0", "5.0")
    with pytest.raises(sd.CompileError, match="changed after it was imported"):
        sd.value_and_grad(mod.f)(X)


def test_editing_only_comments_changes_no_code(module):
    mod = module(SOURCE)
    edit(mod.path, "    return", "    # a comment\n    return")
    np.testing.assert_allclose(sd.grad(mod.f)(X), 3.0 * np.cos(X))


def test_a_deleted_file_is_refused(module):
    mod = module(SOURCE)
    mod.path.unlink()
    linecache.checkcache(str(mod.path))
    with pytest.raises(sd.CompileError, match="cannot read the source"):
        sd.grad(mod.f)(X)


SCOPES = """\
from __future__ import annotations
import functools
try:
    import numpy as np
except ImportError:
    np = None


def traced(fn):
    @functools.wraps(fn)
    def wrapper(x):  # compiled as written (a *args wrapper is refused)
        return fn(x)
    return wrapper


def plain(fn):
    return fn


@traced
@plain
def decorated(x: float) -> float:
    '''A docstring
       over lines.'''
    return np.sum(x ** 3)


def make_closure(scale):
    def closure(x):
        return np.sum(x * scale)
    return closure


class Model:
    __factor = 2.0

    @staticmethod
    def method(x):
        '''Indented,
           over two lines: dedenting the source would change this string.'''
        text = '''kept
           as written'''
        return np.sum(np.tanh(x) * Model.__factor)  # a private name: mangled

    class Inner:
        @staticmethod
        def deeper(x):
            return np.sum(x * x)


def outer():
    class Local:
        @staticmethod
        def f(x):
            return np.sum(np.exp(x))
    return Local.f
"""


@pytest.mark.parametrize("name, expected", [
    ("decorated", lambda x: 3 * x ** 2),
    ("closure", lambda x: 4.0 + 0 * x),
    ("method", lambda x: 2.0 / np.cosh(x) ** 2),
    ("deeper", lambda x: 2 * x),
    ("local", np.exp),
])
def test_unchanged_functions_in_every_scope_compile(module, name, expected):
    mod = module(SCOPES)
    fn = {"decorated": mod.decorated, "closure": mod.make_closure(4.0),
          "method": mod.Model.method, "deeper": mod.Model.Inner.deeper,
          "local": mod.outer()}[name]
    np.testing.assert_allclose(sd.grad(fn)(X), expected(X), rtol=1e-12)
    np.testing.assert_allclose(sd.grad(fn)(X), numerical_grad(fn, X), rtol=1e-6)


def test_an_edited_method_is_refused(module):
    mod = module(SCOPES)
    edit(mod.path, "np.tanh(x) * Model.__factor", "np.tanh(x) * 3.0")
    with pytest.raises(sd.CompileError, match="source of Model.method in .* is not the code that runs"):
        sd.grad(mod.Model.method)(X)


def test_an_edited_closure_is_refused(module):
    mod = module(SCOPES)
    edit(mod.path, "x * scale", "x + scale")
    with pytest.raises(sd.CompileError, match="changed after it was imported"):
        sd.grad(mod.make_closure(4.0))(X)


RULE = """\
import numpy as np
import srcdiff as sd


def cube(x):
    return x ** 3


@sd.register_gradient(cube)
def cube_grad(g, ans, x):
    return g * 3.0 * x ** 2


def f(x):
    return np.sum(cube(x))
"""


def test_a_rule_edited_after_import_is_called_not_inlined(module):
    mod = module(RULE)
    edit(mod.path, "g * 3.0 * x ** 2", "g * 5.0 * x ** 2")
    np.testing.assert_allclose(sd.grad(mod.f)(X), 3.0 * X ** 2)
    assert "cube_grad(" in sd.adjoint_source(mod.f)  # the rule's own code runs


def test_an_unchanged_rule_is_inlined(module):
    mod = module(RULE)
    np.testing.assert_allclose(sd.grad(mod.f)(X), 3.0 * X ** 2)
    assert "cube_grad(" not in sd.adjoint_source(mod.f)


def test_a_coroutine_is_refused_as_such_not_as_edited(module):
    mod = module("async def co(x):\n    return x * 2.0\n")
    with pytest.raises(sd.CompileError, match="it is not a plain 'def'"):
        sd.grad(mod.co)(1.0)

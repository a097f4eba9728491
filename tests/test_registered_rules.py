"""A rule given to ``sd.register_gradient`` serves the tape and the compiler alike, however
its function is called: arguments by position or keyword, settings the rule reads by
name or through ``**kwargs``, one adjoint or a tuple of them.  What it does not model
(an adjoint it does not return, a setting given a gradient) is refused by both."""
import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import srcdiff as sd
from util import numerical_grad

RULES = """\
import numpy as np
import srcdiff as sd


def powered(x, p=2.0, **options):
    return x ** p * options.get("scale", 1.0)


@sd.register_gradient(powered)
def _powered_grad(g, ans, x, p=2.0, **options):  # one adjoint: x's
    return g * p * x ** (p - 1.0) * options.get("scale", 1.0)


def scaled(x, *, by=1.0):
    return x * by


@sd.register_gradient(scaled)
def _scaled_grad(g, ans, x, *, by=1.0):  # by= is a setting: held constant
    return g * by


def affine(x, y):
    return x * y + y


@sd.register_gradient(affine)
def _affine_grad(g, ans, x, y):
    return g * y, g * (x + 1.0)


def by_position(x, y):
    return np.sum(powered(x, 3.0) * y)


def by_keyword(x, y):
    return np.sum(powered(x, p=3.0) + y)


def through_options(x, y):
    return np.sum(powered(x, 3.0, scale=2.0) * y)


def keyword_only_setting(x, y):
    return np.sum(scaled(x, by=2.5) * y)


def both_adjoints(x, y):
    return np.sum(affine(x, y) * affine(y, x))


def an_active_power(x, y):
    return np.sum(powered(x, np.sum(y)))


def an_active_setting(x, y):
    return np.sum(scaled(x, by=np.sum(y)))
"""

X = np.array([0.5, 1.0, 1.5])
Y = np.array([2.0, -1.0, 0.5])


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    """The module above, imported from a file of its own (the compiler reads a rule's
    source there) and under its name (register_gradient rebinds its functions)."""
    path = tmp_path_factory.mktemp("rules") / "registered_rules.py"
    path.write_text(textwrap.dedent(RULES))
    spec = importlib.util.spec_from_file_location("registered_rules", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def on_the_tape(f, x, y):
    x, y = sd.Variable(x), sd.Variable(y)
    with sd.GradientTape() as tape:
        out = f(x, y)
    return tape.gradient(out, [x, y])


PROGRAMS = ["by_position", "by_keyword", "through_options", "keyword_only_setting",
            "both_adjoints"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_compiled_and_taped_gradients_match_finite_differences(rules, name):
    f = getattr(rules, name)
    expected = [numerical_grad(lambda x: f(x, Y), X), numerical_grad(lambda y: f(X, y), Y)]
    compiled = sd.grad(f, wrt=(0, 1))(X, Y)
    taped = on_the_tape(f, X, Y)
    for got in (compiled, [t.numpy() for t in taped]):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


def test_an_adjoint_the_rule_does_not_return_is_refused(rules):
    # it once went to every argument: the power got the adjoint of x
    with pytest.raises(ValueError, match="argument 2 needs one too"):
        on_the_tape(rules.an_active_power, X, Y)
    with pytest.raises(ValueError, match="argument 2 needs one too"):
        sd.grad(rules.an_active_power, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(  # of x alone, the one adjoint is x's
        sd.grad(rules.an_active_power)(X, Y),
        numerical_grad(lambda x: rules.an_active_power(x, Y), X), rtol=1e-6)


def test_a_setting_given_a_gradient_is_refused(rules):
    with pytest.raises(TypeError, match="by keyword"):
        on_the_tape(rules.an_active_setting, X, Y)
    with pytest.raises(sd.CompileError, match="argument by=, a setting"):
        sd.grad(rules.an_active_setting, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(
        sd.grad(rules.an_active_setting)(X, Y), np.full(3, np.sum(Y)))

"""Code at the compiler's limits compiles right or raises a CompileError, never
crashes with a RecursionError or a SyntaxError from generated code (issue 8,
class 14)."""
import numpy as np
import pytest

import srcdiff as sd
from util import module_from_source, numerical_grad


def compile_text(tmp_path, body):
    """The function ``f(x)`` whose body is ``body`` (lines indented by 4)."""
    return module_from_source(tmp_path / "limits.py",
                              "import numpy as np\n\ndef f(x):\n" + body).f


def long_sum(terms):
    return "    return " + " + ".join(f"x * {k}.0" for k in range(terms)) + "\n"


def nested_calls(depth):
    return "    return " + "np.sin(" * depth + "x" + ")" * depth + "\n"


def test_a_sum_of_190_terms_compiles(tmp_path):
    f = compile_text(tmp_path, long_sum(190))
    assert sd.grad(f)(0.5) == sum(range(190))


def test_calls_nested_120_deep_compile(tmp_path):
    f = compile_text(tmp_path, nested_calls(120))
    np.testing.assert_allclose(sd.grad(f)(0.5), numerical_grad(f, 0.5), rtol=1e-6)


@pytest.mark.parametrize("body", [long_sum(300), long_sum(1000), nested_calls(190)],
                         ids=["300 terms", "1000 terms", "190 calls"])
def test_deeper_expressions_are_refused_at_their_line(tmp_path, body):
    f = compile_text(tmp_path, body)
    with pytest.raises(sd.CompileError, match="nests too deeply") as info:
        sd.grad(f)(0.5)
    assert info.value.lineno == 4 and "Assign parts of a long expression" in str(info.value)


def elif_chain(arms):
    """Arm k (y < k) rewrites y, which later conditions read: only one arm may run."""
    lines = ["    y = x * 1.0\n"]
    for k in range(arms):
        lines.append(f"    {'if' if k == 0 else 'elif'} y < {k}.5:\n"
                     f"        y = y * {k + 2}.0 + 100.0\n")
    lines.append("    else:\n        y = np.sin(y)\n    return y * x\n")
    return "".join(lines)


@pytest.mark.parametrize("arms", [3, 30, 125])
def test_elif_chains_up_to_125_arms_compile_right(tmp_path, arms):
    f = compile_text(tmp_path, elif_chain(arms))
    for x in [-0.5, 0.25, 1.25, arms / 2 + 0.25, arms - 0.75, arms + 1.0]:
        value, grad = sd.value_and_grad(f)(x)
        assert value == pytest.approx(f(x), rel=1e-12)
        assert grad == pytest.approx(numerical_grad(f, x), rel=1e-6)


def test_a_longer_elif_chain_is_refused(tmp_path):
    f = compile_text(tmp_path, elif_chain(140))
    with pytest.raises(sd.CompileError, match="nests too deeply") as info:
        sd.grad(f)(0.5)
    assert "split a long elif chain" in str(info.value)


def test_generated_code_python_cannot_compile_is_a_compile_error(tmp_path):
    # each early exit guards the rest of the loop body: 110 of them nest 110 blocks
    body = "    s = 0.0\n    for i in range(3):\n" + "".join(
        f"        if x > {k}.0 + i:\n            continue\n        s = s + x * {k}.0\n"
        for k in range(110)) + "    return s\n"
    f = compile_text(tmp_path, body)
    with pytest.raises(sd.CompileError, match="beyond what Python compiles: too many levels"):
        sd.grad(f)(0.5)

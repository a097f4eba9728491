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
    assert info.value.lineno == 4 and "Assign parts of it to variables" in str(info.value)

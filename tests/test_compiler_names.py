"""Generated names are valid and unique by construction (issue 8, class 13): an
adjoint is never a Python keyword (``el`` -> ``del``), and a variable named like
something the generated code reads as a global (``np``, ``unbroadcast``,
``reversed``, ``tape``...) is renamed rather than shadowing it."""
import ast
import keyword
import pathlib
import re

import numpy as np
import pytest

import srcdiff as sd
from srcdiff import rules
from srcdiff.compiler import codegen, inline
from srcdiff.compiler.names import Names
from compiler_programs import check_grad
from util import module_from_source, numerical_grad

COMPILER = pathlib.Path(codegen.__file__).parent


def keyword_stems():
    """Names whose adjoint ``d`` + name would be a keyword."""
    return {k[1:] for k in keyword.kwlist if k.startswith("d") and k[1:].isidentifier()}


def emitted_names():
    """Bare names the compiler's passes write into generated code, read from their
    source: ``S.name("range")``, ``S.expr("np.add.at")``, ``refs.helper("unbroadcast")``,
    ``refs.bind(shape_of, "shape_of")``."""
    patterns = [r'S\.name\("(\w+)"', r'S\.expr\(f?"([A-Za-z_]\w*)', r'helper\("(\w+)"\)',
                r'bind\(\w+, "(\w+)"\)']
    found = set()
    for path in COMPILER.glob("*.py"):
        text = path.read_text()
        for pattern in patterns:
            found |= set(re.findall(pattern, text))
    return found


def rule_names():
    """Globals the inlined rule bodies read, and the bare names primitives are called
    by (what ``Refs.function_expr`` writes when a function is not ``np.NAME``)."""
    found = set()
    for primitive, rule in rules.all_rules().items():
        # a namespace each: math.erf and scipy.special.erf are both erf, never erf_1
        refs = codegen.Refs({})
        expr = refs.function_expr(rules.registry.RAW.get(primitive, primitive))
        if isinstance(expr, sd.compiler.codegen.gast.Name):
            found.add(expr.id)
        for i in range(len(rule.vjps) or 1):
            vjp = rule.vjp(i)
            try:
                found |= inline.rule_syntax(vjp).globals_used() if vjp else set()
            except LookupError:  # a rule called rather than inlined
                pass
    return found


GLOBAL_NAMES = sorted(n for n in emitted_names() | rule_names() if not keyword.iskeyword(n))


def test_the_names_collected_from_the_code_are_many():
    for name in ["np", "tape", "unbroadcast", "unreduce", "shape_of", "reversed", "range",
                 "slice", "last_writes"]:
        assert name in GLOBAL_NAMES
    assert len(GLOBAL_NAMES) > 40


@pytest.mark.parametrize("name", GLOBAL_NAMES)
def test_every_name_generated_code_reads_is_reserved(name):
    assert Names(()).reserves(name)


# reads no global itself: methods and a loop over a tuple become np.sum, len and range
# in the generated code (np.sum is resolved in the module, which imports numpy as np)
TEMPLATE = """
def {name}_case(x, b):
    {name} = x * b
    total = 0.0
    for k in (1.0, 2.0, 3.0):
        total = total + ({name} * x).sum() * k
    return total + ({name} ** 3).sum() + (x[1:] * {name}[0, :2]).sum()
"""


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """One function per name, with a local variable of that name: it is broadcast
    (unbroadcast), summed (unreduce), read in a loop (len, range, reversed, _) and
    indexed."""
    names = sorted(keyword_stems() | set(GLOBAL_NAMES))
    text = "import numpy as np\n" + "".join(TEMPLATE.format(name=n) for n in names)
    return module_from_source(tmp_path_factory.mktemp("names") / "named.py", text)


X = np.array([0.5, 1.0, 1.5])
B = np.array([[1.0], [2.0]])


@pytest.mark.parametrize("name", sorted(keyword_stems()) + GLOBAL_NAMES)
def test_a_variable_named_like_a_keyword_stem_or_a_global_differentiates(cases, name):
    fn = getattr(cases, f"{name}_case")
    expected = numerical_grad(lambda x: fn(x, B), X)
    np.testing.assert_allclose(sd.grad(fn)(X, B), expected, rtol=1e-6, atol=1e-8)
    source = sd.adjoint_source(fn)
    bound = {n.id for n in ast.walk(ast.parse(source))
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    assert name not in bound and f"d{name}" not in bound or name in keyword_stems()
    assert not any(keyword.iskeyword(n) for n in bound)


def test_a_local_named_like_a_global_of_a_registered_rule(tmp_path):
    # the rule's body, inlined, reads SCALE: the function's own SCALE must not shadow it
    mod = module_from_source(tmp_path / "rule_globals.py", """\
        import numpy as np
        import srcdiff as sd

        SCALE = 3.0


        def cube(x):
            return x ** 3


        @sd.register_gradient(cube)
        def cube_grad(g, ans, x):
            return g * SCALE * x ** 2


        def f(x):
            SCALE = x * 2.0
            return np.sum(cube(x)) + np.sum(SCALE)


        def g(x):
            FACTOR = x * 2.0
            return np.sum(cube(x)) + np.sum(FACTOR)
        """)
    np.testing.assert_allclose(sd.grad(mod.f)(X), 3.0 * X ** 2 + 2.0)
    sd.register_gradient(mod.cube)(cube_grad_again)  # replaced: its globals count now
    np.testing.assert_allclose(sd.grad(mod.g)(X), 3.0 * X ** 2 + 2.0)


FACTOR = 3.0


def cube_grad_again(g, ans, x):
    return g * FACTOR * x ** 2


def underscore_first(x):
    _, log_det = np.linalg.slogdet(np.outer(x, x) + np.eye(3))
    __, b = np.sin(x), np.cos(x)
    return log_det + np.sum(b) + np.sum(_ * 0.0)


def test_an_underscore_target_of_a_call_with_several_results():
    # the call's tape is named after its first target: "_" must still give a name
    check_grad(underscore_first, (np.array([0.3, -0.5, 0.8]),))

"""What keeps compiling fast without changing what it makes (benchmarks/compile_scaling.py
times it): the compiler's own conversions between ast and gast (convert.py), and a
compile that leaves no reference cycles for the garbage collector (the collection after
a compile walked them all)."""
import ast
import gc

import gast
import numpy as np
import pytest

import srcdiff as sd
from srcdiff.compiler import codegen, convert

from util import function_from_text, numerical_grad

# every kind of node the conversion special-cases, and the usual others
FORMS = '''
def f(a, b=1, *args, c, d=2, **kwargs):
    x = a[1:2, ::3] + b @ c ** -d
    y, *z = (lambda p, q=3, *r, s, **t: p)(x, q=4)
    u = [i for i in range(3) if i] + {k: v for k, v in kwargs.items()}
    v: int = 1
    w += {1, 2} - {3} and not x or ...
    for i in range(3):
        if i:
            continue
        elif x is None:
            break
        else:
            pass
    while False:
        del x[0], y.attr
    try:
        raise ValueError("no") from None
    except (ValueError, TypeError) as e:
        pass
    except Exception:
        pass
    finally:
        x = f"{a!r:>{b}}"
    with open("f") as h, open("g"):
        global q
    return (yield from x) if await y else [*z]

async def g(a, /, b):
    async for i in a:
        async with b as c:
            nonlocal d
    assert a, "msg"
    return -a if a < b <= 3 != 4 else b

class C(B, metaclass=M):
    x = 1
'''


def _dump(tree):
    return ast.dump(tree, include_attributes=True)


def test_every_form_converts_as_gast_converts_it():
    tree = ast.parse(FORMS)
    assert _dump(convert.to_gast(tree)) == _dump(gast.ast_to_gast(tree))
    module = gast.parse(FORMS)
    assert _dump(convert.to_ast(module)) == _dump(gast.gast_to_ast(module))


def test_a_function_read_converts_as_gast_converts_it():
    """The tree of a function read from its file (with its locations, as the compiler's
    reader makes it: an indented def, parsed under 'if 1:')."""
    from srcdiff.compiler.parse import read_def
    tree, _ = read_def(test_generated_syntax_converts_as_gast_does)
    assert _dump(convert.to_gast(tree)) == _dump(gast.ast_to_gast(tree))


def test_generated_syntax_converts_as_gast_does(monkeypatch):
    """The modules the compiler generates (built node by node, not parsed) convert to the
    same ast as gast makes of them."""
    made = []
    to_ast = convert.to_ast
    monkeypatch.setattr(codegen, "to_ast", lambda node: (made.append(node), to_ast(node))[1])

    def f(x, w, n):
        total = 0.0
        for i in range(n):
            if i % 2:
                total = total + np.sum(np.tanh(w * x))
            else:
                total = total + np.sum(x[1:] ** 2)
        return total

    sd.grad(f, wrt=(0, 1))(np.linspace(0.1, 0.9, 4), np.ones(4), 3)
    (module,) = made
    assert _dump(to_ast(module)) == _dump(gast.gast_to_ast(module))


def _straight(n):
    """A function of ``n`` statements, each reading the two before it."""
    lines = ["def straight(x):", "    a = x", "    b = np.sin(x)"]
    names = ["a", "b"]
    for k in range(n - 2):
        op = ("np.sin({}) * {}", "{} + 0.5 * {}", "np.tanh({} - {})")[k % 3]
        lines.append(f"    v{k} = " + op.format(names[-1], names[-2]))
        names.append(f"v{k}")
    lines.append(f"    return np.sum({names[-1]})")
    return function_from_text("\n".join(lines) + "\n", "straight",
                              f"<test_compile_speed {n}>")


def _garbage_of_compile(fn, x):
    """How many objects the cyclic collector finds after compiling ``fn`` (and the
    gradient it computes)."""
    sd.clear_cache()
    gc.collect()
    gc.disable()
    try:
        value = sd.grad(fn)(x)
        return gc.collect(), value
    finally:
        gc.enable()


@pytest.mark.parametrize("checks", ["0", "1"])
def test_a_compile_leaves_no_cycles_that_grow_with_the_function(monkeypatch, checks):
    """Reference cycles made per statement (a recursive closure, a class made per
    expression, an object holding its own bound method) would keep the compile's
    records until a collection, which then walks them all."""
    monkeypatch.setenv("SRCDIFF_CHECKS", checks)
    x = np.linspace(0.1, 0.9, 4)
    small, big = _straight(10), _straight(120)
    _garbage_of_compile(small, x)  # first compiles import and register what they use
    found_small, _ = _garbage_of_compile(small, x)
    found_big, grad = _garbage_of_compile(big, x)
    assert found_big == found_small
    assert found_big < 100
    np.testing.assert_allclose(grad, numerical_grad(big, x), rtol=1e-6, atol=1e-8)


def _doubled(x):
    return x * 2


def test_a_backward_pass_that_starts_with_a_block_starts_with_its_comment():
    """A marker that opens a function's body is unparsed as a docstring: read from the
    parsed text, it still becomes the block's comment (it once stayed a string)."""
    code = str(sd.adjoint_source(_doubled))
    backward = code[code.index("def _doubled_backward"):]
    assert backward.splitlines()[1].strip().startswith("# line ")
    assert "\\x00" not in code and '"""' not in code
    np.testing.assert_allclose(sd.grad(lambda x: np.sum(_doubled(x)))(np.ones(3)), 2.0)

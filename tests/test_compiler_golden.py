"""The generated adjoint source of a few functions (tests/golden/programs.py), compared
byte for byte with tests/golden/<name>.txt, the same in every process, and with the
properties readable code needs: adjoints named after their primals, a comment quoting
each source line an adjoint block comes from, no adjoint for inactive values, no stack
in straight-line code.

After an intended change of the generated code, regenerate the files with
``SRCDIFF_REGEN_GOLDEN=1 python -m pytest tests/test_compiler_golden.py`` and review
the diff.
"""
import inspect
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import srcdiff as sd
from golden import programs

GOLDEN = pathlib.Path(__file__).parent / "golden"
REGENERATE = os.environ.get("SRCDIFF_REGEN_GOLDEN") == "1"
NAMES = sorted(programs.PROGRAMS)


def generated(name):
    fn, wrt, _ = programs.PROGRAMS[name]
    return sd.adjoint_source(fn, wrt)


@pytest.mark.parametrize("name", NAMES)
def test_matches_the_golden_file(name):
    path = GOLDEN / f"{name}.txt"
    text = generated(name)
    if REGENERATE:
        path.write_text(text)
        pytest.skip(f"regenerated {path}")
    assert path.exists(), f"no golden file {path}: run with SRCDIFF_REGEN_GOLDEN=1"
    assert text == path.read_text(), (
        f"the generated source of {name} changed; if intended, regenerate with "
        "SRCDIFF_REGEN_GOLDEN=1 and review the diff")


_PRINT_ALL = """
import json, sys
sys.path.insert(0, {tests!r})
import srcdiff as sd
from golden import programs
print(json.dumps({{name: sd.adjoint_source(fn, wrt)
                  for name, (fn, wrt, _) in programs.PROGRAMS.items()}}))
"""


@pytest.mark.parametrize("hash_seed", ["0", "4242"])
def test_the_same_in_another_process(hash_seed):
    # another hash seed reorders sets and dicts of strings: the text must not depend on it
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    script = _PRINT_ALL.format(tests=str(pathlib.Path(__file__).parent))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert json.loads(out) == {name: generated(name) for name in NAMES}


def backward_part(text):
    return text[text.index("_backward("):]


def test_adjoint_names_come_from_primal_names():
    mlp = backward_part(generated("mlp_layer"))
    for name in ("dW", "db", "dh"):
        assert re.search(rf"\b{name} = ", mlp), name
    assert "return (dW, db)" in mlp
    assert re.search(r"\bdy\b", generated("loop_overwrite"))


@pytest.mark.parametrize("name", NAMES)
def test_each_adjoint_block_quotes_its_source_line(name):
    fn = programs.PROGRAMS[name][0]
    lines, first = inspect.getsourcelines(fn)
    source = {first + k: line.strip() for k, line in enumerate(lines)}
    quoted = {}
    for number, text in re.findall(r"# line (\d+): (.*)", generated(name)):
        quoted[int(number)] = text
    for number, text in quoted.items():
        assert source[number] == text, f"line {number} is {source[number]!r}, not {text!r}"
    expected = {n for n, text in source.items()
                if re.match(r"(return |[\w\[\], +]+ = )", text) and "# inactive" not in text}
    assert set(quoted) == expected


@pytest.mark.parametrize("name", NAMES)
def test_no_adjoint_for_inactive_values(name):
    backward = backward_part(generated(name))
    for primal in programs.PROGRAMS[name][2]:
        assert not re.search(rf"\bd{primal}\b", backward), f"d{primal} in {name}"


@pytest.mark.parametrize("name", ["mlp_layer", "branch"])
def test_no_stack_in_straight_line_code(name):
    text = generated(name)
    for word in ("_stack", ".append(", ".pop(", "for "):
        assert word not in text

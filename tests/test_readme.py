"""The README tells the truth: every code block runs as shown.

The rule: every fenced block whose language is ``python`` (or ``py``) runs ALONE, as a
file a reader saves and runs with ``python3`` in an empty directory; no block may rely on
names another block defined. A block that begins like generated code (``OUTPUT``) is
not run: it is what the block before it prints, exactly. A line ``print(...)  # text``
shows what that print writes: the output line it produces (the prints of a block, in
order, one line each) matches ``text``, where ``...`` stands for any text. The Python
version the README names is the one setup.cfg requires, and no source uses syntax newer
than it.
"""
import ast
import configparser
import pathlib
import re
import subprocess
import sys

import pytest

from doc_blocks import python_blocks

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEXT = README.read_text()
BLOCKS = python_blocks(README)
OUTPUT = "def layer_forward"  # the generated code the compiler example prints
SHOWN = re.compile(r"^print\(.*\)\s+# (.+)$")


def _run(block, tmp_path):
    script = tmp_path / "block.py"
    script.write_text(block)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


@pytest.mark.parametrize("k", [k for k, b in enumerate(BLOCKS) if not b.startswith(OUTPUT)])
def test_a_readme_block_runs_as_shown(k, tmp_path):
    run = _run(BLOCKS[k], tmp_path)
    assert run.returncode == 0, run.stderr
    shown = BLOCKS[k + 1] if k + 1 < len(BLOCKS) else ""
    if shown.startswith(OUTPUT):
        assert run.stdout.strip() == shown.strip()
    prints = [line for line in BLOCKS[k].splitlines() if line.startswith("print(")]
    claims = [SHOWN.match(line) for line in prints]
    if any(claims):
        lines = run.stdout.splitlines()
        assert len(lines) == len(prints), "each print of a block with shown output writes a line"
        for claim, line in zip(claims, lines):
            if claim:
                pattern = ".*".join(map(re.escape, claim.group(1).strip().split("...")))
                assert re.fullmatch(pattern, line), f"README shows {claim.group(1)!r}, got {line!r}"


def test_every_python_block_is_collected():
    fences = re.findall(r"^```(\S*)$", TEXT, re.M)
    opening = fences[::2]  # fences alternate: an opening one, then its closing one
    assert len(opening) == len(fences) - len(opening)
    pythonish = [lang for lang in opening if lang.lower().startswith("py")]
    assert len(pythonish) == len(BLOCKS) >= 3


def _minimum_python():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    required = config["options"]["python_requires"]
    match = re.fullmatch(r">=\s*3\.(\d+)", required.strip())
    assert match, f"python_requires {required!r} is not of the form >=3.N"
    return 3, int(match.group(1))


def test_the_python_version_the_readme_names_is_the_required_one():
    major, minor = _minimum_python()
    claims = set(re.findall(r"Python (3\.\d+) or newer", TEXT))
    assert claims == {f"{major}.{minor}"}
    assert sys.version_info >= (major, minor)


def test_no_source_uses_syntax_newer_than_the_required_python():
    version = _minimum_python()
    files = [p for folder in ("srcdiff", "examples", "benchmarks")
             for p in (ROOT / folder).rglob("*.py")]
    assert files
    for path in files:
        ast.parse(path.read_text(), str(path), feature_version=version)

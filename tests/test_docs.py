"""Every Python block of the guide in docs/ runs as shown, and every public name of
srcdiff has a docstring whose ``>>>`` examples run as shown (doctest).

The rule: a page's ```python blocks, in order, make one script (a later block may use
what an earlier one defined, as a reader following the page would), written to a file
(the compiler reads functions' source from their file) and run in a fresh interpreter.
The blocks check their own claims with ``assert`` or ``sd.check_grads`` (gradients
against finite differences or the eager tape), so a page whose text goes wrong fails."""
import doctest
import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import srcdiff as sd
from doc_blocks import python_blocks

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_a_pages_blocks_run_in_order(page, tmp_path):
    script = tmp_path / f"{page.stem}.py"
    script.write_text("\n".join(python_blocks(page)))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr


def links(page):
    return set(re.findall(r"\]\(([\w-]+\.md)\)", page.read_text()))


def test_the_index_links_every_page_and_every_link_resolves():
    names = {p.name for p in PAGES}
    assert names - {"index.md"} <= links(DOCS / "index.md")
    for page in PAGES:
        assert links(page) <= names, page.name


def test_the_readme_links_the_guide():
    assert "(docs/index.md)" in (ROOT / "README.md").read_text()


PUBLIC = sorted(name for name in dir(sd) if not name.startswith("_")
                and callable(getattr(sd, name)) and not inspect.ismodule(getattr(sd, name)))


def test_every_public_callable_has_a_docstring():
    assert [name for name in PUBLIC if not (getattr(sd, name).__doc__ or "").strip()] == []


@pytest.mark.parametrize("name", [n for n in PUBLIC if ">>>" in (getattr(sd, n).__doc__ or "")])
def test_a_docstrings_examples_run(name):
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner()
    for test in finder.find(getattr(sd, name), name, globs={}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0

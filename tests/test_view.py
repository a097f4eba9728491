"""The side-by-side view (srcdiff/view.py): ``sd.adjoint_source`` is the generated text,
and its HTML puts each source line beside the adjoint blocks it produced.

The oracle for "which block is whose" is the generated text's own ``# line N``
comments, read here independently of the compiler's map; the page is rendered by a
real browser (Chromium, headless) when one is installed."""
import copy
import html
import inspect
import pickle
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

import srcdiff as sd
from srcdiff import view


def damped(x, rate, steps):
    """Loops, a branch, several statements from one line."""
    for _ in range(steps):
        if np.sum(x * x) > 1.0:
            x = np.tanh(x)
        elif np.sum(x) < 0.0:
            x = x * 0.5
        else:
            x = x * rate + np.sin(x)
    return np.sum(x ** 2)


def branchy(x, scale):
    if np.sum(x) > 0.0:
        y = x * scale
    elif np.sum(x) < -1.0:
        y = np.exp(x)
    else:
        y = np.sin(x)
    return np.sum(y * x)


def helper(x):
    return np.exp(x) / 2.0


def calls(x, w):
    y = helper(x * w)
    return np.sum(helper(y))


def straight(x, W, b):
    h = np.tanh(W @ x + b)
    return np.sum(h ** 2)


FUNCTIONS = [(damped, ("x", "rate")), (branchy, "x"), (calls, "w"), (straight, "W")]


def commented_blocks(text):
    """{source line: [the first statement after each '# line N' comment]}, read from
    the text."""
    lines = text.splitlines()
    found = {}
    for k, line in enumerate(lines):
        match = re.match(r"\s*# line (\d+):", line)
        if match:
            found.setdefault(int(match.group(1)), []).append(lines[k + 1].strip())
    return found


class Rows(HTMLParser):
    """The table's rows: {line: (source cell text, adjoint cell text, adjoint blocks)}."""

    def __init__(self):
        super().__init__()
        self.rows, self.line, self.cell, self.blocks = {}, None, None, 0
        self.tables = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("class") == "srcdiff-table":
            self.tables += 1
        if tag == "tr" and attrs.get("class") == "srcdiff-row":
            self.line = int(attrs["data-line"])
            self.rows[self.line] = {"source": "", "adjoint": "", "blocks": 0, "number": ""}
        elif tag == "td" and self.line is not None:
            self.cell = attrs["class"].removeprefix("srcdiff-")
        elif tag == "pre" and self.cell == "adjoint":
            self.rows[self.line]["blocks"] += 1

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None
        elif tag == "tr":
            self.line = None

    def handle_data(self, data):
        if self.line is not None and self.cell:
            self.rows[self.line][self.cell] += data


def rows_of(document):
    parser = Rows()
    parser.feed(document)
    return parser


def check_rows(rows, fn, text):
    """Every source line of ``fn`` has its row, in order, beside its adjoint blocks."""
    lines, first = inspect.getsourcelines(fn)
    assert list(rows) == list(range(first, first + len(lines)))
    expected = commented_blocks(text)
    assert expected, "the generated code has adjoint blocks"
    for number, row in rows.items():
        assert row["number"].strip() == str(number)
        assert row["source"] == lines[number - first].rstrip("\n")
        statements = expected.get(number, [])
        assert row["blocks"] == len(statements), (number, row)
        for statement in statements:
            assert statement in row["adjoint"], (number, statement, row["adjoint"])


@pytest.mark.parametrize("fn, wrt", FUNCTIONS, ids=lambda v: getattr(v, "__name__", ""))
def test_the_text_is_the_generated_source(fn, wrt):
    source = sd.adjoint_source(fn, wrt)
    assert isinstance(source, str)
    from srcdiff.compiler.cache import CACHE
    params = list(inspect.signature(fn).parameters)
    wrt = (wrt,) if isinstance(wrt, str) else wrt
    unit = CACHE.get(fn, tuple(p in wrt for p in params))
    assert source == unit.source
    assert str(source) == unit.source and type(str(source)) is str


def test_a_copy_or_a_pickle_is_the_text():
    source = sd.adjoint_source(straight, "W")
    for other in (copy.copy(source), copy.deepcopy(source), pickle.loads(pickle.dumps(source))):
        assert other == source


@pytest.mark.parametrize("fn, wrt", FUNCTIONS, ids=lambda v: getattr(v, "__name__", ""))
def test_each_source_line_sits_beside_its_blocks(fn, wrt):
    source = sd.adjoint_source(fn, wrt)
    rows = rows_of(source._repr_html_())
    check_rows(rows.rows, fn, source)
    assert rows.tables == 1


def context_of(fn, wrt, offset):
    """The adjoint cell of line ``offset`` of ``fn``, as lines without indentation."""
    rows = rows_of(sd.adjoint_source(fn, wrt)._repr_html_()).rows
    return [a.strip() for a in rows[inspect.getsourcelines(fn)[1] + offset]["adjoint"]
            .splitlines()]


def test_a_nested_block_shows_the_code_around_it():
    adjoint = context_of(damped, ("x", "rate"), 8)  # x = x * rate + np.sin(x)
    assert adjoint[0].startswith("for ") and "reversed(range(steps))" in adjoint[0]
    # the else branch of the else branch
    assert adjoint[1:7] == ["if cond_1:", "...", "else:", "if cond_2:", "...", "else:"]
    assert adjoint[7].startswith("dx_1 = ")


def test_an_elif_block_shows_its_chain():
    assert context_of(branchy, "x", 4)[:4] == ["if cond_1:", "...", "elif cond_2:",
                                               "dx += into(dy, np.multiply, dy, y)"]
    assert context_of(branchy, "x", 6)[:5] == ["if cond_1:", "...", "elif cond_2:", "...",
                                               "else:"]


def test_the_whole_code_is_in_the_view_too():
    source = sd.adjoint_source(damped, ("x", "rate"))
    shown = html.unescape(re.sub(r"<[^>]+>", "", source._repr_html_()))
    for line in source.splitlines():
        assert line in shown


def test_callees_are_the_functions_called():
    source = sd.adjoint_source(calls, "w")
    callees = source.callees()
    assert len(callees) >= 1 and all(c.title.startswith("helper:") for c in callees)
    for callee in callees:
        check_rows(rows_of(callee._repr_html_()).rows, helper, callee)
    assert sd.adjoint_source(straight).callees() == ()
    page = source.html_page(callees=True)
    assert rows_of(page).tables == 1 + len(callees)


def test_highlighted_with_pygments():
    pytest.importorskip("pygments")
    text = sd.adjoint_source(straight, "W")._repr_html_()
    assert re.search(r'<span style="[^"]*color:#[0-9a-fA-F]{6}[^"]*">def</span>', text)


def test_plain_without_pygments(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygments.lexers", None)  # import fails
    source = sd.adjoint_source(damped, ("x", "rate"))
    text = source._repr_html_()
    assert "<span style=\"color" not in text
    assert "np.sum(x * x) &gt; 1.0" in text  # escaped
    check_rows(rows_of(text).rows, damped, source)


def test_the_page_is_a_whole_document():
    page = sd.adjoint_source(straight, "W").html_page()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page and "<link" not in page and "src=" not in page  # self-contained


# --- in a real browser -------------------------------------------------------------


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium on this machine: the page is not rendered by a browser "
                "(install it, e.g. apt-get install chromium)")


def _browse(page, tmp_path, *flags):
    path = tmp_path / "view.html"
    path.write_text(page, encoding="utf-8")
    result = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                             "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                             *flags, path.as_uri()], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize("fn, wrt", FUNCTIONS, ids=lambda v: getattr(v, "__name__", ""))
def test_the_browser_lays_out_each_line_beside_its_blocks(fn, wrt, tmp_path):
    source = sd.adjoint_source(fn, wrt)
    dom = _browse(source.html_page(), tmp_path, "--dump-dom").stdout
    rows = rows_of(dom)  # the DOM the browser built: the table survived parsing
    assert rows.tables == 1
    check_rows(rows.rows, fn, source)


def test_the_browser_renders_a_screenshot(tmp_path):
    source = sd.adjoint_source(damped, ("x", "rate"))
    _browse(source.html_page(), tmp_path, "--screenshot=" + str(tmp_path / "view.png"),
            "--window-size=1200,900")
    png = (tmp_path / "view.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000  # drawn, not blank

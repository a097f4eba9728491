"""The side-by-side view of an adjoint: each source line beside the adjoint block it produced.

:class:`AdjointSource` is what ``sd.adjoint_source`` returns: a ``str`` equal to the
generated code, whose ``_repr_html_`` (a notebook's display) is a table of the
function's lines, each beside its adjoint blocks.  The map comes from the compiler
(``Unit.blocks``, see ``compiler.codegen.Block``), not from reading the text again;
the code around blocks (unpacking the tape, loop and branch headers) is shown dimmed
above the block it encloses, and in full in the "generated code" section below.

The HTML is self-contained (inline styles only: notebooks keep them, and the page
``python -m srcdiff show FILE:FUNC --html OUT.html`` writes needs nothing else).
Code is highlighted with Pygments when it is installed (the ``view`` extra), plain
escaped text otherwise.
"""
import html
import textwrap

from .compiler.errors import CompileError
from .compiler.parse import read_def

_FONT = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px"
_PRE = (f"margin:0;padding:0;background:transparent;color:#1f2328;white-space:pre;"
        f"line-height:1.45;text-align:left;{_FONT}")
_CELL = "padding:3px 10px;border-top:1px solid #e4e6ea;vertical-align:top;text-align:left"
# notebooks style tables (centred, right-aligned cells, fixed layout): each is set here
_HEAD = ("padding:6px 10px;border-bottom:2px solid #c9ced6;text-align:left;font-weight:600;"
         "color:#1f2328;background:#f3f4f6")
_DIM = "opacity:0.5"


class AdjointSource(str):
    """The generated forward and backward passes of one compiled function, as a str;
    in a notebook, each source line beside the adjoint block it produced."""

    def __new__(cls, text, unit=None):
        self = super().__new__(cls, text)
        self._unit = unit
        self._lines = _source_lines(unit)
        return self

    @classmethod
    def of(cls, unit):
        return cls(unit.source, unit)

    def __reduce__(self):  # a copy or a pickle is the plain text
        return str, (str(self),)

    @property
    def title(self):
        unit = self._unit
        wrt = ", ".join(unit.wrt) if unit and unit.wrt else "no argument"
        return f"{unit.name if unit else 'adjoint'}: gradient with respect to {wrt}"

    def callees(self):
        """The adjoints of the user functions this one calls, directly or not, in the
        order they are first called."""
        return tuple(AdjointSource.of(u) for u in _called(self._unit))

    def _repr_html_(self):
        return fragment(self)

    def html_page(self, callees=False):
        """A whole HTML document: this view, then its callees' if ``callees``."""
        return page([self, *self.callees()] if callees else [self])


def page(sources):
    """An HTML document holding the views of ``sources`` (AdjointSource), one after another."""
    title = html.escape(sources[0].title) if sources else "srcdiff"
    body = "\n".join(fragment(s) for s in sources)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>srcdiff · {title}</title>\n</head>\n"
            "<body style=\"margin:24px;background:#ffffff\">\n"
            f"{body}\n</body>\n</html>\n")


def fragment(source):
    """The view of one AdjointSource: a title, the side-by-side table, the whole code."""
    parts = [f'<div class="srcdiff-view" style="color:#1f2328;background:#ffffff;'
             f'font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:14px;'
             f'margin:0 0 24px 0">',
             f'<div style="font-weight:600;margin:0 0 6px 0">{html.escape(source.title)}</div>']
    if isinstance(source._lines, str):
        parts.append(f'<div style="color:#57606a">no side-by-side view: '
                     f'{html.escape(source._lines)}</div>')
    else:
        parts.append(_table(source))
    parts.append('<details style="margin-top:8px"><summary style="cursor:pointer;color:#57606a">'
                 'generated code: the forward pass and the backward pass</summary>'
                 '<div style="padding:6px 10px;background:#f6f8fa;border:1px solid #e4e6ea;'
                 'border-radius:4px;margin-top:4px;overflow-x:auto">'
                 f'<pre style="{_PRE}">{_code(str(source))}</pre></div></details>')
    parts.append("</div>")
    return "\n".join(parts)


def _table(source):
    first, lines = source._lines
    text = str(source).splitlines()
    by_line = {}
    for block in source._unit.blocks:
        by_line.setdefault(block.line, []).append(block)
    rows = []
    highlighted = _highlight_lines("".join(lines))
    for k, html_line in enumerate(highlighted):
        number = first + k
        blocks = by_line.pop(number, [])
        rows.append(_row(number, html_line, blocks, text))
    for number, blocks in sorted(by_line.items()):  # lines outside the def (not expected)
        rows.append(_row(number, "", blocks, text))
    return ('<table class="srcdiff-table" style="border-collapse:collapse;margin:0;'
            'table-layout:auto;width:auto;font-size:inherit;'
            'background:#ffffff;color:#1f2328;border:1px solid #e4e6ea">'
            f'<thead><tr><th style="{_HEAD};text-align:right">line</th>'
            f'<th style="{_HEAD}">source</th>'
            f'<th style="{_HEAD};border-left:1px solid #c9ced6">adjoint block '
            '<span style="font-weight:400;color:#57606a">(the backward pass runs them '
            'from the bottom up)</span></th></tr></thead>\n<tbody>\n' + "\n".join(rows)
            + "\n</tbody></table>")


def _row(number, html_line, blocks, text):
    # every cell's own background: a notebook's row stripes and dark theme stay out
    mark = "background:#f5f9ff;" if blocks else "background:#ffffff;"
    adjoint = '<hr style="border:0;border-top:1px dashed #d0d7de;margin:4px 0">'.join(
        f'<pre style="{_PRE}">{_block(b, text)}</pre>' for b in blocks)
    return (f'<tr class="srcdiff-row" data-line="{number}">'
            f'<td class="srcdiff-number" style="{_CELL};{mark}text-align:right;color:#8c959f;'
            f'{_FONT}">{number}</td>'
            f'<td class="srcdiff-source" style="{_CELL};{mark}"><pre style="{_PRE}">'
            f'{html_line}</pre></td>'
            f'<td class="srcdiff-adjoint" style="{_CELL};{mark}border-left:1px solid #c9ced6">'
            f'{adjoint}</td></tr>')


def _block(block, text):
    """A block's code under its context's headers (dimmed, with ``...`` for what lies
    between a header and an ``else:``), without its ``# line`` comment."""
    lines, depth = [], 0
    for k, header in enumerate(block.context):
        if header.startswith(("else", "elif")):  # at the depth of the header before it
            depth -= 1
            lines.append("    " * (depth + 1) + "...")
        lines.append("    " * depth + header)
        depth += 1
    code = textwrap.dedent("\n".join(text[block.first:block.last])).splitlines()
    highlighted = _highlight_lines("\n".join(lines + ["    " * depth + c for c in code]))
    dim = [f'<span class="srcdiff-context" style="{_DIM}">{h}</span>'
           for h in highlighted[:len(lines)]]
    return "\n".join(dim + highlighted[len(lines):])


def _code(text):
    return "\n".join(_highlight_lines(text))


def _highlight_lines(text):
    """``text`` as HTML, one string per line (a token spanning lines is split)."""
    lines = text.splitlines() or [""]
    try:
        from pygments.lexers import PythonLexer
        from pygments.styles import get_style_by_name
    except ImportError:
        return [html.escape(line) for line in lines]
    style = get_style_by_name("default")
    out = [[]]
    for token, value in PythonLexer(stripnl=False, ensurenl=False).get_tokens(text):
        css = _css(style.style_for_token(token))
        for k, piece in enumerate(value.split("\n")):
            if k:
                out.append([])
            if piece:
                escaped = html.escape(piece)
                out[-1].append(f'<span style="{css}">{escaped}</span>' if css else escaped)
    return ["".join(parts) for parts in out[:len(lines)]]


def _css(spec):
    rules = []
    if spec.get("color"):
        rules.append(f"color:#{spec['color']}")
    if spec.get("bold"):
        rules.append("font-weight:bold")
    if spec.get("italic"):
        rules.append("font-style:italic")
    return ";".join(rules)


def _source_lines(unit):
    """(first line number, lines) of the function's def as the compiler read it, or the
    reason there are none (a str)."""
    fn = unit.fn if unit is not None else None
    if fn is None:
        return "the function is gone"
    try:
        stmt, source_map = read_def(fn)
    except CompileError as exc:  # e.g. its file was edited since
        return exc.message
    start = source_map.first_line + stmt.lineno - 1  # the def line, after any decorators
    end = source_map.first_line + stmt.end_lineno - 1
    lines = source_map.lines[start - 1:end]
    indent = stmt.col_offset + source_map.col_offset  # a method's: not shown
    return start, [line[indent:] if line[:indent].isspace() else line for line in lines]


def _called(unit):
    """The units ``unit`` calls, directly or through others, each once, itself excluded
    (a recursive call's stand-in is its unit once built)."""
    seen, order = {id(unit)}, []

    def visit(u):
        for callee in u.callees:
            callee = getattr(callee, "unit", None) or callee
            if id(callee) in seen or not hasattr(callee, "source"):
                continue
            seen.add(id(callee))
            order.append(callee)
            visit(callee)
    if unit is not None:
        visit(unit)
    return order

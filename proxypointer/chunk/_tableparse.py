"""Table markup -> rows of cell texts, with character offsets: the parsing half of tables.py.

HTML tables are read with the standard library's ``html.parser`` (entities decoded, inline
markup dropped, ``<br>`` as a space, ``<img>`` as ``[image: alt]``, nested tables flattened into
their cell, implied end tags closed); pipe tables from markdown-it-py's table tokens. Nothing
here decides what a header is or how a row reads: see :mod:`proxypointer.chunk.tables`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING

from .datauri import image_placeholder, replace_data_uris

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = [
    "Cell",
    "HtmlTableParser",
    "RawTable",
    "Row",
    "clean_text",
    "html_tables",
    "inline_text",
    "line_starts",
    "mask_fences",
    "pipe_tables",
]

_MAX_SPAN = 100  # colspan/rowspan values above this are clamped (HTML allows 1000 / 65534)
_BREAK_TAGS = frozenset({"br", "p", "div", "li", "hr"})
_TAG_NAME = re.compile(r"^</?\s*([a-z][a-z0-9]*)", re.IGNORECASE)
_SKIPPED = frozenset({"script", "style"})  # their content is not text
_SEPARATORS = re.compile(r"(?:\s*;)+\s+")


@dataclass(slots=True)
class Cell:
    """One cell: its text (whitespace collapsed) and spans, clamped to 1..100."""

    text: str = ""
    colspan: int = 1
    rowspan: int = 1
    th: bool = False


@dataclass(slots=True)
class Row:
    """One row: ``[start, end)`` offsets of its markup; ``head`` when in thead (or a pipe header)."""

    start: int
    end: int = 0
    head: bool = False
    cells: list[Cell] = field(default_factory=list)


@dataclass(slots=True)
class RawTable:
    """One table as parsed: ``html`` or ``pipe``, ``[start, end)`` offsets, caption, rows."""

    kind: str
    start: int
    end: int = 0
    caption: str = ""
    rows: list[Row] = field(default_factory=list)


def clean_text(text: str) -> str:
    """Cell text as embedded: data URIs replaced, whitespace (``&nbsp;`` too) collapsed.

    Separators left by a nested table's rows (``; ``) are kept only between texts.
    """
    text = " ".join(replace_data_uris(text).split())
    return _SEPARATORS.sub("; ", text).strip("; ") if ";" in text else text


def line_starts(text: str, base: int = 0) -> list[int]:
    """Offsets of the line starts of ``text[base:]`` (``base`` first), as offsets into ``text``."""
    starts = [base]
    pos = text.find("\n", base)
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _span(value: str | None) -> int:
    try:
        n = int((value or "1").strip())
    except ValueError:
        return 1
    return min(max(n, 1), _MAX_SPAN)


# ----------------------------------------------------------------------------- HTML tables


class HtmlTableParser(HTMLParser):
    """Collects the top-level ``<table>`` elements of a text, with character offsets."""

    def __init__(self, text: str, base: int) -> None:
        super().__init__(convert_charrefs=True)
        self.text = text
        self.base = base
        self.line_starts = line_starts(text, base)
        self.depth = 0
        self.found: list[RawTable] = []
        self.table: RawTable | None = None
        self.row: Row | None = None
        self.cell: Cell | None = None
        self.parts: list[str] | None = None  # where text goes: the open cell or caption
        self.in_caption = False
        self.head = False
        self.skip = 0  # inside <script> or <style>

    def _pos(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def _tag_end(self, pos: int) -> int:
        k = self.text.find(">", pos)
        return len(self.text) if k == -1 else k + 1

    def _put(self, text: str) -> None:
        if self.parts is not None:
            self.parts.append(text)

    def _close_cell(self) -> None:
        if self.cell is not None and self.row is not None and self.parts is not None:
            self.cell.text = clean_text("".join(self.parts))
            self.row.cells.append(self.cell)
        self.cell = None
        if not self.in_caption:
            self.parts = None

    def _close_row(self, end: int) -> None:
        self._close_cell()
        if self.row is not None and self.table is not None:
            while end > self.row.start and self.text[end - 1].isspace():  # an implied </tr>
                end -= 1
            self.row.end = end
            self.table.rows.append(self.row)
        self.row = None

    def _finish(self, end: int) -> None:
        self._close_row(end)
        if self.table is not None:
            self.table.end = end
            self.found.append(self.table)
        self.table, self.depth, self.in_caption, self.parts = None, 0, False, None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skip += 1
            return
        if tag == "table":
            self.depth += 1
            if self.depth == 1:
                self.table, self.head = RawTable("html", self._pos()), False
            else:
                self._put(" ")
            return
        if self.depth == 0:
            return
        if tag == "img":
            self._put(" " + image_placeholder(next((v or "" for k, v in attrs if k == "alt"), "")) + " ")
        elif tag in _BREAK_TAGS:
            self._put(" ")
        elif self.depth > 1:  # a nested table flows into its cell: cells spaced, rows by "; "
            self._put("; " if tag == "tr" else " " if tag in ("td", "th") else "")
        elif tag == "caption":
            self._close_cell()
            self.in_caption, self.parts = True, []
        elif tag in ("thead", "tbody", "tfoot"):
            self._close_row(self._pos())
            self.head = tag == "thead"
        elif tag == "tr":
            self._close_row(self._pos())
            self.row = Row(self._pos(), head=self.head)
        elif tag in ("td", "th"):
            self._close_cell()
            if self.row is None:
                self.row = Row(self._pos(), head=self.head)
            a = dict(attrs)
            self.cell = Cell(colspan=_span(a.get("colspan")), rowspan=_span(a.get("rowspan")), th=tag == "th")
            self.parts = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skip = max(0, self.skip - 1)
            return
        if self.depth == 0:
            return
        if tag == "table":
            if self.depth == 1:
                pos = self._pos()
                self._finish(self._tag_end(pos))
            else:
                self.depth -= 1
                self._put(" ")
        elif tag in _BREAK_TAGS or self.depth > 1:
            self._put(" ")
        elif tag in ("td", "th"):
            self._close_cell()
        elif tag == "tr":
            self._close_row(self._tag_end(self._pos()))
        elif tag == "caption" and self.in_caption and self.table is not None:
            self.table.caption = clean_text("".join(self.parts or []))
            self.in_caption, self.parts = False, None
        elif tag in ("thead", "tbody", "tfoot"):
            self._close_row(self._pos())
            self.head = False

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self._put(data)

    def finish(self) -> list[RawTable]:
        self.close()
        if self.table is not None:  # unclosed <table>: it runs to the end of the text
            self._finish(len(self.text.rstrip()))
        return self.found


def html_tables(text: str) -> list[RawTable]:
    first = text.lower().find("<table")
    if first == -1:
        return []
    parser = HtmlTableParser(text, first)
    parser.feed(text[first:])
    return parser.finish()


# ----------------------------------------------------------------------------- pipe tables


def inline_text(token: Token) -> str:
    """Plain text of a markdown-it inline token: emphasis and links dropped, images as alt text."""
    out: list[str] = []
    for ch in token.children or ():
        if ch.type in ("text", "code_inline"):
            out.append(ch.content)
        elif ch.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif ch.type == "html_inline":
            name = _TAG_NAME.match(ch.content)
            out.append(" " if name and name[1].lower() in _BREAK_TAGS else "")
        elif ch.type == "image":
            out.append(image_placeholder(ch.content))
    return clean_text("".join(out))


def pipe_tables(tokens: list[Token], text: str, starts: list[int], md: MarkdownIt) -> list[RawTable]:
    """Pipe tables of ``text`` from markdown-it block tokens (inline content parsed here, per cell)."""
    def line_end(i: int) -> int:
        return starts[i + 1] - 1 if i + 1 < len(starts) else len(text)

    found: list[RawTable] = []
    table: RawTable | None = None
    row: Row | None = None
    head = False
    th = False
    for tok in tokens:
        t = tok.type
        if t == "table_open" and tok.map:
            table, head = RawTable("pipe", starts[tok.map[0]], line_end(tok.map[1] - 1)), True
        elif table is None:
            continue
        elif t == "thead_open":
            head = True
        elif t == "tbody_open":
            head = False
        elif t == "tr_open" and tok.map:
            row = Row(starts[tok.map[0]], line_end(tok.map[1] - 1), head=head)
        elif t in ("th_open", "td_open"):
            th = t == "th_open"
        elif t == "inline" and row is not None:
            inline = tok if tok.children else md.parseInline(tok.content)[0]
            row.cells.append(Cell(inline_text(inline), th=th))
        elif t == "tr_close" and row is not None:
            table.rows.append(row)
            row = None
        elif t == "table_close":
            found.append(table)
            table = None
    return found


def mask_fences(text: str, tokens: list[Token], starts: list[int]) -> str:
    """``text`` with fenced code blocks blanked out (same length, same line breaks)."""
    out: list[str] = []
    pos = 0
    for tok in tokens:
        if tok.type == "fence" and tok.map:
            a = starts[tok.map[0]]
            b = starts[tok.map[1]] if tok.map[1] < len(starts) else len(text)
            out.append(text[pos:a])
            out.append(re.sub(r"[^\n]", " ", text[a:b]))
            pos = b
    out.append(text[pos:])
    return "".join(out)

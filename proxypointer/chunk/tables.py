"""Tables embedded as meaning, not markup: HTML and pipe tables rendered as compact text.

Converters write tables as HTML (``<table>`` with thead/tbody, th/td, colspan/rowspan:
LlamaParse, docling, opendataloader-pdf) or as GFM pipe tables. Embedded as markup, a chunk of
a balance sheet reads ``<td>$288</td> </tr> </tbody> </table>`` and no question matches it
(issue 13). Here each table becomes lines of text a sentence encoder can match:

* the caption (HTML ``<caption>``), else nothing: the short paragraph just before the table
  (``CONSOLIDATED BALANCE SHEETS``) is kept as the table's *title*, repeated when a long table
  is split;
* the column headers, multi-row headers combined per column, joined by `` | ``;
* one line per row: its label (first column), then each value paired with its column header,
  e.g. ``Total current assets: 2022 $ 4,321; 2021 $ 3,987``.

Numbers are kept as written (``$``, ``%``, parentheses, dashes); a currency symbol or a closing
parenthesis in a cell of its own is joined to its number. Empty cells, empty columns and rows
without text are dropped. A header row that holds amounts (converters often put the first data
row in the header) is read as data.

Markup is read in :mod:`proxypointer.chunk._tableparse` (``html.parser`` for HTML, markdown-it-py's
table tokens for pipe tables). Tables inside fenced code are left alone.
:class:`proxypointer.chunk.embedtext.EmbeddedText` puts the renderings in place of the markup and
maps the result back to source characters, so a chunk's pointer still names the exact lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._tableparse import RawTable, Row, html_tables, inline_text, line_starts, mask_fences, pipe_tables

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = ["Table", "TableRow", "find_tables", "markdown_parser", "render_tables"]

_TITLE_MAX_WORDS = 30  # a longer paragraph before a table is prose, not its title
_TITLE_MAX_LINES = 3
_UNITS_MAX_WORDS = 6  # "(in millions, except per share data)": look one paragraph further up
_HEADER_MAX_ROWS = 3  # leading rows read as headers when the markup does not say so
_CURRENCY = frozenset({"$", "US$", "€", "£", "¥"})
_CLOSING = frozenset({")", "%", ")%", "%)"})
_DASHES = frozenset({"—", "–", "-", "−", "--"})
_AMOUNT_NOISE = str.maketrans("", "", "$€£¥()[]%+-−–—,. \u00a0")
_YEAR = re.compile(r"(?:19|20)\d\d")
_HEADING_MARK = re.compile(r"^#{1,6}\s+")
_COMMENT_LINE = re.compile(r"^<!--.*-->$")


@dataclass(frozen=True, slots=True)
class TableRow:
    """One data row of a table, rendered.

    Attributes:
        start: First character of the row's markup (``<tr`` or the pipe line), 0-based.
        end: End of the row's markup, exclusive.
        text: The row as embedded, e.g. ``Total current assets: 2022 $ 4,321; 2021 $ 3,987``.
    """

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Table:
    """A table found in text, with its rendering.

    Offsets are 0-based, half-open ``[start, end)`` character offsets into the text given to
    :func:`find_tables`.

    Attributes:
        kind: ``html`` or ``pipe``.
        start: First character of the table (``<table`` or the header row of a pipe table).
        end: End of the table (after ``</table>`` or the last row's last character).
        caption: Text of the HTML ``<caption>``, else ``""``.
        title: The caption, else the short paragraph just before the table (at most 3 lines
            and 30 words, e.g. ``CONSOLIDATED BALANCE SHEETS``), else ``""``.
        headers: Column headers, one per kept column (label column first), each the texts of
            its header rows joined by a space; ``()`` when the table has no header row.
        rows: Data rows that render to text, in order.
        header_end: End of the header rows' markup (``start`` when there is none).
        title_start: First character of the title paragraph before the table (``start``
            when the title is the caption or there is none).
    """

    kind: str
    start: int
    end: int
    caption: str
    title: str
    headers: tuple[str, ...]
    rows: tuple[TableRow, ...]
    header_end: int
    title_start: int

    @property
    def header_line(self) -> str:
        """The column headers joined by `` | ``; ``""`` if none.

        Each distinct header once (a colspan header spans several columns), leaving out one
        that only begins another (``Year Ended December 31,`` over a spacer column beside
        ``Year Ended December 31, 2022``).
        """
        distinct = [h for h in dict.fromkeys(self.headers) if h]
        return " | ".join(h for h in distinct if not any(o.startswith(h + " ") for o in distinct))

    @property
    def lead_lines(self) -> tuple[str, ...]:
        """Lines that open the rendering: the caption and the header line, when present."""
        return tuple(x for x in (self.caption, self.header_line) if x)

    @property
    def context(self) -> str:
        """Title and header line, repeated before a piece of the table that starts after them."""
        return "\n".join(x for x in (self.title, self.header_line) if x)

    @property
    def text(self) -> str:
        """The whole table as embedded: caption, header line, one line per row."""
        return "\n".join((*self.lead_lines, *(r.text for r in self.rows)))


def _is_amount(cell: str) -> bool:
    """Tell whether a cell is a number as written (``$ 4,321``, ``(1,234)``, ``12.5%``), not a year."""
    core = cell.translate(_AMOUNT_NOISE)
    return core.isdigit() and not _YEAR.fullmatch(cell.strip())


def _is_data(cell: str) -> bool:
    """Tell whether a cell is an amount or a dash standing for zero (``—``, ``$ —``)."""
    return _is_amount(cell) or cell.replace("$", "").strip() in _DASHES


# ----------------------------------------------------------------------------- rendering


def _take_carry(carry: dict[int, tuple[str, str, int]], h: dict[int, str], d: dict[int, str], at: int) -> int:
    """Fill columns from ``at`` on with cells spanning down from rows above; next free column."""
    while at in carry:
        ht, dt, left = carry[at]
        h[at], d[at] = ht, dt
        if left <= 1:
            del carry[at]
        else:
            carry[at] = (ht, dt, left - 1)
        at += 1
    return at


def _grid(rows: list[Row]) -> tuple[list[list[str]], list[list[str]]]:
    """Rows expanded to columns: (header view, data view).

    The header view repeats a colspan cell in every column it spans; the data view keeps it in
    its first column only (a value is not counted twice). Both repeat a rowspan cell down.
    """
    carry: dict[int, tuple[str, str, int]] = {}
    heads: list[list[str]] = []
    datas: list[list[str]] = []
    for row in rows:
        h: dict[int, str] = {}
        d: dict[int, str] = {}
        col = 0
        for cell in row.cells:
            col = _take_carry(carry, h, d, col)
            for k in range(cell.colspan):
                h[col + k] = cell.text
                d[col + k] = cell.text if k == 0 else ""
                if cell.rowspan > 1:
                    carry[col + k] = (h[col + k], d[col + k], cell.rowspan - 1)
            col += cell.colspan
        for at in sorted(c for c in carry if c >= col and c not in h):
            if at not in h:
                _take_carry(carry, h, d, at)
        width = max(h, default=-1) + 1
        heads.append([h.get(c, "") for c in range(width)])
        datas.append([d.get(c, "") for c in range(width)])
    return heads, datas


def _header_rows(raw: list[Row], heads: list[list[str]]) -> int:
    """How many leading rows are column headers."""

    def has_data(values: list[str]) -> bool:
        return any(_is_data(v) for v in values[1:])

    n = 0
    explicit = [r.head or (r.cells and all(c.th or not c.text for c in r.cells)) for r in raw]
    while n < len(raw) and explicit[n] and not has_data(heads[n]):
        n += 1
    if n == 0:  # no markup says so: leading rows with no label and no amount (``| | 2022 | 2021 |``)
        while (
            n < min(_HEADER_MAX_ROWS, len(raw) - 1)
            and not heads[n][0]
            and not any(_is_data(v) for v in heads[n])
            and any(heads[n])
        ):
            n += 1
    return n if n < len(raw) else 0


def _join_values(parts: list[str]) -> str:
    out = ""
    for p in parts:
        out = p if not out else out + ("" if p in _CLOSING else " ") + p
    return out


def _render_row(cells: list[str], pair: list[str]) -> str:
    """``label: header value; header value``; the label is the first cell unless it is a number."""
    label = cells[0] if cells[0] and not _is_data(cells[0]) else ""
    items: list[list[str]] = []  # [header, value]
    pending = ""  # a currency symbol waiting for its number
    for c in range(1 if label else 0, len(cells)):
        v = cells[c]
        if not v:
            continue
        if v in _CURRENCY:
            pending = f"{pending} {v}".strip()
            continue
        if v in _CLOSING and items:
            items[-1][1] = _join_values([items[-1][1], v])
            continue
        if pending:
            v, pending = f"{pending} {v}", ""
        if items and pair[c] and items[-1][0] == pair[c]:
            items[-1][1] = _join_values([items[-1][1], v])
        else:
            items.append([pair[c], v])
    if pending:
        items.append(["", pending])
    values = "; ".join(f"{h} {v}" if h else v for h, v in items)
    if label and values:
        return f"{label.rstrip(':').rstrip()}: {values}"
    return label or values


def _drop_common_prefix(headers: list[str]) -> list[str]:
    """Drop the words that every distinct header starts with (``December 31,`` of ``December 31, 2023``)."""
    words = [h.split() for h in dict.fromkeys(headers) if h]
    if len(words) < 2:
        return headers
    n = 0
    while all(len(w) > n + 1 for w in words) and len({w[n] for w in words}) == 1:
        n += 1
    return [" ".join(h.split()[n:]) for h in headers] if n else headers


def _build(raw: RawTable, title: str, title_start: int) -> Table:
    rows = raw.rows
    heads, datas = _grid(rows)
    keep_rows = [i for i, h in enumerate(heads) if any(h)]
    width = max((len(h) for h in heads), default=0)
    cols = [c for c in range(width) if any(c < len(heads[i]) and heads[i][c] for i in keep_rows)]

    def cut(values: list[str]) -> list[str]:
        return [values[c] if c < len(values) else "" for c in cols]

    kept = [rows[i] for i in keep_rows]
    head_view = [cut(heads[i]) for i in keep_rows]
    data_view = [cut(datas[i]) for i in keep_rows]
    n_head = _header_rows(kept, head_view)
    levels = head_view[:n_head]

    def combined(c: int, skip: frozenset[int] = frozenset()) -> str:
        texts: list[str] = []
        for i, lv in enumerate(levels):
            if i not in skip and lv[c] and (not texts or texts[-1] != lv[c]):
                texts.append(lv[c])
        return " ".join(texts)

    headers = tuple(combined(c) for c in range(len(cols))) if n_head else ()
    # Values pair with the header rows that tell their columns apart ("2022", not "Year Ended
    # December 31, 2022" on every value); the header line keeps the whole text.
    shared = frozenset(
        i for i, lv in enumerate(levels) if len(cols) > 2 and lv[1] and all(x == lv[1] for x in lv[2:])
    )
    pair = [combined(c, shared) or combined(c) for c in range(len(cols))]
    pair[1:] = _drop_common_prefix(pair[1:])
    filled = {pair[c] for c in range(1, len(cols)) if any(row[c] for row in data_view[n_head:])}
    if len(filled) == 1:  # one value column: the header line names it, rows read "label: value"
        pair = [""] * len(cols)
    body: list[TableRow] = []
    for row, cells in zip(kept[n_head:], data_view[n_head:], strict=True):
        text = _render_row(cells, pair)
        if text:
            body.append(TableRow(row.start, row.end, text))
    header_end = kept[n_head - 1].end if n_head else raw.start
    title, title_start = (raw.caption, raw.start) if raw.caption or not title else (title, title_start)
    return Table(raw.kind, raw.start, raw.end, raw.caption, title, headers, tuple(body), header_end, title_start)


def _title_before(text: str, lo: int, hi: int, md: MarkdownIt) -> tuple[str, int]:
    """Return the short paragraph just before a table (its title) and where it starts.

    ``("", hi)`` when the paragraph before the table is prose (over 3 lines or 30 words). A
    units line such as ``(in millions)`` (at most 6 words) takes the short paragraph above it
    too: ``CONSOLIDATED STATEMENTS OF CASH FLOWS (in millions)``. A heading ends the search.
    """
    lines: list[tuple[int, str]] = []
    pos = lo
    for line in text[lo:hi].split("\n"):
        lines.append((pos, line))
        pos += len(line) + 1
    picked: list[tuple[int, str]] = []
    gap = False
    for at, line in reversed(lines):
        s = line.strip()
        if _COMMENT_LINE.match(s):  # page markers and other comments are transparent
            continue
        if not s:
            gap = bool(picked)
            continue
        if s.startswith("|") or (gap and len(" ".join(x for _, x in picked).split()) > _UNITS_MAX_WORDS):
            break
        if len(picked) == _TITLE_MAX_LINES:
            if not gap:
                return "", hi  # a long paragraph: prose, not a title
            break
        if _HEADING_MARK.match(s):  # a heading is the title only when nothing is picked yet
            if not picked:
                picked.append((at, s))
            break
        picked.append((at, s))
        gap = False
    if not picked:
        return "", hi
    source = _HEADING_MARK.sub("", " ".join(x for _, x in reversed(picked)))
    tokens = md.parseInline(source)
    title = inline_text(tokens[0]) if tokens else ""
    return (title, picked[-1][0]) if 0 < len(title.split()) <= _TITLE_MAX_WORDS else ("", hi)


def markdown_parser() -> MarkdownIt:
    """Make a markdown-it parser (CommonMark + GFM tables) to reuse across :func:`find_tables` calls."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def find_tables(text: str, md: MarkdownIt | None = None) -> tuple[Table, ...]:
    r"""Find the HTML and GFM pipe tables of a text and render each.

    Args:
        text: Markdown, e.g. a node's own text; line ends normalised to LF.
        md: A markdown-it parser with the ``table`` rule enabled, to reuse across calls;
            by default one is made.

    Returns:
        Tables in text order, non-overlapping (a pipe table inside an HTML table is part of
        it). Offsets are 0-based, half-open, into ``text``. Tables in fenced code are skipped.

    Example:
        >>> t = find_tables("| Item | 2023 | 2022 |\n|---|--:|--:|\n| Cash | $ 5 | $ 4 |\n")[0]
        >>> t.text
        'Item | 2023 | 2022\nCash: 2023 $ 5; 2022 $ 4'
    """
    has_html = "<table" in text.lower()
    if not has_html and "|" not in text:
        return ()
    md = md or markdown_parser()
    tokens: list[Token] = []
    md.block.parse(text, md, {}, tokens)  # block structure only: inline parsing is per cell
    starts = line_starts(text)
    pipes = pipe_tables(tokens, text, starts, md) if "|" in text else []
    htmls = html_tables(mask_fences(text, tokens, starts)) if has_html else []
    raws = htmls + [p for p in pipes if not any(h.start < p.end and p.start < h.end for h in htmls)]
    raws.sort(key=lambda r: r.start)
    out: list[Table] = []
    prev_end = 0
    for raw in raws:
        title, title_start = ("", raw.start) if raw.caption else _title_before(text, prev_end, raw.start, md)
        out.append(_build(raw, title, title_start))
        prev_end = raw.end
    return tuple(out)


def render_tables(text: str, md: MarkdownIt | None = None) -> str:
    """``text`` with each table replaced by its rendering (:attr:`Table.text`).

    Args:
        text: Markdown; line ends normalised to LF.
        md: As for :func:`find_tables`.

    Returns:
        The text with every HTML and pipe table rendered as lines of text; the rest unchanged.
    """
    out: list[str] = []
    pos = 0
    for t in find_tables(text, md):
        out.append(text[pos : t.start])
        out.append(t.text)
        pos = t.end
    out.append(text[pos:])
    return "".join(out)



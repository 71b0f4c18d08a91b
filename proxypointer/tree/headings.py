r"""Converter-output modes: headings that DOCX/PDF -> markdown converters emit without ``#``.

Modes are switched on in :class:`~proxypointer.config.TreeConfig`. The *converter rules*
(``drop_row_headings``, ``title_lines``, ``flatten_levels``, ``relevel_filing``) run on the
documents ``tree.converter_output`` selects: every document (``on``), none (``off``) or, by
default (``auto``), those :func:`detect_converter_output` finds converted from PDF. The other
modes run on every document when on. Candidates are taken only from markdown-it block tokens
at nesting level 0, so text inside fenced or indented code, display math, lists, block quotes
and tables is never promoted. Title and numbering rules live in :mod:`proxypointer.tree.titles`.

* ``html_headings``: every line of a top-level HTML block that is exactly one
  ``<h1>``..``<h6>`` element; level = N (``md_level`` = N too). Only HTML blocks of
  CommonMark types 6 and 7 (ordinary elements) count, and no line inside a comment or a
  ``<pre>``, ``<script>``, ``<style>`` or ``<textarea>`` element (shared case 30).
* ``drop_row_headings`` (converter rule): headings that read like table rows or page
  furniture are not sections (:func:`proxypointer.tree.titles.is_row_or_furniture`), nor are
  lines of a printed table of contents (:func:`proxypointer.tree.contentslines.contents_region`:
  ``PART II`` over ``Item 5. Market ... 20`` points at a section; no title or label rule
  promotes them either); their lines join the section before them.
* ``relevel_numbered`` (shared case 13): only when every markdown heading has the same level
  and at least 2 carry numbering; level = number of numeric components (``3`` -> 1,
  ``3.2.1`` -> 3, ``3.1.`` -> 2, ``Item 7`` -> 1, ``Annex 2.1`` / ``Appendix A.1`` -> 2).
  Headings without numbering become level 1: in flat converter output they are almost
  always front or back matter (Abstract, References), and nesting them under the last
  numbered subsection would put them under a wrong breadcrumb. ``md_level`` keeps the level
  as written.
* ``title_lines`` (converter rule): a one-line top-level paragraph that
  :func:`proxypointer.tree.titles.is_title_line` accepts, standing alone (see
  :func:`title_line_candidates` for where it may stand); level = level of the nearest
  preceding heading + 1 (1 when there is none, at most 6), like a bold line.
* ``relevel_filing`` (converter rule): SEC filings (10-K, 10-Q) re-levelled from their
  labels: ``PART II`` > ``ITEM 7.`` > ``Notes to Consolidated Financial Statements`` >
  ``Note 14 -``; other headings nest under the label before them (see :func:`relevel_filing`).
* ``numbered_headings`` (shared case 14): a one-line top-level paragraph that
  :func:`proxypointer.tree.titles.numbered_line_depth` accepts (``2.3 Results``), with a blank
  line (or the file start/end) before and after; level = number of components.
  ``1. Check`` is an ordered list item for markdown-it and is never a candidate.
* ``bold_headings`` (shared case 12): a one-line top-level paragraph that is exactly one
  ``**...**`` or ``__...__`` span, blank line (or file start/end) before and after; level =
  level of the nearest preceding heading found by another rule + 1 (1 when there is none, at
  most 6), so consecutive bold lines are siblings, never nested in each other.
* ``flatten_levels`` (converter rule, last): the levels as written are dropped; every heading
  takes the depth of its numbering (:func:`proxypointer.tree.titles.numbering_depth`; ``Item 7``,
  ``Note 14``, ``ARTICLE 3`` 1, ``Section 2.05`` / ``1.01`` 2), 2 when unnumbered, so an
  unnumbered heading ("Results of Operations", "CONSOLIDATED BALANCE SHEETS", "Questions this
  chapter answers") sits inside the numbered top-level section before it, beside its numbered
  subsections (the "re-levelled" variant measured in docs/evaluation.md). Levels a reader
  wrote from the headings' type (``{.styled}``: :mod:`proxypointer.tree.headingstyles`) are kept
  relative to each other: a run of unnumbered styled headings nests by them. A financial
  statement's title keeps the table pieces written as headings after it as its children
  (:func:`flatten_levels`). The
  document keeps its title: when the first heading was the only one at the shallowest level
  before flattening, it still names the document (:attr:`HeadingReport.title_line`).

Page-marker lines (:func:`proxypointer.tree.pages.page_map`) and other whole-line HTML comments
count as blank lines around a stand-alone line.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .contentslines import contents_region
from .markdown import Heading
from .pages import page_map
from .titles import (
    SIGNATURE,
    ends_in_folio,
    exhibit_label,
    filing_label,
    heading_title,
    html_title,
    is_row_or_furniture,
    is_title_line,
    numbered_line_depth,
    numbering_depth,
    statement_kind,
)

if TYPE_CHECKING:
    from markdown_it.token import Token

    from ..config import TreeConfig

__all__ = [
    "CONVERTER_MIN_FOOTERS",
    "CONVERTER_MIN_ROW_HEADINGS",
    "FIGURE_ROW_MIN_SHARE",
    "OUTLINE_DUPLICATE_LINES",
    "TITLE_LINE_MAX_REPEATS",
    "LABEL_TITLE_MAX_WORDS",
    "SPACE_HEADING",
    "HeadingReport",
    "apply_converter_modes",
    "detect_converter_output",
    "figure_row",
    "flatten_levels",
    "label_line_candidates",
    "label_title",
    "outline_levels",
    "relevel_filing",
    "space_headings",
    "title_line_candidates",
]

logger = logging.getLogger(__name__)

_HTML_HEADING = re.compile(r"^ {0,3}<h([1-6])(?:\s[^>]*)?>(.*?)</h\1>\s*$", re.IGNORECASE)
# CommonMark 0.31 section 4.6, start conditions 1-5: <pre>/<script>/<style>/<textarea>,
# comments, processing instructions, declarations and CDATA. Such a block is literal text.
_OPAQUE_HTML_BLOCK = re.compile(
    r"^ {0,3}<(?:(?:pre|script|style|textarea)(?=[\s>]|$)|!--|\?|![A-Za-z]|!\[CDATA\[)", re.IGNORECASE
)
# Inside an ordinary HTML block: where a comment or a raw-text element opens.
_OPAQUE_OPEN = re.compile(r"<!--|<(pre|script|style|textarea)(?=[\s>]|$)", re.IGNORECASE)
_BOLD = re.compile(r"^(\*\*|__)(.+)\1$")
#: An ATX heading opener followed by a Unicode space other than U+0020 or a tab instead of a
#: space (no-break space U+00A0 as Word, Google Docs and some converters export it; U+2000-U+200A;
#: U+202F; U+205F; U+3000). CommonMark reads the line as text (issue 32).
SPACE_HEADING = re.compile(r"^ {0,3}(?P<hashes>#{1,6})[\u00a0\u2000-\u200a\u202f\u205f\u3000]+(?P<rest>\S.*)$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t\u00a0])#+[ \t\u00a0]*$")


_COMMENT_LINE = re.compile(r"^ {0,3}<!--.*-->\s*$")


def _blank(lines: list[str], index: int, floor: int, skip: frozenset[int] = frozenset()) -> bool:
    """Whether 0-based line ``index`` is blank, in ``skip`` or outside ``[floor, len(lines))``."""
    if index < floor or index >= len(lines):
        return True
    return index in skip or not lines[index].strip(" \t")


def _standalone_lines(
    tokens: list[Token], lines: list[str], floor: int, skip: frozenset[int] = frozenset()
) -> list[int]:
    """0-based lines that are a whole top-level paragraph between blank (or ``skip``) lines."""
    out: list[int] = []
    for tok in tokens:
        if tok.type != "paragraph_open" or tok.level != 0 or not tok.map:
            continue
        start, end = tok.map
        if end - start == 1 and _blank(lines, start - 1, floor, skip) and _blank(lines, end, floor, skip):
            out.append(start)
    return out


def _neighbour(lines: list[str], index: int, step: int, floor: int, skip: frozenset[int]) -> str:
    """Return the nearest line before (``step`` -1) or after (1) ``index`` not blank or skipped."""
    j = index + step
    while floor <= j < len(lines) and _blank(lines, j, floor, skip):
        j += step
    return lines[j] if floor <= j < len(lines) else ""


def _html_block_headings(first_line: int, block: list[str]) -> list[Heading]:
    """``<hN>`` lines of one ordinary HTML block, skipping comments and raw-text elements."""
    out: list[Heading] = []
    closer = ""  # what ends the comment or element open at the start of the next line
    for offset, raw in enumerate(block):
        if not closer:
            m = _HTML_HEADING.match(raw)
            if m:
                title = html_title(m.group(2))
                if title:
                    level = int(m.group(1))
                    out.append(Heading(first_line + offset, first_line + offset, level, title, level, "html"))
        pos = 0
        lower = raw.lower()
        while True:
            if closer:
                end = lower.find(closer, pos)
                if end < 0:
                    break
                pos, closer = end + len(closer), ""
            else:
                m = _OPAQUE_OPEN.search(raw, pos)
                if not m:
                    break
                closer = "-->" if m.group(0) == "<!--" else f"</{m.group(1).lower()}>"
                pos = m.end()
    return out


def _html_headings(tokens: list[Token]) -> list[Heading]:
    out: list[Heading] = []
    for tok in tokens:
        if tok.type != "html_block" or tok.level != 0 or not tok.map:
            continue
        if _OPAQUE_HTML_BLOCK.match(tok.content):
            continue
        out.extend(_html_block_headings(tok.map[0] + 1, tok.content.split("\n")))
    return out


def space_headings(tokens: list[Token], lines: list[str]) -> list[Heading]:
    """Headings written with a no-break or other Unicode space after the ``#``s (``space_headings``).

    A line of a top-level paragraph (never code, a list, a quote or a table) that
    :data:`SPACE_HEADING` matches is the ATX heading it was meant to be: its level is the
    ``#`` count, its title the rest without a closing ``#`` sequence (converter rule; the
    ``space-heading`` check of ``proxypointer tree --check`` names such lines elsewhere).

    Args:
        tokens: markdown-it-py block tokens of the text.
        lines: ``split_lines`` of the text.

    Returns:
        The headings (source ``space``), in line order.
    """
    out: list[Heading] = []
    for tok in tokens:
        if tok.type != "paragraph_open" or tok.level != 0 or not tok.map:
            continue
        for i in range(tok.map[0], tok.map[1]):
            m = SPACE_HEADING.match(lines[i])
            if m is None:
                continue
            title = heading_title(_ATX_CLOSE.sub("", m.group("rest")).strip())
            if title:
                n = len(m.group("hashes"))
                out.append(Heading(i + 1, i + 1, n, title, n, "space"))
    return out


def _relevel(headings: list[Heading]) -> list[Heading]:
    if len({h.level for h in headings}) != 1:
        return headings
    depths = [numbering_depth(h.title) for h in headings]
    if sum(1 for d in depths if d) < 2:
        return headings
    logger.debug("re-levelling %d flat headings from their numbering", len(headings))
    return [
        Heading(h.line, h.last_line, min(d, 6) if d else 1, h.title, h.md_level, h.source)
        for h, d in zip(headings, depths, strict=True)
    ]


#: Fewest part, item or note headings for :func:`relevel_filing` to treat a document as a filing.
FILING_MIN_LABELS = 2


def relevel_filing(headings: list[Heading]) -> list[Heading]:
    """Re-level the headings of an SEC filing from its labels.

    Levels: ``PART`` 1; ``ITEM`` 2 (1 in a filing without part headings); an appended exhibit's
    first heading (``Exhibit 10.36``, ``Exhibit 13.1 Management's Discussion ...``, after the
    first item: :func:`proxypointer.tree.titles.exhibit_label`) 1 too, closing the part, item
    and notes before it, so that an agreement's ``ARTICLE XI`` never holds the next exhibit or the
    annual report a 10-K appends as Exhibit 13 (CVS's 2018 10-K); the heading of the
    notes (``Notes to Consolidated Financial Statements``) one below the open item or part;
    ``Note N`` one below the open notes heading, else one below the open item or part; so is
    ``N. Title`` once the notes heading or a financial statement's title (``Consolidated
    Balance Sheets``) has been seen in the open item or part. Every other heading nests under
    the labelled heading before it (its *anchor*), at the anchor's level + 1 + the rank of
    its written level among the other headings under that anchor, so their relative nesting
    is kept; headings before the first label rank from level 1. A line made a heading without
    a written level (``md_level`` 0: a title or bold line) nests one below the written heading
    before it under the same anchor (one below the anchor when there is none, or when it is
    a financial statement's title, :func:`proxypointer.tree.titles.statement_kind`): Verizon's
    plain "Interest Expense" stands among ``######`` subsections of MD&A, and ranking it above
    every written level made it the parent of the next 400 lines (dev bookmarks stripped:
    nesting 0.822 -> 0.895, recall unchanged; dev and check hand gold unchanged). At most 6. A part or item
    line of the table of contents (ending in a page number) is no label
    (:func:`proxypointer.tree.titles.filing_label`).

    Args:
        headings: Headings in line order.

    Returns:
        The headings re-levelled; unchanged when fewer than :data:`FILING_MIN_LABELS` of them
        are part, item or note headings (not a filing).

    """
    structure = filing_structure(headings)
    if structure is None:
        return headings
    kinds, levels = structure
    anchor_of: list[int] = [-1] * len(headings)  # index of the anchor of an unlabelled heading
    anchor = -1
    for i, kind in enumerate(kinds):
        if kind:
            anchor = i
        else:
            anchor_of[i] = anchor
    written: dict[int, set[int]] = {}
    for i, a in enumerate(anchor_of):
        if not kinds[i] and headings[i].md_level:
            written.setdefault(a, set()).add(headings[i].md_level)
    ranks = {a: sorted(mds) for a, mds in written.items()}
    out: list[Heading] = []
    last_written = -1  # index of the last unlabelled heading with a written level, under its anchor
    for i, h in enumerate(headings):
        if kinds[i]:
            last_written = -1
        else:
            a = anchor_of[i]
            top = (levels[a] if a >= 0 else 0) + 1
            if h.md_level:
                levels[i] = top + ranks[a].index(h.md_level)
                last_written = i
            elif statement_kind(h.title) or last_written < 0:
                levels[i] = top  # a statement's title line stands right under its item
            else:  # a line made a heading (title, bold): one below the written heading before it
                levels[i] = levels[last_written] + 1
        out.append(Heading(h.line, h.last_line, min(levels[i], 6), h.title, h.md_level, h.source))
    changed = sum(1 for a, b in zip(headings, out, strict=True) if a.level != b.level)
    logger.debug("filing structure: %d of %d headings re-levelled", changed, len(out))
    return out


def filing_structure(headings: list[Heading]) -> tuple[list[str], list[int]] | None:
    """Find the labelled headings of an SEC filing and their levels (:func:`relevel_filing`'s rule).

    Returns:
        ``(kinds, levels)`` per heading: kind ``part``, ``item``, ``exhibit`` (after an item),
        ``notes`` (the heading of the notes) or ``note`` (``Note 14``, or ``14. Debt`` inside
        the notes), with its level;
        ``""`` and 0 for every other heading. None when fewer than
        :data:`FILING_MIN_LABELS` headings are parts, items or notes (not a filing).
    """
    labels = [filing_label(h.title) for h in headings]
    kinds = [lab[0] if lab else "" for lab in labels]
    if sum(1 for k in kinds if k in ("part", "item", "note")) < FILING_MIN_LABELS:
        return None
    part_level = 1
    item_level = 2 if "part" in kinds else 1
    levels: list[int] = [0] * len(headings)
    part_open = item_open = statements_open = item_seen = False
    notes_level = 0
    for i, kind in enumerate(kinds):
        if item_seen and not kind and exhibit_label(headings[i].title):
            kind = kinds[i] = "exhibit"
        if kind == "statements":
            statements_open = True
        if kind == "numbered" and (notes_level or statements_open):
            kind = kinds[i] = "note"
        if kind not in ("part", "item", "notes", "note", "exhibit"):
            kinds[i] = ""
            continue
        container = item_level if item_open else (part_level if part_open else 0)
        item_seen = item_seen or kind == "item"
        if kind in ("part", "exhibit"):  # an exhibit closes the filing's parts and the exhibit before it
            levels[i] = part_level
            part_open, item_open, notes_level, statements_open = True, False, 0, False
        elif kind == "item":
            levels[i] = item_level
            item_open, notes_level, statements_open = True, 0, False
        elif kind == "notes":
            levels[i] = notes_level = container + 1
        else:
            levels[i] = (notes_level or container) + 1
    return kinds, levels


#: Fewest headings that read like table rows or page furniture for ``converter_output: auto``
#: to treat a document as converter output. The 29 filings of bench/financebench-dev-md have
#: 0-67 such headings (24 of them at least 3); no QASPER dev paper, no file of data/ and none
#: of the Rust book's 529 headings has one.
CONVERTER_MIN_ROW_HEADINGS = 3
#: Fewest printed page footers (``12/136`` or ``Page 12 of 136`` ending a line, one total,
#: numbers increasing) for ``converter_output: auto``: a browser's or a printer's footer kept
#: by the converter (the two credit agreements of bench/long-reports have 136 and 190).
CONVERTER_MIN_FOOTERS = 3
_FOOTER = re.compile(r"(?:^|\s)(?:(\d{1,4})/(\d{1,4})|[Pp]age\s+(\d{1,4})\s+of\s+(\d{1,4}))\s*$")


def _footer_pages(lines: list[str]) -> tuple[int, int]:
    """``(footers, total)``: the most footers sharing one total, their numbers increasing."""
    by_total: dict[int, list[int]] = {}
    for line in lines:
        m = _FOOTER.search(line)
        if not m:
            continue
        page, total = (int(m.group(1)), int(m.group(2))) if m.group(1) else (int(m.group(3)), int(m.group(4)))
        if 1 <= page <= total and total >= 2:
            by_total.setdefault(total, []).append(page)
    best = (0, 0)
    for total, pages in by_total.items():
        if all(a < b for a, b in zip(pages, pages[1:], strict=False)) and len(pages) > best[0]:
            best = (len(pages), total)
    return best


def detect_converter_output(lines: list[str], headings: list[Heading], marker_style: str = "") -> str:
    """Tell whether a document looks converted from PDF (``tree.converter_output: auto``).

    Signs, in order: page markers of a known style (``marker_style``, from
    :func:`proxypointer.tree.pages.page_map`); at least :data:`CONVERTER_MIN_FOOTERS` printed page
    footers (a line ending in ``12/136`` or ``Page 12 of 136``, one total, numbers
    increasing); at least :data:`CONVERTER_MIN_ROW_HEADINGS` headings that read like table
    rows or page furniture (:func:`proxypointer.tree.titles.is_row_or_furniture`), which hand-written
    markdown does not have.

    Args:
        lines: ``split_lines`` of the text.
        headings: Its CommonMark headings (before any mode).
        marker_style: Name of the page-marker style found, ``""`` when none.

    Returns:
        Why the document counts as converter output (``"page markers (opendataloader)"``),
        ``""`` when it does not.

    """
    if marker_style:
        return f"page markers ({marker_style})"
    footers, total = _footer_pages(lines)
    if footers >= CONVERTER_MIN_FOOTERS:
        return f"page footers ({footers} of the form k/{total})"
    rows = sum(1 for h in headings if is_row_or_furniture(h.title))
    if rows >= CONVERTER_MIN_ROW_HEADINGS:
        return f"{rows} headings read like table rows or page furniture"
    return ""


#: A stand-alone title-like line whose text occurs more often than this among the document's
#: stand-alone title-like lines is a running header or a repeated table header, not a title
#: (``PepsiCo Pension Equalization Plan - 409A Program`` on every page of an exhibit).
TITLE_LINE_MAX_REPEATS = 2


def title_line_candidates(
    tokens: list[Token], lines: list[str], floor: int = 0, skip: frozenset[int] = frozenset()
) -> list[int]:
    """Lines that the ``title_lines`` rule makes headings.

    A line is one when :func:`proxypointer.tree.titles.is_title_line` accepts it and:

    1. it is a whole top-level paragraph (not in a list, quote, table, code or math) with a
       blank line, a page marker, a whole-line HTML comment or the start/end of the text
       before and after it;
    2. its text (case and spaces ignored) stands alone like this at most
       :data:`TITLE_LINE_MAX_REPEATS` times in the document (more: a running header);
    3. the nearest non-blank line before it and the one after it (markers skipped) are not
       title-like themselves: a run of such lines is a flattened table header, a list of
       names or a column, not a title;
    4. the line before it is no paragraph ending in ``:`` (``The following table
       summarizes ...:`` introduces a table whose header this is);
    5. neither neighbour holds ``/s/`` (a signature block: names and offices).

    Rules 2-5 come from reading the stand-alone lines of 24 of the 29 filings of
    bench/financebench-dev-md, as :func:`proxypointer.tree.titles.is_title_line` did.

    Args:
        tokens: markdown-it block tokens of the text.
        lines: ``split_lines`` of the text (0-based here: ``lines[i]`` is line ``i + 1``).
        floor: First 0-based line after YAML front matter.
        skip: 0-based lines that count as blank (page markers, whole-line comments).

    Returns:
        0-based line indexes, in order.

    """
    standalone = _standalone_lines(tokens, lines, floor, skip)
    cands = [i for i in standalone if is_title_line(lines[i])]
    seen = Counter(" ".join(lines[i].split()).casefold() for i in cands)
    out: list[int] = []
    for i in cands:
        if seen[" ".join(lines[i].split()).casefold()] > TITLE_LINE_MAX_REPEATS:
            continue
        before, after = _neighbour(lines, i, -1, floor, skip), _neighbour(lines, i, 1, floor, skip)
        if is_title_line(before) or is_title_line(after):
            continue
        if before.rstrip().endswith(":") and not before.lstrip().startswith("#"):
            continue
        if SIGNATURE.search(before) or SIGNATURE.search(after):
            continue
        out.append(i)
    return out


def _nested_level(found: list[Heading], extra: list[Heading]) -> list[Heading]:
    """Merge headings without a level (``extra``) into ``found``, one below the heading before."""
    pending = sorted(found + extra, key=lambda h: h.line)
    marks = {id(h) for h in extra}
    merged: list[Heading] = []
    parent_level = 0
    for h in pending:
        if id(h) in marks:
            merged.append(Heading(h.line, h.last_line, min(parent_level + 1, 6), h.title, h.md_level, h.source))
        else:
            parent_level = h.level
            merged.append(h)
    return merged


def flatten_levels(headings: list[Heading], lines: list[str] | None = None,
                   filing: bool = False) -> tuple[list[Heading], int]:
    """Give every heading the depth of its numbering, 2 when it has none (module docstring).

    A financial statement's title (:func:`proxypointer.tree.titles.statement_kind`) keeps the
    pieces of its table that a converter wrote as headings (``Verizon Communications Inc. and
    Subsidiaries``, ``YEAR ENDED MAY 31,``, ``Assets Current assets``, ``Liabilities and
    Equity``) as its children, one level below it, so that the statement is one section and
    its rows carry its name in their breadcrumbs: an unnumbered heading after the title nests
    under it while its own text is table-like (at least
    :data:`STATEMENT_MIN_FIGURE_SHARE` of its words are figures). The
    statement ends at the first heading that is numbered, labelled (part, item, note, the
    notes heading), another statement's title, or followed by prose or by no text at all. A statement's title
    followed by prose (a discussion of the cash flows in MD&A) opens nothing.

    Args:
        headings: Headings in line order.
        lines: ``split_lines`` of the text (line ``i`` is ``lines[i - 1]``), to read the text
            under a heading; without it no heading nests under a statement's title.
        filing: In a filing (:func:`filing_structure`), parts, items, the notes heading and
            notes take their labels' levels (``PART II`` 1 > ``Item 8`` 2 > notes 3 > ``Note
            14`` 4) and every other heading is flattened below the label before it (its
            numbering depth, else 1, below it).

    An unnumbered, unlabelled heading whose level a reader wrote from its type (source
    ``styled``) goes as many levels deeper as its style ranks below the highest style of its
    run (:func:`_style_offsets`): "Network Evolution" (10 pt bold) under "Global Network and
    Technology" (10 pt bold italic), both under Item 1.

    Returns:
        ``(headings, title_line)``: the re-levelled headings, and the line of the first
        heading when, before flattening, it was the only heading at the shallowest level
        (it keeps naming the document, as :func:`proxypointer.tree.build.build_tree` would have
        named it), else 0.

    """
    title_line = 0
    if headings:
        top = min(h.level for h in headings)
        if headings[0].level == top and sum(1 for h in headings if h.level == top) == 1:
            title_line = headings[0].line
    out: list[Heading] = []
    structure = filing_structure(headings) if filing else None
    below = _style_offsets(headings)
    base = 0  # level of the last labelled heading of a filing (0: none, or not a filing)
    statement = 0  # level of the open financial statement's title, 0 when none is open
    for i, h in enumerate(headings):
        if structure is not None and structure[0][i]:
            base = structure[1][i]
            statement = 0
            out.append(Heading(h.line, h.last_line, min(base, 6), h.title, h.md_level, h.source))
            continue
        depth = min(numbering_depth(h.title), 6)
        label = filing_label(h.title)
        kind = statement_kind(h.title)
        if statement and (depth or kind or (label and label[0] != "statements") or _NOTES_TO.search(h.title)):
            statement = 0
        own_table = False
        if lines is not None and (statement or (kind and not depth)):  # only where it decides
            end = headings[i + 1].line - 1 if i + 1 < len(headings) else len(lines)
            # a piece of the statement's table has rows; its title may stand over nothing
            own_table = _table_like(lines, h.last_line + 1, end, empty=not statement)
        if statement and not own_table:
            statement = 0
        level = depth or (statement + 1 if statement else 2 + below[i])
        if base and not statement:
            level = base + (depth or 1 + below[i])
        if kind and not depth and own_table:  # a statement's title over prose discusses it (MD&A)
            statement = level
        out.append(Heading(h.line, h.last_line, min(level, 6), h.title, h.md_level, h.source))
    return out, title_line


def _style_offsets(headings: list[Heading]) -> list[int]:
    """Depth of each styled heading below the first level of its run, from its font's rank.

    A *run* is a maximal sequence of unnumbered, unlabelled headings whose level a reader wrote
    from their font (source ``styled``: :mod:`proxypointer.tree.headingstyles`); any other heading
    ends it. Within a run, a heading's offset is the index of its written level among the
    run's distinct written levels (0 for the run's highest style); 0 for every other heading.
    """
    offsets = [0] * len(headings)
    run: list[int] = []

    def close() -> None:
        levels = sorted({headings[k].md_level for k in run})
        for k in run:
            offsets[k] = levels.index(headings[k].md_level)
        run.clear()

    for i, h in enumerate(headings):
        if h.source == "styled" and not numbering_depth(h.title) and not filing_label(h.title):
            run.append(i)
        else:
            close()
    close()
    return offsets


#: Least share of figures among the words of a heading's own text for it to count as a piece of
#: a statement's table (:func:`flatten_levels`). Measured on the headings that follow the
#: statement titles of the 29 filings of bench/financebench-dev-md: the pieces of statements
#: ("Assets", "YEAR ENDED MAY 31,", "Attributable to CVS Health Number of shares") 0.19-0.60;
#: the prose after the last statement ("Basis of Presentation", "Use of Estimates", an
#: auditor's report) 0.00-0.09.
STATEMENT_MIN_FIGURE_SHARE = 0.15
_FIGURE = re.compile(r"(?<![\w.])\(?[-–]?\$?\d[\d,]*(?:\.\d+)?%?\)?(?![\w.])|(?<!\S)[—–-](?!\S)")
_NOTES_TO = re.compile(r"\bnotes\s+to\s+(?:the\s+)?(?:[\w-]+\s+){0,3}financial\s+statements\b", re.IGNORECASE)


def _table_like(lines: list[str], a: int, b: int, empty: bool = True) -> bool:
    """Tell whether lines a..b (1-based inclusive) are rows of figures (``empty``: or hold no text)."""
    body = [x for x in lines[a - 1 : b] if x.strip() and not _COMMENT_LINE.match(x)]
    if not body:
        return empty
    words = sum(len(x.split()) for x in body)
    figures = sum(len(_FIGURE.findall(x)) for x in body)
    return figures >= STATEMENT_MIN_FIGURE_SHARE * words


#: Least share of figures among a line's words for it to be a row of a table of figures.
#: A statement row has a label of a few words and a figure per column ("Total current assets
#: 2,530,163 2,118,941": 0.4); a sentence quoting figures has many more words per figure
#: ("... totaled $1.6 billion compared to $1.5 billion": 0.13).
FIGURE_ROW_MIN_SHARE = 0.25


def figure_row(line: str) -> bool:
    """Tell whether a line reads as one row of a table of figures.

    At least two figures; and either it is a row of a markdown table (it starts with a pipe:
    its label may be long) or its figures are at least :data:`FIGURE_ROW_MIN_SHARE` of its
    words (a row converted to one line of text, not a sentence quoting two figures).
    """
    figures = len(_FIGURE.findall(line))
    if figures < 2:
        return False
    if line.lstrip().startswith("|"):
        return True
    return figures >= FIGURE_ROW_MIN_SHARE * len(line.split())


#: Lines after an outline heading within which a text heading with a matching title is the
#: same heading written twice (the converter's guess beside the bookmark), not a section.
OUTLINE_DUPLICATE_LINES = 6


# An item number at the start of a title, without the word "Item" ("8 Financial Statements",
# "1B. Unresolved Staff Comments"): how contents tables with an "Item" column print them.
_BARE_ITEM = re.compile(r"^(?P<number>\d{1,2})(?P<letter>[A-C])?\.?\s+(?=[A-Z(])")
_ITEM_NUMBER = re.compile(r"^(?P<number>\d{1,2})(?P<letter>[A-C])?")


def _item_key(label: str) -> tuple[int, str] | None:
    m = _ITEM_NUMBER.match(label)
    return (int(m.group("number")), m.group("letter") or "") if m else None


def with_item_words(headings: list[Heading]) -> list[Heading]:
    """Outline headings whose item number stands without the word "Item", given it, for their labels.

    A filing's printed contents often has an "Item" column, so the entries it places read
    "8 Financial Statements and Supplementary Data" and "1B. Unresolved Staff Comments"
    beside entries whose body heading says "Item 7A." (Johnson & Johnson's 10-K). Such an
    outline heading is an item when at least :data:`FILING_MIN_LABELS` outline headings are
    labelled items and its number falls between the items around it (so numbered notes
    listed after Item 8, "1. Summary of ...", are not). Only the copies used to read labels
    change; titles shown stay as written.

    Returns:
        The headings, bare item headings retitled ``Item <title>``.
    """
    outline = [i for i, h in enumerate(headings) if h.source == "outline"]
    keys: dict[int, tuple[int, str]] = {}
    for i in outline:
        lab = filing_label(headings[i].title)
        if lab and lab[0] == "item" and (key := _item_key(lab[1])):
            keys[i] = key
    if len(keys) < FILING_MIN_LABELS:
        return headings
    out = list(headings)
    before: tuple[int, str] = (0, "")
    for n, i in enumerate(outline):
        if i in keys:
            before = keys[i]
            continue
        m = _BARE_ITEM.match(headings[i].title)
        if m is None or filing_label(headings[i].title) is not None:
            continue
        key = (int(m.group("number")), m.group("letter") or "")
        after = next((keys[j] for j in outline[n + 1 :] if j in keys), (99, ""))
        if before < key < after:
            out[i] = replace(headings[i], title=f"Item {headings[i].title}")
            before = key
    return out


def outline_levels(headings: list[Heading]) -> list[Heading]:
    """Levels when a PDF's outline was written into the text (source ``outline``).

    Outline headings keep the level they were written with (their bookmark depth), except
    in a flat outline (every entry at one level) of a filing, whose parts, items and notes
    are re-levelled from their labels (:func:`relevel_filing`). Every other heading nests
    under the outline heading before it (its anchor): in a filing at the depth below the
    anchor that :func:`relevel_filing` gives it (a note two below an item: under the notes
    heading), elsewhere at the anchor's level + 1 + the rank of its own level among the
    other headings under that anchor, so their relative nesting is kept; at most 6. A text
    heading whose title matches an outline heading at most
    :data:`OUTLINE_DUPLICATE_LINES` lines before it is dropped: the same title, twice. A part
    or item below an outline heading that its labels put at or above it ("Item 9" after an
    outline note of Item 8) climbs out to the depth its labels give it; an appended exhibit's
    heading (:func:`filing_structure`) climbs out to the level of the filing's last part.

    Args:
        headings: Headings in line order, some of source ``outline``.

    Returns:
        The headings re-levelled, duplicates dropped.
    """
    from .outline import title_match

    shown = {h.line: h.title for h in headings}
    headings = with_item_words(headings)  # labels read from these; titles shown as written
    outline = [h for h in headings if h.source == "outline"]
    fixed = {h.line: h.md_level for h in outline}
    if len({h.md_level for h in outline}) == 1:
        relevelled = relevel_filing([Heading(h.line, h.last_line, h.md_level, h.title, h.md_level, h.source)
                                     for h in outline])
        fixed = {h.line: h.level for h in relevelled}
    kept: list[Heading] = []
    recent: list[Heading] = []  # outline headings at most OUTLINE_DUPLICATE_LINES before
    for h in headings:
        recent = [o for o in recent if h.line - o.line <= OUTLINE_DUPLICATE_LINES]
        if h.source == "outline":
            recent.append(h)
        elif any(title_match(h.title, o.title) for o in recent):
            continue
        kept.append(h)
    anchor_line = 0
    under: dict[int, list[Heading]] = {}
    for h in kept:
        if h.source == "outline":
            anchor_line = h.line
        else:
            under.setdefault(anchor_line, []).append(h)
    ranks = {a: sorted({h.level for h in hs}) for a, hs in under.items()}
    # In a filing, the labels say how text headings nest below an outline heading (a note under
    # the notes heading under Item 8): their depth below it as relevel_filing would set it.
    filing = {h.line: h.level for h in relevel_filing(kept)}
    structure = filing_structure(kept)
    is_filing = structure is not None
    kinds = structure[0] if structure else [""] * len(kept)
    out: list[Heading] = []
    anchor_line = 0
    opened: list[Heading] = []  # outline headings seen, for a part or item that climbs out
    part_level = 1  # level of the last part heading, for an exhibit that climbs out
    for h, kind in zip(kept, kinds, strict=True):
        if h.source == "outline":
            anchor_line = h.line
            level = fixed[h.line]
            opened.append(h)
        elif kind == "exhibit":
            # an appended exhibit after the outline of the agreement before it (its printed
            # contents: CVS's 2018 10-K) climbs out of that agreement's last section, to the
            # level of the filing's last part (Verizon's bookmarks hold every part in one root)
            level = part_level
        elif is_filing and anchor_line and filing[h.line] <= filing[anchor_line] and _is_part_or_item(h.title):
            # "Item 9" after an outline note of Item 8: as deep below the last outline heading
            # above it in the filing's structure as the labels say, never inside the note
            above = next((o for o in reversed(opened) if filing[o.line] < filing[h.line]), None)
            level = (fixed[above.line] + filing[h.line] - filing[above.line]) if above else filing[h.line]
        elif is_filing and anchor_line:
            level = fixed[anchor_line] + max(1, filing[h.line] - filing[anchor_line])
        elif is_filing:
            level = filing[h.line]  # before the first outline heading: the labels' level
        else:
            level = (fixed[anchor_line] if anchor_line else 0) + 1 + ranks[anchor_line].index(h.level)
        out.append(Heading(h.line, h.last_line, min(max(level, 1), 6), shown[h.line], h.md_level, h.source))
        if kind == "part":
            part_level = out[-1].level
    return out


def _is_part_or_item(title: str) -> bool:
    lab = filing_label(title)
    return bool(lab) and lab[0] in ("part", "item")


@dataclass(frozen=True, slots=True)
class HeadingReport:
    """What the converter-output modes did to one document.

    Attributes:
        converter_output: Why the converter rules ran (``"page markers (opendataloader)"``,
            ``"tree.converter_output: on"``); ``""`` when they did not.
        rules: The converter rules that ran, by config key.
        dropped: Headings removed as table rows or page furniture (1-based lines).
        promoted: Plain lines made headings by ``title_lines``.
        relevelled: Headings whose level differs from the one written (flattening, numbering
            or filing labels), converter-rule headings not counted.
        title_line: When levels were flattened, the line of the heading that names the
            document (0: the file stem does).

    """

    converter_output: str = ""
    rules: tuple[str, ...] = ()
    dropped: tuple[Heading, ...] = ()
    promoted: tuple[Heading, ...] = ()
    relevelled: int = 0
    title_line: int = 0


def _bold_title(text_line: str) -> str:
    m = _BOLD.match(text_line.strip())
    if not m:
        return ""
    inner = m.group(2)
    if m.group(1) in inner:
        return ""  # two spans (``**a** and **b**``), not one
    return inner.strip()


def _converter_rules(config: TreeConfig) -> tuple[str, ...]:
    return tuple(
        key
        for key in (
            "space_headings", "drop_row_headings", "title_lines", "label_lines", "flatten_levels", "relevel_filing"
        )
        if getattr(config, key)
    )


#: Most words of a label line's title; a longer line is the title run into its first sentence,
#: and the heading's title keeps the label and these first words.
LABEL_TITLE_MAX_WORDS = 14
_LIST_MARK = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+")
_LABEL_HEAD = re.compile(
    r"^(?P<label>(?:part\s+[ivx]{1,4}|item\s+\d{1,2}[a-c]?(?:\([a-z]\))?|note\s+\d{1,2}[a-z]?))"
    r"(?P<sep>\s*[.:\-–—]\s*|\s+|$)(?P<rest>.*)$",
    re.IGNORECASE,
)


def label_title(text: str) -> str:
    """Give the heading title of a line that starts with a filing label, ``""`` when it is none.

    The heading of the notes (``Notes to Consolidated Financial Statements``, at most
    :data:`LABEL_TITLE_MAX_WORDS` words) is one. Otherwise the label (``Part II``, ``Item 7A``,
    ``Note 14``) must stand alone or be followed by a
    capitalised word, after optional ``.``, ``:`` or a dash: ``Item 8 of this Annual Report``
    (a sentence wrapped onto its own line) and ``Note 3 for details`` are no titles, nor is a
    contents line (ending in a page number). A long line keeps its first
    :data:`LABEL_TITLE_MAX_WORDS` words: the title run into its first sentence.

    Example:
        >>> label_title("NOTE 2 - REVENUE"), label_title("Item 8 of this Annual Report on Form 10-K.")
        ('NOTE 2 - REVENUE', '')
    """
    text = text.strip().replace("**", "").replace("__", "").strip()
    if filing_label(text) == ("notes", "") and len(text.split()) <= LABEL_TITLE_MAX_WORDS and text[:1].isupper():
        return text  # "Notes to Consolidated Financial Statements" on a line of its own
    m = _LABEL_HEAD.match(text)
    if not m or ends_in_folio(text):
        return ""
    rest = m.group("rest").strip()
    if rest and not (rest[0].isupper() or rest[0] in "\"'“‘(["):
        return ""
    part = m.group("label").lower().startswith("part")
    if rest and not m.group("sep").strip() and part and rest[:4].lower() != "item":
        return ""  # "PART I Corning Incorporated and its subsidiaries ...": a paragraph, not a title
    words = text.split()
    return text if len(words) <= LABEL_TITLE_MAX_WORDS else " ".join(words[:LABEL_TITLE_MAX_WORDS])


def label_line_candidates(tokens: list[Token], lines: list[str], skip: frozenset[int] = frozenset()) -> list[Heading]:
    """Headings of the ``label_lines`` rule: list items and paragraphs that open with a label.

    Only the first line of a top-level paragraph or of a list item directly in a top-level
    list (not in a quote, a table or code) counts, and only when :func:`label_title` gives a
    title and the next line is no contents line (a title ending in a page number: ``PART II``
    over ``Item 5. Market ... 20`` stands in a table of contents). Their level is set later
    (one below the heading before them, then the filing and
    flattening rules).

    Args:
        tokens: markdown-it block tokens of the text.
        lines: ``split_lines`` of the text (0-based here).
        skip: 0-based lines that are page markers or comments.

    Returns:
        Headings (source ``label``), in line order.
    """
    out: list[Heading] = []
    seen: set[int] = set()
    for i, tok in enumerate(tokens):
        if tok.type != "paragraph_open" or not tok.map or tok.level not in (0, 2):
            continue
        if tok.level == 2 and not (i >= 2 and tokens[i - 1].type == "list_item_open" and tokens[i - 1].level == 1):
            continue
        n = tok.map[0]
        if n in skip or n in seen:
            continue
        title = label_title(_LIST_MARK.sub("", lines[n]) if tok.level == 2 else lines[n])
        after = _LIST_MARK.sub("", _neighbour(lines, n, 1, 0, skip)).strip()
        if title and ends_in_folio(after):
            continue  # "- PART II" over "- Item 5. Market for ... 20": a line of the contents
        if title:
            seen.add(n)
            out.append(Heading(n + 1, n + 1, 0, title, 0, "label"))
    return out


def apply_converter_modes(
    lines: list[str],
    tokens: list[Token],
    headings: list[Heading],
    config: TreeConfig,
    front_matter_end: int = 0,
    *,
    paged: bool = False,
) -> tuple[list[Heading], HeadingReport]:
    """Add, drop or re-level headings according to the modes that are on.

    Order: HTML headings are added and row or furniture headings dropped; numbering
    re-levelling (``relevel_numbered``); title lines added; filing re-levelling; numbered and
    bold lines added (those three get their levels from what is found before them); last,
    ``flatten_levels``. The converter rules run only on documents that
    ``config.converter_output`` selects (:func:`detect_converter_output` for ``auto``).

    Args:
        lines: ``split_lines`` of the normalised text (line ``i`` is ``lines[i - 1]``).
        tokens: markdown-it-py block tokens of the text (see :mod:`proxypointer.tree.markdown`).
        headings: Top-level ATX/setext headings already found, in line order.
        config: Which modes are on.
        front_matter_end: Last line of YAML front matter, 0 when there is none.
        paged: The text had page markers that its reader already emptied (a converted PDF, or
            page-marked markdown as stored): counts as page markers for ``auto``.

    Returns:
        ``(headings, report)``: all headings in line order (lines 1-based; ``md_level`` is the
        level as written, 0 for bold, numbered and title lines, which have none) and what the
        modes did.

    """
    rules = _converter_rules(config)
    reason = ""
    skip: frozenset[int] = frozenset()
    if rules and config.converter_output != "off":
        pm = page_map(lines) if (config.converter_output == "auto" or config.title_lines) else None
        if config.converter_output == "on":
            reason = "tree.converter_output: on"
        elif pm is not None:
            reason = detect_converter_output(lines, headings, pm.style or ("read and emptied" if paged else ""))
        if reason and pm is not None:
            skip = frozenset(m - 1 for m in pm.marker_lines) | frozenset(
                i for i, line in enumerate(lines) if "<!--" in line and _COMMENT_LINE.match(line)
            )
    if not reason:
        rules = ()
    drop = "drop_row_headings" in rules
    keep: Callable[[Heading], bool] = (
        (lambda h: h.source == "outline" or not is_row_or_furniture(h.title)) if drop else (lambda h: True)
    )
    found = list(headings)
    if config.html_headings:
        found = sorted(found + _html_headings(tokens), key=lambda h: h.line)
    if "space_headings" in rules:
        spaced = space_headings(tokens, lines)
        found = sorted(found + spaced, key=lambda h: h.line)
        logger.debug("%d headings written with a no-break space after the '#'s", len(spaced))
    dropped: list[Heading] = []
    contents: frozenset[int] = frozenset()  # 0-based lines of a printed table of contents
    if drop:
        contents = contents_region(lines, skip)
        dropped = [h for h in found if not keep(h) or (h.line - 1 in contents and h.source != "outline")]
        found = [h for h in found if h not in dropped]
        logger.debug("dropped %d row, furniture or contents headings", len(dropped))
    if config.relevel_numbered:
        found = _relevel(found)
    promoted: list[Heading] = []
    if "title_lines" in rules:
        taken = {h.line for h in found}
        promoted = [
            Heading(i + 1, i + 1, 0, lines[i].strip(), 0, "title")
            for i in title_line_candidates(tokens, lines, front_matter_end, skip)
            if i + 1 not in taken and i not in contents
        ]
        found = _nested_level(found, promoted)
        logger.debug("promoted %d title lines", len(promoted))
    if "label_lines" in rules:
        taken = {h.line for h in found}
        labelled = [h for h in label_line_candidates(tokens, lines, skip)
                    if h.line not in taken and h.line - 1 not in contents]
        found = _nested_level(found, labelled)
        logger.debug("%d label lines made headings", len(labelled))
    if "relevel_filing" in rules:
        found = relevel_filing(found)
    standalone = (
        _standalone_lines(tokens, lines, front_matter_end)
        if config.numbered_headings or config.bold_headings
        else []
    )
    if config.numbered_headings:
        taken = {h.line for h in found}
        extra: list[Heading] = []
        for i in standalone:
            depth = numbered_line_depth(lines[i])
            h = Heading(i + 1, i + 1, min(depth, 6), lines[i].strip(), 0, "numbered")
            if depth and i + 1 not in taken and keep(h):
                extra.append(h)
        found = sorted(found + extra, key=lambda h: h.line)
    if config.bold_headings:
        taken = {h.line for h in found}
        bold = [Heading(i + 1, i + 1, 0, t, 0, "bold") for i in standalone if (t := _bold_title(lines[i]))]
        found = _nested_level(found, [h for h in bold if h.line not in taken and keep(h)])
    title_line = 0
    if "flatten_levels" in rules:
        found, title_line = flatten_levels(found, lines, filing="relevel_filing" in rules)
    if any(h.source == "outline" for h in found):
        found = outline_levels(found)
    relevelled = sum(1 for h in found if h.md_level and h.level != h.md_level)
    report = HeadingReport(reason, rules, tuple(dropped), tuple(h for h in found if h.source == "title"),
                           relevelled, title_line)
    return found, report

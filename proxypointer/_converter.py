r"""Converter-output modes: headings that DOCX/PDF -> markdown converters emit without ``#``.

Each mode is off by default and switched on in :class:`~proxypointer.config.TreeConfig`.
Candidates are taken only from markdown-it block tokens at nesting level 0, so text inside
fenced or indented code, display math, lists, block quotes and tables is never promoted.
Title and numbering rules live in :mod:`proxypointer.titles`.

* ``html_headings``: every line of a top-level HTML block that is exactly one
  ``<h1>``..``<h6>`` element; level = N (``md_level`` = N too). Only HTML blocks of
  CommonMark types 6 and 7 (ordinary elements) count, and no line inside a comment or a
  ``<pre>``, ``<script>``, ``<style>`` or ``<textarea>`` element (shared case 30).
* ``drop_row_headings``: headings that read like table rows or page furniture are not
  sections (:func:`proxypointer.titles.is_row_or_furniture`); their lines join the section
  before them.
* ``relevel_filing``: SEC filings (10-K, 10-Q) re-levelled from their labels: ``PART II`` >
  ``ITEM 7.`` > ``Notes to Consolidated Financial Statements`` > ``Note 14 -``; other
  headings nest under the label before them (see :func:`relevel_filing`).
* ``relevel_numbered`` (shared case 13): only when every markdown heading has the same level
  and at least 2 carry numbering; level = number of numeric components (``3`` -> 1,
  ``3.2.1`` -> 3, ``3.1.`` -> 2, ``Item 7`` -> 1, ``Annex 2.1`` / ``Appendix A.1`` -> 2).
  Headings without numbering become level 1: in flat converter output they are almost
  always front or back matter (Abstract, References), and nesting them under the last
  numbered subsection would put them under a wrong breadcrumb. ``md_level`` keeps the level
  as written.
* ``numbered_headings`` (shared case 14): a one-line top-level paragraph that
  :func:`proxypointer.titles.numbered_line_depth` accepts (``2.3 Results``), with a blank
  line (or the file start/end) before and after; level = number of components.
  ``1. Check`` is an ordered list item for markdown-it and is never a candidate.
* ``bold_headings`` (shared case 12): a one-line top-level paragraph that is exactly one
  ``**...**`` or ``__...__`` span, blank line (or file start/end) before and after; level =
  level of the nearest preceding heading found by another rule + 1 (1 when there is none, at
  most 6), so consecutive bold lines are siblings, never nested in each other.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._markdown import Heading
from .titles import filing_label, html_title, is_row_or_furniture, numbered_line_depth, numbering_depth

if TYPE_CHECKING:
    from markdown_it.token import Token

    from .config import TreeConfig

__all__ = ["apply_converter_modes", "relevel_filing"]

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


def _blank(lines: list[str], index: int, floor: int) -> bool:
    """Whether 0-based line ``index`` is blank or outside ``[floor, len(lines))``."""
    if index < floor or index >= len(lines):
        return True
    return not lines[index].strip(" \t")


def _standalone_lines(tokens: list[Token], lines: list[str], floor: int) -> list[int]:
    """0-based lines that are a whole top-level paragraph between blank lines."""
    out: list[int] = []
    for tok in tokens:
        if tok.type != "paragraph_open" or tok.level != 0 or not tok.map:
            continue
        start, end = tok.map
        if end - start == 1 and _blank(lines, start - 1, floor) and _blank(lines, end, floor):
            out.append(start)
    return out


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

    Levels: ``PART`` 1; ``ITEM`` 2 (1 in a filing without part headings); the heading of the
    notes (``Notes to Consolidated Financial Statements``) one below the open item or part;
    ``Note N`` one below the open notes heading, else one below the open item or part; so is
    ``N. Title`` once the notes heading or a financial statement's title (``Consolidated
    Balance Sheets``) has been seen in the open item or part. Every other heading nests under
    the labelled heading before it (its *anchor*), at the anchor's level + 1 + the rank of
    its written level among the other headings under that anchor, so their relative nesting
    is kept; headings before the first label rank from level 1. At most 6. A part or item
    line of the table of contents (ending in a page number) is no label
    (:func:`proxypointer.titles.filing_label`).

    Args:
        headings: Headings in line order.

    Returns:
        The headings re-levelled; unchanged when fewer than :data:`FILING_MIN_LABELS` of them
        are part, item or note headings (not a filing).

    """
    labels = [filing_label(h.title) for h in headings]
    kinds = [lab[0] if lab else "" for lab in labels]
    if sum(1 for k in kinds if k in ("part", "item", "note")) < FILING_MIN_LABELS:
        return headings
    part_level = 1
    item_level = 2 if "part" in kinds else 1
    levels: list[int] = [0] * len(headings)
    anchor_of: list[int] = [-1] * len(headings)  # index of the anchor of an unlabelled heading
    part_open = item_open = statements_open = False
    notes_level = 0
    anchor = -1
    for i, kind in enumerate(kinds):
        if kind == "statements":
            statements_open = True
        if kind == "numbered" and (notes_level or statements_open):
            kind = kinds[i] = "note"
        if kind not in ("part", "item", "notes", "note"):
            kinds[i] = ""
            anchor_of[i] = anchor
            continue
        container = item_level if item_open else (part_level if part_open else 0)
        if kind == "part":
            levels[i] = part_level
            part_open, item_open, notes_level, statements_open = True, False, 0, False
        elif kind == "item":
            levels[i] = item_level
            item_open, notes_level, statements_open = True, 0, False
        elif kind == "notes":
            levels[i] = notes_level = container + 1
        else:
            levels[i] = (notes_level or container) + 1
        anchor = i
    written: dict[int, set[int]] = {}
    for i, a in enumerate(anchor_of):
        if not kinds[i]:
            written.setdefault(a, set()).add(headings[i].md_level)
    ranks = {a: sorted(mds) for a, mds in written.items()}
    out: list[Heading] = []
    for i, h in enumerate(headings):
        if not kinds[i]:
            a = anchor_of[i]
            levels[i] = (levels[a] if a >= 0 else 0) + 1 + ranks[a].index(h.md_level)
        out.append(Heading(h.line, h.last_line, min(levels[i], 6), h.title, h.md_level, h.source))
    changed = sum(1 for a, b in zip(headings, out, strict=True) if a.level != b.level)
    logger.debug("filing structure: %d of %d headings re-levelled", changed, len(out))
    return out


def _bold_title(text_line: str) -> str:
    m = _BOLD.match(text_line.strip())
    if not m:
        return ""
    inner = m.group(2)
    if m.group(1) in inner:
        return ""  # two spans (``**a** and **b**``), not one
    return inner.strip()


def apply_converter_modes(
    lines: list[str], tokens: list[Token], headings: list[Heading], config: TreeConfig, front_matter_end: int = 0
) -> list[Heading]:
    """Add, drop or re-level headings according to the converter-output modes that are on.

    Order: HTML headings are added, row and furniture headings dropped, then filing and
    numbering re-levelling, then numbered and bold lines added (those two get their levels
    from what is found before them).

    Args:
        lines: ``split_lines`` of the normalised text (line ``i`` is ``lines[i - 1]``).
        tokens: markdown-it-py block tokens of the text (see :mod:`proxypointer._markdown`).
        headings: Top-level ATX/setext headings already found, in line order.
        config: Which modes are on; with all off the headings come back unchanged.
        front_matter_end: Last line of YAML front matter, 0 when there is none.

    Returns:
        All headings in line order. Lines are 1-based; ``md_level`` is the level as written
        (0 for bold and numbered lines, which have no written level).

    """
    keep: Callable[[Heading], bool] = (
        (lambda h: not is_row_or_furniture(h.title)) if config.drop_row_headings else (lambda h: True)
    )
    found = list(headings)
    if config.html_headings:
        found = sorted(found + _html_headings(tokens), key=lambda h: h.line)
    if config.drop_row_headings:
        before = len(found)
        found = [h for h in found if keep(h)]
        logger.debug("dropped %d row or furniture headings", before - len(found))
    if config.relevel_filing:
        found = relevel_filing(found)
    if config.relevel_numbered:
        found = _relevel(found)
    standalone = (
        _standalone_lines(tokens, lines, front_matter_end)
        if config.numbered_headings or config.bold_headings
        else []
    )
    if config.numbered_headings:
        extra: list[Heading] = []
        for i in standalone:
            depth = numbered_line_depth(lines[i])
            h = Heading(i + 1, i + 1, min(depth, 6), lines[i].strip(), 0, "numbered")
            if depth and keep(h):
                extra.append(h)
        found = sorted(found + extra, key=lambda h: h.line)
    if config.bold_headings:
        taken = {h.line for h in found}
        bold = [Heading(i + 1, i + 1, 0, t, 0, "bold") for i in standalone if (t := _bold_title(lines[i]))]
        pending = sorted(found + [h for h in bold if h.line not in taken and keep(h)], key=lambda h: h.line)
        merged: list[Heading] = []
        parent_level = 0
        for h in pending:
            if h.source == "bold":
                merged.append(Heading(h.line, h.line, min(parent_level + 1, 6), h.title, 0, "bold"))
            else:
                parent_level = h.level
                merged.append(h)
        found = merged
    return found

r"""Converter-output modes: headings that DOCX/PDF -> markdown converters emit without ``#``.

Each mode is off by default and switched on in :class:`~proxypointer.config.TreeConfig`.
Candidates are taken only from markdown-it block tokens at nesting level 0, so text inside
fenced or indented code, lists, block quotes and tables is never promoted.

* ``html_headings``: every line of a top-level HTML block that is exactly one
  ``<h1>``..``<h6>`` element; level = N (``md_level`` = N too).
* ``relevel_numbered`` (shared case 13): only when every markdown heading has the same level
  and at least 2 carry numbering; level = number of numeric components (``3`` -> 1,
  ``3.2.1`` -> 3, ``3.1.`` -> 2, ``Item 7`` -> 1, ``Annex 2.1`` / ``Appendix A.1`` -> 2).
  Headings without numbering become level 1: in flat converter output they are almost
  always front or back matter (Abstract, References), and nesting them under the last
  numbered subsection would put them under a wrong breadcrumb. ``md_level`` keeps the level
  as written.
* ``numbered_headings`` (shared case 14): a one-line top-level paragraph matching
  ``^\d+(\.\d+)*\s+\S`` with at most 8 words, not ending in ``.``, ``:`` or ``;``, with a
  blank line (or the file start/end) before and after; level = number of components. Two
  stricter conditions than the case: each component has at most 3 digits (``2023 Annual
  report`` is a year, not a section) and the text after the number holds a letter.
  ``1. Check`` is an ordered list item for markdown-it and is never a candidate.
* ``bold_headings`` (shared case 12): a one-line top-level paragraph that is exactly one
  ``**...**`` or ``__...__`` span, blank line (or file start/end) before and after; level =
  level of the nearest preceding heading found by another rule + 1 (1 when there is none, at
  most 6), so consecutive bold lines are siblings, never nested in each other.
"""

from __future__ import annotations

import html
import logging
import re
from typing import TYPE_CHECKING

from .config import TreeConfig
from .tree import Heading, split_lines

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["apply_converter_modes", "numbering_depth"]

logger = logging.getLogger(__name__)

_HTML_HEADING = re.compile(r"^ {0,3}<h([1-6])(?:\s[^>]*)?>(.*?)</h\1>\s*$", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
_PLAIN_NUMBERED = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*)\s+\S")
_HEADING_NUMBER = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*)\.?(?:\s+|$)")
_LABEL_NUMBER = re.compile(
    r"^(?i:part|chapter|section|article|item|note|annex|appendix|schedule|exhibit)"
    r"\s+(?:\d{1,3}[A-Z]?|[IVXLC]{1,6}|[A-Z])((?:\.\d{1,3})*)\.?(?=\s|$|[:.)\-])"
)
_BOLD = re.compile(r"^(\*\*|__)(.+)\1$")
_LETTER = re.compile(r"[^\W\d_]")


def numbering_depth(title: str) -> int:
    """Depth shown by a heading's numbering, 0 when it carries none.

    Args:
        title: Heading text as written.

    Returns:
        Number of numeric components: ``"3 Results"`` -> 1, ``"3.2.1 Layout"`` -> 3,
        ``"4.1. Setup"`` -> 2, ``"Item 7A"`` -> 1, ``"Annex 2.1"`` -> 2,
        ``"Appendix A.1"`` -> 2; 0 for ``"Results"`` or ``"2023 report"``.

    """
    m = _HEADING_NUMBER.match(title)
    if m:
        return m.group(1).count(".") + 1
    m = _LABEL_NUMBER.match(title)
    if m:
        return m.group(1).count(".") + 1
    return 0


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


def _html_headings(tokens: list[Token]) -> list[Heading]:
    out: list[Heading] = []
    for tok in tokens:
        if tok.type != "html_block" or tok.level != 0 or not tok.map:
            continue
        for offset, raw in enumerate(tok.content.split("\n")):
            m = _HTML_HEADING.match(raw)
            if not m:
                continue
            title = " ".join(html.unescape(_TAG.sub("", m.group(2))).split())
            if title:
                line = tok.map[0] + 1 + offset
                level = int(m.group(1))
                out.append(Heading(line, line, level, title, level, "html"))
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


def _numbered(text_line: str) -> Heading | None:
    title = text_line.strip()
    m = _PLAIN_NUMBERED.match(title)
    if not m or len(title.split()) > 8 or title.endswith((".", ":", ";")):
        return None
    if not _LETTER.search(title[m.end(1) :]):
        return None
    return Heading(0, 0, min(m.group(1).count(".") + 1, 6), title, 0, "numbered")


def _bold_title(text_line: str) -> str:
    m = _BOLD.match(text_line.strip())
    if not m:
        return ""
    inner = m.group(2)
    if m.group(1) in inner:
        return ""  # two spans (``**a** and **b**``), not one
    return inner.strip()


def apply_converter_modes(
    text: str, tokens: list[Token], headings: list[Heading], config: TreeConfig
) -> list[Heading]:
    """Add or re-level headings according to the converter-output modes that are on.

    Args:
        text: Normalised markdown (see :func:`proxypointer.tree.normalise_text`).
        tokens: markdown-it-py block tokens of ``text`` (commonmark + table + front matter).
        headings: Top-level ATX/setext headings already found, in line order.
        config: Which modes are on; with all off the headings come back unchanged.

    Returns:
        All headings in line order. Lines are 1-based; ``md_level`` is the level as written
        (0 for bold and numbered lines, which have no written level).

    """
    lines = split_lines(text)
    floor = 0
    for tok in tokens:
        if tok.type == "front_matter" and tok.level == 0 and tok.map:
            floor = tok.map[1]
    found = list(headings)
    if config.html_headings:
        found = sorted(found + _html_headings(tokens), key=lambda h: h.line)
    if config.relevel_numbered:
        found = _relevel(found)
    standalone = (
        _standalone_lines(tokens, lines, floor)
        if config.numbered_headings or config.bold_headings
        else []
    )
    if config.numbered_headings:
        extra: list[Heading] = []
        for i in standalone:
            h = _numbered(lines[i])
            if h is not None:
                extra.append(Heading(i + 1, i + 1, h.level, h.title, 0, "numbered"))
        found = sorted(found + extra, key=lambda h: h.line)
    if config.bold_headings:
        bold = {i + 1: t for i in standalone if (t := _bold_title(lines[i]))}
        taken = {h.line for h in found}
        merged: list[Heading] = []
        parent_level = 0
        pending = sorted(found + [Heading(ln, ln, 0, t, 0, "bold") for ln, t in bold.items()
                                  if ln not in taken], key=lambda h: h.line)
        for h in pending:
            if h.source == "bold":
                merged.append(Heading(h.line, h.line, min(parent_level + 1, 6), h.title, 0, "bold"))
            else:
                parent_level = h.level
                merged.append(h)
        found = merged
    return found

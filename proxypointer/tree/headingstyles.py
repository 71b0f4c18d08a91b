"""Heading levels from type: a converted PDF's headings ranked by the size and weight of their font.

A PDF -> markdown converter guesses each heading's ``#`` level; opendataloader-pdf writes most
headings of a 10-K at one level (``### Global Network and Technology`` over ``### Network
Evolution``, its child in the filing's own outline). The PDF itself says more: the author set
each heading level in its own type. Verizon's 10-Ks set a section in 10 pt bold italic, its
subsections in 10 pt bold and theirs in 9 pt bold. The converter's JSON output names the font and
size of every heading it found; this module ranks those *styles* and writes each heading's rank
as its level, marked ``{.styled}`` (an attribute list, dropped from the title like
``{.outline}``), so that the tree's converter rules can nest headings by it
(:func:`proxypointer.tree.headings.flatten_levels`)::

    ### Global Network and Technology        ->  ## Global Network and Technology {.styled}
    ### Network Evolution                     ->  ### Network Evolution {.styled}

The rank of a style (:func:`style_ranks`): larger type first; at one size, the style with fewer
headings first (in a tree each section of one level holds one or more of the next, so a level
has at least as many headings as the one above it: 10 pt bold italic, 22 headings, over 10 pt
bold, 127, in Verizon 2021), then the style seen first. Measured against the bookmarks of the
financebench-dev PDFs (``scripts/tree_accuracy.py``, bookmarks stripped): nesting 0.743 ->
0.819 pooled (Verizon 2021 0.704 -> 0.807, 2022 0.668 -> 0.805; the others unchanged), recall
and the hand-written gold unchanged. Size alone, bold before italic, gave 0.740.

This module knows the converter's JSON, markdown headings and page markers; nothing of trees.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..lines import split_lines
from .markdown import STYLED_ATTRIBUTE, is_styled_heading, parse_blocks
from .pages import MarkerStyle, page_map

__all__ = [
    "STYLED_ATTRIBUTE",
    "STYLE_SIZE_STEP",
    "HeadingStyle",
    "StyledHeading",
    "apply_heading_styles",
    "font_style",
    "is_styled_heading",
    "odl_headings",
    "style_ranks",
]

logger = logging.getLogger(__name__)

#: Font sizes are compared in steps of this many points: 9.94 pt and 10 pt are one size (a
#: converter reports sizes from the text matrix, with rounding noise of a few hundredths).
STYLE_SIZE_STEP = 0.5
#: Words in the style part of a font's name that mean a bold or an italic face
#: (``TimesNewRoman,BoldItalic``, ``Arial-BoldMT``, ``HelveticaNeueLTStd-BdCn``,
#: ``OpenSans-SemiboldItalic``, ``ArialBlack``).
_BOLD = re.compile(r"bold|black|heavy|demi|-bd|,bd", re.IGNORECASE)
_ITALIC = re.compile(r"italic|oblique|-it\b|,it\b", re.IGNORECASE)
#: The subset tag a PDF puts before an embedded font's name (``ABCDEF+``, ISO 32000-1 9.6.4).
_SUBSET_TAG = re.compile(r"^[A-Z]{6}\+")
_WORD = re.compile(r"[^a-z0-9]+")
#: Characters of two titles' normalised text that must agree for a markdown heading to be the
#: converter's JSON heading (the JSON holds the same text; a heading run into the next line's
#: words may be longer in one of them).
MATCH_PREFIX = 40


@dataclass(frozen=True, slots=True)
class HeadingStyle:
    """The type a heading is set in.

    Attributes:
        size: Font size in points, rounded to :data:`STYLE_SIZE_STEP`.
        bold: The font is a bold (or heavier) face.
        italic: The font is an italic or oblique face.
    """

    size: float
    bold: bool
    italic: bool


@dataclass(frozen=True, slots=True)
class StyledHeading:
    """A heading as the converter found it on a page.

    Attributes:
        page: PDF page, 1-based.
        text: The heading's text as the converter wrote it.
        style: Its type.
    """

    page: int
    text: str
    style: HeadingStyle


def font_style(font: str, size: float) -> HeadingStyle:
    """Return the style of text in ``font`` at ``size`` points.

    Args:
        font: Font name as the PDF names it (``TimesNewRoman,BoldItalic``); the family and a
            subset tag (``ABCDEF+``) are ignored, so two embedded copies of one face count as
            one style and a family named ``Blackstone`` is not bold.
        size: Size in points (>= 0).

    Returns:
        The style, size rounded to :data:`STYLE_SIZE_STEP`.

    Examples:
        >>> font_style("Arial-BoldItalicMT", 9.96)
        HeadingStyle(size=10.0, bold=True, italic=True)
    """
    style = _style_part(font)
    return HeadingStyle(round(size / STYLE_SIZE_STEP) * STYLE_SIZE_STEP, bool(_BOLD.search(style)),
                        bool(_ITALIC.search(style)))


def _style_part(font: str) -> str:
    """Return the part of a font name that names its weight and slant, not its family.

    PostScript names set the style off with ``-`` (``Arial-BoldMT``) and TrueType names with
    ``,`` (``Arial,Bold``): the style part starts there. A name without either
    (``ArialBlack``) is read whole except its first letter, so that a family whose name
    starts with a weight word (``Blackstone-Regular``, ``Heavyweight``) is not bold.

    Examples:
        >>> _style_part("ABCDEF+Blackstone-Regular")
        '-Regular'
        >>> _style_part("ArialBlack")
        'rialBlack'
    """
    name = _SUBSET_TAG.sub("", font.lstrip("/"))  # pypdf keeps the name object's "/"
    cut = min((i for i in (name.find("-"), name.find(",")) if i >= 0), default=-1)
    return name[cut:] if cut >= 0 else name[1:]


def odl_headings(data: Mapping[str, Any]) -> list[StyledHeading]:
    """Return the headings of opendataloader-pdf's JSON output, in its reading order.

    Args:
        data: The parsed JSON of one file (``{"kids": [...]}``; each element with ``type``,
            ``page number``, ``font``, ``font size``, ``content``; elements nest in ``kids``).

    Returns:
        Elements of type ``heading`` with a page, a font, a size and text; others are skipped.
    """
    out: list[StyledHeading] = []
    stack = list(reversed(data.get("kids") or []))
    while stack:
        el = stack.pop()
        if not isinstance(el, Mapping):
            continue
        if el.get("type") == "heading":
            page, font, size, text = el.get("page number"), el.get("font"), el.get("font size"), el.get("content")
            if isinstance(page, int) and isinstance(font, str) and isinstance(size, (int, float)) \
                    and isinstance(text, str) and text.strip():
                out.append(StyledHeading(page, text, font_style(font, float(size))))
        stack.extend(reversed(el.get("kids") or []))
    return out


def style_ranks(styles: Iterable[HeadingStyle]) -> dict[HeadingStyle, int]:
    """Rank heading styles, 1 the highest (module docstring: the rule and where it comes from).

    Args:
        styles: The style of each heading of one document, in reading order.

    Returns:
        ``{style: rank}``; larger size first, then fewer headings, then first seen.
    """
    seq = list(styles)
    counts = Counter(seq)
    first: dict[HeadingStyle, int] = {}
    for i, s in enumerate(seq):
        first.setdefault(s, i)
    order = sorted(counts, key=lambda s: (-s.size, counts[s], first[s]))
    return {s: k for k, s in enumerate(order, 1)}


def _norm(text: str) -> str:
    return _WORD.sub("", text.lower())


def apply_heading_styles(
    markdown: str, headings: Sequence[StyledHeading], marker_style: MarkerStyle | None = None
) -> tuple[str, int]:
    """Write each ATX heading's style rank as its level, marked :data:`STYLED_ATTRIBUTE`.

    A markdown heading takes the style of the first converter heading on its page, not yet
    taken, whose normalised text agrees with its own over :data:`MATCH_PREFIX` characters (or
    the shorter of the two). Ranks come from the styles of the headings matched
    (:func:`style_ranks`); a rank past 6 is written as 6. Headings with no match, and headings
    already marked (``{.outline}``, ``{.styled}``), are left as they are; so is every other
    line, so line numbers and page markers do not move.

    Args:
        markdown: The converter's markdown of one PDF, page markers included.
        headings: The converter's headings of the same PDF (:func:`odl_headings`).
        marker_style: The page-marker style of ``markdown``; None: detected
            (:func:`proxypointer.tree.pages.page_map`).

    Returns:
        ``(markdown, styled)``: the text with levels rewritten, and how many headings were.
    """
    if not headings:
        return markdown, 0
    lines = split_lines(markdown)
    pages = page_map(lines, marker_style)
    by_page: dict[int, list[int]] = {}
    for k, h in enumerate(headings):
        by_page.setdefault(h.page, []).append(k)
    keys = [_norm(h.text)[:MATCH_PREFIX] for h in headings]
    taken: set[int] = set()
    found: dict[int, HeadingStyle] = {}  # 0-based line -> style
    titles: dict[int, str] = {}
    for i, tok in enumerate(tokens := parse_blocks(markdown)):
        if tok.type != "heading_open" or tok.level != 0 or not tok.map or not tok.markup.startswith("#"):
            continue
        raw = tokens[i + 1].content
        if "{" in raw and (is_styled_heading(raw) or raw.rstrip().endswith("}")):
            continue  # marked already (an outline heading, or styled before)
        own = _norm(raw)[:MATCH_PREFIX]
        if not own:
            continue
        line = tok.map[0]
        for k in by_page.get(pages.line_pages[line], ()):
            if k in taken:
                continue
            n = min(len(own), len(keys[k]))
            if n and own[:n] == keys[k][:n]:
                taken.add(k)
                found[line] = headings[k].style
                titles[line] = raw.strip()
                break
    ranks = style_ranks(found[line] for line in sorted(found))
    out = list(lines)
    for line, style in found.items():
        out[line] = f"{'#' * min(ranks[style], 6)} {titles[line]} {STYLED_ATTRIBUTE}"
    logger.debug("heading styles: %d of %d converter headings matched, %d styles", len(found), len(headings),
                 len(ranks))
    text = "\n".join(out)
    return (text + "\n" if markdown.endswith("\n") else text), len(found)

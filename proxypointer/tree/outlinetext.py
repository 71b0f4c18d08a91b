r"""Write a PDF's outline (its bookmarks) into the converted markdown as headings.

When a PDF carries bookmarks, they are its authors' own tree: titles, nesting and the page
each section starts on. A converter's markdown loses them (its headings are guesses from font
sizes). :func:`apply_outline` puts them back: each entry is aligned to a line of its page
(:func:`proxypointer.tree.outline.title_match`; entries in order, each line once,
:func:`proxypointer.tree.outline.align_monotone`) and that line becomes an ATX heading of the
entry's level, marked with the attribute list ``{.outline}``::

    ## Item 7. Management's Discussion and Analysis {.outline}

The mark survives storage, so a tree rebuilt from the stored source is the same tree:
:mod:`proxypointer.tree.headings` keeps these headings' levels and nests every other heading
found in the text below the outline heading before it. An entry that matches no line of its
page (a bookmark named "Cover", or a title the converter split beyond recognition) is
inserted as a heading line at the top of its page, after the entries placed before it.

Only the converted text changes; the page of every original line stays what it was.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .outline import Outline, OutlineEntry, align_monotone, contains_words, match_key, title_match
from .titles import ends_in_folio, strip_attribute_list

__all__ = ["OUTLINE_ATTRIBUTE", "OUTLINE_LINE_MAX_EXTRA_WORDS", "Placement", "apply_outline", "is_outline_heading"]

logger = logging.getLogger(__name__)

#: Attribute list that marks a heading written from a PDF's outline.
OUTLINE_ATTRIBUTE = "{.outline}"
#: Most words a line may hold beyond its entry's title and still be replaced by the heading
#: (a page number, a trailing "Inc."); a longer line (the title run into its first
#: paragraph by the converter) keeps its text, and the heading is inserted before it.
OUTLINE_LINE_MAX_EXTRA_WORDS = 3

_OUTLINE_MARK = re.compile(r"\{[^{}]*(?<![\w-])\.outline(?![\w-])[^{}]*\}\s*$")
# Markup around a line's text: ATX marks, a list bullet or number, a block quote, emphasis.
_LEAD = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|\d{1,3}[.)]\s+(?=\D)|>\s*)?")
_CONTINUED = re.compile(r"[(\[–—-]?\s*\bcontinued\b[)\]]?[.:]?$", re.IGNORECASE)
_BULLET = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|>\s*)?")


def is_outline_heading(raw_heading: str) -> bool:
    """Tell whether a heading's raw text ends in an attribute list with class ``outline``.

    Example:
        >>> is_outline_heading("Item 7. MD&A {.outline}"), is_outline_heading("Item 7 {#i7}")
        (True, False)
    """
    return bool(_OUTLINE_MARK.search(raw_heading))


def _line_text(line: str) -> str:
    """Give a line's text without its marks or a trailing attribute list (``{.styled}``)."""
    return strip_attribute_list(_LEAD.sub("", line).strip())


def _numbered_text(line: str) -> str:
    """Give a line's text keeping a leading ``2.``: an ordered-list marker may be a note's number."""
    return strip_attribute_list(_BULLET.sub("", line).strip())


def _candidates(lines: Sequence[str], skip: frozenset[int]) -> list[int]:
    """0-based lines that may hold a title: non-blank, no marker, no table row, not in code."""
    out: list[int] = []
    fence = ""
    for i, line in enumerate(lines):
        s = line.strip()
        if fence:
            if s.startswith(fence):
                fence = ""
            continue
        if s.startswith(("```", "~~~")):
            fence = s[:3]
            continue
        if not s or i in skip or s.startswith("|") or s.startswith("<!--"):
            continue
        out.append(i)
    return out


@dataclass(frozen=True, slots=True)
class Placement:
    """What :func:`apply_outline` did.

    Attributes:
        lines: The text's lines with the outline written in.
        placed: Entries written on a line of their page.
        inserted: Entries inserted as new lines at the top of their page.
        unplaced: Entries neither placed nor inserted (``insert_missing`` off), in order.
    """

    lines: list[str]
    placed: int = 0
    inserted: int = 0
    unplaced: tuple[OutlineEntry, ...] = ()


def apply_outline(lines: Sequence[str], line_pages: Sequence[int], outline: Outline,
                  marker_lines: frozenset[int] = frozenset(), *, insert_missing: bool = True,
                  page_slack: int = 0, line_titles: bool = False) -> Placement:
    """Write outline entries into converted markdown lines as marked ATX headings.

    Args:
        lines: The converted text split into lines (``tree.split_lines``), page markers kept.
        line_pages: 1-based page of each line (``line_pages[i]`` for line ``i + 1``), from
            :func:`proxypointer.tree.pages.page_map`.
        outline: The outline (PDF bookmarks, :func:`proxypointer.tree.outline.pdf_outline`, or the
            printed contents, :func:`proxypointer.tree.contents.contents_outline`); levels above 6
            are written as 6.
        marker_lines: 1-based page-marker lines (never replaced).
        insert_missing: Insert an entry that matches no line as a heading at the top of its
            page (bookmarks: the page is the authors' word); off: insert it only just before
            the first of its descendants (the entries after it, deeper than it) placed on a
            line, else report it as unplaced.
        page_slack: Pages before or after an entry's page where its line may also lie (0 for
            bookmarks; a printed contents' folio may be one page off where a section starts).
        line_titles: A heading written on the line it matched takes the line's text, not the
            entry's title (printed contents: the body's "Item 7. MANAGEMENT'S DISCUSSION ..."
            keeps the label that the contents' "7 Management's Discussion" drops; bookmarks
            keep the authors' title).

    Returns:
        The new lines and what was placed, inserted or left.
    """
    if not outline.entries:
        return Placement(list(lines))
    # entries in page order (stable): bookmarks listed out of order still land on their pages
    entries = tuple(sorted(outline.entries, key=lambda e: e.page))
    skip = frozenset(m - 1 for m in marker_lines) | frozenset(n - 1 for n in outline.read_from)
    found = _CandidateLines(lines, line_pages, skip)
    keys = found.keys
    slot_of = align_monotone(len(entries), len(lines), lambda k: found.matches(entries[k], page_slack))
    anchor = _anchors(entries, slot_of)
    replace: dict[int, str] = {}
    before: dict[int, list[str]] = {}  # 0-based line -> heading lines inserted before it
    first_of_page: dict[int, int] = {}
    for i, p in enumerate(line_pages):
        if i not in skip:
            first_of_page.setdefault(p, i)
    placed = inserted = 0
    unplaced: list[OutlineEntry] = []
    last_line = -1  # the line of the last entry placed
    floor = 0  # an inserted entry goes after the line of the entry before it
    for k, e in enumerate(entries):
        heading = f"{'#' * min(max(e.level, 1), 6)} {e.title} {OUTLINE_ATTRIBUTE}"
        j = slot_of[k]
        if j >= 0:
            placed += 1
            extra = len(keys[j]) - len(match_key(e.title))
            if extra > OUTLINE_LINE_MAX_EXTRA_WORDS:
                before.setdefault(j, []).append(heading)
            else:
                # the line's own text, unless it runs on into the next entry ("PART I ITEM 1.")
                own = _numbered_text(lines[j]) if line_titles and extra <= 1 else ""
                replace[j] = f"{'#' * min(max(e.level, 1), 6)} {own} {OUTLINE_ATTRIBUTE}" if own else heading
            floor = j + 1
            last_line = j
            continue
        words = match_key(e.title)
        merged = last_line >= 0 and len(words) >= 2 and contains_words(words, keys.get(last_line, ()), start=1)
        if merged:  # "PART I ITEM 1. BUSINESS": this entry shares the line of the one before
            before.setdefault(last_line + 1, []).append(heading)
            inserted += 1
            continue
        if not insert_missing:
            if anchor[k] >= 0:
                before.setdefault(anchor[k], []).append(heading)
                inserted += 1
                continue
            unplaced.append(e)
            continue
        at = max(first_of_page.get(e.page, len(lines)), floor)
        nxt = next((slot_of[m] for m in range(k + 1, len(entries)) if slot_of[m] >= 0), len(lines))
        at = min(at, nxt)
        before.setdefault(at, []).append(heading)
        inserted += 1
        floor = at
    out = _joined(lines, before, replace)
    logger.debug("%s: %d entries on their lines, %d inserted, %d unplaced", outline.source, placed, inserted,
                 len(unplaced))
    return Placement(out, placed, inserted, tuple(unplaced))


class _CandidateLines:
    """The lines of converted text where an outline entry may stand, by page, with match keys.

    Args:
        lines: The converted text's lines.
        line_pages: 1-based page of each line.
        skip: 0-based lines that are never an entry's line (page markers, a printed contents).
    """

    def __init__(self, lines: Sequence[str], line_pages: Sequence[int], skip: frozenset[int]) -> None:
        self.lines = lines
        cands = _candidates(lines, skip)
        self.by_page: dict[int, list[int]] = {}
        for i in cands:
            self.by_page.setdefault(line_pages[i], []).append(i)
        self.texts = {i: _line_text(lines[i]) for i in cands}
        self.keys = {i: match_key(t) for i, t in self.texts.items()}
        # lines that open with a list number ("- 2. Debt"), kept with it: the number may be a note's
        self.numbered = {i: t for i in cands if (t := _numbered_text(lines[i])) != self.texts[i]}

    def fits(self, e_title: str, i: int) -> bool:
        """Tell whether line ``i`` (0-based) may be the heading of an entry titled ``e_title``."""
        text = self.texts[i]
        if ends_in_folio(text) and not ends_in_folio(e_title):
            return False  # a line of a table of contents: the title, then its page number
        if _CONTINUED.search(text) and not _CONTINUED.search(e_title):
            return False  # "2. Restructuring (Continued)": the section started a page before
        if not title_match(e_title, text) and not (i in self.numbered and title_match(e_title, self.numbered[i])):
            return False
        # a line whose words barely overlap the title's is a sentence that mentions it
        tk, lk = match_key(e_title), self.keys[i]
        return len(lk) <= len(tk) + 12 or lk[: len(tk)] == tk

    def strong(self, e_title: str, i: int) -> bool:
        """Tell whether the line is the title (a few words more at most) or a heading already."""
        extra = len(self.keys[i]) - len(match_key(e_title))
        return self.lines[i].lstrip().startswith("#") or extra <= OUTLINE_LINE_MAX_EXTRA_WORDS

    def matches(self, e: OutlineEntry, page_slack: int) -> list[int]:
        """Lines (0-based) an entry may stand on, within ``page_slack`` pages of its page."""
        found = [i for p in range(e.page - page_slack, e.page + page_slack + 1)
                 for i in self.by_page.get(p, []) if self.fits(e.title, i)]
        # a line that is the title beats one that runs on ("Item 8 of this Annual Report ...")
        best = [i for i in found if self.strong(e.title, i)]
        return best or found


def _anchors(entries: Sequence[OutlineEntry], slot_of: Sequence[int]) -> list[int]:
    """Where each entry may go when unplaced: the line of the first of its own that has one.

    An entry left unplaced goes just before the line of the first entry of its own that has
    one (the entries after it, deeper than it): the section holds its children, whatever the
    page printed beside it ("Item 2. Management's Discussion", printed only in a 10-Q's
    contents, before the first of its sections found in the text). -1: none.
    """
    anchor = list(slot_of)
    for k in range(len(entries)):
        m = k + 1
        while anchor[k] < 0 and m < len(entries) and entries[m].level > entries[k].level:
            anchor[k] = slot_of[m]
            m += 1
    return anchor


def _joined(lines: Sequence[str], before: dict[int, list[str]], replace: dict[int, str]) -> list[str]:
    """Return the lines with headings inserted before (``before``) and written over (``replace``) lines."""
    out: list[str] = []
    for i in range(len(lines) + 1):
        for h in before.get(i, []):
            out.extend(("", h, ""))
        if i < len(lines):
            out.append(replace.get(i, lines[i]))
            if i in replace and i + 1 < len(lines) and lines[i + 1].strip():
                out.append("")  # the heading ends here; the next line is text of its own
    return out

r"""The printed table of contents of a converted PDF, read as an outline. No LLM.

Filings and reports print their contents: entries that end in a page number (``Item 7.
Management's Discussion and Analysis ... 29``, ``Chapter 2 Markets 45``). PageIndex reads them
with an LLM; here they are read by rule:

1. **Contents lines** (:func:`contents_entries`): a line (a paragraph, a list item, a table row
   with its cells joined) whose text ends in a page number of at most three digits after a
   title with letters; dot leaders are dropped. A line holding several ``title page`` pairs
   (``ITEM 1. Business 1 General 1 Products 2``) gives one entry per pair. ``PART II`` lines
   without a number join the block, taking the page of the entry after them.
2. **Contents blocks**: runs of such lines on one page or on consecutive pages, at least
   :data:`CONTENTS_MIN_ENTRIES` of them, whose page numbers never go back (a table of figures
   is no contents: its numbers jump about or carry separators).
3. **Printed page -> PDF page** (:func:`contents_outline`): printed folios are offset from PDF
   pages (a cover and the contents pages come first). Each entry votes for the offsets at
   which a body line of the right title (:func:`proxypointer.outline.title_match`) lies on
   PDF page = printed page + offset; the offset most entries agree on is the block's.
4. **Levels**: from the entries' labels, as a filing's headings are re-levelled
   (:func:`proxypointer._converter.relevel_filing`: parts 1, items 2, ...); a block without
   labels takes the depth of its numbering (``2.3`` -> 2), else 1.

The outline is then written into the text like bookmarks
(:func:`proxypointer.outlinetext.apply_outline`), except that an entry matching no line near
its page is reported, never inserted: a printed page number is a weaker witness than a bookmark.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ._converter import relevel_filing
from ._markdown import Heading
from .outline import Outline, OutlineEntry, match_key, title_match
from .titles import filing_label, numbering_depth

__all__ = [
    "CONTENTS_MIN_ENTRIES",
    "CONTENTS_MIN_VOTES",
    "ContentsEntry",
    "contents_entries",
    "contents_outline",
]

logger = logging.getLogger(__name__)

#: Fewest contents lines for a run of them to count as a table of contents. A 10-K's contents
#: hold 20-30 entries; a report's chapters at least a handful.
CONTENTS_MIN_ENTRIES = 5
#: Fewest entries that must agree on one printed-to-PDF page offset before a block is used:
#: below that the block may be a list of figures that happens to end in numbers.
CONTENTS_MIN_VOTES = 3

#: Longest line read as a contents line (characters): longer ones are paragraphs.
CONTENTS_MAX_LINE = 400
# A folio: 1-3 digits, maybe after dot leaders ("..... 45").
_FOLIO_TOKEN = re.compile(r"^(?:\.{2,}|…+)?(\d{1,3})$")
_LEADERS = re.compile(r"\s*(?:\.{2,}|…+)\s*$")
_PART_ITEM = re.compile(r"^(part\s+[ivx]{1,4})[\s.:,–—-]+(item\s+\d.*)$", re.IGNORECASE)
_PART_ONLY = re.compile(r"^part\s+[ivx]{1,4}\b.{0,60}$", re.IGNORECASE)
_LEAD = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|>\s*)?")
_LABEL_WORDS = frozenset({"part", "item", "note", "chapter", "section", "article", "schedule", "exhibit", "annex",
                          "appendix", "page", "pages", "form", "rule", "level", "tier", "phase", "step", "table",
                          "figure"})
_FIGURES = re.compile(r"\d[\d,]*\.\d|\d,\d{3}|[$%]")


@dataclass(frozen=True, slots=True)
class ContentsEntry:
    """One entry read from a printed table of contents.

    Attributes:
        title: The entry's title as printed, without its page number and dot leaders.
        printed: The page number printed beside it (0 for a ``PART II`` line without one).
        line: 1-based line of the contents where it stands.
        pdf_page: The PDF page (1-based) that line is on.
    """

    title: str
    printed: int
    line: int
    pdf_page: int


def _clean(line: str) -> str:
    text = _LEAD.sub("", line).strip()
    if text.startswith("|"):
        text = " ".join(c.strip() for c in text.strip("|").split("|") if c.strip())
    return text.replace("**", "").replace("__", "").strip()


def _pairs(text: str) -> list[tuple[str, int]]:
    """``(title, printed page)`` pairs of a contents line; [] when it is no contents line."""
    if len(text) > CONTENTS_MAX_LINE or not text[-1:].isdigit() or _FIGURES.search(text):
        return []  # a paragraph, no folio at the end, or amounts: a table row, not a contents line
    out: list[tuple[str, int]] = []
    words: list[str] = []
    for token in text.split():
        m = _FOLIO_TOKEN.match(token)
        if m and words:
            title = _LEADERS.sub("", " ".join(words)).strip(" .:-–—")
            if not any(c.isalpha() for c in title) or title.split()[-1].casefold() in _LABEL_WORDS:
                words.append(token)  # "Item 7", "Note 14": a label's number, not a folio
                continue
            merged = _PART_ITEM.match(title)
            if merged:  # "PART I Item 1. Business 3": two entries on one page
                out.append((merged.group(1), int(m.group(1))))
                title = merged.group(2)
            out.append((title, int(m.group(1))))
            words = []
        else:
            words.append(token)
    return [] if words else out


def contents_entries(lines: Sequence[str], line_pages: Sequence[int],
                     skip: frozenset[int] = frozenset()) -> list[list[ContentsEntry]]:
    """Find the blocks of a text that read like a printed table of contents (module docstring).

    Args:
        lines: The converted text's lines.
        line_pages: 1-based PDF page of each line (``line_pages[i]`` for line ``i + 1``).
        skip: 0-based lines to pass over (page markers).

    Returns:
        The blocks in text order, each a list of entries in order.
    """
    blocks: list[list[ContentsEntry]] = []
    run: list[ContentsEntry] = []
    pending: list[ContentsEntry] = []  # PART lines waiting for the next entry's page
    last_page = 0

    def close() -> None:
        nonlocal run, pending
        if sum(1 for e in run if e.printed) >= CONTENTS_MIN_ENTRIES:
            blocks.append(run)
        run, pending = [], []

    for i, line in enumerate(lines):
        if i in skip or not line.strip():
            continue
        text = _clean(line)
        pairs = _pairs(text) if text else []
        if not pairs:
            if _PART_ONLY.match(text) and (not pending or pending[-1].pdf_page == line_pages[i]):
                pending.append(ContentsEntry(text, 0, i + 1, line_pages[i]))
                continue
            pending = [] if not run else pending
            if run and line_pages[i] > last_page + 1:
                close()
            continue
        if run and (line_pages[i] > last_page + 1 or pairs[0][1] < run[-1].printed):
            held, pending = pending, []
            close()
            pending = held
        for e in pending:
            run.append(ContentsEntry(e.title, pairs[0][1], e.line, e.pdf_page))
        pending = []
        run.extend(ContentsEntry(t, p, i + 1, line_pages[i]) for t, p in pairs)
        last_page = line_pages[i]
    close()
    return blocks


def _levels(titles: list[str], item_level: int) -> list[int]:
    """Levels of one block's entries; ``item_level``: the items' level in an earlier block (0: none)."""
    heads = [Heading(n + 1, n + 1, 1, t, 1, "contents") for n, t in enumerate(titles)]
    labels = [filing_label(t) for t in titles]
    if sum(1 for lab in labels if lab and lab[0] in ("part", "item")) >= 2:
        return [h.level for h in relevel_filing(heads)]
    if item_level and any(lab and lab[0] in ("note", "notes", "statements") for lab in labels):
        # an index of the statements and notes, printed inside Item 8: statements and the notes
        # heading one below an item, each note one below the notes heading
        return [item_level + (2 if lab and lab[0] in ("note", "numbered") else 1) for lab in labels]
    return [min(max(numbering_depth(t), 1), 6) for t in titles]


def contents_outline(lines: Sequence[str], line_pages: Sequence[int],
                     skip: frozenset[int] = frozenset()) -> Outline:
    """Read the printed table(s) of contents of a converted PDF as an outline with PDF pages.

    Args:
        lines: The converted text's lines.
        line_pages: 1-based PDF page of each line.
        skip: 0-based lines to pass over (page markers).

    Returns:
        The entries of every block whose page offset :data:`CONTENTS_MIN_VOTES` entries agree
        on, in text order, pages = printed + offset; empty when there is none.
    """
    blocks = contents_entries(lines, line_pages, skip)
    if not blocks:
        return Outline((), "printed contents")
    contents_lines = {e.line - 1 for b in blocks for e in b}
    by_key: dict[str, list[int]] = {}  # first word of a body line -> its 0-based lines
    for i, line in enumerate(lines):
        if i in skip or i in contents_lines or not line.strip():
            continue
        k = match_key(_clean(line))
        if k:
            by_key.setdefault(k[0], []).append(i)
    entries: list[OutlineEntry] = []
    item_level = 0
    for block in blocks:
        votes: Counter[int] = Counter()
        for e in block:
            k = match_key(e.title)
            offsets = {line_pages[i] - e.printed for i in by_key.get(k[0], [])
                       if line_pages[i] > e.pdf_page and title_match(e.title, _clean(lines[i]))}
            votes.update(offsets)
        if not votes:
            continue
        offset, n = votes.most_common(1)[0]
        if n < CONTENTS_MIN_VOTES:
            logger.debug("contents at line %d: no page offset agreed (best %+d by %d)", block[0].line, offset, n)
            continue
        levels = _levels([e.title for e in block], item_level)
        item_level = next((lv for e, lv in zip(block, levels, strict=True)
                           if (lab := filing_label(e.title)) and lab[0] == "item"), item_level)
        parents: list[int] = []
        for e, level in zip(block, levels, strict=True):
            while parents and entries[parents[-1]].level >= level:
                parents.pop()
            entries.append(OutlineEntry(e.title, e.printed + offset, level, parents[-1] if parents else -1))
            parents.append(len(entries) - 1)
        logger.debug("contents at line %d: %d entries, PDF page = printed %+d", block[0].line, len(block), offset)
    return Outline(tuple(entries), "printed contents", frozenset(e.line for b in blocks for e in b))

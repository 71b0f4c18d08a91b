r"""The printed table of contents of a converted PDF, read as an outline. No LLM.

Filings and reports print their contents: entries that end in a page number (``Item 7.
Management's Discussion and Analysis ... 29``, ``Chapter 2 Markets 45``). PageIndex reads them
with an LLM; here they are read by rule:

1. **Contents lines and blocks** (:func:`proxypointer.tree.contentslines.contents_entries`):
   entries ``title page`` read from paragraphs, list items and table rows, several to a line
   or one wrapped over two; ``PART II`` and item lines without a page; runs of at least
   :data:`CONTENTS_MIN_ENTRIES` entries of different titles whose page numbers never go back
   (a table of figures is no contents: its numbers jump about or carry separators).
2. **Parts** start where their first entry starts: a 10-Q that prints Item 2 (MD&A, page 3)
   before Item 1 (the statements, page 79) in its contents still begins Part I on page 3.
3. **Printed page -> PDF page** (:func:`contents_outline`): printed folios are offset from PDF
   pages (a cover and the contents pages come first). Each entry votes for the offsets at
   which a body line of the right title (:func:`proxypointer.tree.outline.title_match`) lies on
   PDF page = printed page + offset; the offset most entries agree on is the block's.
4. **Levels**: from the entries' labels, as a filing's headings are re-levelled
   (:func:`proxypointer.tree.headings.relevel_filing`: parts 1, items 2, ...); an index of the
   statements and notes (Item 8's) one and two below the items (items at 2 when no block
   gave them); a block without labels takes the depth of its numbering (``2.3`` -> 2), else 1.
5. **Indentation** (when the caller can read where printed lines start,
   :func:`proxypointer.tree.indents.pdf_line_starts`): in a run of entries at one level (no
   part or item among them) that the page prints at two or three indents, the first entry
   least indented, each entry goes one level down per indent step (``Firmwide Risk Management``
   with ``Capital Risk Management`` indented under it).

The outline is then written into the text like bookmarks
(:func:`proxypointer.tree.outlinetext.apply_outline`), except that an entry matching no line near
its page is never inserted on its page: a printed page number is a weaker witness than a
bookmark. It is written just before the first of its own entries that matches a line (the
section holds them), or else reported.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from .contentslines import CONTENTS_MIN_ENTRIES, ContentsEntry, clean_line, contents_entries
from .headings import relevel_filing
from .indents import PrintedLine
from .markdown import Heading
from .outline import Outline, OutlineEntry, match_key, title_match
from .titles import filing_label, numbering_depth

__all__ = [
    "CONTENTS_MIN_ENTRIES",
    "CONTENTS_MIN_VOTES",
    "INDENT_STEP_MAX",
    "INDENT_TOLERANCE",
    "ContentsEntry",
    "LineStarts",
    "contents_entries",
    "contents_outline",
]

logger = logging.getLogger(__name__)

#: Fewest entries that must agree on one printed-to-PDF page offset before a block is used:
#: below that the block may be a list of figures that happens to end in numbers.
CONTENTS_MIN_VOTES = 3
#: Starts of printed lines within this many points (1/72 inch) are one indent: a contents
#: page's indents step by a few ems (>= ~6 pt at 8-10 pt type), and one indent's starts differ
#: by a fraction of a point where a line begins with a different glyph.
INDENT_TOLERANCE = 2.0
#: Most indent steps read below one level: a contents page nests two or three deep; a run
#: with more distinct starts is centred or ragged text, not indentation.
INDENT_STEP_MAX = 2
#: Reads where the printed lines of some 1-based PDF pages start: ``pages -> {page: lines}``
#: (:func:`proxypointer.tree.indents.pdf_line_starts` bound to one PDF).
LineStarts = Callable[[Iterable[int]], Mapping[int, Sequence[PrintedLine]]]
_ALNUM = re.compile(r"[^0-9a-z]+")
#: Characters of an entry's title (letters and digits) that must open its printed line.
_KEY_CHARS = 16
# Label words a body heading may open with where the contents print only the number.
_INDEX_LABELS = frozenset({"item", "part", "note", "chapter", "section", "article"})


def _levels(titles: list[str], item_level: int) -> list[int]:
    """Levels of one block's entries; ``item_level``: the items' level in an earlier block (0: none)."""
    heads = [Heading(n + 1, n + 1, 1, t, 1, "contents") for n, t in enumerate(titles)]
    labels = [filing_label(t) for t in titles]
    if sum(1 for lab in labels if lab and lab[0] in ("part", "item")) >= 2:
        return [h.level for h in relevel_filing(heads)]
    if any(lab and lab[0] in ("note", "notes", "statements") for lab in labels):
        # an index of the statements and notes, printed inside Item 8 (or after the last Item):
        # statements and the notes heading one below an item, each note one below the notes
        # heading; items at level 2 (under parts) when no contents block gave them
        item_level = item_level or 2
        return [item_level + (2 if lab and lab[0] in ("note", "numbered") else 1) for lab in labels]
    return [min(max(numbering_depth(t), 1), 6) for t in titles]


def _indents(block: Sequence[ContentsEntry], starts: Mapping[int, Sequence[PrintedLine]]) -> list[float | None]:
    """Where each entry's printed line starts (points), None where no line opens with its title.

    Entries are looked for in order, each after the line the entry before it was found on (per
    contents page), so a title printed twice on a page is matched where the contents put it.
    """
    found: list[float | None] = []
    cursor: dict[int, int] = {}
    for e in block:
        key = _ALNUM.sub("", e.title.lower())[:_KEY_CHARS]
        page_lines = starts.get(e.pdf_page, ())
        x = None
        if len(key) >= 3:
            for j in range(cursor.get(e.pdf_page, 0), len(page_lines)):
                if _ALNUM.sub("", page_lines[j].text.lower()).startswith(key):
                    x, cursor[e.pdf_page] = page_lines[j].x, j + 1
                    break
        found.append(x)
    return found


def _indent_levels(block: Sequence[ContentsEntry], levels: list[int], xs: Sequence[float | None]) -> list[int]:
    """``levels`` with each run of same-level entries (no part or item) nested by its indents.

    A run is read only when every entry's start is known, its starts fall in 2 to
    ``INDENT_STEP_MAX + 1`` indents (:data:`INDENT_TOLERANCE` apart) and its first entry is
    the least indented; each entry goes one level down per indent step, to level 6 at most.
    """
    out = list(levels)
    k = 0
    while k < len(block):
        j = k
        while j < len(block) and levels[j] == levels[k] and not _part_or_item(block[j].title):
            j += 1
        run = xs[k:j]
        if j - k >= 2 and all(x is not None for x in run):
            steps: list[float] = []  # the least start of each indent
            for x in sorted(run):
                if not steps or x - steps[-1] > INDENT_TOLERANCE:
                    steps.append(x)
            if 2 <= len(steps) <= INDENT_STEP_MAX + 1 and run[0] - steps[0] <= INDENT_TOLERANCE:
                for n in range(k, j):
                    depth = max(s for s, first in enumerate(steps) if xs[n] >= first - INDENT_TOLERANCE / 2)
                    out[n] = min(levels[n] + depth, 6)
        k = max(j, k + 1)
    return out


def _part_or_item(title: str) -> bool:
    lab = filing_label(title)
    return bool(lab) and lab[0] in ("part", "item")


def contents_outline(lines: Sequence[str], line_pages: Sequence[int],
                     skip: frozenset[int] = frozenset(), line_starts: LineStarts | None = None) -> Outline:
    """Read the printed table(s) of contents of a converted PDF as an outline with PDF pages.

    Args:
        lines: The converted text's lines.
        line_pages: 1-based PDF page of each line.
        skip: 0-based lines to pass over (page markers).
        line_starts: Reads where the printed lines of the contents pages start (a PDF's
            :func:`~proxypointer.tree.indents.pdf_line_starts`); None: levels from labels and
            numbering only.

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
        k = match_key(clean_line(line))
        if k:
            by_key.setdefault(k[0], []).append(i)
            if len(k) > 1 and k[0] in _INDEX_LABELS:  # "Item 7. MD&A" is found by "7 MD&A" too
                by_key.setdefault(k[1], []).append(i)
    entries: list[OutlineEntry] = []
    used: set[int] = set()  # lines of the blocks used
    group = group_page = 0  # first entry and last PDF page of the contents pages read so far
    item_level = 0
    for block in blocks:
        votes: Counter[int] = Counter()
        for e in block:
            k = match_key(e.title)
            offsets = {line_pages[i] - e.printed for i in by_key.get(k[0], [])
                       if line_pages[i] > e.pdf_page and title_match(e.title, clean_line(lines[i]))}
            votes.update(offsets)
        if not votes:
            continue
        offset, n = votes.most_common(1)[0]
        if n < CONTENTS_MIN_VOTES:
            logger.debug("contents at line %d: no page offset agreed (best %+d by %d)", block[0].line, offset, n)
            continue
        used.update(e.line for e in block)
        levels = _levels([e.title for e in block], item_level)
        if line_starts is not None:
            starts = line_starts({e.pdf_page for e in block if e.pdf_page})
            levels = _indent_levels(block, levels, _indents(block, starts))
        item_level = next((lv for e, lv in zip(block, levels, strict=True)
                           if (lab := filing_label(e.title)) and lab[0] == "item"), item_level)
        parents: list[int] = []
        if not group_page or block[0].pdf_page > group_page + 1:
            group = len(entries)  # a contents block on a later page: parts do not run into it
        group_page = block[-1].pdf_page
        for e, level in zip(block, levels, strict=True):
            while parents and entries[parents[-1]].level >= level:
                parents.pop()
            entries.append(OutlineEntry(e.title, e.printed + offset, level, parents[-1] if parents else -1))
            parents.append(len(entries) - 1)
        entries[group:] = _parts_start_early(entries[group:])
        logger.debug("contents at line %d: %d entries, PDF page = printed %+d", block[0].line, len(block), offset)
    return Outline(tuple(entries), "printed contents", frozenset(used))


def _parts_start_early(entries: list[OutlineEntry]) -> list[OutlineEntry]:
    """Move each part to the page of its earliest entry (its entries: up to the next part).

    ``entries``: those of the contents blocks on one run of pages (a 10-Q's contents page may
    hold several blocks); an index printed later inside Item 8 is another run.
    """
    out = list(entries)
    parts = [k for k, e in enumerate(out) if (lab := filing_label(e.title)) and lab[0] == "part"]
    for n, k in enumerate(parts):
        end = parts[n + 1] if n + 1 < len(parts) else len(out)
        first = min((e.page for e in out[k + 1:end]), default=out[k].page)
        if first < out[k].page:
            out[k] = OutlineEntry(out[k].title, first, out[k].level, out[k].parent)
    return out

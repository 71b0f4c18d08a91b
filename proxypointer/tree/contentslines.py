r"""Lines of a printed table of contents in converted text: its entries and the lines it spans.

Filings and reports print their contents: entries that end in a page number (``Item 7.
Management's Discussion and Analysis ... 29``, ``Chapter 2 Markets 45``). A converter writes
them as paragraphs, list items or table rows, often several entries run together on one line
and an entry wrapped over two (``... for the three months ended March 31, 2021`` / ``and 2020 80
Consolidated balance sheets ...``). The rules, no LLM:

1. **Contents lines** (:func:`contents_entries`): a line (a paragraph, a list item, a table row
   with its cells joined) read as ``title page`` pairs: a page number of at most three digits
   after a title with letters; dot leaders are dropped. A line holding several pairs
   (``ITEM 1. Business 1 General 1 Products 2``) gives one entry per pair. Words after the
   last page number of a contents line start the next line's first entry (a wrapped entry);
   more than :data:`CONTENTS_MAX_REST` of them make the line a paragraph.
   A title longer than :data:`CONTENTS_MAX_TITLE` characters, one opening in lower case, one
   holding amounts (beside its own numbering, ``Section 2.05``) or two numbers in a row is a
   sentence or a table row: the line is no contents line.
2. **Labels without a page**: a ``PART II`` line, or an ``Item 1. Financial Statements`` line
   whose page is printed with its first sub-entry, joins the block and takes the page of the
   entry after it. An entry whose title runs a part into an item (``Part II – Other
   information Item 1. Legal Proceedings``), or an item's title into its first sub-entry
   (``Item 2. Management's Discussion ... of Operations. Consolidated Financial Highlights``),
   gives one entry each.
3. **Contents blocks**: runs of such lines whose page numbers never go back, with at least
   :data:`CONTENTS_MIN_ENTRIES` entries of different titles printed with a page number (a running footer, ``2021 FORM
   10-K 60`` on every page, repeats one title). A run ends at a page gap of more than one page
   (when pages are known; else after :data:`CONTENTS_MAX_GAP` other lines in a row) or at a
   paragraph longer than :data:`CONTENTS_MAX_LINE` characters.

:mod:`proxypointer.tree.contents` turns the blocks into an outline with PDF pages;
:func:`contents_region` gives the lines they span, which the converter rules never make
headings (:mod:`proxypointer.tree.headings`). This module imports nothing heavy and nothing of
the tree's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .titles import plain_title, strip_attribute_list

__all__ = [
    "CONTENTS_MAX_GAP",
    "CONTENTS_MAX_LINE",
    "CONTENTS_MAX_REST",
    "CONTENTS_MAX_TITLE",
    "CONTENTS_MIN_ENTRIES",
    "ContentsEntry",
    "clean_line",
    "contents_entries",
    "contents_region",
]

#: Fewest entries of different titles for a run of contents lines to count as a table of
#: contents. A 10-K's contents hold 20-30 entries; a report's chapters at least a handful.
CONTENTS_MIN_ENTRIES = 5
#: Longest entry title (characters). The longest Form 10-K item title (Item 5, "Market for
#: Registrant's Common Equity, ... Purchases of Equity Securities") has 114; a longer title
#: is a sentence of a paragraph that happens to hold a small number.
CONTENTS_MAX_TITLE = 200
#: A line without entries longer than this (characters) is a paragraph: a contents block
#: does not run across it.
CONTENTS_MAX_LINE = 400
#: Most words after the last page number of a contents line (the start of an entry wrapped
#: onto the next line); more, and the line is a paragraph that holds a number.
CONTENTS_MAX_REST = 25
#: Most non-blank lines without entries in a row inside one block (a ``PART II`` line, a
#: ``Page`` column header, a short note under the contents).
CONTENTS_MAX_GAP = 4

# A folio: 1-3 digits, maybe after dot leaders ("..... 45").
_FOLIO_TOKEN = re.compile(r"^(?:\.{2,}|…+)?(\d{1,3})$")
_LEADERS = re.compile(r"\s*(?:\.{2,}|…+)\s*$")
_PART_THEN_ITEM = re.compile(r"^(part\s+[ivx]{1,4}\b.{0,80}?)[\s.:,;–—-]+(item\s+\d{1,2}[a-c]?\b.*)$", re.IGNORECASE)
_PART_ONLY = re.compile(r"^part\s+[ivx]{1,4}\b.{0,60}$", re.IGNORECASE)
# An item's label and title, then ". " and a capital: the next entry run into it.
_ITEM_THEN_MORE = re.compile(r"^(item\s+\d{1,2}[a-c]?\b.*?[a-z]{3}[.:])\s+(?=[A-Z])(.+)$", re.IGNORECASE)
_NOTES_THEN_NOTE = re.compile(
    r"^(notes\s+to\s+.{0,60}?statements(?:\s*\([a-z]+\))?)\s+((?:note\s+)?1[.:]?\s+[A-Z].*)$", re.IGNORECASE)
_ITEM_LINE = re.compile(r"^item\s+\d{1,2}[a-c]?[.:]?\s+[A-Z\"'“‘(]", re.IGNORECASE)
_PAGE_HEADER = re.compile(r"\s+pages?$", re.IGNORECASE)
_ABBREVIATIONS = frozenset({"inc", "corp", "ltd", "plc", "llc", "co", "no", "nos", "vs", "etc"})
_LEAD = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|>\s*)?")
_LABEL_WORDS = frozenset({"part", "item", "note", "chapter", "section", "article", "schedule", "exhibit", "annex",
                          "appendix", "page", "pages", "form", "rule", "level", "tier", "phase", "step", "table",
                          "figure"})
_FIGURES = re.compile(r"\d[\d,]*\.\d|\d,\d{3}|[$%]")
# A title's own numbering ("Section 2.05", "3.1.2"), which is no amount.
_NUMBERING = re.compile(r"^(?:[A-Za-z]+\s+)?\d+(?:\.\d+)*\.?(?=\s)")
_KEY = re.compile(r"[^0-9a-z]+")
# Two numbers in a row inside a title: the cells of a table row, not a title.
_NOT_A_TITLE = re.compile(r"(?:^|\s)\(?\d+\)?\s+\(?\d+\)?(?:\s|$)")


def _first_letter_lower(title: str) -> bool:
    """Tell whether a title's first letter is lower case: a sentence's tail, not a title."""
    first = next((c for c in title if c.isalpha()), "")
    return first.islower()


@dataclass(frozen=True, slots=True)
class ContentsEntry:
    """One entry read from a printed table of contents.

    Attributes:
        title: The entry's title as printed, without its page number and dot leaders.
        printed: The page number printed beside it (for a ``PART II`` or item line without
            one, the page of the entry after it).
        line: 1-based line of the contents where it stands.
        pdf_page: The PDF page (1-based) that line is on; 0 when pages are not known.
    """

    title: str
    printed: int
    line: int
    pdf_page: int


def clean_line(line: str) -> str:
    """Give a line's text without marks, emphasis, table pipes (cells joined) or an attribute list."""
    text = strip_attribute_list(_LEAD.sub("", line).strip())
    if text.startswith("|"):
        text = " ".join(c.strip() for c in text.strip("|").split("|") if c.strip())
    return text.replace("**", "").replace("__", "").strip()


def _split_title(title: str) -> list[str]:
    """Split a title that runs several entries together.

    A part and an item, an item and its first sub-entry, the heading of the notes and the
    first note.
    """
    m = _PART_THEN_ITEM.match(title)
    if m:
        return [m.group(1).strip(" .:,;–—-"), *_split_title(m.group(2))]
    m = _NOTES_THEN_NOTE.match(title)
    if m:
        return [m.group(1).strip(), m.group(2).strip()]
    m = _ITEM_THEN_MORE.match(title)
    if m and m.group(1).rstrip(".:").split()[-1].casefold() not in _ABBREVIATIONS:
        return [m.group(1).rstrip(".:").strip(), m.group(2).strip()]
    return [title]


def _pairs(text: str) -> tuple[list[tuple[str, int]], list[str]]:
    """``(title, printed page)`` pairs of a contents line, and the words after the last page number.

    ``([], [])`` when it is no contents line: amounts (a table row) or a title too long.
    """
    if not text:
        return [], []
    out: list[tuple[str, int]] = []
    words: list[str] = []
    for token in text.split():
        m = _FOLIO_TOKEN.match(token)
        if m and words:
            title = _LEADERS.sub("", " ".join(words)).strip(" .:-–—")
            if not any(c.isalpha() for c in title) or title.split()[-1].casefold() in _LABEL_WORDS:
                words.append(token)  # "Item 7", "Note 14": a label's number, not a folio
                continue
            if (len(title) > CONTENTS_MAX_TITLE or _FIGURES.search(_NUMBERING.sub("", title))
                    or _NOT_A_TITLE.search(title) or _first_letter_lower(title)):
                return [], []  # a sentence, or a table row: "62 56 Interest on lease liabilities 68"
            out.extend((t, int(m.group(1))) for t in _split_title(title))
            words = []
        else:
            words.append(token)
    return out, words


def _label_line(text: str) -> list[str]:
    """Titles of a line that is a part or an item without a page number, [] for any other line."""
    text = _PAGE_HEADER.sub("", text.strip())  # "Part I – Financial information Page": a column header
    if _PART_ONLY.match(text) or (_ITEM_LINE.match(text) and len(text.split()) <= 30):
        return [t.strip(" .:") for t in _split_title(text)]
    return []


def _distinct(run: Sequence[ContentsEntry]) -> int:
    return len({_KEY.sub(" ", plain_title(e.title).casefold()).strip() for e in run})


def contents_entries(lines: Sequence[str], line_pages: Sequence[int] | None = None,
                     skip: frozenset[int] = frozenset()) -> list[list[ContentsEntry]]:
    """Find the blocks of a text that read like a printed table of contents (module docstring).

    Args:
        lines: The converted text's lines.
        line_pages: 1-based PDF page of each line (``line_pages[i]`` for line ``i + 1``); None
            when pages are not known (stored text): runs then end only at a paragraph or a gap
            of other lines.
        skip: 0-based lines to pass over (page markers).

    Returns:
        The blocks in text order, each a list of entries in order.
    """
    blocks: list[list[ContentsEntry]] = []
    run: list[ContentsEntry] = []
    pending: list[ContentsEntry] = []  # labels without a page, waiting for the next entry's page
    carry: list[str] = []  # words after the last page number of the line before
    own: list[ContentsEntry] = []  # entries of the run with a page number of their own
    last_page = 0
    gap = 0

    def page(i: int) -> int:
        return line_pages[i] if line_pages is not None else 0

    def close() -> None:
        nonlocal run, pending, carry, own
        if _distinct(own) >= CONTENTS_MIN_ENTRIES:
            blocks.append(run)
        run, pending, carry, own = [], [], [], []

    for i, line in enumerate(lines):
        if i in skip or not line.strip():
            continue
        text = clean_line(line)
        pairs, rest = _pairs(" ".join([*carry, text])) if text else ([], [])
        if not pairs and carry and text:
            pairs, rest = _pairs(text)
        if pairs and rest and (len(rest) > CONTENTS_MAX_REST or (not (run or pending) and len(pairs) < 2)):
            pairs = []  # a sentence with a number in it, not a contents line
        if not pairs:
            carry = []
            labels = _label_line(text)
            if labels and (not pending or pending[-1].pdf_page == page(i)):
                pending.extend(ContentsEntry(t, 0, i + 1, page(i)) for t in labels)
                continue
            if not run:
                pending = []
                continue
            gap += 1
            far = page(i) > last_page + 1 if line_pages is not None else gap > CONTENTS_MAX_GAP
            if far or len(text) > CONTENTS_MAX_LINE:
                close()
            continue
        if run and ((line_pages is not None and page(i) > last_page + 1) or pairs[0][1] < run[-1].printed):
            held, pending = pending, []
            close()
            pending = held
        run.extend(ContentsEntry(e.title, pairs[0][1], e.line, e.pdf_page) for e in pending)
        pending = []
        found = [ContentsEntry(t, p, i + 1, page(i)) for t, p in pairs]
        run.extend(found)
        own.extend(found)
        carry = rest
        last_page = page(i)
        gap = 0
    close()
    return blocks


def contents_region(lines: Sequence[str], skip: frozenset[int] = frozenset()) -> frozenset[int]:
    """Give the lines spanned by the printed contents of a text (first to last entry of each block).

    Found without pages (:func:`contents_entries` with ``line_pages=None``), so it reads stored
    text too. The converter rules make none of these lines a heading: a contents line is a
    pointer to a section, not the section.

    Args:
        lines: The text's lines (``split_lines``).
        skip: 0-based lines to pass over (page markers, comments).

    Returns:
        0-based line indexes; empty when the text prints no contents.
    """
    out: set[int] = set()
    for block in contents_entries(lines, None, skip):
        first, last = min(e.line for e in block), max(e.line for e in block)
        out.update(range(first - 1, last))
    return frozenset(out)

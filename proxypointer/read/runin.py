"""Titles a converter ran into a paragraph, put back on lines of their own from the PDF's bold lines.

opendataloader-pdf joins a heading set in the body's size to the paragraph it opens or to the
one before it. Corning's 2022 10-K, page 2, becomes the one paragraph "PART I Corning
Incorporated and its consolidated subsidiaries ... elsewhere in this report. Item 1. Business
General", though the page sets "PART I", "Item 1. Business" and "General" in bold, each on a
line of its own. The converter's JSON keeps one font per paragraph, so the titles are read again from
the PDF: pypdf's text of a page, run by run with each run's font (:func:`page_lines`), gives
the page's lines and whether each is set in bold.

A one-line paragraph of the markdown that starts or ends with a bold line of its page loses
that title to a heading line of its own (:func:`split_run_in_titles`) when

* the title is bold throughout, 1-:data:`RUN_IN_MAX_TITLE_WORDS` words, starts with a letter or
  a digit and ends in no ``,``, ``;``, ``:`` or ``.`` (a part, item or note label may end in a
  period: "Item 1A. Risk Factors."); it holds a word of three letters, at most a third figures
  (a note's number aside), no ``$`` and no page number at its end: a bold page number ("16"),
  a date ("June 30, 2022"), a table's row ("Total intangible assets 2,160 660 1,500", "TOTAL $
  5,256 $ 4,249") and a contents line are no titles;
* the rest is prose: at least :data:`RUN_IN_MIN_BODY_WORDS` words, at most
  :data:`RUN_IN_MAX_FIGURE_SHARE` of them figures, opening with a capital letter, a digit, a
  quote or a bracket, with a sentence end (``. ? ! : ;``) in it. So a table's row ("Total net
  revenue 12,345 11,012") and a sentence whose first words are bold ("**Cash and due from
  banks** increased ...") keep their lines.

A one-line list item set apart by blank lines (a lone item, or one of a loose list; never one
of a tight list's consecutive lines) is read the same way: the converter takes a note's number
for a list marker (Netflix's "- 6. Commitments and Contingencies", "- 9. Accumulated Other
Comprehensive (Loss) Income The following table summarizes ..."), and an item that is a title
and nothing else becomes a heading. A paragraph of bold titles and nothing else is cut into
them when the first is a part, item or note label or a number (CVS's "1. Significant
Accounting Policies Description of Business"; a table's header set in bold, "Gross Carrying
Amount Accumulated Amortization", stays a paragraph). A year counts as a figure, so a sentence
full of years ("Cost of Services Cost of services increased during 2022 compared to 2021")
keeps its title (reading years as words raised tree recall and cost retrieval on dev and check;
docs/evaluation.md).

A heading line of the converter that opens with a bold title of its page and goes on with
prose, or with more titles after a label or number (Verizon's "Note 1. Description of
Business and Summary of Significant Accounting Policies Description of Business"), keeps its
``#``s and that first title; the rest is cut off the same way.

Each title is returned with the style of its bold line, so that the heading-style rule ranks
it beside the converter's own headings (:func:`proxypointer.tree.headingstyles.apply_heading_styles`).

Measured with ``scripts/tree_accuracy.py`` (docs/evaluation.md, "Tree accuracy"), recall:
paragraphs alone, dev PDFs with bookmarks stripped 0.805 -> 0.871, the dev hand gold 0.929 ->
0.936, the check split's 0.909 -> 0.918; list items, title-only paragraphs, pypdf's spaces and
the figures test then 0.877 -> 0.885, 0.936 -> 0.968 and 0.918 -> 0.957, nesting unchanged;
cutting the converter's heading lines then 0.889 -> 0.903 against the dev bookmarks (nesting
0.901 -> 0.897), the hand gold unchanged.

This module knows PDF pages (pypdf) and markdown lines; nothing of trees.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..lines import split_lines
from ..pdflog import pypdf_warnings_hidden
from ..tree.headingstyles import HeadingStyle, StyledHeading, font_style
from ..tree.markdown import parse_blocks
from ..tree.pages import MarkerStyle, page_map
from ..tree.titles import ends_in_folio

__all__ = [
    "RUN_IN_MAX_FIGURE_SHARE",
    "RUN_IN_MAX_TITLE_WORDS",
    "RUN_IN_MIN_BODY_WORDS",
    "PageLine",
    "bold_titles",
    "page_lines",
    "split_run_in_titles",
]

logger = logging.getLogger(__name__)

#: Most words of a run-in title (a part, item or note label: two more). Longer bold lines are
#: bold sentences or table captions.
RUN_IN_MAX_TITLE_WORDS = 12
#: Fewest words left in the paragraph once its title is split off: a paragraph, not a label or
#: a heading of its own.
RUN_IN_MIN_BODY_WORDS = 6
#: Largest share of figures among those words: more, and the "paragraph" is a flattened table
#: row whose bold label is no heading.
RUN_IN_MAX_FIGURE_SHARE = 0.15
#: Two runs whose baselines differ by at most this many points are on one line.
_SAME_LINE_PT = 1.0
_LABEL = re.compile(r"^(?:part|item|note)\s+[\dIVXivx]", re.IGNORECASE)
_FIGURE = re.compile(r"^\(?[-–$]?\d[\d,.]*%?\)?$")
_SENTENCE_END = re.compile(r"[a-z0-9)%”’\"'][.?!:;][”’\"']?(?:\s|$)")
_BODY_OPENS = re.compile(r"^[A-Z0-9“\"‘'(\[]")
_NUMBERED = re.compile(r"^(?:(?:part|item|note)\s+[\dIVXivx]|\d{1,2}\.\s+[A-Za-z])", re.IGNORECASE)
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+")


@dataclass(frozen=True, slots=True)
class PageLine:
    """One line of text on a PDF page, as pypdf reads it.

    Attributes:
        text: The line's text, whitespace runs as one space.
        bold: Every run of the line is set in a bold face.
        style: The style of its largest run (:func:`proxypointer.tree.headingstyles.font_style`).
    """

    text: str
    bold: bool
    style: HeadingStyle


def page_lines(page: Any) -> list[PageLine]:
    """Return the lines of one pypdf page with their type.

    Runs of text (pypdf's ``visitor_text``: text, matrices, font dictionary, size) whose
    baselines lie within :data:`_SAME_LINE_PT` of each other form a line, in pypdf's order.

    Args:
        page: A ``pypdf.PageObject``.

    Returns:
        The page's non-blank lines.
    """
    lines: list[dict[str, Any]] = []

    def visit(text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: float) -> None:
        if not text:
            return
        if not text.strip():
            if lines:
                lines[-1]["text"] += text
            return
        name = str(font.get("/BaseFont", "")) if isinstance(font, dict) else ""
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        points = abs((size or 0.0) * tm[3] * cm[3])
        if not lines or abs(y - lines[-1]["y"]) > _SAME_LINE_PT:
            lines.append({"y": y, "text": "", "runs": []})
        lines[-1]["text"] += text
        lines[-1]["runs"].append(font_style(name, points))

    page.extract_text(visitor_text=visit)
    out: list[PageLine] = []
    for line in lines:
        text = " ".join(line["text"].split())
        if text:
            runs = line["runs"]
            out.append(PageLine(text, all(s.bold for s in runs), max(runs, key=lambda s: s.size)))
    return out


def _is_title(line: PageLine) -> bool:
    words = line.text.split()
    label = bool(_LABEL.match(line.text))
    return (line.bold and line.text[:1].isalnum() and 0 < len(words) <= RUN_IN_MAX_TITLE_WORDS + 2 * label
            and not line.text.endswith((",", ";", ":")) and (label or not line.text.endswith("."))
            and _is_words(line.text))


def _is_prose(text: str) -> bool:
    words = text.split()
    figures = sum(1 for w in words if _FIGURE.match(w))
    return (len(words) >= RUN_IN_MIN_BODY_WORDS and figures <= RUN_IN_MAX_FIGURE_SHARE * len(words)
            and bool(_BODY_OPENS.match(text)) and bool(_SENTENCE_END.search(text)))


def _set_apart(lines: Sequence[str], i: int) -> bool:
    """Line ``i`` has a blank line (or the text's edge) before and after it: a loose item."""
    return (i == 0 or not lines[i - 1].strip()) and (i + 1 == len(lines) or not lines[i + 1].strip())


def _is_words(text: str) -> bool:
    """Tell a title (words) from a bold page number, date, table row or contents line."""
    words = text.split()
    figures = sum(1 for w in words[1 if _NUMBERED.match(text) else 0 :] if _FIGURE.match(w))  # "7." numbers
    return (any(sum(c.isalpha() for c in w) >= 3 for w in words) and figures * 3 <= len(words)
            and "$" not in text and not ends_in_folio(text))


_ENDS_SENTENCE = re.compile(r"[a-z0-9)%”’\"'][.?!:;][”’\"']?$")


@functools.lru_cache(maxsize=4096)
def _pattern(title: str) -> re.Pattern[str]:
    """Match ``title`` in the converter's text whatever its spaces inside words.

    pypdf places a space where a word's glyphs are positioned apart ("REPORT OF INDEPENDENT RE
    GISTERED PUBLIC ACCOUNTING FIRM", "Board of Dir ectors"); the converter writes the words
    whole. So the title's characters must come in order, with or without one space between any
    two of them.
    """
    chars = [re.escape(c) for c in title if not c.isspace()]
    return re.compile(" ?".join(chars))


def _title_end(title: str, text: str, pos: int) -> int:
    """End of ``title`` written at ``pos`` of ``text`` and followed by a space or the end; -1 if not."""
    m = _pattern(title).match(text, pos)
    if m is None or (m.end() < len(text) and text[m.end()] != " "):
        return -1
    return m.end()


def _split(text: str, titles: Sequence[PageLine]) -> list[str | PageLine]:
    """Cut one paragraph's text into prose and the titles run into it, in order.

    A title is taken where it opens the paragraph, follows the end of a sentence or another
    title, and is followed by the paragraph's end, another title or the start of a sentence
    (:data:`_BODY_OPENS`); longer titles are tried first. A title taken carries the words as the
    paragraph writes them (:func:`_pattern`). Returns ``[text]`` when no title is taken.
    """
    pieces: list[str | PageLine] = []
    pos = body_from = 0
    while pos < len(text):
        took = None
        after_title = bool(pieces) and pos == body_from and isinstance(pieces[-1], PageLine)
        if pos == 0 or after_title or _ENDS_SENTENCE.search(text, 0, pos - 1):
            for t in titles:
                end = _title_end(t.text, text, pos)
                if end < 0:
                    continue
                if end == len(text) or _BODY_OPENS.match(text[end + 1 :]) or any(
                        _title_end(u.text, text, end + 1) > 0 for u in titles):
                    took = replace(t, text=text[pos:end])
                    break
        if took is None:
            nxt = text.find(" ", pos)
            if nxt < 0:
                break
            pos = nxt + 1
            continue
        if pos > body_from:
            pieces.append(text[body_from:pos].strip())
        pieces.append(took)
        pos = body_from = min(len(text), pos + len(took.text) + 1)
    if body_from < len(text):
        pieces.append(text[body_from:].strip())
    return pieces


def _reader(pdf: str | Path) -> Any:
    """Open PDF with pypdf; None when it cannot be read (logged at DEBUG)."""
    try:
        import pypdf

        with pypdf_warnings_hidden():
            reader = pypdf.PdfReader(str(pdf), strict=False)
            if reader.is_encrypted:
                reader.decrypt("")
        return reader
    except Exception as err:  # noqa: BLE001 - pypdf's errors on damaged files vary; nothing is split
        logger.debug("%s: pypdf cannot read it (%s); no run-in titles split", pdf, err)
        return None


def _page_titles(reader: Any, page: int, pdf: str | Path) -> list[PageLine]:
    """Return the title-like bold lines of a 1-based page, longest first (none when pypdf fails on it)."""
    try:
        with pypdf_warnings_hidden():
            read = page_lines(reader.pages[page - 1]) if 0 < page <= len(reader.pages) else []
    except Exception as err:  # noqa: BLE001 - a damaged content stream: this page splits nothing
        logger.debug("%s: pypdf cannot read page %d (%s)", pdf, page, err)
        read = []
    return sorted((t for t in read if _is_title(t)), key=lambda t: -len(t.text))


def bold_titles(pdf: str | Path) -> dict[int, list[PageLine]]:
    """Read the title-like bold lines of every page of a PDF, ahead of :func:`split_run_in_titles`.

    The converter calls this in a thread while its JVM converts the same file, so that on a
    machine with a spare core the pages are read at no cost in wall-clock time.

    Args:
        pdf: The PDF.

    Returns:
        ``{page: lines}`` (1-based pages, longest line first); empty when pypdf cannot read it.
    """
    reader = _reader(pdf)
    if reader is None:
        return {}
    return {p: _page_titles(reader, p, pdf) for p in range(1, len(reader.pages) + 1)}


def split_run_in_titles(
    markdown: str,
    pdf: str | Path,
    marker_style: MarkerStyle | None = None,
    titles: Mapping[int, Sequence[PageLine]] | None = None,
) -> tuple[str, list[StyledHeading]]:
    """Give titles run into paragraphs heading lines of their own (module docstring).

    Args:
        markdown: The converter's markdown of ``pdf``, page markers included.
        pdf: The PDF it was converted from (read with pypdf, page by page as needed).
        marker_style: The page-marker style of ``markdown``; None: detected.
        titles: The PDF's title-like bold lines per page, read already (:func:`bold_titles`);
            None reads the pages that hold a candidate paragraph.

    Returns:
        ``(markdown, titles)``: the markdown with each split paragraph written as ``###### title``
        lines and the rest of its text, separated by blank lines (every other line as it was),
        and the titles with their pages and styles, in reading order (not the first title of a
        converter's heading line, which keeps the converter's own style). Unchanged, with no
        titles, when pypdf cannot read the file (logged at DEBUG).
    """
    lines = split_lines(markdown)
    pages = page_map(lines, marker_style)
    candidates: dict[int, str] = {}  # 0-based line -> its text, one-line top-level paragraphs
    items: set[int] = set()  # those of them that are one-line list items set apart
    heads: dict[int, str] = {}  # those of them that are the converter's headings -> their '#'s
    for tok in parse_blocks(markdown):
        if not tok.map:
            continue
        if tok.type == "paragraph_open" and tok.level == 0 and tok.map[1] - tok.map[0] == 1:
            i = tok.map[0]
            text = " ".join(lines[i].split())
            if pages.line_pages[i] and len(text.split()) > 1:
                candidates[i] = text
        elif tok.type == "heading_open" and tok.level == 0 and tok.markup.startswith("#"):
            m = _ATX.match(lines[tok.map[0]])
            if m and pages.line_pages[tok.map[0]] and "{" not in m.group(2):
                candidates[tok.map[0]] = " ".join(m.group(2).split())
                heads[tok.map[0]] = m.group(1)
        elif tok.type == "list_item_open" and tok.level == 1:
            filled = [k for k in range(tok.map[0], min(tok.map[1], len(lines))) if lines[k].strip()]
            i = filled[0] if len(filled) == 1 else -1
            if i >= 0 and pages.line_pages[i] and _set_apart(lines, i):
                candidates[i] = " ".join(_BULLET.sub("", lines[i]).split())
                items.add(i)
    if not candidates:
        return markdown, []
    reader = _reader(pdf) if titles is None else None
    if titles is None and reader is None:
        return markdown, []
    titles_of: dict[int, Sequence[PageLine]] = dict(titles or {})
    out: list[str] = []
    found: list[StyledHeading] = []
    split = 0
    for i, line in enumerate(lines):
        text = candidates.get(i)
        if text is None:
            out.append(line)
            continue
        page = pages.line_pages[i]
        if page not in titles_of:
            titles_of[page] = _page_titles(reader, page, pdf) if reader is not None else []
        pieces = _split(text, titles_of[page]) if titles_of[page] else [text]
        bodies = [p for p in pieces if isinstance(p, str)]
        # a list item that is a title and nothing else; a paragraph of titles that a label or a
        # number opens (a table's header set in bold is a paragraph of titles too)
        alone = not bodies and (i in items or (
            len(pieces) > 1 and isinstance(pieces[0], PageLine) and bool(_NUMBERED.match(pieces[0].text))))
        if i in heads and not isinstance(pieces[0], PageLine):
            out.append(line)  # a converter's heading is cut only after the bold title it opens with
            continue
        if not alone and (len(bodies) == len(pieces) or not bodies or not all(_is_prose(b) for b in bodies)):
            out.append(line)
            continue
        written = [p if isinstance(p, str) else f"###### {p.text}" for p in pieces]
        first = 0
        if i in heads:  # the heading keeps its level and its first title; the converter styles it
            written[0], first = f"{heads[i]} {pieces[0].text}", 1
        out.extend(piece for k, w in enumerate(written) for piece in (([""] if k else []) + [w]))
        found.extend(StyledHeading(page, p.text, p.style) for p in pieces[first:] if isinstance(p, PageLine))
        split += 1
    if not split:
        return markdown, []
    logger.debug("%s: %d lines cut at the bold titles run into them", pdf, split)
    text = "\n".join(out)
    return (text + "\n" if markdown.endswith("\n") else text), found

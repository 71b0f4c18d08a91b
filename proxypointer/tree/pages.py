r"""Page markers in converted markdown: which PDF page each line came from.

PDF converters can write a separator line at page boundaries. This module recognises the
common styles, or one the user names, and turns them into a :class:`PageMap`: the 1-based PDF
page of every line, the set of marker lines (never embedded, never shown as content) and the
page range of a line range. Lines are 1-based and inclusive throughout; pages are 1-based PDF
page numbers in the file's page order (not the folio printed on the page); page 0 means "before
the first page" (lines above the first marker of a style whose marker starts a page).

Styles recognised (each tool's separator as its own source writes it):

* ``opendataloader``: ``<!-- page N -->`` at the start of each page, N 1-based. This is the
  separator :mod:`proxypointer.read.pdf` asks opendataloader-pdf for
  (``markdown_page_separator="<!-- page %page-number% -->"``; opendataloader-pdf 2.5.16
  ``convert_generated.py``: "Separator between pages in Markdown output. Use %page-number% for
  page numbers").
* ``marker``: ``{N}`` followed by 48 dashes at the start of each page, N 0-based (marker-pdf
  ``marker/renderers/markdown.py``: ``"\n\n" + "{" + str(page_id) + "}" + page_separator``,
  ``page_separator = "-" * 48``, with ``--paginate_output``).
* ``pymupdf4llm``: ``--- end of page=N ---`` after each page, N 0-based (pymupdf4llm
  ``helpers/pymupdf_rag.py``: ``f"\n\n--- end of page={parms.page.number} ---\n\n"`` with
  ``page_separators=True``; its CHANGES.md: "The page number is 0-based").
* ``pymupdf4llm-layout``: ``--- end of page.page_number=N ---`` after each page, N 1-based
  (pymupdf4llm layout mode, ``helpers/document_layout.py``:
  ``f"--- end of {page.page_number=} ---"``, ``page_number = page.number + 1``).
* ``docling``: ``<!-- page break -->`` (also ``page-break``/``page_break``) between pages, no
  number (docling-core ``MarkdownParams.page_break_placeholder``, documented example
  ``"<!-- page break -->"``; the placeholder is inserted only at page transitions, so a
  page with no content items produces no separator and later pages would be counted one
  short: a limit of the format).
* ``llamaparse``: ``---`` between pages, no number (LlamaParse ``page_separator``: "If not set
  the default separator '\n---\n' will be used"). A horizontal rule looks the same, so this
  style is never auto-detected: choose it explicitly. A LlamaParse separator with
  ``{page_number}`` ("replaced by the next page number") is a custom marker with position
  ``between``.

Auto-detection (:func:`detect_style`) tries every style except ``llamaparse``; marker-like
lines inside fenced or indented code blocks are content, never markers; numbered markers must
increase strictly down the file, otherwise the style is rejected as a false positive.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .markdown import code_lines

if TYPE_CHECKING:
    from ..config import PagesConfig

__all__ = [
    "BUILTIN_STYLES",
    "MarkerStyle",
    "PageMap",
    "blank_markers",
    "custom_style",
    "detect_style",
    "page_map",
    "page_map_for_config",
    "stored_page_map",
    "style_for_config",
]

logger = logging.getLogger(__name__)

_POSITIONS = ("start", "end", "between")
#: Placeholders accepted in a marker *format* (as opposed to a regex): opendataloader-pdf's
#: ``%page-number%`` and LlamaParse's ``{page_number}``.
_PLACEHOLDERS = ("%page-number%", "{page_number}")


@dataclass(frozen=True, slots=True)
class MarkerStyle:
    """One way of writing page markers.

    Attributes:
        name: Style name (``opendataloader``, ``marker``, ...; ``custom`` for a configured one).
        pattern: Regex that must match a whole line (leading and trailing whitespace removed);
            its group ``page`` (or its first group) is the page number; no group: pages are
            counted.
        position: ``start`` (the marker opens page N: lines after it are on N; lines before
            the first marker are on page 0), ``end`` (the marker closes page N: it and the
            lines since the previous marker are on N) or ``between`` (a separator between two
            pages and none around the document: numbered with the page that follows; lines
            before the first separator are on the page before it, page 1 when unnumbered).
        number_base: What the first page is called in the marker: 1, or 0 for tools that
            count pages from 0 (marker, pymupdf4llm).
        auto: Whether :func:`detect_style` may pick this style (false for ``---``, which a
            normal document uses as a horizontal rule).
    """

    name: str
    pattern: re.Pattern[str]
    position: str
    number_base: int = 1
    auto: bool = True

    def __post_init__(self) -> None:
        if self.position not in _POSITIONS:
            raise ValueError(f"position must be one of {_POSITIONS}, got {self.position!r}")
        if self.number_base not in (0, 1):
            raise ValueError(f"number_base must be 0 or 1, got {self.number_base}")

    @property
    def numbered(self) -> bool:
        """True when the marker carries a page number."""
        return self.pattern.groups > 0

    def match(self, line: str) -> int | None:
        """Read one line.

        Args:
            line: One line of markdown, without its line end.

        Returns:
            -1 if the line is a marker without a number, the 1-based page number if it is a
            numbered marker, None if it is not a marker.
        """
        m = self.pattern.fullmatch(line.strip(" \t"))
        if m is None:
            return None
        if not self.numbered:
            return -1
        raw = m.group("page") if "page" in self.pattern.groupindex else m.group(1)
        try:
            return int(raw) + (1 - self.number_base)
        except (TypeError, ValueError):  # a custom regex whose group matched no digits
            return None


def _style(name: str, regex: str, position: str, number_base: int = 1, auto: bool = True) -> MarkerStyle:
    return MarkerStyle(name, re.compile(regex, re.IGNORECASE), position, number_base, auto)


#: The built-in styles by name, in the order auto-detection tries them (see the module
#: docstring for where each format comes from).
BUILTIN_STYLES: dict[str, MarkerStyle] = {
    "opendataloader": _style("opendataloader", r"<!--\s*page\s+(?P<page>\d+)\s*-->", "start"),
    "marker": _style("marker", r"\{(?P<page>\d+)\}-{3,}", "start", number_base=0),
    "pymupdf4llm": _style("pymupdf4llm", r"-{3} end of page=(?P<page>\d+) -{3}", "end", number_base=0),
    "pymupdf4llm-layout": _style("pymupdf4llm-layout", r"-{3} end of page\.page_number=(?P<page>\d+) -{3}", "end"),
    "docling": _style("docling", r"<!--\s*page[-_ ]?break\s*-->", "between"),
    "llamaparse": _style("llamaparse", r"-{3}", "between", auto=False),
}


def custom_style(marker: str, position: str = "start", number_base: int = 1) -> MarkerStyle:
    r"""Build the style of a user-named marker (config key ``pages.marker``).

    Args:
        marker: Either a *format* holding ``%page-number%`` (opendataloader-pdf) or
            ``{page_number}`` (LlamaParse), matched literally around the number, or a Python
            regex that matches the whole marker line (spaces and tabs around it removed), with the
            page number in a group named ``page`` or its first group (no group: pages are
            counted). Examples: ``"[[PAGE %page-number%]]"``, ``r"=+ Page (\d+) =+"``.
        position: ``start``, ``end`` or ``between`` (see :class:`MarkerStyle`).
        number_base: 1, or 0 when the tool counts pages from 0.

    Returns:
        The style, named ``custom``.

    Raises:
        ConfigError: If the marker is empty, spans several lines, is not a valid regex, or
            position/number_base are out of range.
    """
    where = "pages.marker"
    text = marker.strip()
    if not text:
        raise ConfigError(f"{where}: empty marker; give a regex or a format with %page-number%")
    if "\n" in text:
        raise ConfigError(f"{where}: a page marker must be one line, got {marker!r}")
    if position not in _POSITIONS:
        raise ConfigError(f"pages.marker_position: expected one of {list(_POSITIONS)}, got {position!r}")
    if number_base not in (0, 1):
        raise ConfigError(f"pages.marker_number_base: expected 0 or 1, got {number_base}")
    placeholder = next((p for p in _PLACEHOLDERS if p in text), None)
    if placeholder is not None:
        regex = r"(?P<page>\d+)".join(re.escape(part) for part in text.split(placeholder, 1))
        regex = regex.replace(re.escape(placeholder), r"\d+")  # a second placeholder: any number
    else:
        regex = text
    try:
        pattern = re.compile(regex)
    except re.error as err:
        raise ConfigError(f"{where}: invalid regular expression {text!r} ({err}); fix it or use a format") from err
    if pattern.groups and "page" not in pattern.groupindex and pattern.groups > 1:
        logger.debug("pages.marker %r: several groups and none named 'page'; using group 1", text)
    return MarkerStyle("custom", pattern, position, number_base, auto=False)


@dataclass(frozen=True, slots=True)
class PageMap:
    """The PDF page of every line of one markdown text.

    Attributes:
        style: Name of the marker style read (``""`` when the text has no page markers).
        line_pages: ``line_pages[i]`` is the 1-based page of line ``i + 1``; 0 for lines before
            the first page (above the first marker of a ``start`` style) and for every line of
            a text without markers.
        marker_lines: 1-based numbers of the marker lines themselves: not content, never to be
            embedded or shown.
        page_count: Highest page number reached (0 without markers).
    """

    style: str
    line_pages: tuple[int, ...]
    marker_lines: frozenset[int]
    page_count: int

    @property
    def has_pages(self) -> bool:
        """True when some line is on a page (the text had page markers)."""
        return self.page_count > 0

    def page_of(self, line: int) -> int:
        """Page of one line.

        Args:
            line: 1-based line number.

        Returns:
            Its 1-based page; 0 when it is before the first page or the text has no markers.

        Raises:
            IndexError: If the line is outside the text.
        """
        if not 1 <= line <= len(self.line_pages):
            raise IndexError(f"line {line} outside 1..{len(self.line_pages)}")
        return self.line_pages[line - 1]

    def page_range(self, start_line: int, end_line: int) -> tuple[int, int] | None:
        """Pages that the content of a line range lies on.

        Marker lines and blank lines do not count, so a section that ends just after the
        ``<!-- page 5 -->`` marker of the next page is on pages (3, 4), not (3, 5). When the
        range holds only blank and marker lines, its other lines decide.

        Args:
            start_line: First line, 1-based, inclusive.
            end_line: Last line, 1-based, inclusive; >= start_line.

        Returns:
            ``(first_page, last_page)``, 1-based and inclusive, or None when no line of the
            range is on a page (no markers, or only lines before the first page).

        Raises:
            IndexError: If the range is empty or outside the text.
        """
        if not 1 <= start_line <= end_line <= len(self.line_pages):
            raise IndexError(f"lines {start_line}..{end_line} outside 1..{len(self.line_pages)}")
        if not self.has_pages:
            return None
        pages, blank = self.line_pages, self._blank or (False,) * len(self.line_pages)
        content = [
            pages[i - 1]
            for i in range(start_line, end_line + 1)
            if pages[i - 1] > 0 and i not in self.marker_lines and not blank[i - 1]
        ]
        if not content:
            content = [
                pages[i - 1] for i in range(start_line, end_line + 1) if pages[i - 1] > 0 and i not in self.marker_lines
            ]
        if not content:
            return None
        return min(content), max(content)

    def pages(self, start_line: int, end_line: int) -> tuple[int, int]:
        """:meth:`page_range` as the pair a pointer carries: ``(0, 0)`` when it has no pages.

        Args:
            start_line: First line, 1-based, inclusive.
            end_line: Last line, 1-based, inclusive; >= start_line.

        Returns:
            ``(page_start, page_end)``, 1-based inclusive PDF pages, or ``(0, 0)``.

        Raises:
            IndexError: If the range is empty or outside the text.
        """
        got = self.page_range(start_line, end_line)
        return (0, 0) if got is None else got

    #: Whether each line is blank (recorded by page_map; not part of equality or repr).
    _blank: tuple[bool, ...] = field(default=(), repr=False, compare=False)


def _find(lines: Sequence[str], style: MarkerStyle) -> list[tuple[int, int]]:
    """``(line, number)`` of every line that matches the style (number -1: unnumbered)."""
    found = []
    for i, line in enumerate(lines, 1):
        if len(line) > 200:  # markers are short; skip long paragraphs cheaply
            continue
        n = style.match(line)
        if n is not None:
            found.append((i, n))
    return found


def _increasing(found: list[tuple[int, int]]) -> bool:
    numbers = [n for _, n in found]
    return all(b > a for a, b in zip(numbers, numbers[1:], strict=False)) and all(n >= 1 or n == -1 for n in numbers)


def _outside_code(lines: Sequence[str], found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if not found or not any(("```" in ln or "~~~" in ln or ln.startswith(("    ", "\t"))) for ln in lines):
        return found
    code = code_lines(lines)
    return [f for f in found if f[0] not in code]


def _detect(lines: Sequence[str]) -> tuple[MarkerStyle | None, list[tuple[int, int]]]:
    candidates: list[tuple[list[tuple[int, int]], MarkerStyle]] = []
    for style in BUILTIN_STYLES.values():
        if not style.auto:
            continue
        found = _outside_code(lines, _find(lines, style))
        if not found:
            continue
        if style.numbered and not _increasing(found):
            logger.debug("page markers of style %s do not increase; not taken as page markers", style.name)
            continue
        candidates.append((found, style))
    if not candidates:
        return None, []
    candidates.sort(key=lambda c: -len(c[0]))
    if len(candidates) > 1:
        logger.warning(
            "page markers of several styles (%s); using %s",
            ", ".join(f"{s.name}: {len(f)}" for f, s in candidates),
            candidates[0][1].name,
        )
    return candidates[0][1], candidates[0][0]


def detect_style(lines: Sequence[str]) -> MarkerStyle | None:
    """Guess which built-in marker style a text uses.

    Tries every style whose ``auto`` is true; a style counts when at least one line outside
    code blocks matches it and, for numbered styles, the numbers increase strictly. When
    several count, the one with the most marker lines wins (a warning is logged).

    Args:
        lines: The text's lines (``lines[i]`` is line ``i + 1``), line ends removed.

    Returns:
        The style found, or None when the text has no recognised page markers.
    """
    return _detect(lines)[0]


def page_map(lines: Sequence[str], style: MarkerStyle | None = None) -> PageMap:
    """Map every line of a text to its PDF page.

    Args:
        lines: The text's lines (``lines[i]`` is line ``i + 1``), line ends removed, as
            ``tree.split_lines`` gives them.
        style: The marker style; None detects it (:func:`detect_style`: code blocks skipped,
            numbers must increase). An explicit style is trusted: every line that matches it
            is a marker, even in a code block, even ``---`` (``llamaparse``).

    Returns:
        The page map; without markers every line is on page 0 and ``has_pages`` is false.
        Numbered markers that do not increase are used as written (a warning is logged).

    Example:
        >>> pm = page_map(["<!-- page 1 -->", "", "# Intro", "<!-- page 2 -->", "text"])
        >>> pm.line_pages, sorted(pm.marker_lines), pm.page_range(3, 5)
        ((1, 1, 1, 2, 2), [1, 4], (1, 2))
    """
    blank = tuple(not ln.strip() for ln in lines)
    if style is None:
        style, found = _detect(lines)
    else:
        found = _find(lines, style)
    if not found:
        return PageMap("", (0,) * len(lines), frozenset(), 0, blank)
    if style.numbered and not _increasing(found):
        logger.warning("page markers (%s style) do not increase down the text; pages may be wrong", style.name)
    n_lines = len(lines)
    pages = [0] * n_lines
    marks = [ln for ln, _ in found]
    if style.position == "start":
        numbers = [n if n != -1 else k + 1 for k, (_, n) in enumerate(found)]
        for k, first in enumerate(marks):
            last = marks[k + 1] - 1 if k + 1 < len(marks) else n_lines
            pages[first - 1 : last] = [numbers[k]] * (last - first + 1)
    else:
        # end / between: marker k closes page numbers[k]; lines up to and including it are on it.
        if style.position == "end":
            numbers = [n if n != -1 else k + 1 for k, (_, n) in enumerate(found)]
        else:  # between: the number is that of the page that follows
            numbers = [n - 1 if n != -1 else k + 1 for k, (_, n) in enumerate(found)]
        prev = 0
        for k, mark in enumerate(marks):
            pages[prev:mark] = [max(numbers[k], 0)] * (mark - prev)
            prev = mark
        tail = numbers[-1] + 1
        if style.position == "end" and all(blank[prev:]):
            tail = numbers[-1]  # nothing after the last page's end marker but blank lines
        pages[prev:] = [tail] * (n_lines - prev)
    return PageMap(style.name, tuple(pages), frozenset(marks), max(pages), blank)


def style_for_config(config: PagesConfig) -> MarkerStyle | None:
    """Give the style a ``pages`` config section asks for.

    Args:
        config: ``pages.style`` (``auto``, ``none``, a built-in name or ``custom``) and, for a
            custom marker, ``pages.marker``, ``pages.marker_position``, ``pages.marker_number_base``.

    Returns:
        The style, or None for ``auto`` (detect per text). ``none`` gives a style that matches
        nothing, so no page is mapped.

    Raises:
        ConfigError: If the custom marker is invalid (see :func:`custom_style`).
    """
    if config.marker:
        return custom_style(config.marker, config.marker_position, config.marker_number_base)
    if config.style == "auto":
        return None
    if config.style == "none":
        return MarkerStyle("none", re.compile(r"(?!)"), "start", auto=False)
    return BUILTIN_STYLES[config.style]


def page_map_for_config(lines: Sequence[str], config: PagesConfig) -> PageMap:
    """:func:`page_map` with the style named by a ``pages`` config section.

    Args:
        lines: The text's lines, line ends removed.
        config: The ``pages`` section (see :func:`style_for_config`).

    Returns:
        The page map (no pages with ``pages.style: none``).

    Raises:
        ConfigError: If the custom marker is invalid.
    """
    return page_map(lines, style_for_config(config))


def blank_markers(lines: Sequence[str], pages: PageMap) -> list[str]:
    """Replace every marker line by an empty line, so that markers are never content.

    The text that is stored, parsed, chunked, embedded and delivered is the converted (or
    given) markdown with its page-marker lines emptied: line numbers stay those of the file
    (a ``.md``) or of ``proxypointer convert``'s output (a PDF), a marker is never embedded,
    shown or cited, and a ``---`` page separator (``llamaparse``) under a text line cannot
    turn that line into a setext heading.

    Args:
        lines: The text's lines (``lines[i]`` is line ``i + 1``), line ends removed.
        pages: Their page map (:func:`page_map`).

    Returns:
        The lines, marker lines replaced by ``""``.

    Example:
        >>> blank_markers(["Intro", "---", "More"], page_map(["Intro", "---", "More"], BUILTIN_STYLES["llamaparse"]))
        ['Intro', '', 'More']
    """
    marks = pages.marker_lines
    return [("" if i in marks else ln) for i, ln in enumerate(lines, 1)]


def stored_page_map(line_pages: Sequence[int], lines: Sequence[str]) -> PageMap:
    """Rebuild the page map of a stored text from its stored pages (markers already blanked).

    A stored source keeps the page of each line (``registry.sources.save``) and its marker
    lines emptied (:func:`blank_markers`), so the blank-line rule of :meth:`PageMap.page_range`
    leaves them out as it left out the markers; ``marker_lines`` is empty.

    Args:
        line_pages: Page of each line (``line_pages[i]`` for line ``i + 1``), 0 before the
            first page.
        lines: The stored lines.

    Returns:
        The page map (style ``stored``).

    Raises:
        ValueError: If the two lengths differ (the page map belongs to another text).
    """
    if len(line_pages) != len(lines):
        raise ValueError(f"{len(line_pages)} line pages for {len(lines)} lines")
    blank = tuple(not ln.strip() for ln in lines)
    return PageMap("stored", tuple(line_pages), frozenset(), max(line_pages, default=0), blank)

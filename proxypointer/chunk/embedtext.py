"""The text a chunk embeds, mapped back to the source characters it came from.

Embedded text differs from the source in two ways: tables are rendered as text
(:mod:`proxypointer.chunk.tables`) and base64 data URIs are replaced by placeholders
(:mod:`proxypointer.chunk.datauri`). Chunks are cut from the embedded text (so their token budget
counts what the model reads) and point at the source lines (so citations slice the exact
source): :class:`EmbeddedText` holds both and the map between them.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .datauri import data_uri_edits
from .tables import Table, find_tables

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["EmbeddedText"]

_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n)+")  # one or more blank lines


@dataclass(frozen=True, slots=True)
class _Segment:
    """Characters ``[r_start, r_end)`` of the embedded text come from ``[s_start, s_end)``.

    An atomic segment (a rendered table line, a placeholder) maps as a whole; otherwise the
    text is copied and maps character by character.
    """

    r_start: int
    r_end: int
    s_start: int
    s_end: int
    atomic: bool


@dataclass(frozen=True, slots=True)
class _Block:
    r_start: int
    r_end: int
    table: Table


class EmbeddedText:
    r"""A source text as it is embedded, with a map back to source characters.

    Tables are rendered (:func:`~proxypointer.chunk.tables.find_tables`), each as one paragraph
    opened by its title paragraph (blank lines between them dropped, so a splitter keeps the
    title with the first rows); base64 data URIs are replaced by placeholders
    (:func:`~proxypointer.chunk.datauri.replace_data_uris`); all other text is copied. A piece of
    :attr:`text` maps back to the source characters it came from (whole table rows for
    rendered lines), so a chunk's pointer covers the exact source lines.

    Attributes:
        source: The text given.
        text: The text to embed.
        tables: The tables found in ``source``.

    Example:
        >>> e = EmbeddedText("Assets\n\n<table><tr><td>Cash</td><td>$ 5</td></tr></table>\n")
        >>> e.text
        'Assets\nCash: $ 5\n\n'
        >>> e.source[slice(*e.source_span(7, 16))]
        '<table><tr><td>Cash</td><td>$ 5</td></tr></table>'
    """

    __slots__ = ("_blocks", "_r_starts", "_segments", "source", "tables", "text")

    def __init__(self, source: str, md: MarkdownIt | None = None) -> None:
        self.source = source
        self.tables = find_tables(source, md)
        self._segments: list[_Segment] = []
        self._blocks: list[_Block] = []
        parts: list[str] = []
        self._build(parts)
        self.text = "".join(parts)
        self._r_starts = [s.r_start for s in self._segments]

    def _emit(self, parts: list[str], text: str, s_start: int, s_end: int, atomic: bool) -> None:
        if not text:
            return
        r = self._segments[-1].r_end if self._segments else 0
        self._segments.append(_Segment(r, r + len(text), s_start, s_end, atomic))
        parts.append(text)

    def _prose(self, parts: list[str], a: int, b: int) -> None:
        pos = a
        for e in data_uri_edits(self.source[a:b]):
            self._emit(parts, self.source[pos : a + e.start], pos, a + e.start, False)
            self._emit(parts, e.text, a + e.start, a + e.end, True)
            pos = a + e.end
        self._emit(parts, self.source[pos:b], pos, b, False)

    def _paragraph_break(self, parts: list[str], at: int, following: str = "") -> None:
        """Make the embedded text end with a blank line (counting newlines that follow)."""
        if not parts:
            return
        tail = "".join(parts[-2:])
        have = len(tail) - len(tail.rstrip("\n")) + len(following) - len(following.lstrip("\n"))
        self._emit(parts, "\n" * max(0, 2 - have), at, at, True)

    def _glued_title(self, parts: list[str], a: int, b: int) -> None:
        """Copy a table's title paragraph(s) with each run of blank lines as one line break.

        The title then opens the table's paragraph, so the splitter keeps it with the first
        rows instead of cutting it off as a chunk of its own.
        """
        pos = a
        for m in _BLANK_RUN.finditer(self.source, a, b):
            self._prose(parts, pos, m.start())
            self._emit(parts, "\n", m.start(), m.end(), True)
            pos = m.end()
        self._prose(parts, pos, b)
        if b > a and not "".join(parts[-1:]).endswith("\n"):
            self._emit(parts, "\n", b, b, True)

    def _build(self, parts: list[str]) -> None:
        pos = 0
        for t in self.tables:
            lead_end = t.header_end if t.header_end > t.start else t.rows[0].start if t.rows else t.end
            lines = [(x, t.start, lead_end) for x in t.lead_lines]
            lines += [(r.text, r.start, r.end) for r in t.rows]
            if not lines:
                self._prose(parts, pos, t.start)
                pos = t.end
                continue
            glue = t.title_start < t.start
            self._prose(parts, pos, t.title_start)
            self._paragraph_break(parts, t.title_start)
            if glue:
                self._glued_title(parts, t.title_start, t.start)
            pos = t.end
            first = self._segments[-1].r_end if self._segments else 0
            for i, (line, a, b) in enumerate(lines):
                if i:
                    self._emit(parts, "\n", a, a, True)
                self._emit(parts, line, t.start if i == 0 else a, t.end if i == len(lines) - 1 else b, True)
            self._blocks.append(_Block(first, self._segments[-1].r_end, t))
            if t.end < len(self.source):
                self._paragraph_break(parts, t.end, self.source[t.end : t.end + 2])
        self._prose(parts, pos, len(self.source))

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """Source characters that a piece ``text[start:end]`` comes from.

        Args:
            start: 0-based offset into :attr:`text`.
            end: Exclusive end offset into :attr:`text`; ``end > start``.

        Returns:
            ``(s_start, s_end)``, 0-based half-open offsets into :attr:`source`, without
            surrounding whitespace; a piece that touches a rendered table row or a placeholder
            covers that row's (or URI's) whole source.
        """
        seg = self._segments[bisect.bisect_right(self._r_starts, start) - 1]
        s = seg.s_start if seg.atomic else seg.s_start + (start - seg.r_start)
        seg = self._segments[bisect.bisect_right(self._r_starts, end - 1) - 1]
        e = seg.s_end if seg.atomic else seg.s_start + (end - seg.r_start)
        while e > s and self.source[e - 1].isspace():
            e -= 1
        while s < e and self.source[s].isspace():
            s += 1
        return s, e

    def context_at(self, start: int) -> str:
        """Return what to repeat before a piece that starts at ``text[start]`` (``""``: nothing).

        A piece that starts at a table's first rendered line gets the table's title (the
        paragraph before it, which the piece does not hold); one that starts further inside a
        table gets the title and the column headers (:attr:`~proxypointer.chunk.tables.Table.context`).
        """
        for b in self._blocks:
            if b.r_start <= start < b.r_end:
                if start == b.r_start:
                    return "" if b.table.caption else b.table.title
                return b.table.context
            if b.r_start > start:
                break
        return ""

"""Where each printed line of a PDF page starts: the indentation of a table of contents.

A printed contents page nests its entries by indentation (``Firmwide Risk Management 35`` with
``Capital Risk Management 36`` indented under it); the converter's markdown keeps the words and
loses the indent. :func:`pdf_line_starts` reads it back with pypdf's text visitor: the pieces
of text a page draws are grouped into lines by their baseline, and each line's start is the
left edge of its first piece. :mod:`proxypointer.tree.contents` turns those starts into levels.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..pdflog import pypdf_warnings_hidden

__all__ = ["BASELINE_TOLERANCE", "PrintedLine", "pdf_line_starts"]

logger = logging.getLogger(__name__)

#: Pieces of text whose baselines differ by at most this many points (1/72 inch) are one
#: printed line; body text is set at 8-12 pt with a leading of 2-4 pt more, so two lines are
#: at least ~9 pt apart, and a superscript is raised 2-4 pt (it may start a line of its own).
BASELINE_TOLERANCE = 1.5


@dataclass(frozen=True, slots=True)
class PrintedLine:
    """One printed line of a PDF page.

    Attributes:
        x: Left edge of its first piece of text, in points from the page's left edge.
        y: Its baseline, in points from the page's bottom edge.
        text: Its pieces joined left to right with single spaces.
    """

    x: float
    y: float
    text: str


def pdf_line_starts(path: str | Path, data: bytes | None, pages: Iterable[int]) -> dict[int, tuple[PrintedLine, ...]]:
    """Read the printed lines of some pages of a PDF, top to bottom, with where each starts.

    Args:
        path: The PDF (read unless ``data`` is given; named in messages).
        data: Its bytes, when the caller has them.
        pages: 1-based page numbers; numbers outside the file are left out.

    Returns:
        ``{page: lines}``; a page whose text pypdf cannot walk has no entry (logged at debug
        level), and a file pypdf cannot open gives ``{}``: indentation is a refinement, never
        a reason to fail a conversion.
    """
    try:
        import pypdf
    except ImportError:  # pragma: no cover - pypdf ships with the pdf extra
        return {}
    wanted = sorted(set(pages))
    out: dict[int, tuple[PrintedLine, ...]] = {}
    with pypdf_warnings_hidden():
        try:
            reader = pypdf.PdfReader(io.BytesIO(data) if data is not None else str(path), strict=False)
            n_pages = len(reader.pages)
        except Exception as err:  # noqa: BLE001 - pypdf raises many types for broken files
            logger.debug("%s: no line starts (%s)", path, err)
            return {}
        for page in wanted:
            if not 1 <= page <= n_pages:
                continue
            try:
                out[page] = _page_lines(reader.pages[page - 1])
            except Exception as err:  # noqa: BLE001 - a broken content stream
                logger.debug("%s p. %d: no line starts (%s)", path, page, err)
    return out


def _page_lines(page: Any) -> tuple[PrintedLine, ...]:  # noqa: ANN401 - a pypdf page
    pieces: list[tuple[float, float, str]] = []

    def visit(text: str, cm: list[float], tm: list[float], _font: Any, _size: Any) -> None:  # noqa: ANN401
        if not text.strip():
            return
        # the text matrix in device space (tm x cm); rotation and skew are rare on contents pages
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        pieces.append((y, x, " ".join(text.split())))

    page.extract_text(visitor_text=visit)
    pieces.sort(key=lambda p: (-p[0], p[1]))
    lines: list[list[tuple[float, float, str]]] = []
    for piece in pieces:
        if lines and abs(lines[-1][0][0] - piece[0]) <= BASELINE_TOLERANCE:
            lines[-1].append(piece)
        else:
            lines.append([piece])
    out = []
    for line in lines:
        line.sort(key=lambda p: p[1])
        out.append(PrintedLine(line[0][1], line[0][0], " ".join(p[2] for p in line)))
    return tuple(out)

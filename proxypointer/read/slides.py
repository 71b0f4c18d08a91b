"""PowerPoint (``*.pptx``) to markdown: python-pptx reads the slides, one section per slide.

Each slide starts with a page marker (``<!-- page N -->``, N the 1-based slide number, the
style :mod:`proxypointer.tree.pages` reads as ``opendataloader``), so that every line knows its
slide and a citation names it (``deck.pptx#slide=12``). Then the slide's title as a level-1
heading (``Slide N`` when it has none), the text of its other shapes in reading order (top to
bottom, then left to right; a paragraph indented in an outline as a nested list item), its
tables as pipe tables, and its speaker notes after ``Notes:``. Grouped shapes are read as their
members. Pictures and charts carry no text here.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from ..errors import DocumentError, EmptyDocumentError
from ..lines import plain_line

__all__ = ["SLIDE_MARKER", "pptx_markdown"]

#: The page marker written before each slide (slide number in it).
SLIDE_MARKER = "<!-- page {} -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(table: Any) -> list[str]:  # noqa: ANN401 - a python-pptx table
    rows = [[_cell(c.text) for c in row.cells] for row in table.rows]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    out = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return out + [""]


def _shapes(shapes: Any) -> list[Any]:  # noqa: ANN401 - python-pptx shapes
    """Shapes in reading order, groups opened."""
    flat: list[Any] = []
    for shape in shapes:
        if shape.shape_type is not None and int(shape.shape_type) == 6:  # MSO_SHAPE_TYPE.GROUP
            flat += _shapes(shape.shapes)
        else:
            flat.append(shape)
    return sorted(flat, key=lambda s: ((s.top or 0), (s.left or 0)))


def _text_frame(frame: Any, listed: bool) -> list[str]:  # noqa: ANN401 - a python-pptx text frame
    out: list[str] = []
    for para in frame.paragraphs:
        text = " ".join(para.text.split())
        if not text:
            continue
        if listed:
            out.append("  " * para.level + "- " + text)
        else:
            out += [plain_line(text), ""]
    return out + [""] if listed and out else out


def _slide(number: int, slide: Any) -> list[str]:  # noqa: ANN401 - a python-pptx slide
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text.split()) if title_shape is not None and title_shape.has_text_frame else ""
    out = [SLIDE_MARKER.format(number), "", f"# {title or f'Slide {number}'}", ""]
    for shape in _shapes(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if getattr(shape, "has_table", False):
            out += _table(shape.table)
        elif getattr(shape, "has_text_frame", False):
            # a body placeholder is an outline of bullets; a text box is paragraphs
            out += _text_frame(shape.text_frame, listed=shape.is_placeholder)
    if slide.has_notes_slide:
        notes = " ".join(slide.notes_slide.notes_text_frame.text.split()) if slide.notes_slide.notes_text_frame else ""
        if notes:
            out += [plain_line(f"Notes: {notes}"), ""]
    return out


def pptx_markdown(data: bytes, path: str) -> str:
    """Convert the bytes of a ``.pptx`` file to markdown, one section per slide.

    Args:
        data: The file's bytes.
        path: The file, for messages.

    Returns:
        Markdown with a page marker before each slide (see the module docstring).

    Raises:
        DocumentError: If the file is no zip package, is password-protected or an old
            ``.ppt`` (the message names the file and what to do).
        EmptyDocumentError: If it has no slides.
    """
    from pptx import Presentation

    if data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":
        raise DocumentError(f"{path}: password-protected or an old binary .ppt, not a .pptx; "
                            "save it from PowerPoint as .pptx without a password")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentError(f"{path}: not a .pptx file (no zip package); save it from PowerPoint as .pptx again")
    try:
        deck = Presentation(io.BytesIO(data))
    except Exception as err:  # python-pptx raises several types for damaged packages
        raise DocumentError(f"{path}: damaged .pptx or no presentation in it ({err}); save it again") from err
    out: list[str] = []
    for number, slide in enumerate(deck.slides, 1):
        out += _slide(number, slide)
    if not out:
        raise EmptyDocumentError(f"{path}: the presentation has no slides; skipped")
    return "\n".join(out) + "\n"

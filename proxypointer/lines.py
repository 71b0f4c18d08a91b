r"""Lines of normalised text: the one line model every stage shares.

Stored text is normalised once (:func:`normalise_text`: no BOM, ``\n`` the only terminator);
:func:`split_lines` then gives ``lines[i]`` = line ``i + 1``, and every pointer in the
project (nodes, chunks, sections, citations) is a 1-based inclusive line range into it.
:func:`document_hash` of that text is a document's version.
"""

from __future__ import annotations

import hashlib
import re

from .errors import StaleSourceError

__all__ = ["document_hash", "normalise_text", "plain_line", "slice_lines", "split_lines"]

_LINE_END = re.compile(r"\r\n|\r")
#: The start of a line that markdown would read as markup (heading, quote, list, table, HTML,
#: setext underline, ordered list item).
_PLAIN_MARKUP = re.compile(r"^(?=[#>|<=*+-]|\d+[.)](?:\s|$))")


def plain_line(text: str) -> str:
    r"""Return one line of plain text (not markdown) written so that markdown reads it as text.

    A converter that has only plain text (pypdf's, a slide's) writes it with this: a line that
    starts like markup gets a backslash before it.

    Args:
        text: One line, without its line end.

    Returns:
        ``text`` stripped, with ``\`` before a leading ``#``, ``>``, ``|``, ``<``, ``=``, ``*``,
        ``+``, ``-`` or ``12.``/``12)``.

    Example:
        >>> plain_line("# of customers"), plain_line("1. Net sales")
        ('\\# of customers', '\\1. Net sales')
    """
    return _PLAIN_MARKUP.sub(r"\\", text.strip())


def normalise_text(raw: str) -> str:
    r"""Drop a leading BOM and turn ``\r\n`` and lone ``\r`` into ``\n``.

    Args:
        raw: Text as decoded from the file.

    Returns:
        Text whose only line terminator is ``\n``; every other character is kept.

    """
    if raw.startswith("\ufeff"):
        raw = raw[1:]
    if "\r" in raw:
        raw = _LINE_END.sub("\n", raw)
    return raw


def split_lines(text: str) -> list[str]:
    r"""Split normalised text into lines; ``lines[i]`` is line ``i + 1``.

    A final ``\n`` ends the last line and does not start a new one; empty text has no lines.
    Unlike ``str.splitlines`` this never splits on ``\f``, ``\v``, ``\x1c``-``\x1e``,
    ``\x85``, U+2028 or U+2029.
    """
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def slice_lines(lines: list[str], start_line: int, end_line: int) -> str:
    r"""Cut lines ``start_line..end_line`` (1-based, inclusive) and join them with ``\n``.

    Args:
        lines: Output of :func:`split_lines` on the stored text.
        start_line: First line, 1-based, inclusive.
        end_line: Last line, 1-based, inclusive; must be >= start_line.

    Returns:
        The lines joined with ``\n``, without a trailing newline.

    Raises:
        StaleSourceError: If the range is empty, starts before line 1 or ends past the text.

    """
    if start_line < 1 or end_line < start_line or end_line > len(lines):
        raise StaleSourceError(
            f"lines {start_line}-{end_line} are outside the stored text of {len(lines)} lines; "
            "re-ingest the document"
        )
    return "\n".join(lines[start_line - 1 : end_line])


def document_hash(text: str) -> str:
    """SHA-256 (hex) of normalised document text: the version of a document."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

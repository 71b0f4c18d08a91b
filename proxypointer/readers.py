r"""Reading source files: bytes -> normalised markdown text, one reader per file suffix.

The first stage of ingestion after discovery. A :class:`Reader` turns a file's bytes into a
:class:`ReadResult`: the markdown text that is stored, parsed and cited (line ends normalised
to ``\n``), the *source key* that decides whether the file changed since it was indexed, and
optionally the page of each line. :class:`MarkdownReader` serves ``*.md`` and ``*.markdown``;
a converter for another format (``*.pdf``) is one more entry in the suffix table that
:func:`default_readers` returns.

Encodings (shared case 33): a byte-order mark decides (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE);
without one the file must be UTF-8, or failing that plausible Windows-1252 (what Windows
editors and Outlook exports write), which is decoded with a warning naming the file; anything
else is refused with the file, the line and the cure.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .chunking import document_hash
from .errors import DocumentError
from .tree import normalise_text

__all__ = [
    "MARKDOWN_SUFFIXES",
    "MarkdownReader",
    "ReadResult",
    "Reader",
    "decode_markdown",
    "default_readers",
    "read_bytes",
    "read_document",
]

logger = logging.getLogger(__name__)

#: File suffixes read as markdown (lower case).
MARKDOWN_SUFFIXES = (".md", ".markdown")

#: Byte-order marks, longest first: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32 BE"),
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16 BE"),
)

#: Three or more non-ASCII bytes in a row: a multi-byte encoding (Shift-JIS, GBK, ...) or
#: UTF-8 gone wrong, not Windows-1252 prose, where accented letters and typographic
#: punctuation stand between ASCII characters ("Caf\xe9", "\x93quoted\x94").
_NON_ASCII_RUN = re.compile(rb"[\x80-\xff]{3,}")


@dataclass(frozen=True, slots=True)
class ReadResult:
    r"""What a reader makes of one file: the text to index and how to recognise it again.

    Picklable (plain strings and tuples), so a distributed runner can ship it between workers.

    Attributes:
        text: Markdown, line ends normalised to ``\n`` (``tree.normalise_text``); stored in the
            registry and sliced by line numbers, so it must be what the tree is built from.
        source_key: Content address of the *input* (hex): equal keys mean the reader would give
            the same text again, so an unchanged file is skipped without reading it again.
            Markdown: the SHA-256 of ``text`` (``chunking.document_hash``). A converter: a hash
            of the file's bytes, the converter's name and version and its options.
        pages: Page of each line of ``text`` (``pages[i]`` is the page of line ``i + 1``;
            pages 1-based, in the file's page order), or None for a format without pages.
        warnings: Messages about the file worth showing the user (e.g. a fallback encoding);
            each names the file.
    """

    text: str
    source_key: str
    pages: tuple[int, ...] | None = None
    warnings: tuple[str, ...] = ()


class Reader(Protocol):
    """Turns the bytes of one kind of file into markdown.

    Implementations must be picklable (a distributed runner sends them to workers) and
    deterministic: the same bytes (and options) give the same :class:`ReadResult`.

    Attributes:
        name: Short name, e.g. ``markdown``; shown in messages.
    """

    name: str

    def source_key(self, data: bytes, path: str) -> str:
        """Content address of what :meth:`read` would give for these bytes, cheaply.

        Called on the driver for every discovered file: it must not convert. A document whose
        key and pipeline settings match the registry is skipped.

        Args:
            data: The file's bytes.
            path: The file, for messages.

        Returns:
            A hex string; equal to ``read(data, path).source_key``.

        Raises:
            DocumentError: If the bytes cannot be read as this format (names the file).
        """
        ...

    def read(self, data: bytes, path: str) -> ReadResult:
        """Decode or convert the file.

        Args:
            data: The file's bytes.
            path: The file, for messages.

        Returns:
            The text, its source key and page map.

        Raises:
            DocumentError: If the file cannot be read as this format (names the file and the
                cure).
        """
        ...


def _looks_like_utf16(data: bytes) -> str | None:
    """``UTF-16 LE``/``UTF-16 BE`` when NUL bytes sit at every other position (BOM-less UTF-16)."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    odd = sample[1::2].count(0) / (len(sample) // 2)
    even = sample[0::2].count(0) / ((len(sample) + 1) // 2)
    if odd > 0.3 and even < 0.05:
        return "UTF-16 LE"
    if even > 0.3 and odd < 0.05:
        return "UTF-16 BE"
    return None


def decode_markdown(data: bytes, path: str | Path) -> tuple[str, tuple[str, ...]]:
    r"""Decode a markdown file's bytes and normalise its line ends.

    Args:
        data: The file's bytes.
        path: The file, for messages.

    Returns:
        ``(text, warnings)``: the text (BOM dropped, ``\r\n`` and ``\r`` turned into
        ``\n``) and one warning when the Windows-1252 fallback was used.

    Raises:
        DocumentError: For NUL bytes without a byte-order mark (binary, or UTF-16 without a
            BOM: the message says which), data invalid for the encoding its BOM names, or bytes
            that are neither UTF-8 nor plausible Windows-1252; each message names the file,
            the line where it can, and the cure.
    """
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                return normalise_text(data.decode(codec)), ()
            except UnicodeDecodeError as err:
                raise DocumentError(
                    f"{path}: {label} file (BOM {bom.hex(' ').upper()}) holds invalid {label} data at byte "
                    f"{err.start}; re-save it as UTF-8"
                ) from err
    if b"\x00" in data:
        utf16 = _looks_like_utf16(data)
        if utf16:
            raise DocumentError(
                f"{path}: looks like {utf16} text without a byte-order mark; convert it to UTF-8 "
                "(or save it as UTF-16 with a BOM)"
            )
        raise DocumentError(f"{path}: looks like a binary file (NUL bytes); expected markdown text")
    try:
        return normalise_text(data.decode("utf-8")), ()
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        utf8_error = DocumentError(
            f"{path}:{line}: invalid UTF-8 at byte {err.start}, and not Windows-1252 text either; "
            "convert the file to UTF-8 (e.g. iconv -f <its encoding> -t UTF-8)"
        )
        if _NON_ASCII_RUN.search(data):
            raise utf8_error from err
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            raise utf8_error from err
    warning = f"{path}:{line}: not UTF-8; decoded as Windows-1252 (cp1252). Convert it to UTF-8 if that is wrong"
    logger.debug("%s", warning)
    return normalise_text(text), (warning,)


def read_bytes(path: str | Path) -> bytes:
    """Read a file's bytes.

    Raises:
        DocumentError: If it is missing, a folder or unreadable (names the file).
    """
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError as err:
        raise DocumentError(f"{p}: no such file; check the path") from err
    except IsADirectoryError as err:
        raise DocumentError(f"{p}: is a directory, expected a markdown file") from err
    except OSError as err:
        raise DocumentError(f"{p}: cannot read ({err.strerror})") from err


def read_document(path: str | Path) -> str:
    r"""Read a markdown file as normalised text (see :func:`decode_markdown`).

    Args:
        path: File path.

    Returns:
        The text, BOM removed and line ends normalised to ``\n``.

    Raises:
        DocumentError: If the file is missing or unreadable, looks binary, or its encoding
            cannot be told (see :func:`decode_markdown`); the message names the file.
    """
    return decode_markdown(read_bytes(path), path)[0]


class MarkdownReader:
    """``*.md`` and ``*.markdown``: decode (:func:`decode_markdown`), key = SHA-256 of the text.

    The key is the hash of the decoded, normalised text (not of the bytes), so re-saving a
    file with other line ends or another encoding of the same text changes nothing.
    """

    name = "markdown"

    def source_key(self, data: bytes, path: str) -> str:
        """SHA-256 of the normalised text (``chunking.document_hash``)."""
        return document_hash(decode_markdown(data, path)[0])

    def read(self, data: bytes, path: str) -> ReadResult:
        """Decode; no page map."""
        text, warnings = decode_markdown(data, path)
        return ReadResult(text, document_hash(text), None, warnings)


def default_readers() -> dict[str, Reader]:
    """Build the suffix table: lower-case suffix (with the dot) -> reader.

    A converter for another format adds its suffixes here (importing its heavy dependencies
    only inside its ``read``), so discovery finds the files and ingestion reads them.
    """
    markdown = MarkdownReader()
    return dict.fromkeys(MARKDOWN_SUFFIXES, markdown)

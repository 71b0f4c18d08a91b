"""What a reader gives and what a reader is: the types every reader of :mod:`proxypointer.read` shares.

Kept apart from :mod:`proxypointer.read.readers` (the suffix table) so that a reader in a
module of its own (:mod:`proxypointer.read.office`) and the table that lists it import these,
not each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..lines import split_lines
from ..tree.pages import PageMap, blank_markers

__all__ = ["ReadResult", "Reader", "with_pages"]


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
        printed: The pages are printed pages (a PDF, or markdown converted from one), so the
            text is a converter's output and ``tree.converter_output: auto`` applies the
            converter rules; False for a deck, whose pages are slides written by us.
    """

    text: str
    source_key: str
    pages: tuple[int, ...] | None = None
    warnings: tuple[str, ...] = ()
    printed: bool = True

    @property
    def paged(self) -> bool:
        """Whether the text came from printed pages (``build_tree``'s ``paged``)."""
        return self.pages is not None and self.printed


class Reader(Protocol):
    """Turns the bytes of one kind of file into markdown.

    Implementations must be picklable (a distributed runner sends them to workers) and
    deterministic: the same bytes (and options) give the same :class:`ReadResult`.

    Optional methods a runner looks for: ``missing() -> str | None`` (why this reader cannot
    run here, e.g. an extra not installed; None when it can) and ``read_many(paths, *,
    show_progress) -> list[ReadResult | ProxyPointerError]`` (convert many files at once;
    see :class:`PDFReader`).

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


def with_pages(text: str, pages: PageMap) -> tuple[str, tuple[int, ...] | None]:
    r"""Empty the marker lines of a text and give the page of each line.

    Args:
        text: Normalised markdown (line ends ``\n``).
        pages: Its page map (:func:`~proxypointer.tree.pages.page_map`).

    Returns:
        ``(text, line_pages)``: the text with its marker lines emptied (same line count, same
        other lines) and ``pages.line_pages``; ``(text, None)`` unchanged when it has no pages.
    """
    if not pages.has_pages:
        return text, None
    lines = blank_markers(split_lines(text), pages)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else ""), pages.line_pages

"""One live version of a document as a request reads it: record, tree, stored lines and pages.

The registry gives a document's record and its tree in two reads, and a writer (this server
or another process) may commit a new version between them; :class:`Snapshots` reads the
record again and repeats the whole read when it moved. A version's stored source is
immutable (read by its content hash, never by a path in the request), so its lines are kept
in a small LRU shared by every thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._lru import LRU
from ..errors import StaleSourceError
from ..lines import split_lines
from ..retrieve.retriever import format_citation
from ..store.registry import DocumentRecord, Registry
from ..tree.build import tree_rows
from ..tree.pages import PageMap, stored_page_map
from .errors import NotFound

__all__ = ["Snapshot", "Snapshots"]

#: Reads of one document before giving up when a writer keeps replacing it.
_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One live version of a document: its record, tree nodes and stored lines, read together.

    Attributes:
        record: The registry's record of the version.
        nodes: Its skeleton tree, :func:`~proxypointer.tree.build.tree_rows` (document order,
            a parent before its children).
        lines: Its stored source lines (line ``i``, 1-based, is ``lines[i - 1]``).
        pages: Its page map (PDF input), None without pages.
    """

    record: DocumentRecord
    nodes: list[dict[str, Any]]
    lines: list[str]
    pages: PageMap | None = None

    def page_range(self, start_line: int, end_line: int) -> tuple[int, int]:
        """1-based PDF pages of the content of a line range; (0, 0) without pages.

        Args:
            start_line: First line, 1-based, inclusive.
            end_line: Last line, 1-based, inclusive.
        """
        if self.pages is None or end_line > len(self.pages.line_pages):
            return 0, 0
        return self.pages.pages(start_line, end_line)

    def citation(self, start_line: int, end_line: int) -> str:
        """Citation of a line range (1-based, inclusive): ``<doc_id><suffix>#L<start>-L<end>``, pages too."""
        return format_citation(
            self.record.doc_id, self.record.source_path, start_line, end_line, *self.page_range(start_line, end_line)
        )


class Snapshots:
    """Read the live version of a document consistently; stored lines from a thread-safe LRU.

    Args:
        size: Stored sources kept in memory, by content hash (immutable, so never stale).
    """

    def __init__(self, size: int) -> None:
        self._lines: LRU[str, list[str]] = LRU(size)  # doc_hash -> lines

    def lines(self, registry: Registry, doc_hash: str) -> list[str]:
        """Return the stored lines of one version (by content hash), from the LRU.

        Args:
            registry: The registry of the requesting thread (its own SQLite connection).
            doc_hash: Content hash of the version.

        Raises:
            StaleSourceError: If the stored source is gone (the version was replaced and pruned).
        """
        lines = self._lines.get(doc_hash)
        if lines is None:
            lines = split_lines(registry.sources.load(doc_hash))
            self._lines.put(doc_hash, lines)
        return lines

    def read(self, registry: Registry, doc_id: str) -> Snapshot:
        """Record, tree and lines of the live version of one document, read consistently.

        The registry gives the record and the tree in two reads; a writer may commit a new
        version between them, so the record is read again and the whole read repeated when
        it moved (a version's stored source is immutable, read by its hash).

        Args:
            registry: The registry of the requesting thread (its own SQLite connection).
            doc_id: A doc_id as the user wrote it (compared in Unicode NFC).

        Returns:
            The snapshot; ``pages`` is set when the stored page map matches the lines.

        Raises:
            NotFound: If the document has no live version.
            StaleSourceError: If it changed on each of five reads.
        """
        doc_id = registry.stored_id(doc_id) or doc_id  # ids compare in Unicode NFC (proxypointer.docids)
        for _attempt in range(_ATTEMPTS):
            rec = registry.get(doc_id)
            if rec is None or not rec.version:
                raise NotFound(f"doc_id {doc_id!r}: no such document in the index; list_documents gives the ids")
            tree = registry.tree_json(doc_id)
            try:
                lines = self.lines(registry, rec.doc_hash)
            except StaleSourceError:
                continue  # replaced and pruned meanwhile: read the new version
            stored_pages = registry.sources.load_pages(rec.doc_hash)
            again = registry.get(doc_id)
            if again is not None and _version_key(again) == _version_key(rec):
                pages = None
                if stored_pages is not None and len(stored_pages) == len(lines):
                    pages = stored_page_map(stored_pages, lines)
                return Snapshot(rec, tree_rows(tree), lines, pages)
        raise StaleSourceError(f"doc_id {doc_id!r}: the document kept changing during the request; try again")


def _version_key(rec: DocumentRecord) -> tuple[str, str, float]:
    return (rec.version, rec.doc_hash, rec.indexed_at)

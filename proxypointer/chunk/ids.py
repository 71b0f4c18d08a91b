"""Chunk ids, the one format every store keeps: ``<doc_id>::<version>::<node_id>::<index>``.

Built once per chunk (:func:`chunk_id`), read back by whatever needs the pointer an id
carries without its record (:func:`parse_chunk_id`): the live trees of the query path, the
title index's subtree lists, hits read from a vector index. ``index`` is the chunk's position
inside its node, zero-padded to four digits; ``doc_id`` may itself hold ``::`` (the id is split
from the right). Ids derive from the document id, the version and the node's title path, never
from a random number, so re-ingesting unchanged text writes the same ids.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SEPARATOR", "ChunkId", "chunk_id", "parse_chunk_id"]

#: Between the four parts of a chunk id.
SEPARATOR = "::"


class ChunkId(NamedTuple):
    """The parts of a chunk id.

    Attributes:
        doc_id: Document id.
        version: The document version the chunk belongs to.
        node_id: Its node in that version's tree.
        index: Its position in the node as written (``"0003"``).
    """

    doc_id: str
    version: str
    node_id: str
    index: str

    @property
    def position(self) -> int:
        """The position in the node as a number; -1 when the id's last part is not digits."""
        return int(self.index) if self.index.isdigit() else -1

    @property
    def tail(self) -> str:
        """``<node_id>::<index>``: the id without the document and version."""
        return f"{self.node_id}{SEPARATOR}{self.index}"


def chunk_id(doc_id: str, version: str, node_id: str, index: int | str) -> str:
    """Return the id of chunk ``index`` (0-based position in its node) of a node of a version.

    Args:
        doc_id: Document id.
        version: Document version.
        node_id: Node id.
        index: Position in the node (padded to 4 digits), or an index part already written.
    """
    part = f"{index:04d}" if isinstance(index, int) else index
    return SEPARATOR.join((doc_id, version, node_id, part))


def parse_chunk_id(text: str) -> ChunkId | None:
    """Split a chunk id into its parts; None when it does not have four."""
    parts = text.rsplit(SEPARATOR, 3)
    return ChunkId(*parts) if len(parts) == 4 else None

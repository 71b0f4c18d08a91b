"""The chunks table of the registry, read: which chunks are live, and the copies of their records.

One row per live chunk (``chunks``, schema in :mod:`proxypointer.store.db`), written by
:meth:`~proxypointer.store.registry.Registry.commit_version` in the transaction that makes its
version live and deleted with it. Besides its id and document, a row keeps a copy of the
chunk's Chroma record (text and metadata, :func:`~proxypointer.store.records.encode_record`),
so a query reads its k winners from SQLite (~0.1 ms) instead of from Chroma (~3.5 ms at 100k
chunks, docs/benchmarks.md), and its embedding-cache key (``content_hash``). Rows of stores
written before those columns existed have none until the next ingest or ``check --repair``
fills them in (:meth:`LiveChunks.set_chunk_records`, :meth:`LiveChunks.fill_content_hashes`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .chunkindex import ChunkTextIndex
from .records import record_content_hash, try_decode_record

if TYPE_CHECKING:
    from .db import Database

__all__ = ["LiveChunks"]

logger = logging.getLogger(__name__)


class LiveChunks:
    """The live chunk ids of a store and the registry's copies of their Chroma records.

    Reads run on the registry's connection; a write (:meth:`set_chunk_records`,
    :meth:`fill_content_hashes`) runs in a transaction of its own and never adds a row: only
    :meth:`~proxypointer.store.registry.Registry.commit_version` makes a chunk live.

    Args:
        database: The registry database whose SQLite file holds the chunks table.

    """

    def __init__(self, database: Database) -> None:
        self._database = database
        self._db = database.db

    def chunk_ids(self, doc_id: str | None = None) -> set[str]:
        """Live chunk ids of one document, or of all documents."""
        if doc_id is None:
            return {r[0] for r in self._db.execute("SELECT chunk_id FROM chunks")}
        return {r[0] for r in self._db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ?", (doc_id,))}

    def has_chunks(self) -> bool:
        """Tell whether any chunk is live."""
        return self._db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None

    def live_chunk_ids(self, doc_ids: Iterable[str], limit: int) -> list[str] | None:
        """Live chunk ids of several documents, or ``None`` when they have more than ``limit``."""
        ids = list(dict.fromkeys(doc_ids))
        out: list[str] = []
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT chunk_id FROM chunks WHERE doc_id IN ({marks}) LIMIT ?", [*part, limit + 1 - len(out)]
            ).fetchall()
            out.extend(r[0] for r in rows)
            if len(out) > limit:
                return None
        return out

    def all_chunk_ids(self, limit: int) -> list[str] | None:
        """Every registered chunk id (live ones and any a writer has in flight), or ``None`` past ``limit``.

        Reads at most ``limit + 1`` rows, so asking costs little in a store of any size.
        """
        rows = self._db.execute("SELECT chunk_id FROM chunks LIMIT ?", (limit + 1,)).fetchall()
        return None if len(rows) > limit else [r[0] for r in rows]

    def chunk_records(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """``chunk_id -> (text, metadata)`` for the given live chunks that have a usable copy.

        Ids that are not live, live without a copy (an older store), or whose copy cannot be
        decoded or lacks the pointer metadata (logged; ``check`` reports it and
        ``check --repair`` rewrites it) are left out, so the caller reads those from Chroma.
        """
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for cid, decoded in self.chunk_record_copies(chunk_ids).items():
            if decoded is None:
                logger.warning("registry copy of chunk %s is unreadable; run `proxypointer check --repair`", cid)
            else:
                out[cid] = decoded
        return out

    def chunk_record_copies(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]] | None]:
        """Like :meth:`chunk_records`, with None for each copy that cannot be used (for ``check``)."""
        out: dict[str, tuple[str, dict[str, Any]] | None] = {}
        ids = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for cid, rec in self._db.execute(
                f"SELECT chunk_id, record FROM chunks WHERE record IS NOT NULL AND chunk_id IN ({marks})", part
            ):
                out[cid] = try_decode_record(rec)
        return out

    def chunks_without_record(self, limit: int, after: str = "") -> list[str]:
        """Up to ``limit`` live chunk ids without a stored copy, in id order, after ``after``."""
        rows = self._db.execute(
            "SELECT chunk_id FROM chunks WHERE record IS NULL AND chunk_id > ? ORDER BY chunk_id LIMIT ?",
            (after, limit),
        )
        return [r[0] for r in rows]

    def set_chunk_records(self, records: dict[str, bytes | None]) -> int:
        """Store record copies (:func:`~proxypointer.store.records.encode_record`; None clears one) for live chunks.

        Returns the number of rows updated.

        Ids that are no longer live are ignored, so a copy read from Chroma can never make a
        deleted chunk live again. Each row's content hash
        (:meth:`~proxypointer.store.embedcache.EmbeddingCache.chunk_vectors`) is taken from the copy's metadata
        (cleared with the copy). Live chunks without a lexical row get theirs from the copy
        (:meth:`~proxypointer.store.chunkindex.ChunkTextIndex.add_from_records`), in the same
        transaction.
        """
        rows = [(r, None if r is None else record_content_hash(r), c) for c, r in records.items()]
        with self._database.transaction() as db:
            before = db.total_changes
            db.executemany("UPDATE chunks SET record = ?, content_hash = ? WHERE chunk_id = ?", rows)
            updated = db.total_changes - before
            ChunkTextIndex.add_from_records(db, {c: r for c, r in records.items() if r is not None})
            return updated

    def fill_content_hashes(self, batch: int = 5000) -> int:
        """Give live chunks written by an older version their content hash, from their record copies.

        Stores written before chunks kept their embedding-cache key read every vector from
        Chroma (:meth:`~proxypointer.store.embedcache.EmbeddingCache.chunk_vectors`); this reads the key from
        each record copy's metadata once (``''`` when it has none, so the row is not read again).
        Costs one indexed query when nothing is missing.

        Args:
            batch: Rows read and updated per transaction.

        Returns:
            Number of rows given a hash.
        """
        filled, after = 0, ""
        while True:
            rows = self._db.execute(
                "SELECT chunk_id, record FROM chunks WHERE content_hash IS NULL AND record IS NOT NULL"
                " AND chunk_id > ? ORDER BY chunk_id LIMIT ?",
                (after, batch),
            ).fetchall()
            if not rows:
                return filled
            after = rows[-1][0]
            with self._database.transaction() as db:
                db.executemany(
                    "UPDATE chunks SET content_hash = ? WHERE chunk_id = ? AND content_hash IS NULL",
                    [(record_content_hash(rec), cid) for cid, rec in rows],
                )
            filled += len(rows)

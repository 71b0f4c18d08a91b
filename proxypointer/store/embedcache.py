"""The embedding cache: each text's vector, by embedding model and content hash, in the registry.

One row per ``(model, content_hash)`` in the registry's ``embeddings`` table, the vector as
raw float32 bytes. Ingest writes each vector it encodes here before it reaches Chroma, so an
unchanged chunk is never encoded twice and ranking reads a live chunk's vector from here
(:meth:`EmbeddingCache.chunk_vectors`; each chunk row names its cache key). Shares the
registry's connection and transactions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .records import try_decode_record

if TYPE_CHECKING:
    from .db import Database

__all__ = ["EmbeddingCache"]

logger = logging.getLogger(__name__)


class EmbeddingCache:
    """Cached vectors of a store, reached as ``Registry.embeddings``.

    Args:
        database: The registry database whose SQLite file holds the cache (its ``embeddings`` table).

    """

    def __init__(self, database: Database) -> None:
        self._database = database

    def get(self, model: str, content_hashes: list[str]) -> dict[str, np.ndarray]:
        """Return cached vectors by content hash (float32 ``(dim,)`` each) for one model.

        A damaged row (not a blob, or not of the size of the model's other rows) is left out,
        so the caller encodes that text again and its new vector replaces the row.
        """
        out: dict[str, np.ndarray] = {}
        uniq = list(set(content_hashes))
        size = None
        for i in range(0, len(uniq), 500):
            part = uniq[i : i + 500]
            marks = ",".join("?" * len(part))
            for h, blob in self._database.db.execute(
                f"SELECT content_hash, vector FROM embeddings WHERE model = ? AND content_hash IN ({marks})",
                [model, *part],
            ):
                size = size or self._vector_size(model)
                if isinstance(blob, bytes) and len(blob) == size:
                    out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put(self, model: str, items: dict[str, np.ndarray]) -> None:
        """Store vectors by content hash for one model (the first write records their size)."""
        rows = [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()]
        with self._database.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO embeddings (model, content_hash, vector) VALUES (?, ?, ?)", rows)
            if rows:
                db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                           (f"vector_bytes:{model}", str(len(rows[0][2]))))

    def vector_bytes(self, model: str) -> int | None:
        """Bytes of one cached vector of ``model`` (dimension x 4), as first written; None if unknown."""
        value = self._database.get_meta(f"vector_bytes:{model}")
        return int(value) if value and value.isdigit() else None

    def _vector_size(self, model: str) -> int:
        """Return the bytes of one cached vector of ``model``.

        As recorded by :meth:`put`; for a store written before the size was recorded, the
        commonest size among 1,000 of its rows.
        """
        recorded = self.vector_bytes(model)
        if recorded:
            return recorded
        row = self._database.db.execute(
            "SELECT length(v), count(*) FROM (SELECT vector AS v FROM embeddings WHERE model = ?"
            " AND typeof(vector) = 'blob' LIMIT 1000) GROUP BY 1 ORDER BY 2 DESC LIMIT 1", (model,)).fetchone()
        return int(row[0]) if row and row[0] and row[0] % 4 == 0 else -1

    def chunk_vectors(self, model: str, chunk_ids: Sequence[str], dim: int) -> tuple[list[str], np.ndarray]:
        """Vectors of live chunks read from the embedding cache, by the content hash each was written with.

        The cache holds the very vector ingest wrote to Chroma for a chunk (``embed_chunks``
        writes the cached or freshly cached float32 vector); Chroma keeps its own normalised
        copy, equal to it within float32 rounding (at most 1.5e-8 apart at 1M chunks), so
        cosines agree to about 1e-7. At 1M chunks a read took 20-21 us per id against Chroma's
        36-44 us with the registry in the OS page cache, 227 against 55 with it on disk
        (docs/benchmarks.md, "Latency round").

        Args:
            model: The store's embedding model (the cache key's model part).
            chunk_ids: Chunk ids; ids not live, written without a content hash (an older
                version of this library, a distributed run), whose vector is not cached or
                whose cached row is not ``dim`` float32 values (damaged; logged, and
                ``check --repair`` drops it) are left out: read those from Chroma.
            dim: The model's embedding dimension.

        Returns:
            ``(ids, vectors)``: the ids found, in no set order, and float32 ``(len(ids), dim)``
            (``(0, 0)`` when none).
        """
        found: list[str] = []
        blobs: list[bytes] = []
        ids = list(dict.fromkeys(chunk_ids))
        size, damaged = 4 * dim, 0
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for cid, blob in self._database.db.execute(
                "SELECT c.chunk_id, e.vector FROM chunks c JOIN embeddings e"
                f" ON e.model = ? AND e.content_hash = c.content_hash WHERE c.chunk_id IN ({marks})",
                [model, *part],
            ):
                if isinstance(blob, bytes) and len(blob) == size:
                    found.append(cid)
                    blobs.append(blob)
                else:
                    damaged += 1
        if damaged:
            logger.warning("%s: %d cached embeddings are not %d float32 values; read from Chroma "
                           "(`proxypointer check --repair` drops them)", self._database.root, damaged, dim)
        if not blobs:
            return [], np.zeros((0, 0), dtype=np.float32)
        return found, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)

    def damaged(self, model: str, dim: int) -> list[str]:
        """Return the content hashes of cached embeddings of ``model`` that are not ``dim`` float32 values."""
        return [r[0] for r in self._database.db.execute(
            "SELECT content_hash FROM embeddings WHERE model = ? AND"
            " (typeof(vector) != 'blob' OR length(vector) != ?)", (model, 4 * dim))]

    def drop(self, model: str, content_hashes: Sequence[str]) -> None:
        """Delete cached embeddings of ``model`` by content hash."""
        with self._database.transaction() as db:
            db.executemany("DELETE FROM embeddings WHERE model = ? AND content_hash = ?",
                           [(model, h) for h in content_hashes])

    def live_content_hashes(self) -> tuple[set[str], list[str]]:
        """Content hashes (embedding-cache keys) of the live chunks, read from their record copies.

        Returns:
            ``(hashes, without)``: the hashes found, and the ids of live chunks whose copy is
            missing or unreadable (the caller reads those from Chroma).
        """
        hashes: set[str] = set()
        without: list[str] = []
        for cid, rec in self._database.db.execute("SELECT chunk_id, record FROM chunks"):
            decoded = try_decode_record(rec) if rec is not None else None
            h = decoded[1].get("content_hash") if decoded else None
            if isinstance(h, str):
                hashes.add(h)
            else:
                without.append(cid)
        return hashes, without

    def prune(self, model: str, keep: Iterable[str]) -> int:
        """Drop cached vectors that no live chunk uses: other models', and this model's not in ``keep``.

        Args:
            model: The store's embedding model (cache key part).
            keep: Content hashes of the live chunks.

        Returns:
            Number of cache entries removed.
        """
        with self._database.transaction() as db:
            db.execute("CREATE TEMP TABLE IF NOT EXISTS keep_hashes (h TEXT PRIMARY KEY)")
            db.execute("DELETE FROM keep_hashes")
            db.executemany("INSERT OR IGNORE INTO keep_hashes (h) VALUES (?)", ((h,) for h in keep))
            before = db.total_changes
            db.execute(
                "DELETE FROM embeddings WHERE model != ? OR content_hash NOT IN (SELECT h FROM keep_hashes)", (model,)
            )
            removed = db.total_changes - before
            db.execute("DELETE FROM keep_hashes")
        return removed

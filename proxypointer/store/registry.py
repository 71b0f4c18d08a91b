"""The registry: which version of each document is live, in one SQLite file its parts share.

One SQLite file (WAL) beside the store (:class:`~proxypointer.store.db.Database`). Its parts
get that database, never the registry, and use its one connection and its transactions:
:attr:`Registry.sources` (:class:`~proxypointer.store.sources.StoredSources`, the
content-addressed folder of stored texts), :attr:`Registry.embeddings`
(:class:`~proxypointer.store.embedcache.EmbeddingCache`), :attr:`Registry.lexical`
(:class:`~proxypointer.store.lexical.LexicalIndex`, the FTS5 chunk and title indexes, whose
rows change in the transaction that flips a version) and :attr:`Registry.chunks`
(:class:`~proxypointer.store.livechunks.LiveChunks`, the live chunk ids and their record
copies). Record copies are encoded by :mod:`proxypointer.store.records`.

The registry is the source of truth for *which* chunks are live: a Chroma hit counts only
if its ``version`` metadata equals the registry's live version of its document. Writing a new version therefore
never mixes versions: new chunks (new ids) are added first, the registry flips in one
transaction, then the old chunks are deleted. A crash at any point leaves the document at
its old or its new version; ``state`` records what the next run must repair.

Each live chunk's row also keeps a copy of its Chroma record (text and metadata, see
:func:`~proxypointer.store.records.encode_record`), written in the same transaction that makes it
live, so a query reads its k winners from SQLite (~0.1 ms) instead of from Chroma (~3.5 ms at
100k chunks, docs/benchmarks.md). Rows of stores written before that copy existed have
none: retrieval reads those from Chroma, and the next ingest or ``check --repair`` fills them in.
"""
from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..docids import normalize_doc_id
from .db import Database
from .embedcache import EmbeddingCache
from .lexical import LexicalIndex
from .livechunks import LiveChunks
from .records import decode_record, lexical_text
from .sources import StoredSources

__all__ = ["DocumentRecord", "Registry"]

logger = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One document as the registry knows it.

    Attributes:
        doc_id: Document id.
        source_path: Absolute path of the file it was read from.
        doc_hash: SHA-256 of the normalised text that is live ('' if none yet).
        version: Index version of the live chunks (content + pipeline settings).
        pending_hash: Version being written when a run stopped ('' when none).
        state: ``ready``, ``writing`` (new chunks may be partly written), ``cleanup`` (old
            chunks may remain), ``deleting``, or ``stale`` (live, but ``check --repair``
            found parts missing: the next ingest rewrites it).
        title: Display title.
        line_count: Lines of the stored text.
        n_sections: Nodes in its tree (windows for a document without headings).
        n_chunks: Live chunks.
        source_mtime: mtime of the file when indexed (seconds since the epoch).
        source_size: Size of the file when indexed, bytes.
        indexed_at: When the live version was committed (seconds since the epoch).

    """

    doc_id: str
    source_path: str
    doc_hash: str
    version: str
    pending_hash: str
    state: str
    title: str
    line_count: int
    n_sections: int
    n_chunks: int
    source_mtime: float
    source_size: int
    indexed_at: float


class Registry:
    """SQLite registry of document versions and live chunks, with the parts that share it.

    Attributes:
        root: The store folder.
        sources: Stored source texts, page maps and line token counts (``sources/``).
        embeddings: The embedding cache.
        lexical: The FTS5 chunk and title indexes.
        chunks: The live chunk ids and the copies of their Chroma records.

    Args:
        root: Store folder; ``registry.sqlite3`` and ``sources/`` live here.
        create: Create the folder and an empty registry when there is none (only ``ingest``
            does); False raises StoreNotFoundError instead, leaving nothing behind.

    Raises:
        StoreNotFoundError: If ``create`` is False and ``root`` holds no registry.
        StoreError: If the folder cannot be created or the database cannot be opened.

    """

    def __init__(self, root: str | Path, create: bool = True) -> None:
        self.database = Database(root, create)
        self.root = self.database.root
        self._db = self.database.db
        self.sources = StoredSources(self.database)
        self.embeddings = EmbeddingCache(self.database)
        self.lexical = LexicalIndex(self.database)
        self.chunks = LiveChunks(self.database)

    @property
    def db(self) -> sqlite3.Connection:
        """The registry's one SQLite connection (:attr:`Database.db`), autocommit.

        Read through it directly; write inside :meth:`transaction`.
        """
        return self._db

    def close(self) -> None:
        """Close the database connection."""
        self.database.close()

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One atomic write (:meth:`Database.transaction`): all of it commits or none."""
        return self.database.transaction()

    def get_meta(self, key: str) -> str | None:
        """Return a stored setting (e.g. ``model``), or None."""
        return self.database.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting."""
        self.database.set_meta(key, value)

    def generation(self) -> int:
        """Counter bumped by every change of which chunks are live (:meth:`Database.generation`)."""
        return self.database.generation()

    _bump = staticmethod(Database.bump)

    # -- documents ----------------------------------------------------------------------
    def get(self, doc_id: str) -> DocumentRecord | None:
        """Return the record of one document, or None."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return DocumentRecord(*row) if row else None

    def stored_id(self, doc_id: str) -> str | None:
        """Return the id under which the registry holds ``doc_id``, compared in Unicode NFC.

        A user types ids composed (NFC); a store built before ids were made NFC may hold one
        decomposed (``Cafe`` + U+0301, see :mod:`proxypointer.docids`).

        Args:
            doc_id: An id as typed.

        Returns:
            The stored id (``doc_id`` itself when held as given), or None when no record has it.
        """
        if self.get(doc_id) is not None:
            return doc_id
        wanted = normalize_doc_id(doc_id)
        if wanted != doc_id and self.get(wanted) is not None:
            return wanted
        return next((r.doc_id for r in self.documents() if normalize_doc_id(r.doc_id) == wanted), None)

    def documents(self) -> list[DocumentRecord]:
        """All records, ordered by doc_id."""
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM documents ORDER BY doc_id").fetchall()
        return [DocumentRecord(*r) for r in rows]

    def live_document_count(self) -> int:
        """Count the documents with a live version (those a query can find)."""
        return int(self._db.execute("SELECT COUNT(*) FROM documents WHERE version != ''").fetchone()[0])

    def live_versions(self, doc_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``doc_id -> (version, doc_hash)`` for the given ids that have a live version."""
        ids = list(set(doc_ids))
        out: dict[str, tuple[str, str]] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for doc_id, v, h in self._db.execute(
                f"SELECT doc_id, version, doc_hash FROM documents WHERE version != '' AND doc_id IN ({marks})", part
            ):
                out[doc_id] = (v, h)
        return out

    def doc_ids_for_source(self, source_path: str) -> list[str]:
        """Doc ids whose live version was read from ``source_path`` (an absolute, resolved path)."""
        rows = self._db.execute(
            "SELECT doc_id FROM documents WHERE source_path = ? AND version != '' ORDER BY doc_id", (source_path,)
        )
        return [r[0] for r in rows]

    def begin_write(self, doc_id: str, source_path: str, new_hash: str) -> None:
        """Mark a document as being written at ``new_hash`` (before any Chroma write)."""
        with self.transaction() as db:
            row = db.execute("SELECT doc_id FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
            if row:
                db.execute(
                    "UPDATE documents SET pending_hash = ?, state = 'writing' WHERE doc_id = ?", (new_hash, doc_id)
                )
            else:
                db.execute(
                    "INSERT INTO documents (doc_id, source_path, doc_hash, version, pending_hash, state, title,"
                    " line_count, n_sections, n_chunks, source_mtime, source_size, indexed_at)"
                    " VALUES (?, ?, '', '', ?, 'writing', '', 0, 0, 0, 0, 0, 0)",
                    (doc_id, source_path, new_hash),
                )

    def commit_version(
        self,
        doc_id: str,
        *,
        source_path: str,
        doc_hash: str,
        version: str,
        title: str,
        line_count: int,
        n_sections: int,
        chunk_ids: list[str],
        source_mtime: float,
        source_size: int,
        tree_json: str = "",
        records: Sequence[bytes] | None = None,
        lexical_texts: Sequence[str] | None = None,
        content_hashes: Sequence[str] | None = None,
    ) -> list[str]:
        """Make ``doc_hash`` the live version in one transaction.

        Args:
            doc_id: Document id.
            source_path: Absolute path of the file it was read from.
            doc_hash: SHA-256 of its normalised text (its stored source).
            version: Index version its chunk ids carry.
            title: Display title.
            line_count: Lines of the stored text.
            n_sections: Nodes in its tree (windows without headings).
            chunk_ids: Ids of the chunks of this version, all already written to Chroma.
            source_mtime: mtime of the file, seconds since the epoch.
            source_size: Size of the file, bytes.
            tree_json: Skeleton tree (:meth:`~proxypointer.tree.build.DocumentTree.to_json`).
            records: For each of ``chunk_ids``, in order, its Chroma record as made by
                :func:`~proxypointer.store.records.encode_record`; None stores no copy (retrieval then reads Chroma).
            lexical_texts: For each of ``chunk_ids``, in order, the text its lexical (FTS5)
                row indexes: what was embedded (``Chunk.embed_text``). None: taken from
                ``records`` (:func:`~proxypointer.store.records.lexical_text`); without either,
                the chunks get no lexical row until their records are copied in
                (:meth:`~proxypointer.store.livechunks.LiveChunks.set_chunk_records`).
            content_hashes: For each of ``chunk_ids``, in order, the embedding-cache key of the
                vector written to Chroma (``Chunk.content_hash``):
                :meth:`~proxypointer.store.embedcache.EmbeddingCache.chunk_vectors` then reads it from the cache. None:
                not known (queries read Chroma).

        Raises:
            ValueError: If ``records``, ``lexical_texts`` or ``content_hashes`` and ``chunk_ids``
                differ in length.

        Returns:
            Chunk ids of the previous version, which the caller deletes from Chroma before
            calling :meth:`finish` (state stays ``cleanup`` until then).

        """
        if records is not None and len(records) != len(chunk_ids):
            raise ValueError(f"{doc_id}: {len(records)} records for {len(chunk_ids)} chunks")
        if lexical_texts is not None and len(lexical_texts) != len(chunk_ids):
            raise ValueError(f"{doc_id}: {len(lexical_texts)} lexical texts for {len(chunk_ids)} chunks")
        if content_hashes is not None and len(content_hashes) != len(chunk_ids):
            raise ValueError(f"{doc_id}: {len(content_hashes)} content hashes for {len(chunk_ids)} chunks")
        none = [None] * len(chunk_ids)
        rows = zip(chunk_ids, records if records is not None else none,
                   content_hashes if content_hashes is not None else none, strict=True)
        if lexical_texts is None and records is not None:
            lexical_texts = [lexical_text(*decode_record(r)) for r in records]
        with self.transaction() as db:
            self.lexical.sync(db)  # the lexical index in step before this flip (older stores, writers)
            old = [r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ?", (doc_id,))]
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            db.executemany(
                "INSERT INTO chunks (chunk_id, doc_id, record, content_hash) VALUES (?, ?, ?, ?)",
                [(cid, doc_id, rec, h) for cid, rec, h in rows],
            )
            db.execute(
                "UPDATE documents SET source_path = ?, doc_hash = ?, version = ?, pending_hash = '',"
                " state = 'cleanup',"
                " title = ?, line_count = ?, n_sections = ?, n_chunks = ?, source_mtime = ?, source_size = ?,"
                " indexed_at = ?, tree_json = ? WHERE doc_id = ?",
                (source_path, doc_hash, version, title, line_count, n_sections, len(chunk_ids), source_mtime,
                 source_size, time.time(), tree_json, doc_id),
            )
            texts = None if lexical_texts is None else list(zip(chunk_ids, lexical_texts, strict=True))
            self.lexical.replace_document(db, doc_id, version, tree_json, texts)
            self._bump(db)
            self.lexical.mark_synced(db)
        new = set(chunk_ids)
        return [c for c in old if c not in new]

    def touch(self, doc_id: str, source_path: str, source_mtime: float, source_size: int) -> None:
        """Record a new path/mtime for an unchanged document (no re-index needed).

        Writes only when something differs, so a sync of an unchanged corpus writes nothing.
        """
        self._db.execute(
            "UPDATE documents SET source_path = ?, source_mtime = ?, source_size = ? WHERE doc_id = ?"
            " AND (source_path != ? OR source_mtime != ? OR source_size != ?)",
            (source_path, source_mtime, source_size, doc_id, source_path, source_mtime, source_size),
        )

    def finish(self, doc_id: str) -> None:
        """Mark a document ``ready`` (its old chunks are gone)."""
        self._db.execute("UPDATE documents SET state = 'ready', pending_hash = '' WHERE doc_id = ?", (doc_id,))

    def mark_stale(self, doc_id: str) -> None:
        """Mark a live document for re-indexing.

        Used when ``check --repair`` found chunks or its stored source missing: it stays
        retrievable, and the next ingest of its file rewrites it even though the file is
        unchanged.
        """
        self._db.execute("UPDATE documents SET state = 'stale' WHERE doc_id = ? AND version != ''", (doc_id,))

    def begin_delete(self, doc_id: str) -> None:
        """Mark a document as being deleted; retrieval stops returning it at once."""
        with self.transaction() as db:
            in_step = self.lexical.in_step(db)
            db.execute("UPDATE documents SET state = 'deleting', version = '' WHERE doc_id = ?", (doc_id,))
            self._bump(db)
            if in_step:  # which chunks are listed is unchanged: the lexical index stays in step
                self.lexical.mark_synced(db)

    def remove(self, doc_id: str) -> None:
        """Forget a document (after its chunks were deleted from Chroma), with its lexical rows."""
        with self.transaction() as db:
            in_step = self.lexical.in_step(db)
            self.lexical.drop_document(db, doc_id)
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._bump(db)
            if in_step:
                self.lexical.mark_synced(db)

    # -- the chunks table (:attr:`chunks`): names the query path and scripts call ----------
    def chunk_ids(self, doc_id: str | None = None) -> set[str]:
        """Live chunk ids of one document, or of all documents (:meth:`LiveChunks.chunk_ids`)."""
        return self.chunks.chunk_ids(doc_id)

    def live_chunk_ids(self, doc_ids: Iterable[str], limit: int) -> list[str] | None:
        """Live chunk ids of several documents, None past ``limit`` (:meth:`LiveChunks.live_chunk_ids`)."""
        return self.chunks.live_chunk_ids(doc_ids, limit)

    def chunk_records(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """``chunk_id -> (text, metadata)`` of usable record copies (:meth:`LiveChunks.chunk_records`)."""
        return self.chunks.chunk_records(chunk_ids)

    def tree_json(self, doc_id: str) -> str:
        """Return the stored skeleton tree (JSON) of the live version, '' if none."""
        row = self._db.execute("SELECT tree_json FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return row[0] if row else ""

    def live_tree(self, doc_id: str) -> tuple[str, str, str, int, str] | None:
        """Return ``(version, doc_hash, title, line_count, tree_json)`` of the live version, read at once.

        None when the document has no live version.
        """
        row = self._db.execute(
            "SELECT version, doc_hash, title, line_count, tree_json FROM documents WHERE doc_id = ? AND version != ''",
            (doc_id,),
        ).fetchone()
        return (row[0], row[1], row[2], int(row[3]), row[4]) if row else None

    def stats(self) -> dict[str, int]:
        """Count documents, sections, chunks, cached embeddings and documents not ready.

        ``chunks_without_record_copy``: live chunks whose record queries read from Chroma
        because the registry has no copy yet (an older store, until it is filled).
        """
        docs, sections, chunks = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(n_sections), 0), COALESCE(SUM(n_chunks), 0) FROM documents"
            " WHERE version != ''"
        ).fetchone()
        pending = self._db.execute("SELECT COUNT(*) FROM documents WHERE state NOT IN ('ready', 'stale')").fetchone()[0]
        cached = self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        no_copy = self._db.execute("SELECT COUNT(*) FROM chunks WHERE record IS NULL").fetchone()[0]
        return {"documents": docs, "sections": sections, "chunks": chunks, "cached_embeddings": cached,
                "not_ready": pending, "chunks_without_record_copy": no_copy}


_COLUMNS = (
    "doc_id, source_path, doc_hash, version, pending_hash, state, title, line_count, n_sections, n_chunks,"
    " source_mtime, source_size, indexed_at"
)

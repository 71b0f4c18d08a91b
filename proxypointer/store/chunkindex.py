"""The chunk index of a store: BM25 over what each live chunk embedded (SQLite FTS5).

``chunks_fts`` holds one row per live chunk, its breadcrumb and text as embedded
(:func:`~proxypointer.store.records.lexical_text`); ``lexical_rows`` maps a chunk id to its
FTS5 rowid and finds a document's rows by doc_id (schema in :mod:`proxypointer.store.db`).
Rows are written in the transaction that makes a version live and deleted with it
(:class:`~proxypointer.store.lexical.LexicalIndex` calls the write side here).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StoreError
from .fts import LEXICAL_TOKENIZER, TermPlanner, with_doc_filter
from .records import lexical_text, try_decode_record

if TYPE_CHECKING:
    from .db import Database

__all__ = ["ChunkTextIndex"]

logger = logging.getLogger(__name__)


class ChunkTextIndex:
    """BM25 search of the live chunks' lexical rows (``chunks_fts``), and its writes.

    Reads run on the registry's connection; the write side (static methods) takes the
    connection of a transaction the registry holds, so lexical rows change in the same
    transaction as the chunks they index.

    Args:
        database: The registry database whose SQLite file holds the index.
        planner: Plans a query's MATCH expression (shared with the title index).

    """

    def __init__(self, database: Database, planner: TermPlanner) -> None:
        self._database = database
        self._planner = planner

    def search(
        self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 search of the live chunks' lexical rows (FTS5), best first.

        Args:
            terms: Words, any of which may match (an FTS5 ``OR`` query); each is quoted, so
                FTS5 syntax in them (``AND``, ``NEAR``, ``col:``, ``*``, ``"``) is plain text. The
                table's tokenizer (:data:`~proxypointer.store.fts.LEXICAL_TOKENIZER`) folds and
                stems them as it did the indexed text. In a large store the commonest are left out
                (:data:`~proxypointer.store.fts.LEXICAL_MAX_ROWS`).
            n: Most hits returned.
            doc_ids: Only chunks of these documents; an empty list matches nothing.

        Returns:
            ``(chunk_id, score)`` pairs, score = ``-bm25()`` of SQLite's FTS5 (BM25 with
            k1 = 1.2, b = 0.75; higher is better).

        Raises:
            StoreError: If SQLite fails.
        """
        match = self._planner.match(terms, n, doc_ids)
        if match is None:
            return []
        sql = (
            "SELECT r.chunk_id, -bm25(chunks_fts) FROM chunks_fts JOIN lexical_rows r ON r.id = chunks_fts.rowid"
            " WHERE chunks_fts MATCH ?"
        )
        sql, args = with_doc_filter(sql, [match], doc_ids)
        sql += " ORDER BY bm25(chunks_fts) LIMIT ?"
        args.append(n)
        try:
            return [(cid, float(score)) for cid, score in self._database.db.execute(sql, args)]
        except sqlite3.Error as err:
            raise StoreError(f"{self._database.root}: lexical search failed ({err})") from err

    def rows(self, doc_id: str | None = None) -> dict[str, str]:
        """``chunk_id -> indexed text`` of the lexical rows of one document, or of all (for ``check``)."""
        self._planner.ensure()
        sql = "SELECT r.chunk_id, f.text FROM lexical_rows r JOIN chunks_fts f ON f.rowid = r.id"
        db = self._database.db
        return dict(db.execute(sql + " WHERE r.doc_id = ?", (doc_id,)) if doc_id else db.execute(sql))

    # -- writes, inside the registry's transactions ----------------------------------
    @staticmethod
    def prepare(db: sqlite3.Connection, root: Path) -> bool:
        """Inside a write transaction: create the FTS5 table, or rebuild it for a new tokenizer.

        A store written before the table existed gets an empty one (and its stray
        ``lexical_rows`` are cleared); a table built with another tokenizer than
        :data:`~proxypointer.store.fts.LEXICAL_TOKENIZER` is rebuilt from its own stored text.

        Args:
            db: The connection of the registry's open transaction.
            root: The store folder (for the log line).

        Returns:
            Whether the table existed before (False: just created, its rows still to add).
        """
        exists = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
        tokenizer = db.execute("SELECT value FROM meta WHERE key = 'lexical_tokenizer'").fetchone()
        if not exists:
            db.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize = '{LEXICAL_TOKENIZER}')")
            db.execute("DELETE FROM lexical_rows")
        elif tokenizer is None or tokenizer[0] != LEXICAL_TOKENIZER:
            logger.info("%s: rebuilding the lexical index with tokenizer %r", root, LEXICAL_TOKENIZER)
            db.execute("DROP TABLE IF EXISTS chunks_fts_new")
            db.execute(f"CREATE VIRTUAL TABLE chunks_fts_new USING fts5(text, tokenize = '{LEXICAL_TOKENIZER}')")
            db.execute("INSERT INTO chunks_fts_new (rowid, text) SELECT rowid, text FROM chunks_fts")
            db.execute("DROP TABLE chunks_fts")
            db.execute("ALTER TABLE chunks_fts_new RENAME TO chunks_fts")
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('lexical_tokenizer', ?)", (LEXICAL_TOKENIZER,))
        return exists is not None

    @staticmethod
    def bring_in_step(db: sqlite3.Connection, root: Path) -> None:
        """Inside a write transaction: rows for exactly the live chunks (after foreign writers).

        Drops the rows of chunks no longer live and adds rows for live chunks from their
        record copies (:meth:`add_from_records`); chunks without a record copy get their row
        when the copy is written
        (:meth:`~proxypointer.store.livechunks.LiveChunks.set_chunk_records`).

        Args:
            db: The connection of the registry's open transaction.
            root: The store folder (for the log line).
        """
        gone = db.execute("SELECT id FROM lexical_rows WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)").fetchall()
        if gone:
            db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", gone)
            db.executemany("DELETE FROM lexical_rows WHERE id = ?", gone)
        rows = db.execute(
            "SELECT chunk_id, record FROM chunks WHERE record IS NOT NULL"
            " AND chunk_id NOT IN (SELECT chunk_id FROM lexical_rows)"
        )
        added = ChunkTextIndex.add_from_records(db, dict(rows.fetchall()))
        if gone or added:
            logger.info("%s: lexical index brought in step (%d rows added, %d removed)", root, added, len(gone))

    @staticmethod
    def add_from_records(db: sqlite3.Connection, records: dict[str, bytes]) -> int:
        """Add lexical rows, from record copies, for live chunks that have none; returns how many."""
        if not records:
            return 0
        ids = list(records)
        have: set[str] = set()
        live: dict[str, str] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            found = db.execute(f"SELECT chunk_id FROM lexical_rows WHERE chunk_id IN ({marks})", part)
            have.update(r[0] for r in found)
            live.update(db.execute(f"SELECT chunk_id, doc_id FROM chunks WHERE chunk_id IN ({marks})", part))
        by_doc: dict[str, list[tuple[str, str]]] = {}
        for cid in ids:
            if cid in live and cid not in have:
                decoded = try_decode_record(records[cid])
                if decoded is not None:
                    by_doc.setdefault(live[cid], []).append((cid, lexical_text(*decoded)))
        for doc_id, rows in by_doc.items():
            ChunkTextIndex.insert_document(db, doc_id, rows)
        return sum(len(r) for r in by_doc.values())

    @staticmethod
    def insert_document(db: sqlite3.Connection, doc_id: str, rows: Sequence[tuple[str, str]]) -> None:
        """Insert ``(chunk_id, text)`` lexical rows of one document (none may exist yet)."""
        db.executemany("INSERT INTO lexical_rows (chunk_id, doc_id) VALUES (?, ?)", [(c, doc_id) for c, _ in rows])
        text = dict(rows)
        ids = db.execute("SELECT id, chunk_id FROM lexical_rows WHERE doc_id = ?", (doc_id,)).fetchall()
        db.executemany(
            "INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", [(i, text[c]) for i, c in ids if c in text]
        )

    @staticmethod
    def delete_document(db: sqlite3.Connection, doc_id: str) -> None:
        """Delete a document's lexical rows (no-op before the FTS5 table exists)."""
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone():
            db.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM lexical_rows WHERE doc_id = ?)", (doc_id,)
            )
        db.execute("DELETE FROM lexical_rows WHERE doc_id = ?", (doc_id,))

"""The lexical indexes of a store: BM25 over live chunks and over section titles (SQLite FTS5).

Two FTS5 tables in the registry's SQLite file, written in the transaction that makes a
document version live and deleted with it, through the registry's connection:

* ``chunks_fts``: one row per live chunk, what was embedded (breadcrumb + chunk text), found
  by chunk id through ``lexical_rows``
  (:class:`~proxypointer.store.chunkindex.ChunkTextIndex`, :meth:`LexicalIndex.search`);
* ``titles_fts``: one row per heading of each live document, the words of its title path, with
  the chunk ids of its subtree in ``title_rows``
  (:class:`~proxypointer.store.titleindex.TitleIndex`, :meth:`LexicalIndex.title_search`).

Both share a query planner (:class:`~proxypointer.store.fts.TermPlanner`) and one mark of
being in step with the chunks table (:func:`in_step`). A store written by an older version of
this library, or changed since by a writer that does not keep these tables, is brought in step
from the record copies and stored trees on first use (:func:`sync_indexes`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .chunkindex import ChunkTextIndex
from .fts import LEXICAL_MAX_ROWS, LEXICAL_MAX_ROWS_FILTERED, LEXICAL_TOKENIZER, TermPlanner
from .titleindex import TITLE_INDEX, TitleHit, TitleIndex

if TYPE_CHECKING:
    from .db import Database

__all__ = [
    "LEXICAL_MAX_ROWS",
    "LEXICAL_MAX_ROWS_FILTERED",
    "LEXICAL_TOKENIZER",
    "TITLE_INDEX",
    "ChunkTextIndex",
    "LexicalIndex",
    "TitleHit",
    "TitleIndex",
    "ensure_in_step",
    "in_step",
    "mark_synced",
    "sync_indexes",
]


def in_step(db: sqlite3.Connection) -> bool:
    """Whether every change of live chunks since the lexical indexes were synced went through them.

    Both the chunk index and the title index: a writer of an older version keeps neither
    (or only the chunk index) in step.
    """
    row = db.execute(
        "SELECT (SELECT value FROM meta WHERE key = 'lexical_generation'),"
        " (SELECT value FROM meta WHERE key = 'title_generation'),"
        " (SELECT value FROM meta WHERE key = 'generation')"
    ).fetchone()
    now = row[2] or "0"
    return row[0] is not None and row[0] == now and row[1] == now


def mark_synced(db: sqlite3.Connection) -> None:
    """Record that both lexical indexes match the chunks table at the current generation."""
    for key in ("lexical_generation", "title_generation"):
        db.execute(
            "INSERT OR REPLACE INTO meta (key, value)"
            " VALUES (?, COALESCE((SELECT value FROM meta WHERE key = 'generation'), '0'))",
            (key,),
        )


def sync_indexes(db: sqlite3.Connection, root: Path) -> None:
    """Inside a write transaction: make the lexical indexes match the chunks table.

    Creates the chunk index's FTS5 table (a store written before it existed), rebuilds it from
    its own stored text when :data:`~proxypointer.store.fts.LEXICAL_TOKENIZER` changed, and,
    when a writer that does not keep it (an older version) changed chunks since the last sync,
    drops the rows of chunks no longer live and adds rows for live chunks from their record
    copies (:meth:`ChunkTextIndex.bring_in_step`). The title index is rebuilt from the live
    documents' stored trees when :data:`~proxypointer.store.titleindex.TITLE_INDEX` changed (or
    the store predates it), and otherwise brought in step the same way (rows of versions no
    longer live dropped, live documents without rows given theirs).

    Args:
        db: The connection of the registry's open transaction.
        root: The store folder (for log lines).
    """
    existed = ChunkTextIndex.prepare(db, root)
    TitleIndex.prepare(db, root)
    if existed and in_step(db):
        return
    ChunkTextIndex.bring_in_step(db, root)
    TitleIndex.bring_in_step(db)
    mark_synced(db)


def ensure_in_step(database: Database) -> None:
    """Create, rebuild or bring in step the lexical indexes when needed (one read when they are).

    Args:
        database: The registry database; a sync runs in a transaction of its own.
    """
    if (
        in_step(database.db)
        and database.get_meta("lexical_tokenizer") == LEXICAL_TOKENIZER
        and database.get_meta("title_index") == TITLE_INDEX
    ):
        return
    with database.transaction() as db:
        sync_indexes(db, database.root)


class LexicalIndex:
    """The chunk and title indexes of a store, reached as ``Registry.lexical``.

    Reads run on the registry's connection; the write side (:meth:`sync`,
    :meth:`replace_document`, :meth:`drop_document`, :meth:`add_from_records`) takes the
    connection of a transaction the registry holds, so lexical rows change in the same
    transaction as the chunks they index.

    Attributes:
        chunks: BM25 over the live chunks (:class:`ChunkTextIndex`).
        titles: BM25 over the live documents' section titles (:class:`TitleIndex`).

    Args:
        database: The registry database whose SQLite file holds the indexes.

    """

    def __init__(self, database: Database) -> None:
        self._root = database.root
        self._planner = TermPlanner(database, partial(ensure_in_step, database))
        self.chunks = ChunkTextIndex(database, self._planner)
        self.titles = TitleIndex(database, self._planner)

    def search(
        self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 search of the live chunks (:meth:`ChunkTextIndex.search`): ``(chunk_id, score)``, best first."""
        return self.chunks.search(terms, n, doc_ids)

    def title_search(self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None = None) -> list[TitleHit]:
        """BM25 search of the live section titles (:meth:`TitleIndex.search`), best first."""
        return self.titles.search(terms, n, doc_ids)

    def rows(self, doc_id: str | None = None) -> dict[str, str]:
        """``chunk_id -> indexed text`` of one document's lexical rows, or of all (:meth:`ChunkTextIndex.rows`)."""
        return self.chunks.rows(doc_id)

    def document_frequencies(self, terms: Sequence[str], table: str = "chunks") -> dict[str, int]:
        """Rows of the ``chunks`` or ``titles`` index holding each term (:meth:`TermPlanner.document_frequencies`)."""
        return self._planner.document_frequencies(terms, table)

    # -- writes, inside the registry's transactions ----------------------------------
    in_step = staticmethod(in_step)
    mark_synced = staticmethod(mark_synced)
    add_from_records = staticmethod(ChunkTextIndex.add_from_records)

    def sync(self, db: sqlite3.Connection) -> None:
        """Inside a write transaction: make the lexical indexes match the chunks table (:func:`sync_indexes`)."""
        sync_indexes(db, self._root)

    @staticmethod
    def replace_document(
        db: sqlite3.Connection, doc_id: str, version: str, tree_json: str,
        rows: Sequence[tuple[str, str]] | None,
    ) -> None:
        """Inside a write transaction: give a document the rows of its new live version.

        Call it after the version's chunks are in the chunks table (the title rows read them).

        Args:
            db: The connection of the registry's open transaction.
            doc_id: Document id.
            version: The version being made live.
            tree_json: Its skeleton tree (:meth:`~proxypointer.tree.build.DocumentTree.to_json`).
            rows: ``(chunk_id, text)`` of its chunk rows; None gives its chunks no row (they
                get theirs when their record copies are written, :meth:`add_from_records`).
        """
        ChunkTextIndex.delete_document(db, doc_id)
        if rows is not None:
            ChunkTextIndex.insert_document(db, doc_id, rows)
        TitleIndex.delete_document(db, doc_id)
        TitleIndex.insert_document(db, doc_id, version, tree_json)

    @staticmethod
    def drop_document(db: sqlite3.Connection, doc_id: str) -> None:
        """Inside a write transaction: delete a document's chunk and title rows."""
        ChunkTextIndex.delete_document(db, doc_id)
        TitleIndex.delete_document(db, doc_id)

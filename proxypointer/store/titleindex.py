"""The title index of a store: BM25 over the title paths of the live documents' headings (FTS5).

``titles_fts`` holds one row per heading of each live document, the words of its title path
(:func:`~proxypointer.store.terms.title_field`); ``title_rows`` gives each row its document,
version, node and the chunk ids of its subtree (schema in :mod:`proxypointer.store.db`). Rows
are written in the transaction that makes a version live and deleted with it
(:class:`~proxypointer.store.lexical.LexicalIndex` calls the write side here).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..chunk.ids import SEPARATOR, chunk_id, parse_chunk_id
from ..errors import StoreError
from ..tree.build import tree_rows
from .fts import LEXICAL_TOKENIZER, TermPlanner, with_doc_filter
from .terms import title_field

if TYPE_CHECKING:
    from .db import Database

__all__ = ["TITLE_INDEX", "TitleHit", "TitleIndex"]

logger = logging.getLogger(__name__)

#: How the title index (``titles_fts``: one row per heading of each live document, its title
#: path's words, :func:`~proxypointer.store.terms.title_field`) is built: a version of the text
#: builder and the FTS5 tokenizer, the same Porter stemming as the chunk index (``taxes`` and
#: ``tax`` meet, ``liabilities`` and ``liability``). Version 2 keeps each row's subtree chunk ids
#: (``title_rows.chunks``), so a query reads no tree. A store whose title index was built
#: otherwise (or not at all) is rebuilt from the live documents' stored trees on first use.
#: Version 3 leaves a document title heading out of its descendants' paths (:func:`_title_rows`).
TITLE_INDEX = "title-path-words-3 " + LEXICAL_TOKENIZER


#: A title row as the search reads it: ``(score, doc_id, version, node_id, chunks)``.
_TitleRow = tuple[float, str, str, str, str | None]


class TitleHit(NamedTuple):
    """One section found by :meth:`TitleIndex.search`.

    Attributes:
        doc_id: Document id.
        version: The live version whose tree the row was taken from.
        node_id: The heading's node id.
        score: ``-bm25()`` of its title path (higher is better).
        chunk_ids: Live chunk ids of the node's subtree (the node and its descendants, in
            document order), kept with the row when the version went live; ``None`` for a row
            written by an older version of this library (read the tree instead).
    """

    doc_id: str
    version: str
    node_id: str
    score: float
    chunk_ids: tuple[str, ...] | None


class TitleIndex:
    """BM25 search of the live documents' section titles (``titles_fts``), and its writes.

    Reads run on the registry's connection; the write side (static methods) takes the
    connection of a transaction the registry holds, so title rows change in the same
    transaction as the version they were taken from.

    Args:
        database: The registry database whose SQLite file holds the index.
        planner: Plans a query's MATCH expression (shared with the chunk index).

    """

    def __init__(self, database: Database, planner: TermPlanner) -> None:
        self._database = database
        self._planner = planner

    def search(
        self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None = None
    ) -> list[TitleHit]:
        """BM25 search of the live documents' section titles (the title index, FTS5), best first.

        Each heading of a live document has one row: the words of its title path, from the
        document's outermost heading down to it (:func:`~proxypointer.store.terms.title_field`;
        a document title heading only in its own row, :func:`_document_title_heading`),
        stemmed as the chunk index is (:data:`TITLE_INDEX`). So "balance sheet" finds
        ``ITEM 8 > CONSOLIDATED BALANCE SHEETS`` whatever the section's text says.

        Args:
            terms: Words, any of which may match (quoted, as in
                :meth:`~proxypointer.store.chunkindex.ChunkTextIndex.search`). In a large store the
                commonest are left out (:data:`~proxypointer.store.fts.LEXICAL_MAX_ROWS` rows scored).
            n: Most hits returned.
            doc_ids: Only sections of these documents; an empty list matches nothing.

        Returns:
            :class:`TitleHit` rows of live versions only, best first.

        Raises:
            StoreError: If SQLite fails.
        """
        match = self._planner.match(terms, n, doc_ids, "titles")
        if match is None:
            return []
        try:
            live = self._rows_of(match, n, doc_ids) if doc_ids is not None else self._rows_best(match, n)
        except sqlite3.Error as err:
            raise StoreError(f"{self._database.root}: title search failed ({err})") from err
        return [
            TitleHit(d, v, node, float(score), None if chunks is None else
                     tuple(chunk_id(d, v, *tail.rsplit(SEPARATOR, 1)) for tail in chunks.split()))
            for score, d, v, node, chunks in live
        ]

    def _rows_best(self, match: str, n: int) -> list[_TitleRow]:
        """Return the ``n`` best live title rows of the whole store, best first.

        Ranked inside the FTS5 index first, then joined and checked for liveness: joining every
        matching row before the sort cost half of the search at 230k title rows (p50 17.8 ->
        8.1 ms for the questions of scripts/bench.py's query phase at 1M chunks;
        docs/benchmarks.md, "Latency round"). Rows of documents being deleted are read past:
        the inner limit grows until ``n`` live rows or every match came back.
        """
        sql = (
            "SELECT -f.score, r.doc_id, r.version, r.node_id, r.chunks, d.doc_id IS NOT NULL FROM"
            " (SELECT rowid AS id, bm25(titles_fts) AS score FROM titles_fts WHERE titles_fts MATCH ?"
            " ORDER BY score, rowid LIMIT ?) f JOIN title_rows r ON r.id = f.id"
            " LEFT JOIN documents d ON d.doc_id = r.doc_id AND d.version = r.version"
            " ORDER BY f.score, f.id"
        )
        limit = 2 * n
        while True:
            rows = self._database.db.execute(sql, (match, limit)).fetchall()
            live = [row[:5] for row in rows if row[5]]
            if len(live) >= n or len(rows) < limit:
                return live[:n]
            limit *= 4

    def _rows_of(self, match: str, n: int, doc_ids: Sequence[str]) -> list[_TitleRow]:
        """Return the ``n`` best live title rows of some documents, best first.

        Joined before the sort: the rows of a few documents are few, and a document filter
        inside the FTS5 ranking (a rowid subquery) made SQLite evaluate the match row by row
        (FinanceBench store, doc-scope questions: p50 about 1 ms joined, 50 ms as a subquery;
        docs/benchmarks.md, "Latency round").
        """
        sql = (
            "SELECT -bm25(titles_fts), r.doc_id, r.version, r.node_id, r.chunks FROM titles_fts"
            " JOIN title_rows r ON r.id = titles_fts.rowid"
            " JOIN documents d ON d.doc_id = r.doc_id AND d.version = r.version"
            " WHERE titles_fts MATCH ?"
        )
        sql, args = with_doc_filter(sql, [match], doc_ids)
        return self._database.db.execute(sql + " ORDER BY bm25(titles_fts), r.id LIMIT ?", [*args, n]).fetchall()

    # -- writes, inside the registry's transactions ----------------------------------
    @staticmethod
    def prepare(db: sqlite3.Connection, root: Path) -> None:
        """Inside a write transaction: rebuild the index when :data:`TITLE_INDEX` changed (or it is absent).

        Args:
            db: The connection of the registry's open transaction.
            root: The store folder (for the log line).
        """
        titles = db.execute("SELECT value FROM meta WHERE key = 'title_index'").fetchone()
        if titles is None or titles[0] != TITLE_INDEX:
            TitleIndex.rebuild(db, root)

    @staticmethod
    def rebuild(db: sqlite3.Connection, root: Path) -> None:
        """Inside a write transaction: (re)create the title index from every live document's tree."""
        logger.info("%s: building the section title index (%s)", root, TITLE_INDEX)
        db.execute("DROP TABLE IF EXISTS titles_fts")
        db.execute(f"CREATE VIRTUAL TABLE titles_fts USING fts5(title, tokenize = '{LEXICAL_TOKENIZER}')")
        db.execute("DELETE FROM title_rows")
        rows = db.execute("SELECT doc_id, version, tree_json FROM documents WHERE version != ''").fetchall()
        for doc_id, version, tree_json in rows:
            TitleIndex.insert_document(db, doc_id, version, tree_json)
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('title_index', ?)", (TITLE_INDEX,))

    @staticmethod
    def bring_in_step(db: sqlite3.Connection) -> None:
        """Inside a write transaction: title rows for exactly the live versions (after foreign writers)."""
        stale = db.execute(
            "SELECT DISTINCT r.doc_id FROM title_rows r LEFT JOIN documents d ON d.doc_id = r.doc_id"
            " WHERE d.version IS NULL OR d.version != r.version"
        ).fetchall()
        for (doc_id,) in stale:
            TitleIndex.delete_document(db, doc_id)
        missing = db.execute(
            "SELECT doc_id, version, tree_json FROM documents WHERE version != ''"
            " AND doc_id NOT IN (SELECT doc_id FROM title_rows)"
        ).fetchall()
        for doc_id, version, tree_json in missing:
            TitleIndex.insert_document(db, doc_id, version, tree_json)

    @staticmethod
    def insert_document(db: sqlite3.Connection, doc_id: str, version: str, tree_json: str) -> None:
        """Insert the title rows of one document version (none may exist; no-op before the table exists).

        Reads the document's live chunk ids from the chunks table: call it after they are written.

        Args:
            db: The connection of the registry's open transaction.
            doc_id: Document id.
            version: The version the rows are taken from.
            tree_json: Its skeleton tree (:meth:`~proxypointer.tree.build.DocumentTree.to_json`).
        """
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'titles_fts'").fetchone():
            return
        chunk_ids = [r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ?", (doc_id,))]
        rows = _title_rows(tree_json, _chunks_by_node(chunk_ids, version))
        if not rows:
            return
        first = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM title_rows").fetchone()[0]
        db.executemany(
            "INSERT INTO title_rows (id, doc_id, version, node_id, chunks) VALUES (?, ?, ?, ?, ?)",
            [(first + i, doc_id, version, node_id, chunks) for i, (node_id, _, chunks) in enumerate(rows)],
        )
        db.executemany(
            "INSERT INTO titles_fts (rowid, title) VALUES (?, ?)",
            [(first + i, text) for i, (_, text, _) in enumerate(rows)],
        )

    @staticmethod
    def delete_document(db: sqlite3.Connection, doc_id: str) -> None:
        """Delete a document's title rows (no-op before the title index exists)."""
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'titles_fts'").fetchone():
            db.execute("DELETE FROM titles_fts WHERE rowid IN (SELECT id FROM title_rows WHERE doc_id = ?)", (doc_id,))
        db.execute("DELETE FROM title_rows WHERE doc_id = ?", (doc_id,))


def _chunks_by_node(chunk_ids: Iterable[str], version: str) -> dict[str, list[str]]:
    """``node_id -> ["node_id::index", ...]`` of the chunk ids of one version, in chunk order.

    Chunk ids read ``doc_id::version::node_id::index`` (:func:`~proxypointer.chunk.chunker.chunk_document`);
    ids of other versions are left out.
    """
    out: dict[str, list[str]] = {}
    for cid in sorted(chunk_ids):
        parts = parse_chunk_id(cid)
        if parts is not None and parts.version == version:
            out.setdefault(parts.node_id, []).append(parts.tail)
    return out


def _title_rows(tree_json: str, chunks: dict[str, list[str]] | None = None) -> list[tuple[str, str, str]]:
    """``(node_id, title field, subtree chunks)`` of each heading of a stored tree.

    ``tree_json`` holds :meth:`~proxypointer.tree.build.DocumentTree.to_json`'s rows. The title field is the
    words of the title path, outermost heading first (:func:`~proxypointer.store.terms.title_field`);
    headings without a word get no row. The subtree chunks are the chunk id tails
    (``node_id::index``, from ``chunks``, as :func:`_chunks_by_node` gives them) of the node and
    its descendants, depth first in the tree's order (as
    :meth:`~proxypointer.retrieve.live.LiveTree.subtree_chunks`), joined by spaces.
    """
    try:
        nodes = tree_rows(tree_json)
    except ValueError:
        return []
    chunks = chunks or {}
    title = {n["node_id"]: n["title"] for n in nodes}
    parent = {n["node_id"]: n["parent_id"] for n in nodes}
    children: dict[str, list[str]] = {}
    for n in nodes:
        if n["parent_id"] in title:
            children.setdefault(n["parent_id"], []).append(n["node_id"])
    doc_title = _document_title_heading(nodes)
    out = []
    for n in nodes:
        if n["kind"] != "heading":
            continue
        path, node = [], n["node_id"]
        while node and node in title and len(path) < 64:
            if node != doc_title or node == n["node_id"]:
                path.append(title[node])
            node = parent[node]
        text = title_field(reversed(path))
        if text:
            tails, todo, seen = [], [n["node_id"]], set()
            while todo:
                node = todo.pop()
                if node in seen:  # a malformed tree cannot loop
                    continue
                seen.add(node)
                tails.extend(chunks.get(node, ()))
                todo.extend(reversed(children.get(node, ())))
            out.append((n["node_id"], text, " ".join(tails)))
    return out


def _document_title_heading(nodes: Sequence[dict[str, Any]]) -> str | None:
    """Node id of a heading that is the document's title, or None.

    A document title heading is the document's only outermost heading, with every other
    heading below it (a paper's ``# Title`` above ``## Abstract``, ``## Introduction``...).
    Its words are in every section's title path, so in a title search inside the document they
    tell no section from another and only favour the shortest paths (abstract, introduction):
    the title field of issue 13 cost QASPER dev 1.0 point of hit@5 that way
    (docs/evaluation.md, "Title round"). Its own row keeps its title.

    Args:
        nodes: Rows of a stored tree (:func:`~proxypointer.tree.build.tree_rows`).
    """
    kind = {n["node_id"]: n["kind"] for n in nodes}
    headings = [n for n in nodes if n["kind"] == "heading"]
    top = [n for n in headings if kind.get(n["parent_id"]) != "heading"]
    if len(top) != 1 or len(headings) < 2:
        return None
    return str(top[0]["node_id"])

"""The lexical indexes of a store: BM25 over live chunks and over section titles (SQLite FTS5).

Two FTS5 tables in the registry's SQLite file, written in the transaction that makes a
document version live and deleted with it, through the registry's connection:

* ``chunks_fts``: one row per live chunk, what was embedded (breadcrumb + chunk text), found
  by chunk id through ``lexical_rows`` (:meth:`LexicalIndex.search`);
* ``titles_fts``: one row per heading of each live document, the words of its title path, with
  the chunk ids of its subtree in ``title_rows`` (:meth:`LexicalIndex.title_search`).

A store written by an older version of this library, or changed since by a writer that does
not keep these tables, is brought in step from the record copies and stored trees on first
use (:meth:`LexicalIndex.sync`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .._lru import LRU
from ..chunk.ids import SEPARATOR, chunk_id, parse_chunk_id
from ..errors import StoreError
from ..tree.build import tree_rows
from .records import lexical_text, try_decode_record
from .terms import title_field

if TYPE_CHECKING:
    from .db import Database

__all__ = [
    "LEXICAL_MAX_ROWS",
    "LEXICAL_MAX_ROWS_FILTERED",
    "LEXICAL_TOKENIZER",
    "TITLE_INDEX",
    "LexicalIndex",
    "TitleHit",
]

logger = logging.getLogger(__name__)

#: Most rows one lexical query scores with BM25: its terms are taken rarest first while the
#: rows holding them add up to at most this; the commoner ones are left out. FTS5 scores every
#: row that matches any term (about 4 us a row here: p50 39 ms at 100k chunks), and a word such
#: as "model" matches a third of a store of papers, while its BM25 weight (idf) is the lowest
#: of the query's. Lucene's CommonTermsQuery treats frequent terms alike. A query whose rarest
#: term alone exceeds it has no lexical hits (the dense ranking stands alone).
LEXICAL_MAX_ROWS = 10_000

#: The same for a query restricted to some documents: only their rows are scored, but every
#: matching row is read (about 1.5 us a row here under load: at 100k chunks a budget of 100,000
#: rows gave p50 52 ms, 20,000 rows 30 ms, for the lexical search alone).
LEXICAL_MAX_ROWS_FILTERED = 20_000

#: FTS5 tokenizer of the lexical index: Unicode word characters (letters and digits; ``_`` and
#: punctuation separate words), case and diacritics folded, English words reduced to their
#: Porter stem ("pay", "pays", "paying" -> "pai"; "paid" stays "paid"), as in SQLite's FTS5
#: docs. A store whose table was built with another tokenizer is rebuilt from its own stored
#: text on first use.
LEXICAL_TOKENIZER = "porter unicode61 remove_diacritics 2"

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
    """One section found by :meth:`LexicalIndex.title_search`.

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


class LexicalIndex:
    """The chunk and title indexes of a store, reached as ``Registry.lexical``.

    Reads run on the registry's connection; the write side (:meth:`sync`,
    :meth:`replace_document`, :meth:`drop_document`, :meth:`add_from_records`) takes the
    connection of a transaction the registry holds, so lexical rows change in the same
    transaction as the chunks they index.

    Args:
        database: The registry database whose SQLite file holds the indexes.

    """

    def __init__(self, database: Database) -> None:
        self._database = database
        # The query tokenizer's temporary tables are per connection, used under this lock; the
        # row count per index and generation; document frequencies per term.
        self._lock = threading.Lock()
        self._totals: dict[str, tuple[int, int]] = {}  # index -> (generation, rows)
        # (index, term) -> (df, rows then)
        self._term_df: LRU[tuple[str, str], tuple[int, int]] = LRU(50_000)

    def search(
        self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 search of the live chunks' lexical rows (FTS5), best first.

        Args:
            terms: Words, any of which may match (an FTS5 ``OR`` query); each is quoted, so
                FTS5 syntax in them (``AND``, ``NEAR``, ``col:``, ``*``, ``"``) is plain text. The
                table's tokenizer (:data:`LEXICAL_TOKENIZER`) folds and stems them as it did
                the indexed text. In a large store the commonest are left out (:data:`LEXICAL_MAX_ROWS`).
            n: Most hits returned.
            doc_ids: Only chunks of these documents; an empty list matches nothing.

        Returns:
            ``(chunk_id, score)`` pairs, score = ``-bm25()`` of SQLite's FTS5 (BM25 with
            k1 = 1.2, b = 0.75; higher is better).

        Raises:
            StoreError: If SQLite fails.
        """
        match = self._fts_match(terms, n, doc_ids)
        if match is None:
            return []
        sql = (
            "SELECT r.chunk_id, -bm25(chunks_fts) FROM chunks_fts JOIN lexical_rows r ON r.id = chunks_fts.rowid"
            " WHERE chunks_fts MATCH ?"
        )
        sql, args = _with_doc_filter(sql, [match], doc_ids)
        sql += " ORDER BY bm25(chunks_fts) LIMIT ?"
        args.append(n)
        try:
            return [(cid, float(score)) for cid, score in self._database.db.execute(sql, args)]
        except sqlite3.Error as err:
            raise StoreError(f"{self._database.root}: lexical search failed ({err})") from err

    def _fts_match(
        self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None, index: str = "chunks"
    ) -> str | None:
        """FTS5 MATCH expression of a search (any quoted term), or None when it can match nothing.

        Blank and repeated terms are dropped, then the commonest (:meth:`_rare_terms`, index
        ``chunks`` or ``titles``); an empty ``doc_ids`` list or ``n < 1`` matches nothing.
        """
        terms = list(dict.fromkeys(t for t in terms if t.strip()))
        if not terms or n < 1 or (doc_ids is not None and not doc_ids):
            return None
        self._ensure()
        limit = LEXICAL_MAX_ROWS if doc_ids is None else LEXICAL_MAX_ROWS_FILTERED
        terms = self._rare_terms(terms, limit, index)
        if not terms:
            return None
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)

    def title_search(
        self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None = None
    ) -> list[TitleHit]:
        """BM25 search of the live documents' section titles (the title index, FTS5), best first.

        Each heading of a live document has one row: the words of its title path, from the
        document's outermost heading down to it (:func:`~proxypointer.store.terms.title_field`;
        a document title heading only in its own row, :func:`_document_title_heading`),
        stemmed as the chunk index is (:data:`TITLE_INDEX`). So "balance sheet" finds
        ``ITEM 8 > CONSOLIDATED BALANCE SHEETS`` whatever the section's text says.

        Args:
            terms: Words, any of which may match (quoted, as in :meth:`search`). In a
                large store the commonest are left out (:data:`LEXICAL_MAX_ROWS` rows scored).
            n: Most hits returned.
            doc_ids: Only sections of these documents; an empty list matches nothing.

        Returns:
            :class:`TitleHit` rows of live versions only, best first.

        Raises:
            StoreError: If SQLite fails.
        """
        match = self._fts_match(terms, n, doc_ids, "titles")
        if match is None:
            return []
        try:
            live = self._title_rows_of(match, n, doc_ids) if doc_ids is not None else self._title_rows_best(match, n)
        except sqlite3.Error as err:
            raise StoreError(f"{self._database.root}: title search failed ({err})") from err
        return [
            TitleHit(d, v, node, float(score), None if chunks is None else
                     tuple(chunk_id(d, v, *tail.rsplit(SEPARATOR, 1)) for tail in chunks.split()))
            for score, d, v, node, chunks in live
        ]

    def _title_rows_best(self, match: str, n: int) -> list[_TitleRow]:
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

    def _title_rows_of(self, match: str, n: int, doc_ids: Sequence[str]) -> list[_TitleRow]:
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
        sql, args = _with_doc_filter(sql, [match], doc_ids)
        return self._database.db.execute(sql + " ORDER BY bm25(titles_fts), r.id LIMIT ?", [*args, n]).fetchall()

    def _rare_terms(self, terms: list[str], budget: int, table: str = "chunks") -> list[str]:
        """Keep the rarest terms whose rows add up to at most ``budget``, in query order."""
        if self._count(table) <= budget:
            return terms
        df = self.document_frequencies(terms, table)
        keep: set[str] = set()
        used = 0
        for t in sorted((t for t in terms if df[t]), key=df.__getitem__):
            if used + df[t] > budget:
                break
            keep.add(t)
            used += df[t]
        if len(keep) < len(terms):
            logger.debug("lexical query: common terms left out: %s", [t for t in terms if t not in keep and df[t]])
        return [t for t in terms if t in keep]

    def _count(self, table: str = "chunks") -> int:
        """Rows of the chunk (or title) index, counted once per registry generation."""
        generation = self._database.generation()
        with self._lock:
            got = self._totals.get(table)
            if got is None or got[0] != generation:
                rows = "lexical_rows" if table == "chunks" else "title_rows"
                count = self._database.db.execute(f"SELECT COUNT(*) FROM {rows}").fetchone()[0]
                got = self._totals[table] = (generation, count)
            return got[1]

    def document_frequencies(self, terms: Sequence[str], table: str = "chunks") -> dict[str, int]:
        """Rows of the chunk (or title) index holding each term, as the index's tokenizer reads it.

        A term the tokenizer splits (``foo_bar``) counts its rarest part. Counts come from FTS5's
        ``fts5vocab`` and cost a pass over the term's row list, so they are kept (for 50,000
        terms) until the row count moves by more than 10%: they only decide which terms a query
        leaves out (:data:`LEXICAL_MAX_ROWS`).

        Args:
            terms: Query terms.
            table: ``chunks`` (the chunk index) or ``titles`` (the title index).

        Returns:
            ``term -> rows``, 0 for a term no row holds.
        """
        total = self._count(table)
        vocab = "lexical_terms" if table == "chunks" else "title_terms"
        with self._lock:
            db = self._database.db
            if not db.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'lexical_query'").fetchone():
                db.execute(f"CREATE VIRTUAL TABLE temp.lexical_query USING fts5(t, tokenize = '{LEXICAL_TOKENIZER}')")
                db.execute(
                    "CREATE VIRTUAL TABLE temp.lexical_query_terms USING fts5vocab(temp, lexical_query, instance)"
                )
                db.execute("CREATE VIRTUAL TABLE temp.lexical_terms USING fts5vocab(main, chunks_fts, row)")
                db.execute("CREATE VIRTUAL TABLE temp.title_terms USING fts5vocab(main, titles_fts, row)")
            db.execute("DELETE FROM temp.lexical_query")
            db.executemany("INSERT INTO temp.lexical_query (rowid, t) VALUES (?, ?)", list(enumerate(terms)))
            tokens: dict[int, list[str]] = {}
            for i, token in db.execute("SELECT doc, term FROM temp.lexical_query_terms"):
                tokens.setdefault(i, []).append(token)
            wanted = {t for ts in tokens.values() for t in ts}
            df: dict[str, int] = {}
            for token in wanted:
                cached = self._term_df.get((table, token))
                if cached is not None and abs(cached[1] - total) <= 0.1 * max(cached[1], 1):
                    df[token] = cached[0]
            missing = sorted(wanted - set(df))
            if missing:
                marks = ",".join("?" * len(missing))
                found = dict(db.execute(f"SELECT term, doc FROM temp.{vocab} WHERE term IN ({marks})", missing))
                for token in missing:
                    df[token] = int(found.get(token, 0))
                    self._term_df.put((table, token), (df[token], total))
        return {t: min((df[x] for x in tokens.get(i, [])), default=0) for i, t in enumerate(terms)}

    def rows(self, doc_id: str | None = None) -> dict[str, str]:
        """``chunk_id -> indexed text`` of the lexical rows of one document, or of all (for ``check``)."""
        self._ensure()
        sql = "SELECT r.chunk_id, f.text FROM lexical_rows r JOIN chunks_fts f ON f.rowid = r.id"
        db = self._database.db
        return dict(db.execute(sql + " WHERE r.doc_id = ?", (doc_id,)) if doc_id else db.execute(sql))

    def _ensure(self) -> None:
        """Create, rebuild or bring in step the lexical index when needed (one read when it is)."""
        if (
            self.in_step(self._database.db)
            and self._database.get_meta("lexical_tokenizer") == LEXICAL_TOKENIZER
            and self._database.get_meta("title_index") == TITLE_INDEX
        ):
            return
        with self._database.transaction() as db:
            self.sync(db)

    # -- writes, inside the registry's transactions ----------------------------------
    @staticmethod
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

    @staticmethod
    def mark_synced(db: sqlite3.Connection) -> None:
        """Record that both lexical indexes match the chunks table at the current generation."""
        for key in ("lexical_generation", "title_generation"):
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value)"
                " VALUES (?, COALESCE((SELECT value FROM meta WHERE key = 'generation'), '0'))",
                (key,),
            )

    def replace_document(
        self, db: sqlite3.Connection, doc_id: str, version: str, tree_json: str,
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
        self._delete_chunks(db, doc_id)
        if rows is not None:
            self._insert_chunks(db, doc_id, rows)
        self._delete_titles(db, doc_id)
        self._insert_titles(db, doc_id, version, tree_json)

    def drop_document(self, db: sqlite3.Connection, doc_id: str) -> None:
        """Inside a write transaction: delete a document's chunk and title rows."""
        self._delete_chunks(db, doc_id)
        self._delete_titles(db, doc_id)

    def sync(self, db: sqlite3.Connection) -> None:
        """Inside a write transaction: make the lexical index match the chunks table.

        Creates the FTS5 table (a store written before it existed), rebuilds it from its own
        stored text when :data:`LEXICAL_TOKENIZER` changed, and, when a writer that does not
        keep it (an older version) changed chunks since the last sync, drops the rows of
        chunks no longer live and adds rows for live chunks from their record copies
        (:func:`~proxypointer.store.records.lexical_text`). Chunks without a record copy get their
        row when the copy is written (:meth:`~proxypointer.store.registry.Registry.set_chunk_records`).
        The title index is rebuilt from the live documents' stored trees when
        :data:`TITLE_INDEX` changed (or the store predates it), and otherwise brought in step
        the same way (rows of versions no longer live dropped, live documents without rows
        given theirs).
        """
        exists = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
        tokenizer = db.execute("SELECT value FROM meta WHERE key = 'lexical_tokenizer'").fetchone()
        if not exists:
            db.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize = '{LEXICAL_TOKENIZER}')")
            db.execute("DELETE FROM lexical_rows")
        elif tokenizer is None or tokenizer[0] != LEXICAL_TOKENIZER:
            logger.info("%s: rebuilding the lexical index with tokenizer %r", self._database.root, LEXICAL_TOKENIZER)
            db.execute("DROP TABLE IF EXISTS chunks_fts_new")
            db.execute(f"CREATE VIRTUAL TABLE chunks_fts_new USING fts5(text, tokenize = '{LEXICAL_TOKENIZER}')")
            db.execute("INSERT INTO chunks_fts_new (rowid, text) SELECT rowid, text FROM chunks_fts")
            db.execute("DROP TABLE chunks_fts")
            db.execute("ALTER TABLE chunks_fts_new RENAME TO chunks_fts")
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('lexical_tokenizer', ?)", (LEXICAL_TOKENIZER,))
        titles = db.execute("SELECT value FROM meta WHERE key = 'title_index'").fetchone()
        if titles is None or titles[0] != TITLE_INDEX:
            self._rebuild_titles(db)
        if exists and self.in_step(db):
            return
        gone = db.execute("SELECT id FROM lexical_rows WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)").fetchall()
        if gone:
            db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", gone)
            db.executemany("DELETE FROM lexical_rows WHERE id = ?", gone)
        rows = db.execute(
            "SELECT chunk_id, record FROM chunks WHERE record IS NOT NULL"
            " AND chunk_id NOT IN (SELECT chunk_id FROM lexical_rows)"
        )
        added = self.add_from_records(db, dict(rows.fetchall()))
        if gone or added:
            logger.info("%s: lexical index brought in step (%d rows added, %d removed)",
                        self._database.root, added, len(gone))
        self._sync_titles(db)
        self.mark_synced(db)

    def add_from_records(self, db: sqlite3.Connection, records: dict[str, bytes]) -> int:
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
            self._insert_chunks(db, doc_id, rows)
        return sum(len(r) for r in by_doc.values())

    @staticmethod
    def _insert_chunks(db: sqlite3.Connection, doc_id: str, rows: Sequence[tuple[str, str]]) -> None:
        """Insert ``(chunk_id, text)`` lexical rows of one document (none may exist yet)."""
        db.executemany("INSERT INTO lexical_rows (chunk_id, doc_id) VALUES (?, ?)", [(c, doc_id) for c, _ in rows])
        text = dict(rows)
        ids = db.execute("SELECT id, chunk_id FROM lexical_rows WHERE doc_id = ?", (doc_id,)).fetchall()
        db.executemany(
            "INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", [(i, text[c]) for i, c in ids if c in text]
        )

    def _rebuild_titles(self, db: sqlite3.Connection) -> None:
        """Inside a write transaction: (re)create the title index from every live document's tree."""
        logger.info("%s: building the section title index (%s)", self._database.root, TITLE_INDEX)
        db.execute("DROP TABLE IF EXISTS titles_fts")
        db.execute(f"CREATE VIRTUAL TABLE titles_fts USING fts5(title, tokenize = '{LEXICAL_TOKENIZER}')")
        db.execute("DELETE FROM title_rows")
        rows = db.execute("SELECT doc_id, version, tree_json FROM documents WHERE version != ''").fetchall()
        for doc_id, version, tree_json in rows:
            self._insert_titles(db, doc_id, version, tree_json)
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('title_index', ?)", (TITLE_INDEX,))

    def _sync_titles(self, db: sqlite3.Connection) -> None:
        """Inside a write transaction: title rows for exactly the live versions (after foreign writers)."""
        stale = db.execute(
            "SELECT DISTINCT r.doc_id FROM title_rows r LEFT JOIN documents d ON d.doc_id = r.doc_id"
            " WHERE d.version IS NULL OR d.version != r.version"
        ).fetchall()
        for (doc_id,) in stale:
            self._delete_titles(db, doc_id)
        missing = db.execute(
            "SELECT doc_id, version, tree_json FROM documents WHERE version != ''"
            " AND doc_id NOT IN (SELECT doc_id FROM title_rows)"
        ).fetchall()
        for doc_id, version, tree_json in missing:
            self._insert_titles(db, doc_id, version, tree_json)

    @staticmethod
    def _insert_titles(db: sqlite3.Connection, doc_id: str, version: str, tree_json: str) -> None:
        """Insert the title rows of one document version (none may exist; no-op before the table exists).

        Reads the document's live chunk ids from the chunks table: call it after they are written.
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
    def _delete_titles(db: sqlite3.Connection, doc_id: str) -> None:
        """Delete a document's title rows (no-op before the title index exists)."""
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'titles_fts'").fetchone():
            db.execute("DELETE FROM titles_fts WHERE rowid IN (SELECT id FROM title_rows WHERE doc_id = ?)", (doc_id,))
        db.execute("DELETE FROM title_rows WHERE doc_id = ?", (doc_id,))

    @staticmethod
    def _delete_chunks(db: sqlite3.Connection, doc_id: str) -> None:
        """Delete a document's lexical rows (no-op before the FTS5 table exists)."""
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone():
            db.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM lexical_rows WHERE doc_id = ?)", (doc_id,)
            )
        db.execute("DELETE FROM lexical_rows WHERE doc_id = ?", (doc_id,))


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


def _with_doc_filter(sql: str, args: list[Any], doc_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
    """Add ``AND r.doc_id IN (...)`` for ``doc_ids`` (None: no filter) to a search query."""
    if doc_ids is None:
        return sql, args
    ids = list(dict.fromkeys(doc_ids))
    return sql + f" AND r.doc_id IN ({','.join('?' * len(ids))})", [*args, *ids]

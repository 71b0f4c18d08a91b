"""What the two lexical indexes of a store share: the FTS5 tokenizer, a query's row budget, its terms.

Both FTS5 tables (``chunks_fts``, :class:`~proxypointer.store.chunkindex.ChunkTextIndex`;
``titles_fts``, :class:`~proxypointer.store.titleindex.TitleIndex`) live in the registry's
SQLite file and are read on its one connection. A query against either is planned here
(:class:`TermPlanner`): its terms quoted into one FTS5 ``OR`` expression, the commonest left
out in a large store (:data:`LEXICAL_MAX_ROWS`), their document frequencies read through
temporary tables of that connection.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._lru import LRU

if TYPE_CHECKING:
    from .db import Database

__all__ = [
    "LEXICAL_MAX_ROWS",
    "LEXICAL_MAX_ROWS_FILTERED",
    "LEXICAL_TOKENIZER",
    "TermPlanner",
    "with_doc_filter",
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


class TermPlanner:
    """Turns a lexical query's terms into an FTS5 MATCH expression, for either index.

    Holds what the chunk and the title index share on the registry's one connection: the
    query tokenizer's temporary tables (used under a lock), the row count of each index per
    registry generation, and document frequencies per term (for 50,000 terms). Thread-safe.

    Args:
        database: The registry database whose SQLite file holds the indexes.
        ensure: Brings both lexical indexes in step with the chunks table (one read when they
            are; :func:`~proxypointer.store.lexical.ensure_in_step`); called before a query
            reads them.

    """

    def __init__(self, database: Database, ensure: Callable[[], None]) -> None:
        self._database = database
        self.ensure = ensure
        # The query tokenizer's temporary tables are per connection, used under this lock; the
        # row count per index and generation; document frequencies per term.
        self._lock = threading.Lock()
        self._totals: dict[str, tuple[int, int]] = {}  # index -> (generation, rows)
        # (index, term) -> (df, rows then)
        self._term_df: LRU[tuple[str, str], tuple[int, int]] = LRU(50_000)

    def match(
        self, terms: Sequence[str], n: int, doc_ids: Sequence[str] | None, index: str = "chunks"
    ) -> str | None:
        """FTS5 MATCH expression of a search (any quoted term), or None when it can match nothing.

        Blank and repeated terms are dropped, then the commonest (:meth:`_rare_terms`, index
        ``chunks`` or ``titles``; budget :data:`LEXICAL_MAX_ROWS`, or
        :data:`LEXICAL_MAX_ROWS_FILTERED` with ``doc_ids``); an empty ``doc_ids`` list or
        ``n < 1`` matches nothing. Brings the indexes in step (:attr:`ensure`) first, unless
        nothing can match.
        """
        terms = list(dict.fromkeys(t for t in terms if t.strip()))
        if not terms or n < 1 or (doc_ids is not None and not doc_ids):
            return None
        self.ensure()
        limit = LEXICAL_MAX_ROWS if doc_ids is None else LEXICAL_MAX_ROWS_FILTERED
        terms = self._rare_terms(terms, limit, index)
        if not terms:
            return None
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)

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


def with_doc_filter(sql: str, args: list[Any], doc_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
    """Add ``AND r.doc_id IN (...)`` for ``doc_ids`` (None: no filter) to a search query.

    Args:
        sql: A query whose row table is aliased ``r`` and whose WHERE clause is open.
        args: Its parameters so far.
        doc_ids: Documents to keep (repeats dropped), or None for all.

    Returns:
        ``(sql, args)`` with the filter and its ids appended.
    """
    if doc_ids is None:
        return sql, args
    ids = list(dict.fromkeys(doc_ids))
    return sql + f" AND r.doc_id IN ({','.join('?' * len(ids))})", [*args, *ids]

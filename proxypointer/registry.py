"""The registry: which version of each document is indexed, stored sources, embedding cache.

One SQLite file (WAL) and a content-addressed folder beside the store.

The registry is the source of truth for *which* chunks are live: a Chroma hit counts only
if its ``version`` metadata equals the registry's live version of its document. Writing a new version therefore
never mixes versions: new chunks (new ids) are added first, the registry flips in one
transaction, then the old chunks are deleted. A crash at any point leaves the document at
its old or its new version; ``state`` records what the next run must repair.

Each live chunk's row also keeps a copy of its Chroma record (text and metadata, see
:func:`~proxypointer.records.encode_record`), written in the same transaction that makes it live, so a query reads
its k winners from SQLite (~0.1 ms) instead of from Chroma (~3.5 ms at 100k chunks,
docs/benchmarks.md). Rows of stores written before that copy existed have none: retrieval
reads those from Chroma, and the next ingest or ``check --repair`` fills them in.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .embedcache import EmbeddingCache
from .errors import StoreError, StoreNotFoundError
from .lexical import title_field
from .records import decode_record, lexical_text, record_content_hash, try_decode_record
from .sources import StoredSources

__all__ = [
    "LEXICAL_MAX_ROWS",
    "LEXICAL_MAX_ROWS_FILTERED",
    "LEXICAL_TOKENIZER",
    "TITLE_INDEX",
    "DocumentRecord",
    "Registry",
    "TitleHit",
]

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source_path TEXT NOT NULL,
    doc_hash TEXT NOT NULL,          -- content hash of the live version ('' while none)
    version TEXT NOT NULL,           -- live index version: chunks carry it ('' while none)
    pending_hash TEXT NOT NULL,      -- content hash being written ('' when none)
    state TEXT NOT NULL,             -- ready | writing | cleanup | deleting | stale
    title TEXT NOT NULL,
    line_count INTEGER NOT NULL,
    n_sections INTEGER NOT NULL,
    n_chunks INTEGER NOT NULL,
    source_mtime REAL NOT NULL,
    source_size INTEGER NOT NULL,
    indexed_at REAL NOT NULL,
    tree_json TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL,
    record BLOB,                     -- [text, metadata] as written to Chroma (encode_record); NULL: none
    content_hash TEXT                -- its embedding-cache key (Chunk.content_hash); NULL: not known
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, content_hash)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

#: Lexical index: one FTS5 row per live chunk (what was embedded: breadcrumb + chunk text),
#: written in the transaction that makes the chunk live and deleted with it. ``lexical_rows``
#: maps a chunk to its FTS5 rowid (an INTEGER PRIMARY KEY, stable across VACUUM) and finds a
#: document's rows by doc_id without scanning the FTS table.
_LEXICAL_SCHEMA = """
CREATE TABLE IF NOT EXISTS lexical_rows (
    id INTEGER PRIMARY KEY,          -- rowid of the chunk's row in chunks_fts
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lexical_rows_doc ON lexical_rows (doc_id);
CREATE TABLE IF NOT EXISTS title_rows (
    id INTEGER PRIMARY KEY,          -- rowid of the section's row in titles_fts
    doc_id TEXT NOT NULL,
    version TEXT NOT NULL,           -- the document version whose tree the row was taken from
    node_id TEXT NOT NULL,
    chunks TEXT                      -- the live chunks of the node's subtree (see _title_rows); NULL: not known
);
CREATE INDEX IF NOT EXISTS title_rows_doc ON title_rows (doc_id);
"""

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
#: path's words, :func:`~proxypointer.lexical.title_field`) is built: a version of the text
#: builder and the FTS5 tokenizer, the same Porter stemming as the chunk index (``taxes`` and
#: ``tax`` meet, ``liabilities`` and ``liability``). Version 2 keeps each row's subtree chunk ids
#: (``title_rows.chunks``), so a query reads no tree. A store whose title index was built
#: otherwise (or not at all) is rebuilt from the live documents' stored trees on first use.
TITLE_INDEX = "title-path-words-2 " + LEXICAL_TOKENIZER


#: A title row as the search reads it: ``(score, doc_id, version, node_id, chunks)``.
_TitleRow = tuple[float, str, str, str, str | None]


class TitleHit(NamedTuple):
    """One section found by :meth:`Registry.title_search`.

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
    """SQLite registry, stored sources and embedding cache under one folder.

    Args:
        root: Store folder; ``registry.sqlite3`` and ``sources/`` live here.
        create: Create the folder and an empty registry when there is none (only ``ingest``
            does); False raises StoreNotFoundError instead, leaving nothing behind.

    Raises:
        StoreNotFoundError: If ``create`` is False and ``root`` holds no registry.
        StoreError: If the folder cannot be created or the database cannot be opened.

    """

    def __init__(self, root: str | Path, create: bool = True) -> None:
        self.root = Path(root)
        if not create and not (self.root / "registry.sqlite3").is_file():
            raise StoreNotFoundError.at(self.root)
        try:
            (self.root / "sources").mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.root / "registry.sqlite3", timeout=30, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.executescript(_LEXICAL_SCHEMA)
            self._migrate()
        except (OSError, sqlite3.Error) as err:
            raise StoreError(f"{self.root}: cannot open the registry ({err}); check permissions") from err
        self.sources = StoredSources(self)
        self.embeddings = EmbeddingCache(self)
        # Lexical search: the query tokenizer's temporary tables are per connection, used under
        # this lock; the live chunk count per generation; document frequencies per term.
        self._lexical_lock = threading.Lock()
        self._lexical_total: dict[str, tuple[int, int]] = {}  # index -> (generation, rows)
        # (index, term) -> (df, rows then)
        self._term_df: OrderedDict[tuple[str, str], tuple[int, int]] = OrderedDict()

    def _migrate(self) -> None:
        """Add columns that stores written by older versions lack (once per store)."""
        self._add_column("chunks", "record", "BLOB")
        # Finds the rows still to fill without scanning the table (empty once all are filled).
        self._db.execute("CREATE INDEX IF NOT EXISTS chunks_no_record ON chunks (chunk_id) WHERE record IS NULL")
        # Which cached embedding is each chunk's vector (chunk_vectors; older rows read NULL
        # until fill_content_hashes), and an index that finds those rows without a scan.
        self._add_column("chunks", "content_hash", "TEXT")
        self._db.execute("CREATE INDEX IF NOT EXISTS chunks_no_hash ON chunks (chunk_id) WHERE content_hash IS NULL")
        # Title rows keep their subtree's chunk ids (TITLE_INDEX 2; older rows read NULL).
        self._add_column("title_rows", "chunks", "TEXT")
        # Which document a file is indexed as (discovery refuses a file under two doc ids).
        self._db.execute("CREATE INDEX IF NOT EXISTS documents_source ON documents (source_path)")

    def _add_column(self, table: str, column: str, decl: str) -> None:
        """Add ``column`` to ``table`` unless it is there (another process may add it first)."""
        if column in {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}:
            return
        try:
            self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
        except sqlite3.OperationalError as err:
            if "duplicate column" not in str(err):
                raise

    @property
    def db(self) -> sqlite3.Connection:
        """The registry's one SQLite connection, shared by its components (autocommit).

        Read through it directly; write inside :meth:`transaction`.
        """
        return self._db

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything inside commits together or not at all."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """Return a stored setting (e.g. ``model``), or None."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting."""
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """Counter bumped by every change of which chunks are live (commit, delete).

        A reader compares it with the value it saw when it opened Chroma and reopens the
        collection when another process has written since (embedded mode caches the HNSW
        index per process; shared case 26).
        """
        row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump(db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT(key)"
            " DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )

    # -- documents ----------------------------------------------------------------------
    def get(self, doc_id: str) -> DocumentRecord | None:
        """Return the record of one document, or None."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return DocumentRecord(*row) if row else None

    def documents(self) -> list[DocumentRecord]:
        """All records, ordered by doc_id."""
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM documents ORDER BY doc_id").fetchall()
        return [DocumentRecord(*r) for r in rows]

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
            tree_json: Skeleton tree (:func:`~proxypointer.records.tree_to_json`).
            records: For each of ``chunk_ids``, in order, its Chroma record as made by
                :func:`~proxypointer.records.encode_record`; None stores no copy (retrieval then reads Chroma).
            lexical_texts: For each of ``chunk_ids``, in order, the text its lexical (FTS5)
                row indexes: what was embedded (``Chunk.embed_text``). None: taken from
                ``records`` (:func:`~proxypointer.records.lexical_text`); without either, the chunks get no lexical
                row until their records are copied in (``set_chunk_records``).
            content_hashes: For each of ``chunk_ids``, in order, the embedding-cache key of the
                vector written to Chroma (``Chunk.content_hash``):
                :meth:`~proxypointer.embedcache.EmbeddingCache.chunk_vectors` then reads it from the cache. None:
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
            self._sync_lexical(db)  # the lexical index in step before this flip (older stores, writers)
            self._delete_lexical(db, doc_id)
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
            if lexical_texts is not None:
                self._insert_lexical(db, doc_id, list(zip(chunk_ids, lexical_texts, strict=True)))
            self._delete_titles(db, doc_id)
            self._insert_titles(db, doc_id, version, tree_json)
            self._bump(db)
            self._lexical_synced(db)
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
            in_step = self._lexical_in_step(db)
            db.execute("UPDATE documents SET state = 'deleting', version = '' WHERE doc_id = ?", (doc_id,))
            self._bump(db)
            if in_step:  # which chunks are listed is unchanged: the lexical index stays in step
                self._lexical_synced(db)

    def remove(self, doc_id: str) -> None:
        """Forget a document (after its chunks were deleted from Chroma), with its lexical rows."""
        with self.transaction() as db:
            in_step = self._lexical_in_step(db)
            self._delete_lexical(db, doc_id)
            self._delete_titles(db, doc_id)
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._bump(db)
            if in_step:
                self._lexical_synced(db)

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
        """Store record copies (:func:`~proxypointer.records.encode_record`; None clears one) for live chunks.

        Returns the number of rows updated.

        Ids that are no longer live are ignored, so a copy read from Chroma can never make a
        deleted chunk live again. Each row's content hash
        (:meth:`~proxypointer.embedcache.EmbeddingCache.chunk_vectors`) is taken from the copy's metadata
        (cleared with the copy).
        """
        rows = [(r, None if r is None else record_content_hash(r), c) for c, r in records.items()]
        with self.transaction() as db:
            before = db.total_changes
            db.executemany("UPDATE chunks SET record = ?, content_hash = ? WHERE chunk_id = ?", rows)
            updated = db.total_changes - before
            self._add_missing_lexical(db, {c: r for c, r in records.items() if r is not None})
            return updated

    def fill_content_hashes(self, batch: int = 5000) -> int:
        """Give live chunks written by an older version their content hash, from their record copies.

        Stores written before chunks kept their embedding-cache key read every vector from
        Chroma (:meth:`~proxypointer.embedcache.EmbeddingCache.chunk_vectors`); this reads the key from
        each record copy's metadata once (``''`` when it has none, so the row is not read again).
        Costs one indexed query when nothing is missing.

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
            with self.transaction() as db:
                db.executemany(
                    "UPDATE chunks SET content_hash = ? WHERE chunk_id = ? AND content_hash IS NULL",
                    [(record_content_hash(rec), cid) for cid, rec in rows],
                )
            filled += len(rows)

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

    # -- lexical index (FTS5) -----------------------------------------------------------
    def lexical_search(
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
            return [(cid, float(score)) for cid, score in self._db.execute(sql, args)]
        except sqlite3.Error as err:
            raise StoreError(f"{self.root}: lexical search failed ({err})") from err

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
        self._ensure_lexical()
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
        document's outermost heading down to it (:func:`~proxypointer.lexical.title_field`),
        stemmed as the chunk index is (:data:`TITLE_INDEX`). So "balance sheet" finds
        ``ITEM 8 > CONSOLIDATED BALANCE SHEETS`` whatever the section's text says.

        Args:
            terms: Words, any of which may match (quoted, as in :meth:`lexical_search`). In a
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
            raise StoreError(f"{self.root}: title search failed ({err})") from err
        return [
            TitleHit(d, v, node, float(score), None if chunks is None else
                     tuple(f"{d}::{v}::{tail}" for tail in chunks.split()))
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
            rows = self._db.execute(sql, (match, limit)).fetchall()
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
        return self._db.execute(sql + " ORDER BY bm25(titles_fts), r.id LIMIT ?", [*args, n]).fetchall()

    def _rare_terms(self, terms: list[str], budget: int, table: str = "chunks") -> list[str]:
        """Keep the rarest terms whose rows add up to at most ``budget``, in query order."""
        if self._lexical_count(table) <= budget:
            return terms
        df = self.lexical_document_frequencies(terms, table)
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

    def _lexical_count(self, table: str = "chunks") -> int:
        """Rows of the chunk (or title) index, counted once per registry generation."""
        generation = self.generation()
        with self._lexical_lock:
            got = self._lexical_total.get(table)
            if got is None or got[0] != generation:
                rows = "lexical_rows" if table == "chunks" else "title_rows"
                count = self._db.execute(f"SELECT COUNT(*) FROM {rows}").fetchone()[0]
                got = self._lexical_total[table] = (generation, count)
            return got[1]

    def lexical_document_frequencies(self, terms: Sequence[str], table: str = "chunks") -> dict[str, int]:
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
        total = self._lexical_count(table)
        vocab = "lexical_terms" if table == "chunks" else "title_terms"
        with self._lexical_lock:
            db = self._db
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
                    self._term_df.move_to_end((table, token))
                    df[token] = cached[0]
            missing = sorted(wanted - set(df))
            if missing:
                marks = ",".join("?" * len(missing))
                found = dict(db.execute(f"SELECT term, doc FROM temp.{vocab} WHERE term IN ({marks})", missing))
                for token in missing:
                    df[token] = int(found.get(token, 0))
                    self._term_df[(table, token)] = (df[token], total)
                while len(self._term_df) > 50_000:
                    self._term_df.popitem(last=False)
        return {t: min((df[x] for x in tokens.get(i, [])), default=0) for i, t in enumerate(terms)}

    def lexical_rows(self, doc_id: str | None = None) -> dict[str, str]:
        """``chunk_id -> indexed text`` of the lexical rows of one document, or of all (for ``check``)."""
        self._ensure_lexical()
        sql = "SELECT r.chunk_id, f.text FROM lexical_rows r JOIN chunks_fts f ON f.rowid = r.id"
        rows = self._db.execute(sql + " WHERE r.doc_id = ?", (doc_id,)) if doc_id else self._db.execute(sql)
        return dict(rows)

    def _ensure_lexical(self) -> None:
        """Create, rebuild or bring in step the lexical index when needed (one read when it is)."""
        if (
            self._lexical_in_step(self._db)
            and self.get_meta("lexical_tokenizer") == LEXICAL_TOKENIZER
            and self.get_meta("title_index") == TITLE_INDEX
        ):
            return
        with self.transaction() as db:
            self._sync_lexical(db)

    @staticmethod
    def _lexical_in_step(db: sqlite3.Connection) -> bool:
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
    def _lexical_synced(db: sqlite3.Connection) -> None:
        """Record that both lexical indexes match the chunks table at the current generation."""
        for key in ("lexical_generation", "title_generation"):
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value)"
                " VALUES (?, COALESCE((SELECT value FROM meta WHERE key = 'generation'), '0'))",
                (key,),
            )

    def _sync_lexical(self, db: sqlite3.Connection) -> None:
        """Inside a write transaction: make the lexical index match the chunks table.

        Creates the FTS5 table (a store written before it existed), rebuilds it from its own
        stored text when :data:`LEXICAL_TOKENIZER` changed, and, when a writer that does not
        keep it (an older version) changed chunks since the last sync, drops the rows of
        chunks no longer live and adds rows for live chunks from their record copies
        (:func:`~proxypointer.records.lexical_text`). Chunks without a record copy get their row when the copy is
        written (:meth:`set_chunk_records`). The title index is rebuilt from the live
        documents' stored trees when :data:`TITLE_INDEX` changed (or the store predates it),
        and otherwise brought in step the same way (rows of versions no longer live dropped,
        live documents without rows given theirs).
        """
        exists = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
        tokenizer = db.execute("SELECT value FROM meta WHERE key = 'lexical_tokenizer'").fetchone()
        if not exists:
            db.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize = '{LEXICAL_TOKENIZER}')")
            db.execute("DELETE FROM lexical_rows")
        elif tokenizer is None or tokenizer[0] != LEXICAL_TOKENIZER:
            logger.info("%s: rebuilding the lexical index with tokenizer %r", self.root, LEXICAL_TOKENIZER)
            db.execute("DROP TABLE IF EXISTS chunks_fts_new")
            db.execute(f"CREATE VIRTUAL TABLE chunks_fts_new USING fts5(text, tokenize = '{LEXICAL_TOKENIZER}')")
            db.execute("INSERT INTO chunks_fts_new (rowid, text) SELECT rowid, text FROM chunks_fts")
            db.execute("DROP TABLE chunks_fts")
            db.execute("ALTER TABLE chunks_fts_new RENAME TO chunks_fts")
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('lexical_tokenizer', ?)", (LEXICAL_TOKENIZER,))
        titles = db.execute("SELECT value FROM meta WHERE key = 'title_index'").fetchone()
        if titles is None or titles[0] != TITLE_INDEX:
            self._rebuild_titles(db)
        if exists and self._lexical_in_step(db):
            return
        gone = db.execute("SELECT id FROM lexical_rows WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)").fetchall()
        if gone:
            db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", gone)
            db.executemany("DELETE FROM lexical_rows WHERE id = ?", gone)
        rows = db.execute(
            "SELECT chunk_id, record FROM chunks WHERE record IS NOT NULL"
            " AND chunk_id NOT IN (SELECT chunk_id FROM lexical_rows)"
        )
        added = self._add_missing_lexical(db, dict(rows.fetchall()))
        if gone or added:
            logger.info("%s: lexical index brought in step (%d rows added, %d removed)", self.root, added, len(gone))
        self._sync_titles(db)
        self._lexical_synced(db)

    def _add_missing_lexical(self, db: sqlite3.Connection, records: dict[str, bytes]) -> int:
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
            self._insert_lexical(db, doc_id, rows)
        return sum(len(r) for r in by_doc.values())

    @staticmethod
    def _insert_lexical(db: sqlite3.Connection, doc_id: str, rows: Sequence[tuple[str, str]]) -> None:
        """Insert ``(chunk_id, text)`` lexical rows of one document (none may exist yet)."""
        db.executemany("INSERT INTO lexical_rows (chunk_id, doc_id) VALUES (?, ?)", [(c, doc_id) for c, _ in rows])
        text = dict(rows)
        ids = db.execute("SELECT id, chunk_id FROM lexical_rows WHERE doc_id = ?", (doc_id,)).fetchall()
        db.executemany(
            "INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", [(i, text[c]) for i, c in ids if c in text]
        )

    def _rebuild_titles(self, db: sqlite3.Connection) -> None:
        """Inside a write transaction: (re)create the title index from every live document's tree."""
        logger.info("%s: building the section title index (%s)", self.root, TITLE_INDEX)
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
    def _delete_lexical(db: sqlite3.Connection, doc_id: str) -> None:
        """Delete a document's lexical rows (no-op before the FTS5 table exists)."""
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone():
            db.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM lexical_rows WHERE doc_id = ?)", (doc_id,)
            )
        db.execute("DELETE FROM lexical_rows WHERE doc_id = ?", (doc_id,))

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


def _chunks_by_node(chunk_ids: Iterable[str], version: str) -> dict[str, list[str]]:
    """``node_id -> ["node_id::index", ...]`` of the chunk ids of one version, in chunk order.

    Chunk ids read ``doc_id::version::node_id::index`` (:func:`~proxypointer.chunking.chunk_document`);
    ids of other versions are left out.
    """
    out: dict[str, list[str]] = {}
    for cid in sorted(chunk_ids):
        parts = cid.rsplit("::", 3)
        if len(parts) == 4 and parts[1] == version:
            out.setdefault(parts[2], []).append(f"{parts[2]}::{parts[3]}")
    return out


def _title_rows(tree_json: str, chunks: dict[str, list[str]] | None = None) -> list[tuple[str, str, str]]:
    """``(node_id, title field, subtree chunks)`` of each heading of a stored tree.

    ``tree_json`` holds :func:`~proxypointer.records.tree_to_json`'s rows. The title field is the
    words of the title path, outermost heading first (:func:`~proxypointer.lexical.title_field`);
    headings without a word get no row. The subtree chunks are the chunk id tails
    (``node_id::index``, from ``chunks``, as :func:`_chunks_by_node` gives them) of the node and
    its descendants, depth first in the tree's order (as
    :meth:`~proxypointer.livetrees.LiveTree.subtree_chunks`), joined by spaces.
    """
    try:
        nodes = json.loads(tree_json or "[]")
    except ValueError:
        return []
    chunks = chunks or {}
    title = {n[0]: n[1] for n in nodes}
    parent = {n[0]: n[7] for n in nodes}
    children: dict[str, list[str]] = {}
    for n in nodes:
        if n[7] in title:
            children.setdefault(n[7], []).append(n[0])
    out = []
    for n in nodes:
        if n[8] != "heading":
            continue
        path, node = [], n[0]
        while node and node in title and len(path) < 64:
            path.append(title[node])
            node = parent[node]
        text = title_field(reversed(path))
        if text:
            tails, todo, seen = [], [n[0]], set()
            while todo:
                node = todo.pop()
                if node in seen:  # a malformed tree cannot loop
                    continue
                seen.add(node)
                tails.extend(chunks.get(node, ()))
                todo.extend(reversed(children.get(node, ())))
            out.append((n[0], text, " ".join(tails)))
    return out


def _with_doc_filter(sql: str, args: list[Any], doc_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
    """Add ``AND r.doc_id IN (...)`` for ``doc_ids`` (None: no filter) to a search query."""
    if doc_ids is None:
        return sql, args
    ids = list(dict.fromkeys(doc_ids))
    return sql + f" AND r.doc_id IN ({','.join('?' * len(ids))})", [*args, *ids]

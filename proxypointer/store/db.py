"""The registry's SQLite database: one connection, its schema, transactions, settings, generation.

``registry.sqlite3`` in a store folder (WAL, ``synchronous=NORMAL``, memory-mapped reads).
:class:`~proxypointer.store.registry.Registry` and its parts (stored sources, the embedding
cache, the lexical indexes) each get this object, never the registry: a part uses the
connection and the transactions it needs and nothing of its owner. The tables of every part
are created and migrated here, so one module owns the file's schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import StoreError, StoreNotFoundError
from ..storefiles import REGISTRY_FILE, SOURCES_DIR, is_store

__all__ = ["MMAP_BYTES", "Database"]

#: Bytes of the registry file SQLite may read through a memory map (``PRAGMA mmap_size``);
#: SQLite caps it at its compile-time ``SQLITE_MAX_MMAP_SIZE`` (2 GB for the SQLite bundled with
#: CPython 3.11 here). Reads of mapped pages skip a system call and a copy each: at 1M chunks
#: (a 3 GB registry, read once into the OS page cache first), six interleaved pairs of
#: processes, the first pass of the default query path over 95 new questions took p95 85.3 ms
#: on average against 97.8 without (lower in 5 of 6 pairs; p50 ~50 against ~53), the same
#: sections for every question (docs/benchmarks.md, "Preload round"). Mapped pages count in a
#: process's RSS (they are the shared, reclaimable page cache). Writes still go through
#: SQLite's normal path; Linux's unified page cache keeps mapped readers coherent with them.
MMAP_BYTES = 1 << 34

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
    chunks TEXT                      -- the live chunks of the node's subtree (lexicalindex); NULL: not known
);
CREATE INDEX IF NOT EXISTS title_rows_doc ON title_rows (doc_id);
"""


class Database:
    """The SQLite file of a store's registry, opened once and shared by its parts.

    Attributes:
        root: The store folder (``registry.sqlite3`` and ``sources/`` live here).

    Args:
        root: Store folder.
        create: Create the folder and an empty database when there is none (only ``ingest``
            does); False raises StoreNotFoundError instead, leaving nothing behind.

    Raises:
        StoreNotFoundError: If ``create`` is False and ``root`` holds no registry.
        StoreError: If the folder cannot be created or the database cannot be opened.

    """

    def __init__(self, root: str | Path, create: bool = True) -> None:
        self.root = Path(root)
        if not create and not is_store(self.root):
            raise StoreNotFoundError.at(self.root)
        try:
            (self.root / SOURCES_DIR).mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.root / REGISTRY_FILE, timeout=30, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            self._db.executescript(_SCHEMA)
            self._db.executescript(_LEXICAL_SCHEMA)
            self._migrate()
        except (OSError, sqlite3.Error) as err:
            raise StoreError(f"{self.root}: cannot open the registry ({err}); check permissions") from err

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
        """The one SQLite connection the registry and its parts share (autocommit).

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
    def bump(db: sqlite3.Connection) -> None:
        """Bump the generation inside a write transaction (``db`` is that transaction's connection)."""
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT(key)"
            " DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )

"""Index: one store (registry, stored sources, a Chroma collection) and the model that fills it.

A small facade: it owns the registry, the Chroma adapter, the embedder, the configuration and
the reader table, holds the store's write lock, and delegates the work to the stages in
``ingest`` (sync) and ``maintenance`` (repair, delete, prune, status, check).

Ingestion is a *sync*: a document whose content and settings are unchanged costs a read and a
hash; a changed one is re-chunked and only chunks whose embedded text changed are embedded
again (the embedding cache is keyed by model and text hash). Every version is written
add-new, flip-registry, delete-old, under an inter-process lock, so a crash leaves each
document at its old or its new version and the next run repairs the rest.

Only ``ingest`` creates a store: every other use of a folder that holds none raises
:class:`~proxypointer.errors.StoreNotFoundError` and leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .config import ProxyPointerConfig, config_to_dict
from .embedding import Embedder, SentenceTransformerEmbedder
from .errors import ConfigError, LockError, StoreError, StoreNotFoundError
from .ingest import IngestReport, version_of
from .maintenance import CheckReport, check, delete_documents, fill_records, repair_all, stale_sources
from .preload import PreloadReport, preload_files, store_files
from .readers import Reader, default_readers
from .registry import Registry
from .runner import run_ingest
from .store import ChromaStore, embedded_writer

__all__ = ["PIPELINE_REVISION", "CheckReport", "Index", "IngestReport"]

logger = logging.getLogger(__name__)


#: Revision of how trees and chunks are built from the same text and settings. A release that
#: changes them (2: a financial statement's title keeps the table pieces a converter wrote as
#: headings as its children; 3: an embedded text repeated in a document is stored at most
#: ``chunking.REPEATED_CHUNKS_KEPT`` times, and fallback windows over the same lines are one
#: node; 4: lines of a printed table of contents are never headings, and a part or item below
#: an outline heading climbs out to its filing level; 5: the notes heading is known after the
#: company's name, "COSTCO ... NOTES TO CONSOLIDATED FINANCIAL STATEMENTS", and a contents entry
#: "8 Financial Statements" among items is Item 8) bumps it, so that the next ingest re-indexes every document of a
#: store rather than leaving it half old, half new. Part of :attr:`Index.pipeline_key`.
PIPELINE_REVISION = 5


class Index:
    """A proxypointer index: registry, stored sources and a Chroma collection.

    Constructing one touches no file; the parts open on first use. Reading or maintaining a
    store that does not exist raises StoreNotFoundError (use :meth:`open` to fail at once);
    :meth:`ingest` creates it.

    Args:
        store: Store folder; defaults to ``config.store.path`` (``.proxypointer`` in the
            working directory).
        config: Full configuration; defaults to the built-in defaults.
        embedder: Embedding model; defaults to sentence-transformers with
            ``config.embedding`` (loaded on first use).

    Attributes:
        readers: Suffix table (lower-case suffix with the dot -> reader) used by ``ingest``
            and ``status``; ``readers.default_readers(config)`` by default: markdown with its
            page markers, and PDF (extra ``pdf``), which keeps its conversions in
            ``<store>/converted``.

    Example:
        >>> index = Index("./.proxypointer")                  # doctest: +SKIP
        >>> print(index.ingest(["data/"]).summary())          # doctest: +SKIP

    """

    def __init__(
        self,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.config = config or ProxyPointerConfig()
        self.root = Path(store if store is not None else self.config.store.path)
        self.embedder: Embedder = embedder or SentenceTransformerEmbedder(self.config.embedding)
        self.readers: dict[str, Reader] = default_readers(self.config, conversion_cache=self.root / "converted")
        self._registry: Registry | None = None
        self._store: ChromaStore | None = None
        self._store_generation = -1
        self._writing = False
        self._creating = False

    @classmethod
    def open(
        cls,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
    ) -> Index:
        """Open an existing store (for queries and maintenance); never creates one.

        Args:
            store: Store folder (as for the constructor).
            config: Full configuration.
            embedder: Embedding model.

        Returns:
            The index, its registry open.

        Raises:
            StoreNotFoundError: ``<dir>: no proxypointer store here; run `proxypointer ingest`
                first``, if the folder holds no store.
        """
        index = cls(store, config, embedder)
        index.registry  # noqa: B018 - opening it checks that the store exists
        return index

    @property
    def exists(self) -> bool:
        """True if the folder holds a store (its registry)."""
        return self._registry is not None or (self.root / "registry.sqlite3").is_file()

    # -- parts --------------------------------------------------------------------------
    @property
    def registry(self) -> Registry:
        """The registry (opened on first use).

        Raises:
            StoreNotFoundError: If the store does not exist and this is not an ingest.
        """
        if self._registry is None:
            self._registry = Registry(self.root, create=self._creating)
        return self._registry

    @property
    def store(self) -> ChromaStore:
        """The Chroma collection adapter (opened on first use).

        In embedded mode it is reopened when another process has changed the index since it
        was opened (the registry's generation moved), so a long-lived reader sees new
        versions instead of its process's cached HNSW index (shared case 26).

        Raises:
            StoreNotFoundError: If the store does not exist and this is not an ingest.
        """
        if self._store is not None and not self._writing and self.config.store.mode == "persistent":
            if self.registry.generation() != self._store_generation:
                logger.debug("%s: the index changed since it was opened; reopening Chroma", self.root)
                self._store.close()
                self._store = None
        if self._store is None:
            self._store_generation = self.registry.generation()
            store_id = self.registry.get_meta("store_id")
            self._store = ChromaStore(
                self.config.store,
                self.root,
                owner=(store_id, str(self.root.resolve())) if store_id else None,
                # the embedded collection lives in the store folder; a server one is taken
                # unmarked only if this store already has chunks in it (an older store)
                adopt=self.config.store.mode == "persistent" or self.registry.has_chunks(),
                # other Index objects of this process on the folder share Chroma's in-memory
                # index: opening for a newer generation reopens theirs too (shared case 26)
                generation=self._store_generation,
            )
        return self._store

    def close(self) -> None:
        """Release the registry connection and the Chroma client (reopened on next use)."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._registry is not None:
            self._registry.close()
            self._registry = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pipeline_key(self) -> str:
        """Hash of what shapes chunks and vectors: model, tree and chunking settings, revision.

        The revision is :data:`PIPELINE_REVISION` (a release that builds trees or chunks
        differently from the same text and settings).
        """
        cfg = config_to_dict(self.config)
        parts = {"model": self.embedder.name, "tree": cfg["tree"], "chunking": cfg["chunking"]}
        if PIPELINE_REVISION > 1:
            parts["revision"] = PIPELINE_REVISION
        key = json.dumps(parts, sort_keys=True)
        return hashlib.sha1(key.encode()).hexdigest()[:8]

    @contextmanager
    def write_lock(self, create: bool = False) -> Iterator[None]:
        """Hold the store's inter-process write lock (``<store>/write.lock``).

        Every writer (an ingest runner of any engine, delete, check) holds it for its whole
        run. Waits up to ``store.lock_timeout_s`` for another writer.

        Args:
            create: Create the store if there is none (ingest only); it is given a store id,
                which marks the Chroma collection it owns.

        Raises:
            StoreNotFoundError: If ``create`` is False and the folder holds no store.
            LockError: If another process holds the lock past ``store.lock_timeout_s``.
            StoreError: If the store folder cannot be created.
        """
        from filelock import FileLock, Timeout

        if self._writing:  # re-entered by the same writer
            yield
            return
        if not create and not self.exists:
            raise StoreNotFoundError.at(self.root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"{self.root}: cannot create the store folder ({err}); check the path") from err
        lock_path = self.root / "write.lock"
        lock = FileLock(str(lock_path), timeout=self.config.store.lock_timeout_s)
        try:
            lock.acquire()
        except Timeout as err:
            raise LockError(
                f"{lock_path}: another process is writing to this store (waited "
                f"{self.config.store.lock_timeout_s:g} s); run again when it has finished, or raise "
                f"store.lock_timeout_s"
            ) from err
        self._writing = True
        self._creating = create
        try:
            if self.registry.get_meta("store_id") is None:
                self.registry.set_meta("store_id", uuid.uuid4().hex)
                if self._store is not None:  # opened before the store had an id: reopen with it
                    self._store.close()
                    self._store = None
            if self.config.store.mode == "persistent":
                # another process may have written since this store was opened: reopen before
                # writing through Chroma's in-process index (shared case 26)
                with embedded_writer(self.root, lambda: self.registry.generation()):
                    yield
            else:
                yield
        finally:
            self._writing = False
            self._creating = False
            if self._registry is not None:
                self._store_generation = self._registry.generation()
                if self._store is not None:
                    self._store.generation = self._store_generation
            lock.release()

    def check_model(self, record: bool = True) -> None:
        """Raise ConfigError if the store was built with another model than the embedder's.

        Args:
            record: On a store without a model yet, record the embedder's (writers only).

        Raises:
            ConfigError: Naming both models (``+int8`` marks a quantised one).
        """
        stored = self.registry.get_meta("model")
        if stored is None:
            if record:
                self.registry.set_meta("model", self.embedder.name)
        elif stored != self.embedder.name:
            raise ConfigError(
                f"{self.root}: the store was built with model {stored!r}, the config asks for "
                f"{self.embedder.name!r}; use another --store or the same model"
            )

    # -- ingest -------------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        prune: bool = False,
        include_hidden: bool = False,
        show_progress: bool = True,
        batch_chunks: int = 512,
    ) -> IngestReport:
        """Sync the index with source files: add new, re-index changed, skip unchanged.

        Creates the store if there is none. Runs the stages of ``proxypointer.ingest`` in this
        process (``proxypointer.runner``).

        Args:
            paths: Files or folders (searched recursively for the reader table's suffixes,
                ``*.md``, ``*.markdown`` and ``*.pdf``; see ``proxypointer.discovery`` for doc
                ids and what is skipped). PDFs need the ``pdf`` extra: without it, a PDF named
                directly fails and one found in a folder is a note.
            prune: Also delete documents whose files are gone from the given folders, and drop
                embedding-cache entries no live chunk uses.
            include_hidden: Also read hidden folders and files (``.git``, ``.obsidian``, any
                ``.name``) and tool folders (``node_modules``, ...) below the given folders.
            show_progress: Show a tqdm bar (counted in chunks) on stderr.
            batch_chunks: Chunks gathered across documents before one embed-and-write step.

        Returns:
            The report; files that failed are listed in ``failed`` (each logged once, at INFO)
            and the rest is indexed; empty files are in ``notes``.

        Raises:
            LockError: If another process holds the store's write lock past
                ``store.lock_timeout_s``.
            StoreError: If Chroma cannot be opened, refuses a write, or its collection belongs
                to another store.
            ConfigError: If the store was built with another model.

        """
        with self.write_lock(create=True):
            return run_ingest(
                self,
                paths,
                prune=prune,
                include_hidden=include_hidden,
                show_progress=show_progress,
                batch_chunks=batch_chunks,
            )

    def preload(self, max_bytes: int | None = None) -> PreloadReport:
        """Read the store's files once so that the first queries find them in the OS page cache.

        For a long-lived reader (``proxypointer serve`` does it at start, ``serve.preload``):
        at 1M chunks the first pass over a set of questions after opening the store was up to
        three times slower than the same questions again (:mod:`proxypointer.preload`). Reads
        the registry, Chroma's metadata database and the stored sources, sequentially, up to
        ``max_bytes``; changes nothing.

        Args:
            max_bytes: Most bytes to read (0: none); None: half of the machine's physical
                memory.

        Returns:
            What was read (files, bytes, bytes left out by the limit, seconds, files that
            could not be read).

        Raises:
            StoreNotFoundError: If the folder holds no store.
            ValueError: If ``max_bytes`` is negative.
        """
        if not self.exists:
            raise StoreNotFoundError.at(self.root)
        return preload_files(store_files(self.root), max_bytes)

    # -- maintenance ---------------------------------------------------------------------
    def fill_records(self) -> int:
        """Copy Chroma records into the registry for live chunks that have no copy yet.

        See :func:`proxypointer.maintenance.fill_records`.

        Returns:
            Number of chunks given a copy.

        Raises:
            StoreNotFoundError: If the store does not exist.
            LockError: If another process holds the write lock past ``store.lock_timeout_s``.
            StoreError: If Chroma cannot be read.
        """
        with self.write_lock():
            return fill_records(self.registry, self.store)

    def repair(self) -> list[str]:
        """Finish or undo whatever an interrupted run left in flight.

        Returns:
            One line per document repaired.

        Raises:
            StoreNotFoundError: If the store does not exist.
            LockError: If another process holds the write lock past ``store.lock_timeout_s``.
        """
        with self.write_lock():
            return repair_all(self.registry, self.store)

    def delete(self, doc_ids: Iterable[str]) -> list[str]:
        """Remove documents and their chunks.

        Args:
            doc_ids: Ids as shown by ``status``.

        Returns:
            The ids that were removed (unknown ids are skipped with a warning). Cached PDF
            conversions (``<store>/converted``) no document uses any more are removed too.

        Raises:
            StoreNotFoundError: If the store does not exist.
            LockError: If another process holds the write lock.

        """
        from .ingest import prune_conversions

        with self.write_lock():
            removed = delete_documents(self.registry, self.store, doc_ids)
            if removed:  # a PDF's cached conversion goes with the last document that uses it
                prune_conversions(self.readers, self.registry)
            return removed

    def status(self) -> dict[str, Any]:
        """Report counts, model, store, and sources that changed on disk since they were indexed.

        Raises:
            StoreNotFoundError: If the store does not exist.
        """
        stats = self.registry.stats()
        key = self.pipeline_key
        stale = stale_sources(self.registry, self.readers, lambda source_key: version_of(source_key, key))
        where = (
            f"http://{self.config.store.host}:{self.config.store.port}"
            if self.config.store.mode == "http"
            else str(self.root.resolve())
        )
        return {
            **stats,
            "model": self.registry.get_meta("model") or self.embedder.name,
            "store": where,
            "collection": self.config.store.collection,
            "stale_sources": stale,
        }

    def check(self, repair: bool = False) -> CheckReport:
        """Verify registry, stored sources and Chroma against each other.

        Takes the write lock (waits up to ``store.lock_timeout_s``), so the three parts are
        compared while no writer is between steps. Checked: every document is settled
        (``ready``); its stored source exists, hashes to its ``doc_hash`` and has
        ``line_count`` lines (and as many pages in its page map, if any); its registered
        chunks all exist in Chroma with the document's live ``version`` and ``doc_hash`` and
        line pointers inside the stored text; Chroma holds no chunk the registry does not
        list; the registry's copies of chunk records (read by queries) can be read and have
        the text and metadata of Chroma's; the cached embeddings and the stored word pieces
        per line (both read by queries) can be used.

        Args:
            repair: Also fix what can be fixed: finish interrupted runs, delete unregistered
                chunks, copy missing or differing chunk records from Chroma, mark documents
                whose chunks or stored source are missing ``stale`` so that the next ingest of
                their files rewrites them, drop damaged cached embeddings (those no live chunk
                uses are kept for the next ingest to reuse; ``ingest(prune=True)`` drops them),
                and count the word pieces per line of every live text again where the stored
                counts differ (tokenises every text).

        Returns:
            A report listing every difference found (before repairs) and each repair made.

        Raises:
            StoreNotFoundError: If the store does not exist.
            LockError: If a writer holds the lock past ``store.lock_timeout_s``.
            StoreError: If Chroma cannot be read.

        """
        with self.write_lock():
            model = self.registry.get_meta("model") or self.embedder.name
            return check(self.registry, self.store, model, repair=repair, tokenizer=self.embedder.tokenizer)


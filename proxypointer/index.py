"""Index: one store (registry, stored sources, a Chroma collection) and the model that fills it.

A small facade over :class:`~proxypointer.store.folder.Store` (the registry, the Chroma
adapter, the embedder, the configuration, the reader table and the write lock): it runs the
stages of :mod:`proxypointer.ingest` (sync) and :mod:`proxypointer.ingest.maintenance`
(repair, delete, prune, status, check), handing them the store, never itself.

Ingestion is a *sync*: a document whose content and settings are unchanged costs a read and a
hash; a changed one is re-chunked and only chunks whose embedded text changed are embedded
again (the embedding cache is keyed by model and text hash). Every version is written
add-new, flip-registry, delete-old, under an inter-process lock, so a crash leaves each
document at its old or its new version and the next run repairs the rest.

Only ``ingest`` creates a store: every other use of a folder that holds none raises
:class:`~proxypointer.errors.StoreNotFoundError` and leaves nothing behind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .errors import StoreNotFoundError
from .ingest.local import run_ingest
from .ingest.maintenance import CheckReport, check, delete_documents, fill_records, repair_all, stale_sources
from .ingest.stages import IngestReport, version_of
from .store.folder import Store
from .store.preload import PreloadReport, preload_files, store_files

__all__ = ["CheckReport", "Index", "IngestReport"]

logger = logging.getLogger(__name__)


class Index(Store):
    """A proxypointer index: registry, stored sources and a Chroma collection.

    A :class:`~proxypointer.store.folder.Store` (registry, collection, model, readers, write
    lock) that also runs ingestion and maintenance. Constructing one touches no file; the parts
    open on first use. Reading or maintaining a store that does not exist raises
    StoreNotFoundError (use :meth:`open` to fail at once); :meth:`ingest` creates it. Its
    arguments (``store``, ``config``, ``embedder``) and ``readers`` are the ``Store``'s.

    Example:
        >>> index = Index("./.proxypointer")                  # doctest: +SKIP
        >>> print(index.ingest(["data/"]).summary())          # doctest: +SKIP

    """

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

        Creates the store if there is none. Runs the stages of ``proxypointer.ingest.stages`` in this
        process (``proxypointer.ingest.local``).

        Args:
            paths: Files or folders (searched recursively for the reader table's suffixes,
                ``*.md``, ``*.markdown`` and ``*.pdf``; see ``proxypointer.read.discovery`` for doc
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
            report = run_ingest(
                self,
                paths,
                prune=prune,
                include_hidden=include_hidden,
                show_progress=show_progress,
                batch_chunks=batch_chunks,
            )
            export = getattr(self.embedder, "export_encoder", None)
            if export is not None and report.documents:  # once per store: queries then need no torch
                export()
            return report

    def preload(self, max_bytes: int | None = None) -> PreloadReport:
        """Read the store's files once so that the first queries find them in the OS page cache.

        For a long-lived reader (``proxypointer serve`` does it at start, ``serve.preload``):
        at 1M chunks the first pass over a set of questions after opening the store was up to
        three times slower than the same questions again (:mod:`proxypointer.store.preload`). Reads
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

        See :func:`proxypointer.ingest.maintenance.fill_records`.

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
        from .ingest.stages import prune_conversions

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


"""The readers a request borrows, and Chroma reloaded when another process wrote.

``Registry`` holds one SQLite connection and ``Retriever`` keeps unlocked caches, so each
worker thread borrows its own :class:`Reader` (an ``Index`` and a ``Retriever``) from a
:class:`ReaderPool` of ``serve.threads``.

An embedded Chroma store is one in-memory system per folder and process, shared by every
client; a client opened after another process wrote still searches the old HNSW index until
*every* client of that folder in the process has been closed. When the registry's generation
moves, the next request closes them all (under :data:`~.concurrency.CHROMA_LOCK`) while no
request runs (the exclusive side of a :class:`~.concurrency.Gate`), so the system reloads
from disk.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..config import ProxyPointerConfig
from ..retrieve.rerank import make_reranker
from ..retrieve.retriever import Retriever
from ..store.preload import PreloadReport
from .concurrency import CHROMA_LOCK, Gate, ServedIndex, SharedEmbedder

__all__ = ["Reader", "ReaderPool"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Reader:
    """What one request uses: its own registry connection, Chroma client and retriever caches."""

    index: ServedIndex
    retriever: Retriever


class ReaderPool:
    """``serve.threads`` readers, one lent per request; Chroma reopened after another process wrote.

    Args:
        root: Store folder.
        config: Full configuration: ``serve.threads`` readers, ``store.mode`` (only a
            persistent store is reloaded), ``rerank`` (one reranker, and one cross-encoder
            model, shared by every reader).
        embedder: The model every reader shares.
        write_lock: This server's write lock: a reload runs only while no write of this
            server does, and holds it meanwhile (its writes go through the same in-process
            Chroma system; another process cannot write until it has finished).
        writer: This server's write index (None when read-only): its Chroma client is
            closed on a reload too.

    Thread-safe: :meth:`borrow` may be called from any thread. A thread that holds a reader
    must not borrow a second one (a reload waiting for it would wait for itself).
    """

    def __init__(
        self,
        root: Path,
        config: ProxyPointerConfig,
        embedder: SharedEmbedder,
        *,
        write_lock: threading.Lock,
        writer: ServedIndex | None,
    ) -> None:
        self.readers: list[Reader] = []
        self._pool: queue.Queue[Reader] = queue.Queue()
        reranker = make_reranker(config.rerank, config.llm)  # one model for every reader (``rerank:``)
        for _ in range(config.serve.threads):
            index = ServedIndex(root, config, embedder)
            reader = Reader(index, Retriever(index, reranker=reranker))
            self.readers.append(reader)
            self._pool.put(reader)
        self._persistent = config.store.mode == "persistent"
        self._writer = writer
        self._write_lock = write_lock
        self._gate = Gate()
        self._probe = ServedIndex(root, config, embedder)  # registry generation only
        self._probe_lock = threading.Lock()
        self._loaded_generation = -1

    def preload(self, max_bytes: int | None) -> PreloadReport:
        """Read the store's files once into the OS page cache (:meth:`~proxypointer.index.Index.preload`).

        Args:
            max_bytes: Most bytes read; None reads them all.
        """
        return self._probe.preload(max_bytes)

    def open(self) -> int:
        """Record the generation loaded, check each reader's model and open its Chroma client.

        Returns:
            The number of documents with a live version.

        Raises:
            ConfigError: If the store was built with another embedding model.
            StoreError: If Chroma cannot be opened.
        """
        with self._probe_lock:
            self._loaded_generation = self._probe.registry.generation()
        for reader in self.readers:
            reader.index.check_model(record=False)
            reader.index.store  # noqa: B018 - open Chroma now, not during the first request
        return sum(1 for r in self.readers[0].index.registry.documents() if r.version)

    @contextmanager
    def borrow(self) -> Iterator[Reader]:
        """Borrow a reader for one request (after reloading Chroma if another process wrote)."""
        self._reload_if_changed()
        with self._gate.shared():
            reader = self._pool.get()
            try:
                yield reader
            finally:
                self._pool.put(reader)

    def close(self) -> None:
        """Close every reader's registry connection and Chroma client, and the probe's."""
        for reader in self.readers:
            reader.index.close()
        self._probe.close()

    def _reload_if_changed(self) -> None:
        """Close every Chroma client of the process when the registry's generation moved.

        Skipped while this server writes: its own writes go through the same in-process Chroma
        system, and another process cannot write until it has finished (the store's lock).
        """
        if not self._persistent:
            return
        with self._probe_lock:
            generation = self._probe.registry.generation()
        if generation == self._loaded_generation or not self._write_lock.acquire(blocking=False):
            return
        try:
            with self._gate.exclusive():
                with self._probe_lock:
                    generation = self._probe.registry.generation()
                if generation != self._loaded_generation:
                    logger.info("the index changed (generation %d); reopening Chroma", generation)
                    with CHROMA_LOCK:
                        for reader in self.readers:
                            reader.index.close()
                        if self._writer is not None:
                            self._writer.close()
                    self._loaded_generation = generation
        finally:
            self._write_lock.release()

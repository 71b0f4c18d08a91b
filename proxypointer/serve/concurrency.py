"""Sharing one index and one model between threads: what the library leaves to its caller.

* :class:`SharedEmbedder`: one embedding model for every thread, query encoding serialised.
* :class:`ServedIndex`: an ``Index`` whose Chroma client is opened and closed under one
  process-wide lock (:data:`CHROMA_LOCK`).
* :class:`Gate`: a readers-writer lock, so that every Chroma client of the process can be
  closed while no request runs (an embedded store reloads from disk only then).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..embed.embedder import Embedder
from ..index import Index
from ..store.chroma import ChromaStore

__all__ = ["CHROMA_LOCK", "Gate", "ServedIndex", "SharedEmbedder"]


class SharedEmbedder:
    """One embedding model shared by the server's threads; query encoding is serialised.

    ``SentenceTransformerEmbedder.encode_query`` is not safe to call from two threads at once:
    its query cache is an unlocked ``OrderedDict`` LRU (``get`` then ``move_to_end`` raises
    KeyError when another thread evicts the key in between); the model and the traced encoder
    are built on first use (twice when two first queries arrive together); and it saves and
    restores torch's intra-op thread count around each pass (with torch's OpenMP build the
    setting is per thread and the default for threads created later, so interleaved calls
    leave that default at whichever value was restored last). The traced TorchScript module
    itself ran from 8 threads at once with the sequential results (a test run without this
    lock), so only the Python around it needs the lock. A query forward pass takes ~13-20 ms
    on one core here (docs/benchmarks.md); serialising it caps query embedding at one core.
    Batch ``encode`` (ingest, under the store's write lock) is passed through unlocked.

    Args:
        embedder: The model to share.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.inner = embedder
        self.name = embedder.name
        self._query_lock = threading.Lock()

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer (counting word pieces is safe from any thread)."""
        return self.inner.tokenizer

    def encode(self, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        """Embed texts (see ``Embedder.encode``); float32 ``(len(texts), dim)``, rows L2-normalised."""
        return self.inner.encode(texts, *args, **kwargs)

    def encode_query(self, query: str) -> Any:
        """Embed one query, one thread at a time; float32 ``(dim,)``, L2-normalised."""
        with self._query_lock:
            encode = getattr(self.inner, "encode_query", None)
            return encode(query) if encode is not None else self.inner.encode([query])[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


#: Held while any Chroma client of this process is opened or closed (chromadb creates its
#: per-folder system without a lock, so two threads opening at once could create two).
CHROMA_LOCK = threading.RLock()


class ServedIndex(Index):
    """An ``Index`` whose Chroma client is opened and closed only under :data:`CHROMA_LOCK`."""

    @property
    def store(self) -> ChromaStore:
        """The Chroma adapter, opened now (``Index.store`` reopens it after another writer)."""
        with CHROMA_LOCK:
            store = super().store
            store.collection  # noqa: B018 - open the client here, under the lock
            return store

    def close(self) -> None:
        """Close the registry connection and the Chroma client (reopened on next use)."""
        with CHROMA_LOCK:
            super().close()


class Gate:
    """Readers-writer lock: requests share it; closing every Chroma client takes it alone.

    Writer-preferring: once a reload waits, new requests wait behind it. A thread that holds
    the shared side must not ask for the exclusive side (it would wait for itself).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._waiting = 0
        self._exclusive = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the shared side (many at once) for the duration of the block."""
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if not self._active:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the exclusive side (alone) for the duration of the block."""
        with self._cond:
            self._waiting += 1
            while self._exclusive or self._active:
                self._cond.wait()
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

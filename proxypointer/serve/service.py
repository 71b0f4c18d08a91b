"""The service both servers call: search, documents, structure, sections, and the writes.

Every request is validated and limited (``serve`` section of the config) by the parts
composed here, so the MCP tools and the HTTP routes are thin adapters with the same
behaviour: :class:`~.reads.ReadAPI` (search, the document list, structure, sections, text),
:class:`~.writes.WriteAPI` (ingest, delete), reading through a :class:`~.readers.ReaderPool`
and :class:`~.snapshots.Snapshots`. Texts are the stored source lines of the live version of
a document (read by its content hash from the registry, never from a path in the request), cut
to a budget in word pieces of the embedding model's tokenizer at a line boundary
(:mod:`.texts`), each with its citation ``<doc_id><suffix>#L<start>-L<end>``. Refusals are
:mod:`.errors`.

Threads: one :class:`Service` serves many requests at once. What the library does that is not
safe to share between threads is kept apart (:mod:`.concurrency`, :mod:`.readers`):

* ``SentenceTransformerEmbedder.encode_query`` keeps an unlocked LRU of query vectors, builds
  its model and traced encoder on first use, and saves and restores torch's thread count
  around each forward pass: a :class:`~.concurrency.SharedEmbedder` serialises query
  encoding (one model, loaded once, shared by every thread).
* ``Registry`` holds one SQLite connection and ``Retriever`` keeps unlocked caches: each
  worker thread borrows its own ``Index`` and ``Retriever`` from a pool of ``serve.threads``.
* An embedded Chroma store is one in-memory system per folder and process, shared by every
  client; a client opened after another process wrote still searches the old HNSW index until
  *every* client of that folder in the process has been closed, and chromadb opens and closes
  clients without a lock. Clients are opened and closed under one lock, and when the
  registry's generation moves (another process wrote) the next request closes them all
  while no request runs, so the system reloads from disk.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ..config import ProxyPointerConfig
from ..embed.embedder import Embedder
from ..embed.make import make_embedder
from ..storefiles import ENCODERS_DIR, is_store
from .concurrency import ServedIndex, SharedEmbedder
from .errors import MAX_ID_CHARS
from .readers import ReaderPool
from .reads import MAX_DOC_IDS, MAX_LIST, ReadAPI
from .snapshots import Snapshots
from .writes import MAX_INGEST_PATHS, WriteAPI

__all__ = ["MAX_DOC_IDS", "MAX_ID_CHARS", "MAX_INGEST_PATHS", "MAX_LIST", "Service"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Stored sources kept in memory, by content hash (immutable, so never stale).
_SOURCE_CACHE = 32


class Service:
    """Search and read an index from many threads; the layer under the MCP and HTTP servers.

    Args:
        store: Store folder (as for :class:`~proxypointer.index.Index`); defaults to
            ``config.store.path``.
        config: Full configuration; its ``serve`` section sets the limits and the threads.
        embedder: Embedding model; defaults to sentence-transformers with ``config.embedding``
            (loaded once, by :meth:`warm_up`). Wrapped in a :class:`SharedEmbedder`.
        allow_write: Accept :meth:`ingest` and :meth:`delete` (off: they raise Forbidden); a
            store folder that holds no store yet gets an empty one.

    Attributes:
        pool: The worker threads' readers (:class:`~.readers.ReaderPool`).
        reads: Search and reads (:class:`~.reads.ReadAPI`).
        writes: Ingest and delete (:class:`~.writes.WriteAPI`).

    Every public method is safe to call from any thread; :meth:`call` runs one in the
    service's pool of ``serve.threads`` worker threads from async code.

    Example:
        >>> service = Service(".proxypointer", load_config(None))        # doctest: +SKIP
        >>> service.warm_up()                                             # doctest: +SKIP
        >>> service.search("parental leave pay", k=3)["sections"][0]["citation"]  # doctest: +SKIP
        'employee-handbook.md#L120-L188'
    """

    def __init__(
        self,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
        *,
        allow_write: bool = False,
    ) -> None:
        self.config = config or ProxyPointerConfig()
        self.limits = self.config.serve
        self.root = Path(store if store is not None else self.config.store.path)
        self.allow_write = allow_write
        self.embedder = SharedEmbedder(
            embedder or make_embedder(self.config.embedding, encoder_dir=self.root / ENCODERS_DIR)
        )
        if allow_write and not is_store(self.root):
            # a server that may ingest starts on an empty store, created now (issue 32)
            with ServedIndex(self.root, self.config, self.embedder) as index:
                index.ingest([], show_progress=False)
            logger.info("%s: created an empty store (serve --allow-write)", self.root)
        write_lock = threading.Lock()  # one write of this server at a time; a Chroma reload holds it too
        self._writer = ServedIndex(self.root, self.config, self.embedder) if allow_write else None
        self.pool = ReaderPool(self.root, self.config, self.embedder, write_lock=write_lock, writer=self._writer)
        self.reads = ReadAPI(
            self.pool, Snapshots(_SOURCE_CACHE), self.embedder, self.limits, default_k=self.config.retrieval.k
        )
        self.writes = WriteAPI(self._writer, write_lock, self.config.store.lock_timeout_s, self.limits.ingest_roots)
        n = self.limits.threads
        self._executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="proxypointer-serve")
        self._write_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="proxypointer-write")

    # -- life cycle -----------------------------------------------------------------------
    def warm_up(self) -> dict[str, Any]:
        """Load the model (and its traced query encoder), open the store; call before serving.

        With ``serve.preload`` the store's files are read once first, so that the first
        requests find them in the OS page cache (:meth:`~proxypointer.index.Index.preload`).

        Returns:
            ``{"documents": n, "store": path, "preloaded_mb": megabytes read (0.0 without
            preload), "preload": one line saying what the preload did, or that it is off}``.

        Raises:
            ConfigError: If the store was built with another embedding model.
            StoreError: If Chroma cannot be opened.
        """
        preloaded, note = 0, "store not preloaded (serve.preload: false)"
        if self.limits.preload:
            report = self.pool.preload(self.limits.preload_max_mb * 1_000_000 or None)
            preloaded, note = report.bytes_read, report.summary()
        self.embedder.encode_query("warm up")
        self.embedder.tokenizer.count("warm up")
        n = self.pool.open()
        logger.info("serving %d documents from %s", n, self.root.resolve())
        return {"documents": n, "store": str(self.root.resolve()), "preloaded_mb": round(preloaded / 1e6, 1),
                "preload": note}

    def close(self) -> None:
        """Stop the worker threads and close every registry connection and Chroma client."""
        self._executor.shutdown(wait=True)
        self._write_executor.shutdown(wait=True)
        self.pool.close()
        if self._writer is not None:
            self._writer.close()

    async def call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run one of the service's methods in its worker threads (writes in their own thread).

        Args:
            fn: A method of this service.
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What ``fn`` returns.
        """
        pool = self._write_executor if fn in (self.ingest, self.delete) else self._executor
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, functools.partial(fn, *args, **kwargs))

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "read_only": bool}``; touches nothing."""
        return {"status": "ok", "read_only": not self.allow_write}

    # -- read API (arguments, results and errors: ReadAPI) ---------------------------------
    def search(
        self,
        query: str,
        k: int | None = None,
        doc_ids: Sequence[str] | None = None,
        prefix: str | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """Find the ``k`` best whole sections for a query, their texts within a budget (:meth:`.ReadAPI.search`)."""
        return self.reads.search(query, k, doc_ids, prefix, max_tokens)

    def explain(
        self, query: str, k: int | None = None, doc_ids: Sequence[str] | None = None, prefix: str | None = None
    ) -> dict[str, Any]:
        """Say why each section of a search ranked: what fusion saw for it (:meth:`.ReadAPI.explain`)."""
        return self.reads.explain(query, k, doc_ids, prefix)

    def document_file(self, doc_id: str) -> Path:
        """Return the original PDF a document was indexed from, while unchanged (:meth:`.ReadAPI.document_file`)."""
        return self.reads.document_file(doc_id)

    def list_documents(self, prefix: str | None = None, offset: int = 0, limit: int = MAX_LIST) -> dict[str, Any]:
        """List the documents with a live version, by doc_id (:meth:`.ReadAPI.list_documents`)."""
        return self.reads.list_documents(prefix, offset, limit)

    def get_structure(self, doc_id: str, depth: int | None = None) -> dict[str, Any]:
        """Return the skeleton tree of one document (:meth:`.ReadAPI.get_structure`)."""
        return self.reads.get_structure(doc_id, depth)

    def get_section(
        self,
        doc_id: str,
        node_id: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """Read the exact stored lines of a section or a line range (:meth:`.ReadAPI.get_section`)."""
        return self.reads.get_section(doc_id, node_id, start_line, end_line, max_tokens)

    def document_text(self, doc_id: str) -> str:
        """Return the whole stored text of a document's live version (:meth:`.ReadAPI.document_text`)."""
        return self.reads.document_text(doc_id)

    # -- write API (arguments, results and errors: WriteAPI) -------------------------------
    def ingest(self, paths: Sequence[str], prune: bool = False) -> dict[str, Any]:
        """Sync the index with files under ``serve.ingest_roots`` (:meth:`.WriteAPI.ingest`)."""
        return self.writes.ingest(paths, prune)

    def delete(self, doc_id: str) -> dict[str, Any]:
        """Remove one document and its chunks (:meth:`.WriteAPI.delete`)."""
        return self.writes.delete(doc_id)

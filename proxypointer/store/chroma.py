"""Chroma adapter: pointer metadata, batched writes, cosine queries, embedded or server.

Collections are created with ``embedding_function=None`` (Chroma's default would download a
model) and ``hnsw:space = cosine``; every add and delete is cut into batches of at most
``client.get_max_batch_size()`` records (shared case 21); metadata holds scalars only
(case 19).

A collection records the store that owns it (collection metadata :data:`OWNER_ID_KEY` and
:data:`OWNER_PATH_KEY`, written at creation): a second store folder pointed at the same
server collection is refused, since each would see the other's chunks as unregistered and
delete them.

Only Chroma's own failures become :class:`~proxypointer.errors.StoreError` ("Chroma refused
a write", "cannot reach"): ``chromadb.errors.ChromaError``, Chroma's validation
``ValueError``, connection and HTTP errors, and the bare ``Exception`` its HTTP client raises
for an unexpected status (:func:`is_chroma_error`). Anything else (a bug of ours) propagates
unchanged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..chunk.chunker import Chunk
from ..config import StoreConfig
from ..errors import ConfigError, MissingDependencyError, ProxyPointerError, StoreError

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

__all__ = [
    "OWNER_ID_KEY",
    "OWNER_PATH_KEY",
    "ChromaStore",
    "Hit",
    "chunk_metadata",
    "embedded_writer",
    "is_chroma_error",
]

logger = logging.getLogger(__name__)

#: Collection metadata key holding the id of the store that owns the collection.
OWNER_ID_KEY = "proxypointer_store_id"
#: Collection metadata key holding that store's folder (for messages).
OWNER_PATH_KEY = "proxypointer_store_path"

#: Pauses (seconds) before each reopen-and-retry of a read that found the embedded index
#: half written by another process (:meth:`ChromaStore._read`); 1.4 s in all at most.
REOPEN_PAUSES_S = (0.1, 0.3, 1.0)

T = TypeVar("T")


class _SharedViews:
    """Which registry generation each embedded Chroma folder's in-process system reflects.

    Chroma shares one in-memory system (its HNSW index included) between every
    ``PersistentClient`` of a process on the same folder, and that system does not see what
    another process writes (shared case 26). So a store opened for a newer registry
    generation than the shared system was opened for would read the old index, and so would
    every other store of the process on that folder, even after reopening its own client.
    :meth:`open` therefore closes every client this module opened on a stale folder (the
    shared system stops with its last client) before it opens a new one, which loads the
    index from disk; the stores whose clients were closed reopen theirs on next use.

    While a writer of this process holds the store's write lock (:meth:`writing`), no other
    process can write, and what this one writes goes through the shared system: it stays
    current, and the generations its commits make never reopen it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: folder -> newest registry generation the folder's shared system reflects
        self._generation: dict[str, int] = {}
        #: folder -> ``(store, client)`` for every open client this module made there
        self._clients: dict[str, list[tuple[weakref.ref[ChromaStore], ClientAPI]]] = {}
        #: folder -> writers of this process holding the store's write lock
        self._writers: dict[str, int] = {}

    def _reopen_if_stale(self, folder: str, generation: int) -> None:
        """Close this module's clients on ``folder`` if its system is older than ``generation``."""
        if generation <= self._generation.get(folder, generation):
            return
        stale = self._clients.pop(folder, [])
        self._generation.pop(folder, None)
        logger.debug("%s: the in-process Chroma system is older than generation %d; closing %d client(s)",
                     folder, generation, len(stale))
        for ref, client in stale:
            owner = ref()
            if owner is not None:
                owner._forget_client()
            _close_client(client, folder)

    def open(self, store: ChromaStore, folder: str, generation: int | None, make: Callable[[], ClientAPI]) -> ClientAPI:
        """Open a client on ``folder`` that reflects at least registry ``generation`` (None: any)."""
        with self._lock:
            if generation is not None and not self._writers.get(folder):
                self._reopen_if_stale(folder, generation)
            client = make()
            self._clients.setdefault(folder, []).append((weakref.ref(store), client))
            if generation is not None:
                self._generation[folder] = max(generation, self._generation.get(folder, generation))
            return client

    def closed(self, folder: str, client: ClientAPI) -> None:
        """Forget a client its store has closed."""
        with self._lock:
            held = [pair for pair in self._clients.get(folder, []) if pair[1] is not client]
            if held:
                self._clients[folder] = held
            else:
                self._clients.pop(folder, None)
                self._generation.pop(folder, None)

    @contextmanager
    def writing(self, folder: str, generation: Callable[[], int]) -> Iterator[None]:
        """Hold ``folder`` current for a writer of this process (it holds the write lock).

        Stale clients are closed first (``generation()`` is the registry's generation now);
        at the end the folder's system reflects the generation the writer left.
        """
        with self._lock:
            self._reopen_if_stale(folder, generation())
            self._writers[folder] = self._writers.get(folder, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._writers[folder] - 1
                if left:
                    self._writers[folder] = left
                else:
                    del self._writers[folder]
                if folder in self._clients:
                    self._generation[folder] = max(generation(), self._generation.get(folder, 0))


_VIEWS = _SharedViews()


def embedded_writer(root: str | Path, generation: Callable[[], int]) -> contextlib.AbstractContextManager[None]:
    """Context for a writer of this process holding the write lock of the embedded store at ``root``.

    Clients of the process on ``<root>/chroma`` older than the registry's generation now are
    closed first, and none is reopened for the generations the writer commits (see
    :class:`_SharedViews`).

    Args:
        root: Store folder (the Chroma files are in ``<root>/chroma``).
        generation: Returns the registry's current generation.
    """
    return _VIEWS.writing(str(Path(root) / "chroma"), generation)


def _close_client(client: ClientAPI, where: str) -> None:
    """Close a Chroma client; a failure is logged, never raised (it must not mask the caller's error)."""
    if hasattr(client, "close"):
        try:
            client.close()
        except Exception as err:  # noqa: BLE001 - closing must never mask the caller's own error
            logger.debug("closing Chroma client at %s: %s", where, err)


def is_chroma_error(err: BaseException) -> bool:
    """Tell whether ``err`` is Chroma refusing a call or being unreachable, not a bug of the caller.

    Chroma's errors (``chromadb.errors.ChromaError``), its input validation (``ValueError``),
    connection failures (``OSError``, ``httpx.HTTPError``) and the plain ``Exception`` its
    HTTP client raises for a status it has no error type for.
    """
    if type(err) is Exception:
        return True
    try:
        import httpx
        from chromadb.errors import ChromaError
    except ImportError:  # pragma: no cover - chromadb brings httpx
        return isinstance(err, (ValueError, OSError))
    return isinstance(err, (ChromaError, ValueError, OSError, httpx.HTTPError))


def _half_written(err: BaseException) -> bool:
    """Tell whether Chroma failed because another process had not yet written its index files."""
    text = str(err)
    return "Nothing found on disk" in text or "Error creating hnsw segment reader" in text


@contextmanager
def _chroma_call(message: Callable[[BaseException], str]) -> Iterator[None]:
    """Turn Chroma's own failures inside the block into StoreError(message(err)); others pass."""
    try:
        yield
    except ProxyPointerError:
        raise
    except Exception as err:  # narrowed by is_chroma_error: anything else is re-raised as is
        if not is_chroma_error(err):
            raise
        raise StoreError(message(err)) from err


def chunk_metadata(chunk: Chunk, source_path: str) -> dict[str, str | int | float | bool]:
    """Scalar metadata for one chunk: the pointer and its provenance.

    Every value is a ``str``, ``int`` or ``bool`` (never ``None``, a list or a numpy scalar):
    the breadcrumb is stored twice, joined for display and as JSON for a lossless round trip.
    ``page_start``/``page_end`` are the section's 1-based PDF pages and ``chunk_page_start``/
    ``chunk_page_end`` the chunk's (0 for a document without pages; ``chunking.add_pages``).
    """
    return {
        "doc_id": chunk.doc_id,
        "doc_hash": chunk.doc_hash,
        "version": chunk.version,
        "node_id": chunk.node_id,
        "chunk_index": int(chunk.chunk_index),
        "kind": chunk.kind,
        "title": chunk.title,
        "level": int(chunk.level),
        "parent_id": chunk.parent_id,
        "breadcrumb": " > ".join(chunk.breadcrumb),
        "breadcrumb_json": json.dumps(list(chunk.breadcrumb), ensure_ascii=False),
        "start_line": int(chunk.start_line),
        "end_line": int(chunk.end_line),
        "body_end_line": int(chunk.body_end_line),
        "chunk_start_line": int(chunk.chunk_start_line),
        "chunk_end_line": int(chunk.chunk_end_line),
        "source": source_path,
        "content_hash": chunk.content_hash,
        "n_tokens": int(chunk.n_tokens),
        "empty_body": bool(chunk.empty_body),
        "page_start": int(chunk.page_start),
        "page_end": int(chunk.page_end),
        "chunk_page_start": int(chunk.chunk_page_start),
        "chunk_page_end": int(chunk.chunk_page_end),
    }


@dataclass(frozen=True, slots=True)
class Hit:
    """One chunk returned by a vector query.

    Attributes:
        chunk_id: Chroma id.
        text: Chunk text as stored.
        metadata: Its pointer metadata (see :func:`chunk_metadata`).
        score: Cosine similarity, ``1 - distance``; higher is better.

    """

    chunk_id: str
    text: str
    metadata: dict[str, Any]
    score: float


class ChromaStore:
    """One Chroma collection, embedded (``PersistentClient``) or on a server (``HttpClient``).

    Args:
        config: Store settings.
        root: Folder of the embedded store (``<root>/chroma``); ignored in ``http`` mode.
        owner: ``(store_id, store_path)`` written into the collection's metadata at creation
            and compared on every open (None: a store without an id, read only).
        adopt: Mark an unmarked, non-empty collection as this store's (see :meth:`_claim`).
        generation: Embedded mode: the registry generation this store must see. Opening it
            reopens the process's other clients on the folder when they are older
            (:class:`_SharedViews`); None (a writer of its own, a test) opens as Chroma does.

    Raises:
        StoreError: If Chroma cannot be opened or reached, or the collection belongs to
            another store (named in the message).
        MissingDependencyError: If chromadb is not installed.

    """

    def __init__(
        self,
        config: StoreConfig,
        root: str | Path,
        owner: tuple[str, str] | None = None,
        adopt: bool = False,
        generation: int | None = None,
    ) -> None:
        self.config = config
        self.root = Path(root)
        #: ``(store_id, store_path)`` of the store using this collection; None for a store
        #: that has no id yet (it reads any collection not marked by another folder, marks none).
        self.owner = owner
        #: Take an unmarked collection that already holds chunks (the store's own, from before
        #: collections were marked); an empty one is always taken.
        self.adopt = adopt
        #: Optional cap below Chroma's own max batch size (tests lower it to force several
        #: write batches per document); ``None`` uses ``client.get_max_batch_size()``.
        self.batch_limit: int | None = None
        #: Registry generation this store must see (embedded mode; see :class:`_SharedViews`).
        self.generation = generation
        self._client: ClientAPI | None = None
        self._collection: Collection | None = None
        self._max_batch: int | None = None

    @property
    def where(self) -> str:
        """``http://host:port`` of the server, or the folder of the embedded store."""
        cfg = self.config
        if cfg.mode == "http":
            return f"{'https' if cfg.ssl else 'http'}://{cfg.host}:{cfg.port}"
        return str(self.root / "chroma")

    def close(self) -> None:
        """Release the client; the next use opens a fresh one.

        An embedded client caches the HNSW index in memory, so a process that reads while
        another one writes sees the other's writes only after reopening (shared case 26).
        Chroma shares one in-memory system per folder and process, which stops with its last
        client; a store opened for a newer registry generation closes the others
        (:class:`_SharedViews`).
        """
        client = self._client
        self._forget_client()
        if client is not None:
            if self.config.mode == "persistent":
                _VIEWS.closed(self.where, client)
            _close_client(client, self.where)

    def _forget_client(self) -> None:
        """Drop the client and collection handles (their owner closes the client)."""
        self._client, self._collection, self._max_batch = None, None, None

    @property
    def client(self) -> ClientAPI:
        """The Chroma client (created on first use).

        Raises:
            StoreError: If the server cannot be reached or the folder cannot be opened.
            ConfigError: If ``store.token_env`` names an unset variable.
        """
        if self._client is None:
            try:
                import chromadb
                from chromadb.config import Settings
            except ImportError as err:
                raise MissingDependencyError("the store needs chromadb; pip install chromadb") from err
            settings = Settings(anonymized_telemetry=False)
            cfg = self.config
            hint = "is `chroma run` up and reachable?" if cfg.mode == "http" else "check the folder"
            with _chroma_call(lambda err: f"{self.where}: cannot open Chroma ({type(err).__name__}: {err}); {hint}"):
                if cfg.mode == "http":
                    headers = dict(cfg.headers)
                    if cfg.token_env:
                        token = os.environ.get(cfg.token_env)
                        if not token:
                            raise ConfigError(f"store.token_env: environment variable {cfg.token_env} is not set")
                        headers["Authorization"] = f"Bearer {token}"
                    client = chromadb.HttpClient(
                        host=cfg.host, port=cfg.port, ssl=cfg.ssl, headers=headers or None, settings=settings
                    )
                    client.heartbeat()
                else:
                    path = self.root / "chroma"
                    path.mkdir(parents=True, exist_ok=True)
                    client = _VIEWS.open(self, self.where, self.generation,
                                         lambda: chromadb.PersistentClient(path=str(path), settings=settings))
            self._client = client
        return self._client

    @property
    def collection(self) -> Collection:
        """The collection, created with cosine space, no embedding function and its owner's mark.

        Raises:
            StoreError: If it cannot be opened, or it belongs to another store (both named).
        """
        if self._collection is None:
            client = self.client
            metadata: dict[str, str] = {"hnsw:space": "cosine"}
            if self.owner:
                metadata[OWNER_ID_KEY], metadata[OWNER_PATH_KEY] = self.owner
            with _chroma_call(
                lambda err: f"{self.where}: cannot open collection {self.config.collection!r} "
                f"({type(err).__name__}: {err}); check store.collection"
            ):
                collection = client.get_or_create_collection(
                    name=self.config.collection, embedding_function=None, metadata=metadata
                )
                self._claim(collection)
            self._collection = collection
        return self._collection

    def _claim(self, collection: Collection) -> None:
        """Refuse a collection another store owns; mark an unmarked one this store may take.

        An unmarked collection (made before stores marked theirs) is taken when it is empty or
        :attr:`adopt` is set (this store already has chunks in it); a collection marked by
        the same store folder, re-created since (its recorded path is ours), is taken over.
        """
        meta = dict(collection.metadata or {})
        mark, mark_path = meta.get(OWNER_ID_KEY), str(meta.get(OWNER_PATH_KEY, "?"))
        ours = self.owner[0] if self.owner else None
        here = self.owner[1] if self.owner else str(self.root.resolve())
        name = self.config.collection
        if mark is not None and mark == ours:
            return
        if mark is not None and mark_path != here:
            raise StoreError(
                f"{self.where}: collection {name!r} belongs to the store {mark_path} (store id {str(mark)[:8]}), "
                f"not to this one ({here}); two stores on one collection delete each other's chunks. Give this "
                f"store its own store.collection, or run from {mark_path}"
            )
        if self.owner is None:  # a store without an id yet (only read so far): nothing to mark
            return
        if mark is None and not self.adopt and collection.count():
            raise StoreError(
                f"{self.where}: collection {name!r} already holds {collection.count()} chunks written by "
                f"another store (it carries no owner mark); give this store its own store.collection"
            )
        if mark is not None:
            logger.warning("%s: collection %r was made by an earlier store in %s; this store takes it over",
                           self.where, name, here)
        keep = {k: v for k, v in meta.items() if not k.startswith("hnsw:")}  # the space cannot be re-set
        collection.modify(metadata={**keep, OWNER_ID_KEY: self.owner[0], OWNER_PATH_KEY: self.owner[1]})

    @property
    def max_batch(self) -> int:
        """Records per write or read call.

        ``client.get_max_batch_size()`` (5,461 here, STACK.md; asked once per client), capped
        by :attr:`batch_limit` when set.
        """
        if self._max_batch is None:
            client = self.client
            with _chroma_call(lambda err: f"{self.where}: cannot ask Chroma for its max batch size ({err})"):
                self._max_batch = int(client.get_max_batch_size())
        if self.batch_limit is not None:
            return max(1, min(self._max_batch, self.batch_limit))
        return self._max_batch

    def _read(self, what: str, call: Callable[[Collection], T]) -> T:
        """Run a read on the collection; StoreError naming ``what`` if Chroma fails.

        In embedded mode a reader that opens the collection while another process is writing
        its index files can find them missing ("Error creating hnsw segment reader: Nothing
        found on disk", shared case 26): the read is retried on a reopened client after each
        pause of :data:`REOPEN_PAUSES_S` before it fails. A read whose client was closed under
        it (another store of the process opened for a newer generation, :class:`_SharedViews`)
        is retried at once on a new one.
        """
        for pause in (*REOPEN_PAUSES_S, None):
            collection = self.collection
            try:
                return call(collection)
            except Exception as err:  # narrowed by is_chroma_error: anything else is re-raised as is
                if not is_chroma_error(err):
                    raise
                if pause is not None and self._collection is not collection:
                    logger.debug("%s: client closed during a read (%s); retrying on a new one", self.where, err)
                    continue
                if pause is None or self.config.mode != "persistent" or not _half_written(err):
                    raise StoreError(f"{self.where}: {what} ({type(err).__name__}: {err})") from err
                logger.debug("%s: %s; reopening in %.1f s", self.where, err, pause)
            self.close()
            time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def count(self) -> int:
        """Count the records in the collection."""
        return int(self._read("cannot count the collection", lambda c: c.count()))

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray, source_path: str) -> None:
        """Write chunks with their vectors, in batches.

        Args:
            chunks: Chunks of one document version (ids are new for a new version).
            vectors: float32 ``(len(chunks), dim)``, L2-normalised.
            source_path: Recorded in metadata for citations.

        Raises:
            StoreError: If Chroma refuses a batch; the message names the document.

        """
        self.add_documents([(chunks, vectors, source_path)])

    def add_documents(self, documents: Sequence[tuple[Sequence[Chunk], np.ndarray, str]]) -> None:
        """Write the chunks of several documents in as few Chroma calls as the batch limit allows.

        Chroma 1.5.9 wrote ~170 chunks/s in 40-record calls (one paper) and ~420 chunks/s in
        1,000-record calls here (docs/benchmarks.md), so a group of documents is written
        together rather than one call per document. Writes are upserts: writing the same chunks
        again after a failure is harmless.

        Args:
            documents: ``(chunks, vectors, source_path)`` per document, as for :meth:`add`.

        Raises:
            StoreError: If Chroma refuses a batch; the message names the document(s) in it.
        """
        records = [
            (c, vectors[i], source) for chunks, vectors, source in documents for i, c in enumerate(chunks)
        ]
        step = self.max_batch
        collection = self.collection
        for i in range(0, len(records), step):
            part = records[i : i + step]
            ids = [c.chunk_id for c, _, _ in part]
            embeddings = np.stack([v for _, v, _ in part])
            documents = [c.text for c, _, _ in part]
            metadatas = [chunk_metadata(c, source) for c, _, source in part]
            names = list(dict.fromkeys(source for _, _, source in part))
            where = names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} other document(s)"
            with _chroma_call(lambda err, w=where: f"{w}: Chroma refused a write ({type(err).__name__}: {err})"):
                collection.upsert(ids=ids, embeddings=embeddings, documents=documents, metadatas=metadatas)

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete records by id, in batches; unknown ids are ignored."""
        step = self.max_batch
        ids = list(dict.fromkeys(ids))
        collection = self.collection
        for i in range(0, len(ids), step):
            with _chroma_call(
                lambda err: f"{self.where}: Chroma refused a delete from {self.config.collection!r} ({err})"
            ):
                collection.delete(ids=ids[i : i + step])

    def _paged(self, where: dict[str, Any] | None, include: list[str]) -> Iterator[dict[str, Any]]:
        """``collection.get`` page by page (at most :attr:`max_batch` records each)."""
        step = self.max_batch
        offset = 0
        while True:
            got = self._read(
                "cannot read the collection",
                lambda c, o=offset: c.get(where=where or None, include=include, limit=step, offset=o),
            )
            yield got
            if len(got["ids"]) < step:
                return
            offset += step

    def ids_where(self, where: dict[str, Any]) -> list[str]:
        """Ids of every record matching a metadata filter (paged)."""
        return [i for page in self._paged(where, []) for i in page["ids"]]

    def all_ids(self) -> list[str]:
        """Every id in the collection (paged)."""
        return [i for page in self._paged(None, []) for i in page["ids"]]

    def text_pages(self) -> Iterator[tuple[list[str], list[str]]]:
        """``(ids, texts)`` of every record, one page of at most :attr:`max_batch` at a time."""
        for page in self._paged(None, ["documents"]):
            ids = page["ids"]
            yield ids, [d or "" for d in (page["documents"] or [None] * len(ids))]

    def all_metadata(self) -> dict[str, dict[str, Any]]:
        """``id -> metadata`` of every record (paged; for ``Index.check``)."""
        out: dict[str, dict[str, Any]] = {}
        for page in self._paged(None, ["metadatas"]):
            for i, m in zip(page["ids"], page["metadatas"] or [None] * len(page["ids"]), strict=True):
                out[i] = dict(m or {})
        return out

    def query(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        """Nearest chunks to one query vector, best first.

        Args:
            vector: float32 ``(dim,)``, L2-normalised.
            n: Chunks wanted; capped at the collection size (Chroma raises otherwise).
            where: Chroma metadata filter, e.g. ``{"doc_id": "handbook"}``.

        Returns:
            Up to ``n`` hits with cosine similarity scores.

        """
        total = self.count()
        if total == 0:
            return []
        query = [np.asarray(vector, dtype=np.float32)]
        res = self._read(
            "query failed",
            lambda c: c.query(
                query_embeddings=query,
                n_results=min(n, total),
                where=where or None,
                include=["documents", "metadatas", "distances"],
            ),
        )
        ids = res["ids"][0]
        docs = res["documents"][0] if res.get("documents") else [""] * len(ids)
        metas = res["metadatas"][0] if res.get("metadatas") else [{}] * len(ids)
        dists = res["distances"][0] if res.get("distances") else [0.0] * len(ids)
        return [
            Hit(i, d or "", dict(m or {}), 1.0 - float(x)) for i, d, m, x in zip(ids, docs, metas, dists, strict=True)
        ]

    def query_ids(self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """Ids and cosine similarities of the nearest chunks, best first, without their records.

        Reading 50 records' metadata and text back costs Chroma about ten times the search
        itself (29 vs 2.8 ms at 100k chunks, docs/benchmarks.md); chunk ids carry the doc_id,
        version and node_id that deduplication needs, so callers read records only for the
        winners (:meth:`get`).

        Args:
            vector: float32 ``(dim,)``, L2-normalised.
            n: Ids wanted; fewer come back when the collection (or the filter) holds fewer.
            where: Chroma metadata filter.

        Returns:
            ``(chunk_id, score)`` pairs, score = ``1 - cosine distance``.

        Raises:
            StoreError: If the query fails.
        """
        vec = [np.asarray(vector, dtype=np.float32)]

        def search(k: int) -> Callable[[Collection], Any]:
            return lambda c: c.query(query_embeddings=vec, n_results=k, where=where or None, include=["distances"])

        try:
            res = self._read("query failed", search(n))
        except StoreError:  # older servers refuse n_results above the collection size
            total = self.count()
            if total == 0:
                return []
            if total >= n:
                raise
            res = self._read("query failed", search(total))
        ids = res["ids"][0] if res.get("ids") else []
        dists = res["distances"][0] if res.get("distances") else [0.0] * len(ids)
        return [(i, 1.0 - float(x)) for i, x in zip(ids, dists, strict=True)]

    def vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """Read the stored vectors of records by id (unknown ids are left out), in batches.

        Returns:
            ``(ids, vectors)``: the ids found, in Chroma's order, and float32 ``(len(ids), dim)``.
        """
        found: list[str] = []
        parts: list[np.ndarray] = []
        step = self.max_batch
        ids = list(ids)
        for i in range(0, len(ids), step):
            part = ids[i : i + step]
            got = self._read("cannot read vectors", lambda c, p=part: c.get(ids=p, include=["embeddings"]))
            if len(got["ids"]):
                found.extend(got["ids"])
                parts.append(np.asarray(got["embeddings"], dtype=np.float32))
        if not parts:
            return [], np.zeros((0, 0), dtype=np.float32)
        return found, np.concatenate(parts)

    def get(self, ids: Sequence[str]) -> list[Hit]:
        """Get records by id (score 0), in the order Chroma returns them."""
        if not ids:
            return []
        wanted = list(ids)
        res = self._read("cannot read records", lambda c: c.get(ids=wanted, include=["documents", "metadatas"]))
        return [
            Hit(i, d or "", dict(m or {}), 0.0)
            for i, d, m in zip(res["ids"], res["documents"], res["metadatas"], strict=True)
        ]

"""Chroma adapter: pointer metadata, batched writes, cosine queries, embedded or server.

:class:`ChromaStore` reads and writes one collection through a
:class:`~proxypointer.store.chromaclient.ChromaConnection` (the client's lifecycle, the
collection's owner mark, reads retried on reopen). Every add and delete is cut into batches
of at most ``client.get_max_batch_size()`` records (shared case 21); metadata holds scalars
only (case 19).

Only Chroma's own failures become :class:`~proxypointer.errors.StoreError` ("Chroma refused
a write", "cannot reach"; :func:`~proxypointer.store.chromaclient.is_chroma_error`). Anything
else (a bug of ours) propagates unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..chunk.chunker import Chunk
from ..config import StoreConfig
from ..errors import StoreError
from .chromaclient import (
    OWNER_ID_KEY,
    OWNER_PATH_KEY,
    ChromaConnection,
    chroma_call,
    embedded_writer,
    is_chroma_error,
)

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
    """One Chroma collection, embedded (``PersistentClient``) or on a server (``HttpClient``): batched I/O.

    Writes, deletes, paged reads and cosine queries, cut into batches of :attr:`max_batch`
    records; the client, the owner mark and the retried reads are :attr:`connection`'s.

    Args:
        config: Store settings.
        root: Folder of the embedded store (``<root>/chroma``); ignored in ``http`` mode.
        owner: ``(store_id, store_path)`` written into the collection's metadata at creation
            and compared on every open (None: a store without an id, read only).
        adopt: Mark an unmarked, non-empty collection as this store's
            (:meth:`~proxypointer.store.chromaclient.ChromaConnection._claim`).
        generation: Embedded mode: the registry generation this store must see. Opening it
            reopens the process's other clients on the folder when they are older
            (:class:`~proxypointer.store.chromaclient._SharedViews`); None (a writer of its own,
            a test) opens as Chroma does.

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
        #: The collection opened: client lifecycle, owner mark, retried reads.
        self.connection = ChromaConnection(config, root, owner, adopt, generation)
        #: Optional cap below Chroma's own max batch size (tests lower it to force several
        #: write batches per document); ``None`` uses ``client.get_max_batch_size()``.
        self.batch_limit: int | None = None

    @property
    def config(self) -> StoreConfig:
        """Store settings."""
        return self.connection.config

    @property
    def root(self) -> Path:
        """Folder of the embedded store (``<root>/chroma``)."""
        return self.connection.root

    @property
    def where(self) -> str:
        """``http://host:port`` of the server, or the folder of the embedded store."""
        return self.connection.where

    @property
    def generation(self) -> int | None:
        """Registry generation this store must see (embedded mode; :attr:`ChromaConnection.generation`)."""
        return self.connection.generation

    @generation.setter
    def generation(self, value: int | None) -> None:
        self.connection.generation = value

    @property
    def client(self) -> ClientAPI:
        """The Chroma client, opened on first use (:attr:`ChromaConnection.client`)."""
        return self.connection.client

    @property
    def collection(self) -> Collection:
        """The collection, opened and claimed on first use (:attr:`ChromaConnection.collection`)."""
        return self.connection.collection

    def close(self) -> None:
        """Release the client; the next use opens a fresh one (:meth:`ChromaConnection.close`)."""
        self.connection.close()

    @property
    def max_batch(self) -> int:
        """Records per write or read call.

        ``client.get_max_batch_size()`` (5,461 here, docs/stack.md; asked once per client), capped
        by :attr:`batch_limit` when set.
        """
        size = self.connection.max_batch_size
        if self.batch_limit is not None:
            return max(1, min(size, self.batch_limit))
        return size

    def count(self) -> int:
        """Count the records in the collection."""
        return int(self.connection.read("cannot count the collection", lambda c: c.count()))

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
            with chroma_call(lambda err, w=where: f"{w}: Chroma refused a write ({type(err).__name__}: {err})"):
                collection.upsert(ids=ids, embeddings=embeddings, documents=documents, metadatas=metadatas)

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete records by id, in batches; unknown ids are ignored."""
        step = self.max_batch
        ids = list(dict.fromkeys(ids))
        collection = self.collection
        for i in range(0, len(ids), step):
            with chroma_call(
                lambda err: f"{self.where}: Chroma refused a delete from {self.config.collection!r} ({err})"
            ):
                collection.delete(ids=ids[i : i + step])

    def _paged(self, where: dict[str, Any] | None, include: list[str]) -> Iterator[dict[str, Any]]:
        """``collection.get`` page by page (at most :attr:`max_batch` records each)."""
        step = self.max_batch
        offset = 0
        while True:
            got = self.connection.read(
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
        res = self.connection.read(
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
            res = self.connection.read("query failed", search(n))
        except StoreError:  # older servers refuse n_results above the collection size
            total = self.count()
            if total == 0:
                return []
            if total >= n:
                raise
            res = self.connection.read("query failed", search(total))
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
            got = self.connection.read("cannot read vectors", lambda c, p=part: c.get(ids=p, include=["embeddings"]))
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
        res = self.connection.read(
            "cannot read records", lambda c: c.get(ids=wanted, include=["documents", "metadatas"])
        )
        return [
            Hit(i, d or "", dict(m or {}), 0.0)
            for i, d, m in zip(res["ids"], res["documents"], res["metadatas"], strict=True)
        ]

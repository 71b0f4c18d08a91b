"""The ingest stages as Ray Data transforms: what runs on the workers of ``--engine ray``.

One row schema (:func:`row_schema`) flows through every transform, so each one passes on
what it does not handle. A row is one of:

- ``doc``: a parsed document; ``payload`` is its pickled :class:`~proxypointer.ingest.stages.PreparedDocument`
  (what the driver commits);
- ``chunk``: one chunk to embed and write (``chunk`` is the pickled
  :class:`~proxypointer.chunk.chunker.Chunk`, ``vector`` its float32 bytes once known); after the
  writers, an acknowledgement that it is in Chroma;
- ``failed`` / ``empty``: a file that could not be parsed, or holds no text (``message``);
- ``refused``: a document Chroma refused to write (``message``).

The transforms, in pipeline order (:mod:`proxypointer.ingest.ray.runner` chains them):

1. :func:`parse_batch` (tasks): read + tree + chunk with the index's readers
   (``ingest.parse_file``); pure.
2. :class:`RegistryGate` (one actor on the driver's node): marks each document ``writing`` in
   the registry before any of its chunks can reach Chroma (``Registry.begin_write``), and fills
   in the vectors the embedding cache holds.
3. :class:`EmbedActor` (an actor pool, one model per actor): encodes the chunks that still
   have no vector; cached ones pass through unencoded.
4. :class:`CacheWriter` (one actor on the driver's node): stores the fresh vectors in the
   embedding cache before they are written, so an interrupted run keeps them.
5. :func:`write_batch` (a few tasks): upserts the chunks into the Chroma server and returns
   one acknowledgement per chunk written (``ingest.write_documents``).

Nothing here imports Ray at module level; pyarrow (a dependency of Ray Data) is imported by the
transforms.
"""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...chunk.chunker import TokenCountCache
from ...config import ChunkingConfig, EmbeddingConfig, StoreConfig, TreeConfig
from ...errors import ConfigError, EmptyDocumentError, ProxyPointerError
from ...read.readers import Reader
from ...store.chroma import ChromaStore
from ...store.registry import Registry
from ..stages import encode_groups, parse_file, write_documents

if TYPE_CHECKING:
    import pyarrow as pa

    from ...embed.embedder import Embedder

__all__ = [
    "CHUNK",
    "DOC",
    "EMPTY",
    "FAILED",
    "REFUSED",
    "CacheWriter",
    "EmbedActor",
    "RegistryGate",
    "SentenceTransformerFactory",
    "ShippedEmbedder",
    "make_row",
    "parse_batch",
    "row_schema",
    "rows_table",
    "write_batch",
]

logger = logging.getLogger(__name__)

#: Row kinds (the ``kind`` column).
DOC, CHUNK, FAILED, EMPTY, REFUSED = "doc", "chunk", "failed", "empty", "refused"

#: Columns and their Arrow types, by name: ``string``, ``binary``, ``bool``, ``float64``.
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("doc_id", "string"),
    ("chunk_id", "string"),
    ("content_hash", "string"),
    ("doc_hash", "string"),
    ("version", "string"),
    ("source", "string"),  # resolved path of the file (Chunk metadata, registry source_path)
    ("embed_text", "string"),  # chunk rows until embedded
    ("chunk", "binary"),  # pickled Chunk, chunk rows until written
    ("vector", "binary"),  # float32 (dim,) bytes, L2-normalised; b"" until known
    ("fresh", "bool"),  # the row whose vector this batch encoded (one per distinct text)
    ("cached", "bool"),  # vector taken from the embedding cache
    ("payload", "binary"),  # doc rows: pickled PreparedDocument
    ("message", "string"),  # failed, empty, refused rows
    # worker seconds spent on this row's share of a stage (parse: per document; embed and
    # store: a whole batch's time on its first row)
    ("t_read", "float64"),
    ("t_tree", "float64"),
    ("t_chunking", "float64"),
    ("t_embed", "float64"),
    ("t_store", "float64"),
)

_DEFAULTS: dict[str, Any] = {
    "string": "",
    "binary": b"",
    "bool": False,
    "float64": 0.0,
}


def row_schema() -> pa.Schema:
    """Give the Arrow schema of every row between the transforms (see the module docstring)."""
    import pyarrow as pa

    types = {"string": pa.string(), "binary": pa.binary(), "bool": pa.bool_(), "float64": pa.float64()}
    return pa.schema([(name, types[kind]) for name, kind in _COLUMNS])


def make_row(kind: str, doc_id: str, **fields: Any) -> dict[str, Any]:
    """One row with every column, ``fields`` set and the rest empty.

    Raises:
        KeyError: If a field is not a column.
    """
    row = {name: _DEFAULTS[t] for name, t in _COLUMNS}
    for name, value in fields.items():
        if name not in row:
            raise KeyError(f"unknown row column {name!r}")
        row[name] = value
    row["kind"], row["doc_id"] = kind, doc_id
    return row


def rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows -> an Arrow table of :func:`row_schema` (an empty list gives an empty table)."""
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=row_schema())


# -- 1. parse (tasks) ---------------------------------------------------------------------------
def parse_batch(
    batch: pa.Table,
    *,
    readers: dict[str, Reader],
    pipeline_key: str,
    tree_config: TreeConfig,
    chunking_config: ChunkingConfig,
    tokenizer: Any,
) -> pa.Table:
    """Read, parse and chunk the pending files of a batch (``ingest.parse_file``).

    Args:
        batch: Rows with a ``pending`` column: pickled :class:`~proxypointer.ingest.stages.Pending`.
        readers: The index's suffix table; the reader of each file's suffix reads it, so any
            format the index reads (markdown, PDF through its converter) is read here.
        pipeline_key: ``Store.pipeline_key``.
        tree_config: Heading rules.
        chunking_config: Chunk sizes and strategy.
        tokenizer: The embedding model's tokenizer (word pieces); words are counted once per
            batch (``TokenCountCache``).

    Returns:
        Per file: a ``doc`` row followed by one ``chunk`` row per chunk, or one ``failed`` /
        ``empty`` row naming the file.
    """
    counter = TokenCountCache(tokenizer)
    rows: list[dict[str, Any]] = []
    for blob in batch.column("pending").to_pylist():
        pending = pickle.loads(blob)
        file = pending.file
        st: dict[str, float] = {}
        try:
            doc = parse_file(
                pending, readers[file.suffix], pipeline_key, tree_config, chunking_config, counter, stage_seconds=st
            )
        except EmptyDocumentError as err:
            rows.append(make_row(EMPTY, file.doc_id, message=str(err), source=file.real_path))
            continue
        except ProxyPointerError as err:  # this file only: unreadable, undecodable, a converter's failure
            rows.append(make_row(FAILED, file.doc_id, message=str(err), source=file.real_path))
            continue
        rows.append(
            make_row(
                DOC,
                doc.doc_id,
                doc_hash=doc.doc_hash,
                version=doc.version,
                source=file.real_path,
                payload=pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL),
                t_read=st.get("read", 0.0),
                t_tree=st.get("tree", 0.0),
                t_chunking=st.get("chunking", 0.0),
            )
        )
        for c in doc.chunks:
            rows.append(
                make_row(
                    CHUNK,
                    doc.doc_id,
                    chunk_id=c.chunk_id,
                    content_hash=c.content_hash,
                    doc_hash=doc.doc_hash,
                    version=doc.version,
                    source=file.real_path,
                    embed_text=c.embed_text,
                    chunk=pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL),
                )
            )
    return rows_table(rows)


# -- 2. registry gate (one actor beside the store) ----------------------------------------------
class RegistryGate:
    """Marks documents ``writing`` before their chunks go on, and fills in cached vectors.

    Runs as a single actor on the driver's node (it opens the store's registry). A document is
    marked on the first of its chunk rows that passes, so a crash at any later point leaves
    it for ``repair`` (docs/lifecycle.md); a document the registry already holds ``ready`` at
    that version was committed in this run (a retried batch) and is not marked again.

    Args:
        root: The store folder.
        model: The embedder's name (the cache key's model part).
    """

    def __init__(self, root: str, model: str) -> None:
        self.registry = Registry(root, create=False)
        self.model = model
        self.begun: set[str] = set()

    def __call__(self, batch: pa.Table) -> pa.Table:
        """Mark, then look up; returns the batch with ``vector`` set for cached chunks."""
        import pyarrow as pa

        kinds = batch.column("kind").to_pylist()
        doc_ids = batch.column("doc_id").to_pylist()
        chunk_rows = [i for i, k in enumerate(kinds) if k == CHUNK]
        if not chunk_rows:
            return batch
        sources = batch.column("source").to_pylist()
        doc_hashes = batch.column("doc_hash").to_pylist()
        versions = batch.column("version").to_pylist()
        for i in chunk_rows:
            doc_id = doc_ids[i]
            if doc_id in self.begun:
                continue
            rec = self.registry.get(doc_id)
            if not (rec is not None and rec.state == "ready" and rec.version == versions[i]):
                self.registry.begin_write(doc_id, sources[i], doc_hashes[i])
            self.begun.add(doc_id)
        hashes = batch.column("content_hash").to_pylist()
        known = self.registry.embeddings.get(self.model, [hashes[i] for i in chunk_rows])
        if not known:
            return batch
        vectors = batch.column("vector").to_pylist()
        cached = batch.column("cached").to_pylist()
        for i in chunk_rows:
            vec = known.get(hashes[i])
            if vec is not None:
                vectors[i] = np.asarray(vec, dtype=np.float32).tobytes()
                cached[i] = True
        batch = batch.set_column(batch.schema.get_field_index("vector"), "vector", pa.array(vectors, pa.binary()))
        return batch.set_column(batch.schema.get_field_index("cached"), "cached", pa.array(cached, pa.bool_()))


# -- 3. embed (actor pool) ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SentenceTransformerFactory:
    """Builds the sentence-transformers embedder inside an actor (picklable; no model in it).

    On an actor given a GPU by Ray (``num_gpus``), a config that says ``device: cpu`` (the
    default) runs on ``cuda`` instead: the GPU Ray assigned, the only one the actor sees.

    Attributes:
        config: The index's embedding settings.
        quantize_int8: As ``SentenceTransformerEmbedder``.
    """

    config: EmbeddingConfig
    quantize_int8: bool = False

    def __call__(self) -> Embedder:
        """Build the embedder and load its model (once per actor, before the first batch)."""
        import ray

        from ...embed.embedder import SentenceTransformerEmbedder

        cfg = self.config
        if ray.get_gpu_ids() and cfg.device == "cpu":
            cfg = replace(cfg, device="cuda")
        embedder = SentenceTransformerEmbedder(cfg, quantize_int8=self.quantize_int8, trace_query=False)
        embedder.model  # noqa: B018 - loads it here, so that batches time encoding only
        return embedder


@dataclass(frozen=True, slots=True)
class ShippedEmbedder:
    """Gives each actor a copy of an embedder object (any picklable :class:`Embedder`).

    Attributes:
        embedder: The embedder, pickled with the transform.
    """

    embedder: Any

    def __call__(self) -> Embedder:
        """Return the actor's copy."""
        return self.embedder


class EmbedActor:
    """Encodes the chunks of a batch that have no vector yet, with one model per actor.

    Args:
        make_embedder: Called once, in the actor: builds the embedder, whose model then stays
            loaded for the run (:class:`SentenceTransformerFactory` loads it at once; another
            embedder may load it on its first batch).
        model: The name the store and the embedding cache know the model by; the built
            embedder must carry it.

    Raises:
        ConfigError: If the built embedder's name is not ``model``.
    """

    def __init__(self, make_embedder: Callable[[], Embedder], model: str) -> None:
        self.embedder = make_embedder()
        if self.embedder.name != model:
            raise ConfigError(f"embedding.model: the actors' embedder is {self.embedder.name!r}, the store's {model!r}")

    def __call__(self, batch: pa.Table) -> pa.Table:
        """Encode the missing vectors (each distinct text once, longest first).

        The first row of each text encoded is marked ``fresh`` (the cache writer stores it,
        the driver counts it as embedded); its repeats in the batch get the same vector.
        """
        import pyarrow as pa

        kinds = batch.column("kind").to_pylist()
        vectors = batch.column("vector").to_pylist()
        todo_rows = [i for i, k in enumerate(kinds) if k == CHUNK and not vectors[i]]
        if not todo_rows:
            return batch
        hashes = batch.column("content_hash").to_pylist()
        texts = batch.column("embed_text").to_pylist()
        unique = {hashes[i]: texts[i] for i in todo_rows}
        todo = {h: unique[h] for h in sorted(unique, key=lambda h: -len(unique[h]))}
        t = time.perf_counter()
        got: dict[str, np.ndarray] = {}
        for group in encode_groups(todo, self.embedder, len(todo)):
            got.update(group)
        seconds = time.perf_counter() - t
        fresh = batch.column("fresh").to_pylist()
        first: set[str] = set()
        for i in todo_rows:
            vectors[i] = np.asarray(got[hashes[i]], dtype=np.float32).tobytes()
            fresh[i] = hashes[i] not in first
            first.add(hashes[i])
        t_embed = batch.column("t_embed").to_pylist()
        t_embed[todo_rows[0]] += seconds
        for name, values, kind in (("vector", vectors, pa.binary()), ("fresh", fresh, pa.bool_()),
                                   ("t_embed", t_embed, pa.float64())):
            batch = batch.set_column(batch.schema.get_field_index(name), name, pa.array(values, kind))
        return batch


# -- 4. cache writer (one actor beside the store) -----------------------------------------------
class CacheWriter:
    """Stores the batch's fresh vectors in the embedding cache, before they are written.

    Runs as a single actor on the driver's node. An interrupted run loses at most the vectors
    between the embedding actors and this stage; the next run (either engine) reuses the rest.

    Args:
        root: The store folder.
        model: The embedder's name (the cache key's model part).
    """

    def __init__(self, root: str, model: str) -> None:
        self.registry = Registry(root, create=False)
        self.model = model

    def __call__(self, batch: pa.Table) -> pa.Table:
        """Cache the fresh vectors (one transaction) and pass the batch on."""
        fresh = batch.column("fresh").to_pylist()
        if any(fresh):
            hashes = batch.column("content_hash").to_pylist()
            vectors = batch.column("vector").to_pylist()
            items = {hashes[i]: np.frombuffer(vectors[i], dtype=np.float32) for i, f in enumerate(fresh) if f}
            self.registry.embeddings.put(self.model, items)
        return batch


# -- 5. write (a few tasks) ---------------------------------------------------------------------
def _documents(rows: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Chunk rows grouped by document, documents in order of first appearance."""
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], []).append(r)
    yield from by_doc.items()


def write_batch(
    batch: pa.Table, *, store_config: StoreConfig, root: str, owner: tuple[str, str] | None
) -> pa.Table:
    """Upsert a batch's chunks into the Chroma server; acknowledge each chunk written.

    The documents of the batch are written together; if Chroma refuses, each one on its own
    (``ingest.write_documents``), and a document it still refuses gets a ``refused`` row
    instead of acknowledgements.

    Args:
        batch: Rows of :func:`row_schema`.
        store_config: The index's store settings (``mode: http``).
        root: The store folder (for messages and the collection's owner mark).
        owner: ``(store_id, store_path)`` of the store that owns the collection.

    Returns:
        ``chunk`` acknowledgements (no text, chunk or vector), ``refused`` rows, and the
        batch's other rows, all slimmed of what the driver does not need.
    """
    rows = batch.to_pylist()
    chunk_rows = [r for r in rows if r["kind"] == CHUNK]
    out: list[dict[str, Any]] = []
    seconds = 0.0
    embed_seconds = sum(r["t_embed"] for r in chunk_rows)  # carried on: acknowledgements are new rows
    if chunk_rows:
        t = time.perf_counter()
        groups = list(_documents(chunk_rows))
        items = [
            (
                [pickle.loads(r["chunk"]) for r in group],
                np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in group]),
                group[0]["source"],
            )
            for _, group in groups
        ]
        store = ChromaStore(store_config, Path(root), owner=owner, adopt=True)
        try:
            errors = write_documents(store, items)
        finally:
            store.close()
        seconds = time.perf_counter() - t
        for (doc_id, group), err in zip(groups, errors, strict=True):
            if err is not None:
                out.append(make_row(REFUSED, doc_id, message=str(err), source=group[0]["source"]))
                continue
            out.extend(
                make_row(CHUNK, doc_id, chunk_id=r["chunk_id"], content_hash=r["content_hash"], fresh=r["fresh"],
                         cached=r["cached"])
                for r in group
            )
    for r in rows:
        if r["kind"] != CHUNK:
            out.append({**r, "embed_text": "", "chunk": b"", "vector": b""})
    if out:
        out[0]["t_store"] += seconds
        out[0]["t_embed"] += embed_seconds
    return rows_table(out)

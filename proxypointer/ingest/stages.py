"""Ingestion as explicit stages: what any runner (this process, Ray Data) chains.

A sync runs five stages; any engine that runs them in this order, under the store's write
lock, keeps the guarantees of docs/lifecycle.md (each document old-or-new after a crash, the
next run repairs what was in flight):

1. **discover + plan** (driver): :func:`~proxypointer.read.discovery.discover` lists the files;
   :func:`set_aside` takes out the files whose reader cannot run here (PDFs without the
   ``pdf`` extra); :func:`plan_file` reads each one, computes its source key and compares it
   with the registry. Unchanged files end here (a read and a hash each) and never leave the
   driver; changed ones become a :class:`Pending`.
2. **read + tree + chunk** (pure, picklable in and out): :func:`parse_file` (path in) or
   :func:`prepare_document` (a :class:`~proxypointer.read.readers.ReadResult` in) gives a
   :class:`PreparedDocument`. Files of a reader that converts in batches (PDF: several JVMs
   at once) are read first, all the changed ones of a run together, by :func:`read_batch`,
   and their results go to :func:`prepare_document`.
3. **embed** (cache-aware): :func:`embed_chunks` looks every chunk up in the embedding cache
   and encodes the rest in groups, each group written to the cache in its own transaction, so
   an interrupted run keeps what it computed.
4. **write vectors**: :func:`begin_documents` (registry: store the text, mark ``writing``),
   then :func:`write_vectors` (Chroma upserts; repeatable).
5. **commit**: :func:`commit_document` flips the registry to the new version in one
   transaction, deletes the old version's chunks and marks the document ``ready``.

``proxypointer.ingest.local.run_ingest`` is the single-process runner behind ``Index.ingest``;
``proxypointer.ingest.ray.runner`` runs the same stages on Ray Data. What both do around
the stages is here too: :func:`start_sync` (settle, discover), :func:`plan_changed`,
:func:`empty_note`, :func:`write_documents` and :func:`finish_sync`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..chunk.chunker import Chunk, TokenCountCache, add_pages, chunk_document
from ..config import ChunkingConfig, TreeConfig
from ..docids import escaped
from ..embed.tokenizer import line_token_counts
from ..errors import DocumentError, EmbeddingError, EmptyDocumentError, ProxyPointerError, StoreError
from ..lines import document_hash, split_lines
from ..read.discovery import Discovery, SourceFile, discover
from ..read.readers import Reader, ReadResult, read_bytes
from ..store.chroma import ChromaStore, chunk_metadata
from ..store.records import encode_record
from ..store.registry import Registry
from ..tree.build import DocumentTree, build_tree
from ..tree.pages import stored_page_map
from .maintenance import fill_line_tokens, fill_records, prune_embedding_cache, prune_missing, repair_all

if TYPE_CHECKING:
    from ..embed.embedder import Embedder
    from ..store.folder import Store

__all__ = [
    "Embedded",
    "IngestReport",
    "Pending",
    "PreparedDocument",
    "begin_documents",
    "commit_document",
    "embed_chunks",
    "empty_note",
    "warn_approximate_sizes",
    "encode_groups",
    "finish_sync",
    "missing_embeddings",
    "parse_file",
    "plan_changed",
    "plan_file",
    "prepare_document",
    "prune_conversions",
    "read_batch",
    "reads_in_batches",
    "set_aside",
    "start_sync",
    "version_of",
    "write_documents",
    "write_vectors",
]

logger = logging.getLogger(__name__)

@dataclass(slots=True)
class IngestReport:
    """What one ingest run did.

    Attributes:
        documents: Files found in the given paths (one per file, symlinked aliases counted once).
        indexed: Documents written (new or changed).
        unchanged: Documents skipped because content and settings were unchanged.
        deleted: Documents removed (``prune``).
        skipped: Files skipped because they hold no text (empty or whitespace only; each also
            has a note).
        sections: Sections (nodes or windows) of the documents written.
        chunks: Chunks written.
        embedded: Chunks embedded by the model in this run.
        cached: Chunks whose vector came from the embedding cache.
        cache_pruned: Embedding-cache entries removed because no live chunk uses them
            (``prune``).
        failed: ``(path, message)`` for each file that could not be indexed; what was
            indexed before is kept.
        notes: ``(path, message)`` for files skipped or read with a caveat that is not a
            failure (an empty file, a Windows-1252 fallback).
        seconds: Wall time of the run.
        stage_seconds: Time per stage: read, convert (PDF conversion), tree, chunking, embedding,
            store, registry.

    """

    documents: int = 0
    indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    sections: int = 0
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    cache_pruned: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: documents, sections and chunks written (of the documents indexed), seconds, chunks/s, failures.

        A re-run on unchanged input writes nothing: "3 documents (0 indexed, 3 unchanged, 0
        deleted), 0 sections and 0 chunks written" (``status`` counts what the store holds).
        """
        line = (
            f"{self.documents} documents ({self.indexed} indexed, {self.unchanged} unchanged, "
            f"{self.deleted} deleted), {self.sections} sections and {self.chunks} chunks written "
            f"({self.embedded} embedded, {self.cached} cached) in {self.seconds:.1f} s"
        )
        if self.chunks and self.seconds > 0:
            line += f" ({self.chunks / self.seconds:.1f} chunks/s)"
        if self.cache_pruned:
            line += f"; {self.cache_pruned} unused cached embeddings removed"
        if self.skipped:
            line += f"; {self.skipped} skipped (no text)"
        if self.failed:
            line += f"; {len(self.failed)} failed"
        return line

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "documents": self.documents,
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "skipped": self.skipped,
            "sections": self.sections,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "cached": self.cached,
            "cache_pruned": self.cache_pruned,
            "failed": [{"path": p, "error": m} for p, m in self.failed],
            "notes": [{"path": p, "note": m} for p, m in self.notes],
            "seconds": round(self.seconds, 3),
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
        }


@dataclass(frozen=True, slots=True)
class Pending:
    """A file the plan stage found new or changed. Picklable.

    Attributes:
        file: The file as discovered.
        source_key: Its reader's source key when planned.
        version: Index version planned (:func:`version_of`).
        mtime: Modification time when planned, seconds since the epoch.
        size: Size when planned, bytes.
    """

    file: SourceFile
    source_key: str
    version: str
    mtime: float
    size: int


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """One document read, parsed and chunked, ready to embed and write. Picklable.

    Attributes:
        doc_id: Document id.
        source_key: The reader's source key of what was read.
        doc_hash: SHA-256 of ``text`` (``chunking.document_hash``): the stored source's address.
        version: Index version; every chunk id carries it.
        title: Display title.
        line_count: Lines of ``text``.
        n_sections: Nodes of its tree (windows for a document without headings).
        chunks: Chunks in document order.
        tree_json: Skeleton tree as stored by the registry (:meth:`~proxypointer.tree.build.DocumentTree.to_json`).
        text: The normalised text that is stored and sliced.
        pages: Page of each line, or None (see ``ReadResult.pages``).
        warnings: The reader's warnings about the file.
        line_tokens: ``(tokenizer name, word pieces of each line of text)``, stored beside the
            text for the delivery policy (``StoredSources.save``); None when the tokenizer
            has no name.
    """

    doc_id: str
    source_key: str
    doc_hash: str
    version: str
    title: str
    line_count: int
    n_sections: int
    chunks: tuple[Chunk, ...]
    tree_json: str
    text: str
    pages: tuple[int, ...] | None = None
    warnings: tuple[str, ...] = ()
    line_tokens: tuple[str, tuple[int, ...]] | None = None


def version_of(source_key: str, pipeline_key: str) -> str:
    """Index version of a document: 10 hex digits of SHA-1 over its source key and the pipeline key.

    Args:
        source_key: The reader's source key (markdown: the text's SHA-256).
        pipeline_key: ``Store.pipeline_key``: a hash of the model, tree and chunking settings.
    """
    return hashlib.sha1(f"{source_key}:{pipeline_key}".encode()).hexdigest()[:10]


# -- 1. plan ----------------------------------------------------------------------------------
def set_aside(
    files: Sequence[SourceFile], readers: dict[str, Reader]
) -> tuple[list[SourceFile], list[tuple[str, str]], list[tuple[str, str]]]:
    """Take out the files whose reader cannot run here (its ``missing()`` gives a reason).

    A file named directly (``ingest report.pdf``) fails: the user asked for it. A file found
    in a folder is a note, not a failure: a folder of markdown notes that also holds PDFs
    ingests as before the PDF reader existed, exit code 0, and the note names each PDF and the
    install command.

    Args:
        files: Discovered files.
        readers: The suffix table.

    Returns:
        ``(kept, failed, notes)``; failed and notes as ``(path, message)``, each message
        naming the file and what to install.
    """
    kept: list[SourceFile] = []
    failed: list[tuple[str, str]] = []
    notes: list[tuple[str, str]] = []
    why: dict[int, str | None] = {}
    for f in files:
        reader = readers[f.suffix]
        if id(reader) not in why:
            missing = getattr(reader, "missing", None)
            why[id(reader)] = missing() if callable(missing) else None
        reason = why[id(reader)]
        if reason is None:
            kept.append(f)
        elif f.root is None:
            failed.append((f.path, f"{f.path}: not indexed: {reason}"))
        else:
            notes.append((f.path, f"{f.path}: skipped: {reason}"))
    return kept, failed, notes


def plan_file(
    file: SourceFile, data: bytes, reader: Reader, registry: Registry, pipeline_key: str
) -> Pending | None:
    """Decide whether one discovered file must be (re)indexed; record a move of an unchanged one.

    Args:
        file: The file.
        data: Its bytes (read by the caller, so that a runner reads each file once).
        reader: Its reader (from the suffix table).
        registry: The store's registry.
        pipeline_key: ``Store.pipeline_key``.

    Returns:
        None if the registry holds this version, ready, with its stored source present (its
        path, mtime and size are updated if they changed); else the :class:`Pending` work.

    Raises:
        DocumentError: If the reader cannot compute the key, or the file would take a doc_id
            that another existing file holds, or it is already indexed under another doc_id;
            the message names both and the cure.
    """
    key = reader.source_key(data, file.path)
    version = version_of(key, pipeline_key)
    try:
        st = os.stat(file.path)
    except OSError as err:  # gone since it was read
        raise DocumentError(f"{file.path}: cannot read ({err.strerror}); check the path") from err
    rec = registry.get(file.doc_id)
    if rec is not None and rec.version and rec.source_path != file.real_path and os.path.exists(rec.source_path):
        raise DocumentError(
            f"{file.path}: doc_id {file.doc_id!r} is already indexed from {rec.source_path}, which still "
            f"exists; not indexed (a second file never replaces another's document). Rename one of them, or "
            f"run `proxypointer delete {file.doc_id}` first to index this one instead"
        )
    other = [d for d in registry.doc_ids_for_source(file.real_path) if d != file.doc_id]
    if other:
        raise DocumentError(
            f"{file.path}: already indexed as {other[0]!r} (ingested from another folder); not indexed twice. "
            f"Ingest the folder it was ingested from, or run `proxypointer delete {other[0]}` first"
        )
    if rec is not None and rec.state == "ready" and rec.version == version and registry.sources.has(rec.doc_hash):
        registry.touch(file.doc_id, file.real_path, st.st_mtime, st.st_size)
        return None
    return Pending(file, key, version, st.st_mtime, st.st_size)


# -- 2. read + tree + chunk ---------------------------------------------------------------------
def prepare_document(
    read: ReadResult,
    doc_id: str,
    pipeline_key: str,
    tree_config: TreeConfig,
    chunking_config: ChunkingConfig,
    tokenizer: Any,
    *,
    path: str = "",
    stage_seconds: dict[str, float] | None = None,
) -> PreparedDocument:
    """Parse and chunk one document's text: a pure function of its inputs.

    Args:
        read: What the reader gave.
        doc_id: Document id.
        pipeline_key: ``Store.pipeline_key`` (the version depends on it).
        tree_config: Heading rules.
        chunking_config: Chunk sizes and strategy.
        tokenizer: The embedding model's tokenizer (word pieces), or a ``TokenCountCache``
            over it shared across documents.
        path: The file, for messages.
        stage_seconds: If given, ``tree`` and ``chunking`` seconds are added to it.

    Returns:
        The prepared document.

    Raises:
        EmptyDocumentError: If the text is empty or whitespace only (a note, not a failure).
    """
    text = read.text
    if not text.strip():
        raise EmptyDocumentError(f"{path or doc_id}: empty document (no text); skipped")
    version = version_of(read.source_key, pipeline_key)
    t = time.perf_counter()
    lines = split_lines(text)
    tree = build_tree(text, doc_id, tree_config, lines=lines, paged=read.paged)
    t2 = time.perf_counter()
    chunks = chunk_document(tree, text, tokenizer, chunking_config, lines=lines, version=version)
    if read.pages is not None:
        chunks = add_pages(chunks, stored_page_map(read.pages, lines))
    # The delivery policy sizes sections in exact word pieces per line: counted once here
    # (with the tokenizer itself, not the chunker's per-word cache) instead of per query.
    exact = tokenizer.tok if isinstance(tokenizer, TokenCountCache) else tokenizer
    name = getattr(exact, "name", None)
    line_tokens = (name, tuple(line_token_counts(lines, exact))) if isinstance(name, str) else None
    if stage_seconds is not None:
        stage_seconds["tree"] = stage_seconds.get("tree", 0.0) + t2 - t
        stage_seconds["chunking"] = stage_seconds.get("chunking", 0.0) + time.perf_counter() - t2
    n_sections = len(tree.nodes) if tree.has_headings and chunking_config.strategy == "sections" else len(chunks)
    return PreparedDocument(
        doc_id=doc_id,
        source_key=read.source_key,
        doc_hash=document_hash(text),
        version=version,
        title=tree.title,
        line_count=len(lines),
        n_sections=n_sections,
        chunks=tuple(chunks),
        tree_json=tree.to_json(),
        text=text,
        pages=read.pages,
        warnings=(*read.warnings, *_space_heading_note(path or doc_id, tree, lines)),
        line_tokens=line_tokens,
    )


def _space_heading_note(name: str, tree: DocumentTree, lines: list[str]) -> tuple[str, ...]:
    """Return a note for lines written ``##`` + no-break space + title that stayed text (issue 32)."""
    from ..tree.check import unread_space_headings

    spaced = unread_space_headings(tree, lines)
    if not spaced:
        return ()
    shown = ", ".join(map(str, spaced[:5])) + (", ..." if len(spaced) > 5 else "")
    return (f"{name}: {len(spaced)} line(s) start like a heading but a no-break space follows the '#'s "
            f"(lines {shown}): indexed as text, not sections; write a plain space after the '#'s",)


def parse_file(
    pending: Pending,
    reader: Reader,
    pipeline_key: str,
    tree_config: TreeConfig,
    chunking_config: ChunkingConfig,
    tokenizer: Any,
    *,
    data: bytes | None = None,
    stage_seconds: dict[str, float] | None = None,
) -> PreparedDocument:
    """Read, parse and chunk one pending file (stage 2 from a path: what a worker runs).

    Args:
        pending: From :func:`plan_file`.
        reader: The reader for its suffix.
        pipeline_key: ``Store.pipeline_key``.
        tree_config: Heading rules.
        chunking_config: Chunk sizes and strategy.
        tokenizer: As for :func:`prepare_document`.
        data: The file's bytes when the caller has them; read from ``pending.file.path`` if
            None.
        stage_seconds: If given, ``read``, ``tree`` and ``chunking`` seconds are added.

    Returns:
        The prepared document; its version follows what was read, even if the file changed
        since it was planned.

    Raises:
        DocumentError: If the file cannot be read or decoded (names the file).
        EmptyDocumentError: If it holds no text.
    """
    t = time.perf_counter()
    path = pending.file.path
    result = reader.read(read_bytes(path) if data is None else data, path)
    if stage_seconds is not None:
        stage_seconds["read"] = stage_seconds.get("read", 0.0) + time.perf_counter() - t
    return prepare_document(
        result,
        pending.file.doc_id,
        pipeline_key,
        tree_config,
        chunking_config,
        tokenizer,
        path=path,
        stage_seconds=stage_seconds,
    )


def reads_in_batches(reader: Reader) -> bool:
    """Tell whether a reader converts many files at once (has ``read_many``, e.g. the PDF reader)."""
    return callable(getattr(reader, "read_many", None))


def read_batch(
    pending: Sequence[Pending],
    reader: Reader,
    *,
    show_progress: bool = False,
    stage_seconds: dict[str, float] | None = None,
) -> list[ReadResult | ProxyPointerError]:
    """Read (convert) the changed files of a batch reader together, before they are parsed.

    The PDF reader converts them with ``pdf.workers`` converter processes at once (one JVM
    each), with a progress bar by pages; a bad file does not stop the others.

    Args:
        pending: Changed files of that reader (from :func:`plan_file`).
        reader: A reader with ``read_many`` (:func:`reads_in_batches`).
        show_progress: Show the reader's progress bar on stderr.
        stage_seconds: If given, the seconds are added to its ``convert`` entry.

    Returns:
        Per file, in order: what was read (give it to :func:`prepare_document`), or the error
        naming the file (a ``DocumentError`` for a bad file, a ``MissingDependencyError``
        when Java is missing).
    """
    t = time.perf_counter()
    results = reader.read_many([p.file.path for p in pending], show_progress=show_progress)  # type: ignore[attr-defined]
    if stage_seconds is not None:
        stage_seconds["convert"] = stage_seconds.get("convert", 0.0) + time.perf_counter() - t
    return list(results)


# -- 3. embed ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Embedded:
    """Vectors for a list of chunks.

    Attributes:
        vectors: float32 ``(n_chunks, dim)``, rows L2-normalised, in the chunks' order.
        embedded: Distinct texts encoded by the model.
        cached: Chunks whose vector came from the cache.
    """

    vectors: np.ndarray
    embedded: int
    cached: int


def missing_embeddings(
    chunks: Sequence[Chunk], model: str, registry: Registry
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Split chunks into those the embedding cache holds and the texts still to encode.

    Args:
        chunks: Chunks of one or more documents.
        model: The embedder's name (the cache key's model part).
        registry: Holds the cache.

    Returns:
        ``(known, todo)``: cached vectors by content hash (float32 ``(dim,)``), and
        ``content_hash -> embed_text`` for the rest, each text once, in chunk order.
    """
    hashes = [c.content_hash for c in chunks]
    known = registry.embeddings.get(model, hashes)
    todo: dict[str, str] = {}
    for c, h in zip(chunks, hashes, strict=True):
        if h not in known and h not in todo:
            todo[h] = c.embed_text
    return known, todo


def encode_groups(
    todo: dict[str, str], embedder: Embedder, group_size: int
) -> Iterator[dict[str, np.ndarray]]:
    """Encode texts ``group_size`` at a time, yielding ``content_hash -> vector`` per group.

    The caller stores each group before asking for the next (``registry.embeddings.put``),
    so an interruption loses at most one group. Texts go longest first in word pieces (the
    embedder's tokenizer, when it has ``count_batch``; else in characters), so that a group,
    and each forward pass in it, holds texts of about one length and pads little
    (``SentenceTransformerEmbedder.encode``).

    Args:
        todo: ``content_hash -> embed_text`` (from :func:`missing_embeddings`).
        embedder: The model.
        group_size: Texts per ``encode`` call.

    Yields:
        Vectors float32 ``(dim,)``, L2-normalised, by content hash.
    """
    order = list(todo)
    count = getattr(getattr(embedder, "tokenizer", None), "count_batch", None)
    if count is not None and len(order) > 1:
        pieces = dict(zip(order, count([todo[h] for h in order]), strict=True))
        order.sort(key=lambda h: -pieces[h])
    else:  # no word-piece counts: characters are the next best measure of length
        order.sort(key=lambda h: -len(todo[h]))
    step = max(1, group_size)
    for i in range(0, len(order), step):
        group = order[i : i + step]
        vecs = np.asarray(embedder.encode([todo[h] for h in group]), dtype=np.float32)
        yield dict(zip(group, vecs, strict=True))


def embed_chunks(
    chunks: Sequence[Chunk],
    embedder: Embedder,
    registry: Registry,
    *,
    group_size: int = 128,
    on_progress: Callable[[int], None] | None = None,
) -> Embedded:
    """Vectors for chunks: from the embedding cache where present, the model for the rest.

    :func:`missing_embeddings`, then :func:`encode_groups` with each group's vectors written
    to the cache in their own transaction before the next group starts, so Ctrl-C, SIGTERM or
    SIGKILL loses at most one group and the next run reuses the rest.

    Args:
        chunks: Chunks of one or more documents.
        embedder: The model (``embedder.name`` is the cache key's model part).
        registry: Holds the cache.
        group_size: Texts per ``encode`` call and cache transaction.
        on_progress: Called with a number of chunks each time that many have their vector
            (cached ones at once, then per group).

    Returns:
        The vectors and the counts.

    Raises:
        EmbeddingError: If the model fails (an endpoint's HTTP error, after its retries), or
            gives vectors of another dimension than the store's cache holds under its name;
            the groups before stay cached, no document is written.
    """
    hashes = [c.content_hash for c in chunks]
    known, todo = missing_embeddings(chunks, embedder.name, registry)
    n_cached = sum(1 for h in hashes if h in known)
    if on_progress and n_cached:
        on_progress(n_cached)
    uses: dict[str, int] = {}
    for h in hashes:
        if h in todo:
            uses[h] = uses.get(h, 0) + 1
    expected = registry.embeddings.vector_bytes(embedder.name)
    for fresh in encode_groups(todo, embedder, group_size):
        size = next(iter(fresh.values())).nbytes
        if expected is not None and size != expected:
            raise EmbeddingError(
                f"{registry.root}: {embedder.name!r} gave vectors of {size // 4} dimensions, the store holds "
                f"{expected // 4} of the same name; was the model behind it changed? Ingest into a new store"
            )
        registry.embeddings.put(embedder.name, fresh)
        known.update(fresh)
        if on_progress:
            on_progress(sum(uses[h] for h in fresh))
    vectors = np.stack([known[h] for h in hashes]).astype(np.float32) if chunks else np.zeros((0, 0), np.float32)
    return Embedded(vectors, len(todo), n_cached)


# -- 4. write vectors ----------------------------------------------------------------------------
def begin_documents(registry: Registry, docs: Iterable[tuple[PreparedDocument, str]]) -> None:
    """Store each document's text (and page map) and mark it ``writing``, before any Chroma write.

    Args:
        registry: The registry.
        docs: ``(document, source_path)`` pairs; ``source_path`` is the resolved path recorded
            for citations and ``status``.
    """
    for doc, source in docs:
        registry.sources.save(doc.doc_hash, doc.text, doc.pages, doc.line_tokens)
        registry.begin_write(doc.doc_id, source, doc.doc_hash)


def write_vectors(store: ChromaStore, items: Sequence[tuple[Sequence[Chunk], np.ndarray, str]]) -> None:
    """Write chunks with their vectors to Chroma (upserts: repeating a write is harmless).

    Args:
        store: The collection.
        items: ``(chunks, vectors float32 (len(chunks), dim), source_path)`` per document.

    Raises:
        StoreError: If Chroma refuses a batch (names the document(s)).
    """
    if items:
        store.add_documents(items)


# -- 5. commit --------------------------------------------------------------------------------
def commit_document(
    registry: Registry, store: ChromaStore, doc: PreparedDocument, source_path: str, mtime: float, size: int
) -> list[str]:
    """Make a written document live, then delete its old version's chunks and mark it ``ready``.

    Call only once every chunk of ``doc`` is in Chroma.

    Args:
        registry: The registry.
        store: The collection.
        doc: The document written.
        source_path: Resolved path of its file.
        mtime: The file's mtime, seconds since the epoch.
        size: The file's size, bytes.

    Returns:
        The old version's chunk ids, now deleted.

    Raises:
        StoreError: If Chroma refuses the delete (the document stays in ``cleanup``; the next
            run's repair finishes it).
    """
    old = registry.commit_version(
        doc.doc_id,
        source_path=source_path,
        doc_hash=doc.doc_hash,
        version=doc.version,
        title=doc.title,
        line_count=doc.line_count,
        n_sections=doc.n_sections,
        chunk_ids=[c.chunk_id for c in doc.chunks],
        source_mtime=mtime,
        source_size=size,
        tree_json=doc.tree_json,
        records=[encode_record(c.text, chunk_metadata(c, source_path)) for c in doc.chunks],
        lexical_texts=[c.embed_text for c in doc.chunks],
        content_hashes=[c.content_hash for c in doc.chunks],
    )
    if old:
        store.delete_ids(old)
    registry.finish(doc.doc_id)
    return old


# -- what every runner does around the stages ------------------------------------------------
def start_sync(index: Store, paths: Sequence[str | Path], *, include_hidden: bool = False) -> Discovery:
    """Open a sync (the caller holds ``index.write_lock(create=True)``): settle, then discover.

    Checks the model against the store's, opens the collection (a collection another store
    owns stops the run here), finishes or undoes what an interrupted run of either engine left
    in flight (``maintenance.repair_all``), then lists the files.

    Args:
        index: The index.
        paths: Files or folders.
        include_hidden: Also read hidden and tool folders (see ``discovery``).

    Returns:
        What discovery found.

    Raises:
        ConfigError: If the store was built with another model.
        StoreError: If Chroma cannot be opened or its collection belongs to another store.
    """
    registry, store = index.registry, index.store
    index.check_model()
    store.collection  # noqa: B018 - opened first: a collection another store owns stops the run here
    repair_all(registry, store)

    def owner_of(doc_id: str) -> str | None:
        rec = registry.get(doc_id)
        return rec.source_path if rec is not None and rec.version else None

    def id_of(real_path: str) -> str | None:  # a file ingested earlier from its folder keeps its id
        ids = registry.doc_ids_for_source(real_path)
        return ids[0] if len(ids) == 1 else None

    return discover(paths, index.readers.keys(), stores=[index.root], include_hidden=include_hidden,
                    owner_of=owner_of, id_of=id_of)


def plan_changed(
    file: SourceFile, reader: Reader, registry: Registry, pipeline_key: str, report: IngestReport
) -> tuple[Pending, bytes] | None:
    """Stage 1 for one file with its outcome recorded: read it, then :func:`plan_file`.

    Args:
        file: The file.
        reader: Its reader.
        registry: The registry.
        pipeline_key: ``Store.pipeline_key``.
        report: Gets the file in ``failed`` (unreadable, a collision) or counted ``unchanged``;
            the read time is added to ``stage_seconds["read"]``.

    Returns:
        ``(pending, data)`` for a new or changed file (its bytes, read once), else None.

    Raises:
        StoreError: If the registry fails (the store, not this file: the run stops).
    """
    t = time.perf_counter()
    try:
        data = read_bytes(file.path)
        pending = plan_file(file, data, reader, registry, pipeline_key)
    except StoreError:
        raise
    except ProxyPointerError as err:  # this file only (unreadable, a collision, ...)
        report.failed.append((file.path, str(err)))
        logger.info("failed: %s", err)
        return None
    finally:
        report.stage_seconds["read"] = report.stage_seconds.get("read", 0.0) + time.perf_counter() - t
    if pending is None:
        report.unchanged += 1
        return None
    return pending, data


def empty_note(registry: Registry, file: SourceFile, err: EmptyDocumentError) -> str:
    """Word the note for a file that holds no text, saying whether its indexed version is kept."""
    note = str(err)
    if registry.get(file.doc_id) is not None:
        note += f" (its indexed version is kept; `proxypointer delete {file.doc_id}` removes it)"
    return note


def write_documents(
    store: ChromaStore, items: Sequence[tuple[Sequence[Chunk], np.ndarray, str]]
) -> list[ProxyPointerError | None]:
    """Write several documents' chunks together; if Chroma refuses, each document on its own.

    Args:
        store: The collection.
        items: ``(chunks, vectors float32 (len(chunks), dim), source_path)`` per document, as
            for :func:`write_vectors`.

    Returns:
        Per item, in order: None when written, else the error (naming the document) that
        refused it; its other items are written.
    """
    if not items:
        return []
    try:
        write_vectors(store, items)
        return [None] * len(items)
    except ProxyPointerError as err:
        if len(items) == 1:  # one document: its own failure, no second attempt
            return [err]
        logger.info("group write refused (%s); writing its documents one by one", err)
    errors: list[ProxyPointerError | None] = []
    for item in items:
        try:
            write_vectors(store, [item])
            errors.append(None)
        except ProxyPointerError as err:
            errors.append(err)
    return errors


def finish_sync(
    index: Store, found: Discovery, report: IngestReport, *, prune: bool = False, started: float | None = None
) -> None:
    """Close a sync after every document was committed or failed.

    With ``prune``, deletes documents whose files are gone from the folders given and the
    cached embeddings no live chunk uses; then copies missing chunk records into the registry
    (a failure there is only logged: it is a speed-up for queries), stores the word pieces per
    line of live texts that have none (:func:`~proxypointer.ingest.maintenance.fill_line_tokens`),
    drops stored sources no document uses, sets ``report.seconds`` and logs the summary.

    Args:
        index: The index.
        found: What :func:`start_sync` discovered.
        report: The run's report (``deleted``, ``cache_pruned``, ``seconds`` and stage times
            are filled in).
        prune: As ``ingest --prune``.
        started: ``time.perf_counter()`` at the start of the run, for ``report.seconds``.
    """
    registry, store, st = index.registry, index.store, report.stage_seconds
    used = {f.root for f in found.files} | {os.path.dirname(p) for p, _ in found.failed}
    kinds = ", ".join(f"*{x}" for x in sorted(index.readers))
    for root in found.roots:
        if root not in used and not any(u.startswith(root.rstrip(os.sep) + os.sep) for u in used):
            report.notes.append((root, f"{escaped(root)}: no {kinds} file in this folder, so nothing to index "
                                       "(hidden folders are skipped; --include-hidden searches them)"))
    if prune:
        present = {f.doc_id for f in found.files}
        report.deleted = prune_missing(registry, store, found.roots, present)
    t = time.perf_counter()
    try:
        fill_records(registry, store)
    except ProxyPointerError as err:  # only a speed-up for queries: never fail the run on it
        logger.warning("could not copy chunk records into the registry (%s); the next run tries again", err)
    st["store"] = st.get("store", 0.0) + time.perf_counter() - t
    t = time.perf_counter()
    try:
        fill_line_tokens(registry, index.embedder.tokenizer)
    except (OSError, ProxyPointerError) as err:  # only a speed-up for queries: never fail the run on it
        logger.warning("could not store word pieces per line beside the texts (%s); the next run tries again", err)
    try:
        registry.sources.prune()
    except OSError as err:  # a read-only store: the leftovers are removed by a later run
        logger.warning("could not remove stored sources no document uses (%s); the next run tries again", err)
    prune_conversions(index.readers, registry)
    if prune:
        report.cache_pruned = prune_embedding_cache(registry, store, index.embedder.name)
    st["registry"] = st.get("registry", 0.0) + time.perf_counter() - t
    if started is not None:
        report.seconds = time.perf_counter() - started
    logger.info("%s", report.summary())


def prune_conversions(readers: dict[str, Reader], registry: Registry) -> None:
    """Drop the readers' cached conversions (``<store>/converted``) whose text no document uses.

    Args:
        readers: Suffix -> reader; a reader with a ``prune_cache(live_hashes)`` method keeps a cache.
        registry: The registry (live and pending document hashes are kept).
    """
    live: set[str] | None = None
    for reader in {id(r): r for r in readers.values()}.values():
        prune = getattr(reader, "prune_cache", None)
        if callable(prune):
            if live is None:
                live = {r.doc_hash for r in registry.documents() if r.doc_hash}
                live |= {r.pending_hash for r in registry.documents() if r.pending_hash}
            n = prune(sorted(live))
            if n:
                logger.info("removed %d cached conversion(s) no document uses", n)


def warn_approximate_sizes(embedder: object) -> None:
    """Warn once for an ingest run when the embedder sizes chunks with an approximate tokenizer.

    An embedding endpoint without ``embedding.tokenizer`` (:attr:`.EndpointEmbedder.approximate_sizes`)
    sizes chunks with the default model's tokenizer. Said when chunks are sized, not on every
    query (issue 32).
    """
    note = getattr(embedder, "approximate_sizes", None)
    if note:
        logger.warning("%s", note)

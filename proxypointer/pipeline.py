"""Index: the one place that wires files -> tree -> chunks -> embeddings -> Chroma.

Ingestion is a *sync*: a document whose content and settings are unchanged costs a read and a
hash; a changed one is re-chunked and only chunks whose embedded text changed are embedded
again (the embedding cache is keyed by model and text hash). Every version is written
add-new, flip-registry, delete-old, under an inter-process lock, so a crash leaves each
document at its old or its new version and the next run repairs the rest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .chunking import Chunk, TokenCountCache, chunk_document, document_hash
from .config import ProxyPointerConfig, config_to_dict
from .embedding import Embedder, SentenceTransformerEmbedder
from .errors import (
    ConfigError,
    DocumentError,
    LockError,
    ProxyPointerError,
    StaleSourceError,
    StoreError,
)
from .registry import DocumentRecord, Registry, encode_record, tree_to_json
from .store import ChromaStore, chunk_metadata
from .tree import build_tree, read_document, split_lines

__all__ = ["CheckReport", "Index", "IngestReport", "discover"]

logger = logging.getLogger(__name__)

#: File suffixes ingested from folders.
MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(slots=True)
class IngestReport:
    """What one ingest run did.

    Attributes:
        documents: Documents found in the given paths.
        indexed: Documents written (new or changed).
        unchanged: Documents skipped because content and settings were unchanged.
        deleted: Documents removed (``prune``).
        sections: Sections (nodes or windows) of the documents written.
        chunks: Chunks written.
        embedded: Chunks embedded by the model in this run.
        cached: Chunks whose vector came from the embedding cache.
        failed: ``(path, message)`` for each file that could not be indexed; what was
            indexed before is kept.
        seconds: Wall time of the run.
        stage_seconds: Time per stage: read, tree, chunking, embedding, store, registry.

    """

    documents: int = 0
    indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    sections: int = 0
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: documents, sections, chunks, seconds (and failures)."""
        line = (
            f"{self.documents} documents ({self.indexed} indexed, {self.unchanged} unchanged, "
            f"{self.deleted} deleted), {self.sections} sections, {self.chunks} chunks "
            f"({self.embedded} embedded, {self.cached} cached) in {self.seconds:.1f} s"
        )
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
            "sections": self.sections,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "cached": self.cached,
            "failed": [{"path": p, "error": m} for p, m in self.failed],
            "seconds": round(self.seconds, 3),
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
        }


@dataclass(slots=True)
class CheckReport:
    """Differences between the registry, the stored sources and Chroma.

    Attributes:
        documents: Documents in the registry.
        chunks: Live chunk ids in the registry.
        problems: One line per difference (empty when consistent).
        repaired: One line per repair made (``repair=True``).

    """

    documents: int = 0
    chunks: int = 0
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is inconsistent."""
        return not self.problems


def discover(paths: Iterable[str | Path]) -> tuple[list[tuple[str, Path, Path | None]], list[tuple[str, str]]]:
    """Find markdown files and their doc ids.

    Args:
        paths: Files or folders; folders are searched recursively for ``*.md`` and
            ``*.markdown``.

    Returns:
        ``(found, missing)``: ``found`` holds ``(doc_id, file, root)`` where ``doc_id`` is the
        path relative to the given folder without suffix, ``/``-separated (a file given
        directly: its stem; ``root`` None); ``missing`` holds ``(path, message)``.

    """
    found: dict[str, tuple[str, Path, Path | None]] = {}
    missing: list[tuple[str, str]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.suffix.lower() in MARKDOWN_SUFFIXES and f.is_file())
            for f in files:
                doc_id = f.relative_to(p).with_suffix("").as_posix()
                found.setdefault(doc_id, (doc_id, f, p))
        elif p.is_file():
            found.setdefault(p.stem, (p.stem, p, None))
        else:
            missing.append((str(p), f"{p}: no such file or folder; check the path"))
    return list(found.values()), missing


@dataclass(slots=True)
class _Prepared:
    doc_id: str
    path: Path
    text: str
    doc_hash: str
    version: str
    title: str
    line_count: int
    n_sections: int
    chunks: list[Chunk]
    tree_json: str
    mtime: float
    size: int


class Index:
    """A proxypointer index: registry, stored sources and a Chroma collection.

    Args:
        store: Store folder; defaults to ``config.store.path`` (``.proxypointer`` in the
            working directory).
        config: Full configuration; defaults to the built-in defaults.
        embedder: Embedding model; defaults to sentence-transformers with
            ``config.embedding`` (loaded on first use).

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
        self._registry: Registry | None = None
        self._store: ChromaStore | None = None
        self._store_generation = -1
        self._writing = False

    # -- parts --------------------------------------------------------------------------
    @property
    def registry(self) -> Registry:
        """The registry (opened on first use)."""
        if self._registry is None:
            self._registry = Registry(self.root)
        return self._registry

    @property
    def store(self) -> ChromaStore:
        """The Chroma collection adapter (opened on first use).

        In embedded mode it is reopened when another process has changed the index since it
        was opened (the registry's generation moved), so a long-lived reader sees new
        versions instead of its process's cached HNSW index (shared case 26).
        """
        if self._store is not None and not self._writing and self.config.store.mode == "persistent":
            if self.registry.generation() != self._store_generation:
                logger.debug("%s: the index changed since it was opened; reopening Chroma", self.root)
                self._store.close()
                self._store = None
        if self._store is None:
            self._store_generation = self.registry.generation()
            self._store = ChromaStore(self.config.store, self.root)
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
        """Hash of every setting that shapes chunks and vectors (model, tree, chunking)."""
        cfg = config_to_dict(self.config)
        key = json.dumps(
            {"model": self.embedder.name, "tree": cfg["tree"], "chunking": cfg["chunking"]}, sort_keys=True
        )
        return hashlib.sha1(key.encode()).hexdigest()[:8]

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the store's inter-process write lock (``<store>/write.lock``).

        Waits up to ``store.lock_timeout_s`` for another writer, then raises LockError.
        """
        from filelock import FileLock, Timeout

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
        try:
            yield
        finally:
            self._writing = False
            if self._registry is not None:
                self._store_generation = self._registry.generation()
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
        show_progress: bool = True,
        batch_chunks: int = 512,
    ) -> IngestReport:
        """Sync the index with markdown files: add new, re-index changed, skip unchanged.

        Args:
            paths: Files or folders (searched recursively for ``*.md``, ``*.markdown``).
            prune: Also delete documents whose files are gone from the given folders.
            show_progress: Show a tqdm bar on stderr.
            batch_chunks: Chunks gathered across documents before one ``encode`` call.

        Returns:
            The report; files that failed are listed in ``failed`` and the rest is indexed.

        Raises:
            LockError: If another process holds the store's write lock past
                ``store.lock_timeout_s``.
            StoreError: If Chroma cannot be opened or refuses a write.
            ConfigError: If the store was built with another model.

        """
        with self._locked():
            return self._ingest(paths, prune, show_progress, batch_chunks)

    def _ingest(self, paths: Sequence[str | Path], prune: bool, show_progress: bool, batch_chunks: int) -> IngestReport:
        from tqdm import tqdm

        t0 = time.perf_counter()
        report = IngestReport(
            stage_seconds=dict.fromkeys(("read", "tree", "chunking", "embedding", "store", "registry"), 0.0)
        )
        st = report.stage_seconds
        self.check_model()
        self.repair()
        found, missing = discover(paths)
        report.failed.extend(missing)
        report.documents = len(found)
        key = self.pipeline_key
        tokenizer = TokenCountCache(self.embedder.tokenizer)  # words counted once per run
        pending: list[_Prepared] = []
        n_pending = 0
        bar = tqdm(total=len(found), desc="ingest", unit="doc", disable=not show_progress, leave=False)
        for doc_id, path, _root in found:
            t = time.perf_counter()
            try:
                text = read_document(path)
            except DocumentError as err:
                report.failed.append((str(path), str(err)))
                logger.warning("%s", err)
                bar.update(1)
                continue
            stat = path.stat()
            doc_hash = document_hash(text)
            version = hashlib.sha1(f"{doc_hash}:{key}".encode()).hexdigest()[:10]
            st["read"] += time.perf_counter() - t
            record = self.registry.get(doc_id)
            if record and record.state == "ready" and record.version == version:
                self.registry.touch(doc_id, str(path.resolve()), stat.st_mtime, stat.st_size)
                self.registry.save_source(doc_hash, text)  # a stat when present; heals a lost copy
                report.unchanged += 1
                bar.update(1)
                continue
            if not text.strip():
                msg = f"{path}: empty document (no text); nothing indexed"
                report.failed.append((str(path), msg))
                logger.warning("%s", msg)
                bar.update(1)
                continue
            t = time.perf_counter()
            lines = split_lines(text)
            tree = build_tree(text, doc_id, self.config.tree, lines=lines)
            t2 = time.perf_counter()
            st["tree"] += t2 - t
            chunks = chunk_document(tree, text, tokenizer, self.config.chunking, lines=lines, version=version)
            st["chunking"] += time.perf_counter() - t2
            n_sections = (
                len(tree.nodes) if tree.has_headings and self.config.chunking.strategy == "sections" else len(chunks)
            )
            pending.append(
                _Prepared(
                    doc_id,
                    path,
                    text,
                    doc_hash,
                    version,
                    tree.title,
                    len(lines),
                    n_sections,
                    chunks,
                    tree_to_json(tree),
                    stat.st_mtime,
                    stat.st_size,
                )
            )
            n_pending += len(chunks)
            if n_pending >= batch_chunks:
                self._write(pending, report, bar)
                pending, n_pending = [], 0
        if pending:
            self._write(pending, report, bar)
        bar.close()
        if prune:
            report.deleted = self._prune(paths, {d for d, _, _ in found})
        t = time.perf_counter()
        try:
            self.fill_records()
        except ProxyPointerError as err:  # only a speed-up for queries: never fail the run on it
            logger.warning("could not copy chunk records into the registry (%s); the next run tries again", err)
        st["store"] += time.perf_counter() - t
        t = time.perf_counter()
        self.registry.prune_sources()
        st["registry"] += time.perf_counter() - t
        report.seconds = time.perf_counter() - t0
        logger.info("%s", report.summary())
        return report

    def _embed(self, chunks: list[Chunk], report: IngestReport) -> np.ndarray:
        """Vectors for chunks, from the cache where possible; one encode call for the rest."""
        st = report.stage_seconds
        t = time.perf_counter()
        hashes = [c.content_hash for c in chunks]
        cached = self.registry.cached_embeddings(self.embedder.name, hashes)
        st["registry"] += time.perf_counter() - t
        todo: dict[str, str] = {}
        for c, h in zip(chunks, hashes, strict=True):
            if h not in cached and h not in todo:
                todo[h] = c.embed_text
        if todo:
            t = time.perf_counter()
            vecs = self.embedder.encode(list(todo.values()))
            st["embedding"] += time.perf_counter() - t
            fresh = dict(zip(todo.keys(), vecs, strict=True))
            t = time.perf_counter()
            self.registry.cache_embeddings(self.embedder.name, fresh)
            st["registry"] += time.perf_counter() - t
            cached.update(fresh)
        report.embedded += len(todo)
        report.cached += sum(1 for h in hashes if h not in todo)
        return np.stack([cached[h] for h in hashes]).astype(np.float32) if chunks else np.zeros((0, 0), np.float32)

    def _write(self, docs: list[_Prepared], report: IngestReport, bar: Any) -> None:
        """Embed and write a group of documents together, then make each one live atomically.

        Each document's version is committed, then its old chunks deleted.

        If Chroma refuses the group's write, the documents are written again one by one, so
        that only the one at fault fails (writes are upserts, so a repeat is harmless).
        """
        st = report.stage_seconds
        all_chunks = [c for d in docs for c in d.chunks]
        vectors = self._embed(all_chunks, report)
        parts: list[np.ndarray] = []
        offset = 0
        for d in docs:
            parts.append(vectors[offset : offset + len(d.chunks)])
            offset += len(d.chunks)
        sources = [str(d.path.resolve()) for d in docs]
        t = time.perf_counter()
        for d, source in zip(docs, sources, strict=True):
            self.registry.save_source(d.doc_hash, d.text)
            self.registry.begin_write(d.doc_id, source, d.doc_hash)
        st["registry"] += time.perf_counter() - t
        t = time.perf_counter()
        together = [(d.chunks, v, s) for d, v, s in zip(docs, parts, sources, strict=True) if d.chunks]
        written = True
        refused: ProxyPointerError | None = None
        try:
            if together:
                self.store.add_documents(together)
        except ProxyPointerError as err:
            written = False
            if len(together) > 1:
                logger.info("group write refused (%s); writing its documents one by one", err)
            else:
                refused = err  # one document: its own failure, no second attempt
        st["store"] += time.perf_counter() - t
        for d, vecs, source in zip(docs, parts, sources, strict=True):
            n = len(d.chunks)
            t = time.perf_counter()
            try:
                if n and refused is not None:
                    raise refused
                if n and not written:
                    self.store.add(d.chunks, vecs, source)
            except ProxyPointerError as err:
                # Nothing of the new version is live; remove what was written (or leave it to
                # the next run's repair if Chroma refuses that too). Vectors stay cached.
                report.failed.append((str(d.path), str(err)))
                logger.error("%s", err)
                try:
                    self._repair_one(self.registry.get(d.doc_id))
                except ProxyPointerError as err2:
                    logger.error("%s: could not roll back (%s); the next run repairs it", d.doc_id, err2)
                bar.update(1)
                continue
            st["store"] += time.perf_counter() - t
            t = time.perf_counter()
            old = self.registry.commit_version(
                d.doc_id,
                source_path=source,
                doc_hash=d.doc_hash,
                version=d.version,
                title=d.title,
                line_count=d.line_count,
                n_sections=d.n_sections,
                chunk_ids=[c.chunk_id for c in d.chunks],
                source_mtime=d.mtime,
                source_size=d.size,
                tree_json=d.tree_json,
                records=[encode_record(c.text, chunk_metadata(c, source)) for c in d.chunks],
                lexical_texts=[c.embed_text for c in d.chunks],
            )
            st["registry"] += time.perf_counter() - t
            t = time.perf_counter()
            if old:
                self.store.delete_ids(old)
            st["store"] += time.perf_counter() - t
            self.registry.finish(d.doc_id)
            report.indexed += 1
            report.sections += d.n_sections
            report.chunks += n
            bar.update(1)

    # -- lifecycle ----------------------------------------------------------------------
    def fill_records(self) -> int:
        """Copy Chroma records into the registry for live chunks that have no copy yet.

        Stores written before the registry kept record copies (docs/lifecycle.md) get them on
        their next ingest or ``check --repair`` (both call this); retrieval reads Chroma for
        chunks without a copy until then. Costs one registry query when nothing is missing
        (Chroma is not opened).

        Returns:
            Number of chunks given a copy.

        Raises:
            LockError: If another process holds the write lock past ``store.lock_timeout_s``.
            StoreError: If Chroma cannot be read.
        """
        if self._writing:
            return self._fill_records()
        with self._locked():
            return self._fill_records()

    def _fill_records(self) -> int:
        filled, absent, after = 0, 0, ""
        while True:
            ids = self.registry.chunks_without_record(500, after)
            if not ids:
                break
            after = ids[-1]
            got = {h.chunk_id: encode_record(h.text, h.metadata) for h in self.store.get(ids)}
            filled += self.registry.set_chunk_records(got) if got else 0
            absent += len(ids) - len(got)
        if absent:  # registered but missing from Chroma: `check --repair` settles these
            logger.warning("%d live chunks are missing from Chroma; run `proxypointer check --repair`", absent)
        if filled:
            logger.info("copied %d chunk records from Chroma into the registry", filled)
        return filled

    def _differing_copies(self, meta: dict[str, dict[str, Any]]) -> list[str]:
        """Live chunks whose registry copy is unreadable or differs from Chroma in text or metadata.

        Reads Chroma's texts page by page (never all at once) and the copies of each page.
        """
        differ: list[str] = []
        for ids, texts in self.store.text_pages():
            copies = self.registry.chunk_record_copies(ids)
            for cid, text in zip(ids, texts, strict=True):
                if cid in copies and copies[cid] != (text, meta.get(cid)):
                    differ.append(cid)  # also an unusable copy (None)
        return sorted(differ)

    def repair(self) -> list[str]:
        """Finish or undo whatever an interrupted run left in flight.

        Returns:
            One line per document repaired.

        """
        done: list[str] = []
        for rec in self.registry.documents():
            line = self._repair_one(rec)
            if line:
                logger.warning("repaired %s", line)
                done.append(line)
        return done

    def _repair_one(self, rec: DocumentRecord | None) -> str:
        """Settle one document left in ``writing``, ``cleanup`` or ``deleting``.

        Chunks of any version but the live one are deleted; a document with no live version
        is forgotten; one whose rewrite of the *same* content was interrupted is marked
        ``stale`` so the next ingest completes it. Returns what was done ('' if nothing).
        """
        if rec is None or rec.state in ("ready", "stale"):
            return ""
        live = self.registry.chunk_ids(rec.doc_id) if rec.version else set()
        stray = [i for i in self.store.ids_where({"doc_id": rec.doc_id}) if i not in live]
        if stray:
            self.store.delete_ids(stray)
        if rec.state == "deleting" or not rec.version:
            self.registry.remove(rec.doc_id)
            what = "deletion" if rec.state == "deleting" else "first version"
            return f"{rec.doc_id}: removed unfinished {what} ({len(stray)} chunks)"
        self.registry.finish(rec.doc_id)
        if rec.state == "writing" and rec.pending_hash == rec.doc_hash:
            self.registry.mark_stale(rec.doc_id)  # a rewrite of the live version (check --repair)
        return f"{rec.doc_id}: kept live version {rec.version}, removed {len(stray)} stray chunks"

    def delete(self, doc_ids: Iterable[str]) -> list[str]:
        """Remove documents and their chunks.

        Args:
            doc_ids: Ids as shown by ``status``.

        Returns:
            The ids that were removed (unknown ids are skipped with a warning).

        Raises:
            LockError: If another process holds the write lock.

        """
        with self._locked():
            removed = []
            for doc_id in dict.fromkeys(doc_ids):
                if self.registry.get(doc_id) is None:
                    logger.warning("%s: no such document in %s", doc_id, self.root)
                    continue
                self._delete_one(doc_id)
                removed.append(doc_id)
            self.registry.prune_sources()
            return removed

    def _delete_one(self, doc_id: str) -> None:
        """Hide (registry), delete chunks (Chroma), forget (registry); repair finishes a crash."""
        registered = self.registry.chunk_ids(doc_id)
        self.registry.begin_delete(doc_id)
        self.store.delete_ids(sorted(registered | set(self.store.ids_where({"doc_id": doc_id}))))
        self.registry.remove(doc_id)

    def _prune(self, paths: Sequence[str | Path], present: set[str]) -> int:
        roots = [Path(p).resolve() for p in paths if Path(p).is_dir()]
        n = 0
        for rec in self.registry.documents():
            src = Path(rec.source_path)
            if rec.doc_id in present or src.exists():
                continue
            if any(src.is_relative_to(r) for r in roots):
                self._delete_one(rec.doc_id)
                n += 1
        return n

    def status(self) -> dict[str, Any]:
        """Report counts, model, store, and sources that changed on disk since they were indexed."""
        stats = self.registry.stats()
        stale: list[dict[str, str]] = []
        for rec in self.registry.documents():
            src = Path(rec.source_path)
            if not src.exists():
                stale.append({"doc_id": rec.doc_id, "source": rec.source_path, "reason": "missing"})
                continue
            st = src.stat()
            if st.st_size != rec.source_size or st.st_mtime != rec.source_mtime:
                try:
                    changed = document_hash(read_document(src)) != rec.doc_hash
                except DocumentError:
                    changed = True
                if changed:
                    stale.append({"doc_id": rec.doc_id, "source": rec.source_path, "reason": "changed"})
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
        ``line_count`` lines; its registered chunks all exist in Chroma with the document's
        live ``version`` and ``doc_hash`` and line pointers inside the stored text; Chroma holds
        no chunk the registry does not list; the registry's copies of chunk records (read by
        queries) can be read and have the text and metadata of Chroma's.

        Args:
            repair: Also fix what can be fixed: finish interrupted runs, delete unregistered
                chunks, copy missing or differing chunk records from Chroma, and mark
                documents whose chunks or stored source are missing ``stale`` so that the next
                ingest of their files rewrites them.

        Returns:
            A report listing every difference found (before repairs) and each repair made.

        Raises:
            LockError: If a writer holds the lock past ``store.lock_timeout_s``.
            StoreError: If Chroma cannot be read.

        """
        with self._locked():
            return self._check(repair)

    def _check(self, repair: bool) -> CheckReport:
        rep = CheckReport()
        reg = self.registry
        docs = reg.documents()
        rep.documents = len(docs)
        live = reg.chunk_ids()
        rep.chunks = len(live)
        meta = self.store.all_metadata()
        to_mark: list[str] = []
        for rec in docs:
            if rec.state != "ready":
                what = "needs re-ingest" if rec.state == "stale" else "interrupted run"
                rep.problems.append(f"{rec.doc_id}: state {rec.state} ({what})")
            if not rec.version:
                continue
            broken = False
            lines = 0
            try:
                text = reg.load_source(rec.doc_hash)
            except StaleSourceError:
                rep.problems.append(f"{rec.doc_id}: stored source {rec.doc_hash[:12]} is missing; re-ingest it")
                broken = True
            else:
                lines = len(split_lines(text))
                if document_hash(text) != rec.doc_hash:
                    rep.problems.append(f"{rec.doc_id}: stored source {rec.doc_hash[:12]} does not match its hash")
                    broken = True
                elif lines != rec.line_count:
                    rep.problems.append(
                        f"{rec.doc_id}: stored source has {lines} lines, registry says {rec.line_count}"
                    )
            ids = reg.chunk_ids(rec.doc_id)
            if len(ids) != rec.n_chunks:
                rep.problems.append(f"{rec.doc_id}: {len(ids)} chunks registered, record says {rec.n_chunks}")
            absent = sorted(i for i in ids if i not in meta)
            if absent:
                rep.problems.append(
                    f"{rec.doc_id}: {len(absent)} registered chunks missing from Chroma (e.g. {absent[0]})"
                )
                broken = True
            for cid in sorted(ids - set(absent)):
                m = meta[cid]
                if (
                    m.get("doc_id") != rec.doc_id
                    or m.get("version") != rec.version
                    or m.get("doc_hash") != rec.doc_hash
                ):
                    rep.problems.append(
                        f"{rec.doc_id}: chunk {cid} has version {m.get('version')!r}, registry says {rec.version!r}"
                    )
                    broken = True
                    break
                start, end = m.get("start_line"), m.get("end_line")
                if lines and not (isinstance(start, int) and isinstance(end, int) and 1 <= start <= end <= lines):
                    rep.problems.append(f"{rec.doc_id}: chunk {cid} points at lines {start}-{end} of {lines}")
                    broken = True
                    break
            if broken:
                to_mark.append(rec.doc_id)
        stray = sorted(set(meta) - live)
        if stray:
            rep.problems.append(f"{len(stray)} chunks in Chroma are not registered (e.g. {stray[0]})")
        differ = self._differing_copies(meta)
        if differ:
            rep.problems.append(
                f"{len(differ)} chunks' registry copies differ from their Chroma records or cannot be read"
                f" (e.g. {differ[0]})"
            )
        if repair:
            if differ:
                reg.set_chunk_records(dict.fromkeys(differ))  # re-read from Chroma below
            filled = self.fill_records()
            if filled:
                rep.repaired.append(f"copied {filled} chunk records from Chroma into the registry")
            rep.repaired.extend(self.repair())
            left = sorted(set(self.store.all_ids()) - reg.chunk_ids())
            if left:
                self.store.delete_ids(left)
                rep.repaired.append(f"deleted {len(left)} unregistered chunks")
            for doc_id in to_mark:
                reg.mark_stale(doc_id)
                rep.repaired.append(f"{doc_id}: marked stale; the next ingest of its file rewrites it")
            removed = reg.prune_sources()
            if removed:
                rep.repaired.append(f"removed {removed} unreferenced stored sources")
        for line in rep.problems:
            logger.info("check: %s", line)
        return rep

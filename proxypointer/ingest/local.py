"""The single-process runner: every stage of ``proxypointer.ingest.stages`` in this process.

Behind ``Index.ingest``. Files are planned one at a time, each changed one parsed at once from
the bytes just read, and chunks gathered across documents until ``batch_chunks``; then the
group is embedded (cache first), written to Chroma together, and each document committed.
A runner on another engine keeps the same order of stages per document and holds
``Store.write_lock(create=True)`` for its whole run.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..chunk.chunker import TokenCountCache
from ..errors import EmptyDocumentError, ProxyPointerError, StoreError
from ..progress import progress_bar, tick
from ..read.discovery import SourceFile
from ..read.readers import Reader
from ..tree.build import DocumentTree
from .maintenance import repair_one
from .stages import (
    IngestReport,
    Pending,
    PreparedDocument,
    begin_documents,
    commit_document,
    embed_chunks,
    empty_note,
    finish_sync,
    missing_embeddings,
    parse_file,
    plan_changed,
    prepare_document,
    read_batch,
    reads_in_batches,
    set_aside,
    start_sync,
    warn_approximate_sizes,
    write_documents,
)

if TYPE_CHECKING:
    from ..store.folder import Store

__all__ = ["BATCH_READ_FILES", "EMBED_GROUP_BATCHES", "INGEST_BAR_DELAY_S", "LARGE_DOCUMENT_CHUNKS", "run_ingest"]

logger = logging.getLogger(__name__)

#: Forward passes (of ``embedding.batch_size`` texts) per encode call and cache transaction:
#: 8 x 16 texts is ~6 s of MiniLM on 2 CPU cores (docs/stack.md), the most an interruption loses.
EMBED_GROUP_BATCHES = 8

#: Files a batch reader (PDF) converts per call: their texts wait in memory to be parsed
#: (a 10-K's markdown is ~0.4 MB), and each call starts ``pdf.workers`` JVMs (~1 s each).
BATCH_READ_FILES = 64


#: Chunks of one document from which the run says so before embedding them: at the 13-50
#: chunks/s MiniLM embeds on 2 CPU cores (docs/benchmarks.md), 10,000 chunks are 3-13 minutes.
#: A real 10-K makes about 2,000; a 20 MB file of one line without structure made 37,562
#: windows, about an hour of embedding, with nothing said (issue 32).
LARGE_DOCUMENT_CHUNKS = 10_000


#: Seconds before the ingest bar is first drawn (tqdm's ``delay``): an ingest that finds every
#: file unchanged (or none) ends before it, with its one-line summary and no empty bar.
INGEST_BAR_DELAY_S = 1.0


#: The ingest bar: documents done of the files planned, with the chunks embedded so far.
_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total_fmt} docs [{elapsed}<{remaining}{postfix}]"


class _Run:
    """State of one single-process sync: report, progress bar and the group being gathered."""

    def __init__(self, index: Store, show_progress: bool, batch_chunks: int, files: int = 0) -> None:
        self.index = index
        self.registry = index.registry
        self.store = index.store
        self.batch_chunks = batch_chunks
        self.group_size = index.config.embedding.batch_size * EMBED_GROUP_BATCHES
        self.report = IngestReport(
            stage_seconds=dict.fromkeys(
                ("read", "convert", "tree", "chunking", "embedding", "store", "registry"), 0.0
            )
        )
        self.pending: list[tuple[Pending, PreparedDocument]] = []
        self.n_pending = 0
        self.chunks_embedded = 0
        # Counted in documents: its total is the ``files`` this run plans, known before any is
        # read, so it never grows; a document being embedded moves it by the share of its
        # group's chunks done. Shown after a second: a run with nothing to embed prints its
        # summary line alone.
        self.bar = progress_bar(total=files, desc="ingest", unit="doc", disable=not show_progress,
                                delay=INGEST_BAR_DELAY_S, bar_format=_BAR_FORMAT)

    def doc_done(self, n: int = 1, advance: bool = True) -> None:
        """Count ``n`` documents done; ``advance=False`` when embedding moved the bar already."""
        if advance:
            self.bar.update(n)
        tick(self.bar)

    def _embedded(self, n: int, weight: float) -> None:
        """``n`` more chunks embedded, each worth ``weight`` documents of the bar."""
        self.chunks_embedded += n
        self.bar.set_postfix_str(f"{self.chunks_embedded} chunks embedded", refresh=False)
        self.bar.update(n * weight)

    def fail(self, path: str, message: str) -> None:
        self.report.failed.append((path, message))
        logger.info("failed: %s", message)

    def add(self, pending: Pending, doc: PreparedDocument) -> None:
        self.pending.append((pending, doc))
        self.n_pending += len(doc.chunks)
        if self.n_pending >= self.batch_chunks:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            group, self.pending, self.n_pending = self.pending, [], 0
            self._write(group)

    def _write(self, group: list[tuple[Pending, PreparedDocument]]) -> None:
        """Embed a group of documents, write them together, then make each one live."""
        st = self.report.stage_seconds
        reg, store = self.registry, self.store
        t = time.perf_counter()
        chunks = [c for _, d in group for c in d.chunks]
        weight = len(group) / len(chunks) if chunks else 0.0
        before = self.bar.n
        emb = embed_chunks(
            chunks,
            self.index.embedder,
            reg,
            group_size=self.group_size,
            on_progress=lambda n: self._embedded(n, weight),
        )
        self.bar.update(before + len(group) - self.bar.n)  # the group's documents, exactly
        st["embedding"] += time.perf_counter() - t
        self.report.embedded += emb.embedded
        self.report.cached += emb.cached
        parts: list[np.ndarray] = []
        offset = 0
        for _, d in group:
            parts.append(emb.vectors[offset : offset + len(d.chunks)])
            offset += len(d.chunks)
        sources = [p.file.real_path for p, _ in group]
        t = time.perf_counter()
        begin_documents(reg, ((d, s) for (_, d), s in zip(group, sources, strict=True)))
        st["registry"] += time.perf_counter() - t
        t = time.perf_counter()
        written = [i for i, (_, d) in enumerate(group) if d.chunks]
        errors = write_documents(store, [(group[i][1].chunks, parts[i], sources[i]) for i in written])
        refused = dict(zip(written, errors, strict=True))
        st["store"] += time.perf_counter() - t
        for i, ((p, d), source) in enumerate(zip(group, sources, strict=True)):
            err = refused.get(i)
            if err is not None:
                # Nothing of the new version is live; remove what was written (or leave it to
                # the next run's repair if Chroma refuses that too). Vectors stay cached.
                self.fail(p.file.path, str(err))
                try:
                    repair_one(reg, store, reg.get(d.doc_id))
                except ProxyPointerError as err2:
                    logger.error("%s: could not roll back (%s); the next run repairs it", d.doc_id, err2)
                self.doc_done(advance=False)
                continue
            t = time.perf_counter()
            commit_document(reg, store, d, source, p.mtime, p.size)
            st["registry"] += time.perf_counter() - t
            self.report.indexed += 1
            self.report.sections += d.n_sections
            self.report.chunks += len(d.chunks)
            self.doc_done(advance=False)


def run_ingest(
    index: Store,
    paths: Sequence[str | Path],
    *,
    prune: bool = False,
    include_hidden: bool = False,
    show_progress: bool = True,
    batch_chunks: int = 512,
) -> IngestReport:
    """Run every stage of a sync in this process (the caller holds the write lock).

    Files are planned one at a time and each changed one parsed at once from the bytes just
    read; chunks are gathered across documents until ``batch_chunks``, then embedded, written
    and committed together. The progress bar counts chunks (its total grows as documents are
    chunked) and shows documents done. Files of a batch reader (PDF) come first: the changed
    ones are converted together (``ingest.read_batch``: ``pdf.workers`` JVMs, a progress bar by
    pages), then parsed; PDFs the reader cannot read here are set aside (``ingest.set_aside``).

    Args:
        index: The index (registry, store, embedder, config, readers).
        paths: Files or folders.
        prune: Also delete documents whose files are gone from the given folders, and drop
            embedding-cache entries no live chunk uses.
        include_hidden: Also read hidden and tool folders (see ``discovery``).
        show_progress: Show the tqdm bar on stderr.
        batch_chunks: Chunks gathered before one embed-and-write step.

    Returns:
        The report.
    """
    t0 = time.perf_counter()
    found = start_sync(index, paths, include_hidden=include_hidden)
    files, aside_failed, aside_notes = set_aside(found.files, index.readers)
    run = _Run(index, show_progress, batch_chunks, files=len(files))
    report = run.report
    report.failed.extend(found.failed)
    report.failed.extend(aside_failed)
    report.notes.extend(aside_notes)
    for _path, note in aside_notes:
        logger.info("%s", note)
    report.documents = len(found.files) - len(aside_notes) + sum(1 for p, _ in found.failed if os.path.isfile(p))
    files_run = _Files(index, run, show_progress)
    try:
        files_run.read_batched([f for f in files if reads_in_batches(index.readers[f.suffix])])
        files_run.read_each([f for f in files if not reads_in_batches(index.readers[f.suffix])])
        run.flush()
    finally:
        run.bar.close()
    finish_sync(index, found, report, prune=prune, started=t0)
    return report


def _large_document_note(path: str, doc: PreparedDocument, to_embed: int) -> str:
    """Say that one document makes many chunks to embed, how it was cut, and what an interruption keeps."""
    size = len(doc.text.encode("utf-8", "surrogatepass")) / 1e6
    tree = DocumentTree.from_json(doc.tree_json, doc.doc_id, doc.title, doc.line_count)
    how = f"{doc.n_sections:,} sections" if tree.has_headings else "no headings: cut in sliding windows"
    return (f"{path}: {len(doc.chunks):,} chunks from one document ({size:.1f} MB, {doc.line_count:,} lines, {how}), "
            f"{to_embed:,} of them to embed: that takes long on a CPU (13-50 chunks/s). An interrupted run keeps "
            "what it embedded: run the same ingest again to go on")


class _Files:
    """Plans, reads, parses and chunks the files of one run, handing each document to its ``_Run``.

    Args:
        index: The store (registry, readers, config, pipeline key, embedder's tokenizer).
        run: Where prepared documents go (gathered, embedded, written) and failures are recorded.
        show_progress: Show the batch readers' progress bars (PDF pages).
    """

    def __init__(self, index: Store, run: _Run, show_progress: bool) -> None:
        self.registry = index.registry
        self.readers = index.readers
        self.config = index.config
        self.key = index.pipeline_key
        self.tokenizer = TokenCountCache(index.embedder.tokenizer)  # words counted once per run
        warn_approximate_sizes(index.embedder)
        self.run = run
        self.show_progress = show_progress

    def plan(self, file: SourceFile, reader: Reader) -> tuple[Pending, bytes] | None:
        """Plan one file; None when it is unchanged or failed (recorded in the report)."""
        planned = plan_changed(file, reader, self.registry, self.key, self.run.report)
        if planned is None:
            self.run.doc_done()
        return planned

    def prepare(self, file: SourceFile, make: Callable[[], PreparedDocument], pending: Pending) -> None:
        """Parse and chunk one changed file and add it to the group being gathered."""
        run = self.run
        try:
            doc = make()
        except EmptyDocumentError as err:
            self.skip_empty(file, err)
            return
        except StoreError:
            raise
        except ProxyPointerError as err:  # e.g. a converter's missing dependency: this file fails
            run.fail(file.path, str(err))
            run.doc_done()
            return
        run.report.notes.extend((file.path, w) for w in doc.warnings)
        if len(doc.chunks) >= LARGE_DOCUMENT_CHUNKS:
            _known, todo = missing_embeddings(doc.chunks, run.index.embedder.name, self.registry)
            if len(todo) >= LARGE_DOCUMENT_CHUNKS:  # a resumed or edited one reuses most vectors
                note = _large_document_note(file.path, doc, len(todo))
                logger.warning("%s", note)  # now, before the long embedding, not in the summary only
                run.report.notes.append((file.path, note))
        run.add(pending, doc)

    def skip_empty(self, file: SourceFile, err: EmptyDocumentError) -> None:
        """Skip a file that holds no text, with a note (not a failure)."""
        note = empty_note(self.registry, file, err)
        self.run.report.skipped += 1
        self.run.report.notes.append((file.path, note))
        logger.info("%s", note)
        self.run.doc_done()

    def read_batched(self, batched: list[SourceFile]) -> None:
        """Read the files of readers that convert in batches (PDF), then parse them one by one.

        The changed files of each group of ``BATCH_READ_FILES`` are converted together.
        """
        readers, cfg, st = self.readers, self.config, self.run.report.stage_seconds
        for start in range(0, len(batched), BATCH_READ_FILES):
            todo: list[Pending] = []
            for file in batched[start : start + BATCH_READ_FILES]:
                planned = self.plan(file, readers[file.suffix])
                if planned is not None:
                    todo.append(planned[0])
            by_reader: dict[int, list[Pending]] = {}
            for pending in todo:
                by_reader.setdefault(id(readers[pending.file.suffix]), []).append(pending)
            for group in by_reader.values():
                reader = readers[group[0].file.suffix]
                results = read_batch(group, reader, show_progress=self.show_progress, stage_seconds=st)
                for pending, result in zip(group, results, strict=True):
                    if isinstance(result, EmptyDocumentError):  # a 0-byte PDF: a note, as any empty file
                        self.skip_empty(pending.file, result)
                        continue
                    if isinstance(result, ProxyPointerError):
                        self.run.fail(pending.file.path, str(result))
                        self.run.doc_done()
                        continue
                    self.prepare(
                        pending.file,
                        lambda r=result, p=pending: prepare_document(
                            r, p.file.doc_id, self.key, cfg.tree, cfg.chunking, self.tokenizer, path=p.file.path,
                            stage_seconds=st,
                        ),
                        pending,
                    )

    def read_each(self, files: list[SourceFile]) -> None:
        """Read the files of the other readers (markdown): each planned, then parsed from its bytes."""
        cfg, st = self.config, self.run.report.stage_seconds
        for file in files:
            reader = self.readers[file.suffix]
            planned = self.plan(file, reader)
            if planned is None:
                continue
            pending, data = planned
            self.prepare(
                file,
                lambda p=pending, d=data, r=reader: parse_file(
                    p, r, self.key, cfg.tree, cfg.chunking, self.tokenizer, data=d, stage_seconds=st
                ),
                pending,
            )

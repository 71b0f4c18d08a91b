"""Ingestion is idempotent and order-free (STYLE.md section 9's invariant "ingesting twice equals once").

For any folder of markdown files (headings, windows-only and empty documents, identical texts
in several files), ingesting it twice, with its files given in any order and grouped into
write batches of any size, gives the same documents, chunks, chunk ids, Chroma records and
stored sources as ingesting it once; the second run of the same files indexes nothing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fakes import HashingEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxypointer.config import ChunkingConfig, ProxyPointerConfig
from proxypointer.index import Index

from .strategies import heading_documents

CFG = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=24, overlap_tokens=0))
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_NAMES = st.sampled_from(["a", "b", "notes", "readme", "x1", "report", "z"])
_DIRS = st.sampled_from(["", "", "sub/", "sub/deep/", "other/"])
_TEXTS = st.one_of(
    heading_documents(max_blocks=8),
    st.lists(st.sampled_from(["plain line", "another plain line", ""]), max_size=6).map("\n".join),
)


@st.composite
def corpora(draw: st.DrawFn) -> dict[str, str]:
    """``relative path -> text``; stems unique (so the files can also be given one by one)."""
    stems = draw(st.lists(_NAMES, min_size=1, max_size=6, unique=True))
    texts = draw(st.lists(_TEXTS, min_size=1, max_size=3))  # few texts: files often share one
    return {f"{draw(_DIRS)}{stem}.md": draw(st.sampled_from(texts)) for stem in stems}


def snapshot(index: Index) -> dict:
    """Everything a user can observe of a store's content."""
    reg = index.registry
    docs = {r.doc_id: (r.doc_hash, r.version, r.title, r.line_count, r.n_sections, r.n_chunks, r.state,
                       r.source_path) for r in reg.documents()}
    got = index.store.collection.get(include=["documents", "metadatas"])
    records = {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}
    sources = sorted(p.name for p in (index.root / "sources").glob("*/*.md"))
    return {"documents": docs, "chunks": {d: sorted(reg.chunk_ids(d)) for d in docs}, "records": records,
            "sources": sources}


def _ingest(store: Path, paths: list[Path], batch_chunks: int):
    index = Index(store, CFG, HashingEmbedder())
    try:
        report = index.ingest(paths, show_progress=False, batch_chunks=batch_chunks)
        assert index.check().ok
        return report, snapshot(index)
    finally:
        index.close()


@SETTINGS
@given(corpus=corpora(), order=st.randoms(use_true_random=False), batches=st.tuples(
    st.integers(1, 40), st.integers(1, 40), st.integers(1, 40)))
def test_ingesting_twice_in_any_order_equals_once(corpus, order, batches):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        names = list(corpus)
        order.shuffle(names)  # files written (and so listed by the OS) in any order
        for rel in names:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(corpus[rel], encoding="utf-8")
        files = sorted(root / rel for rel in corpus)

        # a folder: once, and twice with other batch sizes
        _, once = _ingest(Path(tmp) / "once", [root], batches[0])
        _, _ = _ingest(Path(tmp) / "twice", [root], batches[1])
        second, twice = _ingest(Path(tmp) / "twice", [root], batches[2])
        assert second.indexed == 0 and second.embedded == 0
        assert twice == once
        assert set(once["documents"]) == {
            Path(rel).with_suffix("").as_posix() for rel, text in corpus.items() if text.strip()}

        # files given one by one, in two different orders
        shuffled = list(files)
        order.shuffle(shuffled)
        _, f_once = _ingest(Path(tmp) / "f-once", files, batches[0])
        _ingest(Path(tmp) / "f-twice", shuffled, batches[1])
        order.shuffle(shuffled)
        again, f_twice = _ingest(Path(tmp) / "f-twice", shuffled, batches[2])
        assert again.indexed == 0 and f_twice == f_once
        assert set(f_once["documents"]) == {Path(rel).stem for rel, text in corpus.items() if text.strip()}
        assert all(os.path.isabs(v[-1]) for v in f_once["documents"].values())

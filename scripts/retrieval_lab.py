"""Retrieval lab: rank, deliver and score candidate pipelines offline over the eval cache's stores.

Usage:
    .venv/bin/python scripts/retrieval_lab.py configs/experiments/financebench-dev-md.yaml \\
        [--bench DIR] [--candidates a,b] [--scopes doc,corpus] [--limit-docs N] [--out DIR] [--explain]

Reads the chunk stores that ``scripts/run_experiment.py`` filled (same ``<cache>`` folders,
same store keys), embeds only the queries (and section title lines, from ``<cache>/vectors.sqlite``
when present), and re-implements the ranking and delivery of ``Retriever.retrieve`` /
``Retriever.assemble`` with numpy and the library's own pieces (``ranking.fuse_rrf``,
``rank_sections``, ``pack_windows``, ``LexicalIndex``), so that ideas can be measured without
touching library modules: title fields, title vectors, label lookup, section scoring, fusion
weights, delivery policies for big sections. Candidates are the ``CANDIDATES`` table below;
``today-default`` and ``today-quality`` reproduce today's two pipelines (the harness's figures
for them are the check that the lab ranks as the library does; corpus scope here is an exact
search, the harness's an HNSW one).

Metrics are the harness's (``proxypointer.eval.benchmark``): hit@1/3/5, MRR@10, tokens@5 (word
pieces of the first five delivered units), budget_hit@500..4000, 95% document-bootstrap
intervals and paired differences against ``--ref``. Written to ``--out``: results.json
(per-question values too), results.md, and with ``--explain`` explain.jsonl (per question:
gold lines and their section, the top sections with breadcrumbs, tokens and whether each hits).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxypointer.chunk.chunker import breadcrumb_text  # noqa: E402
from proxypointer.config import ProxyPointerConfig, config_from_dict, config_to_dict  # noqa: E402
from proxypointer.eval.benchmark import (  # noqa: E402
    Benchmark,
    EvidenceSpan,
    bootstrap_interval,
    budget_hit,
    load_benchmark,
    paired_difference,
)
from proxypointer.eval.harness import DEFAULT_TEMPLATES, SystemSpec, VectorCache, store_folder  # noqa: E402
from proxypointer.lines import slice_lines, split_lines  # noqa: E402
from proxypointer.retrieve.context import cut_to_tokens, pack_windows  # noqa: E402
from proxypointer.retrieve.ranking import LexicalIndex, fuse_rrf, rank_sections  # noqa: E402
from proxypointer.store.chroma import Hit  # noqa: E402
from proxypointer.tree.build import DocumentTree, build_tree  # noqa: E402

logger = logging.getLogger("retrieval_lab")

# -- candidates -------------------------------------------------------------------------

#: Store settings by short name: (chunk_tokens, breadcrumb, tree options).
STORES: dict[str, dict[str, Any]] = {
    "c200": {"chunking": {"chunk_tokens": 200}},
    "c128": {"chunking": {"chunk_tokens": 128}},
    "c128r": {"tree": {"relevel_numbered": True}, "chunking": {"chunk_tokens": 128}},
}


@dataclass(frozen=True)
class Candidate:
    """One pipeline the lab ranks and delivers.

    Attributes:
        store: Key of :data:`STORES`.
        lexical_weight: Weight of BM25 over breadcrumb + chunk text in the RRF fusion (0: off).
        rrf_k: RRF constant.
        scoring: ``max`` | ``sum`` | ``rrf`` (``ranking.rank_sections``).
        top_n: Chunks counted by ``sum``.
        routing_docs: Title routing as ``retrieval.title_routing_docs`` (corpus scope only).
        title_lex_weight: Weight of a BM25 ranking of sections by their title field (0: off).
        title_field: ``title`` (the section's own title) or ``path`` (its breadcrumb).
        title_stem: Light stemming (plural and -ing/-ed endings) on both sides of the title BM25.
        title_dense_weight: Weight of a dense ranking of sections by their breadcrumb-line vector.
        labels: Put the section a label in the query names ("Section 2.05", "Chapter 16",
            "Table 3-1") first (``references.DocumentReferences.lookup``).
        delivery: How ``retrieve`` delivers a ranked section: ``subtree`` (today: the whole
            subtree) or ``cap`` (the subtree when it fits ``cap_tokens``, else the section's own
            text, itself cut to a window of ``cap_tokens`` around its best chunk when longer,
            plus an outline of its children: one line per child with its line range). The
            window is filled as ``assemble`` fills a budget, from the section's own ranked chunks
            (best first, then grown line by line), so it can hold several disjoint pieces.
        cap_tokens: Token cap of ``cap`` delivery: larger subtrees are not delivered whole.
        window_tokens: Cap of the section's own text under ``cap`` delivery (0: ``cap_tokens``).
        whole_section_tokens: ``assemble`` delivers a section whole up to this many tokens.
        order: ``assemble`` order (``chunks`` or ``sections``).
        skip_empty: Leave out breadcrumb-only chunks (a leaf heading with no text: the chunk
            is the breadcrumb alone, so it matches any query that names the document).
        min_text_tokens: Leave out chunks whose own text (breadcrumb excluded) has fewer word
            pieces than this (a page number or a one-line heading section: the breadcrumb
            dominates their vector). Implies ``skip_empty``.
        route_text: What the routing BM25 reads per document: ``title`` (as the library: the
            document title, and a title named verbatim in the query restricts the search) or
            ``cover`` (the title and the first 60 non-blank lines: a filing's cover page, a
            paper's title and abstract; the dense hits in the best ``routing_docs`` documents
            are fused as a third ranking, never a restriction).
        note: One line for the report.
    """

    store: str = "c200"
    lexical_weight: float = 0.0
    rrf_k: int = 60
    scoring: str = "max"
    top_n: int = 3
    routing_docs: int = 0
    title_lex_weight: float = 0.0
    title_field: str = "path"
    title_stem: bool = False
    title_dense_weight: float = 0.0
    labels: bool = False
    delivery: str = "subtree"
    cap_tokens: int = 600
    window_tokens: int = 0
    whole_section_tokens: int = 300
    order: str = "chunks"
    skip_empty: bool = False
    min_text_tokens: int = 0
    route_text: str = "title"
    note: str = ""

    @property
    def fused(self) -> bool:
        return bool(self.lexical_weight or self.routing_docs or self.title_lex_weight or self.title_dense_weight
                    or self.scoring != "max")


_Q = {"store": "c128", "lexical_weight": 0.5, "rrf_k": 5, "scoring": "sum", "top_n": 2, "routing_docs": 3}
CANDIDATES: dict[str, Candidate] = {
    "today-default": Candidate(note="configs/default.yaml"),
    "today-quality": Candidate(**_Q, note="configs/quality.yaml"),
    # delivery of big sections
    "q-cap600": Candidate(**_Q, delivery="cap", cap_tokens=600, note="quality + cap delivery 600"),
    "q-cap400": Candidate(**_Q, delivery="cap", cap_tokens=400, note="quality + cap delivery 400"),
    "q-cap1000": Candidate(**_Q, delivery="cap", cap_tokens=1000, note="quality + cap delivery 1000"),
    # title fields
    "q-tlex": Candidate(**_Q, title_lex_weight=0.5, note="quality + title-path BM25 (w 0.5)"),
    "q-tlex1": Candidate(**_Q, title_lex_weight=1.0, note="quality + title-path BM25 (w 1)"),
    "q-tlex-stem": Candidate(**_Q, title_lex_weight=0.5, title_stem=True, note="quality + stemmed title-path BM25"),
    "q-tlex-own": Candidate(**_Q, title_lex_weight=0.5, title_field="title", note="quality + own-title BM25"),
    "q-tvec": Candidate(**_Q, title_dense_weight=0.5, note="quality + breadcrumb-line vectors (w 0.5)"),
    "q-tvec1": Candidate(**_Q, title_dense_weight=1.0, note="quality + breadcrumb-line vectors (w 1)"),
    "q-labels": Candidate(**_Q, labels=True, note="quality + label lookup first"),
    # scoring and fusion
    "q-max": Candidate(**{**_Q, "scoring": "max"}, note="quality, section score max"),
    "q-lex1": Candidate(**{**_Q, "lexical_weight": 1.0}, note="quality, BM25 weight 1"),
    "q-lex025": Candidate(**{**_Q, "lexical_weight": 0.25}, note="quality, BM25 weight 0.25"),
    "q-rrf10": Candidate(**{**_Q, "rrf_k": 10}, note="quality, rrf_k 10"),
    "q-c200": Candidate(**{**_Q, "store": "c200"}, note="quality on 200-token chunks"),
    "q-dense": Candidate(**{**_Q, "lexical_weight": 0.0}, note="quality without BM25"),
    # breadcrumb-only chunks
    "q-skip": Candidate(**_Q, skip_empty=True, note="quality, breadcrumb-only chunks left out"),
    "q-cap800": Candidate(**_Q, delivery="cap", cap_tokens=800, note="quality + cap delivery 800"),
    "q-skip-cap600": Candidate(**_Q, skip_empty=True, delivery="cap", cap_tokens=600,
                               note="quality, no breadcrumb-only chunks, cap 600"),
    "q-skip-tstem-cap600": Candidate(**_Q, skip_empty=True, title_lex_weight=0.5, title_stem=True, delivery="cap",
                                     cap_tokens=600, note="quality, no breadcrumb-only, stemmed title BM25, cap 600"),
    "d-cap600": Candidate(delivery="cap", cap_tokens=600, note="default + cap delivery 600"),
    # document routing by cover text (corpus scope)
    "q-cover": Candidate(**_Q, route_text="cover", note="quality, routing BM25 over title + first 60 lines"),
    "q-cover-min16-tstem-cap600": Candidate(**_Q, route_text="cover", min_text_tokens=16, title_lex_weight=0.5,
                                            title_stem=True, delivery="cap", cap_tokens=600,
                                            note="cover routing, no tiny chunks, stemmed title BM25, cap 600"),
    "q-tstem-cap600": Candidate(**_Q, title_lex_weight=0.5, title_stem=True, delivery="cap", cap_tokens=600,
                                note="quality, stemmed title BM25, cap 600"),
    "q-tstem-cap800": Candidate(**_Q, title_lex_weight=0.5, title_stem=True, delivery="cap", cap_tokens=800,
                                note="quality, stemmed title BM25, cap 800"),
    # cap the subtree at C, the own text at W
    "q-c1500w600": Candidate(**_Q, delivery="cap", cap_tokens=1500, window_tokens=600,
                             note="quality; subtree whole up to 1500, else own text (window 600) + outline"),
    "q-c1000w600": Candidate(**_Q, delivery="cap", cap_tokens=1000, window_tokens=600,
                             note="quality; subtree whole up to 1000, else own text (window 600) + outline"),
    "q-tstem-c1500w600": Candidate(**_Q, title_lex_weight=0.5, title_stem=True, delivery="cap", cap_tokens=1500,
                                   window_tokens=600, note="quality, stemmed title BM25, cap 1500 / window 600"),
    "q-tstem-c2000w1000": Candidate(**_Q, title_lex_weight=0.5, title_stem=True, delivery="cap", cap_tokens=2000,
                                    window_tokens=1000, note="quality, stemmed title BM25, cap 2000 / window 1000"),
    "q-tstem-c1000w1000": Candidate(**_Q, title_lex_weight=0.5, title_stem=True, delivery="cap", cap_tokens=1000,
                                    window_tokens=1000, note="quality, stemmed title BM25, cap 1000 / window 1000"),
    "q-norouting": Candidate(**{**_Q, "routing_docs": 0}, note="quality without title routing"),
    "q-norouting-tstem": Candidate(**{**_Q, "routing_docs": 0}, title_lex_weight=0.5, title_stem=True,
                                   note="quality without title routing, stemmed title BM25"),
    "q-norouting-tstem1": Candidate(**{**_Q, "routing_docs": 0}, title_lex_weight=1.0, title_stem=True,
                                    note="quality without title routing, stemmed title BM25 weight 1"),
    # on re-levelled trees (c128r: tree.relevel_numbered, with scripts/heading_variants.py --flatten)
    "r-quality": Candidate(**{**_Q, "store": "c128r"}, note="quality on a re-levelled tree"),
    "r-tstem": Candidate(**{**_Q, "store": "c128r"}, title_lex_weight=0.5, title_stem=True,
                         note="re-levelled tree, stemmed title BM25"),
    "r-cover": Candidate(**{**_Q, "store": "c128r"}, route_text="cover", note="re-levelled tree, cover routing"),
    "r-tstem-cap600": Candidate(**{**_Q, "store": "c128r"}, title_lex_weight=0.5, title_stem=True, delivery="cap",
                                cap_tokens=600, note="re-levelled tree, stemmed title BM25, cap 600"),
    "r-tstem-cap800": Candidate(**{**_Q, "store": "c128r"}, title_lex_weight=0.5, title_stem=True, delivery="cap",
                                cap_tokens=800, note="re-levelled tree, stemmed title BM25, cap 800"),
    "r-cap600": Candidate(**{**_Q, "store": "c128r"}, delivery="cap", cap_tokens=600,
                          note="re-levelled tree, cap 600"),
    "r-cover-tstem-cap600": Candidate(**{**_Q, "store": "c128r"}, route_text="cover", title_lex_weight=0.5,
                                      title_stem=True, delivery="cap", cap_tokens=600,
                                      note="re-levelled tree, cover routing, stemmed title BM25, cap 600"),
    "r-c1500w600": Candidate(**{**_Q, "store": "c128r"}, delivery="cap", cap_tokens=1500, window_tokens=600,
                             note="re-levelled tree, cap 1500 / window 600"),
    "r-tstem-c1500w600": Candidate(**{**_Q, "store": "c128r"}, title_lex_weight=0.5, title_stem=True,
                                   delivery="cap", cap_tokens=1500, window_tokens=600,
                                   note="re-levelled tree, stemmed title BM25, cap 1500 / window 600"),
    "r-cover-tstem-c1500w600": Candidate(**{**_Q, "store": "c128r"}, route_text="cover", title_lex_weight=0.5,
                                         title_stem=True, delivery="cap", cap_tokens=1500, window_tokens=600,
                                         note="re-levelled, cover routing, stemmed title BM25, cap 1500 / window 600"),
    "r-tstem-c2000w1000": Candidate(**{**_Q, "store": "c128r"}, title_lex_weight=0.5, title_stem=True,
                                    delivery="cap", cap_tokens=2000, window_tokens=1000,
                                    note="re-levelled tree, stemmed title BM25, cap 2000 / window 1000"),
    "r-tstem-c1000w1000": Candidate(**{**_Q, "store": "c128r"}, title_lex_weight=0.5, title_stem=True,
                                    delivery="cap", cap_tokens=1000, window_tokens=1000,
                                    note="re-levelled tree, stemmed title BM25, cap 1000 / window 1000"),
    "r-min16-tstem-cap600": Candidate(**{**_Q, "store": "c128r"}, min_text_tokens=16, title_lex_weight=0.5,
                                      title_stem=True, delivery="cap", cap_tokens=600,
                                      note="re-levelled tree, no tiny chunks, stemmed title BM25, cap 600"),
    "q-min16": Candidate(**_Q, min_text_tokens=16, note="quality, chunks under 16 text tokens left out"),
    "q-min32": Candidate(**_Q, min_text_tokens=32, note="quality, chunks under 32 text tokens left out"),
    "q-min16-tstem": Candidate(**_Q, min_text_tokens=16, title_lex_weight=0.5, title_stem=True,
                               note="quality, no chunks under 16 text tokens, stemmed title BM25"),
    "q-min16-tstem-cap600": Candidate(**_Q, min_text_tokens=16, title_lex_weight=0.5, title_stem=True,
                                      delivery="cap", cap_tokens=600,
                                      note="quality, no chunks under 16 text tokens, stemmed title BM25, cap 600"),
}


def stem(word: str) -> str:
    """Strip a plural or -ing/-ed ending (``sheets`` -> ``sheet``, ``flows`` -> ``flow``)."""
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + repl
    return word


class _StemmedIndex(LexicalIndex):
    def tokenize(self, text: str) -> list[str]:
        return [stem(w) for w in super().tokenize(text)]


# -- data ---------------------------------------------------------------------------------

@dataclass
class Store:
    """One chunk store read into memory, with its documents' trees, lines and token counts."""

    name: str
    config: ProxyPointerConfig
    hits: list[Hit]
    vectors: np.ndarray
    rows_of_doc: dict[str, np.ndarray]
    doc_of_hash: dict[str, str]
    trees: dict[str, DocumentTree]
    lines: dict[str, list[str]]
    line_tokens: dict[str, list[int]]
    lexical: LexicalIndex
    empty: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    text_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    row_of: dict[str, int] = field(default_factory=dict)
    rows_of_node: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    subtree_rows: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    title_lex: dict[tuple[str, bool], LexicalIndex] = field(default_factory=dict)
    title_vecs: dict[str, tuple[list[tuple[str, str]], np.ndarray]] = field(default_factory=dict)
    refs: dict[str, Any] = field(default_factory=dict)


def load_store(name: str, bench: Benchmark, base: ProxyPointerConfig, cache: str, embedder: Any) -> Store:
    from proxypointer.index import Index

    cfg = config_from_dict(_merge(config_to_dict(base), STORES[name]), f"store {name}")
    spec = SystemSpec(name, "dense", cfg, True)
    folder = store_folder(spec, bench, cache, embedder.name)
    if not folder.is_dir():
        raise SystemExit(f"{folder}: no store for {name}; run scripts/run_experiment.py with a system on it first")
    index = Index(folder, cfg, embedder)
    ids = index.registry.live_chunk_ids(sorted(bench.paths), 10**9) or []
    records = index.registry.chunk_records(ids)
    found, vecs = index.store.vectors(ids)
    row = {cid: i for i, cid in enumerate(found)}
    hits = [Hit(cid, records[cid][0], records[cid][1], 0.0) for cid in found]
    index.close()
    missing = sorted(set(bench.paths) - {h.metadata["doc_id"] for h in hits})
    if missing:
        raise SystemExit(f"{folder}: documents not stored: {missing[:5]}; ingest them first")
    st = Store(name, cfg, hits, np.asarray(vecs, dtype=np.float32), {}, {}, {}, {}, {},
               # chunk_id order, as Retriever._lexical builds it (BM25 ties keep index order)
               LexicalIndex(sorted(hits, key=lambda h: h.chunk_id),
                            lambda h: f"{h.metadata.get('breadcrumb', '')}\n{h.text}"))
    by_doc: dict[str, list[int]] = {}
    for cid in found:
        m = records[cid][1]
        i = row[cid]
        by_doc.setdefault(m["doc_id"], []).append(i)
        st.doc_of_hash[m["doc_hash"]] = m["doc_id"]
        st.rows_of_node.setdefault((m["doc_id"], m["node_id"]), []).append(i)
    st.rows_of_doc = {d: np.asarray(v) for d, v in by_doc.items()}
    st.empty = np.asarray([bool(h.metadata.get("empty_body")) for h in hits], dtype=bool)
    st.text_tokens = np.asarray(embedder.tokenizer.count_batch([h.text for h in hits]), dtype=int)
    st.row_of = {h.chunk_id: i for i, h in enumerate(hits)}
    for rows in st.rows_of_node.values():
        rows.sort(key=lambda i: int(hits[i].metadata["chunk_index"]))
    tok = embedder.tokenizer
    for doc_id, text in bench.texts.items():
        lines = split_lines(text)
        st.lines[doc_id] = lines
        st.line_tokens[doc_id] = tok.count_batch(lines)
        st.trees[doc_id] = build_tree(text, doc_id, cfg.tree, lines=lines)
    for doc_id, tree in st.trees.items():
        starts: dict[str, list[int]] = {}
        for n in tree.walk():
            rows = st.rows_of_node.get((doc_id, n.node_id), [])
            for a in [n.node_id, *[x.node_id for x in tree.ancestors(n.node_id)]]:
                starts.setdefault(a, []).extend(rows)
        st.subtree_rows.update({(doc_id, k): np.asarray(v, dtype=int) for k, v in starts.items()})
    logger.info("store %s: %d chunks, %d documents", name, len(hits), len(st.rows_of_doc))
    return st


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# -- ranking --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Item:
    """One delivered section: its document, the line ranges delivered (1-based inclusive), tokens."""

    doc_id: str
    ranges: tuple[tuple[int, int], ...]
    tokens: int
    hit: Hit

    def overlaps(self, spans: Sequence[EvidenceSpan]) -> bool:
        return any(self.doc_id == s.doc_id and a <= s.end_line and s.start_line <= b
                   for a, b in self.ranges for s in spans)


def item_hit_at(items: Sequence[Item], spans: Sequence[EvidenceSpan], k: int) -> float:
    """hit@k over delivered line ranges (``evaluation.hit_at`` when each item is one range)."""
    return float(any(it.overlaps(spans) for it in items[:k]))


def item_rr(items: Sequence[Item], spans: Sequence[EvidenceSpan], k: int = 10) -> float:
    for rank, it in enumerate(items[:k], 1):
        if it.overlaps(spans):
            return 1.0 / rank
    return 0.0


class Lab:
    """Ranks and delivers one candidate on one store (see :class:`Candidate`)."""

    def __init__(self, store: Store, cand: Candidate, embedder: Any, vector_cache: VectorCache | None) -> None:
        self.st, self.c, self.emb, self.vc = store, cand, embedder, vector_cache
        self.tok = embedder.tokenizer
        self._doc_titles: LexicalIndex | None = None
        self.unfiltered = True  # corpus scope searches without a doc filter (limit_docs 0)

    # rankings of chunk rows -----------------------------------------------------------
    @property
    def _skip(self) -> bool:
        return self.c.skip_empty or self.c.min_text_tokens > 0

    def _mask(self) -> np.ndarray:
        """True for chunk rows the candidate leaves out."""
        key = ("mask", self.c.skip_empty, self.c.min_text_tokens)
        if key not in self.st.refs:
            self.st.refs[key] = self.st.empty | (self.st.text_tokens < self.c.min_text_tokens)
        return self.st.refs[key]

    def _rows(self, docs: Sequence[str]) -> np.ndarray:
        rows = np.concatenate([self.st.rows_of_doc[d] for d in docs])
        if self._skip:
            rows = rows[~self._mask()[rows]]
        return rows

    def _dense(self, qv: np.ndarray, docs: Sequence[str], n: int) -> list[Hit]:
        rows = self._rows(docs)
        scores = self.st.vectors[rows] @ qv
        top = np.argsort(-scores, kind="stable")[:n]
        return [replace(self.st.hits[int(rows[i])], score=float(scores[i])) for i in top]

    def _lexical(self, query: str, docs: Sequence[str], n: int) -> list[Hit]:
        allowed = set(docs)
        if self._skip:
            mask, row = self._mask(), self.st.row_of
            keep = lambda h: h.metadata["doc_id"] in allowed and not mask[row[h.chunk_id]]  # noqa: E731
        elif len(allowed) == len(self.st.rows_of_doc):
            keep = None
        else:
            keep = lambda h: h.metadata["doc_id"] in allowed  # noqa: E731
        return self.st.lexical.search(query, n, keep)

    def _best_in(self, doc: str, node_id: str, qv: np.ndarray) -> Hit | None:
        rows = self.st.subtree_rows.get((doc, node_id))
        if rows is not None and self._skip:
            rows = rows[~self._mask()[rows]]
        if rows is None or not len(rows):
            return None
        scores = self.st.vectors[rows] @ qv
        i = int(np.argmax(scores))
        return replace(self.st.hits[int(rows[i])], score=float(scores[i]))

    def _title_index(self) -> LexicalIndex:
        key = (self.c.title_field, self.c.title_stem)
        if key not in self.st.title_lex:
            fake = []
            for doc, tree in self.st.trees.items():
                for n in tree.walk():
                    if n.kind != "heading":
                        continue
                    text = n.title if self.c.title_field == "title" else " ".join(tree.title_path(n.node_id))
                    fake.append(Hit(f"{doc}::{n.node_id}", text, {"doc_id": doc, "node_id": n.node_id}, 0.0))
            self.st.title_lex[key] = (_StemmedIndex if self.c.title_stem else LexicalIndex)(fake)
        return self.st.title_lex[key]

    def _title_lexical(self, query: str, qv: np.ndarray, docs: Sequence[str], n: int) -> list[Hit]:
        allowed = set(docs)
        out = []
        for h in self._title_index().search(query, 4 * n, lambda h: h.metadata["doc_id"] in allowed):
            best = self._best_in(h.metadata["doc_id"], h.metadata["node_id"], qv)
            if best is not None and best.chunk_id not in {o.chunk_id for o in out}:
                out.append(best)
            if len(out) >= n:
                break
        return out

    def _title_dense(self, qv: np.ndarray, docs: Sequence[str], n: int) -> list[Hit]:
        if "all" not in self.st.title_vecs:
            keys, texts = [], []
            for doc, tree in self.st.trees.items():
                for node in tree.walk():
                    if node.kind == "heading":
                        keys.append((doc, node.node_id))
                        texts.append(breadcrumb_text(tree.title_path(node.node_id)))
            got = self.vc.get(texts) if self.vc else {}
            todo = [t for t in texts if VectorCache.key(t) not in got]
            if todo:
                logger.info("embedding %d title lines", len(todo))
                fresh = self.emb.encode(todo)
                if self.vc:
                    self.vc.put(todo, fresh)
                got.update(zip((VectorCache.key(t) for t in todo), fresh, strict=True))
            self.st.title_vecs["all"] = (keys, np.stack([got[VectorCache.key(t)] for t in texts]))
        keys, vecs = self.st.title_vecs["all"]
        allowed = set(docs)
        scores = vecs @ qv
        out: list[Hit] = []
        for i in np.argsort(-scores, kind="stable"):
            doc, node = keys[int(i)]
            if doc not in allowed:
                continue
            best = self._best_in(doc, node, qv)
            if best is not None and best.chunk_id not in {o.chunk_id for o in out}:
                out.append(best)
            if len(out) >= n:
                break
        return out

    def _routing(self, query: str, docs: Sequence[str]) -> tuple[str, list[str]]:
        """Title routing as Retriever.ranked_hits: (query, restricted docs) or the best docs to fuse."""
        m = self.c.routing_docs
        # As the harness: corpus scope without limit_docs passes no doc filter, and routing then
        # runs whatever the number of documents; a doc filter of at most m documents skips it.
        if not m or (not (self.unfiltered and len(docs) == len(self.st.rows_of_doc)) and len(docs) <= m):
            return query, []
        if self._doc_titles is None:
            def text(d: str, t: DocumentTree) -> str:
                if self.c.route_text == "title":
                    return t.title
                body = [x for x in self.st.lines[d] if x.strip() and not x.lstrip().startswith("<!--")]
                return t.title + "\n" + "\n".join(body[:60])

            self._doc_titles = LexicalIndex([Hit(d, text(d, t), {"doc_id": d, "title": t.title}, 0.0)
                                             for d, t in self.st.trees.items()])
        allowed = set(docs)
        keep = lambda h: h.metadata["doc_id"] in allowed  # noqa: E731
        best = [(h.metadata["doc_id"], h.metadata["title"]) for h in self._doc_titles.search(query, m, keep)]
        if self.c.route_text != "title":
            return query, [d for d, _ in best]
        norm = lambda s: re.sub(r"\s+", " ", s).strip().casefold()  # noqa: E731
        named = [(d, t) for d, t in best if norm(t) and norm(t) in norm(query)]
        if named:
            for _, t in named:
                query = re.sub(re.escape(t), " ", query, flags=re.IGNORECASE)
            return query, [d for d, _ in named]
        return query, [d for d, _ in best]

    def ranked(self, query: str, qv_of: Callable[[str], np.ndarray], docs: Sequence[str], n: int) -> list[Hit]:
        """Fused chunk hits, best first (as ``Retriever.ranked_hits``, plus the lab's title rankings)."""
        c = self.c
        routed_query, best = self._routing(query, docs)
        if best and routed_query != query:  # a title named in the query: search that document only
            query, docs, best = routed_query, best, []
        qv = qv_of(query)
        dense = self._dense(qv, docs, n)
        rankings, weights = [dense], [1.0]
        if c.lexical_weight:
            rankings.append(self._lexical(query, docs, n))
            weights.append(c.lexical_weight)
        if best:
            rankings.append(self._dense(qv, best, n))
            weights.append(1.0)
        if c.title_lex_weight:
            rankings.append(self._title_lexical(query, qv, docs, n))
            weights.append(c.title_lex_weight)
        if c.title_dense_weight:
            rankings.append(self._title_dense(qv, docs, n))
            weights.append(c.title_dense_weight)
        out = dense if len(rankings) == 1 else fuse_rrf(rankings, weights, c.rrf_k)
        if c.labels:
            out = self._label_first(query, qv, out)
        return out

    def _label_first(self, query: str, qv: np.ndarray, ranked: list[Hit]) -> list[Hit]:
        from proxypointer.tree.references import DocumentReferences

        if not ranked:
            return ranked
        doc = ranked[0].metadata["doc_id"]
        if doc not in self.st.refs:
            self.st.refs[doc] = DocumentReferences.build("\n".join(self.st.lines[doc]) + "\n", doc, self.st.config.tree)
        named = self.st.refs[doc].lookup(query)
        first = [b for b in (self._best_in(doc, nid, qv) for nid in named[:2]) if b is not None]
        if not first:
            return ranked
        top = ranked[0].score
        first = [replace(h, score=top + 1.0 - 0.01 * i) for i, h in enumerate(first)]
        ids = {h.chunk_id for h in first}
        return first + [h for h in ranked if h.chunk_id not in ids]

    # units and deliveries ----------------------------------------------------------------
    def units(self, query: str, qv_of: Callable[[str], np.ndarray], docs: Sequence[str], k: int,
              k_asked: int = 50) -> list[Item]:
        """The k best sections, delivered by the candidate's policy, best first.

        ``k_asked`` is the ``k`` the harness passes to ``retrieve`` (10 + largest budget / 100):
        the fused path over-fetches ``3 * k_asked`` chunks, which decides which sections rank.
        """
        c = self.c
        if c.fused or c.labels or self._skip:
            hits = self.ranked(query, qv_of, docs, max(50, 3 * k_asked))
            groups = rank_sections(hits, c.scoring, c.top_n, c.rrf_k)[:k]
        else:
            hits = self._dense(qv_of(query), docs, 5000)
            seen: dict[tuple[str, str], list[Hit]] = {}
            for h in hits:
                key = (h.metadata["doc_id"], h.metadata["node_id"])
                if key in seen:
                    seen[key].append(h)
                elif len(seen) < k:
                    seen[key] = [h]
            groups = list(seen.values())
        return [self._deliver(g) for g in groups]

    def _count(self, doc: str, a: int, b: int) -> int:
        return sum(self.st.line_tokens[doc][a - 1 : b])

    def _deliver(self, group: list[Hit]) -> Item:
        h = group[0]
        m = h.metadata
        doc = m["doc_id"]
        a, b = int(m["start_line"]), int(m["end_line"])
        tree = self.st.trees[doc]
        try:
            node = tree.node(m["node_id"])
        except KeyError:  # a fallback window
            node = None
        whole = self._count_text(doc, a, b)
        if self.c.delivery == "subtree" or whole <= self.c.cap_tokens or node is None:
            return Item(doc, ((a, b),), whole, h)
        own_b = max(a, int(m.get("body_end_line", node.body_end_line)))
        outline = ""
        kids = tree.children(node.node_id)
        if kids:
            outline = "\n".join(f"- {k.title} (L{k.start_line}-L{k.end_line})" for k in kids)
        extra = self.tok.count(outline) if outline else 0
        window = self.c.window_tokens or self.c.cap_tokens
        if self._count(doc, a, own_b) <= window:
            return Item(doc, ((a, own_b),), self._count_text(doc, a, own_b) + extra, h)
        own = [replace(x, metadata={**x.metadata, "start_line": a, "end_line": own_b}) for x in group
               if x.metadata["node_id"] == m["node_id"]]
        toks = self.st.line_tokens[doc]
        windows = pack_windows([own], lambda dh: toks, window, whole_section_tokens=0, order="chunks")
        kept, used = [], 0
        for w in windows:  # the last window may pass the cap (pack_windows leaves the cut to its caller)
            end = w.end_line
            while end > w.start_line and used + sum(toks[w.start_line - 1 : end]) > window:
                end -= 1
            n = sum(toks[w.start_line - 1 : end])
            if used and used + n > window:
                break
            kept.append((w.start_line, end))
            used += n
        return Item(doc, tuple(sorted(kept)), used + extra, h)

    def _count_text(self, doc: str, a: int, b: int) -> int:
        key = (doc, a, b)
        cache = self.__dict__.setdefault("_counts", {})
        if key not in cache:
            cache[key] = self.tok.count(slice_lines(self.st.lines[doc], a, b))
        return cache[key]

    def assemble(self, query: str, qv_of: Callable[[str], np.ndarray], docs: Sequence[str], budget: int,
                 offsets: Callable[[str, int], int]) -> list[tuple[str, int, int]]:
        """Delivered character ranges within the budget (as ``Retriever.assemble`` + ``delivered_ranges``)."""
        c = self.c
        n = max(50, budget // 20)
        groups = rank_sections(self.ranked(query, qv_of, docs, n), c.scoring, c.top_n, c.rrf_k)
        windows = pack_windows(groups, lambda h: self.st.line_tokens[self.st.doc_of_hash[h]], budget,
                               whole_section_tokens=c.whole_section_tokens, order=c.order)
        out, used = [], 0
        for w in windows:
            if used >= budget:
                break
            doc = w.hit.metadata["doc_id"]
            text = slice_lines(self.st.lines[doc], w.start_line, w.end_line)
            n_tok = w.tokens
            if used + n_tok > budget:
                text = cut_to_tokens(text, budget - used, self.tok)
                n_tok = self.tok.count(text)
            used += n_tok
            if text:
                start = offsets(doc, w.start_line)
                out.append((doc, start, start + len(text)))
        return out


# -- runner ---------------------------------------------------------------------------------

def _gold_sections(st: Store, doc: str, spans: Sequence[EvidenceSpan]) -> list[str]:
    tree = st.trees[doc]
    out = []
    for s in spans:
        inner = [n for n in tree.walk() if n.start_line <= s.start_line <= n.body_end_line
                 or (s.start_line <= n.start_line <= s.end_line)]
        for n in inner[:3]:
            out.append(f"{' > '.join(tree.title_path(n.node_id))} [L{n.start_line}-{n.body_end_line}/{n.end_line}]")
    return list(dict.fromkeys(out))


def run(args: argparse.Namespace, embedder: Any = None) -> dict[str, Any]:
    """Run the candidates of ``args`` (see :func:`main`); returns the result written to ``args.out``."""
    from proxypointer.embed.embedder import SentenceTransformerEmbedder

    data = yaml.safe_load(Path(args.config).read_text(encoding="utf-8")) or {}
    base = config_from_dict(data.get("pipeline"), f"{args.config}: pipeline")
    bench_path = Path(args.bench or data["benchmark"])
    bench_path = bench_path if bench_path.is_absolute() else (ROOT / bench_path).resolve()
    limit = args.limit_docs if args.limit_docs is not None else data.get("limit_docs", 0)
    bench = load_benchmark(bench_path, limit or None)
    templates = {**DEFAULT_TEMPLATES, **(data.get("query_templates") or {})}
    scopes = args.scopes.split(",") if args.scopes else data.get("scopes", ["doc", "corpus"])
    budgets = tuple(data.get("budgets", (500, 1000, 2000, 4000)))
    cache = args.cache or data.get("cache", ".proxypointer/eval-cache")
    cache = str(ROOT / cache) if not Path(cache).is_absolute() else cache
    names = args.candidates.split(",") if args.candidates else list(CANDIDATES)
    emb = embedder or SentenceTransformerEmbedder(base.embedding)
    vc = VectorCache(Path(cache) / "vectors.sqlite", emb.name)
    queries = sorted({templates[sc].format(question=q.question, title=q.title)
                      for sc in scopes for q in bench.questions})
    qvec = dict(zip(queries, emb.encode(queries), strict=True))

    def qv_of(text: str) -> np.ndarray:
        if text not in qvec:
            qvec[text] = emb.encode([text])[0]
        return qvec[text]

    offsets: dict[str, list[int]] = {}

    def offset(doc: str, line: int) -> int:
        if doc not in offsets:
            offsets[doc] = bench.line_offsets(doc)
        return offsets[doc][line - 1]

    stores: dict[str, Store] = {}
    values: dict[str, dict[str, dict[str, list[float]]]] = {}
    explain: list[dict] = []
    all_docs = sorted(bench.paths)
    metrics = ("hit@1", "hit@3", "hit@5", "mrr@10", "tokens@5", *(f"budget_hit@{b}" for b in budgets))
    for name in names:
        cand = CANDIDATES[name]
        if cand.store not in stores:
            stores[cand.store] = load_store(cand.store, bench, base, cache, emb)
        lab = Lab(stores[cand.store], cand, emb, vc)
        lab.unfiltered = not limit
        values[name] = {}
        t0 = time.time()
        for scope in scopes:
            vals: dict[str, list[float]] = {m: [] for m in metrics}
            for q in bench.questions:
                query = templates[scope].format(question=q.question, title=q.title)
                docs = [q.doc_id] if scope == "doc" else all_docs
                delivered = lab.units(query, qv_of, docs, 10)
                for k in (1, 3, 5):
                    vals[f"hit@{k}"].append(item_hit_at(delivered, q.spans, k))
                vals["mrr@10"].append(item_rr(delivered, q.spans, 10))
                vals["tokens@5"].append(float(sum(it.tokens for it in delivered[:5])))
                for b in budgets:
                    vals[f"budget_hit@{b}"].append(budget_hit(lab.assemble(query, qv_of, docs, b, offset), q.spans))
                if args.explain:
                    st = lab.st
                    explain.append({
                        "candidate": name, "scope": scope, "id": q.id, "doc_id": q.doc_id, "question": q.question,
                        "gold_lines": [[s.start_line, s.end_line] for s in q.spans],
                        "gold_sections": _gold_sections(st, q.doc_id, q.spans),
                        "hit@5": vals["hit@5"][-1], "budget_hit@4000": vals[f"budget_hit@{budgets[-1]}"][-1],
                        "top": [{"doc": it.doc_id, "lines": [list(r) for r in it.ranges], "tokens": it.tokens,
                                 "hit": item_hit_at([it], q.spans, 1), "score": round(it.hit.score, 4),
                                 "breadcrumb": it.hit.metadata.get("breadcrumb", ""),
                                 "section": [int(it.hit.metadata["start_line"]), int(it.hit.metadata["end_line"])],
                                 "chunk": it.hit.text[:160]} for it in delivered[:5]],
                    })
            values[name][scope] = vals
            logger.info("%s/%s: hit@5 %.3f tokens@5 %.0f budget_hit@%d %.3f (%.0f s)", name, scope,
                        np.mean(vals["hit@5"]), np.mean(vals["tokens@5"]), budgets[-1],
                        np.mean(vals[f"budget_hit@{budgets[-1]}"]), time.time() - t0)
    vc.close()
    groups = [q.doc_id for q in bench.questions]
    result = summarise(values, groups, args.ref if args.ref in values else names[0], args.bootstrap)
    result.update({"benchmark": str(bench_path), "n_questions": len(bench.questions), "n_documents": len(bench.paths),
                   "candidates": {n: {**CANDIDATES[n].__dict__} for n in names},
                   "per_question": {"ids": [q.id for q in bench.questions], "doc_ids": groups, "values": values}})
    out = Path(args.out or ROOT / "results" / f"lab-{bench_path.name}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1))
    table = to_markdown(result)
    (out / "results.md").write_text(table + "\n")
    if explain:
        (out / "explain.jsonl").write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in explain))
    print(table)
    print(f"wrote {out}")
    return result


def summarise(values: dict, groups: list[str], ref: str, n_boot: int) -> dict[str, Any]:
    systems: dict[str, Any] = {}
    intervals: dict[str, Any] = {}
    paired: dict[str, Any] = {}
    for name, by_scope in values.items():
        systems[name], intervals[name] = {}, {}
        for scope, vals in by_scope.items():
            stats = {m: bootstrap_interval(v, groups, n_boot) for m, v in vals.items()}
            systems[name][scope] = {m: round(s[0], 4) for m, s in stats.items()}
            intervals[name][scope] = {m: [round(s[1], 4), round(s[2], 4)] for m, s in stats.items()}
        if name != ref:
            paired[f"{name} - {ref}"] = {
                scope: {m: [round(x, 4) for x in paired_difference(v, values[ref][scope][m], groups, n_boot)]
                        for m, v in vals.items()}
                for scope, vals in by_scope.items() if scope in values[ref]}
    return {"systems": systems, "intervals": intervals, "paired": paired, "ref": ref}


def to_markdown(result: dict[str, Any]) -> str:
    lines = []
    first = next(iter(result["systems"].values()))
    for scope in first:
        metrics = list(first[scope])
        lines += [f"### scope: {scope} ({result['n_questions']} questions, {result['n_documents']} documents)", "",
                  "| candidate | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
        for name, by_scope in result["systems"].items():
            cells = []
            for m in metrics:
                v = by_scope[scope][m]
                cells.append(f"{v:.0f}" if m == "tokens@5" else f"{v:.3f}")
            d = result["paired"].get(f"{name} - {result['ref']}", {}).get(scope, {})
            if d:
                cells[2] += f" ({d['hit@5'][0]:+.3f})"
                cells[-1] += f" ({d[metrics[-1]][0]:+.3f})"
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(f"(paired differences against {result['ref']} in brackets: hit@5 and the largest budget)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="experiment YAML (benchmark, templates, budgets, cache, pipeline)")
    ap.add_argument("--bench", help="benchmark folder instead of the YAML's (e.g. a heading variant)")
    ap.add_argument("--candidates", help="comma-separated names of CANDIDATES (default all)")
    ap.add_argument("--scopes", help="doc,corpus (default the YAML's)")
    ap.add_argument("--limit-docs", type=int, default=None)
    ap.add_argument("--cache", help="eval cache (default the YAML's)")
    ap.add_argument("--ref", default="today-quality", help="reference candidate of the paired differences")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--out", help="output folder (default results/lab-<benchmark>)")
    ap.add_argument("--explain", action="store_true", help="write explain.jsonl (top sections per question)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

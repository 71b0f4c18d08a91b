"""The evaluation harness: systems, cached ingestion, runs over scopes, reports.

Every system of a run uses the same embedding model and store type. Each system ingests into
its own store folder ``<cache>/<strategy>-<breadcrumb>-<hash>``, the hash covering the model,
the tree and chunking settings, the benchmark folder and its documents run, so a second run embeds nothing
(systems that differ only in retrieval settings share a store). Document vectors are also kept
in ``<cache>/vectors.sqlite`` by model and text (:class:`VectorCache`), so a new store embeds
only texts no earlier store of the cache embedded. Metrics are defined in
:mod:`proxypointer.eval.benchmark`; docs/evaluation.md describes the systems and the numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ProxyPointerConfig, config_from_dict, config_to_dict
from ..errors import ConfigError, LockError
from ..lines import slice_lines, split_lines
from ..progress import progress_bar
from ..read.readers import default_readers
from ..retrieve.context import Assembler, cut_to_tokens
from ..retrieve.delivery import format_outline
from ..retrieve.ranking import LexicalIndex, rank_sections
from ..retrieve.references import ReferenceFollower
from ..store.chroma import Hit
from ..storefiles import CONVERTED_DIR, ENCODERS_DIR
from .benchmark import (
    METRICS,
    Benchmark,
    Delivered,
    Unit,
    bootstrap_interval,
    budget_hit,
    delivered_ranges,
    hit_at,
    paired_difference,
    recall_at,
    reciprocal_rank,
    tokens_at,
)

__all__ = [
    "PAGE_SYSTEMS",
    "SYSTEMS",
    "TREE_CODE",
    "EvalSettings",
    "SystemSpec",
    "VectorCache",
    "ingest_systems",
    "merge_results",
    "run_evaluation",
    "settings_from_dict",
    "store_folder",
    "system_specs",
    "tree_code_digest",
]

logger = logging.getLogger(__name__)

#: Built-in systems, in report order.
SYSTEMS = ("proxypointer", "flat", "flat-title", "sections-no-breadcrumb", "bm25-sections")
#: Page-unit baselines, for benchmarks whose documents have pages (PDFs, markdown with page
#: markers; docs/evaluation.md, "PDF input"): ``pages`` (each page one unit, embedded in
#: windows of ``chunk_tokens`` that never cross a page, the page scored by its best window)
#: and ``bm25-pages`` (BM25 over whole pages).
PAGE_SYSTEMS = ("pages", "bm25-pages")

#: Default query template per scope; ``{title}`` is the document's first heading.
DEFAULT_TEMPLATES = {"doc": "{question}", "corpus": "{title}. {question}"}


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """What one evaluation run measures.

    Attributes:
        benchmark: Benchmark folder (``docs/*.md``, ``questions.jsonl``).
        systems: Systems to run: built-in names (:data:`SYSTEMS`) or variant names.
        scopes: ``doc`` (search only the question's document) and/or ``corpus``.
        query_templates: Template per scope with ``{question}`` and ``{title}``.
        k: Extra cut-off (1..10): hit@k, recall@k and tokens@k are added when k is not 1, 3 or 5
            (hit@1/3/5, MRR@10, recall@5 and tokens@5 are always reported).
        budgets: Context budgets in word pieces of the embedding model's tokenizer.
        limit_docs: Evaluate only the first N documents (sorted by doc_id); 0 = all.
        bootstrap: Bootstrap samples for the 95% intervals (resampling documents).
        seed: Seed of the bootstrap.
        cache: Folder of the per-system stores.
    """

    benchmark: str = ""
    systems: tuple[str, ...] = SYSTEMS
    scopes: tuple[str, ...] = ("doc", "corpus")
    query_templates: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_TEMPLATES))
    k: int = 5
    budgets: tuple[int, ...] = (500, 1000, 2000, 4000)
    limit_docs: int = 0
    bootstrap: int = 1000
    seed: int = 0
    cache: str = ".proxypointer/eval-cache"

    def __post_init__(self) -> None:
        if not self.systems:
            raise ConfigError("systems: expected at least one system")
        bad = [s for s in self.scopes if s not in ("doc", "corpus")]
        if bad or not self.scopes:
            raise ConfigError(f"scopes: expected 'doc' and/or 'corpus', got {list(self.scopes)}")
        for scope, template in self.query_templates.items():
            try:
                template.format(question="q", title="t")
            except (KeyError, IndexError, ValueError) as err:
                raise ConfigError(
                    f"query_templates.{scope}: {template!r} is not a template with {{question}} and {{title}} ({err})"
                ) from err
        if not 1 <= self.k <= 10 or any(b < 1 for b in self.budgets) or self.limit_docs < 0 or self.bootstrap < 1:
            raise ConfigError("k must be 1..10, budgets and bootstrap >= 1 and limit_docs >= 0")


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """One system under test.

    Attributes:
        name: Report name.
        kind: ``dense`` (an Index with the embedding model), ``bm25`` (bm25s over chunks),
            ``pages`` (the model over page windows, in memory) or ``bm25-pages`` (bm25s over
            pages).
        config: Its full pipeline configuration.
        assemble: Deliver with ``Retriever.assemble`` under each budget; otherwise the
            returned units' whole texts in rank order.
    """

    name: str
    kind: str
    config: ProxyPointerConfig
    assemble: bool


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


#: Retrieval settings of the baselines, whatever the library's defaults: a dense ranking, each
#: section scored by its best chunk, whole sections (the pipeline before the reports round of
#: docs/evaluation.md; the defaults since then fuse BM25 and title rankings and cap big sections).
BASELINE_RETRIEVAL: dict[str, Any] = {
    "hybrid": False, "section_scoring": "max", "title_routing_docs": 0, "title_weight": 0.0,
    "label_lookup": False, "subtree_cap_tokens": 0, "demote_empty": False, "demote_exhibits": False,
    "focus_weight": 0.0, "implied_rank": -1,
}


def _builtin(name: str, base: ProxyPointerConfig) -> SystemSpec:
    d = config_to_dict(base)
    plain = {**config_to_dict(ProxyPointerConfig())["retrieval"], **BASELINE_RETRIEVAL}
    size = base.chunking.chunk_tokens
    over: dict[str, dict[str, Any]] = {
        "flat": {"chunking": {"strategy": "windows", "breadcrumb": "none", "window_tokens": size}, "retrieval": plain},
        "flat-title": {"chunking": {"strategy": "windows", "breadcrumb": "title", "window_tokens": size},
                       "retrieval": plain},
        "sections-no-breadcrumb": {"chunking": {"strategy": "sections", "breadcrumb": "none"}, "retrieval": plain},
        "bm25-sections": {"chunking": {"strategy": "sections", "breadcrumb": "path"}, "retrieval": plain},
        "pages": {"chunking": {"strategy": "windows", "breadcrumb": "none", "window_tokens": size},
                  "retrieval": plain},
        "bm25-pages": {"retrieval": plain},
    }.get(name, {})
    if name not in SYSTEMS and name not in PAGE_SYSTEMS:
        raise ConfigError(f"systems: unknown system {name!r}; built-in: {list(SYSTEMS + PAGE_SYSTEMS)} or a name "
                          "under variants")
    cfg = config_from_dict(_merge(d, over), f"system {name}")
    kind = {"bm25-sections": "bm25", "pages": "pages", "bm25-pages": "bm25-pages"}.get(name, "dense")
    return SystemSpec(name, kind, cfg, name == "proxypointer")


def system_specs(
    names: Sequence[str], base: ProxyPointerConfig, variants: dict[str, dict[str, Any]] | None = None
) -> list[SystemSpec]:
    """Resolve system names into specs.

    Args:
        names: Built-in names or keys of ``variants``.
        base: The configured pipeline (the ``proxypointer`` system; baselines derive from it).
        variants: ``name -> {"base": builtin, "pipeline": {overrides}, "assemble": bool}``.

    Returns:
        One spec per name, in order.

    Raises:
        ConfigError: On an unknown name, a bad variant, or a variant with another model.
    """
    out = []
    for name in names:
        if variants and name in variants:
            v = dict(variants[name])
            unknown = sorted(set(v) - {"base", "pipeline", "assemble"})
            if unknown:
                raise ConfigError(f"variants.{name}: unknown key(s) {unknown}; valid: base, pipeline, assemble")
            parent = _builtin(str(v.get("base", "proxypointer")), base)
            cfg = config_from_dict(_merge(config_to_dict(parent.config), v.get("pipeline") or {}), f"variants.{name}")
            if cfg.embedding.model != base.embedding.model:
                raise ConfigError(f"variants.{name}: every system uses the run's model {base.embedding.model!r}")
            out.append(SystemSpec(name, parent.kind, cfg, bool(v.get("assemble", parent.assemble))))
        else:
            out.append(_builtin(name, base))
    return out


class VectorCache:
    """Document vectors shared by every store of an evaluation cache, keyed by model and text.

    Each system ingests into its own store, and each store's registry caches only its own
    vectors; many systems embed identical texts (a variant that re-levels a few headings, the
    same windows under two retrieval settings), so the harness keeps one SQLite table of
    ``(model, sha1(text)) -> float32 vector`` beside the stores, ``<cache>/vectors.sqlite``.
    Safe for several processes (SQLite locking); not for threads sharing one instance.

    Args:
        path: SQLite file (created with its folder).
        model: Embedding model name (``Embedder.name``; ``+int8`` models are kept apart).
    """

    def __init__(self, path: str | Path, model: str) -> None:
        import sqlite3

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.model = model
        self._db = sqlite3.connect(str(path), timeout=120)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key BLOB NOT NULL, "
                         "vector BLOB NOT NULL, PRIMARY KEY (model, key))")
        self._db.commit()

    @staticmethod
    def key(text: str) -> bytes:
        """SHA-1 digest of the UTF-8 text."""
        return hashlib.sha1(text.encode("utf-8")).digest()

    def get(self, texts: Sequence[str]) -> dict[bytes, np.ndarray]:
        """Return the cached vectors of those texts that have one, by :meth:`key`."""
        keys = list({self.key(t) for t in texts})
        out: dict[bytes, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            rows = self._db.execute(
                f"SELECT key, vector FROM vectors WHERE model = ? AND key IN ({','.join('?' * len(part))})",
                [self.model, *part],
            )
            out.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return out

    def put(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one float32 vector per text (rows of ``vectors``, shape ``(len(texts), dim)``)."""
        rows = [(self.model, self.key(t), np.asarray(v, dtype=np.float32).tobytes())
                for t, v in zip(texts, vectors, strict=True)]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors (model, key, vector) VALUES (?, ?, ?)", rows)

    def close(self) -> None:
        """Close the SQLite connection."""
        self._db.close()


class _MemoEmbedder:
    """Shares one model between systems, remembers query vectors and reuses document vectors."""

    def __init__(self, inner: Any, vectors: VectorCache | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.vectors = vectors
        self._queries: dict[str, np.ndarray] = {}

    @property
    def tokenizer(self) -> Any:
        return self.inner.tokenizer

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.vectors is None or not texts:
            return self.inner.encode(texts)
        found = self.vectors.get(texts)
        todo = list(dict.fromkeys(t for t in texts if VectorCache.key(t) not in found))
        if todo:
            fresh = np.asarray(self.inner.encode(todo), dtype=np.float32)
            self.vectors.put(todo, fresh)
            found.update(zip((VectorCache.key(t) for t in todo), fresh, strict=True))
        if len(todo) < len(texts):
            logger.info("vector cache: %d of %d texts embedded, the rest reused", len(todo), len(texts))
        return np.stack([found[VectorCache.key(t)] for t in texts]).astype(np.float32)

    def prefill(self, queries: Sequence[str]) -> None:
        """Embed many queries in one batch (one call is far cheaper than one per query)."""
        todo = sorted({q for q in queries if q not in self._queries})
        if not todo:
            return
        export = getattr(self.inner, "export_encoder", None)
        if export is not None and export() is not None:  # queries embedded as a user's are
            self._queries.update((q, self.inner.encode_query(q)) for q in todo)
            return
        batch = getattr(self.inner, "encode_queries", None)  # the query prefix, never the document prefix
        vectors = batch(todo) if batch is not None else self.inner.encode(todo)
        self._queries.update(zip(todo, vectors, strict=True))

    def encode_query(self, query: str) -> np.ndarray:
        if query not in self._queries:
            enc = getattr(self.inner, "encode_query", None)
            self._queries[query] = enc(query) if enc else self.inner.encode([query])[0]
        return self._queries[query]


def _shared_vectors(cache: str | Path, embedder: Any) -> VectorCache:
    return VectorCache(Path(cache) / "vectors.sqlite", embedder.name)


#: The packages whose code turns a document's text into nodes and chunks. A stored document is
#: skipped when its text is unchanged (:meth:`_Runner._stale`), so a new tree rule (a heading's
#: level, a section's parent) would be measured on the trees of the old code: their source is
#: part of the store's key instead.
TREE_CODE = ("tree", "chunk")


@functools.lru_cache(maxsize=1)
def tree_code_digest() -> str:
    """Return a digest of the source of :data:`TREE_CODE` (12 hex digits): new code, new stores."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha1()
    for package in TREE_CODE:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def store_folder(spec: SystemSpec, bench: Benchmark, cache: str | Path, model: str) -> Path:
    """Store folder of a system: keyed by model, tree and chunking settings and code, the benchmark and its documents.

    The documents are part of the key because ranking reads store-wide statistics (BM25's
    document frequencies, the title field): a run on the first 60 documents of a benchmark
    must not read a store that a run on all of them filled (nor see it grow while it runs).
    Runs on other document sets still share the embeddings (:class:`VectorCache`), and so do
    stores of other tree code (:func:`tree_code_digest`): only chunks whose text changed are
    embedded again.
    """
    d = config_to_dict(spec.config)
    docs = hashlib.sha1("\n".join(sorted(bench.paths)).encode()).hexdigest()[:12]
    parts = {"model": model, "tree": d["tree"], "chunking": d["chunking"], "benchmark": str(bench.root.resolve()),
             "documents": docs, "code": tree_code_digest()}
    if any(p.suffix.lower() == ".pdf" for p in bench.paths.values()):
        # the converter's options shape the text (not how many JVMs run, nor their heap)
        parts["pdf"] = {k: v for k, v in d["pdf"].items() if k not in ("workers", "java_heap_mb")}
    key = json.dumps(parts, sort_keys=True)
    c = spec.config.chunking
    return Path(cache) / f"{c.strategy}-{c.breadcrumb}-{hashlib.sha1(key.encode()).hexdigest()[:10]}"


class _Runner:
    """Ranked units and delivered texts of one system for one query."""

    def __init__(self, spec: SystemSpec, bench: Benchmark, embedder: Any, cache: str | Path, show_progress: bool):
        self.spec, self.bench, self.tok = spec, bench, embedder.tokenizer
        self._offsets: dict[str, list[int]] = {}
        self._counts: dict[tuple[str, int, int], int] = {}
        self._split: dict[str, list[str]] = {}
        if spec.kind == "dense":
            from ..index import Index

            self.index = Index(store_folder(spec, bench, cache, embedder.name), spec.config, embedder)
            # PDFs: conversions shared by every system of the cache (load_page_benchmark fills it)
            self.index.readers = default_readers(
                spec.config, conversion_cache=Path(cache) / CONVERTED_DIR, shared_cache=True
            )
            try:
                report = self.index.ingest(sorted(bench.paths.values()), show_progress=show_progress)
                logger.info("%s: %s", spec.name, report.summary())
                stale = self._stale()
                if stale:  # same PDF and settings, but this code reads it into another text
                    logger.warning("%s: %d stored documents differ from the benchmark's text (e.g. %s); "
                                   "indexing them again", spec.name, len(stale), stale[0])
                    self.index.delete(stale)
                    report = self.index.ingest([bench.paths[d] for d in stale], show_progress=show_progress)
                    logger.info("%s: %s", spec.name, report.summary())
            except LockError:
                if not self._all_stored():
                    raise
                logger.warning("%s: %s is being written by another process; every document of this run is "
                               "already stored, so it is only read", spec.name, self.index.root)
            self.retriever = _cached_retriever(self.index)
            self.assembler = Assembler(self.retriever)
            self.follower = ReferenceFollower(self.retriever)
        elif spec.kind == "pages":
            self._build_pages(embedder, show_progress)
        elif spec.kind == "bm25-pages":
            self.lexical = LexicalIndex([
                Hit(f"{d}::p{page:05d}", text, {"doc_id": d, "node_id": f"p{page:05d}", "start_line": a, "end_line": b},
                    0.0)
                for d, page, a, b, text in self._page_units()
            ])
        else:
            self._build_bm25()

    def close(self) -> None:
        if self.spec.kind == "dense":
            self.index.close()

    def _stale(self) -> list[str]:
        """Documents whose stored text is not the benchmark's (or that are not stored ready).

        Ingestion skips a file whose bytes and reader settings are unchanged; a new version of
        the code that turns a PDF into text (its outline, contents or converter rules) can
        still make another text of it, and the evaluation must measure that one.
        """
        from ..lines import document_hash

        out = []
        for doc_id, text in self.bench.texts.items():
            rec = self.index.registry.get(doc_id)
            if rec is None or rec.state != "ready" or rec.doc_hash != document_hash(text):
                out.append(doc_id)
        return out

    def _all_stored(self) -> bool:
        return not self._stale()

    def _build_bm25(self) -> None:
        from ..chunk.chunker import chunk_document
        from ..store.chroma import chunk_metadata

        hits = []
        for doc_id, text in self.bench.texts.items():
            tree = build_tree_cached(text, doc_id, self.spec.config, paged=doc_id in self.bench.pages)
            for c in chunk_document(tree, text, self.tok, self.spec.config.chunking):
                hits.append(Hit(c.chunk_id, c.embed_text, chunk_metadata(c, str(self.bench.paths[doc_id])), 0.0))
        self.lexical = LexicalIndex(hits)

    def _page_units(self) -> list[tuple[str, int, int, int, str]]:
        """``(doc_id, page, start_line, end_line, text)`` of every page with text, documents in order.

        A page's lines are the run of lines the page map puts on it (its marker line first).

        Raises:
            ConfigError: If a document has no pages.
        """
        out = []
        for doc_id in sorted(self.bench.texts):
            pages = self.bench.pages.get(doc_id)
            if pages is None:
                raise ConfigError(f"system {self.spec.name}: {doc_id} has no pages; page systems need a benchmark "
                                  "of PDFs or of markdown with page markers")
            lines = self._lines(doc_id)
            start = 1
            for i in range(1, len(lines) + 1):
                if i == len(lines) or pages[i] != pages[start - 1]:
                    text = slice_lines(lines, start, i)
                    if pages[start - 1] > 0 and text.strip():
                        out.append((doc_id, pages[start - 1], start, i, text))
                    start = i + 1
        return out

    def _build_pages(self, embedder: Any, show_progress: bool) -> None:
        """Embed every page in windows that never cross a page (the ``pages`` baseline).

        Each page is chunked alone with the system's window settings (``chunking.windows``:
        ``window_tokens`` word pieces, tables rendered as text as for every system); the
        vectors go through the run's embedder, so the eval cache's shared vectors serve them.
        """
        from ..chunk.chunker import chunk_document

        cfg = self.spec.config
        self.units: list[tuple[str, int, int, str]] = []
        texts: list[str] = []
        owner: list[int] = []
        for doc_id, _page, a, b, text in self._page_units():
            tree = build_tree_cached(text, f"{doc_id}#{a}", cfg)
            for c in chunk_document(tree, text, self.tok, cfg.chunking):
                texts.append(c.embed_text)
                owner.append(len(self.units))
            self.units.append((doc_id, a, b, text))
        parts = []
        step = 512
        for i in progress_bar(range(0, len(texts), step), desc=f"{self.spec.name}: embedding",
                              disable=not show_progress):
            parts.append(np.asarray(embedder.encode(texts[i : i + step]), dtype=np.float32))
        self.vectors = np.concatenate(parts) if parts else np.zeros((0, 1), np.float32)
        self.owner = np.asarray(owner, dtype=np.int64)
        self.unit_doc = np.asarray([u[0] for u in self.units])
        self.embedder = embedder
        logger.info("%s: %d pages in %d windows", self.spec.name, len(self.units), len(texts))

    def _ranked_pages(self, query: str, doc_ids: list[str] | None, k: int) -> list[tuple[str, int, int, str]]:
        """Rank pages by the cosine of their best window; the k best, best first."""
        q = np.asarray(self.embedder.encode_query(query), dtype=np.float32)
        scores = self.vectors @ q
        if doc_ids:
            scores = np.where(np.isin(self.unit_doc[self.owner], list(doc_ids)), scores, -np.inf)
        best = np.full(len(self.units), -np.inf, dtype=np.float64)
        np.maximum.at(best, self.owner, scores)
        order = [int(i) for i in np.argsort(-best, kind="stable")[:k] if np.isfinite(best[i])]
        return [self.units[i] for i in order]

    def _lines(self, doc_id: str) -> list[str]:
        if doc_id not in self._split:
            self._split[doc_id] = split_lines(self.bench.texts[doc_id])
        return self._split[doc_id]

    def offset(self, doc_id: str, line: int) -> int:
        if doc_id not in self._offsets:
            self._offsets[doc_id] = self.bench.line_offsets(doc_id)
        return self._offsets[doc_id][line - 1]

    def count(self, doc_id: str, start: int, end: int, text: str) -> int:
        key = (doc_id, start, end)
        if key not in self._counts:
            self._counts[key] = self.tok.count(text)
        return self._counts[key]

    def ranked(self, query: str, doc_ids: list[str] | None, k: int) -> list[tuple[str, int, int, str, int]]:
        """``(doc_id, start_line, end_line, text, outline tokens)`` of the k best units, best first.

        A section's unit is what ``retrieve`` delivered (``text_start_line..text_end_line``);
        the outline of a section delivered without its subtree counts its rendered lines.
        """
        if self.spec.kind == "dense":
            if self.spec.config.retrieval.follow_references:  # docs/evaluation.md, "Cross-references"
                secs = self.follower.retrieve(query, k=k, doc_ids=doc_ids, interleave=True)
            else:
                secs = self.retriever.retrieve(query, k=k, doc_ids=doc_ids)
            return [(s.doc_id, s.text_start_line, s.text_end_line, s.text,
                     self.tok.count(format_outline(s.outline)) if s.outline else 0) for s in secs]
        if self.spec.kind == "pages":
            return [(*unit, 0) for unit in self._ranked_pages(query, doc_ids, k)]
        allowed = set(doc_ids) if doc_ids else None
        hits = self.lexical.search(query, 50 * k, (lambda h: h.metadata["doc_id"] in allowed) if allowed else None)
        out = []
        for group in rank_sections(hits)[:k]:
            m = group[0].metadata
            a, b = int(m["start_line"]), int(m["end_line"])
            out.append((m["doc_id"], a, b, slice_lines(self._lines(m["doc_id"]), a, b), 0))
        return out

    def evaluate(self, query: str, doc_ids: list[str] | None, budgets: Sequence[int]) -> tuple[list[Unit], dict]:
        """Units (top 10) and, per budget, the delivered character ranges."""
        k_all = 10 + max(budgets) // 100
        ranked = self.ranked(query, doc_ids, k_all)
        units = [Unit(d, a, b, self.count(d, a, b, t) + extra) for d, a, b, t, extra in ranked]
        deliveries: dict[int, list[tuple[str, int, int]]] = {}
        for budget in budgets:
            if self.spec.assemble:
                got = self.assembler.assemble(query, budget, doc_ids=doc_ids)
                if self.spec.config.retrieval.follow_references:  # cited sections displace the tail
                    got = self.follower.add_to_blocks(got, interleave=True)
                blocks = [Delivered(b.doc_id, self.offset(b.doc_id, b.start_line), b.text, b.tokens) for b in got]
            else:
                blocks = [Delivered(u.doc_id, self.offset(u.doc_id, u.start_line), t, u.tokens)
                          for u, (_, _, _, t, _) in zip(units, ranked, strict=True)]
            deliveries[budget] = delivered_ranges(blocks, budget, lambda t, n: cut_to_tokens(t, n, self.tok),
                                                  self.tok.count)
        return units[:10], deliveries


def _cached_retriever(index: Any) -> Any:
    """Make a Retriever that remembers its dense queries per (query, filter) during a run.

    Evaluation asks the same question once for the ranked units and once per budget; the
    store does not change meanwhile, so the largest hit list fetched answers every smaller one.
    """
    from ..retrieve.ranking import Ranker
    from ..retrieve.retriever import Retriever

    class _Cached(Ranker):
        def __init__(self, index: Any) -> None:
            super().__init__(index)
            self._memo: dict[tuple[str, str], tuple[int, list[Hit]]] = {}

        def dense(self, query: str, n: int, where: dict[str, Any] | None = None, *, vectors: Any = None,
                  hydrate: bool = False) -> list[Hit]:
            key = (query, json.dumps(where, sort_keys=True))
            got = self._memo.get(key)
            if got is None or (got[0] < n and len(got[1]) >= got[0]):
                want = max(n, 200)
                got = self._memo[key] = (want, super().dense(query, want, where, vectors=vectors))
                if len(self._memo) > 512:
                    self._memo.pop(next(iter(self._memo)))
            return self.hydrate(got[1][:n]) if hydrate else got[1][:n]

    return Retriever(index, ranker=_Cached(index))


_TREES: dict[tuple[str, str, str, bool], Any] = {}


def build_tree_cached(text: str, doc_id: str, config: ProxyPointerConfig, paged: bool = False) -> Any:
    """Skeleton tree of a benchmark document (cached per doc_id, text and tree settings).

    ``paged``: the document had page markers, emptied when it was read (as ingestion builds it).
    """
    from ..tree.build import build_tree

    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()
    key = (doc_id, digest, json.dumps(config_to_dict(config)["tree"], sort_keys=True), paged)
    if key not in _TREES:
        _TREES[key] = build_tree(text, doc_id, config.tree, paged=paged)
    return _TREES[key]


def ingest_systems(
    bench: Benchmark, config: ProxyPointerConfig, settings: EvalSettings, specs: Sequence[SystemSpec],
    embedder: Any = None, show_progress: bool = False,
) -> None:
    """Fill (sync) the store of every dense system without evaluating: a cache warm-up."""
    if embedder is None:
        from ..embed.make import make_embedder

        embedder = make_embedder(config.embedding, encoder_dir=Path(settings.cache) / ENCODERS_DIR)
    memo = _MemoEmbedder(embedder, _shared_vectors(settings.cache, embedder))
    for spec in specs:
        if spec.kind == "dense":
            _Runner(spec, bench, memo, settings.cache, show_progress).close()
    memo.vectors.close()


def run_evaluation(
    bench: Benchmark,
    config: ProxyPointerConfig,
    settings: EvalSettings,
    specs: Sequence[SystemSpec],
    embedder: Any = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run every system over every scope and question.

    Args:
        bench: Loaded benchmark.
        config: The configured pipeline (saved beside the numbers).
        settings: Scopes, templates, budgets, bootstrap.
        specs: Systems (see :func:`system_specs`).
        embedder: Embedding model shared by all systems; default sentence-transformers with
            ``config.embedding``.
        show_progress: tqdm bars on stderr.

    Returns:
        JSON-ready results: ``benchmark``, ``config``, ``n_questions``, ``systems`` (means per
        system and scope), ``intervals`` (95% bootstrap over documents), ``paired``
        (``proxypointer`` minus each other system, with intervals), ``settings``,
        ``system_configs`` and ``per_question`` values.
    """
    if embedder is None:
        from ..embed.make import make_embedder

        embedder = make_embedder(config.embedding, encoder_dir=Path(settings.cache) / ENCODERS_DIR)
    memo = _MemoEmbedder(embedder, _shared_vectors(settings.cache, embedder))
    names = [f"budget_hit@{b}" for b in settings.budgets]
    values: dict[str, dict[str, dict[str, list[float]]]] = {}
    groups = [q.doc_id for q in bench.questions]
    all_docs = sorted(bench.paths) if settings.limit_docs else None
    queries = [settings.query_templates.get(sc, DEFAULT_TEMPLATES[sc]).format(question=q.question, title=q.title)
               for sc in settings.scopes for q in bench.questions]
    memo.prefill(queries + [q.question for q in bench.questions])
    for spec in specs:
        runner = _Runner(spec, bench, memo, settings.cache, show_progress)
        values[spec.name] = {}
        for scope in settings.scopes:
            template = settings.query_templates.get(scope, DEFAULT_TEMPLATES[scope])
            kk = settings.k
            extra = () if kk in (1, 3, 5) else (f"hit@{kk}", f"recall@{kk}", f"tokens@{kk}")
            vals: dict[str, list[float]] = {m: [] for m in (*METRICS, *extra, *names)}
            for q in progress_bar(bench.questions, desc=f"{spec.name}/{scope}", disable=not show_progress):
                query = template.format(question=q.question, title=q.title)
                units, deliveries = runner.evaluate(query, [q.doc_id] if scope == "doc" else all_docs,
                                                    settings.budgets)
                for k in (1, 3, 5):
                    vals[f"hit@{k}"].append(hit_at(units, q.spans, k))
                vals["mrr@10"].append(reciprocal_rank(units, q.spans, 10))
                vals["recall@5"].append(recall_at(units, q.spans, 5))
                vals["tokens@5"].append(tokens_at(units, 5))
                if extra:
                    vals[extra[0]].append(hit_at(units, q.spans, kk))
                    vals[extra[1]].append(recall_at(units, q.spans, kk))
                    vals[extra[2]].append(tokens_at(units, kk))
                for b, name in zip(settings.budgets, names, strict=True):
                    vals[name].append(budget_hit(deliveries[b], q.spans))
            values[spec.name][scope] = vals
            logger.info("%s/%s: hit@5 %.3f budget_hit@%d %.3f", spec.name, scope, float(np.mean(vals["hit@5"])),
                        settings.budgets[-1], float(np.mean(vals[names[-1]])))
        runner.close()
    memo.vectors.close()
    return _summarise(bench, config, settings, specs, values, groups)


def _summarise(bench: Benchmark, config: ProxyPointerConfig, settings: EvalSettings, specs: Sequence[SystemSpec],
               values: dict, groups: list[str]) -> dict[str, Any]:
    ref = "proxypointer" if "proxypointer" in values else specs[0].name
    return {
        "benchmark": str(bench.root),
        "config": config_to_dict(config),
        "n_questions": len(bench.questions),
        "n_documents": len(bench.paths),
        "skipped_questions": bench.skipped,
        **_stats(values, groups, settings.bootstrap, settings.seed, ref),
        "settings": {**dataclasses.asdict(settings), "systems": list(settings.systems)},
        "system_configs": {s.name: {"kind": s.kind, "assemble": s.assemble, **config_to_dict(s.config)}
                           for s in specs},
        "per_question": {"ids": [q.id for q in bench.questions], "doc_ids": groups, "values": values},
    }


def merge_results(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Combine runs over the same benchmark questions into one result (new intervals, pairs).

    Args:
        results: Outputs of :func:`run_evaluation`; a system present in several keeps the
            values of the first.

    Returns:
        A result like :func:`run_evaluation`'s, with the first run's benchmark, config and
        settings, every system, and ``merged_from`` (the settings of each run).

    Raises:
        ConfigError: If the runs do not share the benchmark and the question list.
    """
    first = results[0]
    pq = first["per_question"]
    values: dict[str, Any] = {}
    configs: dict[str, Any] = {}
    for r in results:
        if r["benchmark"] != first["benchmark"] or r["per_question"]["ids"] != pq["ids"]:
            raise ConfigError("merge: runs differ in benchmark or questions (limit_docs?); merge equal runs only")
        for name, v in r["per_question"]["values"].items():
            values.setdefault(name, v)
            configs.setdefault(name, r["system_configs"].get(name))
    order = sorted(values, key=lambda n: (n not in SYSTEMS, SYSTEMS.index(n) if n in SYSTEMS else 0))
    values = {n: values[n] for n in order}  # built-in systems first, in report order
    ref = "proxypointer" if "proxypointer" in values else next(iter(values))
    st = first["settings"]
    out = {k: first[k] for k in ("benchmark", "config", "n_questions", "n_documents", "skipped_questions")}
    out.update(_stats(values, pq["doc_ids"], st["bootstrap"], st["seed"], ref))
    out.update({"settings": st, "system_configs": configs, "merged_from": [r["settings"] for r in results],
                "per_question": {**pq, "values": values}})
    return out


def _stats(values: dict, groups: list[str], nb: int, seed: int, ref: str) -> dict[str, Any]:
    systems: dict[str, Any] = {}
    intervals: dict[str, Any] = {}
    for name, by_scope in values.items():
        systems[name], intervals[name] = {}, {}
        for scope, vals in by_scope.items():
            stats = {m: bootstrap_interval(v, groups, nb, seed) for m, v in vals.items()}
            systems[name][scope] = {m: round(s[0], 4) for m, s in stats.items()}
            intervals[name][scope] = {m: [round(s[1], 4), round(s[2], 4)] for m, s in stats.items()}
    paired: dict[str, Any] = {}
    for name in values:
        if name == ref:
            continue
        paired[f"{ref} - {name}"] = {
            scope: {m: dict(zip(("diff", "low", "high"),  # noqa: B905
                                (round(x, 4) for x in paired_difference(values[ref][scope][m], v, groups, nb, seed))))
                    for m, v in vals.items()}
            for scope, vals in values[name].items() if scope in values[ref]
        }
    return {"systems": systems, "intervals": intervals, "paired": paired}


def settings_from_dict(data: dict[str, Any], source: str = "<experiment>") -> EvalSettings:
    """Validate the evaluation keys of an experiment mapping (unknown keys are refused)."""
    names = [f.name for f in dataclasses.fields(EvalSettings)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; valid keys: {names} plus pipeline, variants")
    d = dict(data)
    for key in ("systems", "scopes", "budgets"):
        if key in d:
            d[key] = tuple(d[key])
    if "query_templates" in d:
        d["query_templates"] = {**DEFAULT_TEMPLATES, **d["query_templates"]}
    try:
        return EvalSettings(**d)
    except (ConfigError, TypeError) as err:
        raise ConfigError(f"{source}: {err}") from err


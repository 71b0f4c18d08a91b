"""Performance benchmark: ingestion by stage, re-ingest, query latency at scale, LangChain baseline.

Usage::

    .venv/bin/python scripts/bench.py --config configs/bench.yaml            # the full run
    .venv/bin/python scripts/bench.py --config configs/bench-smoke.yaml      # seconds (CI)
    .venv/bin/python scripts/bench.py --config configs/bench.yaml --phases query:100000

Each phase runs in its own subprocess (so that its peak RSS is its own) and writes
``<work>/<phase>.json``; the parent gathers them into ``<out>/bench-<stamp>.json`` and a
markdown table ``<out>/bench-<stamp>.md``. docs/benchmarks.md explains every figure.

Phases (``phases:`` in the config, or ``--phases``):

* ``cli``: ``proxypointer --help`` and ``import proxypointer`` wall time (subprocesses).
* ``cold_query``: ``proxypointer query`` as a new process per question on a store of ``data/``
  (the real model, whatever ``model`` says), with ``embedding.query_encoder`` ``onnx`` (the
  default) and ``torch``; then one process's split into import and query, and whether it
  imported torch or chromadb.
* ``chunking``: read + tree + chunking only (no model) over each corpus: docs/s, chunks/s.
* ``ingest_race``: ``proxypointer ingest`` and a LangChain pipeline as a user writes one
  (markdown header split, ``ingest_race.chunk_tokens``-token recursive split, sentence-transformers
  batch 16, Chroma through langchain-chroma), each a cold process timed by its wall clock, on the
  same ``ingest_race.docs`` documents of ``ingest_race.corpus`` (default: ``corpus``), in the
  order ``ingest_race.order``, reversed on every other of ``ingest_race.repeats`` rounds.
  ``proxypointer`` runs with an empty encoder cache (a user's first ingest on a machine: it
  loads torch and exports the ONNX encoder); ``proxypointer-cached`` finds the encoder the
  first left in the cache (every later ingest of that user). Chunks and word pieces embedded
  per chunk of each; medians and their ratios. Needs the real model and the ``bench`` extra.
* ``ingest``: ``Index.ingest`` of ``ingest.docs`` documents into a fresh store, split by
  stage, then ``encode`` alone on the same texts, then our end-to-end query latency on it.
  Overhead ratio = (ingest seconds - encode-alone seconds) / ingest seconds.
* ``reingest``: a store of the whole corpus (``reingest.prebuilt_store`` copied, or built),
  re-ingested unchanged, then with ``reingest.edit_fraction`` of its documents edited.
* ``langchain``: MarkdownHeaderTextSplitter + RecursiveCharacterTextSplitter (same tokenizer,
  same chunk size) into Chroma through langchain-chroma, same model, same documents as
  ``ingest``; its query latency (``similarity_search_with_score``).
* ``query:<n>``: a store of about ``n`` chunks made of copies of a seed store's documents
  (vectors of copies: the seed's real vectors plus Gaussian noise, renormalised), then
  ``Retriever.retrieve`` latency with and without a ``doc_id`` filter, and its parts.
* ``quantized``: encode speed fp32 vs int8-dynamic, and retrieval quality (hit@1, hit@5,
  MRR@10 within each paper) on the first ``quantized.docs`` documents of the corpus.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULTS: dict[str, Any] = {
    "corpus": "../shared/bench/qasper-dev",  # folder with docs/ and questions.jsonl
    "model": "all-MiniLM-L6-v2",  # or "hashing" (tests/fakes.py, no torch)
    "batch_size": 16,
    "work": "results/bench-work",
    "out": "results",
    "phases": ["cli", "cold_query", "chunking", "ingest", "reingest", "langchain", "query:10000", "quantized"],
    "ingest": {"docs": 60, "queries": 100, "k": 5},
    "reingest": {"docs": 0, "prebuilt_store": "", "edit_fraction": 0.01, "model": ""},
    "langchain": {"chunk_tokens": 128, "queries": 100, "k": 5, "batch_sizes": []},
    "chunking": {"corpora": ["../shared/bench/qasper-dev", "../shared/bench/qasper-train"], "docs": 0},
    "query": {"seed_store": "", "store_dir": "", "queries": 100, "k": 5, "noise": 0.3, "warmup": 5, "lean_from": 0,
              "preload": False},
    "quantized": {"docs": 40, "encode_texts": 256, "quality": True, "fp32_store": "", "batch_sizes": [8, 16, 64]},
    "cli": {"repeats": 5},
    "cold_query": {"repeats": 5, "questions": ["What does error code E42 mean?"]},
    "ingest_race": {"docs": 40, "chunk_tokens": 240, "repeats": 2, "corpus": None,
                    "order": ["proxypointer", "langchain", "proxypointer-cached"]},
}


# -- config and helpers --------------------------------------------------------------------
def load_bench_config(path: Path) -> dict[str, Any]:
    """Defaults overlaid with the YAML file; unknown keys are refused."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    cfg = json.loads(json.dumps(DEFAULTS))
    for key, value in data.items():
        if key not in cfg:
            raise SystemExit(f"{path}: unknown key {key!r}; known: {', '.join(sorted(cfg))}")
        if isinstance(cfg[key], dict):
            if not isinstance(value, dict):
                raise SystemExit(f"{path}: {key}: expected a mapping")
            unknown = set(value) - set(cfg[key])
            if unknown:
                raise SystemExit(f"{path}: {key}: unknown keys {sorted(unknown)}; known: {sorted(cfg[key])}")
            cfg[key].update(value)
        else:
            cfg[key] = value
    cfg["_config_path"] = str(path)
    return cfg


def rel(p: str | Path) -> Path:
    """A config path: relative to the repository root unless absolute."""
    p = Path(p)
    return p if p.is_absolute() else (ROOT / p).resolve()


def peak_rss_mb() -> float:
    """Peak resident set size of this process, MiB (Linux ru_maxrss is KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def rss_mb() -> float:
    """Current resident set size of this process, MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def pct(values: list[float], q: float) -> float:
    """Percentile ``q`` (0-100) of seconds, returned in milliseconds."""
    return round(float(np.percentile(np.asarray(values), q)) * 1000, 2) if values else float("nan")


def lat(values: list[float]) -> dict[str, float]:
    """p50/p95/mean in milliseconds and the number of samples."""
    return {
        "p50_ms": pct(values, 50),
        "p95_ms": pct(values, 95),
        "mean_ms": round(statistics.fmean(values) * 1000, 2) if values else float("nan"),
        "n": len(values),
    }


def doc_files(corpus: Path, limit: int = 0) -> list[Path]:
    """Markdown files of ``corpus/docs``, sorted; the first ``limit`` (0: all)."""
    files = sorted((corpus / "docs").glob("*.md"))
    return files[:limit] if limit else files


def questions(corpus: Path, doc_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """Questions of ``corpus/questions.jsonl`` (optionally only those on ``doc_ids``), file order."""
    path = corpus / "questions.jsonl"
    out = []
    seen: set[str] = set()
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                if (doc_ids is None or q.get("doc_id") in doc_ids) and q["question"] not in seen:
                    seen.add(q["question"])  # each question text once: no query-cache hits
                    out.append(q)
    return out


def make_embedder(cfg: dict[str, Any], quantize_int8: bool = False):
    """The configured embedder: sentence-transformers, or the hashing fake for smoke runs."""
    if cfg["model"] == "hashing":
        sys.path.insert(0, str(ROOT / "tests"))
        from fakes import HashingEmbedder

        return HashingEmbedder()
    from proxypointer.config import EmbeddingConfig
    from proxypointer.embed.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(
        EmbeddingConfig(model=cfg["model"], batch_size=cfg["batch_size"]), quantize_int8=quantize_int8
    )


def warm(embedder) -> float:
    """Load the model and run one small encode; returns the seconds it took."""
    t = time.perf_counter()
    embedder.encode(["warm up the model", "a second text"])
    return round(time.perf_counter() - t, 3)


def pp_config(cfg: dict[str, Any]):
    """Default ProxyPointerConfig with the bench's model and batch size."""
    from proxypointer.config import EmbeddingConfig, ProxyPointerConfig

    base = ProxyPointerConfig()
    emb = EmbeddingConfig(
        model=cfg["model"] if cfg["model"] != "hashing" else base.embedding.model, batch_size=cfg["batch_size"]
    )
    return dataclasses.replace(base, embedding=emb)


def copy_corpus(files: list[Path], dest: Path) -> Path:
    """Copy files into ``dest/`` (same names, so the same doc ids)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in files:
        shutil.copy2(f, dest / f.name)
    return dest


def chunk_texts(files: list[Path], config, tokenizer) -> tuple[list[str], int]:
    """Unique embed texts (first-seen order) and their total tokens, as ingest makes them."""
    from proxypointer.chunk.chunker import TokenCountCache, chunk_document
    from proxypointer.lines import split_lines
    from proxypointer.read.readers import read_document
    from proxypointer.tree.build import build_tree

    counter = TokenCountCache(tokenizer)
    seen: dict[str, int] = {}
    for f in files:
        text = read_document(f)
        lines = split_lines(text)
        tree = build_tree(text, f.stem, config.tree, lines=lines)
        for c in chunk_document(tree, text, counter, config.chunking, lines=lines):
            seen.setdefault(c.embed_text, c.n_tokens)
    return list(seen), sum(seen.values())


def retrieve_ids_first(retriever, query: str, k: int, n: int) -> list[Any]:
    """Prototype of an ids-first ``retrieve`` (docs/benchmarks.md, next steps), unfiltered only.

    Over-fetch ids and distances only; chunk ids (``doc_id::version::node_id::index``) carry
    what the live-version check and the dedupe need; read metadata and text of the k winners.
    """
    idx = retriever.index
    vec = idx.embedder.encode_query(query)
    got = idx.store.collection.query(query_embeddings=[vec], n_results=n, include=["distances"])
    ids, dists = got["ids"][0], got["distances"][0]
    parsed = [i.rsplit("::", 3) for i in ids]
    live = idx.registry.live_versions({p[0] for p in parsed})
    seen: set[tuple[str, str]] = set()
    chosen: list[tuple[str, float]] = []
    for cid, p, d in zip(ids, parsed, dists, strict=True):
        if live.get(p[0], ("",))[0] != p[1] or (p[0], p[2]) in seen:
            continue
        seen.add((p[0], p[2]))
        chosen.append((cid, 1.0 - float(d)))
        if len(chosen) == k:
            break
    by_id = {h.chunk_id: h for h in idx.store.get([c for c, _ in chosen])}
    return [retriever.section_of_hit(by_id[c], sc, sc) for c, sc in chosen]


def time_retrieve(retriever, qs: list[dict[str, Any]], k: int, filtered: bool) -> list[float]:
    """Seconds of each ``retrieve`` call (one per question)."""
    out = []
    for q in qs:
        t = time.perf_counter()
        retriever.retrieve(q["question"], k=k, doc_ids=[q["doc_id"]] if filtered else None)
        out.append(time.perf_counter() - t)
    return out


# -- phases ----------------------------------------------------------------------------------
def phase_cli(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    exe = ROOT / ".venv" / "bin" / "proxypointer"
    cmd_help = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "proxypointer.cli", "--help"]
    cmds = {
        "proxypointer --help": cmd_help,
        "python -c 'import proxypointer'": [sys.executable, "-c", "import proxypointer"],
    }
    out: dict[str, Any] = {}
    for name, cmd in cmds.items():
        times = []
        for _ in range(cfg["cli"]["repeats"]):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
            times.append(time.perf_counter() - t)
        out[name] = {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3), "runs": len(times)}
    return out


_COLD_SPLIT = """
import json, sys, time
t0 = time.perf_counter()
from proxypointer.cli import main
t1 = time.perf_counter()
rc = main(sys.argv[1:])
t2 = time.perf_counter()
print(json.dumps({"rc": rc, "import_s": round(t1 - t0, 3), "query_s": round(t2 - t1, 3),
                  "heavy_modules": [m for m in ("torch", "sentence_transformers", "chromadb") if m in sys.modules]}))
"""


def phase_cold_query(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    """A new ``proxypointer query`` process per question, on a store of ``data/``, per query encoder."""
    exe = ROOT / ".venv" / "bin" / "proxypointer"
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "proxypointer"]
    store = work / "cold-query-store"
    shutil.rmtree(store, ignore_errors=True)
    subprocess.run([*cli, "--store", str(store), "ingest", str(ROOT / "data"), "-q"], check=True,
                   capture_output=True, cwd=ROOT)
    out: dict[str, Any] = {"store": "data/ (3 documents)"}
    for mode in ("onnx", "torch"):
        config = work / f"cold-query-{mode}.yaml"
        config.write_text(f"embedding:\n  query_encoder: {mode}\n", encoding="utf-8")
        times = []
        for _ in range(cfg["cold_query"]["repeats"]):
            for q in cfg["cold_query"]["questions"]:
                t = time.perf_counter()
                subprocess.run([*cli, "--store", str(store), "--config", str(config), "query", q, "-k", "3"],
                               check=True, capture_output=True, cwd=ROOT)
                times.append(time.perf_counter() - t)
        out[mode] = {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
                     "max_s": round(max(times), 3), "runs": len(times)}
    q = cfg["cold_query"]["questions"][0]
    split = subprocess.run([sys.executable, "-c", _COLD_SPLIT, "--store", str(store), "query", q, "-k", "3"],
                           check=True, capture_output=True, text=True, cwd=ROOT)
    out["onnx_split"] = json.loads(split.stdout.strip().splitlines()[-1])
    return out


_LANGCHAIN_INGEST = """
import sys, time
from pathlib import Path
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings
from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
from sentence_transformers import SentenceTransformer
from transformers import AutoTokenizer

docs_dir, store, model_path, chunk_tokens = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
model = SentenceTransformer(model_path, device="cpu", local_files_only=True)
tokenizer = AutoTokenizer.from_pretrained(model_path)


class ST(Embeddings):
    def embed_documents(self, texts):
        return model.encode(list(texts), batch_size=16, show_progress_bar=False).tolist()

    def embed_query(self, text):
        return model.encode([text])[0].tolist()


headers = MarkdownHeaderTextSplitter([("#" * i, f"h{i}") for i in range(1, 7)])
splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
    tokenizer, chunk_size=chunk_tokens, chunk_overlap=0
)
chunks = []
for f in sorted(docs_dir.glob("*.md")):
    chunks += splitter.split_documents(headers.split_text(f.read_text(encoding="utf-8")))
Chroma.from_documents(chunks, ST(), persist_directory=store, collection_metadata={"hnsw:space": "cosine"},
                      client_settings=Settings(anonymized_telemetry=False, is_persistent=True, persist_directory=store))
pieces = sum(len(tokenizer.tokenize(c.page_content)) for c in chunks)
print(len(chunks), pieces)
"""


def phase_ingest_race(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    """``proxypointer ingest`` against a LangChain pipeline: cold processes, same documents, one run."""
    try:
        import langchain_chroma  # noqa: F401 - the race needs it in the child process
    except ImportError:
        return {"skipped": "langchain-chroma is not installed: pip install -e '.[bench]'"}
    from proxypointer.embed.tokenizer import load_tokenizer, resolve_model_path
    from proxypointer.index import Index

    race = cfg["ingest_race"]
    docs = work / "race-docs"
    shutil.rmtree(docs, ignore_errors=True)
    docs.mkdir(parents=True)
    for f in doc_files(rel(race.get("corpus") or cfg["corpus"]), race["docs"]):
        shutil.copy(f, docs / f.name)
    exe = ROOT / ".venv" / "bin" / "proxypointer"
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "proxypointer"]
    model = pp_config(cfg).embedding.model
    script = work / "langchain_ingest.py"
    script.write_text(_LANGCHAIN_INGEST, encoding="utf-8")
    cache = work / "race-cache"  # PROXYPOINTER_CACHE of the proxypointer runs
    out: dict[str, Any] = {"docs": race["docs"], "langchain_chunk_tokens": race["chunk_tokens"], "runs": []}
    for round_ in range(max(1, int(race.get("repeats", 1)))):
        order = list(race["order"]) if round_ % 2 == 0 else list(reversed(race["order"]))
        for name in order:
            store = work / f"race-{name}"
            shutil.rmtree(store, ignore_errors=True)
            env = {**os.environ, "PROXYPOINTER_CACHE": str(cache)}
            if name == "proxypointer":
                shutil.rmtree(cache, ignore_errors=True)  # a user's first ingest on this machine
            if name.startswith("proxypointer"):
                cmd = [*cli, "--store", str(store), "ingest", str(docs), "-q"]
            else:
                cmd = [sys.executable, str(script), str(docs), str(store), str(resolve_model_path(model)),
                       str(race["chunk_tokens"])]
            load = os.getloadavg()[0]
            t = time.perf_counter()
            done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT, env=env)
            run = {"pipeline": name, "round": round_, "wall_s": round(time.perf_counter() - t, 2),
                   "load_before": round(load, 2)}
            if name == "langchain":
                chunks, pieces = map(int, done.stdout.split()[-2:])
            else:
                index = Index.open(store)
                ids = sorted(index.registry.chunk_ids())
                texts = [text for text, _ in index.registry.chunk_records(ids).values()]
                chunks, pieces = len(texts), sum(load_tokenizer(model).count_batch(texts))
            run.update(chunks=chunks, pieces_per_chunk=round(pieces / max(chunks, 1), 1))
            out["runs"].append(run)
    for name in race["order"]:
        walls = [r["wall_s"] for r in out["runs"] if r["pipeline"] == name]
        last = next(r for r in reversed(out["runs"]) if r["pipeline"] == name)
        out[name] = {"wall_s": round(statistics.median(walls), 2), "walls_s": walls, "chunks": last["chunks"],
                     "pieces_per_chunk": last["pieces_per_chunk"],
                     "chunks_per_s": round(last["chunks"] / statistics.median(walls), 2)}
    if "langchain" in out:
        for name in ("proxypointer", "proxypointer-cached"):
            if name in out:
                key = "ratio_pp_over_langchain" + ("_cached" if name.endswith("cached") else "")
                out[key] = round(out[name]["wall_s"] / out["langchain"]["wall_s"], 3)
    return out


def phase_chunking(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    """Read + tree + chunking with the model's tokenizer, no embedding: the CPU cost we add."""
    from proxypointer.chunk.chunker import TokenCountCache, chunk_document
    from proxypointer.embed.tokenizer import load_tokenizer
    from proxypointer.lines import split_lines
    from proxypointer.read.readers import read_document
    from proxypointer.tree.build import build_tree

    config = pp_config(cfg)
    tok = load_tokenizer(config.embedding.model)
    import langchain_text_splitters  # noqa: F401 - import cost kept out of the timing

    out: dict[str, Any] = {}
    for corpus in cfg["chunking"]["corpora"]:
        root = rel(corpus)
        files = doc_files(root, cfg["chunking"]["docs"])
        if not files:
            out[root.name] = {"skipped": f"no documents in {root / 'docs'}"}
            continue
        counter = TokenCountCache(tok)
        st = {"read": 0.0, "tree": 0.0, "chunking": 0.0}
        n_chunks = n_tokens = 0
        t0 = time.perf_counter()
        for f in files:
            t = time.perf_counter()
            text = read_document(f)
            lines = split_lines(text)
            t1 = time.perf_counter()
            tree = build_tree(text, f.stem, config.tree, lines=lines)
            t2 = time.perf_counter()
            chunks = chunk_document(tree, text, counter, config.chunking, lines=lines)
            t3 = time.perf_counter()
            st["read"] += t1 - t
            st["tree"] += t2 - t1
            st["chunking"] += t3 - t2
            n_chunks += len(chunks)
            n_tokens += sum(c.n_tokens for c in chunks)
        total = time.perf_counter() - t0
        out[root.name] = {
            "docs": len(files),
            "chunks": n_chunks,
            "tokens": n_tokens,
            "seconds": round(total, 3),
            "stage_seconds": {k: round(v, 3) for k, v in st.items()},
            "docs_per_s": round(len(files) / total, 1),
            "chunks_per_s": round(n_chunks / total, 1),
            "tokens_per_s": round(n_tokens / total),
        }
    return out


def phase_ingest(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    corpus = rel(cfg["corpus"])
    files = doc_files(corpus, cfg["ingest"]["docs"])
    src = copy_corpus(files, work / "ingest-corpus")
    store = work / "ingest-store"
    if store.exists():
        shutil.rmtree(store)
    config = pp_config(cfg)
    embedder = make_embedder(cfg)
    load_s = warm(embedder)
    t = time.perf_counter()
    import chromadb  # noqa: F401 - a one-off import (~2-6 s here), kept out of the per-document figures

    chromadb_import_s = round(time.perf_counter() - t, 3)
    idx = Index(store, config, embedder)
    t = time.perf_counter()
    report = idx.ingest([src], show_progress=False)
    ingest_s = time.perf_counter() - t
    rss_after_ingest = rss_mb()
    texts, n_tokens = chunk_texts(sorted(src.glob("*.md")), config, embedder.tokenizer)
    t = time.perf_counter()
    embedder.encode(texts)
    encode_s = time.perf_counter() - t
    out: dict[str, Any] = {
        "docs": report.documents,
        "chunks": report.chunks,
        "embedded": report.embedded,
        "tokens": n_tokens,
        "model_load_and_warmup_s": load_s,
        "chromadb_import_s": chromadb_import_s,
        "ingest_s": round(ingest_s, 3),
        "report": report.to_dict(),
        "encode_alone_s": round(encode_s, 3),
        "encode_alone_texts": len(texts),
        "overhead_ratio": round((ingest_s - encode_s) / ingest_s, 4),
        # the same with the embedding stage timed inside ingest instead of the separate encode
        "overhead_ratio_in_run": round(1 - report.stage_seconds["embedding"] / ingest_s, 4),
        "docs_per_s": round(report.documents / ingest_s, 2),
        "chunks_per_s": round(report.chunks / ingest_s, 2),
        "tokens_per_s": round(n_tokens / ingest_s),
        "encode_alone_texts_per_s": round(len(texts) / encode_s, 2),
        "rss_after_ingest_mb": rss_after_ingest,
    }
    # Our query latency on this store (compared with the LangChain baseline's on the same docs).
    qs = questions(corpus, {f.stem for f in files})
    n_q = cfg["ingest"]["queries"]
    retriever = Retriever(idx)
    for q in qs[: cfg["query"]["warmup"]]:
        retriever.retrieve(q["question"], k=cfg["ingest"]["k"])
    fresh = qs[cfg["query"]["warmup"] : cfg["query"]["warmup"] + n_q]
    out["query"] = {
        "store_chunks": idx.store.count(),
        "uncached": lat(time_retrieve(retriever, fresh, cfg["ingest"]["k"], False)),
        "cached": lat(time_retrieve(retriever, fresh, cfg["ingest"]["k"], False)),
    }
    idx.close()
    return out


def phase_reingest(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    from proxypointer.index import Index

    corpus = rel(cfg["corpus"])
    files = doc_files(corpus, cfg["reingest"]["docs"])
    src = copy_corpus(files, work / "reingest-corpus")
    store = work / "reingest-store"
    if store.exists():
        shutil.rmtree(store)
    if cfg["reingest"]["model"]:  # e.g. "hashing": nothing here times the model but the edits
        cfg = {**cfg, "model": cfg["reingest"]["model"]}
    config = pp_config(cfg)
    embedder = make_embedder(cfg)
    out: dict[str, Any] = {"docs": len(files), "model": cfg["model"]}
    prebuilt = cfg["reingest"]["prebuilt_store"]
    if prebuilt and rel(prebuilt).is_dir():
        shutil.copytree(rel(prebuilt), store)
        out["store"] = f"copy of {prebuilt}"
    else:
        warm(embedder)
        t = time.perf_counter()
        first = Index(store, config, embedder).ingest([src], show_progress=False)
        out["first_ingest"] = {"seconds": round(time.perf_counter() - t, 3), **first.to_dict()}
        out["store"] = "built in this phase"
    runs = []
    for _ in range(3):  # the first run also records the new source paths (touch)
        idx = Index(store, config, embedder)
        t = time.perf_counter()
        rep = idx.ingest([src], show_progress=False)
        runs.append(
            {
                "seconds": round(time.perf_counter() - t, 3),
                "embedded": rep.embedded,
                "unchanged": rep.unchanged,
                "stage_seconds": rep.to_dict()["stage_seconds"],
            }
        )
        idx.close()
    out["unchanged"] = runs
    out["unchanged_median_s"] = statistics.median(r["seconds"] for r in runs)
    rng = random.Random(7)
    n_edit = max(1, round(len(files) * cfg["reingest"]["edit_fraction"]))
    edited = rng.sample(sorted(src.glob("*.md")), n_edit)
    for f in edited:
        lines = f.read_text(encoding="utf-8").split("\n")
        mid = len(lines) // 2
        lines.insert(mid, "An edited sentence added by the benchmark to change this document.")
        f.write_text("\n".join(lines), encoding="utf-8")
    if cfg["model"] != "hashing":
        warm(embedder)
    idx = Index(store, config, embedder)
    t = time.perf_counter()
    rep = idx.ingest([src], show_progress=False)
    out["edited"] = {"docs_edited": n_edit, "seconds": round(time.perf_counter() - t, 3), **rep.to_dict()}
    idx.close()
    return out


class _Timer:
    def __init__(self) -> None:
        self.seconds = 0.0


def phase_langchain(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    """LangChain: markdown header split, token-sized recursive split, Chroma via langchain-chroma."""
    from chromadb.config import Settings

    try:
        from langchain_chroma import Chroma
    except ImportError:
        return {"skipped": "langchain-chroma is not installed: pip install -e '.[bench]'"}
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    from transformers import AutoTokenizer

    from proxypointer.embed.embedder import SentenceTransformerEmbedder
    from proxypointer.embed.tokenizer import resolve_model_path

    corpus = rel(cfg["corpus"])
    files = doc_files(corpus, cfg["ingest"]["docs"])
    embedder = make_embedder(cfg)
    load_s = warm(embedder)
    timer = _Timer()

    class LCEmbeddings(Embeddings):
        """Our model object behind LangChain's interface, as HuggingFaceEmbeddings wraps one:
        the sentence-transformers model's own ``encode(texts, batch_size=...)`` (its default
        ``encode_kwargs`` give sentence-transformers' batch size, 32), not our ``encode``,
        which batches by word pieces (a user of LangChain does not get that)."""

        def __init__(self, batch_size: int) -> None:
            self.batch_size = batch_size

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            t = time.perf_counter()
            if isinstance(embedder, SentenceTransformerEmbedder):
                v = np.asarray(embedder.model.encode(list(texts), batch_size=self.batch_size,
                                                     show_progress_bar=False), dtype=np.float32)
            else:  # the hashing fake of the smoke run has no batches
                v = embedder.encode(list(texts))
            timer.seconds += time.perf_counter() - t
            return v.tolist()

        def embed_query(self, text: str) -> list[float]:
            return embedder.encode([text])[0].tolist()

    model_name = pp_config(cfg).embedding.model
    hf_tok = AutoTokenizer.from_pretrained(str(resolve_model_path(model_name)))
    lc = cfg["langchain"]
    batch_sizes = lc.get("batch_sizes") or [pp_config(cfg).embedding.batch_size]
    runs: dict[str, dict[str, Any]] = {}
    vs = None
    for batch_size in batch_sizes:
        store = work / f"langchain-store-{batch_size}"
        if store.exists():
            shutil.rmtree(store)
        timer.seconds = 0.0
        t0 = time.perf_counter()
        headers = [("#" * i, f"h{i}") for i in range(1, 7)]
        md = MarkdownHeaderTextSplitter(headers_to_split_on=headers)
        rc = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
            hf_tok, chunk_size=lc["chunk_tokens"], chunk_overlap=0
        )
        docs: list[Document] = []
        for f in files:
            text = f.read_text(encoding="utf-8")
            for d in rc.split_documents(md.split_text(text)):
                d.metadata["doc_id"] = f.stem
                docs.append(d)
        split_s = time.perf_counter() - t0
        vs = Chroma.from_documents(
            docs,
            LCEmbeddings(batch_size),
            collection_name="langchain",
            persist_directory=str(store),
            collection_metadata={"hnsw:space": "cosine"},
            client_settings=Settings(anonymized_telemetry=False, is_persistent=True, persist_directory=str(store)),
        )
        total = time.perf_counter() - t0
        n_tokens = sum(len(hf_tok.tokenize(d.page_content)) for d in docs)
        runs[str(batch_size)] = {
            "batch_size": batch_size,
            "docs": len(files),
            "chunks": len(docs),
            "tokens": n_tokens,
            "ingest_s": round(total, 3),
            "split_s": round(split_s, 3),
            "embedding_s": round(timer.seconds, 3),
            "chroma_s": round(total - split_s - timer.seconds, 3),
            "overhead_ratio_vs_own_encode": round((total - timer.seconds) / total, 4),
            "docs_per_s": round(len(files) / total, 2),
            "chunks_per_s": round(len(docs) / total, 2),
            "tokens_per_s": round(n_tokens / total),
        }
    # The first batch size is the baseline of the target (LangChain as a user gets it).
    out: dict[str, Any] = {**runs[str(batch_sizes[0])], "model_load_and_warmup_s": load_s, "runs": runs}
    qs = questions(corpus, {f.stem for f in files})
    w, n_q, k = cfg["query"]["warmup"], cfg["langchain"]["queries"], cfg["langchain"]["k"]
    for q in qs[:w]:
        vs.similarity_search_with_score(q["question"], k=k)
    times = []
    for q in qs[w : w + n_q]:
        t = time.perf_counter()
        vs.similarity_search_with_score(q["question"], k=k)
        times.append(time.perf_counter() - t)
    out["query"] = {"store_chunks": len(docs), "uncached": lat(times)}
    return out


#: Metadata kept in lean scale stores (``query.lean_from``): what ``Retriever.retrieve`` reads.
_LEAN_KEYS = ("doc_id", "node_id", "doc_hash", "version", "start_line", "end_line")


def build_scale_store(cfg: dict[str, Any], seed: Path, size: int, dest: Path, lean: bool = False) -> dict[str, Any]:
    """A store of about ``size`` chunks: whole copies of the seed store's documents.

    Copy 0 keeps the seed's doc ids and vectors; copy ``c`` prefixes ids with ``copyNNNN/``
    and adds Gaussian noise of norm ``query.noise`` to each vector before renormalising, so
    that no two vectors are equal. Each chunk's vector is also in the registry's embedding
    cache under a content hash of its own (the seed's, ``:copyNNNN`` added for copies), as
    ingest leaves a real store of that size. Stored sources are shared (content-addressed).
    Reused when ``dest/bench-manifest.json`` matches.
    """
    from proxypointer.store.chroma import ChromaStore
    from proxypointer.store.records import encode_record, lexical_text
    from proxypointer.store.registry import Registry

    config = pp_config(cfg)
    seed_reg = Registry(seed)
    seed_store = ChromaStore(config.store, seed)
    manifest = {
        "size": size,
        "seed": str(seed),
        "seed_generation": seed_reg.generation(),
        "seed_chunks": seed_store.count(),
        "noise": cfg["query"]["noise"],
        "lean": lean,
        "format": 2,  # 2: chunks carry content hashes, every vector cached (EmbeddingCache.chunk_vectors)
    }
    mpath = dest / "bench-manifest.json"
    if mpath.is_file():
        old = json.loads(mpath.read_text())
        if all(old.get(k) == v for k, v in manifest.items()):
            seed_store.close()
            seed_reg.close()
            # A store built before the registry kept chunk record copies gets them here, the
            # way a user's store does on its next ingest.
            from proxypointer.index import Index

            t = time.perf_counter()
            with Index(dest, config) as index:
                filled = index.fill_records()
            fill_s = round(time.perf_counter() - t, 1)
            return {**old, "reused": True, "records_filled": filled, "records_fill_s": fill_s}
    if dest.exists():
        shutil.rmtree(dest)
    t0 = time.perf_counter()
    by_doc: dict[str, dict[str, list]] = {}
    for page in seed_store._paged(None, ["embeddings", "documents", "metadatas"]):
        for i, e, d, m in zip(page["ids"], page["embeddings"], page["documents"], page["metadatas"], strict=True):
            g = by_doc.setdefault(m["doc_id"], {"ids": [], "emb": [], "docs": [], "meta": []})
            g["ids"].append(i)
            g["emb"].append(np.asarray(e, dtype=np.float32))
            g["docs"].append(d)
            g["meta"].append(m)
    records = {r.doc_id: r for r in seed_reg.documents() if r.doc_id in by_doc}
    trees = {d: seed_reg.tree_json(d) for d in records}
    model = seed_reg.get_meta("model")
    seed_store.close()
    seed_reg.close()
    n_seed = sum(len(g["ids"]) for g in by_doc.values())
    if n_seed == 0:
        raise SystemExit(f"{seed}: the seed store is empty; run the ingest phase first")
    reg = Registry(dest)
    shutil.copytree(seed / "sources", dest / "sources", dirs_exist_ok=True)
    if model:
        reg.set_meta("model", model)
    store = ChromaStore(config.store, dest)
    step = store.max_batch
    rng = np.random.default_rng(11)
    noise = float(cfg["query"]["noise"])
    buf: dict[str, list] = {"ids": [], "embeddings": [], "documents": [], "metadatas": []}
    pending_docs: list[tuple[str, Any, list[str], list[bytes], list[str], list[str], np.ndarray]] = []
    write_s = 0.0

    def flush() -> None:
        nonlocal write_s
        t = time.perf_counter()
        for i in range(0, len(buf["ids"]), step):
            store.collection.add(
                ids=buf["ids"][i : i + step],
                embeddings=np.stack(buf["embeddings"][i : i + step]),
                documents=buf["documents"][i : i + step] or None,
                metadatas=buf["metadatas"][i : i + step],
            )
        write_s += time.perf_counter() - t
        if model:
            reg.embeddings.put(model, {h: v for *_, hashes, vecs in pending_docs for h, v in zip(hashes, vecs,
                                                                                                  strict=True)})
        for doc_id, rec, ids, copies, lexical, hashes, _ in pending_docs:
            reg.begin_write(doc_id, rec.source_path, rec.doc_hash)
            reg.commit_version(
                doc_id,
                source_path=rec.source_path,
                doc_hash=rec.doc_hash,
                version=rec.version,
                title=rec.title,
                line_count=rec.line_count,
                n_sections=rec.n_sections,
                chunk_ids=ids,
                source_mtime=rec.source_mtime,
                source_size=rec.source_size,
                tree_json=trees[rec.doc_id],
                records=copies,
                lexical_texts=lexical,
                content_hashes=hashes,
            )
            reg.finish(doc_id)
        for v in buf.values():
            v.clear()
        pending_docs.clear()

    total = 0
    copy = 0
    while total < size:
        prefix = "" if copy == 0 else f"copy{copy:04d}/"
        for doc_id in sorted(by_doc):
            if total >= size:
                break
            g = by_doc[doc_id]
            emb = np.stack(g["emb"])
            if copy:
                e = emb + rng.standard_normal(emb.shape).astype(np.float32) * (noise / math.sqrt(emb.shape[1]))
                emb = e / np.linalg.norm(e, axis=1, keepdims=True)
            new_id = prefix + doc_id
            ids = [prefix + i for i in g["ids"]]
            buf["ids"].extend(ids)
            buf["embeddings"].extend(emb)
            if lean:  # only what retrieve() reads; no chunk text (Hit.text is "")
                metas = [{**{k: m[k] for k in _LEAN_KEYS}, "doc_id": new_id} for m in g["meta"]]
                texts = [""] * len(metas)
            else:
                metas = [{**m, "doc_id": new_id} for m in g["meta"]]
                texts = g["docs"]
                buf["documents"].extend(texts)
            buf["metadatas"].extend(metas)
            # The registry's copies of the records, as Index.ingest writes them.
            copies = [encode_record(t, m) for t, m in zip(texts, metas, strict=True)]
            # The lexical index (FTS5) holds the real text even in a lean store.
            lexical = [lexical_text(t, m) for t, m in zip(g["docs"], g["meta"], strict=True)]
            hashes = [m["content_hash"] + (f":copy{copy:04d}" if copy else "") for m in g["meta"]]
            pending_docs.append((new_id, records[doc_id], ids, copies, lexical, hashes, emb))
            total += len(ids)
            if len(buf["ids"]) >= 20 * step:
                flush()
        copy += 1
    flush()
    store.close()
    reg.close()
    info = {
        **manifest,
        "chunks": total,
        "copies": copy,
        "build_s": round(time.perf_counter() - t0, 1),
        "chroma_add_s": round(write_s, 1),
        "chroma_add_chunks_per_s": round(total / max(write_s, 1e-9)),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    mpath.write_text(json.dumps(info, indent=1))
    return {**info, "reused": False}


def phase_query(cfg: dict[str, Any], work: Path, size: int, lean: bool = False) -> dict[str, Any]:
    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    qc = cfg["query"]
    seed = rel(qc["seed_store"]) if qc["seed_store"] else work / "ingest-store"
    if not (seed / "registry.sqlite3").is_file():
        raise SystemExit(f"{seed}: no seed store; run the ingest phase first or set query.seed_store")
    lean = lean or (bool(qc["lean_from"]) and size >= qc["lean_from"])
    dest = (rel(qc["store_dir"]) if qc["store_dir"] else work / "stores") / f"scale-{size}{'-lean' if lean else ''}"
    build = build_scale_store(cfg, seed, size, dest, lean)
    config = pp_config(cfg)
    embedder = make_embedder(cfg)
    load_s = warm(embedder)
    rss0 = rss_mb()
    idx = Index(dest, config, embedder)  # touches no file until first use
    # query.preload: read the store's files into the OS page cache first, as `serve` does at
    # start (serve.preload); its time is reported apart from the open and warm-up.
    preload = idx.preload() if qc["preload"] else None
    t = time.perf_counter()
    n_chunks = idx.store.count()
    retriever = Retriever(idx)
    corpus = rel(cfg["corpus"])
    seed_docs = {r.doc_id for r in idx.registry.documents() if "/" not in r.doc_id}
    qs = questions(corpus, seed_docs)
    w, n, k = qc["warmup"], qc["queries"], qc["k"]
    for q in qs[:w]:
        retriever.retrieve(q["question"], k=k)
    open_s = time.perf_counter() - t
    plain = qs[w : w + n]
    filtered = qs[w + n : w + 2 * n] or plain
    out: dict[str, Any] = {
        "size": size,
        "lean": lean,
        "chunks": n_chunks,
        "build": build,
        "model_load_and_warmup_s": load_s,
        "open_and_warmup_s": round(open_s, 3),
        "preload": None if preload is None else {"files": preload.files, "mb": round(preload.bytes_read / 1e6, 1),
                                                  "mb_left_out": round(preload.bytes_left / 1e6, 1),
                                                  "seconds": preload.seconds},
        "vectors": "copy 0: real vectors of the seed store; copies: seed vectors + "
        f"Gaussian noise of norm {qc['noise']}, renormalised",
    }
    from proxypointer.config import config_to_dict

    out["retrieval_config"] = config_to_dict(config)["retrieval"]
    out["retrieve"] = lat(time_retrieve(retriever, plain, k, False))
    out["retrieve_doc_filter"] = lat(time_retrieve(retriever, filtered, k, True))
    out["retrieve_cached_query"] = lat(time_retrieve(retriever, plain, k, False))
    # The ids-first prototype, end to end on the same questions with the query cache emptied;
    # "same_sections" = share of questions where it returns the same (doc, node) list.
    reference = {q["question"]: [(s.doc_id, s.node_id) for s in retriever.retrieve(q["question"], k=k)] for q in plain}
    if hasattr(embedder, "_queries"):
        embedder._queries.clear()
    over = max(config.retrieval.overfetch, 3 * k)
    proto, same = [], 0
    for q in plain:
        t = time.perf_counter()
        secs = retrieve_ids_first(retriever, q["question"], k, min(over, n_chunks))
        proto.append(time.perf_counter() - t)
        same += [(s.doc_id, s.node_id) for s in secs] == reference[q["question"]]
    out["ids_first_prototype"] = {**lat(proto), "same_sections": round(same / max(len(plain), 1), 3)}
    # Hybrid: the same questions with retrieval.hybrid on (dense + the registry's FTS5 BM25, RRF).
    # The first query brings the lexical index in step (a store built before it existed fills
    # it from the record copies: lean stores built so have no text; rebuild them).
    hybrid = Retriever(Index(dest, dataclasses.replace(
        config, retrieval=dataclasses.replace(config.retrieval, hybrid=True)), embedder))
    t = time.perf_counter()
    hybrid.retrieve(qs[0]["question"], k=k)
    out["hybrid_first_query_s"] = round(time.perf_counter() - t, 3)
    out["lexical_rows"] = len(idx.registry.lexical.rows())
    out["retrieve_hybrid"] = lat(time_retrieve(hybrid, plain, k, False))
    out["retrieve_hybrid_doc_filter"] = lat(time_retrieve(hybrid, filtered, k, True))
    hybrid.index.close()
    # Parts: query embedding alone (uncached encode), Chroma search alone, the rest.
    enc, enc1, enc_traced, chroma, chroma_f, chroma_ids, chroma_get, by_ids = [], [], [], [], [], [], [], []
    one_thread = traced = None
    if cfg["model"] != "hashing":
        # Same weights as the retriever's embedder; one thread each: eager and traced.
        one_thread, traced = make_embedder(cfg), make_embedder(cfg)
        one_thread.query_threads, one_thread.query_cache_size, one_thread.trace_query = 1, 0, False
        traced.query_threads, traced.query_cache_size = 1, 0
        one_thread._model = traced._model = embedder.model
        traced.encode_query("build the traced encoder")
    over = max(config.retrieval.overfetch, 3 * k)
    for q in plain:
        t = time.perf_counter()
        vec = embedder.encode([q["question"] + " "])[0]  # a new text: bypasses the query cache
        enc.append(time.perf_counter() - t)
        if one_thread is not None:
            t = time.perf_counter()
            one_thread.encode_query(q["question"] + "  ")
            enc1.append(time.perf_counter() - t)
            t = time.perf_counter()
            traced.encode_query(q["question"] + "   ")
            enc_traced.append(time.perf_counter() - t)
        t = time.perf_counter()
        idx.store.query(vec, over)
        chroma.append(time.perf_counter() - t)
        t = time.perf_counter()
        idx.store.query(vec, over, {"doc_id": q["doc_id"]})
        chroma_f.append(time.perf_counter() - t)
        # What an ids-first query would cost: ids + distances only (ids carry doc and node),
        # then documents + metadata of the k winners.
        t = time.perf_counter()
        got = idx.store.collection.query(query_embeddings=[vec], n_results=over, include=["distances"])
        chroma_ids.append(time.perf_counter() - t)
        t = time.perf_counter()
        idx.store.collection.get(ids=got["ids"][0][:k], include=["documents", "metadatas"])
        chroma_get.append(time.perf_counter() - t)
        # A doc_id filter without Chroma's filtered search: the registry lists the paper's
        # chunk ids; fetch their vectors, score them in numpy, read the k best records.
        t = time.perf_counter()
        doc_ids = sorted(idx.registry.chunk_ids(q["doc_id"]))
        g = idx.store.collection.get(ids=doc_ids, include=["embeddings"])
        best = np.argsort(-(np.asarray(g["embeddings"], dtype=np.float32) @ vec))[:k]
        idx.store.collection.get(ids=[g["ids"][i] for i in best], include=["documents", "metadatas"])
        by_ids.append(time.perf_counter() - t)
    out["parts"] = {
        "query_embedding": lat(enc),
        "query_embedding_1_thread": lat(enc1),
        "query_embedding_traced": lat(enc_traced),
        "chroma_query": lat(chroma),
        "chroma_query_doc_filter": lat(chroma_f),
        "chroma_query_ids_only": lat(chroma_ids),
        "chroma_get_k": lat(chroma_get),
        "doc_filter_by_ids_numpy": lat(by_ids),
    }
    out["rss_before_open_mb"] = rss0
    out["rss_after_queries_mb"] = rss_mb()
    idx.close()
    return out


def phase_quantized(cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    """int8 dynamic quantisation: encode speed and retrieval quality within each paper."""
    if cfg["model"] == "hashing":
        return {"skipped": "model is the hashing fake"}
    from proxypointer.eval.benchmark import Unit, hit_at, load_benchmark, reciprocal_rank
    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    qc = cfg["quantized"]
    corpus = rel(cfg["corpus"])
    files = doc_files(corpus, qc["docs"])
    src = copy_corpus(files, work / "quantized-corpus")
    config = pp_config(cfg)
    out: dict[str, Any] = {"docs": len(files)}
    bench = load_benchmark(corpus, limit_docs=qc["docs"])
    texts_all, _ = chunk_texts(files, config, make_embedder(cfg).tokenizer)
    sample = texts_all[: qc["encode_texts"]]
    for label, q8 in (("fp32", False), ("int8", True)):
        embedder = make_embedder(cfg, quantize_int8=q8)
        warm(embedder)
        t = time.perf_counter()
        embedder.encode(sample)
        enc_s = time.perf_counter() - t
        sweep = {}
        for bs in qc["batch_sizes"]:  # padding waste vs per-call cost (length-sorted inside encode)
            t = time.perf_counter()
            embedder.encode(sample, batch_size=bs)
            sweep[str(bs)] = round(len(sample) / (time.perf_counter() - t), 2)
        out[label] = {
            "encode_texts_per_s_by_batch_size": sweep,
            "encode_texts": len(sample),
            "encode_s": round(enc_s, 3),
            "encode_texts_per_s": round(len(sample) / enc_s, 2),
        }
        if not qc["quality"]:
            continue
        reuse = rel(qc["fp32_store"]) if (label == "fp32" and qc["fp32_store"]) else None
        if reuse is not None:  # a store holding (at least) these papers, made with this model
            idx, ingest_s = Index(reuse, config, embedder), None
            out[label]["store"] = str(reuse)
        else:
            store = work / f"quantized-{label}"
            if store.exists():
                shutil.rmtree(store)
            idx = Index(store, config, embedder)
            t = time.perf_counter()
            idx.ingest([src], show_progress=False)
            ingest_s = time.perf_counter() - t
        r = Retriever(idx)
        h1, h5, mrr = [], [], []
        for q in bench.questions:
            secs = r.retrieve(q.question, k=10, doc_ids=[q.doc_id])
            units = [Unit(s.doc_id, s.start_line, s.end_line, 0) for s in secs]
            h1.append(hit_at(units, q.spans, 1))
            h5.append(hit_at(units, q.spans, 5))
            mrr.append(reciprocal_rank(units, q.spans, 10))
        idx.close()
        out[label].update(
            {
                "ingest_s": None if ingest_s is None else round(ingest_s, 3),
                "questions": len(bench.questions),
                "hit@1": round(statistics.fmean(h1), 4),
                "hit@5": round(statistics.fmean(h5), 4),
                "mrr@10": round(statistics.fmean(mrr), 4),
            }
        )
    out["speedup"] = round(out["fp32"]["encode_s"] / out["int8"]["encode_s"], 3)
    if qc["quality"]:
        out["mrr@10_change"] = round(out["int8"]["mrr@10"] - out["fp32"]["mrr@10"], 4)
    return out


def run_phase(name: str, cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    t = time.perf_counter()
    load_start = os.getloadavg()[0]
    started = time.strftime("%H:%M:%S", time.gmtime())
    if name.startswith("query:"):  # query:<chunks>[:lean]
        parts = name.split(":")
        result = phase_query(cfg, work, int(parts[1]), lean=parts[2:] == ["lean"])
    else:
        fn = {
            "cli": phase_cli,
            "cold_query": phase_cold_query,
            "ingest_race": phase_ingest_race,
            "chunking": phase_chunking,
            "ingest": phase_ingest,
            "reingest": phase_reingest,
            "langchain": phase_langchain,
            "quantized": phase_quantized,
        }.get(name)
        if fn is None:
            raise SystemExit(f"unknown phase {name!r}")
        result = fn(cfg, work)
    result["phase_wall_s"] = round(time.perf_counter() - t, 2)
    result["started_utc"] = started
    result["loadavg_1min"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]  # at start, at end
    result["peak_rss_mb"] = peak_rss_mb()
    return result


# -- report -----------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["mem_gib"] = round(int(mem) / 1024 / 1024, 1)
    except OSError:
        pass
    info["loadavg_at_start"] = os.getloadavg()
    try:
        import chromadb
        import torch

        info["versions"] = {"torch": torch.__version__, "chromadb": chromadb.__version__}
    except ImportError:
        pass
    return info


def to_markdown(res: dict[str, Any]) -> str:
    ph = res["phases"]
    lines = [
        f"# Benchmark {res['stamp']}",
        "",
        f"config `{res['config']}`, model `{res['model']}`, "
        f"load average at start {res['machine'].get('loadavg_at_start')}, at end {res.get('loadavg_at_end')}",
        "",
    ]
    if "cli" in ph and "error" not in ph["cli"]:
        lines += ["| command | median s | min s |", "|---|---:|---:|"]
        lines += [f"| `{k}` | {v['median_s']} | {v['min_s']} |" for k, v in ph["cli"].items() if isinstance(v, dict)]
        lines.append("")
    if "cold_query" in ph and "error" not in ph["cold_query"]:
        cq = ph["cold_query"]
        lines += ["| cold `proxypointer query` (new process each) | median s | min s | max s | runs |",
                  "|---|---:|---:|---:|---:|"]
        for m in ("onnx", "torch"):
            v = cq[m]
            lines.append(f"| query encoder `{m}` | {v['median_s']} | {v['min_s']} | {v['max_s']} | {v['runs']} |")
        sp = cq["onnx_split"]
        lines += ["", f"one `onnx` process: import {sp['import_s']} s, query {sp['query_s']} s, heavy modules "
                  f"imported: {sp['heavy_modules'] or 'none'}", ""]
    race = ph.get("ingest_race", {})
    if "ratio_pp_over_langchain" in race or "ratio_pp_over_langchain_cached" in race:
        lines += ["| ingest race (cold processes) | median wall s | walls s | chunks | chunks/s "
                  "| word pieces per chunk |",
                  "|---|---:|---|---:|---:|---:|"]
        for name in ("proxypointer", "proxypointer-cached", "langchain"):
            if name in race:
                v = race[name]
                walls = " ".join(str(w) for w in v["walls_s"])
                lines.append(f"| {name} | {v['wall_s']} | {walls} | {v['chunks']} | {v['chunks_per_s']} | "
                             f"{v['pieces_per_chunk']} |")
        ratios = ", ".join(f"{k.removeprefix('ratio_pp_over_langchain') or '_first'}: {v}"
                           for k, v in race.items() if k.startswith("ratio_"))
        lines += ["", f"{race['docs']} documents; proxypointer / LangChain median wall ({ratios})", ""]
    if "chunking" in ph and "error" not in ph["chunking"]:
        lines += [
            "| corpus (no model) | docs | chunks | tokens | s | read s | tree s | chunking s | docs/s | chunks/s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, v in ph["chunking"].items():
            if isinstance(v, dict) and "docs" in v:
                s = v["stage_seconds"]
                lines.append(
                    f"| {name} | {v['docs']} | {v['chunks']} | {v['tokens']} | {v['seconds']} | {s['read']} | "
                    f"{s['tree']} | {s['chunking']} | {v['docs_per_s']} | {v['chunks_per_s']} |"
                )
        lines.append("")
    if "ingest_s" in ph.get("ingest", {}):
        v = ph["ingest"]
        st = v["report"]["stage_seconds"]
        lines += [
            "| ingest | docs | chunks | s | "
            + " | ".join(f"{k} s" for k in st)
            + " | encode alone s | overhead | docs/s | chunks/s | tokens/s | peak RSS MiB |",
            "|---|" + "---:|" * (9 + len(st)),
            ""[:0],
        ]
        lines[-1] = (
            f"| proxypointer | {v['docs']} | {v['chunks']} | {v['ingest_s']} | "
            + " | ".join(str(x) for x in st.values())
            + f" | {v['encode_alone_s']} | {v['overhead_ratio']:.1%} | {v['docs_per_s']} | {v['chunks_per_s']} | "
            f"{v['tokens_per_s']} | {v['peak_rss_mb']} |"
        )
        lines.append("")
    if "langchain" in ph and "ingest_s" in ph["langchain"]:
        v = ph["langchain"]
        lines += [
            "| ingest | docs | chunks | s | split s | embedding s | Chroma s | docs/s | chunks/s | tokens/s | peak RSS MiB |",  # noqa: E501
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| LangChain | {v['docs']} | {v['chunks']} | {v['ingest_s']} | {v['split_s']} | {v['embedding_s']} | "
            f"{v['chroma_s']} | {v['docs_per_s']} | {v['chunks_per_s']} | {v['tokens_per_s']} | {v['peak_rss_mb']} |",
            "",
        ]
    if res.get("ratios"):
        lines += ["| ours / LangChain | value |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in res["ratios"].items()]
        lines.append("")
    if "edited" in ph.get("reingest", {}):
        v = ph["reingest"]
        lines += [
            "| re-ingest | docs | s (median) | embedded |",
            "|---|---:|---:|---:|",
            f"| unchanged | {v['docs']} | {v['unchanged_median_s']} | {v['unchanged'][-1]['embedded']} |",
            f"| {v['edited']['docs_edited']} edited | {v['docs']} | {v['edited']['seconds']} | {v['edited']['embedded']} |",  # noqa: E501
            "",
        ]
    qrows = [(k, v) for k, v in ph.items() if k.startswith("query:")]
    if qrows or "ingest" in ph or "langchain" in ph:
        lines += [
            "| query | chunks | p50 ms | p95 ms | doc filter p50 | doc filter p95 | cached p50 | embed 2 threads p50 | embed 1 thread p50 | embed traced p50 | Chroma p50 | Chroma filter p50 | Chroma ids-only p50 | get k p50 | filter by ids+numpy p50 | ids-first prototype p50 / p95 (same sections) | peak RSS MiB |",  # noqa: E501
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        if "query" in ph.get("ingest", {}):
            q = ph["ingest"]["query"]
            lines.append(
                f"| proxypointer (ingest store) | {q['store_chunks']} | {q['uncached']['p50_ms']} | {q['uncached']['p95_ms']} | | | "  # noqa: E501
                f"{q['cached']['p50_ms']} | | | | | | | | | | |"
            )
        if "langchain" in ph and "query" in ph["langchain"]:
            q = ph["langchain"]["query"]
            lines.append(
                f"| LangChain similarity_search | {q['store_chunks']} | {q['uncached']['p50_ms']} | {q['uncached']['p95_ms']} | | | | | | | | | | | | | |"  # noqa: E501
            )
        for k, v in qrows:
            p = v["parts"]
            pr = v.get("ids_first_prototype")
            proto = f"{pr['p50_ms']} / {pr['p95_ms']} ({pr['same_sections']:.0%})" if pr else ""
            lines.append(
                f"| {k} | {v['chunks']} | {v['retrieve']['p50_ms']} | {v['retrieve']['p95_ms']} | "
                f"{v['retrieve_doc_filter']['p50_ms']} | {v['retrieve_doc_filter']['p95_ms']} | "
                f"{v['retrieve_cached_query']['p50_ms']} | {p['query_embedding']['p50_ms']} | "
                f"{p['query_embedding_1_thread']['p50_ms']} | "
                f"{p.get('query_embedding_traced', {}).get('p50_ms', '')} | "
                f"{p['chroma_query']['p50_ms']} | {p['chroma_query_doc_filter']['p50_ms']} | "
                f"{p['chroma_query_ids_only']['p50_ms']} | {p['chroma_get_k']['p50_ms']} | "
                f"{p.get('doc_filter_by_ids_numpy', {}).get('p50_ms', '')} | {proto} | {v['peak_rss_mb']} |"
            )
        lines.append("")
        hybrid = [(k, v) for k, v in qrows if "retrieve_hybrid" in v]
        if hybrid:
            lines += [
                "Hybrid retrieve (dense + FTS5 BM25, RRF), ms; first query includes bringing the lexical "
                "index in step:",
                "",
                "| phase | chunks | lexical rows | p50 | p95 | doc filter p50 | doc filter p95 | first query s |",
                "|---|---:|---:|---:|---:|---:|---:|---:|",
            ]
            for k, v in hybrid:
                h, hf = v["retrieve_hybrid"], v["retrieve_hybrid_doc_filter"]
                lines.append(
                    f"| {k} | {v['chunks']} | {v['lexical_rows']} | {h['p50_ms']} | {h['p95_ms']} | "
                    f"{hf['p50_ms']} | {hf['p95_ms']} | {v['hybrid_first_query_s']} |"
                )
            lines.append("")
        for k, v in qrows:
            if v.get("preload"):
                pl = v["preload"]
                lines.append(f"- {k}: preloaded {pl['mb']} MB in {pl['files']} files in {pl['seconds']} s "
                             f"({pl['mb_left_out']} MB left out by the limit) before the first query (query.preload)")
        lines.append("")
    if "quantized" in ph and "fp32" in ph["quantized"]:
        v = ph["quantized"]
        lines += [
            "| model | encode texts/s (batch 32) | texts/s by batch size | hit@1 | hit@5 | MRR@10 | questions |",
            "|---|---:|---|---:|---:|---:|---:|",
        ]
        for label in ("fp32", "int8"):
            x = v[label]
            sweep = ", ".join(f"{b}: {r}" for b, r in x.get("encode_texts_per_s_by_batch_size", {}).items())
            lines.append(
                f"| {label} | {x['encode_texts_per_s']} | {sweep} | {x.get('hit@1', '')} | {x.get('hit@5', '')} | "
                f"{x.get('mrr@10', '')} | {x.get('questions', '')} |"
            )
        lines.append("")
    failed = {k: v["error"] for k, v in ph.items() if isinstance(v, dict) and "error" in v}
    if failed:
        lines += ["Failed phases:", ""] + [f"- {k}: {v}" for k, v in failed.items()] + [""]
    return "\n".join(lines)


def targets(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The issue's targets: (target, measured, met?) for what this run measured."""
    ph = res["phases"]
    rows: list[tuple[str, str, str]] = []

    def ok(flag: bool) -> str:
        return "met" if flag else "NOT met"

    ing = ph.get("ingest", {})
    if "overhead_ratio" in ing:
        in_run = ing.get("overhead_ratio_in_run", float("nan"))
        rows.append(
            (
                "ingestion overhead ratio <= 10%",
                f"{ing['overhead_ratio']:.1%} (with the embedding stage of the same ingest: {in_run:.1%})",
                ok(ing["overhead_ratio"] <= 0.10),
            )
        )
    if "ingest docs/s" in res.get("ratios", {}):
        r = res["ratios"]["ingest docs/s"]
        rows.append(("ingest throughput >= LangChain's (same model, same run)", f"{r}x", ok(r >= 1.0)))
    re_ = ph.get("reingest", {})
    if "unchanged_median_s" in re_:
        rows.append(
            (
                f"re-ingest of unchanged corpus ({re_['docs']} docs) < 5 s",
                f"{re_['unchanged_median_s']} s",
                ok(re_["unchanged_median_s"] < 5),
            )
        )
    cli = ph.get("cli", {}).get("proxypointer --help")
    if cli:
        rows.append(("`proxypointer --help` < 0.5 s", f"{cli['median_s']} s", ok(cli["median_s"] < 0.5)))
    for name, v in ph.items():
        if name.startswith("query:") and "retrieve" in v and 90_000 <= v["chunks"] <= 110_000:
            p50, p95 = v["retrieve"]["p50_ms"], v["retrieve"]["p95_ms"]
            tag = " (lean metadata)" if v.get("lean") else ""
            rows.append((f"query p50 < 25 ms at 100k chunks{tag}", f"{p50} ms", ok(p50 < 25)))
            rows.append((f"query p95 < 60 ms at 100k chunks{tag}", f"{p95} ms", ok(p95 < 60)))
        if name.startswith("query:") and "retrieve" in v and v["chunks"] >= 900_000:
            tag = " (lean metadata)" if v.get("lean") else ""
            rows.append(
                (
                    f"report 1M chunks{tag}",
                    f"p50 {v['retrieve']['p50_ms']} ms, p95 {v['retrieve']['p95_ms']} ms",
                    "reported",
                )
            )
    return rows


def update_docs(path: Path, res: dict[str, Any], json_path: Path) -> None:
    """Replace the block between the results markers of ``path`` with this run's tables."""
    start, end = "<!-- bench:results:start -->", "<!-- bench:results:end -->"
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{path}: no {start} ... {end} block to replace")
    m = res["machine"]
    loads = ", ".join(
        f"{k} {v.get('started_utc', '?')} load {v.get('loadavg_1min')}"
        for k, v in res["phases"].items()
        if isinstance(v, dict)
    )
    block = [
        start,
        "",
        f"Run `{res['stamp']}` ({json_path.relative_to(ROOT) if json_path.is_relative_to(ROOT) else json_path}); "
        f"{m.get('cpus')} x {m.get('cpu', '?')}, {m.get('mem_gib')} GiB, Python {m.get('python')}, "
        f"{m.get('versions', {})}.",
        "",
        f"Phase start (UTC) and 1-minute load average at its start and end: {loads}.",
        "",
        *(
            [f"Phases merged from several runs: {res['phase_runs']}.", ""]
            if res.get("phase_runs")
            else []
        ),
        "| target | measured | |",
        "|---|---:|---|",
    ]
    block += [f"| {a} | {b} | {c} |" for a, b, c in targets(res)]
    body = to_markdown(res).split("\n", 3)[-1]  # without the title lines
    block += ["", body.strip(), "", end]
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(head + "\n".join(block) + tail, encoding="utf-8")


def ratios(ph: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    if "ingest_s" in ph.get("ingest", {}) and "ingest_s" in ph.get("langchain", {}):
        a, b = ph["ingest"], ph["langchain"]
        out["ingest seconds (same docs)"] = round(a["ingest_s"] / b["ingest_s"], 3)
        out["ingest docs/s"] = round(b["ingest_s"] / a["ingest_s"], 3)  # same documents: inverse time ratio
        for bs, run in b.get("runs", {}).items():
            out[f"ingest docs/s vs LangChain at batch {bs}"] = round(run["ingest_s"] / a["ingest_s"], 3)
        out["query p50"] = round(a["query"]["uncached"]["p50_ms"] / b["query"]["uncached"]["p50_ms"], 3)
        out["query p95"] = round(a["query"]["uncached"]["p95_ms"] / b["query"]["uncached"]["p95_ms"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--config", default="configs/bench.yaml", help="bench YAML (see configs/bench.yaml)")
    ap.add_argument("--phases", help="comma-separated phases to run instead of the config's")
    ap.add_argument("--out", help="folder for bench-<stamp>.json/.md (default: the config's out)")
    ap.add_argument("--work", help="folder for phase results and stores (default: the config's work)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. --set quantized.quality=false (YAML value)",
    )
    ap.add_argument("--docs", metavar="MD", help="also write the tables into this file's results block")
    ap.add_argument(
        "--from-json",
        metavar="JSON",
        nargs="+",
        help="do not run: rebuild the report (and --docs) from a result; with several, a phase "
        "of a later file replaces the same phase of an earlier one (the report names each phase's run)",
    )
    ap.add_argument("--phase", help=argparse.SUPPRESS)  # internal: run one phase in this process
    args = ap.parse_args(argv)
    cfg = load_bench_config(rel(args.config))
    for item in args.set:
        key, _, value = item.partition("=")
        section, _, sub = key.partition(".")
        if section not in cfg or (sub and (not isinstance(cfg[section], dict) or sub not in cfg[section])):
            raise SystemExit(f"--set {item}: unknown key {key!r}")
        if sub:
            cfg[section][sub] = yaml.safe_load(value)
        else:
            cfg[section] = yaml.safe_load(value)
    if args.work:
        cfg["work"] = str(Path(args.work).resolve())
    work = rel(cfg["work"])
    work.mkdir(parents=True, exist_ok=True)
    if args.phase:
        result = run_phase(args.phase, cfg, work)
        (work / f"{args.phase.replace(':', '-')}.json").write_text(json.dumps(result, indent=1))
        return 0
    if args.from_json:
        paths = [Path(p).resolve() for p in args.from_json]
        runs = [json.loads(p.read_text()) for p in paths]
        res = runs[0]
        if len(runs) > 1:
            res["phase_runs"] = {k: res["stamp"] for k in res["phases"]}
            for other in runs[1:]:
                res["phases"].update(other["phases"])
                res["phase_runs"].update({k: other["stamp"] for k in other["phases"]})
            res["stamp"] = " + ".join(r["stamp"] for r in runs)
            res["ratios"] = ratios(res["phases"])
        jp = paths[-1]
        print(to_markdown(res))
        if args.docs:
            update_docs(rel(args.docs), res, jp)
        return 0
    phases = args.phases.split(",") if args.phases else list(cfg["phases"])
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    res: dict[str, Any] = {
        "stamp": stamp,
        "config": cfg["_config_path"],
        "model": cfg["model"],
        "settings": {k: v for k, v in cfg.items() if not k.startswith("_")},
        "machine": machine(),
        "phases": {},
    }
    for name in phases:
        print(f"[bench] {time.strftime('%H:%M:%S')} phase {name} ...", file=sys.stderr, flush=True)
        path = work / f"{name.replace(':', '-')}.json"
        path.unlink(missing_ok=True)
        sets = [a for item in args.set for a in ("--set", item)]
        proc = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--config",
                str(rel(args.config)),
                "--work",
                str(work),
                *sets,
                "--phase",
                name,
            ],
            cwd=ROOT,
        )
        if proc.returncode == 0 and path.is_file():
            res["phases"][name] = json.loads(path.read_text())
        else:
            res["phases"][name] = {"error": f"exit status {proc.returncode}"}
        print(f"[bench] {time.strftime('%H:%M:%S')} phase {name} done", file=sys.stderr, flush=True)
    res["ratios"] = ratios(res["phases"])
    res["loadavg_at_end"] = os.getloadavg()
    out = rel(args.out or cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    (out / f"bench-{stamp}.json").write_text(json.dumps(res, indent=1))
    md = to_markdown(res)
    (out / f"bench-{stamp}.md").write_text(md)
    print(md)
    if args.docs:
        update_docs(rel(args.docs), res, out / f"bench-{stamp}.json")
    failed = [k for k, v in res["phases"].items() if "error" in v]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

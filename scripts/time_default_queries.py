"""Time ``Retriever.retrieve`` with the default configuration on a store of the eval cache.

The store is the one ``scripts/run_experiment.py`` fills for a system with the default
configuration (same folder key: model, tree and chunking settings, benchmark), so run the
experiment first. Each question is asked ``--repeats`` times, in corpus scope (all documents)
and in doc scope (its own document); prints p50/p95 in milliseconds as JSON.

Usage:
    .venv/bin/python scripts/time_default_queries.py ../shared/bench/financebench-dev-md \\
        --cache .proxypointer/eval-cache
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmark", help="benchmark folder (docs/ + questions.jsonl)")
    ap.add_argument("--cache", default=".proxypointer/eval-cache", help="eval cache holding the store")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from proxypointer.config import ProxyPointerConfig
    from proxypointer.embed.embedder import SentenceTransformerEmbedder
    from proxypointer.eval.benchmark import load_benchmark
    from proxypointer.eval.harness import SystemSpec, store_folder
    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    cfg = ProxyPointerConfig()
    bench = load_benchmark(args.benchmark, config=cfg)
    embedder = SentenceTransformerEmbedder(cfg.embedding)
    folder = store_folder(SystemSpec("default", "dense", cfg, True), bench, args.cache, embedder.name)
    index = Index(folder, cfg, embedder)
    if not index.exists:
        print(f"{folder}: no store; run scripts/run_experiment.py with the default pipeline first", file=sys.stderr)
        return 1
    retriever = Retriever(index)
    retriever.retrieve(bench.questions[0].question, k=5)  # model load, query encoder trace
    out: dict[str, object] = {"store": str(folder), "loadavg_1min": os.getloadavg()[0]}
    for scope in ("corpus", "doc"):
        ms: list[float] = []
        for _ in range(args.repeats):
            for q in bench.questions:
                t = time.perf_counter()
                retriever.retrieve(q.question, k=5, doc_ids=[q.doc_id] if scope == "doc" else None)
                ms.append((time.perf_counter() - t) * 1000)
        ms.sort()
        out[scope] = {"n": len(ms), "p50_ms": round(statistics.median(ms), 1),
                      "p95_ms": round(ms[max(0, int(0.95 * len(ms)) - 1)], 1)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

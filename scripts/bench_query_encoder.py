"""One-query embedding latency: eager vs traced encoder, fp32 and int8 (no store, no Chroma).

Usage:
    .venv/bin/python scripts/bench_query_encoder.py [--queries 400] [--shared ../shared]

Embeds distinct qasper-dev questions one at a time with ``SentenceTransformerEmbedder
.encode_query`` (query cache off, one torch thread, as ``Retriever`` does), alternating the
eager and the traced encoder over the same model weights so both see the same machine load.
For each model (fp32, int8) it reports p50/p95 in milliseconds, the largest component
difference between the two encoders' vectors, and the cosine between the int8 and fp32
vectors of the same question (how far an int8 query is from fp32 documents). Prints one JSON
object, then a one-line summary on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from proxypointer.embed.embedder import SentenceTransformerEmbedder

ROOT = Path(__file__).resolve().parents[1]


def _questions(shared: Path, n: int) -> list[str]:
    path = shared / "bench" / "qasper-dev" / "questions.jsonl"
    if not path.is_file():
        raise SystemExit(f"{path} not found (set --shared or PROXYPOINTER_SHARED)")
    seen: dict[str, None] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            seen.setdefault(json.loads(line)["question"], None)
            if len(seen) >= n:
                break
    return list(seen)


def _p(values: list[float], q: int) -> float:
    return round(float(np.percentile(values, q)) * 1000, 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("PROXYPOINTER_SHARED", ROOT.parent / "shared")))
    args = ap.parse_args()
    questions = _questions(args.shared, args.queries)
    out: dict[str, dict[str, float]] = {}
    vectors: dict[str, list[np.ndarray]] = {}
    for name, int8 in (("fp32", False), ("int8", True)):
        eager = SentenceTransformerEmbedder(quantize_int8=int8, trace_query=False, query_cache_size=0)
        traced = SentenceTransformerEmbedder(quantize_int8=int8, query_cache_size=0)
        traced._model = eager.model  # the same weights for both
        t = time.perf_counter()
        traced.encode_query("build the traced encoder")
        build_s = time.perf_counter() - t
        for q in questions[:10]:  # warm-up
            eager.encode_query(q)
            traced.encode_query(q)
        times: dict[str, list[float]] = {"eager": [], "traced": []}
        diff = 0.0
        vectors[name] = []
        for i, q in enumerate(questions):
            pair = (("eager", eager), ("traced", traced)) if i % 2 else (("traced", traced), ("eager", eager))
            got = {}
            for label, emb in pair:
                t = time.perf_counter()
                got[label] = emb.encode_query(q)
                times[label].append(time.perf_counter() - t)
            diff = max(diff, float(np.abs(got["eager"] - got["traced"]).max()))
            vectors[name].append(got["traced"])
        out[name] = {
            "eager_p50_ms": _p(times["eager"], 50),
            "eager_p95_ms": _p(times["eager"], 95),
            "traced_p50_ms": _p(times["traced"], 50),
            "traced_p95_ms": _p(times["traced"], 95),
            "traced_build_s": round(build_s, 2),
            "max_abs_diff_traced_vs_eager": diff,
            "traced": traced._query_encoder.__name__ == "encode_one",
        }
    cos = [float(a @ b) for a, b in zip(vectors["fp32"], vectors["int8"], strict=True)]
    result = {
        "queries": len(questions),
        **out,
        "int8_vs_fp32_cosine": {"median": round(statistics.median(cos), 4), "min": round(min(cos), 4)},
    }
    print(json.dumps(result, indent=1))
    print(
        f"{len(questions)} queries: fp32 eager {out['fp32']['eager_p50_ms']} ms, traced "
        f"{out['fp32']['traced_p50_ms']} ms; int8 eager {out['int8']['eager_p50_ms']} ms, traced "
        f"{out['int8']['traced_p50_ms']} ms (p50); int8 vs fp32 cosine median "
        f"{result['int8_vs_fp32_cosine']['median']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

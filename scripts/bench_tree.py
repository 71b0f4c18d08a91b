"""Tree building throughput (MB/s of UTF-8 markdown) on the shared bench corpora.

Usage:
    .venv/bin/python scripts/bench_tree.py [--runs 5] [--shared ../shared] [--reference]

Reports, per corpus (qasper-train/docs, long_docs) and in total, the median over ``--runs``
of ``build_tree`` over every document already read into memory (file IO excluded). With
``--reference`` it also times markdown-it-py's parse of the same texts for comparison.
Prints one JSON object, then a one-line summary on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from proxypointer.readers import read_document
from proxypointer.tree import _headings_markdown_it, build_tree

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {"qasper-train": "bench/qasper-train/docs", "long_docs": "bench/long_docs"}


def _time(fn, texts: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for text in texts:
            fn(text)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per corpus (median)")
    default_shared = os.environ.get("PROXYPOINTER_SHARED", str(ROOT.parent / "shared"))
    ap.add_argument("--shared", default=default_shared, help="shared data folder")
    ap.add_argument("--reference", action="store_true", help="also time markdown-it-py")
    args = ap.parse_args()
    shared = Path(args.shared)
    result: dict[str, object] = {"runs": args.runs, "corpora": {}}
    total_mb = total_s = 0.0
    for name, rel in CORPORA.items():
        folder = shared / rel
        files = sorted(folder.rglob("*.md"))
        if not files:
            print(f"{folder}: no markdown files; set --shared", file=sys.stderr)
            return 1
        texts = [read_document(f) for f in files]
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        seconds = _time(lambda t: build_tree(t, "doc"), texts, args.runs)
        entry = {"files": len(files), "mb": round(mb, 3), "seconds": round(seconds, 4),
                 "mb_per_s": round(mb / seconds, 1)}
        if args.reference:
            ref = _time(_headings_markdown_it, texts, max(1, args.runs // 2))
            entry["markdown_it_mb_per_s"] = round(mb / ref, 1)
        result["corpora"][name] = entry  # type: ignore[index]
        total_mb += mb
        total_s += seconds
    result["total_mb_per_s"] = round(total_mb / total_s, 1)
    print(json.dumps(result, indent=2))
    parts = ", ".join(f"{k} {v['mb_per_s']} MB/s" for k, v in result["corpora"].items())  # type: ignore[union-attr]
    print(f"build_tree: {result['total_mb_per_s']} MB/s over {total_mb:.1f} MB ({parts}; "
          f"median of {args.runs})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

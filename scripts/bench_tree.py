"""Tree building throughput (MB/s of UTF-8 markdown) on the shared bench corpora.

Usage:
    .venv/bin/python scripts/bench_tree.py [--runs 5] [--shared ../shared] [--reference] [--cpu-time]

Reports, per corpus (qasper-train/docs, long_docs) and in total, the median over ``--runs``
of ``build_tree`` over every document already read into memory (file IO excluded). With
``--reference`` it also times markdown-it-py's block parse alone (the parser's share).
``--cpu-time`` times with this process's CPU time instead of wall time (a fairer figure on a
machine other processes load). Also reports the seconds for the first 60 qasper-dev papers, the
ingest set of scripts/bench.py, so the tree's share of that ingest can be read off.
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

from proxypointer.read.readers import read_document
from proxypointer.tree.build import build_tree
from proxypointer.tree.markdown import parse_blocks

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {"qasper-train": "bench/qasper-train/docs", "long_docs": "bench/long_docs"}


def _time(fn, texts: list[str], runs: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(runs):
        t0 = clock()
        for text in texts:
            fn(text)
        times.append(clock() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per corpus (median)")
    default_shared = os.environ.get("PROXYPOINTER_SHARED", str(ROOT.parent / "shared"))
    ap.add_argument("--shared", default=default_shared, help="shared data folder")
    ap.add_argument("--reference", action="store_true", help="also time markdown-it-py")
    ap.add_argument("--cpu-time", action="store_true", help="process CPU time instead of wall time")
    args = ap.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter
    shared = Path(args.shared)
    result: dict[str, object] = {"runs": args.runs, "clock": "cpu" if args.cpu_time else "wall", "corpora": {}}
    total_mb = total_s = 0.0
    for name, rel in CORPORA.items():
        folder = shared / rel
        files = sorted(folder.rglob("*.md"))
        if not files:
            print(f"{folder}: no markdown files; set --shared", file=sys.stderr)
            return 1
        texts = [read_document(f) for f in files]
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        seconds = _time(lambda t: build_tree(t, "doc"), texts, args.runs, clock)
        entry = {"files": len(files), "mb": round(mb, 3), "seconds": round(seconds, 4),
                 "mb_per_s": round(mb / seconds, 1)}
        if args.reference:
            ref = _time(parse_blocks, texts, max(1, args.runs // 2), clock)
            entry["markdown_it_mb_per_s"] = round(mb / ref, 1)
        result["corpora"][name] = entry  # type: ignore[index]
        total_mb += mb
        total_s += seconds
    result["total_mb_per_s"] = round(total_mb / total_s, 1)
    ingest_set = sorted((shared / "bench/qasper-dev/docs").glob("*.md"))[:60]
    if ingest_set:
        texts = [read_document(f) for f in ingest_set]
        result["qasper_dev_first_60"] = {
            "mb": round(sum(len(t.encode("utf-8")) for t in texts) / 1e6, 3),
            "seconds": round(_time(lambda t: build_tree(t, "doc"), texts, args.runs, clock), 4),
        }
    print(json.dumps(result, indent=2))
    parts = ", ".join(f"{k} {v['mb_per_s']} MB/s" for k, v in result["corpora"].items())  # type: ignore[union-attr]
    print(f"build_tree: {result['total_mb_per_s']} MB/s over {total_mb:.1f} MB ({parts}; "
          f"median of {args.runs})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

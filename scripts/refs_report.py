"""Count detected and resolved cross-references in benchmark folders; draw a sample to label.

Usage:
    .venv/bin/python scripts/refs_report.py ../shared/bench/qasper-dev/docs \
        ../shared/bench/long_docs/credit_agreements [--sample 50 --seed 0] [--json out.json]
        [--linked-docs linked.txt]

Prints, per folder, documents, detected references, resolved references and a breakdown by
kind, then a seeded random sample of detections (drawn evenly across folders) with the line's
text around the match and the resolved target, for hand labelling in docs/evaluation.md.
``--linked-docs`` lists the documents where following references can change retrieval.
No embedding model is needed: this runs on the skeleton tree alone.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

from proxypointer.lines import split_lines
from proxypointer.read.readers import read_document
from proxypointer.tree.build import build_tree
from proxypointer.tree.references import detect_references, label_index, reference_graph


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.md") if p.name.lower() != "readme.md")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--sample", type=int, default=50, help="detections to sample in all (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="write counts and sample as JSON")
    ap.add_argument(
        "--linked-docs", type=Path, help="write the paths of documents with a followable reference"
    )
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    report: dict = {"folders": [], "sample": []}
    pools: list[list[dict]] = []
    linked: list[str] = []
    for folder in args.folders:
        t0 = time.perf_counter()
        counts = collections.Counter()
        by_kind: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        pool: list[dict] = []
        for path in _files(folder):
            text = read_document(path)
            lines = split_lines(text)
            tree = build_tree(text, path.stem)
            refs = detect_references(tree, lines, label_index(tree, lines))
            if reference_graph(refs):
                linked.append(str(path))
            counts["documents"] += 1
            counts["detected"] += len(refs)
            counts["resolved"] += sum(r.resolved for r in refs)
            counts["documents_with_resolved"] += any(r.resolved for r in refs)
            for r in refs:
                by_kind[r.kind][0] += 1
                by_kind[r.kind][1] += r.resolved
                line = lines[r.line - 1]
                a = max(0, r.column - 70)
                pool.append(
                    {
                        "file": f"{folder.name}/{path.name}",
                        "line": r.line,
                        "kind": r.kind,
                        "label": r.label,
                        "context": line[a : r.column + len(r.text) + 50].replace("|", "/"),
                        "target": "; ".join(tree.node(t).title for t in r.target_node_ids)
                        or "unresolved",
                    }
                )
        row = {
            "folder": str(folder),
            **counts,
            "by_kind": {
                k: {"detected": v[0], "resolved": v[1]} for k, v in sorted(by_kind.items())
            },
            "seconds": round(time.perf_counter() - t0, 2),
        }
        report["folders"].append(row)
        pools.append(pool)
        print(
            f"{folder}: {counts['documents']} documents, {counts['detected']} detected, "
            f"{counts['resolved']} resolved ({counts['documents_with_resolved']} documents with "
            f"a resolved reference), {row['seconds']} s"
        )
        for k, v in sorted(by_kind.items()):
            print(f"    {k:9s} {v[0]:6d} detected {v[1]:6d} resolved")
    if args.sample:
        per = [
            args.sample // len(pools) + (i < args.sample % len(pools)) for i in range(len(pools))
        ]
        for pool, n in zip(pools, per, strict=True):
            report["sample"].extend(rng.sample(pool, min(n, len(pool))))
        print()
        print("| # | file:line | detected | context | resolved target |")
        print("|---|---|---|---|---|")
        for i, s in enumerate(report["sample"], 1):
            where, what = f"{s['file']}:{s['line']}", f"{s['kind']} {s['label']}"
            print(f"| {i} | {where} | {what} | …{s['context']}… | {s['target']} |")
    if args.linked_docs:
        args.linked_docs.write_text("".join(f"{p}\n" for p in linked), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A results.json of scripts/run_experiment.py broken down by the questions' ``question_type``.

Usage:
    .venv/bin/python scripts/by_question_type.py results/RUN/results.json \
        ../shared/bench/financebench-check/questions.jsonl [--metrics hit@5,budget_hit@4000] [--scope doc]

FinanceBench labels each question ``metrics-generated`` (a statement figure),
``domain-relevant`` (the business, its risks and events) or ``novel-generated``. Prints one
markdown row per system: each metric per type, with the number of questions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="results.json")
    ap.add_argument("questions", help="questions.jsonl with question_type")
    ap.add_argument("--metrics", default="hit@5,budget_hit@4000")
    ap.add_argument("--scope", default="doc")
    args = ap.parse_args(argv)
    res = json.loads(Path(args.results).read_text(encoding="utf-8"))
    kinds = {}
    for line in Path(args.questions).read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            kinds[q["id"]] = q.get("question_type", "?")
    ids = res["per_question"]["ids"]
    types = sorted({kinds.get(i, "?") for i in ids})
    metrics = args.metrics.split(",")
    head = " | ".join(f"{m} {t} (n={sum(1 for i in ids if kinds.get(i, '?') == t)})" for m in metrics for t in types)
    print(f"| system | {head} |")
    print("|---|" + "---|" * (len(metrics) * len(types)))
    for system, scopes in res["per_question"]["values"].items():
        values = scopes.get(args.scope)
        if not values:
            continue
        cells = []
        for m in metrics:
            by: dict[str, list[float]] = defaultdict(list)
            for i, v in zip(ids, values.get(m, []), strict=False):
                by[kinds.get(i, "?")].append(v)
            cells += [f"{sum(by[t]) / len(by[t]):.3f}" if by[t] else "-" for t in types]
        print(f"| {system} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

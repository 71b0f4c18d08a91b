"""Tabulate the misses of a retrieval_lab run: what the evidence holds, what ranked instead.

Usage:
    .venv/bin/python scripts/failure_table.py results/lab-fb-today/explain.jsonl BENCH_DIR \\
        [--candidate today-default] [--scope doc] [--k 5] [--all]

One markdown row per question missed at k (``--all``: every question): the evidence lines'
sections (breadcrumb, own-text lines / subtree end), whether the evidence lines hold a heading
line, a title-like plain line (see scripts/heading_variants.py), how table-like they are (share
of non-blank lines with three or more numbers: flattened table rows), and the first three
sections ranked instead with their tokens. The categories in docs/evaluation.md were assigned
by reading these rows and the pages.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("heading_variants", ROOT / "scripts" / "heading_variants.py")
hv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hv)

_NUM = re.compile(r"\(?-?\$?\d[\d,.]*%?\)?")


def describe(lines: list[str], a: int, b: int) -> dict:
    """Headings, title-like lines and table-likeness of lines a..b (1-based inclusive)."""
    part = lines[a - 1 : b]
    body = [x for x in part if x.strip() and not x.lstrip().startswith("<!--")]
    heads = [x.strip() for x in body if x.lstrip().startswith("#")]
    titles = [x.strip() for i, x in enumerate(part) if not x.lstrip().startswith("#") and hv.title_like(x)
              and (i == 0 or not part[i - 1].strip() or part[i - 1].lstrip().startswith("<!--"))]
    numeric = sum(1 for x in body if len(_NUM.findall(x)) >= 3)
    return {"headings": heads[:3], "title_lines": titles[:3], "table_share": round(numeric / max(len(body), 1), 2),
            "tokens_hint": sum(len(x.split()) for x in body)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("explain")
    ap.add_argument("bench")
    ap.add_argument("--candidate", default="today-default")
    ap.add_argument("--scope", default="doc")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args(argv)
    rows = [json.loads(x) for x in Path(args.explain).read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r["candidate"] == args.candidate and r["scope"] == args.scope]
    docs: dict[str, list[str]] = {}
    print("| id | question | evidence: section (own/subtree lines) | heading / title line on it | table share "
          "| ranked instead (top 3: breadcrumb tail, tokens) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        hit = any(t["hit"] for t in r["top"][: args.k])
        if hit and not args.all:
            continue
        doc = r["doc_id"]
        if doc not in docs:
            docs[doc] = (Path(args.bench) / "docs" / f"{doc}.md").read_text(encoding="utf-8").split("\n")
        a, b = r["gold_lines"][0]
        d = describe(docs[doc], a, b)
        head = "; ".join(d["headings"][:2]) or "-"
        tl = "; ".join(d["title_lines"][:2]) or "-"
        inst = "; ".join(f"{t['breadcrumb'].split(' > ')[-1][:40]} ({t['tokens']})" for t in r["top"][:3])
        sec = " / ".join(s[-80:] for s in r["gold_sections"][:2])
        print(f"| {r['id'][-5:]} | {r['question'][:70]} | {sec} | H: {head[:60]} / T: {tl[:50]} | "
              f"{d['table_share']:.2f} | {inst} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the tree's converter rules do to folders of markdown (no retrieval figures).

Usage:
    .venv/bin/python scripts/tree_modes_report.py [DIR ...] [--converter-output auto|on|off]
        [--samples N] [--seed S] [--only PREFIX,...] [--skip PREFIX,...]

(default DIR: ../shared/bench/financebench-dev-md/docs.) For each markdown file: whether the
converter rules run on it and why (``tree.converter_output``; ``auto`` by default: page markers,
page footers or row-like headings), how many headings markdown-it finds, how many the rules drop
as table rows or page furniture, how many plain title lines they promote and how many headings
end at another level than written. Then the totals as JSON, the share of documents per reason,
and N random promoted and dropped lines to read (``--seed`` for another sample). ``--only`` /
``--skip`` select files by name prefix (the held-out check of the title rules used ``--only
VERIZON,AMERICANWATERWORKS``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

from proxypointer.config import TreeConfig
from proxypointer.lines import split_lines
from proxypointer.read.readers import read_document
from proxypointer.tree.build import explain_headings

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", type=Path, help="folders of .md files (searched recursively)")
    ap.add_argument("--converter-output", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--samples", type=int, default=20, help="promoted and dropped lines to print (each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated file-name prefixes to keep")
    ap.add_argument("--skip", default="", help="comma-separated file-name prefixes to leave out")
    args = ap.parse_args(argv)
    dirs = args.dirs or [ROOT.parent / "shared/bench/financebench-dev-md/docs"]
    only = tuple(p for p in args.only.split(",") if p)
    skip = tuple(p for p in args.skip.split(",") if p)
    files = sorted(
        p for d in dirs for p in d.rglob("*.md")
        if (not only or p.name.startswith(only)) and not (skip and p.name.startswith(skip))
    )
    if not files:
        print(f"{', '.join(map(str, dirs))}: no markdown files", file=sys.stderr)
        return 1
    config = TreeConfig(converter_output=args.converter_output)
    total = {"files": 0, "converted": 0, "headings": 0, "dropped": 0, "promoted": 0, "relevelled": 0}
    reasons: Counter[str] = Counter()
    promoted: list[str] = []
    dropped: list[str] = []
    for path in files:
        text = read_document(path)
        lines = split_lines(text)
        written = explain_headings(text, TreeConfig(converter_output="off"), lines=lines)[0]
        _, _, report = explain_headings(text, config, lines=lines)
        reason = report.converter_output or "-"
        reasons[re.sub(r"\d+", "N", reason)] += 1
        print(f"{path.stem}: {reason}; headings {len(written)}, dropped {len(report.dropped)}, "
              f"promoted {len(report.promoted)}, re-levelled {report.relevelled}")
        for key, value in (("files", 1), ("converted", int(bool(report.converter_output))),
                           ("headings", len(written)), ("dropped", len(report.dropped)),
                           ("promoted", len(report.promoted)), ("relevelled", report.relevelled)):
            total[key] += value
        promoted += [f"{path.stem}:{h.line}: {h.title}" for h in report.promoted]
        dropped += [f"{path.stem}:{h.line}: {h.title}" for h in report.dropped]
    print(json.dumps(total))
    print("documents by reason:", json.dumps(dict(reasons), sort_keys=True))
    rng = random.Random(args.seed)
    for name, items in (("promoted", promoted), ("dropped", dropped)):
        pick = sorted(rng.sample(items, min(args.samples, len(items))))
        print(f"-- {len(pick)} of {len(items)} {name} lines")
        print("\n".join(pick))
    return 0


if __name__ == "__main__":
    sys.exit(main())

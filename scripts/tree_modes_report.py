"""What the 10-K tree modes do to a folder of converted filings (no retrieval figures).

Usage:
    .venv/bin/python scripts/tree_modes_report.py [DIR]   (default ../shared/bench/financebench-dev-md/docs)

For each markdown file: headings found in CommonMark mode, how many ``tree.drop_row_headings``
drops, how many ``tree.relevel_filing`` re-levels, and how many nodes get another parent
path with both on. Prints one line per file, a JSON total, the filing labels of the headings
(``titles.filing_label``) and a few dropped titles.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from proxypointer.config import TreeConfig
from proxypointer.readers import read_document
from proxypointer.titles import filing_label
from proxypointer.tree import build_tree, find_headings, split_lines

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared/bench/financebench-dev-md/docs"
    files = sorted(folder.glob("*.md"))
    if not files:
        print(f"{folder}: no markdown files", file=sys.stderr)
        return 1
    both = TreeConfig(drop_row_headings=True, relevel_filing=True)
    total = {"files": 0, "headings": 0, "dropped": 0, "relevelled": 0, "reparented": 0}
    labels: dict[str, int] = {}
    examples: list[str] = []
    for path in files:
        text = read_document(path)
        lines = split_lines(text)
        base = find_headings(text, lines=lines)[0]
        kept = {h.line for h in find_headings(text, TreeConfig(drop_row_headings=True), lines=lines)[0]}
        filing = find_headings(text, TreeConfig(relevel_filing=True), lines=lines)[0]
        dropped = [h for h in base if h.line not in kept]
        relevelled = sum(1 for a, b in zip(base, filing, strict=True) if a.level != b.level)
        before, after = build_tree(text, path.stem, lines=lines), build_tree(text, path.stem, both, lines=lines)
        parents = {n.start_line: before.title_path(n.node_id)[:-1] for n in before.nodes}
        reparented = sum(1 for n in after.nodes if parents.get(n.start_line) != after.title_path(n.node_id)[:-1])
        print(f"{path.stem}: headings {len(base)}, dropped {len(dropped)}, re-levelled {relevelled}, "
              f"new parent path (both modes) {reparented}")
        for key, value in (("files", 1), ("headings", len(base)), ("dropped", len(dropped)),
                           ("relevelled", relevelled), ("reparented", reparented)):
            total[key] += value
        examples += [f"{path.stem}:{h.line}: {h.title}" for h in dropped[:2]]
        for h in base:
            kind = (filing_label(h.title) or ("other",))[0]
            labels[kind] = labels.get(kind, 0) + 1
    print(json.dumps(total))
    print("labels of the CommonMark headings:", json.dumps(labels, sort_keys=True))
    print("\n".join(examples[:20]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

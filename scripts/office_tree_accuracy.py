"""Tree accuracy of Word, HTML and PowerPoint conversion on the fixtures of tests/unit/test_office.py.

Writes the test fixtures (a policy .docx with Title + Heading 1-3, an HTML page with nested
heading tags, an EDGAR-like 10-K whose Items are styled text placed by a linked contents table)
into a folder, converts each with proxypointer's office reader and, with ``--markitdown PATH``
(the ``markitdown`` command of another venv: it is no dependency of this project), with
markitdown too, and scores both trees against the gold outlines (proxypointer.eval.trees).

Usage:
    .venv/bin/python scripts/office_tree_accuracy.py [--out /tmp/office] [--markitdown /tmp/mkv/bin/markitdown]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/office-trees", help="folder for the fixtures and conversions")
    ap.add_argument("--markitdown", help="markitdown command to compare with (optional)")
    args = ap.parse_args()

    import test_office as fx

    from proxypointer.eval.trees import score_tree
    from proxypointer.read.office import OfficeReader
    from proxypointer.tree.build import build_tree
    from proxypointer.tree.outline import outline_from_data

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fx.write_policy(out / "policy.docx")
    (out / "handbook.html").write_text(fx.HTML_PAGE, encoding="utf-8")
    (out / "acme-10k.htm").write_text(fx.EDGAR, encoding="utf-8")
    item7 = "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations"
    edgar = [{"title": "PART I", "page": 1, "children": [{"title": "Item 1. Business", "page": 1},
                                                         {"title": "Item 1A. Risk Factors", "page": 1}]},
             {"title": "PART II", "page": 1, "children": [
                 {"title": item7, "page": 1},
                 {"title": "Item 8. Financial Statements and Supplementary Data", "page": 1}]}]
    cases = [("policy.docx", "docx", fx.POLICY_GOLD), ("handbook.html", "html", fx.HTML_GOLD),
             ("acme-10k.htm", "html", edgar)]
    print("| file | converter | recall | nesting |\n|---|---|---|---|")
    for name, fmt, gold in cases:
        path = out / name
        texts = [("proxypointer", OfficeReader(fmt).read(path.read_bytes(), str(path)).text)]
        if args.markitdown:
            texts.append(("markitdown", subprocess.run([args.markitdown, str(path)], capture_output=True, text=True,
                                                       check=True).stdout))
        for converter, text in texts:
            s = score_tree(build_tree(text, path.stem), lambda line: 1, outline_from_data(gold))
            print(f"| {name} | {converter} | {s.recall:.3f} ({s.found}/{s.gold}) | {s.nesting:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tree accuracy of PDFs against gold outlines (proxypointer.eval.trees), one row per document.

Usage:
    .venv/bin/python scripts/tree_accuracy.py PDF_DIR --gold bookmarks [--bookmarks off]
    .venv/bin/python scripts/tree_accuracy.py PDF_DIR --gold tests/gold_outlines [--bookmarks on]

``--gold bookmarks`` scores each PDF against its own bookmarks (PDFs without any are left
out); run it with ``--bookmarks off`` to score the tree built without them, as a PDF without
bookmarks would get. ``--gold DIR`` scores each PDF that has ``DIR/<doc_id>.yaml`` (or
``.json``). ``--markdown DIR`` scores ``DIR/<doc_id>.md`` instead of converting the PDF: markdown
from another converter, with page markers of a style ``proxypointer.tree.pages`` reads, built into a
tree as markdown input is. Conversions are kept in ``--cache`` (default: the eval harness's), so a second run
converts nothing. Prints a markdown table: per document recall, nesting and unsupported
headings, then the pooled figures (sums over documents) and the means over documents.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdfs", help="folder of PDFs")
    ap.add_argument("--gold", required=True, help="'bookmarks' or a folder of <doc_id>.yaml outlines")
    ap.add_argument("--bookmarks", choices=("on", "off"), default="on", help="pdf.bookmarks for the trees")
    ap.add_argument("--config", help="YAML config (pdf: and tree: sections); default: the defaults")
    ap.add_argument("--cache", default=str(ROOT / ".proxypointer" / "eval-cache" / "converted"))
    ap.add_argument("--missing", action="store_true",
                    help="list the gold entries not found or nested wrong, per document")
    ap.add_argument("--markdown", help="folder of <doc_id>.md (another converter's output, with page markers) "
                    "to score instead of converting the PDFs")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from proxypointer.config import ProxyPointerConfig, load_config
    from proxypointer.eval.trees import score_tree
    from proxypointer.lines import split_lines
    from proxypointer.read.readers import PDFReader
    from proxypointer.tree.build import build_tree
    from proxypointer.tree.outline import load_outline, pdf_outline
    from proxypointer.tree.pages import page_map, stored_page_map

    cfg = load_config(args.config) if args.config else ProxyPointerConfig()
    pdf_cfg = dataclasses.replace(cfg.pdf, bookmarks=args.bookmarks == "on")
    reader = PDFReader(pdf_cfg, cache=args.cache, shared_cache=True)
    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))
    golds = {}
    for pdf in pdfs:
        if args.gold == "bookmarks":
            outline = pdf_outline(pdf)
        else:
            found = [Path(args.gold) / f"{pdf.stem}{s}" for s in (".yaml", ".yml", ".json")]
            found = [f for f in found if f.exists()]
            outline = load_outline(found[0]) if found else None
        if outline is not None and outline.entries:
            golds[pdf] = outline
    if not golds:
        print(f"no gold outline for any PDF of {args.pdfs}", file=sys.stderr)
        return 1
    if args.markdown:
        golds = {p: g for p, g in golds.items() if (Path(args.markdown) / f"{p.stem}.md").exists()}
        if not golds:
            print(f"no <doc_id>.md in {args.markdown} for a PDF with a gold outline", file=sys.stderr)
            return 1
        reads = [Path(args.markdown, f"{p.stem}.md").read_text(encoding="utf-8") for p in golds]
    else:
        reads = reader.read_many([str(p) for p in golds])
    source = f"markdown: {args.markdown}" if args.markdown else f"pdf.bookmarks: {args.bookmarks}"
    print(f"gold: {args.gold}; {source}\n")
    print("| document | gold | recall | nesting | unsupported / headings |")
    print("|---|---|---|---|---|")
    scores = []
    for (pdf, gold), read in zip(golds.items(), reads, strict=True):
        if isinstance(read, Exception):
            print(f"| {pdf.stem} | {len(gold)} | error: {read} | | |")
            continue
        if isinstance(read, str):  # --markdown: pages from its markers
            tree = build_tree(read, pdf.stem, cfg.tree, paged=True)
            pages = page_map(split_lines(read))
        else:
            tree = build_tree(read.text, pdf.stem, cfg.tree, paged=read.pages is not None)
            pages = stored_page_map(read.pages, split_lines(read.text))
        s = score_tree(tree, pages.page_of, gold)
        scores.append(s)
        print(f"| {pdf.stem} | {s.gold} | {s.recall:.3f} | {s.nesting:.3f} | {len(s.unsupported)} / {s.headings} |")
        if args.missing:
            for e in s.missing():
                print(f"|   missing | p. {e.page} | {e.title} | | |")
            for e in s.misnested():
                print(f"|   misnested | p. {e.page} | {e.title} | L{e.line} | |")
    g, f = sum(s.gold for s in scores), sum(s.found for s in scores)
    nc, no = sum(s.nested_checked for s in scores), sum(s.nested_ok for s in scores)
    u, h = sum(len(s.unsupported) for s in scores), sum(s.headings for s in scores)
    print(f"| **pooled** ({len(scores)} documents) | {g} | {f / g:.3f} | {no / max(nc, 1):.3f} | {u} / {h} |")
    n = len(scores)
    print(f"| mean over documents | | {sum(s.recall for s in scores) / n:.3f} | "
          f"{sum(s.nesting for s in scores) / n:.3f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A PDF's bookmarks are its tree: read with pypdf, written into the converted text, kept on re-read."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("reportlab", reason="reportlab (dev dependency) writes the test PDFs")
pytest.importorskip("pypdf", reason="pypdf (extra pdf) reads the bookmarks")

from fakes import FakePDFConverter  # noqa: E402
from pdfdocs import write_bookmarked, write_report  # noqa: E402

from proxypointer.config import PDFConfig
from proxypointer.eval.trees import score_tree
from proxypointer.lines import split_lines
from proxypointer.read.readers import PDFReader
from proxypointer.tree.build import build_tree
from proxypointer.tree.outline import Outline, OutlineEntry, pdf_outline
from proxypointer.tree.outlinetext import apply_outline
from proxypointer.tree.pages import page_map, stored_page_map

#: What a converter might write for pdfdocs.write_bookmarked: Risk Factors lost its heading and
#: runs into its first sentence, a running title became a heading, and the notes' title is a
#: plain line. (opendataloader-pdf writes such output for real filings.)
CONVERTED = "\n".join([
    "<!-- page 1 -->", "",
    "# ACME CORP", "",
    "Business Overview", "",
    "Acme makes anvils, rockets and giant magnets for desert customers.", "",
    "Risk Factors Roadrunners are fast and our products sometimes miss. Competition is strong.", "",
    "<!-- page 2 -->", "",
    "Risk factors continue: falling anvils may injure the operator.", "",
    "<!-- page 3 -->", "",
    "## Financial Statements", "",
    "Net income was five million dollars, up from four million.", "",
    "", "",
])


def _tree(text, line_pages, doc="report"):
    return build_tree(text, doc, paged=True), stored_page_map(line_pages, split_lines(text))


def test_pdf_outline_reads_titles_pages_and_levels(tmp_path):
    o = pdf_outline(write_bookmarked(tmp_path / "r.pdf"))
    assert [(e.title, e.page, e.level, e.parent) for e in o.entries] == [
        ("Business Overview", 1, 1, -1), ("Risk Factors", 1, 2, 0),
        ("Financial Statements", 3, 1, -1), ("Notes to the Statements", 3, 2, 2),
    ]


def test_a_pdf_without_bookmarks_has_an_empty_outline(tmp_path):
    assert pdf_outline(write_report(tmp_path / "r.pdf")).entries == ()


def test_bookmarks_become_the_tree_with_their_pages(tmp_path):
    pdf = write_bookmarked(tmp_path / "report.pdf")
    reader = PDFReader(PDFConfig(), converter=FakePDFConverter({"report.pdf": CONVERTED}))
    read = reader.read(pdf.read_bytes(), str(pdf))
    tree, pages = _tree(read.text, read.pages)
    got = [(n.title, n.level, pages.page_of(n.start_line), " > ".join(tree.title_path(n.node_id)))
           for n in tree.nodes if n.kind == "heading"]
    assert got == [
        ("ACME CORP", 1, 1, "ACME CORP"),  # the converter's heading before the first bookmark stays
        ("Business Overview", 1, 1, "Business Overview"),
        ("Risk Factors", 2, 1, "Business Overview > Risk Factors"),
        ("Financial Statements", 1, 3, "Financial Statements"),
        ("Notes to the Statements", 2, 3, "Financial Statements > Notes to the Statements"),
    ]
    # the sentence that ran into the Risk Factors title is kept, under its heading
    risk = next(n for n in tree.nodes if n.title == "Risk Factors")
    body = "\n".join(split_lines(read.text)[risk.body_start_line - 1: risk.end_line])
    assert "Roadrunners are fast" in body and "falling anvils" in body
    score = score_tree(tree, pages.page_of, pdf_outline(pdf))
    assert (score.recall, score.nesting) == (1.0, 1.0)


def test_bookmarks_off_leaves_the_converters_headings(tmp_path):
    pdf = write_bookmarked(tmp_path / "report.pdf")
    on = PDFReader(PDFConfig(), converter=FakePDFConverter({"report.pdf": CONVERTED}))
    off = PDFReader(dataclasses.replace(PDFConfig(), bookmarks=False),
                    converter=FakePDFConverter({"report.pdf": CONVERTED}))
    read = off.read(pdf.read_bytes(), str(pdf))
    assert "{.outline}" not in read.text
    assert "Risk Factors" not in [n.title for n in _tree(read.text, read.pages)[0].nodes]
    # the setting is part of the source key: a store re-reads its PDFs when it changes
    assert on.source_key(pdf.read_bytes(), str(pdf)) != off.source_key(pdf.read_bytes(), str(pdf))


def test_a_stored_outline_tree_is_rebuilt_the_same():
    lines = split_lines(CONVERTED)
    pm = page_map(lines)
    outline = Outline((OutlineEntry("Business Overview", 1, 1), OutlineEntry("Risk Factors", 1, 2, 0)))
    got = apply_outline(lines, pm.line_pages, outline, pm.marker_lines)
    new, placed, inserted = got.lines, got.placed, got.inserted
    text = "\n".join(new) + "\n"
    assert (placed, inserted) == (2, 0)
    first = [(n.title, n.level, n.start_line) for n in build_tree(text, "r", paged=True).nodes]
    again = [(n.title, n.level, n.start_line) for n in build_tree(text, "r", paged=True).nodes]
    assert first == again
    assert ("Risk Factors", 2) in [(t, lv) for t, lv, _ in first]


def test_an_entry_not_on_its_page_is_inserted_at_the_top_of_that_page_and_toc_lines_are_not_taken():
    md = "\n".join([
        "<!-- page 1 -->", "", "Contents", "", "- Item 1. Business 2", "- Item 7. Management's Discussion 3", "",
        "<!-- page 2 -->", "", "ITEM 1. BUSINESS", "", "We sell anvils.", "",
        "<!-- page 3 -->", "", "Our results were good.", "",
    ])
    lines = split_lines(md)
    pm = page_map(lines)
    outline = Outline((OutlineEntry("Item 1. Business", 2, 1), OutlineEntry("Item 7. Management's Discussion", 3, 1)))
    got = apply_outline(lines, pm.line_pages, outline, pm.marker_lines)
    new, placed, inserted = got.lines, got.placed, got.inserted
    assert (placed, inserted) == (1, 1)
    pm2 = page_map(new)
    heads = [(i + 1, pm2.page_of(i + 1), ln) for i, ln in enumerate(new) if ln.startswith("#")]
    assert [(p, ln) for _, p, ln in heads] == [
        (2, "# Item 1. Business {.outline}"),
        (3, "# Item 7. Management's Discussion {.outline}"),
    ]
    assert "- Item 1. Business 2" in new  # the contents line is left as it was


def test_bookmarks_out_of_page_order_land_on_their_pages():
    md = "\n".join(["<!-- page 1 -->", "", "Alpha", "", "<!-- page 2 -->", "", "Beta", "",
                    "<!-- page 3 -->", "", "Gamma", "", "<!-- page 4 -->", "", "Delta", ""])
    lines = split_lines(md)
    pm = page_map(lines)
    outline = Outline((OutlineEntry("Delta", 4, 1), OutlineEntry("Beta", 2, 1), OutlineEntry("Alpha", 1, 2, 1),
                       OutlineEntry("Gamma", 3, 1)))
    got = apply_outline(lines, pm.line_pages, outline, pm.marker_lines)
    pm2 = page_map(got.lines)
    placed = {ln.split()[1]: pm2.page_of(i + 1) for i, ln in enumerate(got.lines) if ln.startswith("#")}
    assert placed == {"Alpha": 1, "Beta": 2, "Gamma": 3, "Delta": 4}

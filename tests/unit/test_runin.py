"""Titles a converter ran into paragraphs, split off where the PDF sets them in bold on lines of their own."""

from __future__ import annotations

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("pypdf")

from pdfdocs import write_lines  # noqa: E402

from proxypointer.read.runin import page_lines, split_run_in_titles  # noqa: E402
from proxypointer.tree.build import build_tree  # noqa: E402
from proxypointer.tree.headingstyles import HeadingStyle, apply_heading_styles  # noqa: E402

BOLD, BODY = "Helvetica-Bold", "Helvetica"

#: One page as a 10-K sets it: bold titles on lines of their own, in the body's size.
PAGE = [
    (BOLD, "PART I"),
    (BODY, "Acme Corp makes anvils and rockets for desert customers."),
    (BODY, "It sells them in forty countries through its own stores."),
    (BOLD, "Item 1. Business"),
    (BOLD, "General"),
    (BODY, "Acme traces its origins to a forge founded in 1851 in Ohio."),
    (BOLD, "Cash and due from banks"),
    (BODY, "increased primarily as a result of growth in deposits this year."),
    (BOLD, "Total net revenue"),
    (BODY, "12,345 11,012 10,455 9,876 8,765 7,654 6,543"),
]


#: The converter's markdown of PAGE: lines run together into paragraphs, titles and all.
MARKDOWN = """<!-- page 1 -->

PART I Acme Corp makes anvils and rockets for desert customers. \
It sells them in forty countries through its own stores. Item 1. Business General

Acme traces its origins to a forge founded in 1851 in Ohio.

Cash and due from banks increased primarily as a result of growth in deposits this year.

Total net revenue 12,345 11,012 10,455 9,876 8,765 7,654 6,543
"""


def test_page_lines_tell_bold_lines_from_body_lines(tmp_path):
    import pypdf

    pdf = write_lines(tmp_path / "page.pdf", PAGE)
    lines = page_lines(pypdf.PdfReader(str(pdf)).pages[0])
    assert [(ln.text, ln.bold) for ln in lines] == [(text, font == BOLD) for font, text in PAGE]
    assert lines[0].style == HeadingStyle(10.0, True, False)


def test_titles_run_into_a_paragraph_get_lines_of_their_own(tmp_path):
    pdf = write_lines(tmp_path / "page.pdf", PAGE)
    text, titles = split_run_in_titles(MARKDOWN, pdf)
    assert text.splitlines()[2:9] == [
        "###### PART I",
        "",
        "Acme Corp makes anvils and rockets for desert customers. It sells them in forty countries through its "
        "own stores.",
        "",
        "###### Item 1. Business",
        "",
        "###### General",
    ]
    assert [(t.page, t.text, t.style.bold) for t in titles] == [
        (1, "PART I", True), (1, "Item 1. Business", True), (1, "General", True)]
    # a sentence whose first words are bold, and a table row under a bold label, keep their lines
    assert "Cash and due from banks increased primarily as a result of growth in deposits this year." in text
    assert "Total net revenue 12,345 11,012 10,455 9,876 8,765 7,654 6,543" in text


def test_titles_inside_a_paragraph_are_cut_out_where_sentences_end(tmp_path):
    pdf = write_lines(tmp_path / "page.pdf", PAGE[:6])
    merged = ("<!-- page 1 -->\n\nAcme Corp makes anvils and rockets for desert customers. It sells them in forty "
              "countries through its own stores. Item 1. Business General Acme traces its origins to a forge "
              "founded in 1851 in Ohio.\n")
    text, titles = split_run_in_titles(merged, pdf)
    assert [t.text for t in titles] == ["Item 1. Business", "General"]
    assert text.splitlines()[2:] == [
        "Acme Corp makes anvils and rockets for desert customers. It sells them in forty countries through its "
        "own stores.", "", "###### Item 1. Business", "", "###### General", "",
        "Acme traces its origins to a forge founded in 1851 in Ohio."]
    # the same words inside a sentence are no title
    inside = merged.replace("own stores. Item 1. Business General Acme",
                            "own stores under Item 1. Business General Acme")
    assert split_run_in_titles(inside, pdf) == (inside, [])


def test_split_titles_become_sections_of_the_tree(tmp_path):
    pdf = write_lines(tmp_path / "page.pdf", PAGE)
    text, titles = split_run_in_titles(MARKDOWN, pdf)
    styled, n = apply_heading_styles(text, titles)
    assert n == 3
    tree = build_tree(styled, "acme", paged=True)
    titles_in_tree = [node.title for node in tree.nodes if node.kind == "heading"]
    assert titles_in_tree == ["PART I", "Item 1. Business", "General"]


def test_nothing_is_split_without_a_bold_line_or_a_readable_pdf(tmp_path):
    plain = write_lines(tmp_path / "plain.pdf", [(BODY, t) for _, t in PAGE])
    assert split_run_in_titles(MARKDOWN, plain) == (MARKDOWN, [])
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really")
    assert split_run_in_titles(MARKDOWN, broken) == (MARKDOWN, [])

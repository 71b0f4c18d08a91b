"""Titles a converter ran into paragraphs, split off where the PDF sets them in bold on lines of their own."""

from __future__ import annotations

import pytest

pytest.importorskip("reportlab")
pytest.importorskip("pypdf")

from pdfdocs import write_lines  # noqa: E402

from proxypointer.read.runin import PageLine, page_lines, split_run_in_titles  # noqa: E402
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


#: A page of notes that the converter wrote as one-item lists ("6." read as a list marker).
NOTES_PAGE = [
    (BOLD, "6. Commitments and Contingencies"),
    (BODY, "The Company had streaming content obligations of ten billion dollars."),
    (BOLD, "7. Income Taxes"),
    (BODY, "The following table summarizes the provision for income taxes:"),
    (BOLD, "16"),
    (BOLD, "TOTAL $ 5,256 $ 4,249"),
]
NOTES_MARKDOWN = """<!-- page 1 -->

- 6. Commitments and Contingencies

The Company had streaming content obligations of ten billion dollars.

- 7. Income Taxes The following table summarizes the provision for income taxes:

Federal 120 110

- 16

Certifications

- TOTAL $ 5,256 $ 4,249

Signatures

- 1. I have reviewed this Annual Report on Form 10-K of Acme Corp.
"""


def test_a_one_item_list_that_opens_with_a_bold_title_is_a_heading(tmp_path):
    pdf = write_lines(tmp_path / "notes.pdf", NOTES_PAGE)
    text, titles = split_run_in_titles(NOTES_MARKDOWN, pdf)
    assert [t.text for t in titles] == ["6. Commitments and Contingencies", "7. Income Taxes"]
    lines = text.splitlines()
    assert "###### 6. Commitments and Contingencies" in lines
    i = lines.index("###### 7. Income Taxes")
    assert lines[i + 2] == "The following table summarizes the provision for income taxes:"
    # a page number set in bold, and an item in plain type, stay list items
    assert "- 16" in lines and "- TOTAL $ 5,256 $ 4,249" in lines
    assert "- 1. I have reviewed this Annual Report on Form 10-K of Acme Corp." in lines
    tree = build_tree(apply_heading_styles(text, titles)[0], "notes", paged=True)
    assert [n.title for n in tree.nodes if n.kind == "heading"] == [
        "6. Commitments and Contingencies", "7. Income Taxes"]
    # a loose list's item is set apart too (the footnotes above it are a tight list: kept)
    loose = ("<!-- page 1 -->\n\n- (1) Includes leases of ten stores.\n- (2) Net of returns.\n\n\n"
             "- 7. Income Taxes The following table summarizes the provision for income taxes:\n")
    text, titles = split_run_in_titles(loose, pdf)
    assert [t.text for t in titles] == ["7. Income Taxes"]
    assert text.splitlines()[2:4] == ["- (1) Includes leases of ten stores.", "- (2) Net of returns."]


def test_a_paragraph_of_bold_titles_is_cut_into_headings(tmp_path):
    pdf = write_lines(tmp_path / "notes.pdf", [
        (BOLD, "1. Significant Accounting Policies"),
        (BOLD, "Description of Business"),
        (BODY, "Acme Corp makes anvils and rockets for desert customers."),
    ])
    merged = ("<!-- page 1 -->\n\n1. Significant Accounting Policies Description of Business\n\n"
              "Acme Corp makes anvils.\n")
    text, titles = split_run_in_titles(merged, pdf)
    assert [t.text for t in titles] == ["1. Significant Accounting Policies", "Description of Business"]
    assert text.splitlines()[2:5] == ["###### 1. Significant Accounting Policies", "", "###### Description of Business"]
    # one title alone on its line is left to the tree's title-line rule
    alone = "<!-- page 1 -->\n\nDescription of Business\n\nAcme Corp makes anvils.\n"
    assert split_run_in_titles(alone, pdf) == (alone, [])
    # a table's header set in bold is titles and nothing else, but no label or number opens it
    header = write_lines(tmp_path / "table.pdf", [(BOLD, "Gross Carrying Amount"), (BOLD, "Accumulated Amortization"),
                                                   (BODY, "Patents 1,200 300")])
    row = "<!-- page 1 -->\n\nGross Carrying Amount Accumulated Amortization\n\nPatents 1,200 300\n"
    assert split_run_in_titles(row, header) == (row, [])


def test_a_title_that_pypdf_reads_with_a_space_inside_a_word_is_still_found(tmp_path):
    # pypdf reads "RE GISTERED" where the glyphs of the word are set apart; the converter wrote it whole
    read = [PageLine("REPORT OF INDEPENDENT RE GISTERED PUBLIC ACCOUNTING FIRM", True, HeadingStyle(9.0, True, False))]
    merged = ("<!-- page 1 -->\n\nREPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM To the Stockholders and the "
              "Board of Directors of Square, Inc. We have audited the accompanying balance sheets.\n")
    text, titles = split_run_in_titles(merged, tmp_path / "unread.pdf", titles={1: read})
    assert [t.text for t in titles] == ["REPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM"]
    assert text.splitlines()[2:5] == ["###### REPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM", "",
                                      "To the Stockholders and the Board of Directors of Square, Inc. We have audited "
                                      "the accompanying balance sheets."]
    # but a title is never found inside a longer word
    longer = merged.replace("ACCOUNTING FIRM To", "ACCOUNTING FIRMS To")
    assert split_run_in_titles(longer, tmp_path / "unread.pdf", titles={1: read}) == (longer, [])


def test_a_bold_table_row_run_into_prose_is_no_title(tmp_path):
    pdf = write_lines(tmp_path / "table.pdf", [
        (BOLD, "Total intangible assets 2,160 660 1,500"),
        (BOLD, "June 30, 2022"),
        (BODY, "Amortization expense was ten million dollars in the year."),
    ])
    for row in ("Total intangible assets 2,160 660 1,500", "June 30, 2022"):
        merged = f"<!-- page 1 -->\n\n{row} Amortization expense was ten million dollars in the year.\n"
        assert split_run_in_titles(merged, pdf) == (merged, [])


def test_a_converter_heading_that_swallowed_the_next_title_or_its_first_sentence_is_cut(tmp_path):
    pdf = write_lines(tmp_path / "notes.pdf", [
        (BOLD, "Note 1. Description of Business and Summary of Significant Accounting Policies"),
        (BOLD, "Description of Business"),
        (BODY, "Acme Corp makes anvils and rockets for desert customers."),
        (BOLD, "Cost of Services"),
        (BODY, "Cost of services increased during the year primarily due to:"),
    ])
    merged = ("<!-- page 1 -->\n\n## Note 1. Description of Business and Summary of Significant Accounting Policies "
              "Description of Business\n\nAcme Corp makes anvils.\n\n"
              "## Cost of Services Cost of services increased during the year primarily due to:\n")
    text, titles = split_run_in_titles(merged, pdf)
    assert text.splitlines()[2:5] == [
        "## Note 1. Description of Business and Summary of Significant Accounting Policies", "",
        "###### Description of Business"]
    # the heading keeps its '#'s and its first title; its first sentence becomes a paragraph
    assert text.splitlines()[-3:] == [
        "## Cost of Services", "", "Cost of services increased during the year primarily due to:"]
    assert [t.text for t in titles] == ["Description of Business"]  # the converter styles its own heading
    # a heading that does not open with a bold title of its page is left as it was
    other = "<!-- page 1 -->\n\n## Overview Description of Business\n"
    assert split_run_in_titles(other, pdf) == (other, [])
    inside = ("<!-- page 1 -->\n\n## Our results were good. Cost of Services Cost of services increased during the "
              "year primarily due to:\n")
    assert split_run_in_titles(inside, pdf) == (inside, [])

"""Trees of converted filings without bookmarks: the printed contents and the filing's labels."""

from __future__ import annotations

import json

import pytest

from proxypointer.eval.trees import score_tree
from proxypointer.lines import split_lines
from proxypointer.read.readers import with_pages
from proxypointer.tree.build import build_tree
from proxypointer.tree.contents import contents_entries, contents_outline
from proxypointer.tree.outline import load_outline
from proxypointer.tree.outlinetext import apply_outline
from proxypointer.tree.pages import page_map, stored_page_map


def _pages(n_pages: int, bodies: dict[int, list[str]]) -> str:
    """Converted markdown of ``n_pages`` pages, page p holding ``bodies[p]`` (else filler)."""
    out: list[str] = []
    for p in range(1, n_pages + 1):
        out += [f"<!-- page {p} -->", ""]
        for line in bodies.get(p, [f"Text of page {p}."]):
            out += [line, ""]
    return "\n".join(out) + "\n"


#: A 10-K as opendataloader writes many: a cover, a contents page whose folios are printed page
#: numbers (PDF page = printed + 2), Items written as list items, a wrapped sentence that starts
#: with "Item 8", a merged "PART I ITEM 1. BUSINESS" line, notes as list items.
FILING = _pages(12, {
    1: ["UNITED STATES SECURITIES AND EXCHANGE COMMISSION", "FORM 10-K"],
    2: ["TABLE OF CONTENTS", "- PART I", "- Item 1. Business 1", "- Item 1A. Risk Factors 3",
        "- Item 2. Properties 5", "PART II 6", "- Item 7. Management's Discussion and Analysis 6",
        "- Item 8. Financial Statements and Supplementary Data 8"],
    3: ["PART I ITEM 1. BUSINESS", "We make anvils for desert customers."],
    5: ["- Item 1A. Risk Factors", "Anvils fall. The statements we file are described in",
        "Item 8 of this Annual Report on Form 10-K.", "Roadrunners are fast."],
    7: ["ITEM 2. PROPERTIES We lease a warehouse in the desert."],
    8: ["PART II", "- Item 7. Management's Discussion and Analysis", "Revenue grew ten percent."],
    10: ["- Item 8. Financial Statements and Supplementary Data", "Consolidated Balance Sheets"],
    11: ["Notes to Consolidated Financial Statements", "- Note 1 — Summary of Significant Accounting Policies",
         "We follow GAAP.", "- Note 2 — Debt", "We owe money."],
})

GOLD = """\
outline:
  - title: PART I
    page: 3
    children:
      - {title: "Item 1. Business", page: 3}
      - {title: "Item 1A. Risk Factors", page: 5}
      - {title: "Item 2. Properties", page: 7}
  - title: PART II
    page: 8
    children:
      - {title: "Item 7. Management's Discussion and Analysis", page: 8}
      - title: "Item 8. Financial Statements and Supplementary Data"
        page: 10
        children:
          - title: "Notes to Consolidated Financial Statements"
            page: 11
            children:
              - {title: "Note 1 — Summary of Significant Accounting Policies", page: 11}
              - {title: "Note 2 — Debt", page: 11}
"""


def _read(md: str):
    """What the PDF reader does with a converted PDF without bookmarks (pdf.contents on)."""
    lines = split_lines(md)
    pm = page_map(lines)
    skip = frozenset(m - 1 for m in pm.marker_lines)
    outline = contents_outline(lines, pm.line_pages, skip)
    got = apply_outline(lines, pm.line_pages, outline, pm.marker_lines, insert_missing=False, page_slack=1,
                        line_titles=True)
    text, line_pages = with_pages("\n".join(got.lines) + "\n", page_map(got.lines))
    return outline, got, text, stored_page_map(line_pages, split_lines(text))


def test_contents_lines_are_found_with_their_printed_pages():
    lines = split_lines(FILING)
    pm = page_map(lines)
    (block,) = contents_entries(lines, pm.line_pages, frozenset(m - 1 for m in pm.marker_lines))
    assert [(e.title, e.printed) for e in block][:3] == [("PART I", 1), ("Item 1. Business", 1),
                                                         ("Item 1A. Risk Factors", 3)]
    assert all(e.pdf_page == 2 for e in block)


def test_contents_entries_get_pdf_pages_from_the_offset_and_filing_levels():
    outline, got, _, _ = _read(FILING)
    assert [(e.title, e.page, e.level) for e in outline.entries] == [
        ("PART I", 3, 1), ("Item 1. Business", 3, 2), ("Item 1A. Risk Factors", 5, 2),
        ("Item 2. Properties", 7, 2), ("PART II", 8, 1),
        ("Item 7. Management's Discussion and Analysis", 8, 2),
        ("Item 8. Financial Statements and Supplementary Data", 10, 2),
    ]
    assert got.unplaced == ()


def test_filing_tree_from_contents_list_items_and_labels(tmp_path):
    _, _, text, pages = _read(FILING)
    tree = build_tree(text, "acme-10k", paged=True)
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    score = score_tree(tree, pages.page_of, load_outline(gold))
    assert score.missing() == []
    assert score.misnested() == []
    titles = [n.title for n in tree.nodes]
    # the wrapped sentence stays text of Risk Factors
    assert not any(t.startswith("Item 8 of this") for t in titles)
    risk = next(n for n in tree.nodes if n.title == "Item 1A. Risk Factors")
    assert "Item 8 of this Annual Report" in "\n".join(split_lines(text)[risk.start_line - 1: risk.end_line])
    # the merged line gives PART I and, under it, Item 1
    item1 = next(n for n in tree.nodes if n.title == "Item 1. Business")
    assert tree.title_path(item1.node_id)[-2:] == ("PART I", "Item 1. Business")
    # notes written as list items are headings under the notes heading
    debt = next(n for n in tree.nodes if n.title.startswith("Note 2"))
    assert "Notes to Consolidated Financial Statements" in tree.title_path(debt.node_id)


def test_without_contents_the_labels_alone_still_make_items_and_notes_headings():
    md = FILING.replace("TABLE OF CONTENTS", "").split("<!-- page 3 -->", 1)[1]
    tree = build_tree("<!-- page 3 -->" + md, "acme", paged=True)
    titles = [n.title for n in tree.nodes]
    assert "Item 1A. Risk Factors" in titles and "Note 2 — Debt" in titles
    assert not any(t.startswith("Item 8 of this") for t in titles)


@pytest.mark.parametrize("line", [
    "Revenue 1,234 2,345",  # a table row: amounts
    "Net sales grew 12% in 2023",
])
def test_table_rows_are_no_contents(line):
    md = _pages(3, {1: [line] * 6})
    lines = split_lines(md)
    assert contents_entries(lines, page_map(lines).line_pages) == []


def test_tree_gold_on_the_command_line(tmp_path, capsys):
    from proxypointer.cli import main

    doc = tmp_path / "acme-10k.md"  # converted markdown with page markers, read as such
    doc.write_text(FILING, encoding="utf-8")
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    assert main(["tree", str(doc), "--gold", str(gold)]) == 0
    out = capsys.readouterr().out
    # markdown is never rewritten: the contents' Items are found only where labels make them
    # headings; the merged "PART I ITEM 1. BUSINESS" line is one heading, PART I
    assert "against" in out and "recall" in out and "missing     p. 3: Item 1. Business" in out
    assert main(["tree", str(doc), "--gold", str(gold), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["entries"] == 10 and got["found"] == got["entries"] - len(got["missing"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("outline:\n  - {title: X}\n", encoding="utf-8")
    assert main(["tree", str(doc), "--gold", str(bad)]) == 1
    assert "bad.yaml" in capsys.readouterr().err


def test_contents_part_lines_are_no_headings_and_a_merged_entry_gives_two():
    _, _, text, pages = _read(FILING)
    tree = build_tree(text, "acme-10k", paged=True)
    on_contents_page = [n.title for n in tree.nodes if n.kind == "heading" and pages.page_of(n.start_line) == 2]
    assert not [t for t in on_contents_page if t.upper().startswith("PART")]
    md = _pages(8, {2: ["PART I Item 1. Business 3", "Item 1A. Risk Factors 4", "Item 2. Properties 5",
                        "PART II Item 5. Market 6", "Item 7. Results 7"]})
    lines = split_lines(md)
    (block,) = contents_entries(lines, page_map(lines).line_pages)
    assert [(e.title, e.printed) for e in block][:2] == [("PART I", 3), ("Item 1. Business", 3)]
    assert ("PART II", 6) in [(e.title, e.printed) for e in block]


def test_tree_gold_bookmarks_needs_a_pdf_and_an_empty_gold_is_refused(tmp_path, capsys):
    from proxypointer.cli import main

    doc = tmp_path / "acme-10k.md"
    doc.write_text(FILING, encoding="utf-8")
    assert main(["tree", str(doc), "--gold", "bookmarks"]) == 1
    assert "give a PDF" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    assert main(["tree", str(doc), "--gold", str(empty)]) == 1
    assert "no outline entries" in capsys.readouterr().err


#: A bank's 10-Q as opendataloader writes it: its contents run entries together in paragraphs
#: and wrap one over two lines; "Item 1" (the statements, printed from page 9 on) is listed
#: before "Item 2" (MD&A, pages 3-8), and the body prints neither Item nor Part I, only the
#: sections the contents list under them. PDF page = printed page.
TEN_Q = _pages(11, {
    1: ["FORM 10-Q", "Quarterly report of Acme Bank"],
    2: ["FORM 10-Q TABLE OF CONTENTS", "Part I – Financial information Page",
        "- Item 1. Financial Statements. Consolidated Financial Statements – Acme Bank:",
        "Consolidated statements of income (unaudited) for the three months ended March 31, 2021 and 2020 9 "
        "Consolidated statements of comprehensive income (unaudited) 9 Consolidated balance sheets "
        "(unaudited) at March 31, 2021",
        "and December 31, 2020 10 Consolidated statements of changes in stockholders’ equity (unaudited) 10",
        "Consolidated statements of cash flows (unaudited) 10 Notes to Consolidated Financial Statements "
        "(unaudited) 11",
        "- Item 2. Management’s Discussion and Analysis of Financial Condition and Results of Operations. "
        "Executive Overview 3 Consolidated Results of Operations 4 Capital Risk Management 5 "
        "Liquidity Risk Management 6 Credit Portfolio 7",
        "Market Risk Management 8",
        "Part II – Other information Item 1. Legal Proceedings. 11", "- Item 1A. Risk Factors. 11"],
    3: ["EXECUTIVE OVERVIEW", "Net income rose."],
    4: ["CONSOLIDATED RESULTS OF OPERATIONS", "Revenue rose."],
    5: ["Capital Risk Management", "Ratios held."],
    6: ["Liquidity Risk Management", "Deposits grew."],
    7: ["Credit Portfolio", "Charge-offs fell."],
    8: ["Market Risk Management", "VaR was low."],
    9: ["Consolidated statements of income (unaudited)", "Revenue 1,234 1,100",
        "Consolidated statements of comprehensive income (unaudited)", "Net income 1,000 900"],
    10: ["Consolidated balance sheets (unaudited)", "Assets 9,999 9,000",
         "Consolidated statements of changes in stockholders’ equity (unaudited)", "Equity 5,000 4,000",
         "Consolidated statements of cash flows (unaudited)", "Cash 2,000 1,000"],
    11: ["Notes to Consolidated Financial Statements (unaudited)", "Note 1 – Basis of presentation",
         "Part II – Other Information Item 1. Legal Proceedings. Refer to Note 1.",
         "Item 1A. Risk Factors. Nothing new."],
})


def test_a_10q_contents_run_together_and_wrapped_gives_parts_items_and_sections():
    outline, got, text, pages = _read(TEN_Q)
    titles = [e.title for e in outline.entries]
    assert titles[:3] == ["Part I – Financial information", "Item 1. Financial Statements",
                          "Consolidated Financial Statements – Acme Bank"]
    # an entry wrapped onto the next line is one entry, with the page printed after its end
    assert ("Consolidated balance sheets (unaudited) at March 31, 2021 and December 31, 2020", 10) in [
        (e.title, e.page) for e in outline.entries]
    # the item's title and its first section, run together, are two entries; so are part and item
    assert "Item 2. Management’s Discussion and Analysis of Financial Condition and Results of Operations" in titles
    assert ("Executive Overview", 3) in [(e.title, e.page) for e in outline.entries]
    assert "Part II – Other information" in titles and "Item 1. Legal Proceedings" in titles
    # Part I starts where its first entry does (MD&A, page 3), not on the page printed beside Item 1
    assert next(e.page for e in outline.entries if e.title.startswith("Part I ")) == 3
    tree = build_tree(text, "acme-10q", paged=True)
    path = {n.title.split(" at ")[0]: tree.title_path(n.node_id) for n in tree.nodes}
    # Item 2 and Part I are printed only in the contents: written before their first section
    assert path["Capital Risk Management"][-3:] == (
        "Part I – Financial information",
        "Item 2. Management’s Discussion and Analysis of Financial Condition and Results of Operations",
        "Capital Risk Management")
    assert path["Consolidated balance sheets (unaudited)"][:2] == ("Part I – Financial information",
                                                                  "Item 1. Financial Statements")
    item2 = next(n for n in tree.nodes if n.title.startswith("Item 2."))
    assert pages.page_of(item2.start_line) == 3
    # no line of the contents page is a heading of its own
    assert not [n.title for n in tree.nodes if n.kind == "heading" and pages.page_of(n.start_line) == 2
                and "CONTENTS" not in n.title]


def test_a_running_footer_is_no_table_of_contents():
    md = _pages(12, {p: [f"Text of page {p}.", f"2021 FORM 10-K {p + 40}"] for p in range(1, 13)})
    lines = split_lines(md)
    assert contents_entries(lines, page_map(lines).line_pages) == []
    assert contents_outline(lines, page_map(lines).line_pages).entries == ()


@pytest.mark.parametrize("line", [
    "62 56 Interest on lease liabilities 68 124 114 Short-term lease costs 27",  # a table's cells
    "to 4 and 5 Represent loans where credit risk is minimal 6",  # words of a table, lower case
    "The sections titled “Proposal 1 Election of Directors,” “Corporate Governance and the Board of "
    "Directors” and “Delinquent Section 16(a) Reports” in our Definitive Proxy Statement are incorporated "
    "herein by reference.",  # a sentence that holds a small number
])
def test_table_cells_and_sentences_with_numbers_are_no_contents(line):
    md = _pages(3, {1: ["- Item 9B. Other Information None.", "PART III", "- Item 10. Directors", line] * 3})
    lines = split_lines(md)
    assert contents_entries(lines, page_map(lines).line_pages) == []
    assert contents_entries(lines) == []


def test_contents_lines_are_no_headings_in_stored_markdown_too():
    """Converter markdown (stored text, no pages known): lines of the contents stay text."""
    md = FILING.replace("- Item 8. Financial Statements and Supplementary Data 8",
                        "- Item 8. Financial Statements and Supplementary Data 8\n\n"
                        "- Item 16. Form 10-K Summary 9 Signatures 9 Certifications")
    tree = build_tree(md, "acme-10k")
    pages = page_map(split_lines(md))
    on_contents_page = [n.title for n in tree.nodes if n.kind == "heading" and pages.page_of(n.start_line) == 2]
    assert on_contents_page in ([], ["TABLE OF CONTENTS"])
    assert "Item 16. Form 10-K Summary 9 Signatures 9 Certifications" not in [n.title for n in tree.nodes]


def test_an_index_of_statements_nests_under_the_item_before_it_and_later_items_climb_out():
    """The only printed contents is Item 8's index of statements and notes (no parts, no items)."""
    md = _pages(9, {
        1: ["PART II", "- Item 7. Results", "Revenue rose."],
        2: ["- Item 8. Financial Statements", "Index to Financial Statements",
            "Consolidated Statements of Income 3", "Consolidated Balance Sheets 4",
            "Consolidated Statements of Cash Flows 5",
            "Notes to Consolidated Financial Statements 6", "1. Summary of Significant Accounting Policies 6",
            "2. Debt 7"],
        3: ["Consolidated Statements of Income", "Revenue 1,234"],
        4: ["Consolidated Balance Sheets", "Assets 9,999"],
        5: ["Consolidated Statements of Cash Flows", "Cash 5,555"],
        6: ["Notes to Consolidated Financial Statements", "1. Summary of Significant Accounting Policies",
            "We follow GAAP."],
        7: ["2. Debt", "We owe money."],
        8: ["- Item 9A. Controls and Procedures", "They work."],
        9: ["PART III", "- Item 10. Directors", "See the proxy."],
    })
    _, _, text, _ = _read(md)
    tree = build_tree(text, "acme-10k", paged=True)
    path = {n.title: tree.title_path(n.node_id) for n in tree.nodes}
    # the index's own heading may stand between: the statements and notes are inside Item 8
    assert path["Consolidated Balance Sheets"][:2] == ("PART II", "Item 8. Financial Statements")
    assert path["2. Debt"][:2] == ("PART II", "Item 8. Financial Statements")
    assert path["2. Debt"][-2:] == ("Notes to Consolidated Financial Statements", "2. Debt")
    assert path["Item 9A. Controls and Procedures"] == ("PART II", "Item 9A. Controls and Procedures")
    assert path["Item 10. Directors"] == ("PART III", "Item 10. Directors")


def test_a_heading_placed_from_the_contents_keeps_the_bodys_title_and_label():
    """The contents print "7 Management's Discussion"; the body's "Item 7. MANAGEMENT'S ..." keeps its label."""
    md = _pages(9, {
        2: ["TABLE OF CONTENTS", "PART I", "1 Business 3", "1A Risk Factors 4", "2 Properties 5",
            "PART II", "7 Management’s Discussion and Analysis 6", "8 Financial Statements 8"],
        3: ["PART I", "Item 1. BUSINESS", "We sell soap."],
        4: ["Item 1A. RISK FACTORS", "Soap may slip."],
        5: ["Item 2. PROPERTIES", "A factory."],
        6: ["PART II", "Item 7. MANAGEMENT’S DISCUSSION AND ANALYSIS", "Sales grew."],
        8: ["Item 8. FINANCIAL STATEMENTS", "Consolidated Balance Sheets"],
    })
    _, got, text, _ = _read(md)
    assert got.unplaced == ()
    tree = build_tree(text, "soap-10k", paged=True)
    titles = [n.title for n in tree.nodes if n.kind == "heading"]
    assert "Item 7. MANAGEMENT’S DISCUSSION AND ANALYSIS" in titles
    assert "7 Management’s Discussion and Analysis" not in titles
    item7 = next(n for n in tree.nodes if n.title.startswith("Item 7."))
    assert tree.title_path(item7.node_id) == ("PART II", "Item 7. MANAGEMENT’S DISCUSSION AND ANALYSIS")


def test_the_pdf_reader_names_the_contents_entries_it_could_not_place():
    """What `tree --check` shows as note[unplaced-contents]: the entries, with their pages."""
    from proxypointer.config import PDFConfig
    from proxypointer.read.readers import PDFReader

    md = FILING.replace("- Item 8. Financial Statements and Supplementary Data 8",
                        "- Item 8. Financial Statements and Supplementary Data 8\n\n- Item 9A. Controls 9")
    text, _, warnings = PDFReader(PDFConfig(bookmarks=False)).outlined(md, path="acme-10k.pdf")
    assert len(warnings) == 1
    assert warnings[0].startswith("acme-10k.pdf: 1 of ")
    assert "'Item 9A. Controls' (p. 11)" in warnings[0]
    assert "Item 9A. Controls {.outline}" not in text  # never invented on its page
    assert "## Item 7. Management's Discussion and Analysis {.outline}" in text


#: A report whose contents page nests its entries by indentation only (no numbering, no labels).
INDENTED = _pages(7, {
    1: ["ANNUAL REPORT 2023"],
    2: ["CONTENTS", "Overview 3", "Risk Management 4", "Capital Risk 5", "Liquidity Risk 6", "Outlook 7"],
    3: ["Overview", "The year went well."],
    4: ["Risk Management", "We manage risks."],
    5: ["Capital Risk", "Ratios held."],
    6: ["Liquidity Risk", "Deposits grew."],
    7: ["Outlook", "Next year looks fine."],
})


def _contents_pdf(path, starts: dict[str, float]):
    """A 7-page PDF whose page 2 prints the contents of INDENTED, each entry at its x (points)."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)
    for page in range(1, 8):
        c.setFont("Helvetica", 10)
        if page == 2:
            y = 700
            for title, x in starts.items():
                c.drawString(x, y, title)
                c.drawString(500, y, str(list(starts).index(title) + 2) if title != "CONTENTS" else "")
                y -= 14
        else:
            c.drawString(72, 700, f"Page {page}")
        c.showPage()
    c.save()
    return path.read_bytes()


def _tree_of(md: str, data: bytes | None):
    from proxypointer.config import PDFConfig
    from proxypointer.read.readers import PDFReader

    text, _, _ = PDFReader(PDFConfig(bookmarks=False)).outlined(md, data=data, path="report.pdf" if data else "")
    tree = build_tree(text, "report", paged=True)
    return {n.title: tree.title_path(n.node_id) for n in tree.nodes if n.kind == "heading"}


def test_printed_indents_nest_the_contents_entries(tmp_path):
    data = _contents_pdf(tmp_path / "report.pdf", {"CONTENTS": 72, "Overview": 72, "Risk Management": 72,
                                                   "Capital Risk": 90, "Liquidity Risk": 90, "Outlook": 72})
    paths = _tree_of(INDENTED, data)
    assert paths["Capital Risk"] == ("Risk Management", "Capital Risk")
    assert paths["Liquidity Risk"] == ("Risk Management", "Liquidity Risk")
    assert paths["Outlook"] == ("Outlook",)  # back out at the first indent
    # without the PDF the same words give a flat list
    assert _tree_of(INDENTED, None)["Capital Risk"] == ("Capital Risk",)


@pytest.mark.parametrize("starts", [
    {"CONTENTS": 72, "Overview": 72, "Risk Management": 72, "Capital Risk": 72, "Liquidity Risk": 72, "Outlook": 72},
    # centred entries: every line starts elsewhere; that is no indentation
    {"CONTENTS": 250, "Overview": 280, "Risk Management": 262, "Capital Risk": 275, "Liquidity Risk": 268,
     "Outlook": 285},
    # the first entry indented deeper than the rest: not a nesting the levels can follow
    {"CONTENTS": 72, "Overview": 90, "Risk Management": 72, "Capital Risk": 90, "Liquidity Risk": 90, "Outlook": 72},
])
def test_even_centred_or_odd_indents_leave_the_contents_flat(tmp_path, starts):
    paths = _tree_of(INDENTED, _contents_pdf(tmp_path / "report.pdf", starts))
    assert all(len(paths[t]) == 1 for t in ("Overview", "Risk Management", "Capital Risk", "Outlook"))


def test_line_starts_are_read_per_printed_line(tmp_path):
    from proxypointer.tree.indents import pdf_line_starts

    data = _contents_pdf(tmp_path / "report.pdf", {"CONTENTS": 72, "Overview": 72, "Capital Risk": 90})
    got = pdf_line_starts("report.pdf", data, [2, 99])
    assert set(got) == {2}  # a page outside the file is left out
    lines = got[2]
    assert [(round(ln.x), ln.text) for ln in lines] == [(72, "CONTENTS"), (72, "Overview 3"), (90, "Capital Risk 4")]
    assert pdf_line_starts("broken.pdf", b"not a pdf", [1]) == {}

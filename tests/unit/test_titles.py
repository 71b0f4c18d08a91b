"""Title rules: display titles, normalised forms, noise matching, numbering, filing labels, rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxypointer.chunk.chunker import chunk_document
from proxypointer.config import DEFAULT_NOISE_TITLES, ChunkingConfig
from proxypointer.embed.tokenizer import load_tokenizer
from proxypointer.read.readers import read_document
from proxypointer.tree.build import build_tree, find_headings
from proxypointer.tree.headings import label_title
from proxypointer.tree.titles import (
    arabic_to_roman,
    ends_in_folio,
    exhibit_label,
    filing_label,
    heading_title,
    html_title,
    is_noise_title,
    is_row_or_furniture,
    is_title_line,
    normalise_label,
    normalise_title,
    numbered_line_depth,
    numbering_depth,
    plain_title,
    roman_to_arabic,
    statement_kind,
    strip_attribute_list,
    title_words,
)


def _case(cases_dir: Path, prefix: str) -> Path:
    (folder,) = [p for p in cases_dir.iterdir() if p.name.startswith(prefix)]
    return folder


# -- 40 attribute lists --------------------------------------------------------------------------
def test_case_40_tree_titles_and_lines(cases_dir):
    text = read_document(_case(cases_dir, "40-") / "input.md")
    tree = build_tree(text, "input")
    assert [(n.title, n.level, n.start_line, n.end_line) for n in tree.nodes] == [
        ("Installation Guide", 1, 1, 21),
        ("Requirements", 2, 5, 8),
        ("Table of Contents", 2, 9, 13),
        ("Steps", 2, 14, 17),
        ("References", 2, 18, 21),
    ]
    assert tree.title == "Installation Guide"


def test_case_40_chunks_and_breadcrumb(cases_dir):
    text = read_document(_case(cases_dir, "40-") / "input.md")
    tree = build_tree(text, "input")
    chunks = chunk_document(tree, text, load_tokenizer(), ChunkingConfig())
    assert [c.title for c in chunks] == ["Installation Guide", "Requirements", "Steps"]
    requirements = next(c for c in chunks if c.title == "Requirements")
    assert requirements.embed_text.startswith("[Installation Guide > Requirements]")


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("## References {#refs}", "References"),
        ("## Requirements {: #reqs .important }", "Requirements"),
        ("## Steps { #steps }", "Steps"),
        ("## Setup {.unnumbered}", "Setup"),
        ("## Setup {#id .c key=v}", "Setup"),
        ("## Setup {-}", "Setup"),
        ("## Setup {#a} {.b}", "Setup"),
        ("## Setup {#id} ##", "Setup"),  # closing sequence after the list
        ("Setext title {#s}\n===", "Setext title"),
        ("## Use {braces} here", "Use {braces} here"),
        ("## Use {braces}", "Use {braces}"),  # content does not start with # . :
        ("## Set {x: 1}", "Set {x: 1}"),
        ("## Object {}", "Object {}"),
    ],
)
def test_attribute_list_variants(line, title):
    assert [h.title for h in find_headings(line + "\n")[0]] == [title]


def test_heading_of_only_an_attribute_list_is_not_a_section():
    assert find_headings("# A\n\n## {#only}\n\ntext\n")[0][0].title == "A"
    assert len(find_headings("# A\n\n## {#only}\n\ntext\n")[0]) == 1


@pytest.mark.parametrize(
    "title",
    ["References {#refs}", "**References** {.x}", "9. References {: #r}", "TABLE OF CONTENTS {#toc}",
     "Contents {-}", "R&eacute;f&eacute;rences", "References:"],
)
def test_noise_matches_with_attribute_lists_markup_and_numbering(title):
    noise = (*DEFAULT_NOISE_TITLES, "références")
    assert is_noise_title(title, noise)


@pytest.mark.parametrize("title", ["References and notes", "Contents of the box", "Referenced work"])
def test_noise_never_matches_a_substring(title):
    assert not is_noise_title(title, DEFAULT_NOISE_TITLES)


# -- display and comparison forms --------------------------------------------------------------------
def test_forms():
    assert heading_title("  line one\n line two  ") == "line one line two"
    assert heading_title("**Bold** {#b}") == "**Bold**"  # markup kept in display titles
    assert html_title("A &amp; <em>B</em>\n c") == "A & B c"
    assert plain_title("**R&amp;D** [costs](#c) `x` <br/> {#rd}") == "R&D costs x"
    assert normalise_title("  3.2  Table  of   Contents ") == "table of contents"
    assert normalise_title("IV. **Annex**:") == "annex"
    assert title_words("3.2 Data *collection*: setup") == "data collection setup"
    assert title_words("A Study of X") == "a study of x"  # a letter label is kept
    assert strip_attribute_list("{#only}") == ""


# -- numbering --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("title", "depth"),
    [("3 Results", 1), ("3.2.1 Layout", 3), ("4.1. Setup", 2), ("Item 7A Risk", 1), ("Part II", 1),
     ("Note 14 - Debt", 1), ("Article IV", 1), ("Section 2.03 Fees", 2), ("Annex 2.1", 2),
     ("Appendix A.1 Proofs", 2), ("Results", 0), ("2023 Annual report", 0),
     # a quantity is no numbering (PepsiCo's quarterly release: "12 Weeks Ended" over each table)
     ("12 Weeks Ended", 0), ("3 Months Ended March 31,", 0), ("5 Years", 0), ("12. Weeks of data", 1)],
)
def test_numbering_depth(title, depth):
    assert numbering_depth(title) == depth


@pytest.mark.parametrize(
    ("line", "depth"),
    [("1.1 Materials", 2), ("2.3.1 Results", 3), ("2023 Annual report", 0), ("1.2.3 4.5", 0),
     ("3 Things are checked yearly.", 0), ("5 one two three four five six seven eight", 0)],
)
def test_numbered_line_depth(line, depth):
    assert numbered_line_depth(line) == depth


def test_labels_and_roman_numerals():
    assert (normalise_label("2.04"), normalise_label("A-1"), normalise_label("iv")) == ("2.4", "A.1", "IV")
    assert [roman_to_arabic(r) for r in ("IV", "XII", "IIII", "VX", "")] == ["4", "12", "", "", ""]
    assert [arabic_to_roman(a) for a in ("4", "199", "0", "200", "x")] == ["IV", "CXCIX", "", "", ""]


@pytest.mark.parametrize(
    ("title", "label"),
    [
        ("PART II", ("part", "II")),
        ("Part I – Financial information", ("part", "I")),
        ("PART I Item 1. Business General", ("part", "I")),
        ("ITEM 7. MANAGEMENT'S DISCUSSION", ("item", "7")),
        ("Item 7A. Quantitative and Qualitative", ("item", "7A")),
        ("ITEM 4(a). Information about our Executive Officers", ("item", "4(A)")),
        ("Note 14 – Debt", ("note", "14")),
        ("NOTE 5 — Accrued Liabilities", ("note", "5")),
        ("Note 1. Description of Business", ("note", "1")),
        ("Notes to Consolidated Financial Statements", ("notes", "")),
        ("Notes to the Condensed Consolidated Financial Statements (Unaudited)", ("notes", "")),
        # after the company's name, as a filing prints it (statement titles have it too)
        ("COSTCO WHOLESALE CORPORATION NOTES TO CONSOLIDATED FINANCIAL STATEMENTS (amounts in millions)",
         ("notes", "")),
        ("Corning Incorporated and Subsidiary Companies Notes to Consolidated Financial Statements", ("notes", "")),
        ("Johnson & Johnson and Subsidiaries Notes to Consolidated Financial Statements", ("notes", "")),
        # sentences that mention the notes are no heading of them
        ("The Notes to Consolidated Financial Statements (unaudited) are an integral part of these statements.",
         None),
        ("See Notes to Consolidated Financial Statements", None),
        ("The accompanying notes to consolidated financial statements are an integral part", None),
        ("NIKE, Inc. Consolidated Statements of Income", ("statements", "")),
        ("Consolidated Condensed Balance Sheets", ("statements", "")),
        ("14. Debt", ("numbered", "14")),
        ("2021 Results", None),
        ("Part II – Other information Item 1. Legal Proceedings. 191", None),  # a contents line
        ("ITEM 7. Management's Discussion 25", None),
        ("Particulars", None),
        ("Part Information", None),
        ("Note regarding forward-looking statements", None),
        ("Items affecting comparability", None),
    ],
)
def test_filing_label(title, label):
    assert filing_label(title) == label


# -- rows and page furniture: examples from bench/financebench-dev-md ---------------------------
@pytest.mark.parametrize(
    "title",
    [
        "4,867,457 $ 133.54", "RETURN ON INVESTED CAPITAL 48.8 % 21.5 %", "2021 FORM 10-K 30", "PAGE", "Page 12",
        "44", "2018 2017 2016", "(415) 375-3176", "TOTAL $ 400 $ 240 $ 160 $ 190 $ 184 $ 6", "Total $ 326",
        "Total $ — $ 790 $ — $ 790", "Net cash used in investing activities (1,419) (1,310) (1,891)",
        "Total Liabilities and Equity $ 30,154 $ 30,775", "SIGNATURES 115",
        "SIGNATURES ......................... 111",
        "REPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM 110 GLOSSARY 114",
        "Part I – Financial information Page", "4.3",
    ],
)
def test_rows_and_furniture(title):
    assert is_row_or_furniture(title)


@pytest.mark.parametrize(
    "title",
    [
        "Fiscal 2018 Compared to Fiscal 2017", "$1.5 Billion Share Repurchase Program", "Exhibit 10.13.23",
        "Item 6. [Reserved]", "12. Debt", "NOTE 6 - ACQUISITIONS Fiscal 2016", "Commentary - 2017 compared to 2016",
        "Outlook for 2019", "Level 3 Assets", "ITEM 7A. Quantitative and Qualitative Disclosures about Market Risk",
        "Year Ended December 31, 2015 to 2016 2014 to 2015", "COVID-19 Update", "Mark G. Parker Andrew Campion",
        "2021 Results", "Exhibit 32", "Tier 1 Capital",
    ],
)
def test_section_titles_are_not_rows(title):
    assert not is_row_or_furniture(title)


# -- title-like plain lines (tree.title_lines) ---------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "SQUARE, INC. CONSOLIDATED BALANCE SHEETS (In thousands, except share and per share data)",
        "Consolidated Statements of Cash Flows (in millions)",
        "CONSOLIDATED STATEMENTS OF OPERATIONS",
        "Risks Related to Ownership of Our Common Stock",
        "Notes to Consolidated Financial Statements",
        "ARTICLE VI. Distribution Options",
        "Derivatives and Hedging: Fair Value Hedging",
        "Item 1. Business Overview",
        "2021 Target Allocation",  # one year is allowed
        "  Critical Audit Matters  ",
    ],
)
def test_title_lines(line):
    assert is_title_line(line)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("This is an ordinary sentence about the results.", "a sentence"),
        ("The company reported strong results in all of its segments this year", "lower case words"),
        ("Total current assets 7,761,629 3,219,801", "a table row"),
        ("Basic $ (0.50) $ (1.24) $ (1.08) Diluted $ (0.50) $ (1.24)", "a row of figures in brackets"),
        ("December 31, 2020 2019", "dates"),
        ("- Consolidated Balance Sheets", "a list item"),
        ("> Consolidated Balance Sheets", "a quote"),
        ("| Consolidated | Balance Sheets |", "a table"),
        ("<b>Consolidated Balance Sheets</b>", "HTML"),
        ("**Consolidated Balance Sheets**", "bold (the bold_headings mode's)"),
        ("# Consolidated Balance Sheets", "already a heading"),
        ("PAGE", "page furniture"),
        ("2021 FORM 10-K 30", "a running header"),
        ("*Results*", "a one-word emphasis line"),
        ("Results", "one word"),
        ("Assets Current assets:", "a lead-in ending in a colon"),
        ("Organic % Change, Non-", "a line cut in two"),
        ("Total Number of", "ends in a preposition"),
        ("Commitment Expiration By Period Total", "a table header ending in Total"),
        ("years Total Total", "starts lower case, repeated column"),
        ("Rank Share Rank Share", "repeated columns"),
        ("/s/ Jack Dorsey Jack Dorsey Chief Executive Officer", "a signature"),
        ("By: / S / LARRY J. MERLO Chief Executive", "a signature with spaces"),
        ("Participant: [ _____________ ] Employee ID", "a form line"),
        ("FHLB: Federal Home Loan Bank", "a glossary entry"),
        ("Input Sentence: [wtt(It), wtt(might)]", "brackets"),
        ("L_{w} = Sum Over Words", "math"),
        ("(1) Amounts Reclassified From Other Income", "a footnote"),
        ("• Continuing Care Rx, LLC (Pennsylvania)", "a bullet written as text"),
        ("Consolidated Balance Sheets Consolidated Statements of Operations Consolidated Statements of "
         "Cash Flows Consolidated Statements of Equity", "too many words"),
        ("", "empty"),
    ],
)
def test_not_title_lines(line, why):
    assert not is_title_line(line), why


# -- financial statement titles ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "title, kind",
    [
        ("Consolidated Balance Sheets", "balance_sheet"),
        ("NIKE, Inc. Consolidated Statements of Income", "income"),
        ("CONSOLIDATED STATEMENTS OF OPERATIONS (In thousands, except per share data)", "income"),
        ("Consolidated Statements of Earnings (in millions, except per share data)", "income"),
        ("Consolidated Statements of Operations and Comprehensive Loss", "income"),
        ("Consolidated Statements of Income Corning Incorporated and Subsidiary Companies", "income"),
        ("Consolidated Statements of Comprehensive Income (Loss)", "comprehensive_income"),
        ("JPMorgan Chase &amp; Co. Consolidated statements of cash flows (unaudited)", "cash_flows"),
        ("American Water Works Company, Inc. and Subsidiary Companies Consolidated Balance Sheets (In millions)",
         "balance_sheet"),
        ("Group statement of financial position", "balance_sheet"),
        ("Condensed Consolidated Balance Sheet (in millions except per share amounts)", "balance_sheet"),
        ("CONSOLIDATED STATEMENTS OF STOCKHOLDERS' EQUITY (In thousands)", "equity"),
        ("Statement of Changes in Equity", "equity"),
        ("**Consolidated Balance Sheets**", "balance_sheet"),
    ],
)
def test_statement_kind_reads_the_titles_of_financial_statements(title, kind):
    assert statement_kind(title) == kind


@pytest.mark.parametrize(
    "title",
    [
        "Off-Balance Sheet Arrangements",
        "Key Balance Sheet Data",
        "Selected Consolidated balance sheets data",
        "Consolidated balance sheets analysis",
        "CONSOLIDATED BALANCE SHEETS AND CASH FLOWS ANALYSIS",
        "Amounts recognized in the consolidated balance sheets consist of",
        "Notes to Consolidated Financial Statements",
        "4. Balance Sheet Components",
        "BALANCE SHEET LOCATION",
        "Liquidity and Cash Flows",
        "Selected income statement and balance sheet data",
        "Consolidated Balance Sheets 45",  # a line of the contents, with its page
        "Review of Consolidated Balance Sheets",
        "Discussion of Consolidated Statements of Cash Flows",
        "Statement of Income Taxes",
        "Condensed Consolidating Balance Sheets",  # a guarantor schedule, not the statement
    ],
)
def test_statement_kind_leaves_titles_that_only_mention_a_statement(title):
    assert statement_kind(title) is None


@pytest.mark.parametrize(
    "title, kind",
    [
        ("Consolidated Balance Sheets as of December 31, 2022 and 2021", "balance_sheet"),
        ("Consolidated Statements of Operations for the years ended December 31, 2022, 2021 and 2020", "income"),
        ("Condensed Consolidated Statements of Cash Flows for the three months ended March 31", "cash_flows"),
        ("Consolidated balance sheets at June 30, 2022", "balance_sheet"),
        ("Consolidated balance sheets as discussed below", None),
        ("Amounts recognized in the consolidated balance sheets consist of", None),
    ],
)
def test_a_heading_may_give_its_statements_period_in_lower_case_a_line_of_text_may_not(title, kind):
    assert statement_kind(title, heading=True) == kind
    assert statement_kind(title) is None  # as a line of text it may be a sentence


@pytest.mark.parametrize(("line", "folio"), [
    ("Item 7. Management's Discussion and Analysis 29", True),
    ("ARTICLE XI - SIGNATURE/AUTHENTICATION 40", True),
    ("Note 14", False),  # a label and its number: a title ("NOTE 14" over "Debt"), no contents line
    ("ITEM 7", False),
    ("Item 1A", False),
])
def test_ends_in_folio_tells_contents_lines_from_bare_labels(line, folio):
    assert ends_in_folio(line) is folio
    if not folio:
        assert label_title(line) == line


@pytest.mark.parametrize(
    ("title", "label"),
    [
        ("EXHIBIT 10.36", "10.36"),
        ("Exhibit 13.1 Management’s Discussion and Analysis of Financial Condition and Results of Operations", "13.1"),
        ("Exhibit 99.1", "99.1"),
        ("**Exhibit 32**", "32"),
        ("Exhibit No. 4.2", "4.2"),
        ("EXHIBIT", None),  # an exhibit index's column
        ("Exhibit 10.1 Credit Agreement 45", None),  # a contents line
        ("Exhibit 10.1 to our Current Report on Form 8-K was filed with the Commission on May 5.", None),
        ("Exhibits and Financial Statement Schedules", None),
    ],
)
def test_exhibit_label(title, label):
    assert exhibit_label(title) == label

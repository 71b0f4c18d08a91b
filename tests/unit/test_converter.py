"""Converter rules of the tree: when they run (tree.converter_output), title lines, flattening."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from proxypointer.config import TreeConfig, config_from_dict
from proxypointer.errors import ConfigError
from proxypointer.lines import slice_lines, split_lines
from proxypointer.tree.build import build_tree, explain_headings, find_headings
from proxypointer.tree.headings import detect_converter_output, flatten_levels, title_line_candidates
from proxypointer.tree.markdown import Heading, parse_blocks

ON = TreeConfig(converter_output="on")
OFF = TreeConfig(converter_output="off")


def _promoted(text: str, config: TreeConfig = ON) -> list[str]:
    return [h.title for h in explain_headings(text, config)[2].promoted]


def _candidates(text: str) -> list[int]:
    """1-based lines the title_lines rule takes, page markers and comments counted as blank."""
    lines = split_lines(text)
    skip = frozenset(i for i, line in enumerate(lines) if line.startswith("<!--"))
    return [i + 1 for i in title_line_candidates(parse_blocks(text), lines, 0, skip)]


# -- a converted filing, small -------------------------------------------------------------------
FILING = """\
<!-- page 84 -->

###### 84

Our auditor's report ends here.

<!-- page 85 -->

SQUARE, INC. CONSOLIDATED BALANCE SHEETS (In thousands, except share and per share data)

December 31, 2020 2019

Cash and cash equivalents $ 3,158,058 $ 1,047,118

<!-- page 86 -->
CONSOLIDATED STATEMENTS OF OPERATIONS (In thousands, except per share data)

Revenue 9,497,578 4,713,500

###### 4,867,457 $ 133.54

## Item 8. Financial Statements

### NOTE 14 - DEBT

text
"""


def test_default_runs_the_rules_on_a_document_with_page_markers():
    headings, _, report = explain_headings(FILING)
    assert report.converter_output == "page markers (opendataloader)"
    assert report.rules == ("space_headings", "drop_row_headings", "title_lines", "label_lines", "flatten_levels",
                            "relevel_filing")
    assert [(h.line, h.title) for h in report.dropped] == [(3, "84"), (20, "4,867,457 $ 133.54")]
    assert [(h.line, h.source) for h in report.promoted] == [(9, "title"), (16, "title")]
    # flattened: unnumbered -> 2, "Item 8." -> 1; "NOTE 14" one below its item (the filing's
    # labels); written levels kept in md_level
    assert [(h.title[:13], h.level, h.md_level) for h in headings] == [
        ("SQUARE, INC. ", 2, 0), ("CONSOLIDATED ", 2, 0), ("Item 8. Finan", 1, 2), ("NOTE 14 - DEB", 2, 3)]
    tree = build_tree(FILING, "BLOCK_2020_10K")
    # the statement's rows are in the statement's section, not in the auditor's report
    sheet = next(n for n in tree.nodes if n.title.startswith("SQUARE"))
    assert (sheet.start_line, sheet.end_line) == (9, 15)
    assert tree.title == "BLOCK_2020_10K"


def test_off_keeps_the_headings_as_written():
    headings, _, report = explain_headings(FILING, OFF)
    assert report.converter_output == "" and report.rules == () and not report.promoted
    assert [(h.title, h.level) for h in headings] == [
        ("84", 6), ("4,867,457 $ 133.54", 6), ("Item 8. Financial Statements", 2), ("NOTE 14 - DEBT", 3)]


def test_a_commonmark_document_keeps_its_tree_under_the_default():
    text = "# Guide\n\nIntro.\n\n## Install Steps\n\nRun it.\n\nOperating System Support\n\n### Linux\n\nx\n"
    assert explain_headings(text)[2].converter_output == ""
    assert build_tree(text, "doc") == build_tree(text, "doc", OFF)
    # forced on: the stand-alone title line is promoted and the levels flattened
    assert _promoted(text) == ["Operating System Support"]
    assert {n.level for n in build_tree(text, "doc", ON).nodes} == {2}  # none is numbered


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# A\n<!-- page 1 -->\ntext\n<!-- page 2 -->\nmore\n", "page markers (opendataloader)"),
        ("# A\n\ntext\n\nx.htm 1/90\n\ntext\n\nx.htm 2/90\n\ny\n\nx.htm 3/90\n", "page footers (3 of the form k/90)"),
        ("# A\n\nx Page 1 of 9\n\ny Page 2 of 9\n\nz Page 3 of 9\n", "page footers (3 of the form k/9)"),
        ("# A\n\n## 44\n\n## 45\n\n## 2021 FORM 10-K 46\n", "3 headings read like table rows or page furniture"),
        ("# A\n\n## 44\n\n## 45\n\ntext\n", ""),  # two rows: not enough
        ("# A\n\nsee 1/2\n\nsee 3/4\n\nsee 1/2\n", ""),  # fractions, no increasing page numbers
        ("# A\n\n```\n<!-- page 1 -->\n```\n", ""),  # a marker inside code is content
        ("# A\n\ntext\n", ""),
    ],
)
def test_detect_converter_output(text, reason):
    assert explain_headings(text)[2].converter_output == reason


def test_detect_converter_output_reports_markers_first():
    lines = split_lines("# A\n\nx 1/9\n\ny 2/9\n\nz 3/9\n")
    headings = find_headings("# A\n", OFF)[0]
    assert detect_converter_output(lines, headings, "docling") == "page markers (docling)"
    assert detect_converter_output(lines, headings) == "page footers (3 of the form k/9)"


# -- where a title line may stand ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("Intro text here.\n\nConsolidated Balance Sheets\n\nCash 12 13\n", [3]),
        ("Consolidated Balance Sheets\n", [1]),  # start and end of the text count as blank
        ("<!-- page 3 -->\nConsolidated Balance Sheets\n<!-- page 4 -->\nCash 1 2\n", [2]),  # markers count as blank
        ("Some text\nConsolidated Balance Sheets\n\nx 1 2\n", []),  # second line of a paragraph
        ("text.\n\nConsolidated Balance Sheets\nCash 12 13\n", []),  # first line of a paragraph
        ("- Consolidated Balance Sheets\n", []),  # list item
        ("1. Consolidated Balance Sheets\n", []),  # ordered list item
        ("> Consolidated Balance Sheets\n", []),  # block quote
        ("```\n\nConsolidated Balance Sheets\n\n```\n", []),  # fenced code
        ("    Consolidated Balance Sheets\n", []),  # indented code
        ("| a |\n|---|\n| Consolidated Balance Sheets |\n", []),  # table cell
        ("$$\nConsolidated Balance Sheets\n$$\n", []),  # display math
        ("<div>\n\nx\n\n</div>\n\nok.\n\nConsolidated Balance Sheets\n", [9]),
    ],
)
def test_title_line_positions(text, lines):
    assert _candidates(text) == lines


def test_title_line_neighbours():
    # a run of title-like lines is a flattened table header or a list of names, not a title
    assert _candidates("Intro.\n\nPension Retiree Medical\n\nInternational Total Plans\n\n2020 5 6\n") == []
    # after a lead-in ending in ':' it is a table's header ...
    assert _candidates("The components were as follows:\n\nGross Unrealized Gains\n\nx 1 2\n") == []
    # ... but not after a heading ending in ':'
    assert _candidates("## 8.01 Claims for Benefits:\n\nArticle Eight Claims Procedure\n\nx.\n") == [3]
    # signature blocks: names and offices next to a /s/ line
    assert _candidates("/s/ Jane Doe\n\nChief Executive Officer\n\nDate: 2021\n") == []


def test_repeated_title_lines_are_running_headers():
    page = "PepsiCo Pension Equalization Plan\n\nText of the plan.\n\n"
    assert _candidates(page * 2) == [1, 5]
    assert _candidates(page * 3) == []


def test_things_that_are_never_promoted_in_a_paper():
    paper = (
        "# A Study of Things\n\n## Method\n\nWe did this.\n\n*Important*\n\nA sentence that ends here.\n\n"
        "PAGE\n\n| Model | Score |\n|---|---|\n| Ours | 1 |\n\n- Item One Two\n\n```\nDefinitely Not Title\n```\n"
    )
    assert _promoted(paper) == []


def test_title_lines_nest_under_the_heading_before_when_levels_are_kept():
    text = "# Report\n\n## Results\n\nText.\n\nConsolidated Balance Sheets\n\nx 1 2\n"
    config = TreeConfig(converter_output="on", flatten_levels=False)
    headings = find_headings(text, config)[0]
    assert [(h.title, h.level, h.md_level, h.source) for h in headings] == [
        ("Report", 1, 1, "atx"), ("Results", 2, 2, "atx"), ("Consolidated Balance Sheets", 3, 0, "title")]


def test_title_lines_never_duplicate_another_mode():
    text = "Intro.\n\n2.3 Results Overview\n\nx.\n"
    config = TreeConfig(converter_output="on", numbered_headings=True)
    assert [h.line for h in find_headings(text, config)[0]] == [3]


# -- flattening ----------------------------------------------------------------------------------
def test_flatten_levels_takes_levels_from_numbering():
    heads = [Heading(i + 1, i + 1, lvl, t, lvl) for i, (lvl, t) in enumerate(
        [(2, "Article 1. DEFINITIONS"), (3, "Section 1.01 Defined Terms"), (6, "Pricing Schedule"),
         (2, "2.05.4 Quotes"), (4, "ITEM 7A. Market Risk")])]
    out, title_line = flatten_levels(heads)
    assert [h.level for h in out] == [1, 2, 2, 3, 1]  # unnumbered: inside the numbered section
    assert [h.md_level for h in out] == [2, 3, 6, 2, 4]
    assert title_line == 0  # two headings at the shallowest level


def test_flatten_keeps_the_document_title():
    text = "# The Rust Book\n\n## 1. Getting Started\n\n### 1.1. Installation\n\n#### On Linux\n\nx\n"
    tree = build_tree(text, "rust-book", ON)
    assert tree.title == build_tree(text, "rust-book", OFF).title == "The Rust Book"
    assert [(n.title, n.level) for n in tree.nodes] == [
        ("The Rust Book", 2), ("1. Getting Started", 1), ("1.1. Installation", 2), ("On Linux", 2)]
    # an unnumbered heading sits beside the numbered subsection before it, inside its chapter
    assert tree.title_path(tree.nodes[3].node_id) == ("1. Getting Started", "On Linux")
    # the title node no longer holds the whole book
    assert tree.nodes[0].end_line == 2


# -- configuration -------------------------------------------------------------------------------
def test_config_values():
    assert TreeConfig().converter_output == "auto"
    with pytest.raises(ConfigError, match="tree.converter_output: expected 'auto', 'on' or 'off', got 'yes'"):
        TreeConfig(converter_output="yes")
    assert TreeConfig(relevel_filing=True, flatten_levels=False).relevel_filing
    assert TreeConfig(relevel_filing=True).flatten_levels  # both: labels' levels, the rest flattened
    with pytest.raises(ConfigError, match="converter_output"):
        config_from_dict({"tree": {"converter_output": True}})


def test_rule_keys_select_the_rules():
    config = TreeConfig(converter_output="on", space_headings=False, drop_row_headings=False, title_lines=False,
                        label_lines=False, relevel_filing=False)
    headings, _, report = explain_headings(FILING, config)
    assert report.rules == ("flatten_levels",) and not report.dropped and not report.promoted
    assert "84" in [h.title for h in headings]
    with_space = explain_headings(FILING, dataclasses.replace(config, space_headings=True))[2]
    assert with_space.rules == ("space_headings", "flatten_levels")
    none = TreeConfig(space_headings=False, drop_row_headings=False, title_lines=False, label_lines=False,
                      flatten_levels=False, relevel_filing=False)
    assert explain_headings(FILING, none)[2].converter_output == ""


# -- what a user relies on, one rule at a time ---------------------------------------------------
# A page of a converted 10-K: a page marker, a statement title the converter left as a plain line,
# a table row it made a heading. Without the markers it reads as hand-written markdown.
CONVERTED = """\
<!-- page 1 -->
# Item 8. Financial Statements

CONSOLIDATED BALANCE SHEETS

Cash and cash equivalents $ 1,284 $ 1,102

## Total current assets $ 1,234

Goodwill 1,871 1,871

<!-- page 2 -->
## Note 14 - Debt

Long-term debt consisted of the following.
"""
HAND_WRITTEN = "".join(line for line in CONVERTED.splitlines(keepends=True) if not line.startswith("<!--"))


def _sections(text: str, config: TreeConfig | None = None) -> list[tuple[str, int, int]]:
    tree = build_tree(text, "doc") if config is None else build_tree(text, "doc", config)
    return [(n.title, n.start_line, n.end_line) for n in tree.nodes if n.kind == "heading"]


def test_a_row_like_heading_is_not_a_section_of_converted_output():
    sections = _sections(CONVERTED)
    assert "Total current assets $ 1,234" not in [title for title, _, _ in sections]
    # the row (line 8) and the row after it stay in the statement's section
    assert ("CONSOLIDATED BALANCE SHEETS", 4, 12) in sections
    report = explain_headings(CONVERTED)[2]
    assert [(h.line, h.title) for h in report.dropped] == [(8, "Total current assets $ 1,234")]


def test_a_stand_alone_statement_title_becomes_a_section():
    tree = build_tree(CONVERTED, "doc")
    sheet = next(n for n in tree.nodes if n.title == "CONSOLIDATED BALANCE SHEETS")
    assert (sheet.start_line, sheet.body_start_line, sheet.end_line) == (4, 5, 12)
    assert sheet.md_level == 0  # no markup: the converter wrote it as a paragraph
    text = slice_lines(split_lines(CONVERTED), sheet.start_line, sheet.end_line)
    assert "Cash and cash equivalents $ 1,284" in text and "Goodwill 1,871" in text
    # the statement is its own section inside Item 8, no longer part of Item 8's own text
    item8 = _node(tree, "Item 8. Financial Statements")
    assert item8.body_end_line == 3 and sheet.parent_id == item8.node_id


def test_hand_written_markdown_keeps_its_headings_under_the_default():
    # one row-like heading is below the auto threshold and there are no page markers
    assert explain_headings(HAND_WRITTEN)[2].converter_output == ""
    assert _sections(HAND_WRITTEN) == _sections(HAND_WRITTEN, OFF) == [
        ("Item 8. Financial Statements", 1, 13), ("Total current assets $ 1,234", 7, 10), ("Note 14 - Debt", 11, 13)]
    # forced on, the same text gets the rules
    assert [t for t, _, _ in _sections(HAND_WRITTEN, ON)] == [
        "Item 8. Financial Statements", "CONSOLIDATED BALANCE SHEETS", "Note 14 - Debt"]


LABELLED = """\
<!-- page 1 -->
###### Item 7. Management's Discussion and Analysis

text

# Item 7A. Quantitative and Qualitative Disclosures About Market Risk

text

### Note 14 - Debt

text

<!-- page 2 -->
## ARTICLE II

text

# Section 2.05 Taxes

text
"""


def test_levels_come_from_numbering_not_from_the_written_levels():
    tree = build_tree(LABELLED, "doc", TreeConfig(relevel_filing=False))  # flatten_levels alone
    heads = [n for n in tree.nodes if n.kind == "heading"]
    assert [n.title[:12] for n in heads] == [
        "Item 7. Mana", "Item 7A. Qua", "Note 14 - De", "ARTICLE II", "Section 2.05"]
    # (level, level as written): Item 7, Item 7A, Note 14, ARTICLE II 1; Section 2.05 2
    assert [(n.level, n.md_level) for n in heads] == [(1, 6), (1, 1), (1, 3), (1, 2), (2, 1)]
    # Item 7A is no subsection of Item 7, Note 14 none of Item 7A; Section 2.05 is in Article II
    assert [tree.title_path(n.node_id)[:-1] for n in heads] == [(), (), (), (), ("ARTICLE II",)]
    # as written, Note 14 and Article II would sit under Item 7A and Section 2.05 would be a root
    off = build_tree(LABELLED, "doc", OFF)
    assert [len(off.title_path(n.node_id)) for n in off.nodes if n.kind == "heading"] == [1, 1, 2, 2, 1]


# -- the team's fixture documents ----------------------------------------------------------------
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TENK_SECTIONS = [
    "ITEM 1. BUSINESS", "ITEM 1A. RISK FACTORS",
    "ITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF OPERATIONS",
    "ITEM 7A. QUANTITATIVE AND QUALITATIVE DISCLOSURES ABOUT MARKET RISK",
    "ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA", "REPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM",
    "CONSOLIDATED BALANCE SHEETS", "CONSOLIDATED STATEMENTS OF OPERATIONS", "CONSOLIDATED STATEMENTS OF CASH FLOWS",
    "NOTES TO CONSOLIDATED FINANCIAL STATEMENTS", "Note 1 - Summary of Significant Accounting Policies",
    "Note 9 - Other Liabilities", "Note 14 - Debt", "Note 15 - Income Taxes",
]
REPORT_SECTIONS = [
    "Chapter 1. Water Scarcity and Economic Growth", "1.1 Trends in Water Availability",
    "Box 1.1 Measuring Water Stress", "1.2 The Cost of Droughts and Floods",
    "Chapter 2. Irrigation and Agricultural Productivity", "Box 2.1 The Sarai Valley Canal Rehabilitation Programme",
    "Box 2.2 A Water Market on the Corran", "Chapter 3. Cities, Utilities and Service Delivery",
    "Box 3.1 District Metering in Portavel", "Annex 2.1 Data and Methods",
    "Annex Table A2.1.1 Studies Included in the Review", "Annex Table A2.1.2 Irrigation Projects by Economy",
]


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _node(tree, title: str):
    (node,) = [n for n in tree.nodes if n.title == title and n.kind == "heading"]
    return node


def _holds(text: str, node, needle: str) -> bool:
    """Whether the node's own text (heading to the next heading) contains ``needle``."""
    return needle in slice_lines(split_lines(text), node.start_line, node.body_end_line)


def test_fixture_filing_keeps_items_statements_and_notes_under_the_default():
    text = _fixture("harborlight-10k-2023.md")
    assert explain_headings(text)[2].converter_output == ""  # hand-written: no rules
    tree = build_tree(text, "harborlight-10k-2023")
    assert tree == build_tree(text, "harborlight-10k-2023", OFF)
    titles = [n.title for n in tree.nodes]
    assert all(t in titles for t in TENK_SECTIONS)
    assert tree.title_path(_node(tree, "Note 14 - Debt").node_id)[1:] == (
        "PART II", "ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA", "NOTES TO CONSOLIDATED FINANCIAL STATEMENTS",
        "Note 14 - Debt")
    sheet = _node(tree, "CONSOLIDATED BALANCE SHEETS")
    assert tree.title_path(sheet.node_id)[-2] == "ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA"
    assert _holds(text, sheet, "<td>Long-term debt, less current portion</td><td>2,960</td>")
    assert _holds(text, _node(tree, "CONSOLIDATED STATEMENTS OF CASH FLOWS"), "Net cash provided by operating")
    assert _holds(text, _node(tree, "Note 14 - Debt"), "| Term loan | 2027 |")


def test_fixture_report_keeps_chapters_boxes_and_annex_tables_under_the_default():
    text = _fixture("water-for-growth-report.md")
    assert explain_headings(text)[2].converter_output == ""
    tree = build_tree(text, "water-for-growth-report")
    assert tree == build_tree(text, "water-for-growth-report", OFF)
    titles = [n.title for n in tree.nodes]
    assert all(t in titles for t in REPORT_SECTIONS)
    assert tree.title_path(_node(tree, "Box 1.1 Measuring Water Stress").node_id)[1:] == (
        "Chapter 1. Water Scarcity and Economic Growth", "1.1 Trends in Water Availability",
        "Box 1.1 Measuring Water Stress")
    annex = _node(tree, "Annex Table A2.1.2 Irrigation Projects by Economy")
    assert tree.title_path(annex.node_id)[-2] == "Annex 2.1 Data and Methods"
    assert _holds(text, annex, "<table")
    assert _holds(text, _node(tree, "Annex Table A2.1.1 Studies Included in the Review"), "|")


def _as_converted(text: str, plain: str) -> str:
    """The fixture as a PDF converter would write it.

    A page marker and a page-number heading (``###### 41``) before each heading of level 1-3,
    and the headings whose title matches ``plain`` left as plain lines.
    """
    out: list[str] = []
    page = 0
    for line in text.splitlines():
        if re.match(r"#{1,3} ", line):
            page += 1
            out += [f"<!-- page {page} -->", "", f"###### {page + 40}", ""]
        m = re.match(rf"#{{1,6}} ({plain})$", line)
        out.append(m.group(1) if m else line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("name", "plain", "needles"),
    [
        ("harborlight-10k-2023.md", r"(?:CONSOLIDATED|NOTES TO) .*",
         {"CONSOLIDATED BALANCE SHEETS": "<td>Long-term debt, less current portion</td><td>2,960</td>",
          "Note 14 - Debt": "| Term loan | 2027 |"}),
        ("water-for-growth-report.md", r"(?:Box|Annex Table) .*",
         {"Box 2.2 A Water Market on the Corran": "Corran",
          "Annex Table A2.1.2 Irrigation Projects by Economy": "<table"}),
    ],
)
def test_fixture_converted_from_pdf_keeps_its_sections_under_the_default(name, plain, needles):
    source = _fixture(name)
    text = _as_converted(source, plain)
    headings, _, report = explain_headings(text)
    assert report.converter_output == "page markers (opendataloader)"
    assert report.promoted and all(re.fullmatch(plain, h.title) for h in report.promoted)
    assert report.dropped and all(h.title.isdigit() for h in report.dropped)  # the page numbers only
    tree = build_tree(text, name)
    written = build_tree(source, name)
    # every section of the hand-written document is a section of the converted one, and no other
    assert [n.title for n in tree.nodes if n.kind == "heading"] == [n.title for n in written.nodes]
    for title, needle in needles.items():
        assert _holds(text, _node(tree, title), needle)


def test_fixture_report_converted_from_pdf_keeps_numbered_subsections_in_their_chapter():
    text = _as_converted(_fixture("water-for-growth-report.md"), r"(?:Box|Annex Table) .*")
    tree = build_tree(text, "water-for-growth-report")
    path = tree.title_path(_node(tree, "1.2 The Cost of Droughts and Floods").node_id)
    assert path[-2:] == ("Chapter 1. Water Scarcity and Economic Growth", "1.2 The Cost of Droughts and Floods")


# -- financial statements in flattened converter output ---------------------------------------------
STATEMENTS_10K = """# ACME CORP FORM 10-K

## ITEM 8. FINANCIAL STATEMENTS

### Consolidated Balance Sheets

###### Acme Corp and Subsidiaries

(dollars in millions) At December 31, 2023 2022

###### Assets Current assets

Cash and cash equivalents $ 2,605 $ 2,921 Accounts receivable 25,332 24,742 Total current assets 37,857 36,728

###### Liabilities and Equity Current liabilities

Debt maturing within one year $ 9,813 $ 2,036 Accounts payable 23,977 24,833 Total liabilities 300,000 290,000

### Consolidated Statements of Income

###### YEAR ENDED DECEMBER 31,

Revenues $ 136,835 $ 133,613 $ 128,292 Net income 21,748 22,618 18,348

###### Basis of Presentation

We prepare our financial statements in conformity with generally accepted accounting principles, which
requires management to make estimates that affect the amounts reported and the disclosures we make.

###### Use of Estimates

Estimates are used for revenue, leases and taxes; actual results could differ from them.
"""


def test_a_statement_keeps_the_pieces_of_its_table_as_its_children():
    tree = build_tree(STATEMENTS_10K, "acme", ON)
    by = {n.title: n for n in tree.nodes}
    sheet = by["Consolidated Balance Sheets"]
    assert [tree.node(n.parent_id).title for n in tree.nodes
            if n.title in ("Acme Corp and Subsidiaries", "Assets Current assets",
                           "Liabilities and Equity Current liabilities")] == ["Consolidated Balance Sheets"] * 3
    # the statement is one section: its subtree holds every row, up to the next statement
    lines = split_lines(STATEMENTS_10K)
    assert "Total liabilities" in slice_lines(lines, sheet.start_line, sheet.end_line)
    assert sheet.end_line == by["Consolidated Statements of Income"].start_line - 1
    assert tree.title_path(by["YEAR ENDED DECEMBER 31,"].node_id)[-2:] == (
        "Consolidated Statements of Income", "YEAR ENDED DECEMBER 31,")
    # prose after the last statement is not part of it
    for title in ("Basis of Presentation", "Use of Estimates"):
        assert tree.node(by[title].parent_id).title != "Consolidated Statements of Income"


def test_statement_nesting_is_a_converter_rule_only():
    tree = build_tree(STATEMENTS_10K, "acme", OFF)
    by = {n.title: n for n in tree.nodes}
    # as written: ###### under ###, the same in both modes for the first piece
    assert tree.node(by["Acme Corp and Subsidiaries"].parent_id).title == "Consolidated Balance Sheets"
    without_text = flatten_levels([Heading(1, 1, 3, "Consolidated Balance Sheets", 3),
                                   Heading(3, 3, 6, "Assets Current assets", 6)])[0]
    assert [h.level for h in without_text] == [2, 2]  # no lines given: levels from numbering only


MDA_CASH_FLOWS = """# ACME CORP FORM 10-K

## Item 7. Management's Discussion and Analysis

### Consolidated Statements of Cash Flows

Cash flows were strong this year, as described below.

###### Operating activities

Cash from operations rose $112 million to $812 million in 2022, from $700 million in 2021.

###### Investing activities

Capital spending was $300 million in 2022 and $250 million in 2021.
"""


def test_a_statement_title_over_prose_opens_no_statement():
    # MD&A discusses the cash flows under the statement's name: its subsections stay siblings
    tree = build_tree(MDA_CASH_FLOWS, "acme", ON)
    by = {n.title: n for n in tree.nodes}
    for title in ("Operating activities", "Investing activities"):
        assert tree.node(by[title].parent_id).title != "Consolidated Statements of Cash Flows"


def test_a_heading_without_text_ends_a_statement():
    # a piece of a statement's table has rows; an empty heading after the title (an auditor's
    # report title, "Overview") is not one of them
    text = ("# ACME FORM 10-K\n\n### Statement of Cash Flows\n\n(in millions) 2023 2022\n\n"
            "### Report of Independent Registered Public Accounting Firm\n\n### Opinion\n\nWe have audited the "
            "statements and found them fair in all material respects.\n")
    tree = build_tree(text, "acme", ON)
    by = {n.title: n for n in tree.nodes}
    report = by["Report of Independent Registered Public Accounting Firm"]
    assert "Statement of Cash Flows" not in tree.title_path(report.node_id)

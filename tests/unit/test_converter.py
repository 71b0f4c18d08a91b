"""Converter rules of the tree: when they run (tree.converter_output), title lines, flattening."""

from __future__ import annotations

import pytest

from proxypointer._converter import detect_converter_output, flatten_levels, title_line_candidates
from proxypointer._markdown import Heading, parse_blocks
from proxypointer.config import TreeConfig, config_from_dict
from proxypointer.errors import ConfigError
from proxypointer.tree import build_tree, explain_headings, find_headings, split_lines

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
    assert report.rules == ("drop_row_headings", "title_lines", "flatten_levels")
    assert [(h.line, h.title) for h in report.dropped] == [(3, "84"), (20, "4,867,457 $ 133.54")]
    assert [(h.line, h.source) for h in report.promoted] == [(9, "title"), (16, "title")]
    # flattened: unnumbered -> 1, "Item 8." -> 1, "NOTE 14" -> 1; written levels kept in md_level
    assert [(h.title[:13], h.level, h.md_level) for h in headings] == [
        ("SQUARE, INC. ", 1, 0), ("CONSOLIDATED ", 1, 0), ("Item 8. Finan", 1, 2), ("NOTE 14 - DEB", 1, 3)]
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
    assert {n.level for n in build_tree(text, "doc", ON).nodes} == {1}


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
    assert [h.level for h in out] == [1, 2, 1, 3, 1]
    assert [h.md_level for h in out] == [2, 3, 6, 2, 4]
    assert title_line == 0  # two headings at the shallowest level


def test_flatten_keeps_the_document_title():
    text = "# The Rust Book\n\n## 1. Getting Started\n\n### 1.1. Installation\n\n#### On Linux\n\nx\n"
    tree = build_tree(text, "rust-book", ON)
    assert tree.title == build_tree(text, "rust-book", OFF).title == "The Rust Book"
    assert [(n.title, n.level) for n in tree.nodes] == [
        ("The Rust Book", 1), ("1. Getting Started", 1), ("1.1. Installation", 2), ("On Linux", 1)]
    # the title node no longer holds the whole book
    assert tree.nodes[0].end_line == 2


# -- configuration -------------------------------------------------------------------------------
def test_config_values():
    assert TreeConfig().converter_output == "auto"
    with pytest.raises(ConfigError, match="tree.converter_output: expected 'auto', 'on' or 'off', got 'yes'"):
        TreeConfig(converter_output="yes")
    with pytest.raises(ConfigError, match="tree.relevel_filing: cannot be on with tree.flatten_levels"):
        TreeConfig(relevel_filing=True)
    assert TreeConfig(relevel_filing=True, flatten_levels=False).relevel_filing
    with pytest.raises(ConfigError, match="converter_output"):
        config_from_dict({"tree": {"converter_output": True}})


def test_rule_keys_select_the_rules():
    config = TreeConfig(converter_output="on", drop_row_headings=False, title_lines=False)
    headings, _, report = explain_headings(FILING, config)
    assert report.rules == ("flatten_levels",) and not report.dropped and not report.promoted
    assert "84" in [h.title for h in headings]
    none = TreeConfig(drop_row_headings=False, title_lines=False, flatten_levels=False)
    assert explain_headings(FILING, none)[2].converter_output == ""

"""Outlines (gold files, PDF bookmarks), title matching, ordered alignment and tree accuracy."""

from __future__ import annotations

import pytest

from proxypointer.config import TreeConfig
from proxypointer.errors import ConfigError
from proxypointer.eval.trees import score_tree
from proxypointer.tree.build import build_tree
from proxypointer.tree.outline import Outline, OutlineEntry, align_monotone, load_outline, title_match
from proxypointer.tree.pages import page_map

GOLD_YAML = """\
document: acme.pdf
outline:
  - title: PART I
    page: 2
    children:
      - {title: "Item 1. Business", page: 2}
      - {title: "Item 1A. Risk Factors", page: 3}
  - title: PART II
    page: 4
    children:
      - title: "Item 8. Financial Statements and Supplementary Data"
        page: 4
        children:
          - {title: "Notes to Consolidated Financial Statements", page: 5}
"""


def test_gold_file_flattens_in_order_with_levels_and_parents(tmp_path):
    f = tmp_path / "acme.yaml"
    f.write_text(GOLD_YAML, encoding="utf-8")
    o = load_outline(f)
    assert [(e.title, e.page, e.level, e.parent) for e in o.entries] == [
        ("PART I", 2, 1, -1),
        ("Item 1. Business", 2, 2, 0),
        ("Item 1A. Risk Factors", 3, 2, 0),
        ("PART II", 4, 1, -1),
        ("Item 8. Financial Statements and Supplementary Data", 4, 2, 3),
        ("Notes to Consolidated Financial Statements", 5, 3, 4),
    ]
    assert o.depth == 3


def test_gold_json_is_read_too(tmp_path):
    f = tmp_path / "g.json"
    f.write_text('[{"title": "Intro", "page": 1, "children": [{"title": "Scope", "page": 2}]}]', encoding="utf-8")
    assert [(e.title, e.level, e.parent) for e in load_outline(f).entries] == [("Intro", 1, -1), ("Scope", 2, 0)]


@pytest.mark.parametrize("entry", ['{title: "X"}', '{title: "X", page: 0}', '{title: "X", page: "3"}',
                                   '{page: 3}', '{title: "X", page: 3, pages: 4}'])
def test_a_malformed_gold_entry_is_refused_naming_the_file(tmp_path, entry):
    f = tmp_path / "bad.yaml"
    f.write_text(f"outline:\n  - {entry}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.yaml"):
        load_outline(f)


@pytest.mark.parametrize(("a", "b", "same"), [
    ("Item 7. Management's Discussion and Analysis", "ITEM 7. MANAGEMENT’S DISCUSSION AND ANALYSIS", True),
    ("Item 7. MD&A", "**Item 7.** Management's Discussion", True),  # one label, two wordings
    ("Item 1A. Risk Factors", "Item 1B. Unresolved Staff Comments", False),
    ("Note 14 - Debt", "14. Debt", True),
    ("Note 14 - Debt", "Note 15 - Leases", False),
    ("PART I", "PART II", False),
    ("Item 7. Management's Discussion and Analysis of Financial Condition", "Item 7. Management's Discussion and",
     True),
    ("Consolidated Balance Sheets", "NIKE, Inc. Consolidated Balance Sheets", True),
    ("Competition", "Compensation", False),
    ("Results of Operations", "Results of Operation", True),
    # a bookmark that names the page's exhibit label first ("A-1", "F-3"): the label is no title
    ("A-1 - Condensed Consolidated Statement of Income",
     "Condensed Consolidated Statement of Income (in millions except per share amounts, unaudited)", True),
    ("F-3: Consolidated Balance Sheets", "Consolidated Balance Sheets", True),
    ("A-1 - Condensed Consolidated Statement of Income", "A-2 - Supplemental Financial Information", False),
])
def test_title_match(a, b, same):
    assert title_match(a, b) is same
    assert title_match(b, a) is same


def test_alignment_keeps_order_and_uses_each_slot_once():
    # entry 0 may take slot 5 or 1; entry 1 only slot 2; entry 2 slot 2 or 7
    cands = {0: [5, 1], 1: [2], 2: [2, 7]}
    assert align_monotone(3, 10, lambda i: cands[i]) == [1, 2, 7]
    # an entry that could only land before the one placed before it is left out
    assert align_monotone(2, 10, lambda i: [[4], [3]][i]) in ([4, -1], [-1, 3])


def _paged(md: str):
    from proxypointer.lines import split_lines
    from proxypointer.read.readers import with_pages
    from proxypointer.tree.pages import stored_page_map

    text, line_pages = with_pages(md, page_map(split_lines(md)))
    return text, stored_page_map(line_pages, split_lines(text))


def test_tree_accuracy_counts_recall_nesting_and_unsupported_headings():
    md = "\n".join([
        "<!-- page 1 -->", "", "# PART I", "", "## Item 1. Business", "", "We sell anvils.", "",
        "<!-- page 2 -->", "", "# Item 8 of this Annual Report on Form 10-K.", "",  # a wrapped sentence
        "## Item 1A. Risk Factors", "", "Anvils fall.", "",
        "<!-- page 3 -->", "", "# PART II", "", "Text.", "",
        "<!-- page 4 -->", "", "## Item 8. Financial Statements", "", "Figures.", "",
    ])
    text, pages = _paged(md)
    tree = build_tree(text, "acme", TreeConfig(converter_output="off"), paged=True)  # the levels as written
    gold = Outline((
        OutlineEntry("PART I", 1, 1), OutlineEntry("Item 1. Business", 1, 2, 0),
        OutlineEntry("Item 1A. Risk Factors", 2, 2, 0),
        OutlineEntry("PART II", 3, 1), OutlineEntry("Item 7. MD&A", 3, 2, 3),  # not in the tree
        OutlineEntry("Item 8. Financial Statements", 5, 2, 3),  # in the tree, on page 4: wrong page
    ))
    s = score_tree(tree, pages.page_of, gold)
    assert (s.found, s.gold) == (4, 6)
    assert s.recall == pytest.approx(4 / 6)
    # Item 1 sits under PART I; Item 1A sits under the wrapped sentence, not under PART I
    assert (s.nested_ok, s.nested_checked) == (1, 2)
    assert [e.title for e in s.misnested()] == ["Item 1A. Risk Factors"]
    # the wrapped sentence swallows Item 1A; the misplaced Item 8 is a false child of PART II
    assert [t for _, t in s.unsupported] == ["Item 8 of this Annual Report on Form 10-K."]
    assert [e.title for e in s.missing()] == ["Item 7. MD&A", "Item 8. Financial Statements"]

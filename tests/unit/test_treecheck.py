"""PageIndex export, outline and validation report of a tree."""

from __future__ import annotations

import pytest

from proxypointer.readers import read_document
from proxypointer.tree import build_tree, split_lines
from proxypointer.treecheck import TreeWarning, check_tree, tree_outline, tree_to_pageindex

DOC = "Intro text.\n# A\n## B\ntext\n### C\n## D\n# E\n"


def _check(text, **kw):
    tree = build_tree(text, "doc")
    return check_tree(tree, split_lines(text), **kw)


def test_pageindex_layout():
    tree = build_tree(DOC, "doc")
    out = tree_to_pageindex(tree)
    assert out["doc_name"] == "doc" and out["line_count"] == 7

    def shape(nodes):
        return [(n["title"], n["line_num"], shape(n["nodes"])) for n in nodes]

    assert shape(out["structure"]) == [
        ("doc", 1, []),
        ("A", 2, [("B", 3, [("C", 5, [])]), ("D", 6, [])]),
        ("E", 7, []),
    ]
    assert out["structure"][1]["node_id"] == tree.nodes[1].node_id


def test_pageindex_of_case_01(cases_dir):
    (folder,) = [p for p in cases_dir.iterdir() if p.name.startswith("01-")]
    out = tree_to_pageindex(build_tree(read_document(folder / "input.md"), "input"))
    assert [(n["title"], n["line_num"]) for n in out["structure"][0]["nodes"]] == [
        ("Configure", 10), ("Verify", 26)]


def test_outline():
    assert tree_outline(build_tree(DOC, "doc")) == "\n".join([
        "[preamble] doc  L1-L1",
        "# A  L2-L6",
        "  ## B  L3-L5",
        "    ### C  L5-L5",
        "  ## D  L6-L6",
        "# E  L7-L7",
    ])
    assert tree_outline(build_tree("no headings\n", "doc")) == ""


def test_clean_tree_has_no_warnings():
    assert _check(DOC) == []


def test_no_headings():
    (w,) = _check("just text\n")
    assert (w.code, w.line) == ("no-headings", 0)
    assert w.message.startswith("doc: ")
    assert _check("") == []


def test_flat_levels():
    text = "## 3 A\nx\n## 3.1 B\nx\n## 3.2 C\nx\n## 4 D\nx\n"
    assert [w.code for w in _check(text)] == ["flat-levels"]
    # flat but numbering has one depth only: fine
    assert _check("## 1 A\nx\n## 2 B\nx\n## 3 C\nx\n## 4 D\nx\n") == []


def test_dominant_node():
    body = ("word " * 20 + "\n") * 30
    text = "# Big\n" + body + "# Small\nshort\n"
    warnings = _check(text)
    assert [(w.code, w.line) for w in warnings] == [("dominant-node", 1)]
    assert "Big" in warnings[0].message


def test_sentence_heading():
    text = "# Title\n## This is some content under heading 1.\n## " + "w " * 16 + "\n## Why?\n"
    assert [(w.code, w.line) for w in _check(text)] == [
        ("sentence-heading", 2), ("sentence-heading", 3)]


def test_duplicate_title_path():
    text = "# A\n## Usage\nx\n## Usage\ny\n# B\n## Usage\nz\n"
    assert [(w.code, w.line) for w in _check(text)] == [("duplicate-title", 4)]


def test_long_section_with_custom_counter():
    text = "# A\n" + "one two three\n" * 10 + "# B\nx\n"
    warnings = _check(text, count_tokens=lambda s: len(s.split()), max_section_tokens=29)
    assert [(w.code, w.line) for w in warnings] == [("long-section", 1)]
    assert _check(text, count_tokens=lambda s: len(s.split()), max_section_tokens=30) == []
    # default counter: 30 words * 1.3 = 39 tokens
    assert [w.code for w in _check(text, max_section_tokens=38)] == ["long-section"]
    assert _check(text, max_section_tokens=39) == []


def test_bad_arguments():
    tree = build_tree(DOC, "doc")
    with pytest.raises(ValueError, match="max_section_tokens"):
        check_tree(tree, split_lines(DOC), max_section_tokens=0)
    with pytest.raises(ValueError, match="lines"):
        check_tree(tree, ["x"])


def test_warning_is_frozen():
    w = TreeWarning("x", 1, "m")
    with pytest.raises(AttributeError):
        w.code = "y"  # type: ignore[misc]

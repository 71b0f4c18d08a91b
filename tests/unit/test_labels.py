"""Labels named in queries, and the label indexes of live document versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxypointer.retrieve.labels import LabelLookup
from proxypointer.retrieve.live import LiveTrees
from proxypointer.tree.labels import mentions_label

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("query", ["What does Note 14 say about debt?", "box 1.1", "annex table A2.1.1",
                                   "Item 7A market risk", 'see section "Related work"', "appendix g"])
def test_queries_naming_a_label_are_recognised(query):
    assert mentions_label(query)


@pytest.mark.parametrize("query", ["What was the largest liability?", "risk factors", "the table of results"])
def test_queries_naming_no_label_are_not(query):
    assert not mentions_label(query)


def test_label_indexes_are_kept_per_live_version(make_index, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "report.md").write_text((FIXTURES / "water-for-growth-report.md").read_text())
    idx = make_index()
    idx.ingest([corpus], show_progress=False)
    trees = LiveTrees(idx)
    lookup = LabelLookup(trees, size=1)
    live = trees.get("report")
    box = next(n for n in live.tree.nodes if n.title.startswith("Box 1.1"))
    annex = next(n for n in live.tree.nodes if n.title.startswith("Annex Table A2.1.1"))
    assert lookup.named("What does box 1.1 measure?", "report", live.version) == (box.node_id,)
    assert lookup.named("studies in annex table A2.1.1", "report", live.version) == (annex.node_id,)
    assert lookup.named("What does box 9.9 say?", "report", live.version) == ()
    assert lookup.named("box 1.1", "report", "not-the-live-version") == ()
    assert lookup._cache.keys() == [("report", live.version)]  # one version kept (size=1)
    # a new version of the document: looked up by its own version (a version never changes)
    (corpus / "report.md").write_text("# Report\n\n## Box 1.1 Another box\n\ntext\n")
    idx.ingest([corpus], show_progress=False)
    assert lookup.named("box 1.1", "report", live.version) == (box.node_id,)
    new = trees.get("report")
    assert new.version != live.version
    (node,) = lookup.named("box 1.1", "report", new.version)
    assert new.tree.node(node).title == "Box 1.1 Another box"


def test_live_trees_rebuild_the_stored_tree(make_index):
    from proxypointer.tree.build import build_tree

    idx = make_index()
    idx.ingest([FIXTURES / "harborlight-10k-2023.md"], show_progress=False)
    live = LiveTrees(idx).get("harborlight-10k-2023")
    text = (FIXTURES / "harborlight-10k-2023.md").read_text()
    built = build_tree(text, "harborlight-10k-2023")
    assert [(n.node_id, n.title, n.start_line, n.end_line, n.body_end_line, n.parent_id) for n in live.tree.nodes] == [
        (n.node_id, n.title, n.start_line, n.end_line, n.body_end_line, n.parent_id) for n in built.nodes]
    item8 = next(n for n in built.nodes if n.title.startswith("ITEM 8"))
    sub = live.subtree(item8.node_id)
    assert sub[0] == item8.node_id and set(sub) == {n.node_id for n in built.nodes
                                                     if item8.start_line <= n.start_line <= item8.end_line}
    chunks = live.subtree_chunks(item8.node_id)
    assert chunks and all(c.rsplit("::", 3)[2] in sub for c in chunks)
    assert LiveTrees(idx).get("harborlight-10k-2023", "other-version") is None
    assert LiveTrees(idx).get("no-such-document") is None


def test_code_is_what_commonmark_calls_code_for_labels_and_headings_alike():
    # One definition of code lines (tree.markdown.code_lines): a caption inside an indented code
    # block (four spaces after a blank line) is code to the label rules, as to the heading parser;
    # an indented line that continues a paragraph is text.
    from proxypointer.lines import split_lines
    from proxypointer.tree.build import build_tree
    from proxypointer.tree.labels import label_index
    from proxypointer.tree.markdown import code_lines

    text = (
        "# Results\n\nTable 1: Accuracy by model\n\n"
        "    Table 2: printed by the script\n\n"
        "```\nTable 3: inside a fence\n```\n\n"
        "Our findings, in a paragraph that\n    Table 4: continues indented.\n"
    )
    lines = split_lines(text)
    assert code_lines(lines) == {5, 7, 8, 9}
    captions = label_index(build_tree(text, "doc"), lines).captions
    assert sorted(label for (kind, label) in captions if kind == "table") == ["1", "4"]

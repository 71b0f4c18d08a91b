"""Tree invariants, stated once; used by the property tests and the bench-corpus test.

Invariants (1-based inclusive lines; ``fm`` = front_matter_end, ``n`` = line_count):

* build_tree is deterministic.
* Ranges: ``fm < start_line <= body_end_line <= end_line <= n`` and
  ``body_start_line <= body_end_line + 1``; nodes are in document order; a child's range lies
  inside its parent's and its level is deeper; siblings do not overlap; levels are 1..6
  (0 for the preamble); node ids are unique.
* Coverage: when the tree has nodes, every line in ``(fm, n]`` belongs to exactly one node's
  own text ``[start_line, body_end_line]``, except lines before the first node, which are
  then all blank (a blank preamble creates no node). Lines ``<= fm`` belong to no node. A
  document without headings has no nodes at all.
* Titles: never empty, never ending in an attribute list (``{#id}``).
* With ``syntax=True`` (CommonMark headings only): a heading node's slice starts at its
  heading line, an ATX line or a setext text line whose underline is line
  ``body_start_line - 1``.
"""

from __future__ import annotations

import re

from proxypointer.config import TreeConfig
from proxypointer.lines import slice_lines, split_lines
from proxypointer.tree.build import DocumentTree, build_tree

__all__ = ["check_tree_invariants"]

_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_ATTRIBUTE_LIST_END = re.compile(r"\{\s*[#.:][^{}]*\}\s*$")


def check_tree_invariants(
    text: str, config: TreeConfig | None = None, *, syntax: bool = True, twice: bool = True
) -> DocumentTree:
    """Build the tree of ``text`` and assert every invariant above; returns the tree.

    ``twice=False`` skips the determinism check (a second build), for large corpora.
    """
    tree = build_tree(text, "doc", config)
    if twice:
        assert tree == build_tree(text, "doc", config)
    lines = split_lines(text)
    n, fm = tree.line_count, tree.front_matter_end
    assert n == len(lines)
    if not tree.has_headings:
        assert tree.nodes == ()
        return tree
    assert len({node.node_id for node in tree.nodes}) == len(tree.nodes)
    owner = [0] * (n + 1)
    prev_start = 0
    for node in tree.nodes:
        assert fm < node.start_line <= node.body_end_line <= node.end_line <= n
        assert node.body_start_line <= node.body_end_line + 1
        assert node.start_line > prev_start
        assert (node.level == 0) == (node.kind == "preamble") and 0 <= node.level <= 6
        prev_start = node.start_line
        for line in range(node.start_line, node.body_end_line + 1):
            owner[line] += 1
        if node.parent_id:
            parent = tree.node(node.parent_id)
            assert parent.start_line < node.start_line and node.end_line <= parent.end_line
            assert parent.level < node.level
        kids = tree.children(node.node_id)
        for a, b in zip(kids, kids[1:], strict=False):
            assert a.end_line < b.start_line
        if node.kind != "heading":
            continue
        assert node.title.strip() and not _ATTRIBUTE_LIST_END.search(node.title), node.title
        if syntax:
            first = slice_lines(lines, node.start_line, node.start_line)
            assert first == lines[node.start_line - 1]
            if node.body_start_line - node.start_line >= 2:  # setext
                assert _UNDERLINE.match(lines[node.body_start_line - 2])
            else:
                assert _ATX.match(first)
    first_start = tree.nodes[0].start_line
    assert all(owner[line] == 0 for line in range(1, fm + 1))
    assert all(not lines[i - 1].strip() for i in range(fm + 1, first_start))
    assert all(owner[line] == 1 for line in range(first_start, n + 1))
    return tree

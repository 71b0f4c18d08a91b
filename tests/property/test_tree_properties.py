"""Tree invariants over random markdown and heading-rich generated documents.

Invariants (1-based inclusive lines; ``fm`` = front_matter_end, ``n`` = line_count):

* build_tree never raises on any normalised text, and is deterministic.
* Ranges: ``fm < start_line <= body_end_line <= end_line <= n`` and
  ``body_start_line <= body_end_line + 1``; nodes are in document order; a child's range lies
  inside its parent's; siblings do not overlap.
* Coverage: when the tree has nodes, every line in ``(fm, n]`` belongs to exactly one node's
  own text ``[start_line, body_end_line]``, except lines before the first node, which are
  then all blank (a blank preamble creates no node). Lines ``<= fm`` belong to no node. A
  document without headings has no nodes at all.
* A heading node's slice starts at its heading line: an ATX line, or a setext text line
  whose underline is line ``body_start_line - 1``.
* Inserting a heading changes no id of a node before it, nor of any node outside the
  subtree of the inserted heading's parent.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from proxypointer.tree import build_tree, normalise_text, slice_lines, split_lines

from .strategies import heading_documents, markdown_documents

_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_invariants(text: str) -> None:
    tree = build_tree(text, "doc")
    assert tree == build_tree(text, "doc")
    lines = split_lines(text)
    n, fm = tree.line_count, tree.front_matter_end
    assert n == len(lines)
    if not tree.has_headings:
        assert tree.nodes == ()
        return
    owner = [0] * (n + 1)
    prev_start = 0
    for node in tree.nodes:
        assert fm < node.start_line <= node.body_end_line <= node.end_line <= n
        assert node.body_start_line <= node.body_end_line + 1
        assert node.start_line > prev_start
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
        if node.kind == "heading":
            first = slice_lines(lines, node.start_line, node.end_line).split("\n")[0]
            assert first == lines[node.start_line - 1]
            setext = node.body_start_line - node.start_line >= 2
            if setext:
                assert _UNDERLINE.match(lines[node.body_start_line - 2])
            else:
                assert _ATX.match(first)
    first_start = tree.nodes[0].start_line
    assert all(owner[line] == 0 for line in range(1, fm + 1))
    assert all(not lines[i - 1].strip() for i in range(fm + 1, first_start))
    assert all(owner[line] == 1 for line in range(first_start, n + 1))


@SETTINGS
@given(markdown_documents(raw=True))
def test_invariants_on_random_markdown(raw):
    _check_invariants(normalise_text(raw))


@SETTINGS
@given(heading_documents())
def test_invariants_on_heading_documents(text):
    _check_invariants(text)


@SETTINGS
@given(st.text(alphabet=st.sampled_from("#=-`~>*_|<[]:. \t\n\r\fab1\u2028\x85"), max_size=200))
def test_never_raises_on_arbitrary_text(raw):
    _check_invariants(normalise_text(raw))


@SETTINGS
@given(heading_documents(), st.data())
def test_inserting_a_heading_keeps_other_ids(text, data):
    lines = split_lines(text)
    # Insert at a block boundary: after a blank line (or at the top), outside any fence.
    before = build_tree(text, "doc")
    candidates = [0] + [i + 1 for i, ln in enumerate(lines) if not ln.strip()]
    fences = [i for i, ln in enumerate(lines) if ln.startswith(("```", "~~~"))]
    candidates = [c for c in candidates if sum(1 for f in fences if f < c) % 2 == 0]
    assume(candidates)
    at = data.draw(st.sampled_from(candidates))
    level = data.draw(st.integers(1, 6))
    new_lines = lines[:at] + ["#" * level + " Inserted zz", ""] + lines[at:]
    after = build_tree("\n".join(new_lines) + "\n", "doc")
    inserted = next(n for n in after.nodes if n.title == "Inserted zz" and n.kind == "heading")
    assert inserted.start_line == at + 1
    shifted = {
        n.start_line if n.start_line <= at else n.start_line + 2: n
        for n in before.nodes
        if n.kind == "heading"  # a preamble may vanish when the heading goes on top
    }
    new_by_line = {n.start_line: n for n in after.nodes}
    parent = inserted.parent_id
    for line, old in shifted.items():
        new = new_by_line[line]
        outside = parent and not (
            after.node(parent).start_line <= line <= after.node(parent).end_line
        )
        if line <= at or outside:
            assert new.node_id == old.node_id, (old.title, line)

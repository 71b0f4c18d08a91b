"""Tree invariants over random markdown and heading-rich generated documents.

Invariants: see ``invariants.py`` (ranges nest, own texts cover the document once, titles
clean, heading lines are ATX or setext). Also:

* Inserting a heading changes no id of a node before it, nor of any node outside the
  subtree of the inserted heading's parent.
* A closed display-math block (``$$``, ``\\[``, ``\\begin{equation}``) never yields a heading.
* With every converter-output mode on, the range and coverage invariants still hold.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from proxypointer.config import TreeConfig
from proxypointer.tree import build_tree, normalise_text, split_lines

from .invariants import check_tree_invariants
from .strategies import MATH_MARK, heading_documents, markdown_documents

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_invariants(text: str) -> None:
    check_tree_invariants(text)


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


ALL_MODES = TreeConfig(bold_headings=True, numbered_headings=True, html_headings=True, relevel_numbered=True,
                       drop_row_headings=True, relevel_filing=True)


@SETTINGS
@given(markdown_documents(raw=True))
def test_invariants_with_every_converter_mode(raw):
    check_tree_invariants(normalise_text(raw), ALL_MODES, syntax=False)


@SETTINGS
@given(heading_documents())
def test_display_math_never_makes_a_heading(text):
    tree = check_tree_invariants(text)
    assert not any(MATH_MARK in n.title or n.title.startswith(("$$", "\\[")) for n in tree.nodes)
    assert all(MATH_MARK not in n.title for n in build_tree(text, "doc", ALL_MODES).nodes)

"""Tree invariants over random markdown and heading-rich generated documents.

Invariants: see ``invariants.py`` (ranges nest, own texts cover the document once, titles
clean, heading lines are ATX or setext). Also:

* Inserting a heading changes no id of a node before it, nor of any node outside the
  subtree of the inserted heading's parent.
* A closed display-math block (``$$``, ``\\[``, ``\\begin{equation}``) never yields a heading.
* With every converter-output mode on, the range and coverage invariants still hold.
* On converter-like documents with the converter rules on: every promoted line is a
  stand-alone top-level paragraph line that ``titles.is_title_line`` accepts (never in a list,
  quote or code), no heading left reads like a table row, and every level is the depth of the
  title's numbering (1 when it has none).
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from proxypointer.config import TreeConfig
from proxypointer.lines import normalise_text, split_lines
from proxypointer.tree.build import build_tree, explain_headings
from proxypointer.tree.headings import FILING_MIN_LABELS
from proxypointer.tree.markdown import parse_blocks
from proxypointer.tree.titles import filing_label, is_row_or_furniture, is_title_line, numbering_depth, statement_kind

from .invariants import check_tree_invariants
from .strategies import MATH_MARK, converter_documents, heading_documents, markdown_documents

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


COMMONMARK = TreeConfig(converter_output="off")


def _check_invariants(text: str) -> None:
    check_tree_invariants(text, COMMONMARK)
    check_tree_invariants(text, syntax=False)  # the defaults: converter rules where detected


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


ALL_MODES = TreeConfig(converter_output="on", bold_headings=True, numbered_headings=True, html_headings=True,
                       relevel_numbered=True)


@SETTINGS
@given(markdown_documents(raw=True))
def test_invariants_with_every_converter_mode(raw):
    check_tree_invariants(normalise_text(raw), ALL_MODES, syntax=False)


@SETTINGS
@given(heading_documents())
def test_display_math_never_makes_a_heading(text):
    tree = check_tree_invariants(text, COMMONMARK)
    assert not any(MATH_MARK in n.title or n.title.startswith(("$$", "\\[")) for n in tree.nodes)
    assert all(MATH_MARK not in n.title for n in build_tree(text, "doc", ALL_MODES).nodes)


@SETTINGS
@given(converter_documents())
def test_converter_rules_on_converter_like_documents(text):
    check_tree_invariants(text, syntax=False)
    check_tree_invariants(text, ALL_MODES, syntax=False)
    headings, _, report = explain_headings(text, TreeConfig(converter_output="on", relevel_filing=False))
    lines = split_lines(text)
    paragraphs = {t.map[0] + 1 for t in parse_blocks(text) if t.type == "paragraph_open" and t.level == 0 and t.map
                  and t.map[1] - t.map[0] == 1}
    for h in report.promoted:
        assert h.line in paragraphs and is_title_line(lines[h.line - 1]), h
        assert not lines[h.line - 1].startswith(("- ", "> ", "```"))
    assert not any(is_row_or_furniture(h.title) for h in headings)
    # levels from numbering, 2 when none; 3 only for a piece of a financial statement's table,
    # under the unnumbered statement title that opened it
    opened = None
    for h in headings:
        if numbering_depth(h.title) or h.level != 3:
            assert h.level == (numbering_depth(h.title) or 2), h
            opened = h if h.level == 2 and statement_kind(h.title) else None
        else:
            assert opened is not None, h
    # the default re-levels a filing from its labels: a part is a top heading, an item is never
    # deeper than 2, and no level passes 6
    filed, _, _ = explain_headings(text, TreeConfig(converter_output="on"))
    assert all(1 <= h.level <= 6 for h in filed)
    labels = [(filing_label(h.title) or ("", ""))[0] for h in filed]
    if sum(1 for k in labels if k in ("part", "item", "note")) >= FILING_MIN_LABELS:
        for h, kind in zip(filed, labels, strict=True):
            assert kind != "part" or h.level == 1, h
            assert kind != "item" or h.level <= 2, h

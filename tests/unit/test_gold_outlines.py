"""The hand-written gold outlines (tests/gold_outlines) that tree accuracy is measured against.

Each is one filing of ../shared/bench/financebench-dev (``gold_outlines_check``: of
financebench-check, for measuring only) written down from its printed contents
and checked page by page. This test checks what the scorer relies on: they parse, their pages
never go back, and their shape is a filing's (parts over items, notes under their heading).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proxypointer.tree.outline import load_outline
from proxypointer.tree.titles import filing_label

_TESTS = Path(__file__).resolve().parents[1]
GOLD = sorted((_TESTS / "gold_outlines").glob("*.yaml")) + sorted((_TESTS / "gold_outlines_check").glob("*.yaml"))


def test_there_are_at_least_eight_dev_gold_outlines():
    assert len([p for p in GOLD if p.parent.name == "gold_outlines"]) >= 8


@pytest.mark.parametrize("path", GOLD, ids=lambda p: p.stem)
def test_gold_outline_is_ordered_and_shaped_like_a_filing(path):
    o = load_outline(path)
    assert len(o) >= 10
    pages = [e.page for e in o.entries]
    assert pages == sorted(pages), "entries are in document order"
    for e in o.entries:
        label = filing_label(e.title)
        parent = o.entries[e.parent] if e.parent >= 0 else None
        if label and label[0] == "item" and parent is not None:
            assert parent.page <= e.page
        if label and label[0] == "note":
            assert parent is not None and filing_label(parent.title) == ("notes", ""), e.title

"""The delivery policy of big sections: subtree when it fits the cap, else own text + outline."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from proxypointer.retrieve.delivery import Delivery, OutlineEntry, fit_window, format_outline, plan_delivery


@dataclass
class Child:
    node_id: str
    title: str
    start_line: int
    end_line: int


def plan(tokens, start=1, end=None, body_end=None, children=(), chunks=(), cap=100, own=50, excerpt=0):
    end = len(tokens) if end is None else end
    return plan_delivery(start_line=start, end_line=end, body_end_line=end if body_end is None else body_end,
                         children=children, line_tokens=tokens, chunks=chunks, cap_tokens=cap, own_tokens=own,
                         citation_base="doc.md", excerpt_tokens=excerpt)


def test_a_subtree_within_the_cap_is_delivered_whole():
    assert plan([10] * 10) == Delivery("subtree", 1, 10)  # 100 tokens, cap 100
    assert plan([10] * 30, cap=0) == Delivery("subtree", 1, 30)  # cap 0: always whole
    assert plan([10] * 10, start=3, end=7, cap=50) == Delivery("subtree", 3, 7)


def test_a_big_section_gives_its_own_text_and_an_outline_of_its_children():
    kids = [Child("a", "1.1 Scope", 5, 12), Child("b", "1.2 Method", 13, 30)]
    got = plan([10] * 30, body_end=4, children=kids)
    assert (got.kind, got.start_line, got.end_line, got.max_tokens) == ("own_text", 1, 4, 0)
    assert got.outline == (OutlineEntry("a", "1.1 Scope", 5, 12, "doc.md#L5-L12"),
                           OutlineEntry("b", "1.2 Method", 13, 30, "doc.md#L13-L30"))
    assert format_outline(got.outline, "  ") == "  - 1.1 Scope (L5-L12)\n  - 1.2 Method (L13-L30)"
    assert got.outline[0].to_dict()["citation"] == "doc.md#L5-L12"
    # a heading with no own text before its first child: the heading line alone
    got = plan([10] * 30, body_end=1, children=kids)
    assert (got.kind, got.start_line, got.end_line) == ("own_text", 1, 1)


def test_a_long_own_text_is_cut_to_one_window_around_its_best_chunks():
    tokens = [10] * 40  # a leaf of 400 tokens, window 50
    got = plan(tokens, chunks=[(20, 21), (23, 24), (2, 3)])
    assert got.kind == "excerpt" and got.outline == ()
    # seeded with the best chunk (20-21), widened to the next one (23-24: 50 tokens), not to 2-3
    assert (got.start_line, got.end_line) == (20, 24)
    assert sum(tokens[got.start_line - 1 : got.end_line]) <= 50
    # grown a line after, then a line before, while it fits
    got = plan(tokens, chunks=[(20, 20)])
    assert (got.start_line, got.end_line) == (18, 22)
    got = plan([10] * 40, chunks=[(40, 40)])
    assert (got.start_line, got.end_line) == (36, 40)  # at the end of the text: grown backwards
    got = plan([10] * 40)  # no chunk known: from the heading line on
    assert (got.start_line, got.end_line) == (1, 5)


def test_the_excerpt_window_may_be_smaller_than_the_own_text_delivered_whole():
    # own text up to 50 tokens comes whole; a longer one is cut to a 30-token window
    assert plan([10] * 5, cap=40, excerpt=30) == Delivery("own_text", 1, 5)
    got = plan([10] * 40, chunks=[(20, 20)], excerpt=30)
    assert got.kind == "excerpt" and (got.start_line, got.end_line) == (19, 21)


def test_chunks_outside_the_own_text_do_not_seed_the_window():
    kids = [Child("a", "Child", 21, 40)]
    got = plan([10] * 40, body_end=20, children=kids, chunks=[(30, 31), (10, 10)])
    assert got.kind == "excerpt" and got.start_line <= 10 <= got.end_line <= 20
    assert got.outline[0].node_id == "a"


def test_a_line_longer_than_the_window_is_marked_for_cutting():
    tokens = [5, 400, 5, 5] + [10] * 20
    got = plan(tokens, chunks=[(2, 3)])
    assert (got.kind, got.start_line, got.end_line, got.max_tokens) == ("excerpt", 2, 2, 50)
    got = plan([30, 30, 30] + [10] * 10, chunks=[(1, 3)])  # the best chunk alone is 90 tokens
    assert (got.start_line, got.end_line, got.max_tokens) == (1, 1, 0)


def test_bad_ranges_are_refused():
    with pytest.raises(ValueError, match="outside"):
        plan([1, 1], start=2, end=3)


class WordCounter:
    """One word piece per whitespace-separated word."""

    @staticmethod
    def count(text: str) -> int:
        return len(text.split())


def test_a_window_cut_to_a_budget_keeps_the_lines_that_matched():
    lines = [f"w{i} x y" for i in range(100)]  # 3 word pieces a line
    # the seed (lines 50-51) first, then a line after and a line before in turn
    assert fit_window(lines, (50, 51), 12, WordCounter) == (49, 52, 12)
    assert fit_window(lines, (50, 51), 15, WordCounter) == (49, 53, 15)
    # a seed longer than the budget: as much of it as fits, from its start
    assert fit_window(lines, (10, 40), 9, WordCounter) == (10, 12, 9)
    # at the edges the window grows the only way it can
    assert fit_window(lines, (0, 0), 9, WordCounter) == (0, 2, 9)
    assert fit_window(lines, (99, 99), 9, WordCounter) == (97, 99, 9)
    # a seed outside the text starts at the top; nothing fits: an empty window at the seed
    assert fit_window(lines, (500, 510), 6, WordCounter) == (0, 1, 6)
    assert fit_window(lines, (50, 51), 2, WordCounter) == (50, 49, 0)
    assert fit_window(lines, (5, 5), 10_000, WordCounter) == (0, 99, 300)

"""Fusion, section scoring, BM25, packing under a budget, and Retriever.assemble."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from proxypointer.assembly import (
    LexicalIndex,
    cut_to_tokens,
    fuse_rrf,
    matches_where,
    pack_windows,
    rank_sections,
    subtract_interval,
)
from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.errors import ConfigError
from proxypointer.store import Hit

DATA = Path(__file__).resolve().parents[2] / "data"


def hit(cid, node, score=0.0, start=1, end=10, cs=None, ce=None, doc="d", text=""):
    meta = {"doc_id": doc, "doc_hash": doc + "h", "node_id": node, "start_line": start, "end_line": end,
            "chunk_start_line": cs if cs is not None else start, "chunk_end_line": ce if ce is not None else end}
    return Hit(cid, text, meta, score)


def test_fuse_rrf_hand_computed():
    a, b, c = hit("a", "n1"), hit("b", "n2"), hit("c", "n3")
    fused = fuse_rrf([[a, b], [c, a]], [1.0, 1.0], rrf_k=1)
    # a: 1/2 + 1/3; b: 1/3; c: 1/2
    assert [h.chunk_id for h in fused] == ["a", "c", "b"]
    assert fused[0].score == pytest.approx(1 / 2 + 1 / 3)
    assert fused[1].score == pytest.approx(1 / 2)
    fused = fuse_rrf([[a, b], [c, a]], [1.0, 0.0], rrf_k=1)
    assert [h.chunk_id for h in fused] == ["a", "b", "c"]


def test_rank_sections_methods():
    hits = [hit("1", "x", 0.9), hit("2", "y", 0.8), hit("3", "y", 0.7), hit("4", "y", 0.1), hit("5", "x", 0.05)]
    assert [g[0].metadata["node_id"] for g in rank_sections(hits, "max")] == ["x", "y"]
    # sum of top 2: x 0.95, y 1.5
    groups = rank_sections(hits, "sum", top_n=2)
    assert [g[0].metadata["node_id"] for g in groups] == ["y", "x"]
    assert [h.chunk_id for h in groups[0]] == ["2", "3", "4"]
    # rrf, k=1: x 1/2 + 1/6, y 1/3 + 1/4 + 1/5
    assert [g[0].metadata["node_id"] for g in rank_sections(hits, "rrf", rrf_k=1)] == ["y", "x"]


def test_subtract_interval():
    assert subtract_interval(1, 10, []) == [(1, 10)]
    assert subtract_interval(1, 10, [(3, 4), (8, 12)]) == [(1, 2), (5, 7)]
    assert subtract_interval(5, 6, [(1, 10)]) == []
    assert subtract_interval(5, 6, [(1, 2), (9, 9)]) == [(5, 6)]


def test_matches_where():
    m = {"doc_id": "a", "kind": "heading"}
    assert matches_where(m, None)
    assert matches_where(m, {"doc_id": "a"})
    assert not matches_where(m, {"doc_id": "b"})
    assert matches_where(m, {"doc_id": {"$in": ["a", "b"]}})
    assert matches_where(m, {"$and": [{"doc_id": "a"}, {"kind": {"$ne": "window"}}]})
    assert not matches_where(m, {"$or": [{"doc_id": "b"}, {"kind": "window"}]})


TOKS = {"dh": [10] * 40, "eh": [10] * 40}


def test_pack_small_section_whole_large_section_by_chunk():
    small = hit("s", "small", 0.9, start=1, end=3, cs=2, ce=2)  # 30 tokens
    large = hit("l", "large", 0.8, start=10, end=39, cs=20, ce=21)  # 300 tokens
    windows = pack_windows([[small], [large]], TOKS.get, 1000, whole_section_tokens=100, expand=False)
    assert [(w.start_line, w.end_line, w.whole, w.tokens) for w in windows] == [(1, 3, True, 30), (20, 21, False, 20)]


def test_pack_never_delivers_a_line_twice_parent_after_child():
    child = hit("c", "child", 0.9, start=5, end=8, cs=5, ce=8)
    parent = hit("p", "parent", 0.8, start=1, end=20, cs=1, ce=10)
    windows = pack_windows([[child], [parent]], TOKS.get, 1000, whole_section_tokens=500, expand=False)
    spans = [(w.start_line, w.end_line) for w in windows]
    assert spans == [(5, 8), (1, 4), (9, 10)]
    lines = [x for a, b in spans for x in range(a, b + 1)]
    assert len(lines) == len(set(lines))


def test_pack_stops_at_the_budget_and_expands_inside_sections():
    a = hit("a", "A", 0.9, start=1, end=20, cs=5, ce=6)
    b = hit("b", "B", 0.8, start=21, end=40, cs=30, ce=30)
    w = pack_windows([[a], [b]], TOKS.get, 25, whole_section_tokens=0, expand=False)
    assert [(x.start_line, x.end_line) for x in w] == [(5, 6), (30, 30)]  # 30 tokens: the last one is cut later
    w = pack_windows([[a], [b]], TOKS.get, 70, whole_section_tokens=0, expand=True)
    # 30 tokens seeded, 40 more by alternate growth: after, before, in rank order.
    assert [(x.start_line, x.end_line) for x in w] == [(4, 7), (29, 31)]
    assert sum(x.tokens for x in w) == 70


def test_pack_sections_order_round_robin():
    a1, a2 = hit("a1", "A", 0.9, start=1, end=20, cs=1, ce=1), hit("a2", "A", 0.85, start=1, end=20, cs=10, ce=10)
    b1 = hit("b1", "B", 0.5, start=21, end=40, cs=25, ce=25)
    w = pack_windows([[a1, a2], [b1]], TOKS.get, 20, whole_section_tokens=0, order="sections", expand=False)
    assert [(x.start_line, x.end_line) for x in w] == [(1, 1), (25, 25)]
    w = pack_windows([[a1, a2], [b1]], TOKS.get, 20, whole_section_tokens=0, order="chunks", expand=False)
    assert [(x.start_line, x.end_line) for x in w] == [(1, 1), (10, 10)]


def test_pack_merges_adjacent_windows_of_a_section():
    a1, a2 = hit("a1", "A", 0.9, start=1, end=20, cs=3, ce=4), hit("a2", "A", 0.8, start=1, end=20, cs=5, ce=6)
    w = pack_windows([[a1, a2]], TOKS.get, 1000, whole_section_tokens=0, expand=False)
    assert [(x.start_line, x.end_line, x.tokens) for x in w] == [(3, 6, 40)]


def test_cut_to_tokens_exact_and_fallback(fake_embedder):
    tok = fake_embedder.tokenizer
    text = "The quick brown fox jumps over the lazy dog."
    assert cut_to_tokens(text, 100, tok) == text
    cut = cut_to_tokens(text, 3, tok)
    assert cut == "The quick brown" and tok.count(cut) == 3
    assert cut_to_tokens(text, 0, tok) == ""

    class Words:
        def count(self, t):
            return len(t.split())

    assert cut_to_tokens("a b c d", 2, Words()) == "a b "


def test_lexical_index_ranks_by_bm25():
    hits = [hit("1", "a", text="hashing trick for features"), hit("2", "b", text="news corpora and data"),
            hit("3", "c", text="the the the")]
    lex = LexicalIndex(hits)
    found = lex.search("Which hashing trick?", 5)
    assert [h.chunk_id for h in found] == ["1"] and found[0].score > 0
    assert lex.search("nothing matches", 5) == []
    assert [h.chunk_id for h in lex.search("data hashing", 5, lambda h: h.metadata["node_id"] == "b")] == ["2"]


@pytest.fixture
def index(make_index):
    def _make(**retrieval):
        cfg = dataclasses.replace(ProxyPointerConfig(), retrieval=RetrievalConfig(**retrieval))
        idx = make_index(cfg)
        idx.ingest([DATA], show_progress=False)
        return idx

    return _make


def test_assemble_fills_the_budget_without_repeating_lines(index):
    from proxypointer.retrieval import Retriever
    from proxypointer.tree import split_lines

    idx = index()
    r = Retriever(idx)
    for budget in (50, 300, 1500):
        blocks = r.assemble("sick leave pay", budget)
        assert blocks
        assert sum(b.delivered_tokens for b in blocks) <= budget
        seen = set()
        for b in blocks:
            assert b.start_line <= b.delivered_start_line <= b.delivered_end_line <= b.end_line
            lines = split_lines(idx.registry.load_source(idx.registry.get(b.doc_id).doc_hash))
            full = "\n".join(lines[b.delivered_start_line - 1 : b.delivered_end_line])
            assert full.startswith(b.delivered_text)
            assert idx.embedder.tokenizer.count(b.delivered_text) == b.delivered_tokens
            own = {(b.doc_id, x) for x in range(b.delivered_start_line, b.delivered_end_line + 1)}
            assert not own & seen
            seen |= own
    with pytest.raises(ConfigError):
        r.assemble("x", 0)


def test_hybrid_and_section_scoring_keep_sections_distinct(index):
    from proxypointer.retrieval import Retriever

    for kwargs in ({"hybrid": True}, {"section_scoring": "sum"}, {"section_scoring": "rrf", "hybrid": True}):
        r = Retriever(index(**kwargs))
        secs = r.retrieve("parental leave", k=5)
        keys = [(s.doc_id, s.node_id) for s in secs]
        assert len(keys) == len(set(keys)) == 5
        assert [s.score for s in secs] == sorted((s.score for s in secs), reverse=True)
        one = r.retrieve("parental leave", k=3, doc_ids=[secs[0].doc_id])
        assert {s.doc_id for s in one} == {secs[0].doc_id}


def test_title_routing_restricts_to_a_named_document(index):
    from proxypointer.retrieval import Retriever, _strip_titles

    assert _strip_titles("Employee  handbook. How much sick pay?", ["Employee Handbook"]) == "How much sick pay?"
    assert _strip_titles("Employee Handbook", ["Employee Handbook"]) == "Employee Handbook"
    idx = index(title_routing_docs=2)
    titles = {r.doc_id: r.title for r in idx.registry.documents()}
    doc = next(d for d, t in titles.items() if t == "Telemetry Gateway Specification")
    r = Retriever(idx)
    secs = r.retrieve("Telemetry Gateway Specification. What happens when a buffer is full?", k=5)
    assert secs and {s.doc_id for s in secs} == {doc}
    blocks = r.assemble("Telemetry Gateway Specification. What happens when a buffer is full?", 400)
    assert blocks and {b.doc_id for b in blocks} == {doc}
    # Without the title every document stays searchable; a doc filter of one document skips routing.
    assert len({s.doc_id for s in r.retrieve("leave buffer retention expenses visit", k=10)}) > 1
    assert r.retrieve("Telemetry Gateway Specification. leave", k=2, doc_ids=["employee-handbook"])[0].doc_id \
        == "employee-handbook"

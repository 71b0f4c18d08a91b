"""Context assembly: packing lines under a budget, Assembler.assemble and Assembler.pack."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.errors import ConfigError
from proxypointer.retrieve.context import Assembler, ContextBlock, cut_to_tokens, pack_windows, subtract_interval
from proxypointer.store.chroma import Hit

DATA = Path(__file__).resolve().parents[2] / "data"


def hit(cid, node, score=0.0, start=1, end=10, cs=None, ce=None, doc="d", text=""):
    meta = {"doc_id": doc, "doc_hash": doc + "h", "node_id": node, "start_line": start, "end_line": end,
            "chunk_start_line": cs if cs is not None else start, "chunk_end_line": ce if ce is not None else end}
    return Hit(cid, text, meta, score)


def test_subtract_interval():
    assert subtract_interval(1, 10, []) == [(1, 10)]
    assert subtract_interval(1, 10, [(3, 4), (8, 12)]) == [(1, 2), (5, 7)]
    assert subtract_interval(5, 6, [(1, 10)]) == []
    assert subtract_interval(5, 6, [(1, 2), (9, 9)]) == [(5, 6)]


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


@pytest.fixture
def index(make_index):
    def _make(**retrieval):
        cfg = dataclasses.replace(ProxyPointerConfig(), retrieval=RetrievalConfig(**retrieval))
        idx = make_index(cfg)
        idx.ingest([DATA], show_progress=False)
        return idx

    return _make


def test_assemble_fills_the_budget_without_repeating_lines(index):
    from proxypointer.lines import split_lines
    from proxypointer.retrieve.retriever import Retriever

    idx = index()
    a = Assembler(Retriever(idx))
    for budget in (50, 300, 1500):
        blocks = a.assemble("sick leave pay", budget)
        assert blocks and all(isinstance(b, ContextBlock) for b in blocks)
        assert sum(b.tokens for b in blocks) <= budget
        seen = set()
        for b in blocks:
            s = b.section
            assert s.start_line <= b.start_line <= b.end_line <= s.end_line
            lines = split_lines(idx.registry.sources.load(idx.registry.get(b.doc_id).doc_hash))
            full = "\n".join(lines[b.start_line - 1 : b.end_line])
            assert full.startswith(b.text)
            assert idx.embedder.tokenizer.count(b.text) == b.tokens
            assert b.citation == f"{b.doc_id}.md#L{b.start_line}-L{b.end_line}"
            own = {(b.doc_id, x) for x in range(b.start_line, b.end_line + 1)}
            assert not own & seen
            seen |= own
    with pytest.raises(ConfigError):
        a.assemble("x", 0)
    with pytest.raises(ConfigError, match="query"):
        a.assemble("  ", 100)


def test_assemble_blocks_carry_the_cosine_of_their_chunk(index):
    from proxypointer.retrieve.retriever import Retriever

    idx = index(hybrid=True, section_scoring="sum")
    blocks = Assembler(Retriever(idx)).assemble("parental leave pay", 800)
    q = idx.embedder.encode_query("parental leave pay")
    ids = [b.section.chunk_id for b in blocks]
    found, vectors = idx.store.vectors(ids)
    cosine = dict(zip(found, (vectors @ q).tolist(), strict=True))
    assert blocks and all(b.section.score == pytest.approx(cosine[b.section.chunk_id], abs=1e-5) for b in blocks)


def test_assemble_with_an_empty_allow_list_delivers_nothing(index):
    from proxypointer.retrieve.retriever import Retriever

    a = Assembler(Retriever(index()))
    assert a.assemble("parental leave pay", 500, doc_ids=[]) == []
    assert a.assemble("parental leave pay", 500, doc_ids=()) == []
    assert a.assemble("parental leave pay", 500, source_prefix="no-such-prefix") == []
    assert a.assemble("parental leave pay", 500, where={})


def test_pack_keeps_whole_sections_within_the_budget(index):
    from proxypointer.retrieve.retriever import Retriever

    r = Retriever(index())
    a = Assembler(r)
    sections = r.retrieve("How is parental leave paid?", k=4)
    tok = r.index.embedder.tokenizer
    sizes = [tok.count(s.text) for s in sections]
    everything = a.pack(sections, sum(sizes))
    assert [b.section for b in everything] == sections and all(b.whole for b in everything)
    # a budget that leaves the second section out still takes later ones that fit
    budget = sizes[0] + min(sizes[2:])
    if sizes[1] > min(sizes[2:]):
        got = a.pack(sections, budget)
        assert got[0].section == sections[0] and sections[1] not in [b.section for b in got]
        assert sum(b.tokens for b in got) <= budget
    # the first section alone over the budget: cut at a word-piece boundary, never over, at
    # the first line of its best chunk when no whole line fits
    (first,) = a.pack(sections[:1], 5)
    best = sections[0]
    seed_line = best.text.split("\n")[best.chunk_start_line - best.text_start_line]
    assert first.tokens == 5 == tok.count(first.text) and seed_line.startswith(first.text)
    assert first.citation.startswith(sections[0].citation.split("#")[0]) and not first.whole
    with pytest.raises(ConfigError):
        a.pack(sections, 0)


def test_title_routing_restricts_to_a_named_document(index):
    from proxypointer.retrieve.retriever import Retriever

    idx = index(title_routing_docs=2)
    titles = {r.doc_id: r.title for r in idx.registry.documents()}
    doc = next(d for d, t in titles.items() if t == "Telemetry Gateway Specification")
    r = Retriever(idx)
    secs = r.retrieve("Telemetry Gateway Specification. What happens when a buffer is full?", k=5)
    assert secs and {s.doc_id for s in secs[:3]} == {doc}
    n_doc = len({h.split("::")[2] for h in idx.registry.chunk_ids(doc)})
    assert {s.doc_id for s in secs[:n_doc]} == {doc}  # the named document first, then the others
    blocks = Assembler(r).assemble("Telemetry Gateway Specification. What happens when a buffer is full?", 400)
    assert blocks and {b.doc_id for b in blocks} == {doc}
    # Without the title every document stays searchable; a doc filter of one document skips routing.
    assert len({s.doc_id for s in r.retrieve("leave buffer retention expenses visit", k=10)}) > 1
    assert r.retrieve("Telemetry Gateway Specification. leave", k=2, doc_ids=["employee-handbook"])[0].doc_id \
        == "employee-handbook"

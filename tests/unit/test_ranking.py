"""Ranking: fusion, section scores, filters, lexical terms, BM25 over titles, long queries."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest

from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.errors import ConfigError
from proxypointer.retrieve.ranking import (
    LexicalIndex,
    Ranker,
    fuse_rrf,
    lexical_terms,
    rank_sections,
    score_sections,
    strip_titles,
)
from proxypointer.store.chroma import Hit
from proxypointer.store.filters import check_where, matches_where
from proxypointer.store.terms import name_query_words, name_words, title_answers

DATA = Path(__file__).resolve().parents[2] / "data"


def hit(cid, node, score=0.0, doc="d", text="", **meta):
    return Hit(cid, text, {"doc_id": doc, "node_id": node, **meta}, score)


def test_fuse_rrf_hand_computed():
    a, b, c = hit("a", "n1"), hit("b", "n2"), hit("c", "n3")
    fused = fuse_rrf([[a, b], [c, a]], [1.0, 1.0], rrf_k=1)
    # a: 1/2 + 1/3; b: 1/3; c: 1/2
    assert [h.chunk_id for h in fused] == ["a", "c", "b"]
    assert fused[0].score == pytest.approx(1 / 2 + 1 / 3)
    assert fused[1].score == pytest.approx(1 / 2)
    fused = fuse_rrf([[a, b], [c, a]], [1.0, 0.0], rrf_k=1)
    assert [h.chunk_id for h in fused] == ["a", "b", "c"]


def test_section_scores_hand_computed():
    hits = [hit("1", "x", 0.9), hit("2", "y", 0.8), hit("3", "y", 0.7), hit("4", "y", 0.1), hit("5", "x", 0.05)]
    assert [(round(s, 6), g[0].metadata["node_id"]) for s, g in score_sections(hits, "max")] == [(0.9, "x"), (0.8, "y")]
    # sum of the top 2: x 0.95, y 1.5
    scored = score_sections(hits, "sum", top_n=2)
    assert [(round(s, 6), g[0].metadata["node_id"]) for s, g in scored] == [(1.5, "y"), (0.95, "x")]
    assert [h.chunk_id for h in scored[0][1]] == ["2", "3", "4"]
    # rrf, k=1: x 1/2 + 1/6, y 1/3 + 1/4 + 1/5
    scored = score_sections(hits, "rrf", rrf_k=1)
    assert [g[0].metadata["node_id"] for _, g in scored] == ["y", "x"]
    assert scored[0][0] == pytest.approx(1 / 3 + 1 / 4 + 1 / 5)
    assert [g for _, g in scored] == rank_sections(hits, "rrf", rrf_k=1)
    with pytest.raises(ConfigError, match="section_scoring"):
        score_sections(hits, "mean")


def test_lexical_terms_are_plain_words():
    assert lexical_terms("What is the parental-leave pay?") == ["what", "parental", "leave", "pay"]
    # FTS5 syntax in a query is only words: quotes, operators, column filters, stars
    assert lexical_terms('"NEAR(a b)" OR text:pay* AND -x') == ["near", "text", "pay"]
    assert lexical_terms("a b c") == [] and lexical_terms("") == []
    assert lexical_terms(" ".join(f"w{i}" for i in range(100)), max_terms=3) == ["w97", "w98", "w99"]


def test_a_title_answers_a_query_when_it_shares_its_subject_and_says_more():
    assert title_answers("what does error E42 mean", "Error E42 means the coolant pump has failed")
    assert title_answers("What do E42 errors mean?", "**Error E42:** the coolant pump has failed")
    # only naming words of the query: nothing more to read there
    assert not title_answers("network changelog empty section: how do I install it?", "Empty Section")
    assert not title_answers("what does error E42 mean", "Error E42")
    # one shared word is a topic, not an answer; question words never count
    assert not title_answers("how do I reset the network", "Network")
    assert not title_answers("what does it do and how", "What Does It Do")
    assert not title_answers("anything", "") and not title_answers("", "Error E42 means failure")


def test_lexical_index_ranks_by_bm25():
    hits = [hit("1", "a", text="hashing trick for features"), hit("2", "b", text="news corpora and data"),
            hit("3", "c", text="the the the")]
    lex = LexicalIndex(hits)
    found = lex.search("Which hashing trick?", 5)
    assert [h.chunk_id for h in found] == ["1"] and found[0].score > 0
    assert lex.search("nothing matches", 5) == []
    assert [h.chunk_id for h in lex.search("data hashing", 5, lambda h: h.metadata["node_id"] == "b")] == ["2"]


def test_strip_titles():
    assert strip_titles("Employee  handbook. How much sick pay?", ["Employee Handbook"]) == "How much sick pay?"
    assert strip_titles("Employee Handbook", ["Employee Handbook"]) == "Employee Handbook"


@pytest.fixture
def data_index(make_index):
    def _make(**retrieval):
        cfg = dataclasses.replace(ProxyPointerConfig(), retrieval=RetrievalConfig(**retrieval))
        idx = make_index(cfg)
        assert not idx.ingest([DATA], show_progress=False).failed
        return idx

    return _make


def test_lexical_search_finds_words_of_what_was_embedded(data_index):
    idx = data_index(hybrid=True)
    ranker = Ranker(idx)
    hits = ranker.hydrate(ranker.lexical("TG-501", 5))
    assert hits and all("TG-501" in (h.text + h.metadata["breadcrumb"]) for h in hits[:1])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # breadcrumb words match: the handbook's title is in every one of its chunks' breadcrumbs
    crumb = ranker.hydrate(ranker.lexical("employee handbook", 50))
    assert crumb and {h.metadata["doc_id"] for h in crumb} == {"employee-handbook"}
    # Porter stems: "paying" and "pays" meet "pay"
    pay = {h.chunk_id for h in ranker.lexical("pay", 50)}
    assert pay and {h.chunk_id for h in ranker.lexical("paying", 50)} == pay == {
        h.chunk_id for h in ranker.lexical("pays", 50)}
    assert ranker.lexical("the of and", 5) == []  # stop words only: no lexical query


def test_lexical_hits_honour_every_filter_like_dense_hits(data_index):
    idx = data_index(hybrid=True)
    ranker = Ranker(idx)
    for where in ({"doc_id": "employee-handbook"}, {"level": {"$gt": 1}}, {"level": {"$lte": 1}},
                  {"$or": [{"doc_id": "site-visit-notes"}, {"kind": "preamble"}]}, {"kind": {"$nin": ["heading"]}},
                  {"$and": [{"doc_id": "employee-handbook"}, {"level": {"$gte": 3}}]}):
        flt = check_where(where)
        lexical = ranker.hydrate(ranker.lexical("leave pay pressure buffer", 200, flt))
        dense = ranker.dense("leave pay pressure buffer", 200, flt, hydrate=True)
        assert lexical, where
        assert all(matches_where(h.metadata, flt) for h in lexical + dense), where
        assert {h.chunk_id for h in lexical} <= {h.chunk_id for h in dense}  # dense saw them all (200 > chunks)


def test_a_query_longer_than_the_model_reads_is_windowed_with_a_warning(data_index, caplog):
    idx = data_index()
    ranker = Ranker(idx)
    tok = idx.embedder.tokenizer
    preamble = "\n\n".join(["Kitchen rota, printer toner and the car park barrier are all sorted now. " * 6] * 3)
    question = "How is parental leave paid?"
    long_q = f"{preamble}\n\n{question}"
    assert tok.count(long_q) > tok.max_seq_length
    with caplog.at_level(logging.WARNING, logger="proxypointer.retrieve.ranking"):
        vectors = ranker.query_vectors(long_q)
    (msg,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert f"query has {tok.count(long_q)} word pieces" in msg and f"the {tok.max_seq_length - 2} the model" in msg
    assert vectors.shape[0] > 1 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # the question's own window is among them: its vector is the question's vector
    assert np.allclose(vectors[-1], idx.embedder.encode_query(question))
    alone = ranker.dense(question, 3, hydrate=True)
    windowed = ranker.dense(long_q, 3, hydrate=True)
    assert windowed[0].chunk_id == alone[0].chunk_id and windowed[0].score >= alone[0].score - 1e-6
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="proxypointer.retrieve.ranking"):
        assert ranker.query_vectors(question).shape[0] == 1
    assert not caplog.records


def test_lexical_search_looks_inside_the_filtered_documents(make_index, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\n" + "".join(f"## K{i}\n\nkettle kettle kettle\n\n" for i in range(6)))
    (corpus / "b.md").write_text("# B\n\n" + "".join(f"## T{i}\n\nthe kettle and a toaster {i}\n\n" for i in range(4)))
    idx = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(hybrid=True)))
    assert not idx.ingest([corpus], show_progress=False).failed
    ranker = Ranker(idx)
    assert {h.metadata["doc_id"] for h in ranker.lexical("kettle", 3)} == {"a"}
    # b's chunks rank below a's: they are still found when the filter names b with another condition
    got = ranker.hydrate(ranker.lexical("kettle", 3, check_where({"doc_id": "b", "kind": "heading"})))
    assert len(got) == 3 and {(h.metadata["doc_id"], h.metadata["kind"]) for h in got} == {("b", "heading")}


def test_name_words_split_file_names_and_fiscal_years():
    assert name_words("CVSHEALTH_2022_10K") == ["cvshealth", "2022", "10k", "10"]
    assert name_words("FY2022 report") == ["fy2022", "fy", "2022", "report"]
    assert "lockheedmartin" in name_query_words("What is Lockheed Martin's FY2021 net working capital?")
    assert "americanwaterworks" in name_query_words("Did American Water Works pay dividends?")


def test_title_routing_reads_the_file_name_and_the_fiscal_year(make_index, tmp_path):
    # Filings named as FinanceBench (and SEC users) name them; the question names the company
    # and the fiscal year, never the file: routing must still send it to the right filing first.
    corpus = tmp_path / "filings"
    corpus.mkdir()
    for name in ("ACMECORP_2021_10K", "ACMECORP_2022_10K", "GLOBEX_2022_10K", "INITECH_2022_10K"):
        (corpus / f"{name}.md").write_text("# FORM 10-K\n\n## Revenue\n\nRevenue grew in the year.\n")
    idx = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(title_routing_docs=2)))
    assert not idx.ingest([corpus], show_progress=False).failed
    route = Ranker(idx).route("What was Acme Corp's FY2022 revenue growth?", None)
    assert route.boost[0] == "ACMECORP_2022_10K" and set(route.boost) <= {"ACMECORP_2021_10K", "ACMECORP_2022_10K"}


# -- the title field and label lookup -------------------------------------------------------------
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def filing(make_index):
    idx = make_index()
    rep = idx.ingest([FIXTURES / "harborlight-10k-2023.md", FIXTURES / "water-for-growth-report.md"],
                     show_progress=False)
    assert rep.indexed == 2 and not rep.failed
    return idx


def _node_of(chunk_id):
    return chunk_id.rsplit("::", 3)[2]


def test_a_section_found_by_its_title_gives_its_best_chunk(filing):
    ranker = Ranker(filing)
    live = ranker.trees.get("harborlight-10k-2023")
    bs = next(n for n in live.tree.nodes if n.title == "CONSOLIDATED BALANCE SHEETS")
    vectors = ranker.query_vectors("balance sheet")
    cosine: dict[str, float] = {}
    hits = ranker.titles("balance sheet", 5, None, vectors, cosine)
    assert _node_of(hits[0].chunk_id) in live.subtree(bs.node_id)
    own = live.subtree_chunks(bs.node_id)
    assert hits[0].chunk_id == max(own, key=cosine.__getitem__)  # the best chunk by cosine similarity
    assert set(own) <= set(cosine) and hits[0].score > 0  # BM25 of the title; scored chunks are kept
    assert len({h.chunk_id for h in hits}) == len(hits)
    # "sheet" meets "SHEETS"; a document filter is honoured; a filter on other fields too
    only = ranker.titles("balance sheet", 5, {"doc_id": "water-for-growth-report"}, vectors, {})
    assert all(h.metadata["doc_id"] == "water-for-growth-report" for h in only)
    level = ranker.titles("balance sheet", 5, {"level": {"$lte": 2}}, vectors, {})
    assert all(h.metadata["level"] <= 2 for h in ranker.hydrate(level))
    assert ranker.titles("the of and", 5, None, vectors, {}) == []  # stop words only


def test_title_rows_carry_the_subtree_chunks_of_the_live_tree_and_older_rows_still_work(filing, monkeypatch):
    ranker = Ranker(filing)
    rows = filing.registry.lexical.title_search(["balance", "sheet", "note", "debt", "water", "report"], 200)
    assert len(rows) > 5
    for row in rows:  # what the row keeps is what the tree says
        assert row.chunk_ids == tuple(ranker.trees.get(row.doc_id, row.version).subtree_chunks(row.node_id))
    vectors = ranker.query_vectors("balance sheet")
    fresh = Ranker(filing)
    monkeypatch.setattr(fresh.trees, "get", lambda *a: pytest.fail("a tree was read"))
    stored = fresh.titles("balance sheet", 5, None, vectors, {})
    monkeypatch.undo()
    # rows of an older writer (no chunk ids) are answered from the trees, with the same hits
    filing.registry._db.execute("UPDATE title_rows SET chunks = NULL")
    assert Ranker(filing).titles("balance sheet", 5, None, vectors, {}) == stored


def test_a_label_named_in_the_query_puts_its_section_first(filing):
    ranker = Ranker(filing)
    live = ranker.trees.get("harborlight-10k-2023")
    note14 = next(n for n in live.tree.nodes if n.title.startswith("Note 14"))
    route = ranker.route("What does Note 14 say about the revolving credit facility?", None)
    ranking = ranker.rank(route, 20)
    assert _node_of(ranking.hits[0].chunk_id) in live.subtree(note14.node_id)
    assert ranking.labelled == (ranking.hits[0].chunk_id,)
    assert ranking.hits[0].score > ranking.hits[1].score
    assert ranking.hits[0].chunk_id in ranking.cosine
    # the same question without the label lookup, and a question naming no label
    off = Ranker(filing)
    off.config = dataclasses.replace(filing.config.retrieval, label_lookup=False)
    assert off.rank(route, 20).labelled == ()
    fresh = Ranker(filing)
    plain = fresh.rank(fresh.route("What is the revolving credit facility?", None), 20)
    assert plain.labelled == () and len(fresh.labels._cache) == 0  # no label named: no label index built
    # a label no scoped document defines changes nothing
    assert ranker.rank(ranker.route("What does Note 99 say?", None), 20).labelled == ()


# -- focus: a query that names its document before it asks ---------------------------------------
GLACIER = """# Glacier Melt Survey

## Abstract

This glacier melt survey reports glacier melt rates across the survey area, a melt survey of
every glacier in the range.

## Instruments

Lidar tools measured the ice thickness on each visit, from a helicopter platform, with
calibration against stakes drilled into the firn at fixed points along transect lines every
spring and autumn, logged by two observers who cross-checked readings before leaving camp.

## Results

Thinning was fastest on south-facing slopes.
"""

CORAL = """# Coral Reef Census

## Abstract

This coral reef census counts reef corals across the census area.

## Methods

Divers counted colonies along fixed transects; sonar tools measured the ice-free depth.
"""

NAMED = "Glacier Melt Survey. Which tools measured the ice?"


def test_focus_sentence_is_the_question_of_a_one_line_query():
    from proxypointer.retrieve.query import focus_sentence

    assert focus_sentence(NAMED) == "Which tools measured the ice?"
    assert focus_sentence("Deep Learning for NLP: A Survey. Which datasets?") == "Which datasets?"
    # the question first, what defines it after: not focused (those sentences name what to read)
    assert focus_sentence("What is the FY2019 ratio for Acme? It is defined as a/b. Round it.") == ""
    assert focus_sentence("Acme 10-K. Describe the datasets.") == ""  # no question
    assert focus_sentence("Which tools measured the ice?") == ""  # one sentence
    assert focus_sentence("U.S. Army budget in 2020?") == ""  # "U.S." is no sentence
    # abbreviations and an ellipsis end no sentence (a trial split "e.g. at weekends?" off)
    assert focus_sentence("Employee Handbook. Is overtime paid, e.g. at weekends?") == (
        "Is overtime paid, e.g. at weekends?")
    assert focus_sentence("Acme 10-K 2021. How much did U.S. Government sales grow?") == (
        "How much did U.S. Government sales grow?")
    assert focus_sentence("Acme Report. What is the U.S. GDP?") == "What is the U.S. GDP?"
    assert focus_sentence("Gateway Spec v. 2.4. What is TG-501?") == ""  # no safe split
    assert focus_sentence("J. Smith et al. on Graphs. What is proved?") == "What is proved?"
    assert focus_sentence("Acme Report. Is it good... or not?") == "Is it good... or not?"
    assert focus_sentence("and how is it paid?\nWho is eligible for parental leave?") == ""  # lines


@pytest.fixture
def surveys(make_index, tmp_path):
    folder = tmp_path / "surveys"
    folder.mkdir()
    (folder / "glacier-melt-survey.md").write_text(GLACIER)
    (folder / "coral-reef-census.md").write_text(CORAL)

    def make(**retrieval):
        fresh = not (tmp_path / "store").exists()
        idx = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(title_routing_docs=0, **retrieval)),
                         store=tmp_path / "store")
        if fresh:
            assert idx.ingest([folder], show_progress=False).indexed == 2
        return idx

    return make


def _first_titles(idx, query, **kw):
    from proxypointer.retrieve.retriever import Retriever

    return [s.title for s in Retriever(idx).retrieve(query, k=3, **kw)]


def test_a_query_that_names_its_document_ranks_inside_it_by_its_question(surveys):
    # Without title routing, the naming sentence finds the document and then pulls its abstract
    # (all title words) first; the focus ranking searches the question alone inside it.
    assert RetrievalConfig().focus_weight > 0  # on by default
    assert _first_titles(surveys(), NAMED)[0] == "Instruments"
    assert _first_titles(surveys(focus_weight=0.0), NAMED)[0] == "Abstract"
    # one document searched: never focused (measured: filings lose there), so as without focus
    only = {"doc_ids": ["glacier-melt-survey"]}
    assert _first_titles(surveys(), NAMED, **only) == _first_titles(surveys(focus_weight=0.0), NAMED, **only)


def test_focus_needs_one_document_to_hold_its_share_of_the_ranking(surveys):
    idx = surveys(focus_share=1.0)  # the census's "tools measured" chunk is among the hits too
    ranker = Ranker(idx)
    route = ranker.route(NAMED, None)
    hits = ranker.rank(route, 20).hits
    assert {h.metadata["doc_id"] for h in hits} == {"glacier-melt-survey", "coral-reef-census"}
    assert ranker.focus(route, hits, 20) == []
    assert _first_titles(idx, NAMED)[0] == "Abstract"
    focused = Ranker(surveys()).focus(route, hits, 20)
    assert focused and {h.metadata["doc_id"] for h in focused} == {"glacier-melt-survey"}


def test_a_focused_section_scores_the_cosine_of_the_whole_query(surveys):
    # `score` is documented as the cosine of the query with the section's best chunk: a chunk
    # found by the focus ranking keeps that meaning (not its cosine to the question alone)
    from proxypointer.retrieve.retriever import Retriever

    idx = surveys(title_weight=0.0)  # the title field scores its sections' chunks by the whole query
    ranker = Ranker(idx)
    ranking = ranker.rank(ranker.route(NAMED, None), 2)  # 2 hits a ranking: the focus finds others
    q = idx.embedder.encode_query(NAMED)
    found, vectors = idx.store.vectors(list(ranking.cosine))
    whole = dict(zip(found, (vectors @ q).tolist(), strict=True))
    assert {h.chunk_id for h in ranker.focus(ranker.route(NAMED, None), ranking.hits, 2)} - set(whole)
    assert all(abs(c - whole[cid]) < 1e-5 for cid, c in ranking.cosine.items())
    got = Retriever(idx).retrieve(NAMED, k=3)
    assert got[0].title == "Instruments"
    found, vectors = idx.store.vectors([s.chunk_id for s in got])
    cosine = dict(zip(found, (vectors @ q).tolist(), strict=True))
    assert all(abs(s.score - cosine[s.chunk_id]) < 1e-5 for s in got)


def test_focus_settings_are_checked():
    with pytest.raises(ConfigError, match="retrieval.focus_share"):
        RetrievalConfig(focus_share=1.5)
    with pytest.raises(ConfigError, match="retrieval.focus_weight"):
        RetrievalConfig(focus_weight=-1.0)

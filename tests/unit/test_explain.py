"""Why a section ranked (proxypointer.retrieve.explain): what fusion saw, read without changing the ranking."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.retrieve.explain import Explainer
from proxypointer.retrieve.ranking import fuse_rrf
from proxypointer.retrieve.retriever import Retriever

DATA = Path(__file__).resolve().parents[2] / "data"
QUERIES = ["parental leave pay", "expense claims deadline", "gateway retry backoff", "site visit safety findings"]


@pytest.fixture
def retriever(make_index):
    index = make_index()
    assert not index.ingest([DATA], show_progress=False).failed
    return Retriever(index)


def test_the_ranking_keeps_the_parts_it_fused_and_they_fuse_to_its_hits(retriever):
    cfg = retriever.config
    route = retriever.ranker.route("parental leave pay", None)
    ranking = retriever.ranker.rank(route, 50)
    assert [p.name for p in ranking.parts] == ["dense", "lexical", "titles"]
    assert [p.weight for p in ranking.parts] == [1.0, cfg.lexical_weight, cfg.title_weight]
    fused = fuse_rrf([list(p.hits) for p in ranking.parts], [p.weight for p in ranking.parts], cfg.rrf_k)
    assert [h.chunk_id for h in fused] == [h.chunk_id for h in ranking.hits]


@pytest.mark.parametrize("query", QUERIES)
def test_explaining_changes_nothing_and_covers_every_section(retriever, query):
    sections = retriever.retrieve(query, 4)
    why = Explainer(retriever).explain(query, sections, 4)
    assert retriever.retrieve(query, 4) == sections  # ranked again, nothing changed
    assert [(x.doc_id, x.node_id, x.rank) for x in why.sections] == [
        (s.doc_id, s.node_id, i) for i, s in enumerate(sections, 1)
    ]
    assert [r[0] for r in why.rankings] == [x.name for x in why.sections[0].signals]
    for x in why.sections:
        assert x.fused_rank >= 1  # every section of data/ came from the first over-fetch
        for sig in x.signals:
            assert (sig.rank == 0) == (sig.contribution == 0.0)
            if sig.rank:
                assert sig.contribution == pytest.approx(sig.weight / (why.rrf_k + sig.rank))
    # the first section's best chunk leads the fused ranking; its dense score is the Section's cosine
    first = why.sections[0]
    assert first.fused_rank == 1
    dense = next(s for s in first.signals if s.name == "dense")
    if dense.rank:
        assert dense.score == pytest.approx(sections[0].score, abs=1e-6)


@pytest.mark.parametrize("query", QUERIES)
def test_the_section_scores_explain_the_order(retriever, query):
    # a breaker: with section_scoring sum a section of two chunks at fused ranks 3 and 4 came
    # first, and explain showed only "fused_rank 3"; the counted chunks and the score say why
    sections = retriever.retrieve(query, 4)
    why = Explainer(retriever).explain(query, sections, 4)
    cfg = retriever.config
    plain = [x for x in why.sections if not (x.labelled or x.implied or x.demoted or x.reached_via)]
    assert plain and [x.section_score for x in plain] == sorted((x.section_score for x in plain), reverse=True)
    for x in why.sections:
        assert 1 <= len(x.chunk_ranks) <= cfg.section_top_n and list(x.chunk_ranks) == sorted(x.chunk_ranks)
        assert x.to_dict()["chunk_ranks"] == list(x.chunk_ranks) and x.demoted == ""


def test_explain_names_an_exhibit_that_was_demoted(make_index, tmp_path):
    from test_exhibits import FILING

    doc = tmp_path / "docs" / "acme-10k.md"
    doc.parent.mkdir()
    doc.write_text(FILING, encoding="utf-8")
    index = make_index()
    assert index.ingest([doc.parent], show_progress=False).indexed == 1
    r = Retriever(index)
    query = "What geographies does Acme operate in: North America, Europe, Asia Pacific?"
    sections = r.retrieve(query, 6)
    why = {x.node_id: x.demoted for x in Explainer(r).explain(query, sections, 6).sections}
    by_title = {s.title: why[s.node_id] for s in sections}
    assert by_title["Exhibit 31.1 Certification"] == "exhibit"
    assert by_title["Item 1. Business"] == "" and by_title["Exhibit 99.1 Press release"] == ""


def test_a_merged_section_is_found_through_the_chunks_of_its_subtree(make_index):
    config = dataclasses.replace(ProxyPointerConfig(), retrieval=RetrievalConfig(nested="merge"))
    index = make_index(config)
    index.ingest([DATA], show_progress=False)
    r = Retriever(index)
    sections = r.retrieve("parental leave pay", 3)
    why = Explainer(r).explain("parental leave pay", sections, 3)
    assert all(x.fused_rank >= 1 for x in why.sections)


def test_the_json_form_names_the_rankings_and_an_empty_scope_explains_nothing(retriever):
    sections = retriever.retrieve("gateway retry backoff", 2)
    d = Explainer(retriever).explain("gateway retry backoff", sections, 2).to_dict()
    assert d["n"] == max(retriever.config.overfetch, 6)
    assert [r["name"] for r in d["rankings"]][:2] == ["dense", "lexical"]
    assert set(d["sections"][0]) == {"doc_id", "node_id", "rank", "fused_rank", "signals", "labelled", "implied",
                                     "reached_via", "chunk_ranks", "section_score", "demoted"}
    none = Explainer(retriever).explain("gateway retry backoff", [], 2, doc_ids=[])
    assert (none.rankings, none.sections) == ((), ())

"""ProxyPointerLlamaRetriever: whole sections as LlamaIndex nodes, sync and async (issue 35).

In the style of LlamaIndex's own retriever tests: build an index, retrieve with a string and a
QueryBundle, check the nodes, their scores and metadata, then use the retriever where LlamaIndex
takes one (a postprocessor over its nodes).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")

from llama_index.core.postprocessor import SimilarityPostprocessor  # noqa: E402
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from proxypointer.config import ProxyPointerConfig  # noqa: E402
from proxypointer.errors import ConfigError  # noqa: E402
from proxypointer.integrations.llamaindex import ProxyPointerLlamaRetriever  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
QUESTION = "How is parental leave paid?"


@pytest.fixture(scope="module")
def store(data_store):
    """data/ indexed with the hashing embedder (conftest's data_store)."""
    return data_store


@pytest.fixture
def retriever(store, fake_embedder):
    r = ProxyPointerLlamaRetriever.from_store(store, embedder=fake_embedder, k=3)
    yield r
    r.close()


def _expected(store, fake_embedder, query, **kw):
    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    index = Index(store, ProxyPointerConfig(), fake_embedder)
    try:
        return Retriever(index).retrieve(query, **kw)
    finally:
        index.close()


def test_is_a_base_retriever_returning_whole_sections_as_nodes(retriever, store, fake_embedder):
    assert isinstance(retriever, BaseRetriever)
    hits = retriever.retrieve(QUESTION)
    sections = _expected(store, fake_embedder, QUESTION, k=3)
    assert len(hits) == 3
    for hit, s in zip(hits, sections, strict=True):
        assert isinstance(hit, NodeWithScore) and isinstance(hit.node, TextNode)
        assert hit.node.text == s.text and hit.node.node_id == f"{s.doc_id}#{s.node_id}"
        assert hit.score == pytest.approx(s.score)
        m = hit.node.metadata
        assert m["citation"] == s.citation and m["breadcrumb"] == list(s.breadcrumb)
        assert m["lines"] == [s.start_line, s.end_line] and m["pages"] == [s.page_start, s.page_end]
        assert m["rank_score"] == pytest.approx(s.rank_score)
    lines = (DATA / "employee-handbook.md").read_text().splitlines()
    first = hits[0].node.metadata["text_lines"]
    assert hits[0].node.text == "\n".join(lines[first[0] - 1 : first[1]])


def test_a_query_bundle_and_async_retrieval_give_the_same_nodes(retriever):
    by_text = [h.node.node_id for h in retriever.retrieve(QUESTION)]
    assert [h.node.node_id for h in retriever.retrieve(QueryBundle(query_str=QUESTION))] == by_text
    assert [h.node.node_id for h in asyncio.run(retriever.aretrieve(QUESTION))] == by_text


def test_fields_filter_and_size_the_results(store, fake_embedder):
    r = ProxyPointerLlamaRetriever.from_store(store, embedder=fake_embedder, k=1, doc_ids=["employee-handbook"])
    try:
        hits = r.retrieve("What are the support tiers?")
        assert len(hits) == 1 and hits[0].node.metadata["doc_id"] == "employee-handbook"
        r.doc_ids = []
        assert r.retrieve(QUESTION) == []
    finally:
        r.close()


def test_nodes_work_with_llamaindex_postprocessors(retriever):
    hits = retriever.retrieve(QUESTION)
    cutoff = hits[0].score - 1e-9
    kept = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(hits)
    assert kept and all(h.score >= cutoff for h in kept) and kept[0].node.node_id == hits[0].node.node_id


def test_an_empty_query_is_refused(retriever):
    with pytest.raises(ConfigError, match="query"):
        retriever.retrieve("   ")


def test_a_prompt_reads_the_breadcrumb_and_citation_not_the_scores_or_outline(retriever):
    # found by a new user: MetadataMode.LLM put outline, text_lines, rank_score ... into the prompt
    from llama_index.core.schema import MetadataMode

    node = retriever.retrieve(QUESTION)[0].node
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        content = node.get_content(metadata_mode=mode)
        assert node.metadata["citation"] in content and node.text.strip() in content
        assert "rank_score" not in content and "outline" not in content and "text_lines" not in content
    assert "rank_score" in node.get_content(metadata_mode=MetadataMode.ALL)  # still there for code

"""Issue 13's acceptance: the questions of tests/fixture_questions.py, default configuration, real model."""

from __future__ import annotations

import pytest

pytest.importorskip("sentence_transformers")

from fixture_questions import FILING, QUESTIONS, REPORT, fixture_paths  # noqa: E402

from proxypointer.config import ProxyPointerConfig
from proxypointer.retrieve.retriever import Retriever

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    from proxypointer.embed.embedder import SentenceTransformerEmbedder
    from proxypointer.index import Index

    config = ProxyPointerConfig()
    index = Index(tmp_path_factory.mktemp("store"), config, SentenceTransformerEmbedder(config.embedding))
    assert index.ingest(fixture_paths(), show_progress=False).indexed == 2
    yield Retriever(index)
    index.close()


@pytest.mark.parametrize(("question", "doc_id", "path", "text"), QUESTIONS, ids=[q[0][:40] for q in QUESTIONS])
@pytest.mark.parametrize("scope", ["document", "both documents"])
def test_the_right_section_comes_first(retriever, question, doc_id, path, text, scope):
    first = retriever.retrieve(question, k=5, doc_ids=[doc_id] if scope == "document" else [FILING, REPORT])[0]
    assert (first.doc_id, first.breadcrumb[-len(path):]) == (doc_id, path), first.citation
    assert text in first.text


def test_a_big_statement_comes_as_an_excerpt_around_what_matched(retriever):
    # The balance sheet is ~1,700 word pieces of HTML: delivered as one window of at most
    # retrieval.own_text_tokens around its best chunks, which hold the liabilities.
    first = retriever.retrieve("What was the largest liability in the balance sheet?", k=1, doc_ids=[FILING])[0]
    tok = retriever.index.embedder.tokenizer
    assert first.delivery == "excerpt" and tok.count(first.text) <= ProxyPointerConfig().retrieval.own_text_tokens
    assert first.start_line < first.text_start_line or first.text_end_line < first.end_line

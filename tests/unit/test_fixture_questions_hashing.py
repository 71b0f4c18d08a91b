"""Issue 13's questions on the documents written for the purpose, default configuration, hashing embedder.

tests/integration/test_fixture_questions.py asks them with the real model.
"""

from __future__ import annotations

import pytest
from fixture_questions import FILING, QUESTIONS, REPORT, fixture_paths

from proxypointer.config import ProxyPointerConfig
from proxypointer.retrieve.retriever import Retriever


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    from fakes import HashingEmbedder

    from proxypointer.index import Index

    index = Index(tmp_path_factory.mktemp("store"), ProxyPointerConfig(), HashingEmbedder())
    assert index.ingest(fixture_paths(), show_progress=False).indexed == 2
    yield Retriever(index)
    index.close()


@pytest.mark.parametrize(("question", "doc_id", "path", "text"), QUESTIONS, ids=[q[0][:40] for q in QUESTIONS])
@pytest.mark.parametrize("scope", ["document", "both documents"])
def test_the_right_section_comes_first(retriever, question, doc_id, path, text, scope):
    first = retriever.retrieve(question, k=5, doc_ids=[doc_id] if scope == "document" else [FILING, REPORT])[0]
    assert (first.doc_id, first.breadcrumb[-len(path):]) == (doc_id, path), first.citation
    assert text in first.text
    assert first.delivery in ("subtree", "own_text", "excerpt")

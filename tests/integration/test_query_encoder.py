"""The traced query encoder: same vectors as the eager model, and a safe fallback."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from proxypointer.config import EmbeddingConfig  # noqa: E402
from proxypointer.embed import embedder as embedding
from proxypointer.embed.embedder import SentenceTransformerEmbedder

#: The torch path these tests are about: no exported ONNX encoder is looked for.
TORCH = EmbeddingConfig(query_encoder="torch", document_encoder="torch")

pytestmark = pytest.mark.integration

QUERIES = [
    "How is parental leave paid?",
    "x",
    "What datasets were used to evaluate the model, and how large is each of them in tokens? " * 12,
    "Ünïcödé — naïve café, 日本語のテキスト",
]


@pytest.fixture(scope="module")
def eager() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(TORCH, query_cache_size=0, trace_query=False)


def test_traced_queries_equal_the_eager_model(eager):
    traced = SentenceTransformerEmbedder(TORCH, query_cache_size=0)
    traced._model = eager.model  # one model load for both
    for query in QUERIES:  # short, long (truncated at max_seq_length), non-ASCII
        got, want = traced.encode_query(query), eager.encode_query(query)
        assert got.dtype == np.float32 and got.shape == (384,)
        np.testing.assert_allclose(got, want, atol=embedding.TRACE_TOLERANCE)
    assert traced._query_encoder.__name__ == "encode_one"  # the traced path ran
    np.testing.assert_allclose(
        traced.encode_query(QUERIES[0]), eager.encode([QUERIES[0]])[0], atol=embedding.TRACE_TOLERANCE
    )


def test_a_trace_that_disagrees_is_not_used(eager, monkeypatch, caplog):
    """A model whose trace would give other vectors keeps the eager path (logged)."""
    real = eager.model.encode
    monkeypatch.setattr(eager.model, "encode", lambda *a, **k: real(*a, **k) + 0.01)
    e = SentenceTransformerEmbedder(TORCH, query_cache_size=0)
    e._model = eager.model
    with caplog.at_level(logging.INFO, logger="proxypointer.embed.embedder"):
        vector = e.encode_query("How is parental leave paid?")
    assert "query tracing skipped" in caplog.text
    np.testing.assert_allclose(
        vector,
        real(["How is parental leave paid?"], normalize_embeddings=True)[0] + 0.01,
        atol=embedding.TRACE_TOLERANCE,
    )


def test_tracing_off_runs_the_eager_model(eager, monkeypatch):
    monkeypatch.setattr(embedding, "_traced_encoder", lambda model: pytest.fail("traced"))
    e = SentenceTransformerEmbedder(TORCH, query_cache_size=0, trace_query=False)
    e._model = eager.model
    # one torch thread for the query, torch's default for the batch: sums in another order
    np.testing.assert_allclose(
        e.encode_query("a question"), eager.encode(["a question"])[0], atol=embedding.TRACE_TOLERANCE
    )

"""``embedding.backend: openai``: a store embedded through an OpenAI-compatible endpoint (a local fake).

The fake (tests/fakeendpoint.py) answers with the hashing embedder's vectors, scaled and out of
order, so a store built through it must answer exactly as one built in-process with the
hashing embedder. Also: prefixes reach the endpoint, errors name it and store nothing, retries
happen, and a store refuses another model, backend or document prefix.
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fakeendpoint import FakeEmbeddingServer, Scripted
from fakes import HashingEmbedder

from proxypointer.config import EmbeddingConfig, ProxyPointerConfig
from proxypointer.embed.endpoint import PLACEHOLDER_KEY, EndpointEmbedder
from proxypointer.embed.make import make_embedder
from proxypointer.embed.names import describe_name, embedder_name
from proxypointer.errors import ConfigError, EmbeddingError
from proxypointer.index import Index
from proxypointer.retrieve.retriever import Retriever

DATA = Path(__file__).resolve().parents[2] / "data"
QUERIES = ("how is parental leave paid?", "gateway telemetry retention", "what did the site visit find?",
           "descale the kettle", "security incident reporting")


@pytest.fixture
def server():
    fake = FakeEmbeddingServer()
    yield fake
    fake.close()


def endpoint_config(server: FakeEmbeddingServer, **changes) -> ProxyPointerConfig:
    # max_seq_length 256: the hashing embedder's (MiniLM's), so that chunks are cut alike
    emb = EmbeddingConfig(backend="openai", base_url=server.base_url, model="fake-embed", max_seq_length=256,
                          max_retries=0, timeout_s=10.0)
    return ProxyPointerConfig(embedding=replace(emb, **changes))


def answers(index: Index) -> list[list[tuple[str, str, float]]]:
    retriever = Retriever(index)
    return [[(s.doc_id, s.node_id, s.score) for s in retriever.retrieve(q, k=5)] for q in QUERIES]


def test_a_store_embedded_through_the_endpoint_answers_as_one_embedded_in_process(server, tmp_path):
    with Index(tmp_path / "local", ProxyPointerConfig(), HashingEmbedder()) as local:
        assert not local.ingest([DATA], show_progress=False).failed
        expected = answers(local)
    with Index(tmp_path / "remote", endpoint_config(server)) as remote:
        assert isinstance(remote.embedder, EndpointEmbedder)
        report = remote.ingest([DATA], show_progress=False)
        assert not report.failed and report.embedded > 0
        got = answers(remote)
        assert remote.registry.get_meta("model") == "openai:fake-embed"
    assert [[(d, n) for d, n, _ in a] for a in got] == [[(d, n) for d, n, _ in a] for a in expected]
    for a, b in zip(got, expected, strict=True):
        assert [s for *_, s in a] == pytest.approx([s for *_, s in b], abs=1e-5)
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert all(r["json"]["model"] == "fake-embed" and r["json"]["encoding_format"] == "float" for r in server.requests)


def test_batches_go_batch_size_texts_per_request(server):
    emb = make_embedder(endpoint_config(server, batch_size=3).embedding)
    vectors = emb.encode([f"text number {i}" for i in range(7)])
    assert [len(r["json"]["input"]) for r in server.requests] == [3, 3, 1]
    assert vectors.shape == (7, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)  # the fake's vectors have norm 3
    assert np.allclose(vectors, HashingEmbedder().encode([f"text number {i}" for i in range(7)]))


def test_prefixes_reach_the_endpoint_and_name_the_store(server, tmp_path):
    cfg = endpoint_config(server, document_prefix="search_document: ", query_prefix="search_query: ")
    with Index(tmp_path / "s", cfg) as index:
        index.ingest([DATA], show_progress=False)
        chunk_inputs = list(server.inputs)
        Retriever(index).retrieve("kettle", k=1)
        assert index.registry.get_meta("model") == "openai:fake-embed+document_prefix='search_document: '"
    assert chunk_inputs and all(t.startswith("search_document: ") for t in chunk_inputs)
    assert server.inputs[len(chunk_inputs):] == ["search_query: kettle"]


def test_document_prefix_lowers_the_length_chunks_are_cut_to(server):
    plain = make_embedder(endpoint_config(server).embedding)
    prefixed = make_embedder(endpoint_config(server, document_prefix="search_document: ").embedding)
    pieces = plain.tokenizer.count("search_document: ")
    assert pieces > 0 and prefixed.tokenizer.max_seq_length == plain.tokenizer.max_seq_length - pieces == 256 - pieces


@pytest.mark.parametrize(
    ("changes", "asked"),
    [({"model": "other-embed"}, "model 'other-embed'"),
     ({"document_prefix": "passage: "}, "document_prefix 'passage: '")],
)
def test_a_store_refuses_another_model_or_document_prefix(server, tmp_path, changes, asked):
    with Index(tmp_path / "s", endpoint_config(server)) as index:
        index.ingest([DATA], show_progress=False)
    sent = len(server.requests)
    with Index(tmp_path / "s", endpoint_config(server, **changes)) as other:
        with pytest.raises(ConfigError) as query_err:
            Retriever(other).retrieve("kettle", k=1)
        with pytest.raises(ConfigError):
            other.ingest([DATA], show_progress=False)
    message = str(query_err.value)
    assert "built with model 'openai:fake-embed' (backend openai, model 'fake-embed', no document_prefix)" in message
    assert asked in message and "new store" in message
    assert len(server.requests) == sent  # refused before anything was embedded


def test_an_in_process_store_refuses_the_endpoint(server, tmp_path):
    with Index(tmp_path / "s", ProxyPointerConfig(), HashingEmbedder()) as index:
        index.ingest([DATA], show_progress=False)
    with Index(tmp_path / "s", endpoint_config(server)) as other, pytest.raises(ConfigError) as err:
        Retriever(other).retrieve("kettle", k=1)
    assert "backend sentence-transformers, model 'test-hashing-embedder'" in str(err.value)
    assert "backend openai, model 'fake-embed'" in str(err.value)


def test_http_500_names_the_endpoint_and_stores_nothing(server, tmp_path):
    server.script = [Scripted(500, {"error": {"message": "model crashed"}})]
    with Index(tmp_path / "s", endpoint_config(server)) as index:
        with pytest.raises(EmbeddingError) as err:
            index.ingest([DATA], show_progress=False)
        assert index.store.count() == 0
        assert not index.registry.chunks.has_chunks()
    message = str(err.value)
    assert server.base_url in message and "'fake-embed'" in message and "HTTP 500" in message
    assert "model crashed" in message


def test_failed_requests_are_retried(server):
    server.script = [Scripted(500, {"error": {"message": "busy"}}), Scripted(503, {"error": {"message": "busy"}})]
    emb = make_embedder(endpoint_config(server, max_retries=2).embedding)
    assert emb.encode(["a text"]).shape == (1, 384)
    assert len(server.requests) == 3


def test_a_timeout_is_a_clear_error(server):
    server.script = [Scripted(delay_s=2.0)]
    emb = make_embedder(endpoint_config(server, timeout_s=0.3).embedding)
    with pytest.raises(EmbeddingError, match=r"no reply within embedding.timeout_s=0.3 s") as err:
        emb.encode(["a text"])
    assert server.base_url in str(err.value)


def test_a_server_that_is_not_there_is_a_clear_error(server):
    url = server.base_url
    server.close()
    emb = make_embedder(replace(endpoint_config(server).embedding, base_url=url))
    with pytest.raises(EmbeddingError, match="cannot connect.*embedding.base_url"):
        emb.encode(["a text"])


@pytest.mark.parametrize(
    ("body", "match"),
    [({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}, "sent 2 texts, got 1 vectors"),
     ({"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]}, "vector 0 of the reply is empty"),
     ({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]}, r"\[1, 2\] dimensions"),
     ({"data": [{"index": 0, "embedding": [0.0, 0.0]}, {"index": 1, "embedding": [1.0, 0.0]}]}, "all zeros"),
     ({"data": [{"index": 0, "embedding": "abc"}, {"index": 1, "embedding": "abc"}]}, "not a (flat )?list"),
     # found by a new user: a web server's page said "got no list of vectors back"
     ("<html><body>Welcome to nginx!</body></html>", "the reply is no embeddings JSON .*Welcome to nginx")],
)
def test_malformed_replies_are_refused(server, body, match):
    server.script = [Scripted(200, body)]
    emb = make_embedder(endpoint_config(server).embedding)
    with pytest.raises(EmbeddingError, match=match):
        emb.encode(["one", "two"])


def test_a_dimension_change_behind_one_name_is_refused(server):
    emb = make_embedder(endpoint_config(server).embedding)
    emb.encode(["one"])
    server.script = [Scripted(200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]})]
    with pytest.raises(EmbeddingError, match="expected 384"):
        emb.encode(["two"])


def test_the_key_comes_from_the_named_variable_or_a_placeholder(server, monkeypatch):
    monkeypatch.setenv("FAKE_EMBED_KEY", "sk-test-123")
    make_embedder(endpoint_config(server, api_key_env="FAKE_EMBED_KEY").embedding).encode(["a"])
    monkeypatch.delenv("FAKE_EMBED_KEY")
    make_embedder(endpoint_config(server, api_key_env="FAKE_EMBED_KEY").embedding).encode(["a"])
    assert [r["headers"]["authorization"] for r in server.requests] == ["Bearer sk-test-123",
                                                                         f"Bearer {PLACEHOLDER_KEY}"]


def test_queries_are_cached_and_the_embedder_pickles(server):
    emb = make_embedder(endpoint_config(server, query_prefix="q: ").embedding)
    first = emb.encode_query("kettle")
    assert emb.encode_query("kettle") is first and len(server.requests) == 1
    assert not first.flags.writeable
    copy = pickle.loads(pickle.dumps(emb))
    assert np.array_equal(copy.encode_query("kettle"), first) and len(server.requests) == 2
    assert np.allclose(emb.encode_queries(["kettle"])[0], first)


def test_without_a_tokenizer_the_default_one_sizes_chunks_with_one_warning_per_ingest(server, caplog, tmp_path):
    cfg = endpoint_config(server)
    cfg = replace(cfg, embedding=replace(cfg.embedding, max_seq_length=0))
    emb = make_embedder(cfg.embedding)
    with caplog.at_level(logging.WARNING):
        assert emb.tokenizer.name == "all-MiniLM-L6-v2" and emb.tokenizer.max_seq_length == 512
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # a query sizes budgets only
        (tmp_path / "notes.md").write_text("# Kettle\n\nDescale the kettle monthly.\n", encoding="utf-8")
        with Index(tmp_path / "store", cfg, emb) as index:
            assert not index.ingest([tmp_path / "notes.md"], show_progress=False).failed
            hits = Retriever(index).retrieve("descale kettle", 1)
            assert hits and hits[0].doc_id == "notes"
    warnings = [r for r in caplog.records if "no embedding.tokenizer" in r.getMessage()]
    assert len(warnings) == 1 and server.base_url in warnings[0].getMessage()
    assert warnings[0].name == "proxypointer.ingest.stages"


def test_a_named_tokenizer_folder_or_file_sizes_chunks(server, tmp_path):
    from proxypointer.embed.tokenizer import resolve_model_path

    folder = Path(resolve_model_path("all-MiniLM-L6-v2"))
    by_folder = make_embedder(replace(endpoint_config(server).embedding, tokenizer=str(folder), max_seq_length=0))
    assert by_folder.tokenizer.max_seq_length == 256  # its sentence_bert_config.json
    by_file = make_embedder(endpoint_config(server, tokenizer=str(folder / "tokenizer.json"), max_seq_length=300)
                            .embedding)
    assert by_file.tokenizer.max_seq_length == 300
    assert by_file.tokenizer.count("descale the kettle") == HashingEmbedder().tokenizer.count("descale the kettle")
    bad = make_embedder(endpoint_config(server, tokenizer=str(tmp_path / "none")).embedding)
    with pytest.raises(ConfigError, match="no tokenizer.json"):
        bad.tokenizer  # noqa: B018


def test_names_spell_out_backend_model_and_prefix():
    st = EmbeddingConfig(model="intfloat/e5-base-v2", document_prefix="passage: ")
    assert embedder_name(st) == "intfloat/e5-base-v2+document_prefix='passage: '"
    assert embedder_name(EmbeddingConfig()) == "all-MiniLM-L6-v2"  # stores built before backends keep their name
    assert embedder_name(EmbeddingConfig(quantize_int8=True)) == "all-MiniLM-L6-v2+int8"
    assert describe_name(embedder_name(st)) == (
        "backend sentence-transformers, model 'intfloat/e5-base-v2', document_prefix 'passage: '"
    )


def test_the_in_process_model_puts_the_document_prefix_before_chunks_only():
    from proxypointer.embed.embedder import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(EmbeddingConfig(document_prefix="passage: ", query_prefix="query: "))
    assert emb.name == "all-MiniLM-L6-v2+document_prefix='passage: '" and emb.model_name == "all-MiniLM-L6-v2"
    sent: list[list[str]] = []
    emb.encode_texts = lambda texts, batch_size=None: sent.append(list(texts)) or np.ones((len(texts), 2), np.float32)
    emb.encode(["a", "b"])
    emb.encode_queries(["c"])
    assert sent == [["passage: a", "passage: b"], ["query: c"]]
    with pytest.raises(ConfigError, match="backend"):
        SentenceTransformerEmbedder(EmbeddingConfig(backend="openai", base_url="http://x/v1"))


def _one_doc_store(server: FakeEmbeddingServer, tmp_path: Path) -> Path:
    """Ingest a one-document folder through the endpoint into ``tmp_path/s``; return the folder."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe kettle is descaled monthly.\n")
    with Index(tmp_path / "s", endpoint_config(server)) as index:
        index.ingest([docs], show_progress=False)
    return docs


def test_a_store_refuses_vectors_of_another_dimension_under_the_same_name(server, tmp_path):
    docs = _one_doc_store(server, tmp_path)
    server.embedder = HashingEmbedder(64)  # the model behind the name was swapped
    (docs / "b.md").write_text("# B\n\nThe gateway keeps telemetry for 30 days.\n")
    with Index(tmp_path / "s", endpoint_config(server)) as index:
        with pytest.raises(EmbeddingError, match="gave vectors of 64 dimensions, the store holds 384"):
            index.ingest([docs], show_progress=False)
        assert index.registry.get("b") is None or not index.registry.get("b").version


def test_a_query_vector_of_another_dimension_under_the_same_name_is_refused(server, tmp_path):
    # found by a new user: the model behind an endpoint's name was swapped, and a query ended
    # in a numpy traceback (CLI) or a bare 500 (HTTP)
    _one_doc_store(server, tmp_path)
    server.embedder = HashingEmbedder(32)
    with Index(tmp_path / "s", endpoint_config(server)) as index:
        with pytest.raises(EmbeddingError, match="gave a query vector of 32 dimensions, the store holds 384"):
            Retriever(index).retrieve("how often is the kettle descaled", k=1)

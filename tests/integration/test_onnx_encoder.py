"""Texts without torch: the exported ONNX encoder gives the torch path's vectors and sections."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from proxypointer import Index, Retriever  # noqa: E402
from proxypointer.config import EmbeddingConfig, ProxyPointerConfig  # noqa: E402
from proxypointer.embed.embedder import SentenceTransformerEmbedder  # noqa: E402
from proxypointer.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [
    "How many weeks of full pay do new parents get?",
    "What does error code E42 mean?",
    "Which retention tier keeps raw telemetry longest?",
    "What did the site visit find?",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("onnx") / "store"
    Index(root).ingest([ROOT / "data"], show_progress=False)  # exports the encoder at the end
    return root


def own(tmp_path: Path, **kwargs) -> EmbeddingConfig:
    """A config whose shared encoder folder is this test's own (empty until it exports)."""
    return EmbeddingConfig(encoder_cache=str(tmp_path / "shared"), **kwargs)


def test_an_ingest_keeps_an_exported_encoder_in_the_store(store):
    (onnx,) = sorted((store / "encoders").glob("*.onnx"))
    meta = json.loads(onnx.with_suffix(".json").read_text())
    assert meta["model"] == "all-MiniLM-L6-v2" and meta["dim"] == 384 and meta["min_cosine"] >= 0.9999


def test_the_onnx_path_returns_the_torch_paths_sections(store):
    onnx_index = Index.open(store)
    torch_index = Index.open(store, ProxyPointerConfig(embedding=EmbeddingConfig(query_encoder="torch")))
    assert onnx_index.embedder.has_query_encoder() and not torch_index.embedder.has_query_encoder()
    for q in QUESTIONS:
        a = Retriever(onnx_index).retrieve(q, k=5)
        b = Retriever(torch_index).retrieve(q, k=5)
        assert [s.citation for s in a] == [s.citation for s in b], q
        assert np.allclose([s.score for s in a], [s.score for s in b], atol=1e-4)
        va, vb = onnx_index.embedder.encode_query(q), torch_index.embedder.encode_query(q)
        assert float(va @ vb) >= 0.9999


def test_a_query_process_never_imports_torch(store):
    question = "How many weeks of full pay do new parents get?"
    code = (
        "import sys, json\n"
        "from proxypointer.cli import main\n"
        f"rc = main(['--store', {str(store)!r}, 'query', {question!r}, '-k', '2'])\n"
        "print(json.dumps([rc, [m for m in ('torch', 'sentence_transformers') if m in sys.modules]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, []]
    assert "employee-handbook.md#L129-L135" in out.stdout


def test_an_encoder_exported_for_another_model_is_refused(store, tmp_path):
    copy = tmp_path / "encoders"
    copy.mkdir()
    (onnx,) = sorted((store / "encoders").glob("*.onnx"))
    meta = json.loads(onnx.with_suffix(".json").read_text())
    (copy / onnx.name).write_bytes(onnx.read_bytes())
    (copy / onnx.with_suffix(".json").name).write_text(json.dumps({**meta, "model": "e5-small-v2"}))
    embedder = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=copy)
    with pytest.raises(ConfigError, match=r"exported for model 'e5-small-v2'.*not 'all-MiniLM-L6-v2'"):
        embedder.encode_query("anything")
    with pytest.raises(ConfigError, match=r"exported for model 'e5-small-v2'"):
        SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=copy).encode(["a chunk"])


def test_a_refused_export_keeps_torch_says_why_and_is_not_tried_again(tmp_path, caplog, monkeypatch):
    import proxypointer.embed.embedder as embedder_module
    import proxypointer.embed.onnxencoder as onnxencoder

    monkeypatch.setattr(onnxencoder, "COSINE_MIN", 1.5)  # no export can pass
    embedder = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=tmp_path / "encoders")
    with caplog.at_level(logging.INFO, logger="proxypointer.embed.onnxencoder"):
        vector = embedder.encode_query("How is parental leave paid?")
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5
    assert "no ONNX encoder" in caplog.text and "cosine" in caplog.text
    assert not list((tmp_path / "encoders").glob("*.onnx")) and not embedder.has_query_encoder()
    assert embedder.encode(["a chunk", "another"]).shape == (2, 384)  # batches: torch, no second try
    calls = []
    monkeypatch.setattr(embedder_module, "export_encoder", lambda *a: calls.append(a))
    again = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=tmp_path / "encoders")
    again.encode_query("How is parental leave paid?")
    assert calls == [] and again.export_encoder() is None  # the refusal is kept for these model files


def test_the_first_query_without_an_encoder_exports_it_once_and_the_next_use_it(tmp_path, monkeypatch):
    import proxypointer.embed.embedder as embedder_module

    calls = []
    real = embedder_module.export_encoder
    monkeypatch.setattr(embedder_module, "export_encoder", lambda *a: calls.append(a) or real(*a))
    embedder = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=tmp_path / "encoders")
    first = embedder.encode_query("How is parental leave paid?")  # torch, then the export
    assert len(calls) == 1 and embedder.has_query_encoder()
    embedder.encode_query("What does error code E42 mean?")
    embedder.export_encoder()  # an ingest's call: already there
    assert len(calls) == 1
    fresh = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=tmp_path / "encoders")
    assert fresh.has_query_encoder() and float(fresh.encode_query("How is parental leave paid?") @ first) >= 0.9999


def test_batches_embedded_by_the_encoder_match_the_models(store, tmp_path):
    texts = [line for line in (ROOT / "data" / "employee-handbook.md").read_text().splitlines() if line.strip()]
    texts += ["a", "Section 4.2 reports results on the held-out set " * 40]  # one word; past max_seq_length
    onnx = SentenceTransformerEmbedder(query_encoder_dir=store / "encoders")
    model = SentenceTransformerEmbedder(EmbeddingConfig(document_encoder="torch"))
    a, b = onnx.encode(texts), model.encode(texts)
    assert onnx._onnx is not None and a.shape == b.shape == (len(texts), 384)
    assert float((a * b).sum(axis=1).min()) >= 0.9999


def test_the_first_batch_exports_the_encoder_into_the_store_and_the_shared_folder(tmp_path):
    embedder = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=tmp_path / "store" / "encoders")
    vectors = embedder.encode(["How is parental leave paid?", "Annual leave"])
    assert vectors.shape == (2, 384) and embedder._onnx is not None
    (in_store,) = sorted((tmp_path / "store" / "encoders").glob("*.onnx"))
    (shared,) = sorted((tmp_path / "shared").glob("*.onnx"))
    assert in_store.name == shared.name and in_store.read_bytes() == shared.read_bytes()


def test_a_second_stores_ingest_never_imports_torch(store, tmp_path):
    shared = tmp_path / "encoders"  # $PROXYPOINTER_CACHE/encoders
    shared.mkdir()
    for f in (store / "encoders").iterdir():
        (shared / f.name).write_bytes(f.read_bytes())  # what the first store's ingest left there
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("# Leave\n\nNew parents get sixteen weeks of full pay.\n")
    code = (
        "import sys, json\n"
        "from proxypointer.cli import main\n"
        f"rc = main(['--store', {str(tmp_path / 'second')!r}, 'ingest', {str(docs)!r}, '-q'])\n"
        "print(json.dumps([rc, [m for m in ('torch', 'sentence_transformers') if m in sys.modules]]))\n"
    )
    env = {**__import__("os").environ, "PROXYPOINTER_CACHE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, []]
    assert sorted(p.name for p in (tmp_path / "second" / "encoders").glob("*.onnx")) == sorted(
        p.name for p in shared.glob("*.onnx")
    )  # the new store keeps its own copy


def test_a_damaged_encoder_file_falls_back_to_torch_and_is_exported_again(store, tmp_path, caplog):
    folder = tmp_path / "encoders"
    folder.mkdir()
    (onnx,) = sorted((store / "encoders").glob("*.onnx"))
    (folder / onnx.name).write_bytes(b"not an onnx model")
    (folder / onnx.with_suffix(".json").name).write_text(onnx.with_suffix(".json").read_text())
    embedder = SentenceTransformerEmbedder(EmbeddingConfig(encoder_cache="off"), query_encoder_dir=folder)
    with caplog.at_level(logging.WARNING, logger="proxypointer.embed.embedder"):
        vector = embedder.encode_query("How is parental leave paid?")
    assert "cannot read this encoder" in caplog.text and vector.shape == (384,)
    assert embedder.has_query_encoder()  # exported again over the damaged file
    assert (folder / onnx.name).read_bytes() == onnx.read_bytes()


def test_weights_rewritten_in_place_name_another_model(tmp_path):
    # breaker: a model retrained into its folder kept its weights' size, and its old encoder
    # served vectors of the old weights (cosine 0.99 to the new) without a word
    import os

    from proxypointer.embed.onnxencoder import model_key

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    weights = model / "model.safetensors"
    weights.write_bytes(b"a" * 64)
    before = model_key("my-model", model)
    weights.write_bytes(b"b" * 64)  # same size, other bytes
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a later write, whatever the clock
    assert model_key("my-model", model) != before


def test_a_damaged_copy_is_replaced_by_a_good_one_from_another_folder(store, tmp_path, caplog):
    # breaker: a truncated store copy was skipped for the cache's at every query, with a warning
    # saying it would be exported again, and never repaired
    shared = tmp_path / "shared"
    shared.mkdir()
    (onnx,) = sorted((store / "encoders").glob("*.onnx"))
    for f in (onnx, onnx.with_suffix(".json")):
        (shared / f.name).write_bytes(f.read_bytes())
    damaged = tmp_path / "encoders"
    damaged.mkdir()
    (damaged / onnx.name).write_bytes(onnx.read_bytes()[:1000])
    (damaged / onnx.with_suffix(".json").name).write_bytes(onnx.with_suffix(".json").read_bytes())
    embedder = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=damaged)
    with caplog.at_level(logging.INFO, logger="proxypointer.embed.embedder"):
        assert embedder.has_query_encoder()
    assert "cannot read this encoder" in caplog.text and "replaced by a copy" in caplog.text
    assert (damaged / onnx.name).read_bytes() == onnx.read_bytes()
    assert oct((damaged / onnx.name).stat().st_mode & 0o777) == oct(0o644)  # readable by a store's other users


def test_an_export_the_store_cannot_hold_goes_to_the_shared_folder(tmp_path):
    # breaker: with <store>/encoders unwritable, every query loaded torch again (7-8 s), silently
    blocked = tmp_path / "store"
    blocked.mkdir()
    (blocked / "encoders").write_text("a file where the folder should be")
    embedder = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=blocked / "encoders")
    embedder.encode_query("How is parental leave paid?")  # torch, then the export
    (shared,) = sorted((tmp_path / "shared").glob("*.onnx"))
    assert oct(shared.stat().st_mode & 0o777) == oct(0o644)
    fresh = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=blocked / "encoders")
    assert fresh.has_query_encoder()  # the next process needs no torch


def test_a_damaged_shared_copy_is_replaced_by_the_export_it_forces(store, tmp_path):
    # breaker: a garbage .json in the shared folder made every new store pay the export again
    (onnx,) = sorted((store / "encoders").glob("*.onnx"))
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / onnx.name).write_bytes(onnx.read_bytes())
    (shared / onnx.with_suffix(".json").name).write_text("garbage{")
    first = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=tmp_path / "a" / "encoders")
    assert first.encode(["a chunk"]).shape == (1, 384)  # exports into store a, then repairs the shared copy
    assert json.loads((shared / onnx.with_suffix(".json").name).read_text())["model"] == "all-MiniLM-L6-v2"
    second = SentenceTransformerEmbedder(own(tmp_path), query_encoder_dir=tmp_path / "b" / "encoders")
    assert second.has_query_encoder() and second._export_tried is False  # found, not exported again

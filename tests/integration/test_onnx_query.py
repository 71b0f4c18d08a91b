"""Queries without torch: the ONNX query encoder a store keeps gives the torch path's sections."""

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


def test_an_ingest_keeps_an_exported_query_encoder_in_the_store(store):
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
    embedder = SentenceTransformerEmbedder(query_encoder_dir=copy)
    with pytest.raises(ConfigError, match=r"exported for model 'e5-small-v2'.*not 'all-MiniLM-L6-v2'"):
        embedder.encode_query("anything")


def test_a_failed_export_keeps_torch_and_says_why(tmp_path, caplog, monkeypatch):
    import proxypointer.embed.onnxquery as onnxquery

    monkeypatch.setattr(onnxquery, "COSINE_MIN", 1.5)  # no export can pass
    embedder = SentenceTransformerEmbedder(query_encoder_dir=tmp_path / "encoders")
    with caplog.at_level(logging.INFO, logger="proxypointer.embed.onnxquery"):
        vector = embedder.encode_query("How is parental leave paid?")
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5
    assert "no ONNX query encoder" in caplog.text and "cosine" in caplog.text
    assert not list((tmp_path / "encoders").glob("*.onnx")) and not embedder.has_query_encoder()


def test_the_first_query_without_an_encoder_exports_it_once_and_the_next_use_it(tmp_path, monkeypatch):
    import proxypointer.embed.embedder as embedder_module

    calls = []
    real = embedder_module.export_query_encoder
    monkeypatch.setattr(embedder_module, "export_query_encoder", lambda *a: calls.append(a) or real(*a))
    embedder = SentenceTransformerEmbedder(query_encoder_dir=tmp_path / "encoders")
    first = embedder.encode_query("How is parental leave paid?")  # torch, then the export
    assert len(calls) == 1 and embedder.has_query_encoder()
    embedder.encode_query("What does error code E42 mean?")
    embedder.export_query_encoder()  # an ingest's call: already there
    assert len(calls) == 1
    fresh = SentenceTransformerEmbedder(query_encoder_dir=tmp_path / "encoders")
    assert fresh.has_query_encoder() and float(fresh.encode_query("How is parental leave paid?") @ first) >= 0.9999


def test_a_damaged_encoder_file_falls_back_to_torch_and_is_exported_again(store, tmp_path, caplog):
    folder = tmp_path / "encoders"
    folder.mkdir()
    (onnx,) = sorted((store / "encoders").glob("*.onnx"))
    (folder / onnx.name).write_bytes(b"not an onnx model")
    (folder / onnx.with_suffix(".json").name).write_text(onnx.with_suffix(".json").read_text())
    embedder = SentenceTransformerEmbedder(query_encoder_dir=folder)
    with caplog.at_level(logging.WARNING, logger="proxypointer.embed.embedder"):
        vector = embedder.encode_query("How is parental leave paid?")
    assert "cannot read this query encoder" in caplog.text and vector.shape == (384,)
    assert embedder.has_query_encoder()  # exported again over the damaged file
    assert (folder / onnx.name).read_bytes() == onnx.read_bytes()

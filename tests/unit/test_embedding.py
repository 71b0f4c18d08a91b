"""Loading the embedder changes no process-wide state (a stub model; the real one: integration).

No environment variable, no logger level of another library, no global progress-bar switch:
options go to the libraries per call (``local_files_only=True``, ``show_progress_bar=False``).
"""

from __future__ import annotations

import logging
import os
import sys
import types

import numpy as np
import pytest

from proxypointer.config import EmbeddingConfig
from proxypointer.embed.embedder import SentenceTransformerEmbedder


class _StubModel:
    made: list[tuple[str, dict]] = []

    def __init__(self, path: str, **kwargs) -> None:
        _StubModel.made.append((path, kwargs))
        logging.getLogger("sentence_transformers").info("a library logs while loading")

    def encode(self, texts, **kwargs):
        assert kwargs["show_progress_bar"] is False and kwargs["normalize_embeddings"] is True
        return np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)


@pytest.fixture
def stub_sentence_transformers(monkeypatch):
    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = _StubModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    _StubModel.made.clear()
    return module


def _logger_levels() -> dict[str, int]:
    names = ["", "transformers", "sentence_transformers", "huggingface_hub", "torch"]
    names += list(logging.root.manager.loggerDict)
    return {n: logging.getLogger(n).level for n in names}


def test_loading_passes_options_and_changes_no_global_state(stub_sentence_transformers):
    env, levels = dict(os.environ), _logger_levels()
    config = EmbeddingConfig(device="cpu", document_encoder="torch", query_encoder="torch")
    embedder = SentenceTransformerEmbedder(config, trace_query=False, query_threads=None)
    vectors = embedder.encode(["a", "b"])
    assert vectors.shape == (2, 3) and vectors.dtype == np.float32
    ((path, kwargs),) = _StubModel.made
    assert path.endswith("model") and kwargs == {"device": "cpu", "local_files_only": True}
    assert dict(os.environ) == env
    assert {n: v for n, v in _logger_levels().items() if n in levels} == levels


def test_offline_variables_are_not_set_for_the_user(stub_sentence_transformers, monkeypatch):
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"):
        monkeypatch.delenv(name, raising=False)
    torch_only = EmbeddingConfig(document_encoder="torch")
    SentenceTransformerEmbedder(torch_only, trace_query=False, query_threads=None).encode(["x"])
    assert not {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"} & set(os.environ)


class _RecordingModel(_StubModel):
    calls: list[list[str]] = []
    ids: dict[str, int] = {}

    def encode(self, texts, **kwargs):
        _RecordingModel.calls.append(list(texts))
        return np.array([[_RecordingModel.ids[t], 1.0, 0.0] for t in texts], dtype=np.float32)


def test_batches_hold_texts_of_about_one_length_in_word_pieces(stub_sentence_transformers):
    # each forward pass pads to its longest text, so batches are cut from the texts ordered by
    # word pieces, not by characters: "0.731±0.012" is short in characters and long in pieces
    stub_sentence_transformers.SentenceTransformer = _RecordingModel
    _RecordingModel.calls = []
    texts = ["extraordinarily", "0.731±0.012 (p<0.05)", "a", "see table", "x1=3.2e-4, y2=7.1e-3",
             "internationalisation"]
    _RecordingModel.ids = {t: i for i, t in enumerate(texts)}
    config = EmbeddingConfig(batch_size=2, document_encoder="torch")
    embedder = SentenceTransformerEmbedder(config, trace_query=False, query_threads=None)
    vectors = embedder.encode(texts)
    assert [row[0] for row in vectors] == list(range(len(texts)))  # rows in the order of the input
    pieces = dict(zip(texts, embedder.tokenizer.count_batch(texts), strict=True))
    calls = _RecordingModel.calls
    assert len(calls) == 3 and all(len(c) == 2 for c in calls)  # one call per batch of batch_size
    for longer, shorter in zip(calls, calls[1:], strict=False):
        assert min(pieces[t] for t in longer) >= max(pieces[t] for t in shorter)
    assert set(calls[0]) == {"0.731±0.012 (p<0.05)", "x1=3.2e-4, y2=7.1e-3"}

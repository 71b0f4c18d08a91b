"""SentenceTransformerEmbedder's query cache, threads and int8 naming, without loading a model.

The traced query encoder needs the model: tests/integration/test_query_encoder.py.
"""

import numpy as np

from proxypointer.config import EmbeddingConfig
from proxypointer.embed.embedder import SentenceTransformerEmbedder

#: The torch path these tests are about: no exported ONNX encoder is looked for.
TORCH = EmbeddingConfig(query_encoder="torch", document_encoder="torch")


class Counting(SentenceTransformerEmbedder):
    def __init__(self, **kw):
        super().__init__(TORCH, query_threads=None, trace_query=False, **kw)
        self.calls = 0

    def encode_texts(self, texts, batch_size=None):  # queries go through it, without the document prefix
        self.calls += 1
        return np.stack([np.full(4, float(len(t)), np.float32) for t in texts])


def test_repeated_query_is_encoded_once_and_read_only():
    e = Counting(query_cache_size=2)
    a = e.encode_query("parental leave")
    b = e.encode_query("parental leave")
    assert e.calls == 1 and a is b and not a.flags.writeable


def test_cache_evicts_least_recently_used():
    e = Counting(query_cache_size=2)
    e.encode_query("a")
    e.encode_query("bb")
    e.encode_query("a")  # refresh "a"
    e.encode_query("ccc")  # evicts "bb"
    assert e.calls == 3
    e.encode_query("a")
    assert e.calls == 3
    e.encode_query("bb")
    assert e.calls == 4


def test_cache_off():
    e = Counting(query_cache_size=0)
    e.encode_query("a")
    e.encode_query("a")
    assert e.calls == 2


def test_int8_model_has_its_own_cache_key():
    from proxypointer.config import EmbeddingConfig, config_from_dict

    assert SentenceTransformerEmbedder(quantize_int8=True).name.endswith("+int8")
    assert SentenceTransformerEmbedder().name == "all-MiniLM-L6-v2"
    cfg = config_from_dict({"embedding": {"quantize_int8": True}}, "test")
    assert cfg.embedding == EmbeddingConfig(quantize_int8=True)
    e = SentenceTransformerEmbedder(cfg.embedding)
    assert e.quantize_int8 and e.name == "all-MiniLM-L6-v2+int8"


def test_query_threads_are_restored(monkeypatch):
    torch = __import__("pytest").importorskip("torch")
    e = SentenceTransformerEmbedder(TORCH, trace_query=False)
    seen = []
    monkeypatch.setattr(
        e, "encode_texts",
        lambda texts, batch_size=None: seen.append(torch.get_num_threads()) or np.zeros((1, 4), np.float32),
    )
    before = torch.get_num_threads()
    e.encode_query("a question")
    assert seen == [1] and torch.get_num_threads() == before


def test_one_query_cli_commands_do_not_build_the_traced_encoder(tmp_path, monkeypatch):
    """`query` and `ask` embed one question: the ~1 s trace would only slow them down."""
    import pytest

    from proxypointer import cli

    class Stop(Exception):
        pass

    real, seen = cli._index, []

    def spy(args, **kw):
        seen.append(real(args, **kw).embedder.trace_query)
        raise Stop

    monkeypatch.setattr(cli, "_index", spy)
    for command, run in (("query", cli._cmd_query), ("ask", cli._cmd_ask)):
        args = cli._parser().parse_args([command, "a question", "--store", str(tmp_path)])
        with pytest.raises(Stop):
            run(args)
    assert seen == [False, False]
    args = cli._parser().parse_args(["query", "a question", "--store", str(tmp_path)])
    assert real(args).embedder.trace_query is True  # the library default: traced

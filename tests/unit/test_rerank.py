"""The optional reranker after fusion: a tiny cross-encoder made here, the llm: endpoint faked.

No reranker weights exist here and none are downloaded: the cross-encoder is a 2-layer BERT
with random weights (hidden size 32) and a vocabulary of data/'s words, written to a temporary
folder and read back through ``sentence_transformers.CrossEncoder``. Its order means nothing;
the tests check that the retriever follows it, keeps the cosine and keeps ``k``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path

import pytest
from fakes import FakeLLM, HashingEmbedder

from proxypointer.config import LLMConfig, ProxyPointerConfig, RerankConfig, RetrievalConfig, config_from_dict
from proxypointer.errors import ConfigError
from proxypointer.retrieve.rerank import CrossEncoderReranker, LLMReranker, candidate_text, make_reranker
from proxypointer.retrieve.rerank.llm import RERANK_PROMPT, build_rerank_messages, parse_order
from proxypointer.retrieve.retriever import Retriever
from proxypointer.retrieve.sections import Section

DATA = Path(__file__).resolve().parents[2] / "data"
QUERY = "How is parental leave paid?"


def key(s: Section) -> tuple[str, str]:
    return s.doc_id, s.node_id


@pytest.fixture(scope="module")
def store(data_store):
    """data/ indexed with the hashing embedder (conftest's data_store)."""
    return data_store


@pytest.fixture
def open_index(store):
    from proxypointer.index import Index

    made = []

    def _open(rerank: RerankConfig | None = None, llm: LLMConfig | None = None):
        cfg = ProxyPointerConfig(rerank=rerank or RerankConfig(), llm=llm or LLMConfig())
        made.append(Index(store, cfg, HashingEmbedder()))
        return made[-1]

    yield _open
    for idx in made:
        idx.close()


def make_section(i: int, *, text: str = "", crumb: tuple[str, ...] = (), chunk_text: str = "") -> Section:
    return Section(
        doc_id="doc", node_id=f"n{i}", title=f"Title {i}", breadcrumb=crumb or ("Doc", f"Title {i}"),
        start_line=i, end_line=i, text=text or f"text {i}", score=0.5 + i / 100, chunk_text=chunk_text,
        citation=f"doc.md#L{i}-L{i}", source="doc.md", kind="heading", level=2, chunk_start_line=i,
        chunk_end_line=i, rank_score=1.0 / (i + 1),
    )


class ReverseReranker:
    """Reverses the fused order (rank scores n..1) and records what it was given."""

    def __init__(self):
        self.seen: list[list[Section]] = []

    def rerank(self, query, sections):
        self.seen.append(list(sections))
        n = len(sections)
        return [replace(s, rank_score=float(n - p)) for p, s in enumerate(sections[::-1])]


class IdentityReranker:
    def rerank(self, query, sections):
        return list(sections)


# -- off by default ------------------------------------------------------------------------------
def test_off_by_default_retrieves_exactly_as_without_a_reranker(open_index):
    assert ProxyPointerConfig().rerank.backend == "none"
    index = open_index()
    plain = Retriever(index)
    assert plain.reranker is None and make_reranker(RerankConfig(), LLMConfig()) is None
    fused = plain.retrieve(QUERY, k=5)
    # the rerank path with a reranker that changes nothing, over the same pool (candidates = k),
    # builds the very same sections: the rebuild in the new ranks is the fused build
    same = Retriever(open_index(RerankConfig(candidates=5)), reranker=IdentityReranker()).retrieve(QUERY, k=5)
    assert same == fused and len(fused) == 5


# -- the retriever: candidates in, k out -------------------------------------------------------
def test_the_reranker_sees_candidates_and_k_applies_after_reranking(open_index):
    fused = Retriever(open_index()).retrieve(QUERY, k=8)
    assert not any(s.reached_via for s in fused)
    spy = ReverseReranker()
    got = Retriever(open_index(RerankConfig(candidates=8)), reranker=spy).retrieve(QUERY, k=3)
    (seen,) = spy.seen
    assert [key(s) for s in seen] == [key(s) for s in fused]  # 8 candidates for k = 3
    assert [key(s) for s in got] == [key(s) for s in fused[::-1][:3]]
    assert [s.rank_score for s in got] == [8.0, 7.0, 6.0]  # the reranker's scores
    cosine = {key(s): s.score for s in fused}
    assert all(s.score == cosine[key(s)] for s in got)  # the cosine kept


def test_sections_are_delivered_by_their_new_ranks(store):
    from proxypointer.index import Index

    # every section is over the cap; ranks after the first deliver at most 8 word pieces
    retrieval = RetrievalConfig(subtree_cap_tokens=1, full_ranks=1, tail_own_tokens=8)
    made = [Index(store, ProxyPointerConfig(retrieval=retrieval, rerank=RerankConfig(candidates=4)), HashingEmbedder())
            for _ in range(2)]
    try:
        fused = Retriever(made[0]).retrieve(QUERY, k=4)
        got = Retriever(made[1], reranker=ReverseReranker()).retrieve(QUERY, k=4)
    finally:
        for idx in made:
            idx.close()
    tok = HashingEmbedder().tokenizer
    assert [key(s) for s in got] == [key(s) for s in fused[::-1]]
    assert tok.count(fused[-1].text) <= 8 < tok.count(got[0].text)  # a tail before, first now
    assert tok.count(fused[0].text) > 8 >= tok.count(got[-1].text)  # first before, a tail now


def test_sections_a_query_label_names_stay_first(open_index):
    spy = ReverseReranker()
    query = "What does section 3.2.2 say about pay during parental leave?"
    fused = Retriever(open_index()).retrieve(query, k=6)
    pinned = [key(s) for s in fused if s.reached_via == "query"]
    if not pinned:
        pytest.skip("no label lookup for this query in data/")
    got = Retriever(open_index(RerankConfig(candidates=6)), reranker=spy).retrieve(query, k=6)
    assert [key(s) for s in got[: len(pinned)]] == pinned
    assert all(s.reached_via != "query" for s in spy.seen[0])


# -- the cross-encoder ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A 2-layer BERT cross-encoder (hidden 32, one label, random weights) with data/'s words as its vocabulary."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    words = sorted({w for p in DATA.glob("*.md") for w in re.findall(r"[a-z0-9]+", p.read_text().lower())})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(35)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256, num_labels=1, initializer_range=0.5)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


def test_cross_encoder_orders_by_its_scores_and_keeps_the_cosine(open_index, tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    cfg = RerankConfig(backend="cross-encoder", model=str(tiny_cross_encoder), candidates=8, max_tokens=128,
                       batch_size=4, excerpt_chars=400)
    fused = Retriever(open_index()).retrieve(QUERY, k=8)
    retriever = Retriever(open_index(cfg))
    assert isinstance(retriever.reranker, CrossEncoderReranker)
    got = retriever.retrieve(QUERY, k=3)

    model = CrossEncoder(str(tiny_cross_encoder), max_length=128, local_files_only=True)
    scores = model.predict([(QUERY, candidate_text(s, 400)) for s in fused], show_progress_bar=False)
    want = sorted(range(len(fused)), key=lambda i: -float(scores[i]))[:3]
    assert [key(s) for s in got] == [key(fused[i]) for i in want]
    assert [s.rank_score for s in got] == pytest.approx([float(scores[i]) for i in want], abs=1e-5)
    assert [s.score for s in got] == [fused[i].score for i in want]  # the cosine kept
    assert [key(s) for s in got] != [key(s) for s in fused[:3]]  # it did reorder
    assert [key(s) for s in retriever.retrieve(QUERY, k=3)] == [key(s) for s in got]  # deterministic


def test_cross_encoder_folder_must_exist(open_index, tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match=r"rerank.model: .*no-such-model: no such folder"):
        Retriever(open_index(RerankConfig(backend="cross-encoder", model=str(missing))))


def test_a_folder_without_a_model_is_a_config_error(tmp_path):
    pytest.importorskip("sentence_transformers")
    reranker = CrossEncoderReranker(RerankConfig(backend="cross-encoder", model=str(tmp_path)))
    with pytest.raises(ConfigError, match=r"rerank.model: .*not a cross-encoder"):
        reranker.rerank(QUERY, [make_section(1), make_section(2)])


# -- the llm: endpoint -------------------------------------------------------------------------------
@pytest.fixture
def llm_server():
    pytest.importorskip("openai")
    fake = FakeLLM()
    yield fake
    fake.close()


def llm_config(server: FakeLLM) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="test-model", max_retries=0, timeout_s=5.0)


def test_llm_order_follows_the_reply_over_http(open_index, llm_server):
    fused = Retriever(open_index()).retrieve(QUERY, k=5)
    llm_server.reply("```json\n[3, 1, 3, 9]\n```")  # a repeat and an unknown number are dropped
    cfg = RerankConfig(backend="llm", candidates=5, reply_tokens=64)
    retriever = Retriever(open_index(cfg, llm_config(llm_server)))
    assert isinstance(retriever.reranker, LLMReranker)
    got = retriever.retrieve(QUERY, k=5)
    order = [2, 0, 1, 3, 4]  # 3, 1, then the ones it left out in their fused order
    assert [key(s) for s in got] == [key(fused[i]) for i in order]
    assert [s.rank_score for s in got] == [1.0, 0.8, 0.6, 0.4, 0.2]
    assert [s.score for s in got] == [fused[i].score for i in order]
    (req,) = llm_server.requests  # one call per query
    body = req["json"]
    assert body["max_tokens"] == 64 and body["messages"][0]["content"] == RERANK_PROMPT
    user = body["messages"][1]["content"]
    for i, s in enumerate(fused, 1):
        assert f"[{i}] {' > '.join(s.breadcrumb)}" in user
    assert f"Query: {QUERY}" in user


@pytest.mark.parametrize("reply", ["I cannot rank these.", "[]", "[0, 42]", '{"order": "best"}'])
def test_an_unparsable_reply_keeps_the_fused_order(open_index, llm_server, caplog, reply):
    fused = Retriever(open_index()).retrieve(QUERY, k=4)
    llm_server.reply(reply)
    retriever = Retriever(open_index(RerankConfig(backend="llm", candidates=4), llm_config(llm_server)))
    with caplog.at_level(logging.WARNING, logger="proxypointer.retrieve.rerank.llm"):
        got = retriever.retrieve(QUERY, k=4)
    assert got == fused  # order, rank scores, cosines: as fused
    assert "keeping the fused order" in caplog.text


def test_an_endpoint_error_keeps_the_fused_order(open_index, llm_server, caplog):
    fused = Retriever(open_index()).retrieve(QUERY, k=4)
    llm_server.reply({"error": {"message": "boom"}}, status=500)
    retriever = Retriever(open_index(RerankConfig(backend="llm", candidates=4), llm_config(llm_server)))
    with caplog.at_level(logging.WARNING, logger="proxypointer.retrieve.rerank.llm"):
        got = retriever.retrieve(QUERY, k=4)
    assert got == fused
    assert "HTTP 500" in caplog.text and "keeping the fused order" in caplog.text


@pytest.mark.parametrize(
    ("reply", "n", "order"),
    [
        ("[2, 2, 9, 0, 1]", 3, [1, 0, 2]),
        ('Sure! ```json\n["3", 1]\n```', 3, [2, 0, 1]),
        ("[true, 1.0, 2.5]", 3, [0, 1, 2]),
        ("[] then [2]", 3, [1, 0, 2]),
        ("[1, [2]]", 3, [1, 0, 2]),  # the nested list is the first well-formed one
        ("no list", 3, None),
        ("[4, 5]", 3, None),
    ],
)
def test_parse_order(reply, n, order):
    assert parse_order(reply, n) == order


class RecordingClient:
    name = "fake"

    def __init__(self, reply: str):
        self.reply = reply
        self.calls: list[tuple[list[dict], int]] = []

    def complete(self, messages, *, max_tokens=0):
        self.calls.append(([dict(m) for m in messages], max_tokens))
        return self.reply


def test_prompt_size_is_bounded_with_many_long_candidates():
    long = "word " * 5000
    sections = [make_section(i, text=long, chunk_text=long, crumb=("A very long title " * 40, f"T{i}"))
                for i in range(1, 41)]
    cfg = RerankConfig(backend="llm", prompt_chars=4000, excerpt_chars=500, reply_tokens=32)
    client = RecordingClient("[40, 1]")
    got = LLMReranker(cfg, LLMConfig(), client).rerank("q " * 3000, sections)
    ((messages, max_tokens),) = client.calls
    user = messages[1]["content"]
    assert messages == build_rerank_messages("q " * 3000, sections, 4000, 500)
    tail = "\n\nReply with the JSON list of the 40 candidate numbers, best first."
    assert user.endswith(tail)
    overhead = len("Query: \n\nCandidates:\n\n") + len(tail)
    assert len(user) <= 4000 + 2 * 39 + 500 + overhead  # candidates + separators + query + fixed text
    assert all(f"[{i}] " in user for i in range(1, 41))
    assert max_tokens == 32
    assert [s.node_id for s in got[:3]] == ["n40", "n1", "n2"]
    assert len({key(s) for s in got}) == 40


def test_candidate_text_is_breadcrumb_then_excerpt_without_data_uris():
    s = make_section(1, chunk_text="Paid at  90%\n![chart](data:image/png;base64," + "A" * 500 + ")")
    text = candidate_text(s, 1000)
    assert text.startswith("Doc > Title 1\nPaid at 90% ") and "AAAA" not in text
    assert len(candidate_text(s, 20)) <= 20
    assert candidate_text(replace(s, chunk_text=""), 100) == "Doc > Title 1\ntext 1"


# -- config --------------------------------------------------------------------------------------
def test_rerank_config_is_checked():
    with pytest.raises(ConfigError, match=r"rerank.backend: expected one of"):
        config_from_dict({"rerank": {"backend": "bge"}})
    with pytest.raises(ConfigError, match=r"rerank.model: .*no model folder"):
        config_from_dict({"rerank": {"backend": "cross-encoder"}})
    with pytest.raises(ConfigError, match=r"rerank.backend: llm needs an llm: section"):
        config_from_dict({"rerank": {"backend": "llm"}})
    with pytest.raises(ConfigError, match=r"rerank.candidates: expected an int >= 1"):
        config_from_dict({"rerank": {"candidates": 0}})
    cfg = config_from_dict({"rerank": {"backend": "llm"}, "llm": {"base_url": "http://127.0.0.1:1/v1", "model": "m"}})
    assert cfg.rerank.backend == "llm"


def test_a_servers_readers_share_one_reranker(store, tmp_path):
    import threading

    from proxypointer.serve.concurrency import SharedEmbedder
    from proxypointer.serve.readers import ReaderPool

    # the folder is checked when the reranker is made; the model loads on the first query
    cfg = config_from_dict({"rerank": {"backend": "cross-encoder", "model": str(tmp_path)}, "serve": {"threads": 3}})
    pool = ReaderPool(store, cfg, SharedEmbedder(HashingEmbedder()), write_lock=threading.Lock(), writer=None)
    try:
        rerankers = {id(r.retriever.reranker) for r in pool.readers}
        assert len(pool.readers) == 3 and len(rerankers) == 1
        assert isinstance(pool.readers[0].retriever.reranker, CrossEncoderReranker)
    finally:
        pool.close()


def test_explain_says_a_reranker_ordered_the_sections(store, llm_server):
    # found by a new user: the inspector's "Why it ranked" showed fusion's ranks only, with no
    # word that a reranker had moved the section
    from proxypointer.serve.service import Service

    def explain(cfg: ProxyPointerConfig) -> dict:
        svc = Service(store, cfg, HashingEmbedder())
        try:
            return svc.explain(QUERY, 3)
        finally:
            svc.close()

    fused = explain(ProxyPointerConfig())
    llm_server.reply("[2, 1]")
    why = explain(ProxyPointerConfig(rerank=RerankConfig(backend="llm", candidates=5), llm=llm_config(llm_server)))
    assert fused["reranker"] is None and why["reranker"] == "llm"
    key_of = [(x["doc_id"], x["node_id"]) for x in fused["sections"]]
    assert [(x["doc_id"], x["node_id"]) for x in why["sections"]][:2] == [key_of[1], key_of[0]]
    assert [x["rank"] for x in why["sections"]] == [1, 2, 3]
    assert [x["fused_rank"] for x in why["sections"]][:2] == [x["fused_rank"] for x in fused["sections"]][1::-1]

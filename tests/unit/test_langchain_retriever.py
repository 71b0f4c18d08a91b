"""ProxyPointerRetriever: whole sections as LangChain Documents, sync and async, in LCEL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda, RunnablePassthrough  # noqa: E402

from proxypointer.config import ProxyPointerConfig
from proxypointer.integrations.langchain import ProxyPointerRetriever, section_to_document

DATA = Path(__file__).resolve().parents[2] / "data"
QUESTION = "How is parental leave paid?"


@pytest.fixture(scope="module")
def store(data_store):
    """data/ indexed with the hashing embedder (conftest's data_store)."""
    return data_store


@pytest.fixture
def lc_retriever(store, fake_embedder):
    r = ProxyPointerRetriever.from_store(store, embedder=fake_embedder, k=3)
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


def test_is_a_base_retriever_returning_whole_sections(lc_retriever, store, fake_embedder):
    assert isinstance(lc_retriever, BaseRetriever)
    docs = lc_retriever.invoke(QUESTION)
    sections = _expected(store, fake_embedder, QUESTION, k=3)
    assert len(docs) == 3
    for d, s in zip(docs, sections, strict=True):
        assert isinstance(d, Document)
        assert d.page_content == s.text
        assert d.id == f"{s.doc_id}#{s.node_id}"
        m = d.metadata
        assert m["doc_id"] == s.doc_id and m["node_id"] == s.node_id
        assert m["breadcrumb"] == list(s.breadcrumb)
        assert m["lines"] == [s.start_line, s.end_line]
        assert m["text_lines"] == [s.text_start_line, s.text_end_line]
        assert m["citation"] == s.citation == f"employee-handbook.md#L{s.text_start_line}-L{s.text_end_line}"
        assert m["delivery"] == s.delivery and m["outline"] == [e.to_dict() for e in s.outline]
        assert m["score"] == pytest.approx(s.score)
    lines = (DATA / "employee-handbook.md").read_text().splitlines()
    first = docs[0].metadata["text_lines"]
    assert docs[0].page_content == "\n".join(lines[first[0] - 1 : first[1]])


def test_a_big_section_carries_its_outline(store, fake_embedder):
    import dataclasses

    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    cfg = ProxyPointerConfig()
    cfg = dataclasses.replace(cfg, retrieval=dataclasses.replace(cfg.retrieval, subtree_cap_tokens=100))
    r = ProxyPointerRetriever(retriever=Retriever(Index(store, cfg, fake_embedder)), k=5,
                              doc_ids=["employee-handbook"])
    try:
        docs = r.invoke("enhanced scheme on top of statutory entitlements for parental leave")
        capped = [d for d in docs if d.metadata["delivery"] != "subtree"]
        outline = next(d.metadata["outline"] for d in capped if d.metadata["outline"])
        assert {"node_id", "title", "start_line", "end_line", "citation"} == set(outline[0])
    finally:
        r.close()


def test_async_matches_sync(lc_retriever):
    sync = lc_retriever.invoke(QUESTION)
    async_docs = asyncio.run(lc_retriever.ainvoke(QUESTION))
    assert [d.metadata["citation"] for d in async_docs] == [d.metadata["citation"] for d in sync]
    many = asyncio.run(lc_retriever.abatch([QUESTION, "What is the notice period?"]))
    assert many[0][0].metadata["citation"] == sync[0].metadata["citation"]
    assert many[1][0].metadata["breadcrumb"][-1] == "6.1 Notice periods"


def test_batch_runs_from_langchain_threads(lc_retriever):
    out = lc_retriever.batch(
        ["What is the notice period?", "How do I claim expenses?"], config={"max_concurrency": 2}
    )
    assert [docs[0].metadata["breadcrumb"][-1] for docs in out] == [
        "6.1 Notice periods",
        "2.2 Expenses",
    ]


def test_filters_and_k(store, fake_embedder):
    r = ProxyPointerRetriever.from_store(
        store, embedder=fake_embedder, k=2, doc_ids=["telemetry-gateway-spec"]
    )
    try:
        docs = r.invoke(QUESTION)
        r.close()  # releases the registry; the next call opens it again on a new worker thread
        assert [d.id for d in r.invoke(QUESTION)] == [d.id for d in docs]
    finally:
        r.close()
    assert len(docs) == 2 and {d.metadata["doc_id"] for d in docs} == {"telemetry-gateway-spec"}


def test_wraps_an_existing_retriever(store, fake_embedder):
    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    r = ProxyPointerRetriever(
        retriever=Retriever(Index(store, ProxyPointerConfig(), fake_embedder)), k=1
    )
    try:
        (doc,) = r.invoke("What is the notice period?")
    finally:
        r.close()
    assert doc.metadata["breadcrumb"][-1] == "6.1 Notice periods"
    assert (
        section_to_document(_expected(store, fake_embedder, "What is the notice period?", k=1)[0])
        == doc
    )


def test_in_an_lcel_chain_with_a_fake_chat_model(lc_retriever):
    prompts = []

    def format_docs(docs):
        return "\n\n".join(
            f"[{i}] {d.metadata['citation']} | {' > '.join(d.metadata['breadcrumb'])}\n"
            f"{d.page_content}"
            for i, d in enumerate(docs, 1)
        )

    def spy(prompt_value):
        prompts.append(prompt_value.to_string())
        return prompt_value

    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer only from the numbered sources and cite them like [1]."),
            ("human", "Sources:\n{context}\n\nQuestion: {question}"),
        ]
    )
    model = FakeListChatModel(responses=["Parental leave pay is set out in [1]."])
    chain = (
        {"context": lc_retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | RunnableLambda(spy)
        | model
        | StrOutputParser()
    )
    assert chain.invoke(QUESTION) == "Parental leave pay is set out in [1]."
    (sent,) = prompts
    docs = lc_retriever.invoke(QUESTION)
    assert f"[1] {docs[0].metadata['citation']} | " in sent
    assert docs[0].page_content in sent and f"Question: {QUESTION}" in sent

    model_async = FakeListChatModel(responses=["async answer [1]"])
    achain = (
        {"context": lc_retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model_async
    )
    assert asyncio.run(achain.ainvoke(QUESTION)).content == "async answer [1]"


def test_k_and_filters_per_call(lc_retriever):
    # LangChain retrievers take the number of results per call (langchain-tests,
    # RetrieversIntegrationTests.test_invoke_with_k_kwarg); the constructor's k is the default.
    assert len(lc_retriever.invoke(QUESTION, k=1)) == 1
    assert len(lc_retriever.invoke(QUESTION)) == 3
    assert len(asyncio.run(lc_retriever.ainvoke(QUESTION, k=5))) == 5
    docs = lc_retriever.invoke(QUESTION, k=4, doc_ids=["site-visit-notes"])
    assert len(docs) == 4 and {d.metadata["doc_id"] for d in docs} == {"site-visit-notes"}
    from proxypointer.errors import ConfigError

    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['top_k'\]"):
        lc_retriever.invoke(QUESTION, top_k=1)


def test_case_32_an_empty_allow_list_returns_no_document(store, fake_embedder):
    r = ProxyPointerRetriever.from_store(store, embedder=fake_embedder, k=3, doc_ids=[])
    try:
        assert r.invoke(QUESTION) == []
        assert asyncio.run(r.ainvoke(QUESTION)) == []
    finally:
        r.close()
    r = ProxyPointerRetriever.from_store(store, embedder=fake_embedder, k=3)
    try:
        assert r.invoke(QUESTION, doc_ids=[]) == [] and r.invoke(QUESTION, source_prefix="nothing/") == []
    finally:
        r.close()


# -- LangChain's own standard tests for retrievers (langchain-tests) -----------------------------
langchain_tests = pytest.importorskip("langchain_tests.integration_tests")

_STANDARD_STORE: list[Path] = []


@pytest.fixture(autouse=True, scope="module")
def _standard_store(store):
    _STANDARD_STORE.append(store)
    yield
    _STANDARD_STORE.clear()


class _StandardRetriever(ProxyPointerRetriever):
    """ProxyPointerRetriever on the data/ store with the fake embedder, built from keyword arguments only."""

    def __init__(self, **kwargs):
        from fakes import HashingEmbedder

        from proxypointer.index import Index
        from proxypointer.retrieve.retriever import Retriever

        index = Index(_STANDARD_STORE[0], ProxyPointerConfig(), HashingEmbedder())
        super().__init__(retriever=Retriever(index), **kwargs)


class TestStandardRetriever(langchain_tests.RetrieversIntegrationTests):
    """All of RetrieversIntegrationTests: k in the constructor and per call, invoke, ainvoke."""

    @property
    def retriever_constructor(self):
        return _StandardRetriever

    @property
    def retriever_constructor_params(self):
        return {"k": 2}

    @property
    def retriever_query_example(self):
        return QUESTION

    @pytest.fixture
    def retriever(self):
        r = self.retriever_constructor(**self.retriever_constructor_params)
        yield r
        r.close()

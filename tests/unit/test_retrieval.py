"""Retrieval: dedupe by (doc_id, node_id), over-fetch, whole-section slicing, citations."""

import dataclasses
import shutil

import numpy as np
import pytest

from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.errors import ConfigError
from proxypointer.retrieve.context import Assembler
from proxypointer.retrieve.delivery import Delivery
from proxypointer.retrieve.retriever import STATEMENT_HEAD_LINES, Retriever
from proxypointer.store.chroma import Hit


@pytest.fixture
def case27(make_index, cases_dir, tmp_path):
    src = cases_dir / "27-section-dedup-and-provenance"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("a.md", "b.md"):
        shutil.copy(src / name, corpus / name)
    idx = make_index()
    rep = idx.ingest([corpus], show_progress=False)
    assert rep.indexed == 2 and not rep.failed
    return idx, corpus


def test_case_27_one_section_for_many_chunk_hits(case27):
    idx, _ = case27
    # 4 Returns chunks would fill the top of a plain chunk query: the section comes back once.
    (s,) = Retriever(idx).retrieve("can I return an opened item", k=1)
    assert (s.doc_id, s.title, s.start_line, s.end_line) == ("a", "Returns", 7, 16)
    assert s.text.splitlines()[0] == "## Returns" and s.text.count("\n") == 9


def test_case_27_identical_text_in_two_documents_keeps_its_own_provenance(case27):
    idx, corpus = case27
    got = Retriever(idx).retrieve("how long is the warranty", k=2)
    assert sorted((s.doc_id, s.title, s.start_line, s.end_line) for s in got) == [
        ("a", "Warranty", 3, 6), ("b", "Warranty", 3, 6)]
    for s in got:
        assert s.source == str((corpus / f"{s.doc_id}.md").resolve())
        assert s.citation == f"{s.doc_id}.md#L3-L6"
        own = (corpus / f"{s.doc_id}.md").read_text().split("\n")[2:6]
        assert s.text == "\n".join(own)
    assert len({(s.doc_id, s.node_id) for s in got}) == 2


def test_case_27_overfetch_until_k_distinct_sections(make_index, case27):
    idx, _ = case27
    # A tiny over-fetch forces the retriever to grow its chunk query.
    small = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(overfetch=1)), store=idx.root)
    got = Retriever(small).retrieve("kettle", k=3)
    assert len(got) == 3 and len({(s.doc_id, s.node_id) for s in got}) == 3


def test_case_27_more_sections_than_exist_returns_all_once(make_index, case27):
    idx, _ = case27
    got = Retriever(idx).retrieve("kettle", k=50)
    keys = [(s.doc_id, s.node_id) for s in got]
    assert len(keys) == len(set(keys)) == 5  # a: Warranty, Returns, Cleaning; b: Warranty, Crumb tray
    assert [s.rank_score for s in got] == sorted((s.rank_score for s in got), reverse=True)
    plain = RetrievalConfig(hybrid=False, title_weight=0, section_scoring="max")
    dense = make_index(ProxyPointerConfig(retrieval=plain), store=idx.root)
    got = Retriever(dense).retrieve("kettle", k=50)
    assert len(got) == 5
    assert [s.score for s in got] == sorted((s.score for s in got), reverse=True)
    assert [s.rank_score for s in got] == [s.score for s in got]  # dense, max: ranked by the cosine


def test_filters_by_doc_and_prefix(case27):
    idx, _ = case27
    r = Retriever(idx)
    assert {s.doc_id for s in r.retrieve("warranty", k=5, doc_ids=["b"])} == {"b"}
    assert {s.doc_id for s in r.retrieve("warranty", k=5, source_prefix="a")} == {"a"}
    assert r.retrieve("warranty", k=5, source_prefix="zzz") == []


def test_k_must_be_positive(case27):
    idx, _ = case27
    with pytest.raises(ConfigError):
        Retriever(idx).retrieve("x", k=0)


def test_sections_are_sliced_from_the_stored_copy(case27):
    idx, corpus = case27
    before = Retriever(idx).retrieve("descale the kettle vinegar", k=1)[0]
    # The file changes on disk after indexing: the pointer still slices what was indexed.
    (corpus / "a.md").write_text("# Completely different\n\nnew text\n")
    after = Retriever(idx).retrieve("descale the kettle vinegar", k=1)[0]
    assert after.text == before.text and "Descale the kettle" in after.text
    assert [s["doc_id"] for s in idx.status()["stale_sources"]] == ["a"]


def test_case_07_preamble_is_returned_alone(make_index, cases_dir):
    idx = make_index()
    idx.ingest([cases_dir / "07-preamble-before-first-heading" / "input.md"], show_progress=False)
    s = Retriever(idx).retrieve("how long are snapshots kept", k=1)[0]
    assert (s.kind, s.start_line, s.end_line) == ("preamble", 1, 3)
    assert "# Installation" not in s.text
    inst = [x for x in Retriever(idx).retrieve("download the package", k=4) if x.title == "Installation"][0]
    assert (inst.start_line, inst.end_line) == (4, 11) and "Snapshots" not in inst.text


def test_case_11_breadcrumb_only_chunks_do_not_outrank_content(make_index, cases_dir):
    idx = make_index()
    idx.ingest([cases_dir / "11-empty-sections-heading-only" / "input.md"], show_progress=False)
    s = Retriever(idx).retrieve("how do I start it", k=1)[0]
    assert (s.title, s.start_line, s.end_line) == ("Usage", 9, 10)
    assert "Press the start button twice." in s.text


def test_case_08_window_hit_slices_its_lines(make_index, cases_dir):
    idx = make_index()
    idx.ingest([cases_dir / "08-headerless-doc-window-fallback" / "input.md"], show_progress=False)
    s = Retriever(idx).retrieve("where is the spare key", k=1)[0]
    assert s.kind == "window" and s.end_line == 21
    assert "The spare key is kept in the blue tin under the bench." in s.text


def test_query_racing_a_writer_searches_again(case27, monkeypatch):
    from proxypointer.errors import StaleSourceError

    idx, _ = case27
    real = idx.registry.sources.load
    calls = []

    def flaky(doc_hash):
        calls.append(doc_hash)
        if len(calls) == 1:  # the writer pruned this source between hit and slice
            raise StaleSourceError("gone")
        return real(doc_hash)

    monkeypatch.setattr(idx.registry.sources, "load", flaky)
    (s,) = Retriever(idx).retrieve("descale the kettle vinegar", k=1)
    assert "Descale the kettle" in s.text and len(calls) >= 2


def test_retrieve_reads_records_of_the_winners_only(case27, monkeypatch):
    # Ids first: the over-fetched hits are ranked on their ids; text and metadata are read
    # for the k sections returned, not for all 50 chunks fetched, and from the registry's
    # copies, not from Chroma.
    idx, _ = case27
    real_records = idx.registry.chunk_records
    asked: list[list[str]] = []

    def spy(ids):
        asked.append(list(ids))
        return real_records(ids)

    monkeypatch.setattr(idx.registry, "chunk_records", spy)
    monkeypatch.setattr(idx.store, "get", lambda ids: pytest.fail(f"Chroma read for {ids}"))
    got = Retriever(idx).retrieve("kettle", k=2)
    assert len(got) == 2
    assert sum(len(a) for a in asked) == 2
    assert {(s.doc_id, s.node_id) for s in got} == {(i.split("::")[0], i.split("::")[2]) for a in asked for i in a}


def test_chunks_without_a_registry_copy_are_read_from_chroma_until_the_next_ingest(case27, monkeypatch):
    # A store written before the registry kept record copies: same hits, read from Chroma;
    # the next ingest (nothing changed) fills the copies in, and they equal Chroma's records.
    idx, data = case27
    r = Retriever(idx).ranker
    before = r.dense("kettle", 8, hydrate=True)
    idx.registry._db.execute("UPDATE chunks SET record = NULL")
    chroma_reads = []
    real_get = idx.store.get
    monkeypatch.setattr(idx.store, "get", lambda ids: chroma_reads.append(list(ids)) or real_get(ids))
    assert r.dense("kettle", 8, hydrate=True) == before and chroma_reads
    report = idx.ingest([data], show_progress=False)
    assert report.unchanged == report.documents and report.indexed == 0
    assert idx.registry.chunks.chunks_without_record(10) == []
    chroma_reads.clear()
    assert r.dense("kettle", 8, hydrate=True) == before and not chroma_reads
    live = sorted(idx.registry.chunk_ids())
    copies = idx.registry.chunks.chunk_record_copies(live)
    assert copies == {h.chunk_id: (h.text, h.metadata) for h in real_get(live)} and len(copies) == len(live)


def test_hits_without_hydration_carry_the_pointer_of_their_id(case27):
    idx, _ = case27
    r = Retriever(idx).ranker
    bare = r.dense("kettle", 5)
    full = r.dense("kettle", 5, hydrate=True)
    assert [h.chunk_id for h in bare] == [h.chunk_id for h in full]
    for b, f in zip(bare, full, strict=True):
        assert b.text == "" and f.text
        assert {k: f.metadata[k] for k in ("doc_id", "version", "node_id", "chunk_index")} == b.metadata
    assert r.hydrate(bare) == full


def test_a_hit_deleted_during_the_query_searches_again(case27, monkeypatch):
    idx, _ = case27
    real_records, real_get = idx.registry.chunk_records, idx.store.get
    calls = []

    def vanishing(ids):
        calls.append(ids)
        return {} if len(calls) == 1 else real_records(ids)  # the first read finds the records gone

    monkeypatch.setattr(idx.registry, "chunk_records", vanishing)
    monkeypatch.setattr(idx.store, "get", lambda ids: [] if len(calls) == 1 else real_get(ids))
    (s,) = Retriever(idx).retrieve("descale the kettle vinegar", k=1)
    assert "Descale the kettle" in s.text and len(calls) == 2


@pytest.mark.parametrize("exact_limit", [0, 1000])
def test_doc_filter_searches_exactly_or_through_chroma_with_the_same_result(case27, monkeypatch, exact_limit):
    # Up to EXACT_SEARCH_MAX_CHUNKS live chunks, a doc_id filter scores the chunks' stored
    # vectors in numpy; above it, Chroma's filtered search runs. Both give the same sections.
    import proxypointer.retrieve.dense as dense

    idx, _ = case27
    monkeypatch.setattr(dense, "EXACT_SEARCH_MAX_CHUNKS", exact_limit)
    seen = []
    real = idx.store.query_ids
    monkeypatch.setattr(idx.store, "query_ids", lambda *a, **kw: seen.append(a) or real(*a, **kw))
    r = Retriever(idx)
    for query in ("kettle", "how long is the warranty", "crumb tray"):
        got = r.retrieve(query, k=3, doc_ids=["b"])
        assert got and {s.doc_id for s in got} == {"b"}
        hits = r.ranker.dense(query, 50, {"doc_id": "b"})
        expected = [(node, round(score, 5)) for score, ((node, _), *_rest) in _first_per_section(hits)]
        assert [(s.node_id, round(s.score, 5)) for s in got] == expected[:3]
    assert bool(seen) == (exact_limit == 0)


def _first_per_section(hits):
    seen, out = set(), []
    for h in hits:
        key = (h.metadata["node_id"], h.metadata["doc_id"])
        if key not in seen:
            seen.add(key)
            out.append((h.score, (key,)))
    return out


def test_exact_doc_filter_scores_equal_chroma_cosine(case27, monkeypatch):
    import proxypointer.retrieve.dense as dense

    idx, _ = case27
    r = Retriever(idx).ranker
    exact = {h.chunk_id: h.score for h in r.dense("warranty", 10, {"doc_id": {"$in": ["a", "b"]}})}
    monkeypatch.setattr(dense, "EXACT_SEARCH_MAX_CHUNKS", 0)
    hnsw = {h.chunk_id: h.score for h in r.dense("warranty", 10, {"doc_id": {"$in": ["a", "b"]}})}
    assert exact.keys() == hnsw.keys()
    assert all(abs(exact[c] - hnsw[c]) < 1e-4 for c in exact)


NESTED_DOC = """# Guide

Intro of the guide.

## Kettle

The kettle section covers descaling and the kettle warranty in general terms.

### Descaling

Descale the kettle monthly with white vinegar and rinse the kettle twice.

### Filter

The kettle filter is rinsed under the tap.

## Toaster

The toaster crumb tray slides out at the back.

## Fridge

The fridge keeps food cold.

## Oven

The oven heats food.
"""


@pytest.fixture
def nested_index(make_index, tmp_path):
    src = tmp_path / "guide.md"
    src.write_text(NESTED_DOC, encoding="utf-8")

    def _make(nested):
        idx = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(nested=nested)), store=tmp_path / "store")
        assert not idx.ingest([src], show_progress=False).failed
        return idx

    return _make


def _encloses(a, b):
    return a.doc_id == b.doc_id and a.start_line <= b.start_line and b.end_line <= a.end_line


def test_nested_keep_returns_a_section_and_its_subsection_as_ranked(nested_index):
    got = Retriever(nested_index("keep")).retrieve("descale the kettle with vinegar", k=5)
    titles = [s.title for s in got]
    assert titles[0] == "Descaling" and "Kettle" in titles


def test_nested_merge_returns_the_enclosing_section_once_at_the_better_rank(nested_index):
    keep = Retriever(nested_index("keep")).retrieve("descale the kettle with vinegar", k=5)
    got = Retriever(nested_index("merge")).retrieve("descale the kettle with vinegar", k=5)
    assert got[0].title == "Kettle" and got[0].score == keep[0].score  # took Descaling's place and chunk
    assert got[0].chunk_id == keep[0].chunk_id and got[0].rank_score == keep[0].rank_score
    assert "Descale the kettle monthly" in got[0].text
    # no line twice, except under a section spanning more than half of the document (the
    # whole "Guide"), which is returned as ranked and never merged
    broad = {s.node_id for s in got if s.end_line - s.start_line + 1 > len(NESTED_DOC.splitlines()) / 2}
    assert broad <= {s.node_id for s in got if s.title == "Guide"}
    narrow = [s for s in got if s.node_id not in broad]
    assert not any(_encloses(a, b) for a in narrow for b in narrow if a is not b)
    assert len(got) == 5 and [s.score for s in got] == sorted((s.score for s in got), reverse=True)


def test_nested_must_be_keep_or_merge():
    with pytest.raises(ConfigError, match="retrieval.nested"):
        RetrievalConfig(nested="fold")


def test_a_query_with_another_model_than_the_store_was_built_with_is_refused(case27):
    from proxypointer.errors import ConfigError

    idx, _ = case27
    idx.registry.set_meta("model", "all-MiniLM-L6-v2+int8")
    with pytest.raises(ConfigError, match=r"built with model 'all-MiniLM-L6-v2\+int8'"):
        Retriever(idx).retrieve("kettle", k=1)


# -- one retrieval path: k sections and honest scores in every scoring mode ---------------------
DATA = __import__("pathlib").Path(__file__).resolve().parents[2] / "data"

MODES = {
    "dense-max": {},
    "hybrid": {"hybrid": True},
    "sum": {"section_scoring": "sum", "section_top_n": 2},
    "rrf": {"section_scoring": "rrf", "hybrid": True},
    "routed": {"hybrid": True, "title_routing_docs": 1},
    "merge": {"nested": "merge", "hybrid": True, "section_scoring": "sum"},
}


@pytest.fixture(scope="module")
def data_store(tmp_path_factory):
    from fakes import HashingEmbedder
    from sections import count_sections

    from proxypointer.index import Index

    root = tmp_path_factory.mktemp("data-store")
    with Index(root, ProxyPointerConfig(), HashingEmbedder()) as idx:
        assert not idx.ingest([DATA], show_progress=False).failed
        counts = {False: count_sections(idx.registry), True: count_sections(idx.registry, merged=True)}
    return root, counts


def _retriever(store, fake_embedder, **retrieval):
    from proxypointer.index import Index

    cfg = ProxyPointerConfig(retrieval=RetrievalConfig(**retrieval))
    return Retriever(Index(store, cfg, fake_embedder))


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_returns_k_sections_with_the_cosine_of_their_chunk(data_store, fake_embedder, mode):
    store, counts = data_store
    n_sections = counts[MODES[mode].get("nested") == "merge"]
    r = _retriever(store, fake_embedder, overfetch=2, **MODES[mode])  # a tiny over-fetch must grow
    for query in ("How is parental leave paid?", "Telemetry Gateway Specification. buffer full", "pump pressure"):
        for k in (1, 5, 12, n_sections + 3):
            got = r.retrieve(query, k=k)
            assert len(got) == min(k, n_sections), (mode, query, k)
            assert len({(s.doc_id, s.node_id) for s in got}) == len(got)
        got = r.retrieve(query, k=8)
        found, vectors = r.index.store.vectors([s.chunk_id for s in got])
        cosine = dict(zip(found, (vectors @ fake_embedder.encode_query(r.ranker.route(query, None).query)).tolist(),
                          strict=True))
        for s in got:
            assert s.score == pytest.approx(cosine[s.chunk_id], abs=1e-5), (mode, s.citation)
            lines = (s.chunk_start_line, s.chunk_end_line)
            assert s.start_line <= lines[0] <= lines[1] <= s.end_line and s.chunk_text in s.text or s.chunk_text
        if mode != "routed":  # a routed query's tail comes from the unrouted search (documented)
            assert [s.rank_score for s in got] == sorted((s.rank_score for s in got), reverse=True)
    r.index.close()


def test_hybrid_returns_lexical_only_hits_with_their_cosine(data_store, fake_embedder):
    store, _ = data_store
    r = _retriever(store, fake_embedder, hybrid=True, lexical_weight=5.0, overfetch=2)
    # "TG-501" is rare: the lexical ranking finds it even where the dense top-2 does not
    (s,) = r.retrieve("error code TG-501", k=1)
    assert "TG-501" in s.text
    q = fake_embedder.encode_query("error code TG-501")
    found, vectors = r.index.store.vectors([s.chunk_id])
    assert s.score == pytest.approx(float(vectors[0] @ q), abs=1e-5)
    r.index.close()


# -- shared case 32: an empty allow-list selects nothing ---------------------------------------
@pytest.fixture
def case32(make_index, cases_dir):
    idx = make_index()
    assert not idx.ingest([cases_dir / "32-empty-doc-ids-filter" / "corpus"], show_progress=False).failed
    return Retriever(idx)


def test_case_32_empty_allow_lists_select_nothing(case32):
    r, q = case32, "What does band E3 pay?"
    got = r.retrieve(q, k=3)
    assert len(got) == 3 and got[0].doc_id == "salary-bands"
    assert {s.doc_id for s in r.retrieve(q, k=3, doc_ids=["hr-policy"])} == {"hr-policy"}
    assert r.retrieve(q, k=3, doc_ids=["no-such-doc"]) == []
    assert r.retrieve(q, k=3, source_prefix="no-such-prefix") == []
    assert r.retrieve(q, k=3, doc_ids=[]) == []
    assert r.retrieve(q, k=3, doc_ids=()) == []
    assert r.retrieve(q, k=3, doc_ids=[], source_prefix="salary") == []
    assert len(r.retrieve(q, k=3, where={})) == 3
    # variants of the kind: an empty generator, an empty set, a prefix narrowing an allow-list to nothing
    assert r.retrieve(q, k=3, doc_ids=iter(())) == []
    assert r.retrieve(q, k=3, doc_ids=set()) == []
    assert r.retrieve(q, k=3, doc_ids=["hr-policy"], source_prefix="salary") == []
    with pytest.raises(ConfigError, match="doc_ids: expected a list"):
        r.retrieve(q, k=3, doc_ids="salary-bands")


def test_case_32_empty_allow_lists_in_every_mode(data_store, fake_embedder):
    store, _ = data_store
    for mode in MODES.values():
        r = _retriever(store, fake_embedder, **mode)
        assert r.retrieve("parental leave", k=3, doc_ids=[]) == []
        r.index.close()


def test_doc_ids_accept_the_citation_form(case32):
    r = case32
    assert r.resolve_doc_ids(["salary-bands.md", "hr-policy", "nope.md"]) == (
        ["salary-bands", "hr-policy", "nope.md"], ["nope.md"])
    assert {s.doc_id for s in r.retrieve("What does band E3 pay?", k=3, doc_ids=["salary-bands.md"])} == {
        "salary-bands"}
    assert r.resolve_doc_ids(["salary-bands.markdown"])[1] == ["salary-bands.markdown"]  # another suffix


def test_an_empty_query_is_refused(case32):
    for q in ("", "   ", "\n\t"):
        with pytest.raises(ConfigError, match="query: expected a question or keywords"):
            case32.retrieve(q)


def test_unsupported_filter_operators_are_refused_on_every_path(case32):
    with pytest.raises(ConfigError, match=r"operator '\$contains' is not supported; supported: "):
        case32.retrieve("band", k=2, where={"title": {"$contains": "band"}})


def test_order_operators_filter_dense_and_lexical_hits_alike(data_store, fake_embedder):
    store, _ = data_store
    for mode in ({}, {"hybrid": True}):
        r = _retriever(store, fake_embedder, **mode)
        got = r.retrieve("leave pay pressure", k=4, where={"level": {"$gt": 1}})
        assert len(got) == 4 and all(s.level > 1 for s in got)
        r.index.close()


def test_a_query_never_creates_a_store(tmp_path, fake_embedder):
    from proxypointer.errors import StoreError
    from proxypointer.index import Index

    missing = tmp_path / "typo"
    r = Retriever(Index(missing, ProxyPointerConfig(), fake_embedder))
    with pytest.raises(StoreError, match="no proxypointer store here"):
        r.retrieve("anything")
    assert not missing.exists()


def test_case_36_a_long_query_keeps_its_question(make_index, cases_dir, caplog):
    import logging

    case = cases_dir / "36-long-query-truncation"
    idx = make_index()
    idx.ingest([case / "corpus"], show_progress=False)
    question = "How many weeks of full pay do new parents get?"
    long_q = (case / "filler.txt").read_text().strip() + "\n\n" + question
    r = Retriever(idx)
    assert r.retrieve(question, k=1)[0].title == "Parental leave pay"
    with caplog.at_level(logging.WARNING, logger="proxypointer.retrieve.ranking"):
        (s,) = r.retrieve(long_q, k=1)
    assert s.title == "Parental leave pay"
    n = idx.embedder.tokenizer.count(long_q)
    assert any(f"query has {n} word pieces" in m for m in caplog.messages)


def test_a_writer_stopped_before_the_registry_flip_leaves_lexical_hits_of_the_old_version(
    make_index, tmp_path, monkeypatch
):
    from proxypointer.retrieve.ranking import Ranker

    doc = tmp_path / "docs" / "guide.md"
    doc.parent.mkdir()
    doc.write_text("# Guide\n\n## Kettle\n\nDescale the kettle with vinegar.\n")
    cfg = ProxyPointerConfig(retrieval=RetrievalConfig(hybrid=True))
    idx = make_index(cfg)
    assert idx.ingest([doc.parent], show_progress=False).indexed == 1
    doc.write_text("# Guide\n\n## Kettle limescale\n\nDescale the kettle with citric acid.\n")

    def killed(*args, **kwargs):  # the new chunks are in Chroma; the process dies before the flip
        raise KeyboardInterrupt

    monkeypatch.setattr(idx.registry, "commit_version", killed)
    with pytest.raises(KeyboardInterrupt):
        idx.ingest([doc.parent], show_progress=False)
    monkeypatch.undo()
    assert len(idx.store.all_ids()) > len(idx.registry.chunk_ids())  # the new version's chunks are written

    reader = make_index(cfg, store=idx.root)
    ranker = Ranker(reader)
    assert ranker.lexical("citric acid", 10) == []
    old = ranker.hydrate(ranker.lexical("vinegar", 10))
    assert old and all(h.metadata["version"] == reader.registry.get("guide").version for h in old)
    (s,) = Retriever(reader).retrieve("descale with citric acid or vinegar", k=1)
    assert "vinegar" in s.text and "citric" not in s.text
    # the title index too: the new heading is not searchable, the old one is, at the live version
    from proxypointer.store.terms import lexical_terms

    assert reader.registry.lexical.title_search(lexical_terms("limescale"), 10) == []
    rows = reader.registry.lexical.title_search(lexical_terms("kettle"), 10)
    assert rows and {r.version for r in rows} == {reader.registry.get("guide").version}
    assert ranker.titles("kettle limescale", 10, None, ranker.query_vectors("kettle"), {})
    (s,) = Retriever(reader).retrieve("kettle limescale", k=1)
    assert s.title == "Kettle" and "limescale" not in s.text


# -- delivery of big sections (retrieval.subtree_cap_tokens) -----------------------------------------
GUIDE = "# Kettle Guide\n\nThis intro explains who the guide is for.\n\n" + "".join(
    f"## Part {i}\n\n" + f"Part {i} words: descale the kettle with vinegar and rinse twice. " * 12 + "\n\n"
    for i in range(1, 6))
LONG = "# Manual\n\n## Long leaf\n\n" + "".join(
    f"Line {i}: " + ("the filter of the pump is cleaned weekly" if i == 40 else "routine text about nothing much")
    + "\n\n" for i in range(80))


def _capped(make_index, tmp_path, text, name, chunk_tokens=64, **retrieval):
    from proxypointer.config import ChunkingConfig

    corpus = tmp_path / name
    corpus.mkdir()
    (corpus / f"{name}.md").write_text(text)
    cfg = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=chunk_tokens), retrieval=RetrievalConfig(**retrieval))
    idx = make_index(cfg, store=tmp_path / f"{name}-store")
    assert not idx.ingest([corpus], show_progress=False).failed
    return idx


def test_a_hit_on_an_introduction_delivers_its_own_text_and_an_outline(make_index, tmp_path):
    # Delivery is under test, not ranking: scored by the best chunk, the intro's one chunk wins
    # (the default `sum` of 2 favours the Parts, whose chunks all carry "Kettle Guide").
    idx = _capped(make_index, tmp_path, GUIDE, "guide", subtree_cap_tokens=200, own_text_tokens=100,
                  section_scoring="max")
    lines = GUIDE.split("\n")
    s = Retriever(idx).retrieve("who is the guide for? intro", k=1)[0]
    assert (s.title, s.start_line, s.end_line) == ("Kettle Guide", 1, len(lines) - 1)  # the node's whole range
    assert s.delivery == "own_text" and (s.text_start_line, s.text_end_line) == (1, 4)
    assert s.text == "\n".join(lines[0:4]) and "## Part 1" not in s.text  # never the whole document
    assert s.citation == "guide.md#L1-L4" and s.node_citation == f"guide.md#L1-L{len(lines) - 1}"
    assert [e.title for e in s.outline] == [f"Part {i}" for i in range(1, 6)]
    first = s.outline[0]
    assert lines[first.start_line - 1] == "## Part 1"
    assert first.citation == f"guide.md#L{first.start_line}-L{first.end_line}"
    d = s.to_dict()
    assert d["outline"][0]["title"] == "Part 1" and d["delivery"] == "own_text" and d["text_end_line"] == 4
    # a small section is still delivered whole
    part = Retriever(idx).retrieve("Part 3 words descale", k=1)[0]
    assert part.title == "Part 3" and part.delivery == "subtree" and part.outline == ()
    assert (part.text_start_line, part.text_end_line) == (part.start_line, part.end_line)
    # cap 0: every section whole, as before the delivery policy
    capless = RetrievalConfig(subtree_cap_tokens=0, section_scoring="max")
    whole = make_index(dataclasses.replace(idx.config, retrieval=capless), store=idx.root)
    s = Retriever(whole).retrieve("who is the guide for? intro", k=1)[0]
    assert s.delivery == "subtree" and s.text == "\n".join(lines[:-1]) and s.citation == s.node_citation


def test_a_delivery_budget_lets_a_big_section_through_whole_when_it_fits(make_index, tmp_path):
    lines = GUIDE.split("\n")
    tok_of = lambda idx: idx.embedder.tokenizer.count("\n".join(lines[:-1]))  # noqa: E731
    capped = _capped(make_index, tmp_path, GUIDE, "guide", subtree_cap_tokens=200, own_text_tokens=100,
                     section_scoring="max")
    whole = tok_of(capped)
    assert whole > 200  # over the cap: without a budget, the intro's own text and an outline
    assert Retriever(capped).retrieve("who is the guide for? intro", k=1)[0].delivery == "own_text"
    for budget, kind in ((whole + 20, "subtree"), (whole - 20, "own_text")):
        cfg = RetrievalConfig(subtree_cap_tokens=200, own_text_tokens=100, section_scoring="max",
                              delivery_budget_tokens=budget)
        idx = make_index(dataclasses.replace(capped.config, retrieval=cfg), store=capped.root)
        got = Retriever(idx).retrieve("who is the guide for? intro", k=3)
        assert got[0].title == "Kettle Guide" and got[0].delivery == kind, budget
        if kind == "subtree":  # the budget is spent: the next sections are under the caps again
            assert got[0].text == "\n".join(lines[:-1]) and got[0].outline == ()
            assert all(s.delivery != "subtree" or idx.embedder.tokenizer.count(s.text) <= 200 for s in got[1:])


def test_a_long_leaf_is_cut_to_a_window_around_its_best_chunk(make_index, tmp_path):
    idx = _capped(make_index, tmp_path, LONG, "manual", subtree_cap_tokens=300, own_text_tokens=120)
    tok = idx.embedder.tokenizer
    s = Retriever(idx).retrieve("how often is the pump filter cleaned", k=1)[0]
    assert s.title == "Long leaf" and s.delivery == "excerpt" and s.outline == ()
    assert "the filter of the pump is cleaned weekly" in s.text and tok.count(s.text) <= 120
    assert s.text == "\n".join(LONG.split("\n")[s.text_start_line - 1 : s.text_end_line])
    assert s.start_line <= s.chunk_start_line and s.text_start_line <= s.chunk_start_line <= s.text_end_line
    assert s.citation == f"manual.md#L{s.text_start_line}-L{s.text_end_line}"


def test_sections_ranked_after_full_ranks_deliver_less_own_text(make_index, tmp_path):
    idx = _capped(make_index, tmp_path, LONG, "manual", subtree_cap_tokens=300, own_text_tokens=120,
                  tail_own_tokens=50, full_ranks=1)
    tok = idx.embedder.tokenizer
    r = Retriever(idx)
    first = r.retrieve("how often is the pump filter cleaned", k=1)[0]
    assert first.delivery == "excerpt" and 50 < tok.count(first.text) <= 120  # rank 1: the full window
    rec = idx.registry.get("manual")
    args = (rec.doc_hash, "manual", rec.source_path, first.start_line, first.end_line, first.end_line, ())
    best = [Hit(first.chunk_id, "", {}, 0.0)]
    tail = r.deliver(*args, best, tail=True)  # the same section at rank 2 or later
    lines = LONG.split("\n")
    assert tail.kind == "excerpt" and tok.count("\n".join(lines[tail.start_line - 1 : tail.end_line])) <= 50
    assert tail.start_line <= first.chunk_start_line <= tail.end_line  # still around its best chunk
    assert r.deliver(*args, best) == Delivery("excerpt", first.text_start_line, first.text_end_line)
    # a section that fits the subtree cap is still delivered whole at any rank
    small = r.deliver(rec.doc_hash, "manual", rec.source_path, 1, 4, 4, (), best, tail=True)
    assert small == Delivery("subtree", 1, 4)


STATEMENT = "# Acme 10-K\n\n## Consolidated Statements of Operations\n\n(in millions) 2023 2022\n\n" + "".join(
    f"Row {i} {'net income attributable to holders' if i == 30 else 'other operating item'} {100 + i} {90 + i}\n\n"
    for i in range(80))


def test_an_excerpt_of_a_statement_keeps_its_column_headers_when_they_fit(make_index, tmp_path):
    # rows without their years cannot be read: a statement's window reaches back to its title and
    # units line when the span to its best chunk fits; without head lines it stays around the chunk
    idx = _capped(make_index, tmp_path, STATEMENT, "acme", subtree_cap_tokens=200, own_text_tokens=350)
    r = Retriever(idx)
    s = r.retrieve("net income attributable to holders", k=1)[0]
    assert s.title == "Consolidated Statements of Operations" and s.delivery == "excerpt"
    assert s.text_start_line == s.start_line and "(in millions) 2023 2022" in s.text
    assert "net income attributable to holders" in s.text
    rec = idx.registry.get("acme")
    args = (rec.doc_hash, "acme", rec.source_path, s.start_line, s.end_line, s.end_line, ())
    best = [Hit(s.chunk_id, "", {}, 0.0)]
    plain = r.deliver(*args, best)
    headed = r.deliver(*args, best, head_lines=STATEMENT_HEAD_LINES)
    assert plain.start_line > s.start_line and plain.start_line <= s.chunk_start_line <= plain.end_line
    assert headed.start_line == s.start_line and headed.end_line >= s.chunk_end_line


def test_breadcrumb_only_sections_come_after_sections_with_text(make_index, cases_dir):
    # shared case 11: "Network", "Empty Section" and "Changelog" are headings without text; their
    # one chunk is the breadcrumb alone, so it matches any question that names those words.
    query = "network changelog empty section: how do I install it?"
    plain = RetrievalConfig(hybrid=False, title_weight=0, section_scoring="max", subtree_cap_tokens=0)
    idx = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(**{**_fields(plain), "demote_empty": False})))
    idx.ingest([cases_dir / "11-empty-sections-heading-only" / "input.md"], show_progress=False)
    empty = {"Network", "Empty Section", "Changelog"}
    before = [s.title for s in Retriever(idx).retrieve(query, k=6)]
    assert before[0] in empty  # what the demotion is for
    demoted = make_index(ProxyPointerConfig(retrieval=plain), store=idx.root)
    got = [s.title for s in Retriever(demoted).retrieve(query, k=6)]
    assert set(got) == set(before) and got[:3] == [t for t in before if t not in empty][:3]
    assert set(got[3:]) == empty
    # the whole default pipeline (fusion, title field) keeps them last as well
    default = make_index(store=idx.root)
    assert {s.title for s in Retriever(default).retrieve(query, k=6)[3:]} == empty


def test_a_heading_only_section_whose_title_answers_the_query_is_not_demoted(make_index, tmp_path):
    # issue 32: the E42 heading has no text, yet it states the answer; "Cleaning" does not match
    # at all. Demoting every breadcrumb-only section put Cleaning first at k=1.
    doc = tmp_path / "docs" / "manual.md"
    doc.parent.mkdir()
    doc.write_text(
        "# Error E42 means the coolant pump has failed\n\n# Cleaning\n\n"
        "Wipe the housing with a dry cloth once a week. Do not use solvents on the display.\n"
    )
    idx = make_index()
    idx.ingest([doc.parent], show_progress=False)
    got = Retriever(idx).retrieve("what does error E42 mean", k=1)
    assert [s.title for s in got] == ["Error E42 means the coolant pump has failed"]
    # the same rule orders a context budget's blocks
    blocks = Assembler(Retriever(idx)).assemble("what does error E42 mean", 200)
    assert blocks[0].section.title == "Error E42 means the coolant pump has failed"
    # a question the title does not answer still gets the section with text first
    assert Retriever(idx).retrieve("how do I clean the pump housing", k=1)[0].title == "Cleaning"


def _fields(cfg):
    from dataclasses import asdict

    return asdict(cfg)


def test_a_vector_read_that_races_a_writer_searches_again(make_index, tmp_path, monkeypatch):
    # Chroma fails a whole read by id when a writer deletes some of those ids meanwhile ("Error
    # finding id"): that is a document changed during the query, not a broken store.
    from proxypointer.errors import StaleSourceError, StoreError
    from proxypointer.retrieve.ranking import Ranker

    doc = tmp_path / "docs" / "guide.md"
    doc.parent.mkdir()
    doc.write_text("# Guide\n\n## Kettle\n\nDescale the kettle with vinegar.\n\n## Toaster\n\nEmpty the crumb tray.\n")
    idx = make_index()
    assert idx.ingest([doc.parent], show_progress=False).indexed == 1
    old = sorted(idx.registry.chunk_ids("guide"))
    real = idx.store.vectors
    calls = []
    # a store written before the registry knew each chunk's cached vector: queries read Chroma
    monkeypatch.setattr(idx.registry.embeddings, "chunk_vectors",
                        lambda model, ids, dim: ([], np.zeros((0, 0), np.float32)))

    def racing(ids):
        calls.append(list(ids))
        if len(calls) == 1:  # a writer replaces the document while this read runs
            doc.write_text(doc.read_text().replace("vinegar", "citric acid"))
            assert idx.ingest([doc.parent], show_progress=False).indexed == 1
            raise StoreError("chroma: cannot read vectors (InternalError: Error finding id)")
        return real(ids)

    monkeypatch.setattr(idx.store, "vectors", racing)
    (s,) = Retriever(idx).retrieve("descale the kettle", k=1, doc_ids=["guide"])  # exact search reads vectors
    assert len(calls) >= 2 and "citric acid" in s.text and s.chunk_id not in old
    # live chunks this process cannot read now (another process's new chunks): ranked without
    # those reads, the dense search (Chroma's own, for the doc filter) still answers
    ranker = Ranker(idx)
    monkeypatch.setattr(idx.store, "vectors", lambda ids: (_ for _ in ()).throw(StoreError("Error finding id")))
    live = sorted(idx.registry.chunk_ids("guide"))
    assert ranker.cosines(live, ranker.query_vectors("kettle")) == {}
    with pytest.raises(StaleSourceError):
        ranker.cosines(old, ranker.query_vectors("kettle"))
    (s,) = Retriever(idx).retrieve("descale the kettle", k=1, doc_ids=["guide"])
    assert s.title == "Kettle" and "citric acid" in s.text


def test_chunk_vectors_come_from_the_embedding_cache_equal_to_chromas(make_index, tmp_path, monkeypatch):
    from proxypointer.errors import StoreError
    from proxypointer.retrieve.ranking import Ranker

    doc = tmp_path / "docs" / "guide.md"
    doc.parent.mkdir()
    doc.write_text("# Guide\n\n## Kettle\n\nDescale the kettle with vinegar.\n\n## Toaster\n\nEmpty the crumb tray.\n"
                   "\n## Fridge\n\nDefrost the freezer.\n")
    idx = make_index()
    assert idx.ingest([doc.parent], show_progress=False).indexed == 1
    live = sorted(idx.registry.chunk_ids("guide"))
    assert len(live) >= 3
    dim = idx.embedder.dim
    ids, cached = idx.registry.embeddings.chunk_vectors(idx.embedder.name, [*live, "guide::nope::n::0000"], dim)
    assert sorted(ids) == live  # an id that is not live is left out
    chroma = dict(zip(*idx.store.vectors(live), strict=True))
    # the vector ingest wrote; Chroma keeps its own normalised copy (float32 rounding apart)
    assert all(np.allclose(v, chroma[c], rtol=0, atol=1e-6) for c, v in zip(ids, cached, strict=True))
    ranker = Ranker(idx)
    query = ranker.query_vectors("kettle")
    expected = ranker.cosines(live, query)
    read_chroma = idx.store.vectors
    monkeypatch.setattr(idx.store, "vectors", lambda ids: pytest.fail("Chroma was read"))
    assert ranker.cosines(live, query) == expected
    # chunks whose cached vector is unknown (an older store, a pruned cache) are read from Chroma
    idx.registry._db.execute("UPDATE chunks SET content_hash = NULL WHERE chunk_id = ?", (live[0],))
    monkeypatch.setattr(idx.store, "vectors", lambda ids: (_ for _ in ()).throw(StoreError(f"read {list(ids)}")))
    assert set(ranker.cosines(live, query)) == set(live[1:])  # Chroma failing: ranked without that one
    # from both stores at once, the ids keep the order asked for (an exact search's tie-break)
    monkeypatch.setattr(idx.store, "vectors", read_chroma)
    wanted = [live[0], *reversed(live[1:])]  # the one read from Chroma first
    found, vectors = ranker.dense_search.vectors(wanted, dim)
    assert found == wanted and all(np.allclose(v, chroma[c], atol=1e-6) for c, v in zip(found, vectors, strict=True))
    monkeypatch.setattr(idx.store, "vectors", lambda ids: ([], np.zeros((0, 0), np.float32)))
    # Chroma lacks the rest: the cached ones keep the order
    assert ranker.dense_search.vectors(wanted, dim)[0] == wanted[1:]
    monkeypatch.setattr(idx.store, "vectors", read_chroma)
    # the next ingest (or check --repair) gives such rows their key from their record copies
    assert idx.fill_records() == 0
    assert sorted(idx.registry.embeddings.chunk_vectors(idx.embedder.name, live, dim)[0]) == live
    # a damaged cache row (cut short, emptied, text) is never used: that vector is read from Chroma
    for damaged in (b"\x00" * 100, b"", "hello"):
        idx.registry._db.execute(
            "UPDATE embeddings SET vector = ?"
            " WHERE content_hash = (SELECT content_hash FROM chunks WHERE chunk_id = ?)", (damaged, live[0]))
        assert sorted(idx.registry.embeddings.chunk_vectors(idx.embedder.name, live, dim)[0]) == live[1:]
        assert ranker.cosines(live, query) == pytest.approx(expected, abs=1e-6)
    # check names it, check --repair drops it (that chunk's vector is read from Chroma until re-embedded)
    assert not idx.check().ok and idx.check(repair=True).repaired and idx.check().ok
    assert idx.registry.embeddings.damaged(idx.embedder.name, dim) == []
    # every row cut to the same wrong size, in a store that never recorded the size (an older
    # writer): still not the model's vectors (check asks Chroma for the dimension)
    idx.registry._db.execute("UPDATE embeddings SET vector = substr(vector, 1, 100)")
    idx.registry._db.execute("DELETE FROM meta WHERE key LIKE 'vector_bytes:%'")
    assert idx.registry.embeddings.chunk_vectors(idx.embedder.name, live, dim)[0] == []
    assert not idx.check().ok and idx.check(repair=True).repaired and idx.check().ok
    assert idx.registry._db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0
    assert idx.registry.chunks.fill_content_hashes() == 0  # nothing left: one indexed query


# -- a text repeated thousands of times -----------------------------------------------------------
def test_a_document_of_one_repeated_text_changes_nothing_for_other_questions(make_index, tmp_path):
    # A fresh user's file of one word repeated 400,000 times was 3,125 identical chunks; their
    # vectors formed a clique in Chroma's HNSW graph that the dense search could not leave, and
    # questions about other documents got other answers. It keeps REPEATED_CHUNKS_KEPT of them.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "huge.md").write_text("# Huge\n\n" + "word " * 400_000 + "\n")
    cfg = ProxyPointerConfig(retrieval=RetrievalConfig(title_routing_docs=0))  # 3 vs 4 documents: no routing
    plain, noisy = make_index(cfg, store=tmp_path / "plain"), make_index(cfg, store=tmp_path / "noisy")
    assert not plain.ingest([DATA], show_progress=False).failed
    assert not noisy.ingest([DATA, corpus], show_progress=False).failed
    assert noisy.registry.stats()["chunks"] == plain.registry.stats()["chunks"] + 8
    for q in ("How many weeks of full basic pay do birth and adoptive parents receive?",
              "Where is the padlock key for the outer gate kept?", "pump pressure", "error code TG-501"):
        for k in (1, 3):
            want = [(s.doc_id, s.node_id) for s in Retriever(plain).retrieve(q, k=k)]
            assert [(s.doc_id, s.node_id) for s in Retriever(noisy).retrieve(q, k=k)] == want, (q, k)


def test_a_long_line_without_headings_is_returned_once(make_index, tmp_path):
    # A heading-less file whose paragraph is one line of several windows: a fresh user got the
    # same citation six times in ten results. Each line range comes back once.
    doc = tmp_path / "notes.md"
    para = " ".join(f"The chiaroscuro painter number {i} worked in Naples." for i in range(80))
    doc.write_text(f"{para}\n\nThe gallery closes at six.\n\nTickets cost ten euros.\n")
    idx = make_index()
    assert not idx.ingest([doc], show_progress=False).failed
    got = Retriever(idx).retrieve("Who painted with chiaroscuro?", k=10)
    ranges = [(s.start_line, s.end_line) for s in got]
    assert len(ranges) == len(set(ranges)) and (1, 1) in ranges


def test_a_moved_folder_ingested_again_cites_the_new_path(make_index, tmp_path):
    # a fresh user moved their corpus and ingested it again: "2 unchanged", `status` showed the
    # new path, but every hit still named the old one, a file that no longer existed
    import shutil

    from proxypointer.retrieve.retriever import Retriever

    old = tmp_path / "corpus"
    shutil.copytree(DATA, old)
    idx = make_index()
    assert not idx.ingest([old], show_progress=False).failed
    new = tmp_path / "corpus-moved"
    old.rename(new)
    report = idx.ingest([new], show_progress=False)
    assert not report.failed and not report.indexed
    sections = Retriever(idx).retrieve("parental leave", k=3)
    assert sections and all(s.source.startswith(str(new) + "/") for s in sections)
    assert all(__import__("pathlib").Path(s.source).is_file() for s in sections)


def test_a_document_whose_stored_source_is_missing_is_left_out_with_a_warning(tmp_path, make_index, caplog):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    menu = "# Menu\n\nThe soup of the day is a pumpkin soup with roasted seeds.\n"
    (corpus / "menu.md").write_text(menu, encoding="utf-8")
    (corpus / "notes.md").write_text("# Notes\n\nThe boiler is serviced every spring.\n", encoding="utf-8")
    index = make_index()
    index.ingest([corpus], show_progress=False)
    rec = index.registry.get("menu")
    stored = next((tmp_path / "store").rglob(f"{rec.doc_hash}.md"))
    stored.unlink()
    with caplog.at_level("WARNING", logger="proxypointer.retrieve.retriever"):
        found = Retriever(index).retrieve("What is the soup of the day?", k=2)
    assert [s.doc_id for s in found] == ["notes"]
    assert "menu: its stored source is missing" in caplog.text


def test_sections_of_the_other_documents_fill_the_places_of_one_whose_source_is_missing(tmp_path, make_index, caplog):
    # found by an audit: the missing document took the top k places and the answer was empty
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    soups = "".join(f"## Soup {n}\n\nThe soup of the day {n} is a pumpkin soup.\n\n" for n in range(4))
    (corpus / "menu.md").write_text(f"# Menu\n\n{soups}", encoding="utf-8")
    (corpus / "notes.md").write_text("# Notes\n\n## Boiler\n\nThe boiler is serviced every spring.\n\n"
                                     "## Garden\n\nThe garden grows pumpkins.\n", encoding="utf-8")
    index = make_index()
    index.ingest([corpus], show_progress=False)
    before = Retriever(index).retrieve("What is the soup of the day?", k=2)
    assert [s.doc_id for s in before] == ["menu", "menu"]
    stored = next((tmp_path / "store").rglob(f"{index.registry.get('menu').doc_hash}.md"))
    stored.unlink()
    with caplog.at_level("WARNING", logger="proxypointer.retrieve.sections"):
        found = Retriever(index).retrieve("What is the soup of the day?", k=2)
    assert [s.doc_id for s in found] == ["notes", "notes"]
    assert caplog.text.count("menu: its stored source is missing") == 1


def test_a_reports_executive_summary_is_found_and_its_list_of_figures_is_not(make_index, tmp_path):
    # issue 32: "Executive Summary" was a noise title, so a report's summary could not be found
    # even by name. Noise is navigation: contents, lists of figures and tables.
    doc = tmp_path / "docs" / "water-report.md"
    doc.parent.mkdir()
    doc.write_text(
        "# Water Sector Review\n\n## Contents\n\n1. Findings ... 3\n\n## List of Figures\n\n"
        "Figure 1. Leakage by region and year ... 4\n\n## Executive Summary\n\n"
        "Leakage fell by a third while tariffs stayed flat across every region.\n\n"
        "## Findings\n\nRegional utilities replaced 400 km of mains.\n"
    )
    idx = make_index()
    idx.ingest([doc.parent], show_progress=False)
    got = Retriever(idx).retrieve("What does the executive summary say about leakage?", k=1)
    assert [s.title for s in got] == ["Executive Summary"]
    titles = [s.title for s in Retriever(idx).retrieve("leakage by region and year figure", k=5)]
    assert "List of Figures" not in titles and "Contents" not in titles  # not embedded: never a hit


def test_a_source_filter_reads_the_documents_current_paths(make_index, tmp_path):
    # issue 32: where={"source": ...} matched the path a chunk was embedded from, so a folder
    # moved and re-ingested (same text: nothing re-embedded) answered for its old path only.
    old = tmp_path / "docs"
    old.mkdir()
    (old / "guide.md").write_text("# Guide\n\n## Kettle\n\nDescale the kettle with vinegar.\n")
    (old / "notes.md").write_text("# Notes\n\n## Toaster\n\nEmpty the crumb tray of the kettle shelf.\n")
    idx = make_index()
    idx.ingest([old], show_progress=False)
    new = tmp_path / "moved"
    old.rename(new)
    report = idx.ingest([new], show_progress=False)
    assert report.embedded == 0  # the same text: the chunks kept their embedded metadata
    r = Retriever(idx)
    path = str((new / "guide.md").resolve())
    assert {s.doc_id for s in r.retrieve("kettle", k=5, where={"source": path})} == {"guide"}
    assert r.retrieve("kettle", k=5, where={"source": str((old / "guide.md").resolve())}) == []
    assert {s.doc_id for s in r.retrieve("kettle", k=5, where={"source": {"$ne": path}})} == {"notes"}
    both = {"$or": [{"source": path}, {"doc_id": "notes"}]}
    assert {s.doc_id for s in r.retrieve("kettle", k=5, where=both)} == {"guide", "notes"}


def test_k_must_be_a_whole_number_of_sections(case27):
    import numpy as np

    from proxypointer.errors import ConfigError

    idx, _ = case27
    r = Retriever(idx)
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(ConfigError, match=r"k: expected an int >= 1"):
            r.retrieve("warranty", k=bad)
    assert len(r.retrieve("warranty", k=np.int64(1))) == 1

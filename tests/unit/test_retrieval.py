"""Retrieval: dedupe by (doc_id, node_id), over-fetch, whole-section slicing, citations."""

import shutil

import pytest

from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.errors import ConfigError
from proxypointer.retrieval import Retriever


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


def test_case_27_more_sections_than_exist_returns_all_once(case27):
    idx, _ = case27
    got = Retriever(idx).retrieve("kettle", k=50)
    keys = [(s.doc_id, s.node_id) for s in got]
    assert len(keys) == len(set(keys)) == 5  # a: Warranty, Returns, Cleaning; b: Warranty, Crumb tray
    assert [s.score for s in got] == sorted((s.score for s in got), reverse=True)


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
    real = idx.registry.load_source
    calls = []

    def flaky(doc_hash):
        calls.append(doc_hash)
        if len(calls) == 1:  # the writer pruned this source between hit and slice
            raise StaleSourceError("gone")
        return real(doc_hash)

    monkeypatch.setattr(idx.registry, "load_source", flaky)
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
    r = Retriever(idx)
    before = r.hits("kettle", 8)
    idx.registry._db.execute("UPDATE chunks SET record = NULL")
    chroma_reads = []
    real_get = idx.store.get
    monkeypatch.setattr(idx.store, "get", lambda ids: chroma_reads.append(list(ids)) or real_get(ids))
    assert r.hits("kettle", 8) == before and chroma_reads
    report = idx.ingest([data], show_progress=False)
    assert report.unchanged == report.documents and report.indexed == 0
    assert idx.registry.chunks_without_record(10) == []
    chroma_reads.clear()
    assert r.hits("kettle", 8) == before and not chroma_reads
    live = sorted(idx.registry.chunk_ids())
    copies = idx.registry.chunk_record_copies(live)
    assert copies == {h.chunk_id: (h.text, h.metadata) for h in real_get(live)} and len(copies) == len(live)


def test_hits_without_hydration_carry_the_pointer_of_their_id(case27):
    idx, _ = case27
    r = Retriever(idx)
    bare = r.hits("kettle", 5, hydrate=False)
    full = r.hits("kettle", 5)
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
    import proxypointer.retrieval as retrieval

    idx, _ = case27
    monkeypatch.setattr(retrieval, "EXACT_SEARCH_MAX_CHUNKS", exact_limit)
    seen = []
    real = idx.store.query_ids
    monkeypatch.setattr(idx.store, "query_ids", lambda *a, **kw: seen.append(a) or real(*a, **kw))
    r = Retriever(idx)
    for query in ("kettle", "how long is the warranty", "crumb tray"):
        got = r.retrieve(query, k=3, doc_ids=["b"])
        assert got and {s.doc_id for s in got} == {"b"}
        expected = [(h.metadata["node_id"], round(h.score, 5)) for h in r._dedupe(r.hits(query, 50, {"doc_id": "b"}))]
        assert [(s.node_id, round(s.score, 5)) for s in got] == expected[:3]
    assert bool(seen) == (exact_limit == 0)


def test_exact_doc_filter_scores_equal_chroma_cosine(case27, monkeypatch):
    import proxypointer.retrieval as retrieval

    idx, _ = case27
    r = Retriever(idx)
    exact = {h.chunk_id: h.score for h in r.hits("warranty", 10, {"doc_id": {"$in": ["a", "b"]}})}
    monkeypatch.setattr(retrieval, "EXACT_SEARCH_MAX_CHUNKS", 0)
    hnsw = {h.chunk_id: h.score for h in r.hits("warranty", 10, {"doc_id": {"$in": ["a", "b"]}})}
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
    assert got[0].title == "Kettle" and got[0].score == keep[0].score  # took Descaling's place
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

"""Index lifecycle with the fake embedder: sync, edits, prune, delete, status, check, repair."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from proxypointer.config import ChunkingConfig, ProxyPointerConfig
from proxypointer.errors import LockError, StoreError
from proxypointer.index import Index
from proxypointer.lines import slice_lines, split_lines
from proxypointer.read.readers import read_document
from proxypointer.retrieve.retriever import Retriever
from proxypointer.store.records import encode_record

SMALL = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=40, overlap_tokens=0))

PARA_D1 = ("Delta covers the quarterly maintenance window for the cooling towers and the pumps that "
           "feed them during the summer.")
PARA_D2 = ("Delta also lists the spare parts kept in the basement store room, with the supplier of "
           "each valve and gasket.")

V1 = f"""# Guide

## Alpha

Alpha explains how apples are stored in the cold room.

## Beta

Beta says bananas ripen on the shelf by the window.

## Gamma

Gamma describes grapes pressed in the old cellar.

## Delta

{PARA_D1}

{PARA_D2}
"""

V2 = f"""# Guide

## Alpha

Alpha explains how apples are stored in the cold room.

## Beta

Beta now says mangoes ripen in paper bags overnight.

## Delta

{PARA_D1}

## Epsilon

Epsilon covers elderflower cordial made every spring.
"""


def records(index: Index) -> dict[str, tuple[str, dict]]:
    got = index.store.collection.get(include=["documents", "metadatas"])
    return {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}


def stored_sources(index: Index) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in (index.root / "sources").glob("*/*.md")]


def embedded(fake) -> list[str]:
    return fake.embedded_texts


# -- sync ---------------------------------------------------------------------------------
def test_unchanged_documents_cost_no_parsing_and_no_embedding(tmp_path, make_index, fake_embedder, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(V1, encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\nSome other text.\n", encoding="utf-8")
    index = make_index(SMALL)
    first = index.ingest([docs], show_progress=False)
    assert (first.indexed, first.unchanged) == (2, 0)
    ids = set(index.store.all_ids())
    n_calls = len(fake_embedder.calls)

    import proxypointer.ingest.stages as pl

    def boom(*a, **k):
        raise AssertionError("an unchanged document was parsed or chunked")

    monkeypatch.setattr(pl, "build_tree", boom)
    monkeypatch.setattr(pl, "chunk_document", boom)
    second = index.ingest([docs], show_progress=False)
    assert (second.indexed, second.unchanged, second.embedded, second.chunks) == (0, 2, 0, 0)
    assert len(fake_embedder.calls) == n_calls
    assert set(index.store.all_ids()) == ids
    assert index.check().ok


def test_edit_resyncs_exactly_the_changed_sections(tmp_path, make_index, fake_embedder):
    src = tmp_path / "docs" / "guide.md"
    src.parent.mkdir()
    src.write_text(V1, encoding="utf-8")
    index = make_index(SMALL)
    index.ingest([src.parent], show_progress=False)
    v1 = records(index)
    titles_v1 = sorted(m["title"] for _, m in v1.values())
    assert titles_v1 == ["Alpha", "Beta", "Delta", "Delta", "Gamma"]  # Delta: two paragraphs, two chunks
    v1_embed = set(embedded(fake_embedder))
    fake_embedder.calls.clear()

    src.write_text(V2, encoding="utf-8")  # Beta changed, Gamma removed, Delta shortened, Epsilon added
    rep = index.ingest([src.parent], show_progress=False)
    assert (rep.indexed, rep.unchanged, rep.failed) == (1, 0, [])

    # exactly the right chunks: Chroma == registry == the new version, one per section
    now = records(index)
    assert set(now) == index.registry.chunk_ids("guide")
    assert sorted(m["title"] for _, m in now.values()) == ["Alpha", "Beta", "Delta", "Epsilon"]
    rec = index.registry.get("guide")
    assert {m["version"] for _, m in now.values()} == {rec.version}
    assert not set(now) & set(v1)

    # none of the old text is stored or retrieved
    gone = ["grapes", "bananas", "spare parts"]
    for text, _ in now.values():
        assert not any(g in text for g in gone)
    sources = stored_sources(index)
    assert len(sources) == 1 and not any(g in sources[0] for g in gone)
    retriever = Retriever(index)
    for q in ("grapes pressed in the old cellar", "bananas ripen", "spare parts valve gasket"):
        for s in retriever.retrieve(q, k=5):
            assert not any(g in s.text for g in gone)

    # every pointer slices the new text
    lines = split_lines(read_document(src))
    for text, m in now.values():
        section = slice_lines(lines, m["start_line"], m["end_line"])
        assert text in section
        assert text in slice_lines(lines, m["chunk_start_line"], m["chunk_end_line"])
        assert section.splitlines()[0].lstrip("# ") == m["title"]
    for s in retriever.retrieve("Epsilon elderflower cordial", k=4):
        assert s.text == slice_lines(lines, s.start_line, s.end_line)

    # only the changed sections were embedded: Beta and Epsilon; Alpha and Delta's kept
    # paragraph come from the cache
    new_embed = embedded(fake_embedder)
    assert len(new_embed) == 2
    assert sorted(("mangoes" in t, "elderflower" in t) for t in new_embed) == [(False, True), (True, False)]
    assert set(new_embed).isdisjoint(v1_embed)
    assert rep.embedded == 2 and rep.cached == 2
    assert index.check().ok


def test_prune_removes_documents_whose_files_are_gone(tmp_path, make_index):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "keep.md").write_text("# Keep\n\nkept text\n", encoding="utf-8")
    (docs / "sub" / "gone.md").write_text("# Gone\n\nremoved text\n", encoding="utf-8")
    index = make_index()
    index.ingest([docs], show_progress=False)
    assert {r.doc_id for r in index.registry.documents()} == {"keep", "sub/gone"}
    (docs / "sub" / "gone.md").unlink()
    without = index.ingest([docs], show_progress=False)
    assert without.deleted == 0 and index.registry.get("sub/gone") is not None  # no --prune: kept
    assert [s["doc_id"] for s in index.status()["stale_sources"]] == ["sub/gone"]
    rep = index.ingest([docs], prune=True, show_progress=False)
    assert rep.deleted == 1
    assert {r.doc_id for r in index.registry.documents()} == {"keep"}
    assert all(i.startswith("keep::") for i in index.store.all_ids())
    assert len(stored_sources(index)) == 1
    assert index.check().ok


def test_prune_leaves_documents_from_other_folders(tmp_path, make_index):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "one.md").write_text("# One\n\ntext one\n", encoding="utf-8")
    (b / "two.md").write_text("# Two\n\ntext two\n", encoding="utf-8")
    index = make_index()
    index.ingest([a, b], show_progress=False)
    (b / "two.md").unlink()
    assert index.ingest([a], prune=True, show_progress=False).deleted == 0  # b was not synced
    assert index.ingest([a, b], prune=True, show_progress=False).deleted == 1


def test_delete_and_status(tmp_path, make_index):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n## One\n\nfirst\n\n## Two\n\nsecond\n", encoding="utf-8")
    (docs / "b.md").write_text("# B\n\nbee text\n", encoding="utf-8")
    index = make_index()
    index.ingest([docs], show_progress=False)
    st = index.status()
    assert (st["documents"], st["chunks"], st["model"], st["stale_sources"]) == (2, 3, "test-hashing-embedder", [])
    assert st["sections"] == 4 and st["store"] == str(index.root.resolve())
    assert index.delete(["a", "nope"]) == ["a"]
    assert {i.split("::")[0] for i in index.store.all_ids()} == {"b"}
    assert index.status()["documents"] == 1
    assert index.check().ok
    (docs / "b.md").write_text("# B\n\nchanged bee text\n", encoding="utf-8")
    assert index.status()["stale_sources"] == [
        {"doc_id": "b", "source": str((docs / "b.md").resolve()), "reason": "changed"}]


def test_retrieval_slices_the_stored_copy_not_the_changed_file(tmp_path, make_index):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\n## Target\n\nturbines spin fast\n", encoding="utf-8")
    index = make_index()
    index.ingest([src], show_progress=False)
    src.write_text("# Doc\n\ninserted\nlines\nshift\neverything\n\n## Target\n\nother\n", encoding="utf-8")
    (s,) = Retriever(index).retrieve("turbines spin", k=1)
    assert (s.start_line, s.end_line, s.text) == (3, 5, "## Target\n\nturbines spin fast")
    assert [x["reason"] for x in index.status()["stale_sources"]] == ["changed"]


def test_model_change_is_refused(tmp_path, make_index, fake_embedder):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\ntext\n", encoding="utf-8")
    make_index().ingest([src], show_progress=False)

    class Other(type(fake_embedder)):
        name = "another-model"

    from proxypointer.errors import ConfigError

    with pytest.raises(ConfigError, match="another-model"):
        make_index(embedder=Other()).ingest([src], show_progress=False)


def test_pipeline_settings_change_rewrites_everything(tmp_path, make_index):
    src = tmp_path / "doc.md"
    src.write_text(V1, encoding="utf-8")
    index = make_index(SMALL)
    index.ingest([src], show_progress=False)
    old = set(index.store.all_ids())
    index.close()
    other = dataclasses.replace(SMALL, chunking=dataclasses.replace(SMALL.chunking, chunk_tokens=200))
    index2 = make_index(other)
    rep = index2.ingest([src], show_progress=False)
    assert rep.indexed == 1
    assert not old & set(index2.store.all_ids())
    assert index2.check().ok


# -- failures and repair -------------------------------------------------------------------
def test_failed_chroma_write_rolls_back_and_keeps_old_version(tmp_path, make_index, monkeypatch):
    src = tmp_path / "doc.md"
    src.write_text(V1, encoding="utf-8")
    index = make_index(SMALL)
    index.ingest([src], show_progress=False)
    before = records(index)
    src.write_text(V2, encoding="utf-8")
    index.store.batch_limit = 2
    real = type(index.store.collection).upsert
    calls = []

    def flaky(self, **kw):
        calls.append(len(kw["ids"]))
        if len(calls) == 2:
            raise ValueError("simulated Chroma failure")
        return real(self, **kw)

    monkeypatch.setattr(type(index.store.collection), "upsert", flaky)
    rep = index.ingest([src], show_progress=False)
    assert len(rep.failed) == 1 and str(src) in rep.failed[0][0] and "simulated" in rep.failed[0][1]
    assert records(index) == before  # first batch rolled back, old version whole
    assert index.registry.get("doc").state == "ready"
    assert index.check().ok
    monkeypatch.undo()
    n_before = rep.embedded
    rep2 = index.ingest([src], show_progress=False)
    assert rep2.indexed == 1 and rep2.embedded == 0 and n_before == 2  # vectors re-used
    assert index.check().ok


@pytest.mark.parametrize("stage", ["begin_write", "add", "commit", "delete_old"])
def test_repair_after_interrupted_write(tmp_path, make_index, monkeypatch, stage):
    src = tmp_path / "doc.md"
    src.write_text(V1, encoding="utf-8")
    index = make_index(SMALL)
    index.ingest([src], show_progress=False)
    v1 = set(index.store.all_ids())
    src.write_text(V2, encoding="utf-8")

    class Crash(BaseException):
        pass

    targets = {
        "begin_write": (index.registry, "begin_write", True),
        "add": (index.store, "add_documents", True),
        "commit": (index.registry, "commit_version", True),
        "delete_old": (index.store, "delete_ids", True),
    }
    obj, name, _ = targets[stage]
    real = getattr(obj, name)

    def crash(*a, **k):
        real(*a, **k)
        raise Crash

    monkeypatch.setattr(obj, name, crash)
    with pytest.raises(Crash):
        index.ingest([src], show_progress=False)
    monkeypatch.undo()
    rec = index.registry.get("doc")
    live = index.registry.chunk_ids("doc")
    assert live == v1 or not live & v1  # old or new, never mixed
    visible = {h.chunk_id for h in Retriever(index).ranker.live(index.store.get(sorted(index.store.all_ids())))}
    assert visible == live and live <= set(index.store.all_ids())  # the live version is whole
    assert rec.state != "ready"
    assert any(f"state {rec.state}" in p for p in index.check().problems)
    index.ingest([src], show_progress=False)
    assert index.check().ok
    assert index.registry.get("doc").state == "ready"
    assert "grapes" not in "".join(d for d, _ in records(index).values())


def test_check_reports_and_repairs_differences(tmp_path, make_index):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(V1, encoding="utf-8")
    (docs / "b.md").write_text("# B\n\nbee text\n", encoding="utf-8")
    index = make_index(SMALL)
    index.ingest([docs], show_progress=False)
    assert index.check().ok
    a_ids = sorted(index.registry.chunk_ids("a"))
    index.store.delete_ids(a_ids[:1])  # a registered chunk vanishes from Chroma
    b = index.registry.get("b")
    index.registry.sources.text_file(b.doc_hash).unlink()  # a stored source vanishes
    stray = index.store.get(a_ids[1:2])[0]
    index.store.collection.add(ids=["x::1::y::0000"], embeddings=[[0.1] * 384], documents=["stray"],
                               metadatas=[dict(stray.metadata, doc_id="x")])
    rep = index.check()
    assert not rep.ok
    text = "\n".join(rep.problems)
    assert "a: 1 registered chunks missing from Chroma" in text
    assert "b: stored source" in text and "missing" in text
    assert "1 chunks in Chroma are not registered (e.g. x::1::y::0000)" in text
    fixed = index.check(repair=True)
    assert any("marked stale" in r for r in fixed.repaired)
    assert "x::1::y::0000" not in index.store.all_ids()
    rep2 = index.ingest([docs], show_progress=False)
    assert rep2.indexed == 2 and rep2.embedded == 0
    assert index.check().ok


def test_check_detects_a_version_mismatch(tmp_path, make_index):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\n## S\n\ntext\n", encoding="utf-8")
    index = make_index()
    index.ingest([src], show_progress=False)
    (cid,) = index.registry.chunk_ids("doc")
    index.store.collection.update(ids=[cid], metadatas=[{"version": "0000000000"}])
    rep = index.check()
    assert any("has version '0000000000'" in p for p in rep.problems)


def test_check_compares_and_repairs_the_registry_copies_of_chunk_records(tmp_path, make_index):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\n## S\n\ntext one\n\n## T\n\ntext two\n", encoding="utf-8")
    index = make_index()
    index.ingest([src], show_progress=False)
    first, second = sorted(index.registry.chunk_ids("doc"))
    text, meta = index.registry.chunk_records([first])[first]
    index.registry.chunks.set_chunk_records({first: encode_record(text, {**meta, "title": "Wrong"}), second: None})
    rep = index.check()
    assert rep.problems == [
        f"1 chunks' registry copies differ from their Chroma records or cannot be read (e.g. {first})"
    ]
    fixed = index.check(repair=True)
    assert fixed.repaired == ["copied 2 chunk records from Chroma into the registry"]
    assert index.check().ok
    index.registry.chunks.set_chunk_records({second: b"not zlib"})  # an unreadable copy
    r = Retriever(index).ranker
    assert {h.chunk_id for h in r.hydrate(r.dense("text two", 2))} == {first, second}
    assert index.check().problems == [
        f"1 chunks' registry copies differ from their Chroma records or cannot be read (e.g. {second})"
    ]
    assert index.check(repair=True).repaired == ["copied 1 chunk records from Chroma into the registry"]
    # A copy that decodes but lacks the pointer is not used; one with other text is caught by check.
    index.registry.chunks.set_chunk_records(
        {second: encode_record("text two", {}), first: encode_record("forged", meta)})
    by_id = {h.chunk_id: h for h in r.hydrate(r.dense("text two", 2))}
    assert by_id[second].metadata["doc_id"] == "doc" and by_id[first].text == "forged"
    problem = index.check().problems[0]
    assert problem.startswith("2 chunks' registry copies differ")
    index.check(repair=True)
    assert index.check().ok and index.registry.chunk_records([first]) == {first: (text, meta)}
    assert index.check().ok
    chroma = {h.chunk_id: (h.text, h.metadata) for h in index.store.get([first, second])}
    assert index.registry.chunk_records([first, second]) == chroma


def test_ingest_succeeds_when_chroma_cannot_fill_record_copies(tmp_path, make_index, monkeypatch, caplog):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\n## S\n\ntext one\n", encoding="utf-8")
    index = make_index()
    index.ingest([src], show_progress=False)
    index.registry._db.execute("UPDATE chunks SET record = NULL")  # a store from an older version

    def down(ids):
        raise StoreError("Chroma is down")

    monkeypatch.setattr(index.store, "get", down)
    report = index.ingest([src], show_progress=False)
    assert not report.failed and report.unchanged == 1
    assert "could not copy chunk records" in caplog.text
    monkeypatch.undo()
    index.ingest([src], show_progress=False)
    assert index.registry.chunks.chunks_without_record(10) == []


def test_filling_copies_goes_past_chunks_missing_from_chroma(tmp_path, make_index, caplog):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(20):
        (docs / f"d{i:02d}.md").write_text(
            "# D\n\n" + "".join(f"## S{j}\n\ntext {i} {j}\n\n" for j in range(60)), encoding="utf-8"
        )
    index = make_index()
    index.ingest([docs], show_progress=False)
    live = sorted(index.registry.chunk_ids())
    assert len(live) > 1000  # more than two pages of 500
    index.registry._db.execute("UPDATE chunks SET record = NULL")
    index.store.delete_ids([live[0]])  # the first id of the first page is gone from Chroma
    assert index.fill_records() == len(live) - 1
    assert index.registry.chunks.chunks_without_record(10) == [live[0]]
    assert "1 live chunks are missing from Chroma" in caplog.text
    assert index.status()["chunks_without_record_copy"] == 1


def test_second_writer_gets_a_clear_lock_error(tmp_path, make_index):
    from filelock import FileLock

    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\ntext\n", encoding="utf-8")
    cfg = dataclasses.replace(ProxyPointerConfig(), store=dataclasses.replace(ProxyPointerConfig().store,
                                                                              lock_timeout_s=0.2))
    index = make_index(cfg)
    index.root.mkdir(parents=True)
    with FileLock(str(index.root / "write.lock")):
        with pytest.raises(LockError, match=r"write\.lock: another process is writing"):
            index.ingest([src], show_progress=False)
    assert isinstance(LockError("x"), StoreError)
    assert index.ingest([src], show_progress=False).indexed == 1
    with FileLock(str(index.root / "write.lock")):
        for write in (lambda: index.delete(["doc"]), lambda: index.check(), lambda: index.ingest([src])):
            with pytest.raises(LockError):
                write()
    assert index.registry.get("doc") is not None


def test_reader_reopens_chroma_after_another_writer(tmp_path, make_index, fake_embedder):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\n## S\n\ntext\n", encoding="utf-8")
    writer = make_index()
    reader = make_index()
    writer.ingest([src], show_progress=False)
    first = reader.store
    assert reader.store is first  # no change: same client
    src.write_text("# Doc\n\n## S\n\nnew text\n", encoding="utf-8")
    writer.ingest([src], show_progress=False)
    assert reader.store is not first  # generation moved: reopened
    (s,) = Retriever(reader).retrieve("new text", k=1)
    assert s.text.endswith("new text")
    own = writer.store
    assert writer.store is own  # a writer does not reopen for its own writes


def test_repeated_identical_text_is_embedded_once(tmp_path, make_index, fake_embedder, cases_dir):
    index = make_index(SMALL)
    index.ingest([cases_dir / "18-identical-chunk-text-ids" / "input.md"], show_progress=False)
    texts = embedded(fake_embedder)
    assert len(texts) == len(set(texts))
    assert index.store.count() > len(texts)  # the two identical Reset chunks share one vector


def test_ingest_report_counts(tmp_path, make_index):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n## One\n\nfirst\n", encoding="utf-8")
    (docs / "empty.md").write_text("", encoding="utf-8")
    (docs / "blank.md").write_text(" \n\t\n", encoding="utf-8")
    index = make_index()
    rep = index.ingest([docs, tmp_path / "missing"], show_progress=False)
    assert rep.documents == 3 and rep.indexed == 1
    assert [Path(p).name for p, _ in rep.failed] == ["missing"]
    assert sorted(Path(p).name for p, _ in rep.notes) == ["blank.md", "empty.md"]  # skipped, not failed
    assert all("empty document (no text); skipped" in m for _, m in rep.notes)
    assert "documents" in rep.summary() and rep.to_dict()["indexed"] == 1
    assert rep.to_dict()["notes"][0]["path"].endswith("blank.md")


def _three_docs(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a", "bad", "c"):
        text = f"# {name.upper()}\n\n## Part\n\n{name} text about kettles.\n"
        (docs / f"{name}.md").write_text(text, encoding="utf-8")
    return docs


def _spy_upserts(index, monkeypatch, refuse_prefix=None):
    index.ingest([], show_progress=False)  # create the store, so that its collection can be spied on
    calls: list[list[str]] = []
    real = type(index.store.collection).upsert

    def spy(self, **kw):
        calls.append(list(kw["ids"]))
        if refuse_prefix and any(i.startswith(refuse_prefix) for i in kw["ids"]):
            raise ValueError("simulated refusal")
        return real(self, **kw)

    monkeypatch.setattr(type(index.store.collection), "upsert", spy)
    return calls


def test_a_group_of_documents_is_written_in_one_chroma_call(tmp_path, make_index, monkeypatch):
    index = make_index(SMALL)
    calls = _spy_upserts(index, monkeypatch)
    rep = index.ingest([_three_docs(tmp_path)], show_progress=False)
    assert rep.indexed == 3 and not rep.failed
    assert len(calls) == 1 and {i.split("::")[0] for i in calls[0]} == {"a", "bad", "c"}
    assert index.check().ok


def test_a_refused_group_write_fails_only_the_document_at_fault(tmp_path, make_index, monkeypatch):
    index = make_index(SMALL)
    calls = _spy_upserts(index, monkeypatch, refuse_prefix="bad::")
    rep = index.ingest([_three_docs(tmp_path)], show_progress=False)
    assert rep.indexed == 2 and [p for p, _ in rep.failed] == [str(tmp_path / "docs" / "bad.md")]
    assert "simulated refusal" in rep.failed[0][1]
    assert len(calls) == 4  # the group, then each document alone
    assert {r.doc_id for r in index.registry.documents()} == {"a", "c"}
    assert {i.split("::")[0] for i in index.store.all_ids()} == {"a", "c"}
    assert index.check().ok
    monkeypatch.undo()
    rep = index.ingest([tmp_path / "docs"], show_progress=False)
    assert (rep.indexed, rep.unchanged, rep.failed) == (1, 2, [])


# -- a store folder that does not exist ----------------------------------------------------
def test_only_ingest_creates_a_store(tmp_path, make_index):
    from proxypointer.errors import StoreNotFoundError

    missing = tmp_path / "typo-store"
    expected = f"{missing}: no proxypointer store here; run `proxypointer ingest` first"
    with pytest.raises(StoreNotFoundError) as err:
        Index.open(missing)
    assert str(err.value) == expected and isinstance(err.value, StoreError)
    index = make_index(store=missing)
    for use in (index.status, index.check, lambda: index.delete(["a"]), index.repair, index.fill_records,
                lambda: index.store, lambda: Retriever(index).retrieve("anything", k=1)):
        with pytest.raises(StoreNotFoundError, match="no proxypointer store here"):
            use()
    assert not missing.exists()  # nothing left behind
    index.ingest([], show_progress=False)
    assert Index.open(missing).status()["documents"] == 0 and index.check().ok


def test_cli_status_check_delete_on_a_missing_store(tmp_path, capsys):
    from proxypointer import cli

    missing = tmp_path / "nope"
    for argv in (["status"], ["check"], ["check", "--repair"], ["delete", "x"], ["status", "--json"]):
        assert cli.main([*argv, "--store", str(missing)]) == 1
        out, err = capsys.readouterr()
        assert err == f"error: {missing}: no proxypointer store here; run `proxypointer ingest` first\n"
        assert out == ""
    assert not missing.exists()


def test_a_store_path_that_is_a_file_says_so(tmp_path):
    from proxypointer.errors import StoreNotFoundError

    file = tmp_path / "notes.txt"
    file.write_text("not a store")
    with pytest.raises(StoreNotFoundError, match=r"notes.txt: is a file, not a store folder"):
        Index.open(file)
    assert file.read_text() == "not a store"

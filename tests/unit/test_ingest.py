"""Ingestion stages and the single-process runner: the stage API, shared cases 33, 34 and 37
end to end, empty files, progress in chunks, embeddings kept across an interruption."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fakes import HashingEmbedder

from proxypointer.chunk.chunker import TokenCountCache
from proxypointer.config import ChunkingConfig, EmbeddingConfig, ProxyPointerConfig
from proxypointer.ingest.stages import (
    Pending,
    PreparedDocument,
    embed_chunks,
    parse_file,
    plan_file,
    prepare_document,
    version_of,
)
from proxypointer.read.discovery import discover
from proxypointer.read.readers import read_bytes
from proxypointer.retrieve.retriever import Retriever

ROOT = Path(__file__).resolve().parents[2]
SMALL = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=40, overlap_tokens=0))


def doc_ids(index) -> list[str]:
    return sorted(r.doc_id for r in index.registry.documents())


def many_sections(n: int) -> str:
    return "# Big\n\n" + "".join(f"## Part {i}\n\nPart {i} is about topic number {i} and its own words.\n\n"
                                  for i in range(n))


# -- the stage API -------------------------------------------------------------------------
def test_stages_are_pure_and_picklable_and_match_the_runner(tmp_path, make_index, fake_embedder):
    src = tmp_path / "docs" / "guide.md"
    src.parent.mkdir()
    src.write_text("# Guide\n\n## Alpha\n\napples in the cold room\n\n## Beta\n\nbananas on the shelf\n",
                   encoding="utf-8")
    index = make_index(SMALL)
    index.ingest([], show_progress=False)
    key = index.pipeline_key
    (file,) = discover([src.parent], index.readers.keys()).files
    data = read_bytes(file.path)
    reader = index.readers[file.suffix]
    pending = plan_file(file, data, reader, index.registry, key)
    assert isinstance(pending, Pending) and pending.version == version_of(reader.source_key(data, file.path), key)
    tok = TokenCountCache(fake_embedder.tokenizer)
    doc = parse_file(pending, reader, key, SMALL.tree, SMALL.chunking, tok)
    again = prepare_document(reader.read(data, file.path), "guide", key, SMALL.tree, SMALL.chunking,
                             fake_embedder.tokenizer)
    assert isinstance(doc, PreparedDocument) and doc == again  # a pure function of (text, doc_id, config)
    for obj in (file, pending, doc):
        assert pickle.loads(pickle.dumps(obj)) == obj
    emb = embed_chunks(doc.chunks, fake_embedder, index.registry, group_size=1)
    assert emb.vectors.shape == (len(doc.chunks), 384) and (emb.embedded, emb.cached) == (len(doc.chunks), 0)
    assert embed_chunks(doc.chunks, fake_embedder, index.registry).cached == len(doc.chunks)  # now cached

    report = index.ingest([src.parent], show_progress=False)
    assert report.indexed == 1
    assert index.registry.chunk_ids("guide") == {c.chunk_id for c in doc.chunks}
    rec = index.registry.get("guide")
    assert (rec.version, rec.doc_hash, rec.n_chunks) == (doc.version, doc.doc_hash, len(doc.chunks))
    assert plan_file(file, data, reader, index.registry, key) is None  # unchanged now


def test_unchanged_file_whose_stored_copy_vanished_is_rewritten(tmp_path, make_index, fake_embedder):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\n## S\n\ntext\n", encoding="utf-8")
    index = make_index()
    index.ingest([src], show_progress=False)
    rec = index.registry.get("doc")
    index.registry.sources.text_file(rec.doc_hash).unlink()
    rep = index.ingest([src], show_progress=False)
    assert (rep.indexed, rep.embedded) == (1, 0)  # same chunks, vectors from the cache
    assert index.registry.sources.has(rec.doc_hash) and index.check().ok


def test_page_maps_are_stored_beside_the_text(make_index):
    index = make_index()
    index.ingest([], show_progress=False)
    reg = index.registry
    reg.sources.save("ab" + "1" * 62, "one\ntwo\n", pages=(1, 2))
    assert reg.sources.load_pages("ab" + "1" * 62) == (1, 2)
    reg.sources.save("ab" + "2" * 62, "markdown\n")
    assert reg.sources.load_pages("ab" + "2" * 62) is None
    assert reg.sources.prune() == 2  # neither is referenced: text and page map go
    assert not reg.sources.pages_file("ab" + "1" * 62).exists()


# -- 34 end to end -------------------------------------------------------------------------
def test_case34_ingest_dot_three_times(cases_dir, tmp_path, make_index):
    vault = tmp_path / "vault"
    subprocess.run(["sh", str(cases_dir / "34-store-and-hidden-dirs-inside-corpus" / "make_input.sh"), str(vault)],
                   check=True, capture_output=True)
    counts = []
    for run in range(3):
        index = make_index(store=vault / ".proxypointer")  # the default store: ./.proxypointer
        rep = index.ingest([vault], show_progress=False)
        assert rep.failed == []
        assert rep.indexed == (3 if run == 0 else 0)
        counts.append(index.status()["documents"])
        assert doc_ids(index) == ["boiler", "projects/garden", "releases/v2"]
        index.close()
    assert counts == [3, 3, 3]
    index = make_index(store=vault / ".proxypointer")
    r = Retriever(index)
    release = r.retrieve("Which release drops the legacy API?", k=5)
    assert sum("legacy API" in s.text for s in release) == 1
    boiler = r.retrieve("When is the boiler serviced?", k=5)
    assert boiler[0].citation == "boiler.md#L1-L3"
    assert sum(s.citation.startswith("boiler") for s in boiler) == 1
    assert not any(len(s.doc_id) >= 64 or "sources" in s.source for s in release + boiler)  # no hash citations
    # opting in reads the hidden folders, never the store
    rep = index.ingest([vault], include_hidden=True, show_progress=False)
    assert ".obsidian/plugins/calendar/README" in doc_ids(index) and ".git/COMMIT_TEMPLATE" in doc_ids(index)
    assert not any(d.startswith(".proxypointer") for d in doc_ids(index))


def test_kind34_a_store_under_another_name_inside_the_corpus(tmp_path, make_index):
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nalpha text\n", encoding="utf-8")
    store = corpus / "my-index"
    for _ in range(2):
        rep = make_index(store=store).ingest([corpus], show_progress=False)
        assert rep.failed == [] and rep.documents == 1
    other = make_index(store=tmp_path / "elsewhere")
    other.ingest([corpus], show_progress=False)  # another store's index inside the corpus: skipped too
    assert doc_ids(other) == ["a"]


# -- 37 end to end -------------------------------------------------------------------------
@pytest.fixture
def layouts(cases_dir, tmp_path) -> Path:
    dest = tmp_path / "37"
    shutil.copytree(cases_dir / "37-doc-id-collisions", dest)
    return dest


def test_case37_rows(layouts, tmp_path, make_index):
    kb = make_index(store=tmp_path / "s1").ingest([layouts / "kb"], show_progress=False)
    assert kb.indexed == 1 and len(kb.failed) == 1
    assert all(str(layouts / "kb" / n) in kb.failed[0][1] for n in ("faq.md", "faq.markdown"))

    index = make_index(store=tmp_path / "s2")
    teams = index.ingest([layouts / "teamA", layouts / "teamB"], show_progress=False)
    assert teams.indexed == 1 and len(teams.failed) == 1
    msg = teams.failed[0][1]
    assert str(layouts / "teamA" / "README.md") in msg and str(layouts / "teamB" / "README.md") in msg
    # then `ingest teamB` alone: team A's README stays, team B's is refused, naming both
    again = index.ingest([layouts / "teamB"], show_progress=False)
    assert again.indexed == 0 and len(again.failed) == 1
    assert str(layouts / "teamA" / "README.md") in again.failed[0][1]
    (s,) = Retriever(index).retrieve("laptops ordered through the IT portal", k=1)
    assert "Team A laptops" in s.text and index.registry.get("README").source_path == os.path.realpath(
        layouts / "teamA" / "README.md")

    loose = make_index(store=tmp_path / "s3").ingest(
        [layouts / "loose" / "a" / "notes.md", layouts / "loose" / "b" / "notes.md"], show_progress=False)
    assert loose.indexed == 1 and len(loose.failed) == 1
    assert str(layouts / "loose" / "a" / "notes.md") in loose.failed[0][1]


def test_case37_other_handbook_never_replaces_the_first(tmp_path, make_index):
    data, other = tmp_path / "data", tmp_path / "other"
    data.mkdir()
    other.mkdir()
    shutil.copy(ROOT / "data" / "employee-handbook.md", data / "employee-handbook.md")
    (other / "employee-handbook.md").write_text("# Other handbook\n\nNothing about leave.\n", encoding="utf-8")
    index = make_index()
    assert index.ingest([data], show_progress=False).indexed == 1
    before = index.registry.get("employee-handbook")
    rep = index.ingest([other / "employee-handbook.md"], show_progress=False)
    assert rep.indexed == 0 and len(rep.failed) == 1
    msg = rep.failed[0][1]
    assert str(other / "employee-handbook.md") in msg and str((data / "employee-handbook.md").resolve()) in msg
    assert index.registry.get("employee-handbook") == before
    # ids are stable across runs
    assert index.ingest([data], show_progress=False).unchanged == 1 and doc_ids(index) == ["employee-handbook"]
    # a file that really moved takes its id along (the old path is gone)
    (data / "employee-handbook.md").rename(tmp_path / "moved.md")
    shutil.move(tmp_path / "moved.md", other / "employee-handbook.md")
    rep = index.ingest([other], show_progress=False)
    assert rep.failed == [] and rep.unchanged == 1
    assert index.registry.get("employee-handbook").source_path == str((other / "employee-handbook.md").resolve())


def test_kind37_one_file_is_never_indexed_under_two_ids(tmp_path, make_index):
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x.md").write_text("# X\n\nxylophone\n", encoding="utf-8")
    index = make_index()
    index.ingest([root], show_progress=False)
    # a subfolder of the folder ingested keeps the ids it gave, as a file named alone does (a breaker)
    rep = index.ingest([root / "sub"], show_progress=False)  # would be "x", already "sub/x"
    assert rep.failed == [] and rep.unchanged == 1 and doc_ids(index) == ["sub/x"]
    (root / "sub" / "x.md").write_text("# X\n\nxylophone, revised\n", encoding="utf-8")
    assert index.ingest([root / "sub"], show_progress=False).indexed == 1 and doc_ids(index) == ["sub/x"]
    # the other way round would give one file a second id: refused, naming the id it has
    other = make_index(store=tmp_path / "other-store")
    other.ingest([root / "sub"], show_progress=False)
    rep = other.ingest([root], show_progress=False)  # would be "sub/x", already "x"
    assert rep.indexed == 0 and "already indexed as 'x'" in rep.failed[0][1]
    assert doc_ids(other) == ["x"]


# -- empty files, failures reported once ---------------------------------------------------
def test_a_folder_without_documents_gets_a_note_saying_so(tmp_path, make_index):
    # issue 32: an empty folder (or one of only other files) was ingested with exit 0 and no hint
    empty, other, docs = tmp_path / "empty", tmp_path / "pictures", tmp_path / "docs"
    for folder in (empty, other, docs / "sub"):
        folder.mkdir(parents=True)
    (other / "photo.jpg").write_bytes(b"\xff\xd8")
    (docs / "sub" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    rep = make_index().ingest([empty, other, docs], show_progress=False)
    assert rep.indexed == 1 and not rep.failed
    noted = {p: m for p, m in rep.notes}
    assert set(noted) == {str(empty), str(other)}  # docs has a document, in a subfolder
    assert "no *.docx, *.htm, *.html, *.markdown, *.md, *.pdf, *.pptx file" in noted[str(empty)]
    assert "--include-hidden" in noted[str(empty)]


def test_empty_files_are_notes_and_failures_are_logged_below_warning(tmp_path, make_index, caplog):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\ncafeteria opens at eight\n", encoding="utf-8")
    (docs / "empty.md").write_text("", encoding="utf-8")
    (docs / "spaces.md").write_text("   \n\n\t\n", encoding="utf-8")
    (docs / "binary.md").write_bytes(b"\x00\x01\x02")
    index = make_index()
    with caplog.at_level(logging.WARNING):
        rep = index.ingest([docs], show_progress=False)
    assert rep.indexed == 1 and [Path(p).name for p, _ in rep.failed] == ["binary.md"]
    assert sorted(Path(p).name for p, _ in rep.notes) == ["empty.md", "spaces.md"]
    # the summary adds up: 4 documents = 1 indexed + 2 skipped + 1 failed
    assert rep.documents == 4 and rep.skipped == 2 and rep.to_dict()["skipped"] == 2
    assert "; 2 skipped (no text); 1 failed" in rep.summary()
    assert "binary.md" not in caplog.text  # the caller (the CLI) reports it: once
    # a document whose file became empty keeps its indexed version, with a note saying so
    (docs / "good.md").write_text("", encoding="utf-8")
    rep = index.ingest([docs], show_progress=False)
    (note,) = [m for p, m in rep.notes if p.endswith("good.md")]
    assert "its indexed version is kept" in note and index.registry.get("good") is not None


def test_cli_reports_each_failure_once_and_empty_files_as_notes(tmp_path, monkeypatch, capsys, fake_embedder):
    from proxypointer import cli
    from proxypointer.index import Index

    monkeypatch.setattr(cli, "_index", lambda args, **_: Index(args.store, cli._config(args), fake_embedder))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\ntext\n", encoding="utf-8")
    (docs / "empty.md").write_text("\n", encoding="utf-8")
    store = str(tmp_path / "store")
    assert cli.main(["ingest", str(docs), "--store", store]) == 0  # an empty file is no failure
    err = capsys.readouterr().err
    assert err.count("empty.md") == 1 and "note: " in err and "error" not in err
    (docs / "binary.md").write_bytes(b"\x00\x01")
    assert cli.main(["ingest", str(docs), "--store", store]) == 1
    err = capsys.readouterr().err
    assert err.count("binary.md") == 1 and err.count("error: ") == 1


# -- progress and interruption --------------------------------------------------------------
class Interrupting(HashingEmbedder):
    """Raises KeyboardInterrupt (Ctrl-C) on encode call number ``at``."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def encode(self, texts):
        if len(self.calls) + 1 == self.at:
            raise KeyboardInterrupt
        return super().encode(texts)


def test_ctrl_c_mid_embedding_keeps_the_vectors_already_computed(tmp_path, make_index):
    src = tmp_path / "big.md"
    src.write_text(many_sections(60), encoding="utf-8")
    cfg = dataclasses.replace(SMALL, embedding=EmbeddingConfig(batch_size=1))  # groups of 8 texts
    crashing = Interrupting(at=4)
    with pytest.raises(KeyboardInterrupt):
        make_index(cfg, embedder=crashing).ingest([src], show_progress=False)
    assert [len(c) for c in crashing.calls] == [8, 8, 8]
    index = make_index(cfg, embedder=HashingEmbedder())
    assert index.registry.get("big") is None  # nothing half-written
    rep = index.ingest([src], show_progress=False)  # the lock was released, the cache kept
    assert rep.cached == 24 and rep.embedded == rep.chunks - 24 and rep.chunks > 24
    assert index.check().ok


def test_progress_counts_documents_and_moves_within_one_documents_embedding(tmp_path, make_index, monkeypatch):
    import tqdm

    bars = []

    class Bar:
        def __init__(self, iterable=None, total=0, unit="", **kw):
            self.total, self.unit, self.updates, self.n = total, unit, [], 0
            bars.append(self)

        def update(self, n=1):
            self.updates.append(n)
            self.n += n

        def set_postfix_str(self, *a, **k):
            pass

        def refresh(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    src = tmp_path / "big.md"
    src.write_text(many_sections(40), encoding="utf-8")
    cfg = dataclasses.replace(SMALL, embedding=EmbeddingConfig(batch_size=1))
    rep = make_index(cfg).ingest([src], show_progress=True)
    (bar,) = bars
    # counted in documents, its total known before the file is read; it ends at the total
    assert bar.unit == "doc" and bar.total == rep.documents == 1 and abs(bar.n - 1) < 1e-9
    moves = [n for n in bar.updates if n]  # update(0) only redraws (progress.tick)
    assert len(moves) >= rep.chunks // 8  # moves during the one document's embedding


# -- cache pruning -------------------------------------------------------------------------
def test_prune_drops_cache_entries_no_live_chunk_uses_and_repair_keeps_them(tmp_path, make_index):
    src = tmp_path / "doc.md"
    src.write_text("# Doc\n\n## A\n\napples\n\n## B\n\nbananas\n\n## C\n\ncherries\n", encoding="utf-8")
    index = make_index()
    index.ingest([src], show_progress=False)
    src.write_text("# Doc\n\n## A\n\napples\n\n## B\n\nblueberries now\n", encoding="utf-8")
    rep = index.ingest([src], show_progress=False)
    assert rep.cache_pruned == 0 and index.status()["cached_embeddings"] == 4  # old B and C still cached
    rep = index.ingest([src], prune=True, show_progress=False)
    assert rep.cache_pruned == 2 and "2 unused cached embeddings removed" in rep.summary()
    assert index.status()["cached_embeddings"] == 2 == index.status()["chunks"]
    index.registry.embeddings.put("another-model", {"f" * 40: __import__("numpy").ones(4, "float32")})
    index.registry._db.execute("UPDATE chunks SET record = NULL")  # copies missing: hashes come from Chroma
    fixed = index.check(repair=True)
    assert not any("embedding-cache" in r for r in fixed.repaired)
    assert index.status()["cached_embeddings"] == 3  # repair keeps work an interrupted run may reuse
    rep = index.ingest([src], prune=True, show_progress=False)
    assert rep.unchanged == 1 and rep.cache_pruned == 1 and index.check().ok
    assert index.status()["cached_embeddings"] == 2


# -- the reader seam (a converter plugs in per suffix) -------------------------------------
class FakeConverter:
    """Stands for a PDF converter: key from the bytes and its version, a page per 3 lines."""

    name = "fake-converter"

    def __init__(self) -> None:
        self.reads = 0

    def source_key(self, data: bytes, path: str) -> str:
        import hashlib

        return hashlib.sha256(b"fake-converter/1:" + data).hexdigest()

    def read(self, data: bytes, path: str):
        from proxypointer.errors import MissingDependencyError
        from proxypointer.read.readers import ReadResult

        self.reads += 1
        if data.startswith(b"NEEDS-JAVA"):
            raise MissingDependencyError(f"{path}: the converter needs Java 11+; install a JRE")
        text = data.decode().upper()
        n = len(text.splitlines())
        return ReadResult(text, self.source_key(data, path), tuple(1 + i // 3 for i in range(n)))


def test_a_converter_plugs_in_per_suffix(tmp_path, make_index):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.fake").write_text("# report\n\nfirst page text\n## costs\n\ncosts rose\n", encoding="utf-8")
    (docs / "broken.fake").write_bytes(b"NEEDS-JAVA")
    (docs / "note.md").write_text("# Note\n\nplain markdown\n", encoding="utf-8")
    index = make_index()
    conv = FakeConverter()
    index.readers[".fake"] = conv
    rep = index.ingest([docs], show_progress=False)
    assert rep.indexed == 2 and [Path(p).name for p, m in rep.failed] == ["broken.fake"]
    assert "needs Java" in rep.failed[0][1]  # one file fails, named; the others are indexed
    rec = index.registry.get("report")
    assert index.registry.sources.load(rec.doc_hash).startswith("# REPORT")
    assert index.registry.sources.load_pages(rec.doc_hash) == (1, 1, 1, 2, 2, 2)
    assert index.registry.sources.load_pages(index.registry.get("note").doc_hash) is None
    assert index.check().ok
    reads = conv.reads
    again = index.ingest([docs], show_progress=False)
    assert again.unchanged == 2 and conv.reads == reads + 1  # only the failed one is read again
    assert index.status()["stale_sources"] == []
    (docs / "report.fake").write_text("# report\n\nsecond version\n", encoding="utf-8")
    assert [s["doc_id"] for s in index.status()["stale_sources"]] == ["report"]
    index.registry.sources.pages_file(index.registry.get("report").doc_hash).write_text("[1]", encoding="utf-8")
    assert any("page map has 1 lines" in p for p in index.check().problems)


def test_word_pieces_per_line_are_counted_at_ingest_not_per_query(tmp_path, make_index, monkeypatch):
    from proxypointer.embed.tokenizer import line_token_counts
    from proxypointer.lines import split_lines

    src = tmp_path / "docs" / "guide.md"
    src.parent.mkdir()
    src.write_text("# Guide\n\n## Kettle\n\nDescale the kettle with vinegar.\n\n## Toaster\n\nEmpty the crumb tray.\n")
    index = make_index()
    index.ingest([src.parent], show_progress=False)
    reg, tok = index.registry, index.embedder.tokenizer
    doc_hash = reg.get("guide").doc_hash
    lines = split_lines(reg.sources.load(doc_hash))
    stored = reg.sources.load_line_tokens(doc_hash, tok.name)
    assert stored == line_token_counts(lines, tok) and len(stored) == len(lines) and sum(stored) > 0
    assert reg.sources.load_line_tokens(doc_hash, "another-model") is None  # counted by another tokenizer
    # a query sizes sections from them: no tokenising of the document's lines
    want = Retriever(index).retrieve("kettle vinegar", k=1)[0].text
    monkeypatch.setattr(type(tok), "count_batch", lambda self, texts: pytest.fail("lines tokenised"))
    assert Retriever(index).retrieve("kettle vinegar", k=1)[0].text == want
    monkeypatch.undo()
    # an older store (no counts beside the text) counts at query time, then gets them on re-ingest
    reg.sources.tokens_file(doc_hash).unlink()
    assert Retriever(index).line_tokens(doc_hash) == stored
    assert index.ingest([src.parent], show_progress=False).indexed == 0  # unchanged, yet given its counts
    assert reg.sources.load_line_tokens(doc_hash, tok.name) == stored
    reg.sources.tokens_file(doc_hash).unlink()  # a text already stored gets counts written beside it
    reg.sources.save(doc_hash, "ignored: already stored", line_tokens=(tok.name, stored))
    assert reg.sources.load_line_tokens(doc_hash, tok.name) == stored
    assert reg.sources.load(doc_hash) != "ignored: already stored"
    # counts that cannot be right (a damaged file) are not used: check names them, --repair rewrites
    n = len(stored)
    for damaged in ([1, 2], [True] * n, [-1] * n, ["1"] * n, {"x": 1}, "{not json"):
        body = damaged if isinstance(damaged, str) else json.dumps({"tokenizer": tok.name, "counts": damaged})
        reg.sources.tokens_file(doc_hash).write_text(body)
        assert Retriever(index).line_tokens(doc_hash) == stored
        assert not index.check().ok
    index.ingest([src.parent], show_progress=False)  # only missing files are written by an ingest
    assert "stored the word pieces per line of 1 documents" in index.check(repair=True).repaired
    assert reg.sources.load_line_tokens(doc_hash, tok.name) == stored and index.check().ok
    # they go with their text when no version points to it any more
    index.delete(["guide"])
    reg.sources.prune()
    assert not reg.sources.tokens_file(doc_hash).exists() and not reg.sources.text_file(doc_hash).exists()


def test_a_read_only_store_still_syncs_without_its_word_piece_counts(tmp_path, make_index, monkeypatch, caplog):
    src = tmp_path / "docs" / "guide.md"
    src.parent.mkdir()
    src.write_text("# Guide\n\n## Kettle\n\nDescale the kettle with vinegar.\n")
    index = make_index()
    index.ingest([src.parent], show_progress=False)
    reg = index.registry
    doc_hash = reg.get("guide").doc_hash
    reg.sources.tokens_file(doc_hash).unlink()

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(reg.sources, "save_line_tokens", read_only)
    with caplog.at_level(logging.WARNING):
        rep = index.ingest([src.parent], show_progress=False)  # unchanged: only the counts were to be written
    assert rep.failed == [] and "could not store word pieces per line" in caplog.text
    assert index.check().ok  # a missing file is no problem: queries count the lines
    # a file gone from a read-only store: its document is dropped, its text stays for a later run
    monkeypatch.setattr(reg.sources, "prune", read_only)
    src.unlink()
    with caplog.at_level(logging.WARNING):
        assert index.ingest([src.parent], prune=True, show_progress=False).deleted == 1
    assert "could not remove stored sources" in caplog.text and reg.get("guide") is None


def test_a_damaged_cached_embedding_is_encoded_again_not_written(tmp_path, make_index):
    src = tmp_path / "docs" / "guide.md"
    src.parent.mkdir()
    src.write_text("# Guide\n\n## Kettle\n\nDescale the kettle with vinegar.\n\n## Toaster\n\nEmpty the tray.\n")
    index = make_index()
    index.ingest([src.parent], show_progress=False)
    reg, model = index.registry, index.embedder.name
    kettle = next(c for c in reg.chunk_ids("guide") if "kettle" in reg.chunk_records([c])[c][0].lower())
    key = reg._db.execute("SELECT content_hash FROM chunks WHERE chunk_id = ?", (kettle,)).fetchone()[0]
    good = reg.embeddings.get(model, [key])[key].copy()
    reg._db.execute("UPDATE embeddings SET vector = substr(vector, 1, 100) WHERE content_hash = ?", (key,))
    assert reg.embeddings.get(model, [key]) == {}  # never handed to a writer
    src.write_text(src.read_text() + "\n## Kettle lid\n\nClose it.\n")  # the kettle text is unchanged
    rep = index.ingest([src.parent], show_progress=False)
    assert rep.indexed == 1 and rep.embedded >= 2  # the damaged text is encoded again with the new one
    assert np.allclose(reg.embeddings.get(model, [key])[key], good, atol=1e-6) and index.check().ok


def test_a_heading_written_with_a_no_break_space_is_noted_where_it_stays_text(tmp_path, make_index):
    # new-user trial: hand-written markdown with "##" + U+00A0 fell back to text without a word at ingest
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text("# Manual\n\nIntro.\n\n##\u00a0Installation\n\nRun the installer.\n")
    (docs / "converted.md").write_text(  # converter output (page markers): the rule makes it a heading
        "<!-- page 1 -->\n\n# Manual\n\nIntro.\n\n##\u00a0Installation\n\nRun the installer.\n")
    rep = make_index().ingest([docs], show_progress=False)
    notes = [m for p, m in rep.notes if "no-break space" in m]
    assert len(notes) == 1 and "manual.md" in notes[0] and "(lines 5)" in notes[0]


def test_the_progress_total_is_the_files_planned_and_never_grows(tmp_path, make_index, monkeypatch):
    import tqdm

    bars = []

    class Bar:
        def __init__(self, iterable=None, total=0, unit="", **kw):
            self.first_total, self.unit, self.n = total, unit, 0
            self.__dict__["total"] = total
            bars.append(self)

        def __setattr__(self, name, value):
            if name == "total" and "total" in self.__dict__:
                raise AssertionError("the bar's total changed during the run")
            super().__setattr__(name, value)

        def update(self, n=1):
            self.n += n

        def set_postfix_str(self, *a, **k):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"d{i}.md").write_text(many_sections(4), encoding="utf-8")
    index = make_index(SMALL)
    first = index.ingest([corpus], show_progress=True)
    (corpus / "d1.md").write_text(many_sections(6), encoding="utf-8")
    second = index.ingest([corpus], show_progress=True)
    assert [(b.unit, b.first_total, round(b.n, 9)) for b in bars] == [("doc", 3, 3), ("doc", 3, 3)]
    assert (first.indexed, second.indexed, second.unchanged) == (3, 1, 2)


def test_a_document_of_very_many_chunks_is_announced_before_it_is_embedded(tmp_path, make_index, caplog,
                                                                           monkeypatch):
    # issue 32: a 20 MB file of one line made 37,562 windows, an hour of embedding, silently
    import proxypointer.ingest.local as local

    monkeypatch.setattr(local, "LARGE_DOCUMENT_CHUNKS", 20)
    docs = tmp_path / "docs"
    docs.mkdir()
    words = " ".join(f"word{i} telemetry reading" for i in range(3000))
    (docs / "dump.md").write_text(words, encoding="utf-8")  # one line, no headings
    (docs / "short.md").write_text("# Short\n\nA few words.\n", encoding="utf-8")
    index = make_index()
    embedded_when_warned = []
    real_encode = index.embedder.encode

    def encode(texts, *a, **kw):
        embedded_when_warned.append(("encode", len(texts)))
        return real_encode(texts, *a, **kw)

    monkeypatch.setattr(index.embedder, "encode", encode)

    class Order(logging.Handler):
        def emit(self, record):
            if "chunks from one document" in record.getMessage():
                embedded_when_warned.append(("warned", 0))

    handler = Order()
    logging.getLogger("proxypointer.ingest.local").addHandler(handler)
    try:
        with caplog.at_level(logging.WARNING, logger="proxypointer.ingest.local"):
            rep = index.ingest([docs], show_progress=False)
    finally:
        logging.getLogger("proxypointer.ingest.local").removeHandler(handler)
    assert rep.indexed == 2 and not rep.failed
    noted = dict(rep.notes)
    note = noted[str(docs / "dump.md")]
    assert "chunks from one document" in note and "no headings: cut in sliding windows" in note
    assert "run the same ingest again" in note and str(docs / "short.md") not in noted
    assert embedded_when_warned[0] == ("warned", 0)  # said before any embedding
    # a re-ingest of the same document, edited in one place, embeds one chunk: nothing to announce
    (docs / "dump.md").write_text(words + " and one more reading", encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="proxypointer.ingest.local"):
        again = index.ingest([docs], show_progress=False)
    assert again.indexed == 1 and again.embedded <= 2 and "chunks from one document" not in caplog.text

"""Registry: version flips, generation counter, record copies; stored sources and embedding cache through it."""

from __future__ import annotations

import numpy as np
import pytest

from proxypointer.errors import StaleSourceError
from proxypointer.store.registry import Registry


@pytest.fixture
def reg(tmp_path):
    r = Registry(tmp_path / "store")
    yield r
    r.close()


def commit(reg, doc_id, h, version, ids):
    return reg.commit_version(doc_id, source_path=f"/x/{doc_id}.md", doc_hash=h, version=version, title="T",
                              line_count=3, n_sections=1, chunk_ids=ids, source_mtime=1.0, source_size=10)


def test_write_flow_flips_versions_in_one_step(reg):
    g0 = reg.generation()
    reg.begin_write("d", "/x/d.md", "h1")
    rec = reg.get("d")
    assert (rec.state, rec.version, rec.pending_hash) == ("writing", "", "h1")
    assert reg.live_versions(["d"]) == {}  # a first version is invisible until committed
    assert commit(reg, "d", "h1", "v1", ["d::v1::n::0000"]) == []
    assert reg.get("d").state == "cleanup" and reg.generation() == g0 + 1
    reg.finish("d")
    assert reg.live_versions(["d"]) == {"d": ("v1", "h1")}
    reg.begin_write("d", "/x/d.md", "h2")
    assert reg.live_versions(["d"]) == {"d": ("v1", "h1")}  # old version stays live while writing
    old = commit(reg, "d", "h2", "v2", ["d::v2::n::0000", "d::v2::m::0000"])
    assert old == ["d::v1::n::0000"]
    assert reg.chunk_ids("d") == {"d::v2::n::0000", "d::v2::m::0000"}
    reg.finish("d")
    rec = reg.get("d")
    assert (rec.state, rec.version, rec.doc_hash, rec.n_chunks, rec.pending_hash) == ("ready", "v2", "h2", 2, "")


def test_delete_flow_hides_first_then_forgets(reg):
    reg.begin_write("d", "/x/d.md", "h1")
    commit(reg, "d", "h1", "v1", ["c1"])
    reg.finish("d")
    g = reg.generation()
    reg.begin_delete("d")
    assert reg.live_versions(["d"]) == {} and reg.get("d").state == "deleting"
    reg.remove("d")
    assert reg.get("d") is None and reg.chunk_ids() == set() and reg.generation() == g + 2


def test_generation_is_seen_by_another_connection(tmp_path):
    a, b = Registry(tmp_path), Registry(tmp_path)
    g = b.generation()
    a.begin_write("d", "/x/d.md", "h1")
    commit(a, "d", "h1", "v1", ["c1"])
    assert b.generation() == g + 1
    assert b.live_versions(["d"]) == {"d": ("v1", "h1")}
    a.close()
    b.close()


def test_touch_writes_only_on_change(reg):
    reg.begin_write("d", "/x/d.md", "h1")
    commit(reg, "d", "h1", "v1", ["c1"])
    changes = reg._db.total_changes
    reg.touch("d", "/x/d.md", 1.0, 10)
    assert reg._db.total_changes == changes
    reg.touch("d", "/y/d.md", 2.0, 11)
    rec = reg.get("d")
    assert (rec.source_path, rec.source_mtime, rec.source_size) == ("/y/d.md", 2.0, 11)


def test_mark_stale_keeps_the_document_live(reg):
    reg.begin_write("d", "/x/d.md", "h1")
    commit(reg, "d", "h1", "v1", ["c1"])
    reg.finish("d")
    reg.mark_stale("d")
    assert reg.get("d").state == "stale" and reg.live_versions(["d"]) == {"d": ("v1", "h1")}
    assert reg.stats()["not_ready"] == 0


def test_sources_are_content_addressed_and_pruned(reg):
    text = "# A\r\nnot normalised here\n"
    reg.sources.save("abc123", text)
    reg.sources.save("abc123", "ignored: already stored")
    assert reg.sources.load("abc123") == text  # newline="" keeps bytes exact
    assert not list((reg.root / "sources").glob("*/*.tmp"))
    reg.begin_write("d", "/x/d.md", "abc123")
    assert reg.sources.prune() == 0  # pending version is kept
    reg.remove("d")
    assert reg.sources.prune() == 1
    with pytest.raises(StaleSourceError, match="proxypointer check"):
        reg.sources.load("abc123")


def test_embedding_cache_round_trip(reg):
    v = np.arange(4, dtype=np.float32)
    reg.embeddings.put("m", {"h1": v, "h2": v * 2})
    got = reg.embeddings.get("m", ["h1", "h2", "h3", "h1"])
    assert set(got) == {"h1", "h2"} and got["h2"].dtype == np.float32
    assert np.array_equal(got["h2"], v * 2)
    assert reg.embeddings.get("other-model", ["h1"]) == {}
    many = {f"k{i}": v for i in range(1200)}  # more than one IN (...) page
    reg.embeddings.put("m", many)
    assert len(reg.embeddings.get("m", list(many))) == 1200


def test_stats(reg):
    reg.begin_write("d", "/x/d.md", "h1")
    assert reg.stats()["not_ready"] == 1 and reg.stats()["documents"] == 0
    commit(reg, "d", "h1", "v1", ["c1", "c2"])
    reg.finish("d")
    assert reg.stats() == {"documents": 1, "sections": 1, "chunks": 2, "cached_embeddings": 0, "not_ready": 0,
                           "chunks_without_record_copy": 2}  # committed without copies


def test_record_copies_go_and_come_with_their_version(reg):
    from proxypointer.store.records import encode_record

    meta = {"doc_id": "d", "doc_hash": "h1", "version": "v1", "node_id": "n", "start_line": 1, "end_line": 3,
            "level": 2, "empty_body": False}
    rec = encode_record("héllo", meta)
    reg.begin_write("d", "/x/d.md", "h1")
    reg.commit_version("d", source_path="/x/d.md", doc_hash="h1", version="v1", title="T", line_count=3,
                       n_sections=1, chunk_ids=["d::v1::n::0000"], source_mtime=1.0, source_size=10, records=[rec])
    assert reg.chunk_records(["d::v1::n::0000", "other"]) == {"d::v1::n::0000": ("héllo", meta)}
    commit(reg, "d", "h2", "v2", ["d::v2::n::0000"])  # a version written without copies
    assert reg.chunk_records(["d::v1::n::0000", "d::v2::n::0000"]) == {}
    assert reg.chunks.chunks_without_record(10) == ["d::v2::n::0000"]
    assert reg.chunks.set_chunk_records({"d::v2::n::0000": rec, "d::v1::n::0000": rec}) == 1  # old id: not revived
    assert reg.chunks.chunks_without_record(10) == [] and reg.chunk_ids("d") == {"d::v2::n::0000"}
    with pytest.raises(ValueError, match="1 records for 2 chunks"):
        reg.commit_version("d", source_path="/x/d.md", doc_hash="h3", version="v3", title="T", line_count=3,
                           n_sections=1, chunk_ids=["a", "b"], source_mtime=1.0, source_size=10, records=[rec])


def test_a_registry_of_an_older_version_gains_the_record_column(tmp_path):
    import sqlite3

    root = tmp_path / "old"
    (root / "sources").mkdir(parents=True)
    db = sqlite3.connect(root / "registry.sqlite3")
    db.execute("CREATE TABLE chunks (chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL)")
    db.execute("INSERT INTO chunks VALUES ('d::v1::n::0000', 'd')")
    db.commit()
    db.close()
    reg = Registry(root)
    assert reg.chunk_ids("d") == {"d::v1::n::0000"}
    assert reg.chunk_records(["d::v1::n::0000"]) == {}
    assert reg.chunks.chunks_without_record(10) == ["d::v1::n::0000"]
    reg.close()
    Registry(root).close()  # opening again (column present) is a no-op


def test_the_registry_is_read_through_a_memory_map(tmp_path):
    # PRAGMA mmap_size (registry.MMAP_BYTES): mapped reads of a big registry skip a system call
    # and a copy per page (docs/benchmarks.md, "Preload round"); SQLite caps the size at its
    # compile-time limit, so only "on" is checked.
    reg = Registry(tmp_path)
    try:
        assert reg.db.execute("PRAGMA mmap_size").fetchone()[0] > 0
    finally:
        reg.close()

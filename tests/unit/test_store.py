"""Chroma adapter: scalar metadata, batching, paging, close/reopen, errors."""

from __future__ import annotations

import dataclasses
import socket

import numpy as np
import pytest

from proxypointer.chunk.chunker import Chunk
from proxypointer.config import StoreConfig
from proxypointer.errors import StoreError
from proxypointer.store.chroma import ChromaStore, chunk_metadata

SCALAR = (str, int, float, bool)


def chunk(i: int, doc: str = "d", text: str = "same text") -> Chunk:
    return Chunk(chunk_id=f"{doc}::v1::n{i}::0000", doc_id=doc, doc_hash="h" * 64, version="v1", node_id=f"n{i}",
                 chunk_index=0, kind="heading", title="T", level=2, parent_id="", breadcrumb=("Doc", "T"),
                 start_line=1, end_line=2, body_end_line=2, chunk_start_line=2, chunk_end_line=2, text=text,
                 embed_text=f"Doc > T\n{text}", n_tokens=5)


def vecs(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    v = rng.random((n, 8), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def store(tmp_path):
    s = ChromaStore(StoreConfig(), tmp_path)
    yield s
    s.close()


def test_chunk_metadata_is_scalar_only():
    m = chunk_metadata(chunk(1), "/x/d.md")
    assert m and all(type(v) in SCALAR for v in m.values())
    assert m["parent_id"] == "" and m["breadcrumb_json"] == '["Doc", "T"]'


def test_add_is_batched_and_ids_unique_for_identical_text(store, monkeypatch):
    store.batch_limit = 3
    sizes = []
    real = type(store.collection).upsert

    def spy(self, **kw):
        sizes.append(len(kw["ids"]))
        return real(self, **kw)

    monkeypatch.setattr(type(store.collection), "upsert", spy)
    chunks = [chunk(i) for i in range(8)]  # identical text, distinct ids
    store.add(chunks, vecs(8), "/x/d.md")
    assert sizes == [3, 3, 2] and store.count() == 8
    got = store.all_metadata()
    assert len(got) == 8 and all(type(v) in SCALAR for m in got.values() for v in m.values())
    assert sorted(store.ids_where({"doc_id": "d"})) == sorted(c.chunk_id for c in chunks)
    store.delete_ids([c.chunk_id for c in chunks[:5]] + [chunks[0].chunk_id, "unknown"])
    assert store.count() == 3


def test_max_batch_comes_from_the_client(store):
    assert store.max_batch == store.client.get_max_batch_size() > 0
    store.batch_limit = 10
    assert store.max_batch == 10


def test_query_caps_n_and_scores_are_similarities(store):
    store.add([chunk(i) for i in range(3)], vecs(3), "/x/d.md")
    hits = store.query(vecs(3)[0], n=50)
    assert len(hits) == 3 and hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert ChromaStore(StoreConfig(collection="empty-one"), store.root).query(vecs(1)[0], 5) == []


def test_close_then_reuse_reopens(store):
    store.add([chunk(1)], vecs(1), "/x/d.md")
    store.close()
    store.close()  # twice is harmless
    assert store.count() == 1


def test_bad_collection_name_is_a_store_error(tmp_path):
    s = ChromaStore(StoreConfig(collection="x"), tmp_path)
    with pytest.raises(StoreError, match="store.collection"):
        s.count()


def test_unreachable_server_is_a_store_error(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = dataclasses.replace(StoreConfig(), mode="http", port=port)
    s = ChromaStore(cfg, tmp_path)
    assert s.where == f"http://127.0.0.1:{port}"
    with pytest.raises(StoreError, match=f"127.0.0.1:{port}: cannot open Chroma"):
        s.count()
    assert not (tmp_path / "chroma").exists()


def test_missing_token_env_is_a_config_error(tmp_path, monkeypatch):
    from proxypointer.errors import ConfigError

    monkeypatch.delenv("PP_TEST_TOKEN", raising=False)
    cfg = dataclasses.replace(StoreConfig(), mode="http", token_env="PP_TEST_TOKEN")
    with pytest.raises(ConfigError, match="PP_TEST_TOKEN"):
        ChromaStore(cfg, tmp_path).count()


def test_only_chromas_own_failures_become_store_errors(store, monkeypatch):
    import httpx
    from chromadb.errors import InternalError

    store.add([chunk(1)], vecs(1), "/x/d.md")
    cls = type(store.collection)
    for err in (InternalError("disk full"), ValueError("bad metadata"), Exception("502 Bad Gateway"),
                httpx.ConnectError("refused"), ConnectionResetError("reset")):
        monkeypatch.setattr(cls, "upsert", lambda self, _e=err, **kw: (_ for _ in ()).throw(_e))
        with pytest.raises(StoreError, match=r"^/x/d\.md: Chroma refused a write"):
            store.add([chunk(2)], vecs(1), "/x/d.md")
    # a bug of ours (or a programming error anywhere) is not dressed up as a Chroma refusal
    for bug in (AttributeError("'NoneType' object has no attribute 'x'"), KeyError("doc_id"), TypeError("bad")):
        monkeypatch.setattr(cls, "upsert", lambda self, _e=bug, **kw: (_ for _ in ()).throw(_e))
        with pytest.raises(type(bug)):
            store.add([chunk(2)], vecs(1), "/x/d.md")
        monkeypatch.setattr(cls, "get", lambda self, _e=bug, **kw: (_ for _ in ()).throw(_e))
        with pytest.raises(type(bug)):
            store.all_ids()
    monkeypatch.undo()
    assert store.count() == 1


def test_a_collection_records_its_owner_and_refuses_another_store(tmp_path):
    from proxypointer.store.chroma import OWNER_ID_KEY, OWNER_PATH_KEY

    a = ChromaStore(StoreConfig(collection="shared"), tmp_path, owner=("id-a", "/stores/a"))
    a.add([chunk(1)], vecs(1), "/x/d.md")
    assert (a.collection.metadata[OWNER_ID_KEY], a.collection.metadata[OWNER_PATH_KEY]) == ("id-a", "/stores/a")
    a.close()
    b = ChromaStore(StoreConfig(collection="shared"), tmp_path, owner=("id-b", "/stores/b"))
    with pytest.raises(StoreError) as err:
        b.count()
    msg = str(err.value)
    assert "belongs to the store /stores/a" in msg and "(/stores/b)" in msg and "store.collection" in msg
    b.close()
    reader = ChromaStore(StoreConfig(collection="shared"), tmp_path, owner=None)  # a store with no id yet
    with pytest.raises(StoreError, match="belongs to the store /stores/a"):
        reader.count()
    reader.close()
    same = ChromaStore(StoreConfig(collection="shared"), tmp_path, owner=("id-a", "/stores/a"))
    assert same.count() == 1
    same.close()
    # the same folder re-created (new id, same path) takes its collection over
    again = ChromaStore(StoreConfig(collection="shared"), tmp_path, owner=("id-a2", "/stores/a"))
    assert again.count() == 1 and again.collection.metadata[OWNER_ID_KEY] == "id-a2"
    again.close()


def test_an_unmarked_collection_is_taken_only_if_empty_or_adopted(tmp_path):
    from proxypointer.store.chroma import OWNER_ID_KEY

    old = ChromaStore(StoreConfig(collection="legacy"), tmp_path)  # written before owners were marked
    old.add([chunk(1)], vecs(1), "/x/d.md")
    old.close()
    stranger = ChromaStore(StoreConfig(collection="legacy"), tmp_path, owner=("id-new", "/stores/new"))
    with pytest.raises(StoreError, match="already holds 1 chunks written by another store"):
        stranger.count()
    stranger.close()
    mine = ChromaStore(StoreConfig(collection="legacy"), tmp_path, owner=("id-old", "/stores/old"), adopt=True)
    assert mine.count() == 1 and mine.collection.metadata[OWNER_ID_KEY] == "id-old"
    assert mine.query(3 * vecs(1)[0], 1)[0].score == pytest.approx(1.0, abs=1e-4)  # still cosine (L2 would give -3)
    mine.close()
    empty = ChromaStore(StoreConfig(collection="fresh-one"), tmp_path)
    assert empty.count() == 0
    empty.close()
    claim = ChromaStore(StoreConfig(collection="fresh-one"), tmp_path, owner=("id-f", "/stores/f"))
    assert claim.count() == 0 and claim.collection.metadata[OWNER_ID_KEY] == "id-f"
    claim.close()


def test_a_read_of_a_half_written_embedded_index_is_retried_on_a_reopened_client(store, monkeypatch):
    """Shared case 26: another process is still writing the HNSW files a fresh reader loads."""
    from chromadb.errors import InternalError

    import proxypointer.store.chromaclient as store_mod

    monkeypatch.setattr(store_mod, "REOPEN_PAUSES_S", (0.0, 0.0, 0.0))
    store.add([chunk(i) for i in range(3)], vecs(3), "/x/d.md")
    cls = type(store.collection)
    real, calls = cls.query, []
    half = InternalError(
        "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk")

    def flaky(self, **kw):
        calls.append(id(self))
        if len(calls) <= 2:
            raise half
        return real(self, **kw)

    monkeypatch.setattr(cls, "query", flaky)
    got = store.query_ids(vecs(3)[0], 2)
    assert len(got) == 2 and got[0][0] == chunk(0).chunk_id
    assert len(calls) == 3 and len(set(calls)) == 3  # each retry on a freshly opened collection
    calls.clear()

    def failing(error):
        def query(self, **kw):
            calls.append(id(self))
            raise error
        return query

    monkeypatch.setattr(cls, "query", failing(half))
    with pytest.raises(StoreError, match="query failed .*Nothing found on disk"):
        store.query(vecs(3)[0], 2)
    assert len(calls) == 4  # three retries, then the error
    calls.clear()
    monkeypatch.setattr(cls, "query", failing(InternalError("other")))
    with pytest.raises(StoreError, match="query failed"):
        store.query(vecs(3)[0], 2)
    assert len(calls) == 1  # any other error: no retry


# -- one process, several stores on one embedded folder (shared case 26) -------------------
def test_a_store_opened_for_a_newer_generation_reopens_the_older_ones(tmp_path):
    # Chroma shares one in-memory index per folder and process: the older client must go, or
    # both would read the index as it was when the first one opened
    old = ChromaStore(StoreConfig(), tmp_path, generation=1)
    first = old.client
    new = ChromaStore(StoreConfig(), tmp_path, generation=2)
    new.add([chunk(1)], vecs(1), "/x/d.md")
    assert old.client is not first  # closed under it, reopened on next use
    assert old.count() == 1 and new.count() == 1
    old.close()
    new.close()


def test_a_store_at_the_same_or_an_older_generation_keeps_the_others(tmp_path):
    current = ChromaStore(StoreConfig(), tmp_path, generation=2)
    held = current.client
    for generation in (2, 1, None):
        other = ChromaStore(StoreConfig(), tmp_path, generation=generation)
        other.count()
        assert current.client is held
        other.close()
    current.close()


def test_a_writer_of_the_process_closes_stale_clients_first_and_none_while_it_writes(tmp_path):
    from proxypointer.store.chroma import embedded_writer

    stale = ChromaStore(StoreConfig(), tmp_path, generation=1)
    before = stale.client
    generation = {"now": 3}
    with embedded_writer(tmp_path, lambda: generation["now"]):
        writer = ChromaStore(StoreConfig(), tmp_path, generation=3)
        assert stale.client is not before  # closed when the writer began
        during, writing = stale.client, writer.client
        generation["now"] = 5  # the writer's own commits
        reader = ChromaStore(StoreConfig(), tmp_path, generation=5)
        reader.count()
        assert stale.client is during and writer.client is writing
    after = ChromaStore(StoreConfig(), tmp_path, generation=5)  # the writer left generation 5
    after.count()
    assert stale.client is during
    for s in (stale, writer, reader, after):
        s.close()

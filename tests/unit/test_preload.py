"""Preloading a store into the OS page cache (proxypointer.store.preload, Index.preload, serve.preload)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from proxypointer.config import ProxyPointerConfig, ServeConfig, config_from_dict
from proxypointer.errors import ConfigError, StoreNotFoundError
from proxypointer.index import Index
from proxypointer.serve.service import Service
from proxypointer.store.preload import preload_files, store_files

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def store(make_index) -> Path:
    index = make_index()  # the conftest factory: a temp store, the fake embedder, closed after
    assert not index.ingest([DATA], show_progress=False).failed
    return index.root


def test_store_files_lists_what_queries_read_registry_first_and_no_hnsw_segment(store):
    files = store_files(store)
    rel = [p.relative_to(store).as_posix() for p in files]
    assert rel[0] == "registry.sqlite3"
    assert rel.index("chroma/chroma.sqlite3") < min(i for i, r in enumerate(rel) if r.startswith("sources/"))
    # every stored source (text and word-piece counts) is listed
    assert sorted(r for r in rel if r.startswith("sources/")) == sorted(
        p.relative_to(store).as_posix() for p in (store / "sources").rglob("*") if p.is_file())
    # Chroma loads its HNSW segment into memory when it opens the collection: not read again
    assert not any(r.endswith(".bin") for r in rel)
    assert all(p.is_file() for p in files)


def test_preload_reads_whole_files_in_order_and_skips_one_that_would_pass_the_limit(tmp_path):
    big, small1, small2 = tmp_path / "big", tmp_path / "s1", tmp_path / "s2"
    big.write_bytes(b"x" * 5000)
    small1.write_bytes(b"y" * 300)
    small2.write_bytes(b"z" * 200)
    report = preload_files([small1, big, small2], max_bytes=1000)
    # big would pass the limit: skipped, and the small file after it is still read
    assert (report.files, report.bytes_read, report.bytes_left) == (2, 500, 5000)
    assert preload_files([small1, big, small2], max_bytes=None).bytes_read == 5500
    assert preload_files([big], max_bytes=0).files == 0
    assert report.summary().startswith("preloaded 0.0 MB of the store (2 files) in ")
    assert report.summary().endswith("; 0.0 MB left out by the limit")
    with pytest.raises(ValueError, match="max_bytes"):
        preload_files([small1], max_bytes=-1)


def test_preload_skips_a_file_that_vanished_or_cannot_be_read_and_counts_it(tmp_path, monkeypatch, caplog):
    kept, unreadable = tmp_path / "kept", tmp_path / "unreadable"
    kept.write_bytes(b"k" * 10)
    unreadable.write_bytes(b"u" * 10)
    report = preload_files([tmp_path / "gone", kept])
    assert (report.files, report.bytes_read, report.failed) == (1, 10, 0)
    real_open = open

    def refuse(path, *args, **kwargs):  # root reads any file whatever its mode: refuse here
        if Path(path) == unreadable:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refuse)
    with caplog.at_level("WARNING", logger="proxypointer.store.preload"):
        report = preload_files([unreadable, kept])
    assert (report.files, report.bytes_read, report.failed) == (1, 10, 1)
    assert report.summary().endswith("; 1 file could not be read")
    assert f"could not preload {unreadable}: Permission denied" in caplog.text


def test_index_preload_reads_the_store_and_changes_nothing(store, fake_embedder):
    before = {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file()}
    with Index(store, ProxyPointerConfig(), fake_embedder) as index:
        report = index.preload()
    assert report.files == len(store_files(store))
    assert report.bytes_read == sum(p.stat().st_size for p in store_files(store))
    assert {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file()} == before


def test_index_preload_without_a_store_raises_and_creates_nothing(tmp_path, fake_embedder):
    folder = tmp_path / "none"
    with pytest.raises(StoreNotFoundError):
        Index(folder, ProxyPointerConfig(), fake_embedder).preload()
    assert not folder.exists()


def test_serve_warm_up_preloads_unless_turned_off(store, fake_embedder):
    on = Service(store, ProxyPointerConfig(), fake_embedder)
    try:
        got = on.warm_up()
    finally:
        on.close()
    assert got["preloaded_mb"] == round(sum(p.stat().st_size for p in store_files(store)) / 1e6, 1) > 0
    assert got["preload"].startswith("preloaded ") and f"({len(store_files(store))} files)" in got["preload"]
    off = Service(store, dataclasses.replace(ProxyPointerConfig(), serve=ServeConfig(preload=False)), fake_embedder)
    try:
        got = off.warm_up()
        assert (got["preloaded_mb"], got["preload"]) == (0.0, "store not preloaded (serve.preload: false)")
    finally:
        off.close()


def test_preload_limit_must_not_be_negative():
    with pytest.raises(ConfigError, match="serve.preload_max_mb"):
        config_from_dict({"serve": {"preload_max_mb": -1}})

"""Lifecycle across processes: SIGKILL at each write stage, concurrent writers (case 26),
readers during writes, and a real Chroma server (``store.mode: http``).

Subprocesses use the fake hashing embedder through ``lifecycle_driver.py`` (no torch);
timeouts are generous and only guard against hangs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxypointer.config import ChunkingConfig, ProxyPointerConfig, RetrievalConfig
from proxypointer.errors import StoreError
from proxypointer.retrieve.retriever import Retriever

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DRIVER = HERE / "lifecycle_driver.py"
BIN = Path(sys.executable).parent
# Sections scored by their best chunk: "topic C0" names C's one paragraph, and the default `sum`
# of 2 lets B's three "topic ..." paragraphs pass it with the hashing embedder (the store and
# its lifecycle are under test here, not section scoring).
CFG = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=40, overlap_tokens=0),
                         retrieval=RetrievalConfig(section_scoring="max"))

PARA = "Paragraph {i} of section {s} talks about topic {s}{i} with enough words to stand alone here."


def doc(title: str, sections: dict[str, int]) -> str:
    out = [f"# {title}", ""]
    for s, n in sections.items():
        out += [f"## {s}", ""]
        for i in range(n):
            out += [PARA.format(i=i, s=s), ""]
    return "\n".join(out)


V1 = {"one": doc("One", {"A": 2, "B": 3, "C": 1}), "two": doc("Two", {"X": 2, "Y": 2}),
      "same": doc("Same", {"K": 1})}
V2 = {"one": doc("One", {"A": 2, "B": 1, "D": 3}), "two": doc("Two", {"X": 2, "Z": 4}),
      "same": V1["same"], "new": doc("New", {"N": 3})}


def write_docs(folder: Path, docs: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")])
    e.setdefault("HF_HUB_OFFLINE", "1")
    e.setdefault("TRANSFORMERS_OFFLINE", "1")
    return e


def drive(store: Path, kill_at: str, *paths: Path, lock_timeout: float = 120.0, timeout: float = 300):
    return subprocess.run([sys.executable, str(DRIVER), str(store), kill_at, str(lock_timeout), *map(str, paths)],
                          capture_output=True, text=True, timeout=timeout, env=env())


def cli(*args: str, timeout: float = 300):
    return subprocess.run([str(BIN / "proxypointer"), *args], capture_output=True, text=True, timeout=timeout,
                          env=env())


def reference_ids(tmp_path: Path, make_index, docs: dict[str, str], name: str) -> dict[str, set[str]]:
    folder = tmp_path / f"ref-{name}"
    write_docs(folder, docs)
    index = make_index(CFG, store=tmp_path / f"ref-store-{name}")
    index.ingest([folder], show_progress=False)
    out = {d: index.registry.chunk_ids(d) for d in docs}
    index.close()
    return out


def visible(index) -> dict[str, set[str]]:
    """doc_id -> chunk ids a reader can get: in Chroma and at the registry's live version."""
    hits = index.store.get(sorted(index.store.all_ids()))
    out: dict[str, set[str]] = {}
    for h in Retriever(index).ranker.live(hits):
        out.setdefault(h.metadata["doc_id"], set()).add(h.chunk_id)
    return out


KILL_POINTS = ["before_add:1", "mid_add:2", "mid_add:5", "after_add:1", "after_commit:1", "after_commit:2",
               "after_delete:1", "after_commit:3"]


def test_sigkill_at_each_stage_leaves_old_or_new_versions(tmp_path, make_index):
    old = reference_ids(tmp_path, make_index, V1, "v1")
    new = reference_ids(tmp_path, make_index, V2, "v2")
    for point in KILL_POINTS:
        folder, store = tmp_path / point.replace(":", "-") / "docs", tmp_path / point.replace(":", "-") / "store"
        write_docs(folder, V1)
        assert drive(store, "-", folder).returncode == 0
        write_docs(folder, V2)
        proc = drive(store, point, folder)
        assert proc.returncode == -signal.SIGKILL, (point, proc.stderr[-2000:])

        index = make_index(CFG, store=store)
        seen = visible(index)
        for d in V2:
            got = seen.get(d, set())
            allowed = [new[d]] + ([old[d]] if d in old else [set()])
            assert got in allowed, (point, d, sorted(got))
            assert index.registry.chunk_ids(d) == got or index.registry.get(d) is None or not got
        index.close()

        chk = cli("check", "--store", str(store), "--json")
        assert chk.returncode in (0, 1) and "Traceback" not in chk.stderr, chk.stderr[-2000:]
        report = json.loads(chk.stdout)
        assert report["ok"] == (chk.returncode == 0)

        assert drive(store, "-", folder).returncode == 0
        index = make_index(CFG, store=store)
        assert visible(index) == new, point
        assert set(index.store.all_ids()) == set().union(*new.values())
        assert index.check().ok, index.check().problems
        index.close()
        chk = cli("check", "--store", str(store), "--json")
        assert chk.returncode == 0 and json.loads(chk.stdout)["ok"], chk.stdout


def test_sigkill_mid_embedding_keeps_the_vectors_already_cached(tmp_path, make_index):
    folder, store = tmp_path / "docs", tmp_path / "store"
    write_docs(folder, {**V2, "big": doc("Big", {"S": 12, "T": 12})})
    proc = drive(store, "mid_embed:3", folder)  # killed as the 3rd group of 8 texts is encoded, not cached
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    index = make_index(CFG, store=store)
    assert index.status()["cached_embeddings"] == 16 and index.registry.documents() == []
    index.close()
    done = drive(store, "-", folder)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["cached"] == 16 and report["embedded"] == report["chunks"] - 16
    assert cli("check", "--store", str(store)).returncode == 0


def test_sigkill_at_random_moments(tmp_path, make_index):
    new = reference_ids(tmp_path, make_index, V2, "v2")
    old = reference_ids(tmp_path, make_index, V1, "v1")
    for delay in (0.8, 2.0, 3.5):
        base = tmp_path / f"t{delay}"
        folder, store = base / "docs", base / "store"
        write_docs(folder, V1)
        assert drive(store, "-", folder).returncode == 0
        write_docs(folder, V2)
        proc = subprocess.Popen([sys.executable, str(DRIVER), str(store), "mid_add:100000", "120", str(folder)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        index = make_index(CFG, store=store)
        seen = visible(index)
        for d in V2:
            assert seen.get(d, set()) in ([new[d]] + ([old[d]] if d in old else [set()])), (delay, d)
        index.close()
        assert drive(store, "-", folder).returncode == 0
        index = make_index(CFG, store=store)
        assert visible(index) == new and index.check().ok
        index.close()


# -- case 26 across processes -------------------------------------------------------------
def test_case26_concurrent_writer_processes_and_a_live_reader(cases_dir, tmp_path, make_index):
    case = cases_dir / "26-concurrent-writers"
    store = tmp_path / "store"
    reader = make_index(CFG, store=store)
    reader.ingest([], show_progress=False)  # only ingest creates a store
    assert reader.store.count() == 0
    procs = [subprocess.Popen([sys.executable, str(DRIVER), str(store), "-", "120", str(case / f"{n}.md")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
             for n in ("a", "b")]
    deadline = time.monotonic() + 300
    queries = 0
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        Retriever(reader).retrieve("label food", k=2)  # readers keep working during the writes
        queries += 1
        time.sleep(0.2)
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
        for bad in ("InternalError", "readonly database", "database is locked", "hnsw", "Traceback"):
            assert bad not in err
    fresh = make_index(CFG, store=tmp_path / "store")
    assert fresh.store.count() == 4
    assert Retriever(fresh).retrieve("label food", k=1)[0].title == "Fridge"
    assert Retriever(fresh).retrieve("wipe the whiteboard", k=1)[0].title == "Cleanup"
    # the reader opened before the writes sees them without restarting
    assert reader.store.count() == 4
    (s,) = Retriever(reader).retrieve("wipe the whiteboard", k=1)
    assert (s.doc_id, s.title) == ("b", "Cleanup")
    assert fresh.check().ok


def test_case26_indexes_opened_after_another_process_wrote_see_the_write(cases_dir, tmp_path, make_index):
    """Two Index objects of one process share Chroma's in-memory index of the folder: one opened
    for a newer generation must not read the older one's stale index, nor leave it stale."""
    case, store = cases_dir / "26-concurrent-writers", tmp_path / "store"

    def ingest(name: str) -> None:
        proc = subprocess.run([sys.executable, str(DRIVER), str(store), "-", "120", str(case / f"{name}.md")],
                              capture_output=True, text=True, env=env(), timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]

    ingest("b")
    reader = make_index(CFG, store=store)
    assert [s.title for s in Retriever(reader).retrieve("label food", k=1)] == ["Booking"]  # b only so far
    ingest("a")  # another process writes; the reader's client still holds b's index in memory
    fresh = make_index(CFG, store=store)
    assert Retriever(fresh).retrieve("label food", k=1)[0].title == "Fridge"
    assert Retriever(reader).retrieve("label food", k=1)[0].title == "Fridge"
    assert Retriever(fresh).retrieve("wipe the whiteboard", k=1)[0].title == "Cleanup"


def test_case26_second_writer_fails_fast_naming_the_lock(cases_dir, tmp_path):
    from filelock import FileLock

    store = tmp_path / "store"
    store.mkdir()
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("store:\n  lock_timeout_s: 0.5\n", encoding="utf-8")
    with FileLock(str(store / "write.lock")):
        t = time.monotonic()
        proc = cli("-q", "ingest", str(cases_dir / "26-concurrent-writers" / "a.md"), "--store", str(store),
                   "--config", str(cfg))
        took = time.monotonic() - t
    assert proc.returncode == 1
    assert "write.lock" in proc.stderr and "another process is writing" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert took < 120  # guard only: it did not hang


# -- Chroma server ------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def run_chroma(folder: Path) -> Iterator[int]:
    """Run ``chroma run`` on a free loopback port with its data in ``folder``; yield the port.

    The server is stopped by its pid afterwards (SIGTERM, then SIGKILL), also when the test fails.
    """
    exe = BIN / "chroma"
    if not exe.exists():
        pytest.skip("chroma CLI not installed")
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    log = (folder / "chroma.log").open("w")
    proc = subprocess.Popen([str(exe), "run", "--path", str(folder / "data"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env())
    try:
        import chromadb

        deadline = time.monotonic() + 120
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"chroma run did not start: {(folder / 'chroma.log').read_text()[-2000:]}")
                time.sleep(0.3)
        yield port
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        log.close()


@pytest.fixture
def chroma_server(tmp_path):
    with run_chroma(tmp_path / "chroma") as port:
        yield port


def test_http_mode_against_a_chroma_server(chroma_server, tmp_path, make_index):
    cfg = dataclasses.replace(CFG, store=dataclasses.replace(CFG.store, mode="http", host="127.0.0.1",
                                                            port=chroma_server, collection="pp-http-test"))
    folder = tmp_path / "docs"
    write_docs(folder, V1)
    index = make_index(cfg, store=tmp_path / "store")
    rep = index.ingest([folder], show_progress=False)
    assert rep.failed == [] and rep.indexed == 3
    assert not (tmp_path / "store" / "chroma").exists()  # vectors live on the server
    assert index.status()["store"] == f"http://127.0.0.1:{chroma_server}"
    (s,) = Retriever(index).retrieve("topic C0", k=1)
    assert (s.doc_id, s.title) == ("one", "C")
    write_docs(folder, V2)
    rep = index.ingest([folder], show_progress=False)
    assert (rep.indexed, rep.unchanged) == (3, 1)
    assert index.check().ok
    assert Retriever(index).retrieve("topic C0", k=1)[0].title != "C"
    assert index.delete(["two"]) == ["two"]
    assert not any(i.startswith("two::") for i in index.store.all_ids())
    assert index.check().ok
    index.close()
    other = make_index(cfg, store=tmp_path / "store")  # a new client sees the same collection
    assert other.store.count() == len(other.registry.chunk_ids())


def test_two_store_folders_on_one_server_collection(chroma_server, tmp_path, make_index):
    """The collection records its owner: a second store folder is refused, naming both (issue 15)."""
    cfg = dataclasses.replace(CFG, store=dataclasses.replace(CFG.store, mode="http", host="127.0.0.1",
                                                            port=chroma_server, collection="pp-owned"))
    folder = tmp_path / "docs"
    write_docs(folder, V1)
    first = make_index(cfg, store=tmp_path / "store-a")
    assert first.ingest([folder], show_progress=False).indexed == 3
    n = first.store.count()
    other_docs = tmp_path / "other"
    write_docs(other_docs, {"new": V2["new"]})
    second = make_index(cfg, store=tmp_path / "store-b")
    with pytest.raises(StoreError) as err:
        second.ingest([other_docs], show_progress=False)
    msg = str(err.value)
    assert str((tmp_path / "store-a").resolve()) in msg and str((tmp_path / "store-b").resolve()) in msg
    assert "pp-owned" in msg and "store.collection" in msg
    chk = cli("check", "--repair", "--store", str(tmp_path / "store-b"), "--config", str(_http_yaml(tmp_path, cfg)))
    assert chk.returncode == 1 and "belongs to the store" in chk.stderr and "Traceback" not in chk.stderr
    # nothing of the first store's was touched
    assert first.store.count() == n and first.check().ok
    (s,) = Retriever(first).retrieve("topic C0", k=1)
    assert (s.doc_id, s.title) == ("one", "C")
    # its own collection works
    own = dataclasses.replace(cfg, store=dataclasses.replace(cfg.store, collection="pp-owned-b"))
    assert make_index(own, store=tmp_path / "store-b").ingest([other_docs], show_progress=False).indexed == 1


def _http_yaml(tmp_path: Path, cfg: ProxyPointerConfig) -> Path:
    path = tmp_path / "http.yaml"
    s = cfg.store
    path.write_text(f"store:\n  mode: http\n  host: {s.host}\n  port: {s.port}\n  collection: {s.collection}\n",
                    encoding="utf-8")
    return path

"""``ingest --engine ray`` (issue 17): the same result and guarantees as the single-process run.

A Ray local cluster (``ray.init(num_cpus=2)``, this process is its first driver) and a
``chroma run`` server on a free loopback port serve the whole module; both are stopped by
their process ids at the end. Stores live in temporary folders, each with its own collection
on the server.

Embedder: the fake hashing embedder (deterministic, no torch) for the full comparison of the
engines (data/ plus 20 QASPER dev papers when ../shared holds them), the sync after edits and
deletions, and the kills; the real MiniLM for a smaller check through the CLI (data/ only):
vectors within 1e-5 and the same query results.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray")

from fakes import HashingEmbedder  # noqa: E402
from ray_driver import KillOnce, config  # noqa: E402
from test_lifecycle import doc, env, run_chroma, visible  # noqa: E402 - the lifecycle tests' corpus and helpers

from proxypointer.index import Index
from proxypointer.ingest.ray import ray_ingest
from proxypointer.retrieve.retriever import Retriever

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = Path(sys.executable).parent
DRIVER = HERE / "ray_driver.py"
SHARED = Path(os.environ.get("PROXYPOINTER_SHARED", ROOT.parent / "shared"))
QASPER = SHARED / "bench" / "qasper-dev" / "docs"
QUESTIONS = ["How are new employees onboarded?", "gateway telemetry retention", "site visit safety findings",
             "What dataset is used for evaluation?", "baseline results of the proposed model"]


@pytest.fixture(scope="module")
def ray_cluster():
    """A Ray local cluster of 2 CPUs; yields its address (for drivers in other processes)."""
    import ray

    if ray.is_initialized():
        pytest.skip("this process is already on a Ray cluster")
    # the workers unpickle the fake embedder and the kill hook: they import them from tests/
    paths = os.pathsep.join([str(HERE.parent), str(HERE), str(ROOT)])
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING",
             runtime_env={"env_vars": {"PYTHONPATH": paths}})
    procs = _cluster_processes()
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        procs |= _cluster_processes()  # workers and actors started since
        ray.shutdown()  # stops the processes this init started ...
        _stop(procs)  # ... and, by pid, any of them still alive


def _stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/PID/stat`` after the command name (state, ppid, ...), or None."""
    try:  # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _cluster_processes() -> set[tuple[int, str]]:
    """(pid, start time) of the local cluster's processes (GCS, raylet, ...) and of their
    descendants (workers, actors), found through ``/proc``; this process itself excluded. The
    start time guards against a pid reused by another process."""
    import ray

    node = ray._private.worker._global_node  # the head node this process started
    pids = {info.process.pid for infos in node.all_processes.values() for info in infos} if node else set()
    parents = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if fields:
            parents[int(entry.name)] = int(fields[1])
    grew = True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in pids} - pids
        pids |= more
        grew = bool(more)
    return {(pid, fields[19]) for pid in pids - {os.getpid()} if (fields := _stat(pid))}


def _alive(proc: tuple[int, str]) -> bool:
    fields = _stat(proc[0])
    return bool(fields) and fields[19] == proc[1] and fields[0] not in ("Z", "X")


def _stop(procs: set[tuple[int, str]], wait_s: float = 30.0) -> None:
    """SIGTERM each process still alive, then SIGKILL those left after ``wait_s`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, _ in filter(_alive, procs):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while any(map(_alive, procs)) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.fixture(scope="module")
def chroma_port(tmp_path_factory):
    """A ``chroma run`` server on a free loopback port, stopped by its pid afterwards."""
    with run_chroma(tmp_path_factory.mktemp("chroma")) as port:
        yield port


#: HNSW candidate list of the compared collections: more than any of them holds, so that a
#: query visits every vector and both engines' collections answer exactly (see exact_search).
EXACT_EF = 5000


def exact_search(port: int, *names: str) -> None:
    """Create the collections ``names`` (before their stores do) with HNSW's ``ef_search`` above
    their size, so that their queries are exact.

    The two engines write the same vectors in different orders (and a sync deletes some), so
    their HNSW graphs differ, and at Chroma's default ``ef_search`` (100) a query can miss a
    different near neighbour in each (seen with the 20 QASPER papers). With the candidate list
    longer than the collection the search is exhaustive: equal vectors give equal results. The
    stores take the empty, unmarked collections as their own.
    """
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    for name in names:
        client.create_collection(name, embedding_function=None,
                                 configuration={"hnsw": {"space": "cosine", "ef_search": EXACT_EF}})


def corpus(tmp_path: Path) -> Path:
    """data/ plus the first 20 QASPER dev papers (when ../shared has them) in a folder of our own."""
    folder = tmp_path / "corpus"
    shutil.copytree(ROOT / "data", folder / "data")
    if QASPER.is_dir():
        (folder / "qasper").mkdir()
        for f in sorted(QASPER.glob("*.md"))[:20]:
            shutil.copy(f, folder / "qasper" / f.name)
    return folder


def snapshot(index: Index) -> dict:
    """What a user can observe of a store: records, vectors, registry documents and chunks, FTS rows."""
    meta = index.store.all_metadata()
    ids, vecs = index.store.vectors(sorted(meta))
    docs = {r.doc_id: (r.doc_hash, r.version, r.state, r.title, r.line_count, r.n_sections, r.n_chunks,
                       r.source_path) for r in index.registry.documents()}
    texts = {h.chunk_id: h.text for h in index.store.get(sorted(meta))}
    return {"meta": meta, "vectors": dict(zip(ids, vecs, strict=True)), "docs": docs, "texts": texts,
            "chunks": {d: index.registry.chunk_ids(d) for d in docs}, "lexical": index.registry.lexical.rows()}


def dense_view(index: Index) -> Index:
    """The same store, queried with the dense ranking alone (section score: best chunk)."""
    dense = dataclasses.replace(index.config.retrieval, hybrid=False, section_scoring="max", title_weight=0.0,
                                title_routing_docs=0, label_lookup=False)
    return Index(index.root, dataclasses.replace(index.config, retrieval=dense), index.embedder)


def assert_same(a: Index, b: Index, tolerance: float) -> float:
    """Same documents, chunk ids, metadata, texts, registry and query results; vectors within
    ``tolerance``. Returns the largest vector difference."""
    sa, sb = snapshot(a), snapshot(b)
    assert sa["docs"] == sb["docs"]
    assert set(sa["meta"]) == set(sb["meta"]) and sa["meta"] == sb["meta"]
    assert sa["texts"] == sb["texts"] and sa["chunks"] == sb["chunks"] and sa["lexical"] == sb["lexical"]
    worst = max((float(np.abs(sa["vectors"][i] - sb["vectors"][i]).max()) for i in sa["vectors"]), default=0.0)
    assert worst <= tolerance
    # Search results of the dense ranking: with equal stored data, the fused default ranking can
    # still differ at ties (BM25 and hashed-word ties are ordered by row ids, which follow the
    # order of the writes); its inputs (texts, vectors, lexical rows) are compared above.
    da, db = dense_view(a), dense_view(b)
    for q in QUESTIONS:
        ra, rb = Retriever(da).retrieve(q, k=5), Retriever(db).retrieve(q, k=5)
        assert same_ranking(ra, rb), (q, [(s.doc_id, s.node_id, s.score, s.rank_score) for s in ra],
                                      [(s.doc_id, s.node_id, s.score, s.rank_score) for s in rb])
    return worst


def same_ranking(ra: list, rb: list, tolerance: float = 1e-5) -> bool:
    """Same sections with the same scores (within ``tolerance``), in the same rank order.

    Sections are ordered by ``rank_score`` (the fused score of the default pipeline); sections
    whose rank scores tie (within ``tolerance``) may come in either order: Chroma returns equal
    distances in the order of its HNSW graph, which depends on the order of the writes, and
    reciprocal rank fusion gives equal scores to sections at equal ranks of different rankings.
    For the same reason a tie at the k-th place may be cut differently, so the last run of tied
    rank scores is compared by rank score only.
    """
    if len(ra) != len(rb):
        return False
    if not np.allclose([s.rank_score for s in ra], [s.rank_score for s in rb], rtol=0, atol=tolerance):
        return False

    def run_key(run: list) -> list:
        return sorted(((s.doc_id, s.node_id, s.start_line, s.end_line), round(s.score / tolerance)) for s in run)

    start = 0
    for i in range(1, len(ra) + 1):  # runs of tied rank scores: [start, i)
        if i < len(ra) and abs(ra[i].rank_score - ra[i - 1].rank_score) <= tolerance:
            continue
        if i < len(ra) and run_key(ra[start:i]) != run_key(rb[start:i]):
            return False
        start = i
    return True


def test_ray_engine_gives_the_single_process_result(ray_cluster, chroma_port, tmp_path):
    folder = corpus(tmp_path)
    exact_search(chroma_port, "eq-ray", "eq-local")
    on_ray = Index(tmp_path / "s-ray", config(chroma_port, "eq-ray"), HashingEmbedder())
    local = Index(tmp_path / "s-local", config(chroma_port, "eq-local"), HashingEmbedder())

    rep = ray_ingest(on_ray, [folder], show_progress=False)
    ref = local.ingest([folder], show_progress=False)
    assert rep.failed == [] and ref.failed == []
    assert (rep.documents, rep.indexed, rep.sections, rep.chunks, rep.embedded) == \
        (ref.documents, ref.indexed, ref.sections, ref.chunks, ref.embedded)
    assert rep.indexed == (23 if QASPER.is_dir() else 3)
    assert_same(on_ray, local, 0.0)  # one deterministic embedder: identical vectors
    assert on_ray.check().ok

    again = ray_ingest(on_ray, [folder], show_progress=False)  # nothing changed: nothing leaves the driver
    assert (again.indexed, again.unchanged, again.embedded, again.stage_seconds["ray_start"]) == (0, rep.indexed, 0, 0)

    # Edit a section, delete a file, add one, add an empty and an undecodable file; sync both.
    handbook = folder / "data" / "employee-handbook.md"
    handbook.write_text(handbook.read_text(encoding="utf-8").replace("##", "## Added section\n\nNew words about "
                        "parking permits and bicycle storage.\n\n##", 1), encoding="utf-8")
    (folder / "data" / "site-visit-notes.md").unlink()
    (folder / "data" / "new-note.md").write_text("# New note\n\n## Scope\n\nA note about telemetry gateways.\n",
                                                 encoding="utf-8")
    (folder / "data" / "empty.md").write_text("\n\n", encoding="utf-8")
    (folder / "data" / "garbled.md").write_bytes(b"# Garbled\n\n" + bytes([0x81, 0x8D, 0x8F, 0x90]) * 4 + b"\n")
    rep = ray_ingest(on_ray, [folder], prune=True, show_progress=False)
    ref = local.ingest([folder], prune=True, show_progress=False)
    for r in (rep, ref):
        assert (r.indexed, r.deleted) == (2, 1)
        assert [p for p, _ in r.failed] == [str(folder / "data" / "garbled.md")] and "garbled.md" in r.failed[0][1]
        assert any("empty.md" in m for _, m in r.notes)
    assert (rep.embedded, rep.cached) == (ref.embedded, ref.cached)
    assert rep.cached > 0  # the handbook's unchanged sections came from the embedding cache
    assert_same(on_ray, local, 0.0)
    assert "data/site-visit-notes" not in snapshot(on_ray)["docs"]
    assert on_ray.check().ok and local.check().ok
    on_ray.close()
    local.close()


def test_ray_engine_with_the_real_model_through_the_cli(ray_cluster, chroma_port, tmp_path):
    """Real MiniLM, both engines through the CLI: vectors within 1e-5, same query results."""
    from proxypointer.config import load_config
    from proxypointer.embed.embedder import SentenceTransformerEmbedder

    folder = tmp_path / "data"
    shutil.copytree(ROOT / "data", folder)
    exact_search(chroma_port, "cli-ray", "cli-local")
    runs = {}
    for name, extra in (("ray", ["--engine", "ray", "--ray-address", ray_cluster]), ("local", [])):
        yaml = tmp_path / f"{name}.yaml"
        yaml.write_text(f"store:\n  mode: http\n  host: 127.0.0.1\n  port: {chroma_port}\n  collection: cli-{name}\n",
                        encoding="utf-8")
        proc = subprocess.run([str(BIN / "proxypointer"), "ingest", str(folder), "--json", "-q", "--config", str(yaml),
                               "--store", str(tmp_path / f"s-{name}"), *extra],
                              capture_output=True, text=True, timeout=900, env=env())
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[name] = (json.loads(proc.stdout), load_config(yaml))
    assert runs["ray"][0]["chunks"] == runs["local"][0]["chunks"] > 0
    embedder = SentenceTransformerEmbedder(runs["ray"][1].embedding, trace_query=False)
    a = Index(tmp_path / "s-ray", runs["ray"][1], embedder)
    b = Index(tmp_path / "s-local", runs["local"][1], embedder)
    assert_same(a, b, 1e-5)
    assert a.check().ok
    a.close()
    b.close()


def test_a_worker_killed_mid_run_is_retried_by_ray(ray_cluster, chroma_port, tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(ROOT / "data", folder)
    marker = tmp_path / "killed"
    exact_search(chroma_port, "kill-worker", "kill-worker-ref")
    on_ray = Index(tmp_path / "s-ray", config(chroma_port, "kill-worker"), HashingEmbedder())
    rep = ray_ingest(on_ray, [folder], show_progress=False, embedder_factory=KillOnce(str(marker)))
    assert marker.exists()  # an embedding actor did die
    local = Index(tmp_path / "s-local", config(chroma_port, "kill-worker-ref"), HashingEmbedder())
    ref = local.ingest([folder], show_progress=False)
    assert rep.failed == [] and (rep.indexed, rep.chunks) == (ref.indexed, ref.chunks)
    assert_same(on_ray, local, 0.0)
    assert on_ray.check().ok


# -- the driver killed during the writes ------------------------------------------------------------
V1 = {f"d{k}": doc(f"Doc {k}", {"A": 6, "B": 8, "C": 5}) for k in range(10)}
V2 = {**V1, **{f"d{k}": doc(f"Doc {k}", {"A": 6, "B": 2, "D": 9}) for k in range(7)}, "new": doc("New", {"N": 8})}
# changed again before the next run, so that chunks the killed run wrote for V2 cannot pass as V3's
V3 = {**V2, "d0": doc("Doc 0", {"A": 6, "E": 4}), "d1": doc("Doc 1", {"F": 7}), "new": doc("New", {"N": 8, "M": 3})}


def replace_docs(folder: Path, docs: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in folder.glob("*.md"):
        f.unlink()
    for name, text in docs.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")


def drive(store: Path, port: int, collection: str, address: str, kill_after: str, folder: Path):
    return subprocess.run([sys.executable, str(DRIVER), str(store), str(port), collection, address, kill_after,
                           str(folder)], capture_output=True, text=True, timeout=600, env=env())


def settle(index: Index) -> None:
    """Wait until no write of the killed driver's workers is still landing (Ray reaps them)."""
    last, same = -1, 0
    deadline = time.monotonic() + 60
    while same < 3 and time.monotonic() < deadline:
        n = index.store.count()
        same, last = (same + 1, n) if n == last else (0, n)
        time.sleep(0.5)


@pytest.mark.parametrize(("kill_after", "rerun"), [(3, "local"), (40, "ray")])
def test_driver_killed_during_the_writes_leaves_old_or_new(ray_cluster, chroma_port, tmp_path, kill_after, rerun):
    """SIGKILL the driver after it took ``kill_after`` of the 67 chunk acknowledgements of a sync
    from V1 to V2: every document is at V1 or V2; the next run (either engine), of a V3 that
    changed some documents again, repairs what was in flight, embeds only what the killed run
    had not cached, and ``check`` is ok."""
    refs = {}
    for name, docs in (("v1", V1), ("v2", V2), ("v3", V3)):  # each version's chunk ids, single-process
        replace_docs(tmp_path / f"ref-{name}", docs)
        ref = Index(tmp_path / f"ref-{name}-store", config(chroma_port, f"kill-ref-{name}-{kill_after}"),
                    HashingEmbedder())
        ref.ingest([tmp_path / f"ref-{name}"], show_progress=False)
        refs[name] = {d: ref.registry.chunk_ids(d) for d in docs}
        refs[name + "-hashes"], _ = ref.registry.embeddings.live_content_hashes()
        ref.close()

    folder, store, collection = tmp_path / "docs", tmp_path / "store", f"kill-{kill_after}"
    replace_docs(folder, V1)
    first = drive(store, chroma_port, collection, ray_cluster, "-", folder)
    assert first.returncode == 0, first.stderr[-3000:]
    replace_docs(folder, V2)
    killed = drive(store, chroma_port, collection, ray_cluster, str(kill_after), folder)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]

    index = Index(store, config(chroma_port, collection), HashingEmbedder())
    settle(index)
    states = {r.doc_id: r.state for r in index.registry.documents()}
    assert "writing" in states.values()  # killed with documents in flight
    seen = visible(index)
    for d in V2:
        allowed = [refs["v2"][d]] + ([refs["v1"][d]] if d in V1 else [set()])
        assert seen.get(d, set()) in allowed, (d, sorted(seen.get(d, set())))
    cached_before = set(index.registry.embeddings.get("test-hashing-embedder", sorted(refs["v3-hashes"])))
    index.close()

    replace_docs(folder, V3)
    if rerun == "local":
        index = Index(store, config(chroma_port, collection), HashingEmbedder())
        report = index.ingest([folder], show_progress=False).to_dict()
        encoded = {hashlib.sha1(t.encode()).hexdigest() for t in index.embedder.embedded_texts}
        index.close()
        assert not encoded & cached_before
    else:
        proc = drive(store, chroma_port, collection, ray_cluster, "-", folder)
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout)
    assert report["failed"] == []
    # no chunk embedded twice across the runs: only what the killed run had not cached
    assert report["embedded"] == len(refs["v3-hashes"] - cached_before)

    index = Index(store, config(chroma_port, collection), HashingEmbedder())
    assert {d: index.registry.chunk_ids(d) for d in V3} == refs["v3"]
    assert set(index.store.all_ids()) == set().union(*refs["v3"].values())  # no stray chunk of V2 left
    index.close()
    chk = subprocess.run([str(BIN / "proxypointer"), "check", "--json", "--store", str(store), "--config",
                          str(_yaml(tmp_path, chroma_port, collection))], capture_output=True, text=True,
                         timeout=300, env=env())
    assert chk.returncode == 0 and json.loads(chk.stdout)["ok"], chk.stdout[-2000:] + chk.stderr[-2000:]


def _yaml(tmp_path: Path, port: int, collection: str) -> Path:
    path = tmp_path / "check.yaml"
    path.write_text(f"store:\n  mode: http\n  host: 127.0.0.1\n  port: {port}\n  collection: {collection}\n"
                    "chunking:\n  chunk_tokens: 40\n  overlap_tokens: 0\n", encoding="utf-8")
    return path

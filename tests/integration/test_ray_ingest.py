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

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray")

from fakes import HashingEmbedder  # noqa: E402
from ray_driver import KillOnce, config  # noqa: E402

from proxypointer.distributed import ray_ingest  # noqa: E402
from proxypointer.pipeline import Index  # noqa: E402
from proxypointer.retrieval import Retriever  # noqa: E402

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = Path(sys.executable).parent
DRIVER = HERE / "ray_driver.py"
SHARED = Path(os.environ.get("PROXYPOINTER_SHARED", ROOT.parent / "shared"))
QASPER = SHARED / "bench" / "qasper-dev" / "docs"
QUESTIONS = ["How are new employees onboarded?", "gateway telemetry retention", "site visit safety findings",
             "What dataset is used for evaluation?", "baseline results of the proposed model"]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")])
    e.setdefault("HF_HUB_OFFLINE", "1")
    e.setdefault("TRANSFORMERS_OFFLINE", "1")
    return e


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
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()  # stops the processes this init started


@pytest.fixture(scope="module")
def chroma_port(tmp_path_factory):
    """A ``chroma run`` server on a free loopback port, stopped by its pid afterwards."""
    exe = BIN / "chroma"
    if not exe.exists():
        pytest.skip("chroma CLI not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = tmp_path_factory.mktemp("chroma")
    log = (folder / "chroma.log").open("w")
    proc = subprocess.Popen([str(exe), "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port",
                             str(port)], stdout=log, stderr=subprocess.STDOUT, env=env())
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
            "chunks": {d: index.registry.chunk_ids(d) for d in docs}, "lexical": index.registry.lexical_rows()}


def assert_same(a: Index, b: Index, tolerance: float) -> float:
    """Same documents, chunk ids, metadata, texts, registry and query results; vectors within
    ``tolerance``. Returns the largest vector difference."""
    sa, sb = snapshot(a), snapshot(b)
    assert sa["docs"] == sb["docs"]
    assert set(sa["meta"]) == set(sb["meta"]) and sa["meta"] == sb["meta"]
    assert sa["texts"] == sb["texts"] and sa["chunks"] == sb["chunks"] and sa["lexical"] == sb["lexical"]
    worst = max((float(np.abs(sa["vectors"][i] - sb["vectors"][i]).max()) for i in sa["vectors"]), default=0.0)
    assert worst <= tolerance
    for q in QUESTIONS:
        ra, rb = Retriever(a).retrieve(q, k=5), Retriever(b).retrieve(q, k=5)
        assert [(s.doc_id, s.node_id, s.start_line, s.end_line) for s in ra] == \
            [(s.doc_id, s.node_id, s.start_line, s.end_line) for s in rb], q
        assert np.allclose([s.score for s in ra], [s.score for s in rb], atol=1e-5)
    return worst


def test_ray_engine_gives_the_single_process_result(ray_cluster, chroma_port, tmp_path):
    folder = corpus(tmp_path)
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
    from proxypointer.embedding import SentenceTransformerEmbedder

    folder = tmp_path / "data"
    shutil.copytree(ROOT / "data", folder)
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
    on_ray = Index(tmp_path / "s-ray", config(chroma_port, "kill-worker"), HashingEmbedder())
    rep = ray_ingest(on_ray, [folder], show_progress=False, embedder_factory=KillOnce(str(marker)))
    assert marker.exists()  # an embedding actor did die
    local = Index(tmp_path / "s-local", config(chroma_port, "kill-worker-ref"), HashingEmbedder())
    ref = local.ingest([folder], show_progress=False)
    assert rep.failed == [] and (rep.indexed, rep.chunks) == (ref.indexed, ref.chunks)
    assert_same(on_ray, local, 0.0)
    assert on_ray.check().ok


# -- the driver killed during the writes ------------------------------------------------------------
PARA = "Paragraph {i} of section {s} talks about topic {s}{i} with enough words to stand alone here."


def doc(title: str, sections: dict[str, int]) -> str:
    out = [f"# {title}", ""]
    for s, n in sections.items():
        out += [f"## {s}", ""]
        for i in range(n):
            out += [PARA.format(i=i, s=s), ""]
    return "\n".join(out)


V1 = {f"d{k}": doc(f"Doc {k}", {"A": 6, "B": 8, "C": 5}) for k in range(10)}
V2 = {**V1, **{f"d{k}": doc(f"Doc {k}", {"A": 6, "B": 2, "D": 9}) for k in range(7)}, "new": doc("New", {"N": 8})}
# changed again before the next run, so that chunks the killed run wrote for V2 cannot pass as V3's
V3 = {**V2, "d0": doc("Doc 0", {"A": 6, "E": 4}), "d1": doc("Doc 1", {"F": 7}), "new": doc("New", {"N": 8, "M": 3})}


def write_docs(folder: Path, docs: dict[str, str]) -> None:
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


def visible(index: Index) -> dict[str, set[str]]:
    """doc_id -> chunk ids a reader can get: in Chroma and at the registry's live version."""
    hits = index.store.get(sorted(index.store.all_ids()))
    out: dict[str, set[str]] = {}
    for h in Retriever(index).ranker.live(hits):
        out.setdefault(h.metadata["doc_id"], set()).add(h.chunk_id)
    return out


@pytest.mark.parametrize(("kill_after", "rerun"), [(3, "local"), (40, "ray")])
def test_driver_killed_during_the_writes_leaves_old_or_new(ray_cluster, chroma_port, tmp_path, kill_after, rerun):
    """SIGKILL the driver after it took ``kill_after`` of the 67 chunk acknowledgements of a sync
    from V1 to V2: every document is at V1 or V2; the next run (either engine), of a V3 that
    changed some documents again, repairs what was in flight, embeds only what the killed run
    had not cached, and ``check`` is ok."""
    refs = {}
    for name, docs in (("v1", V1), ("v2", V2), ("v3", V3)):  # each version's chunk ids, single-process
        write_docs(tmp_path / f"ref-{name}", docs)
        ref = Index(tmp_path / f"ref-{name}-store", config(chroma_port, f"kill-ref-{name}-{kill_after}"),
                    HashingEmbedder())
        ref.ingest([tmp_path / f"ref-{name}"], show_progress=False)
        refs[name] = {d: ref.registry.chunk_ids(d) for d in docs}
        refs[name + "-hashes"], _ = ref.registry.live_content_hashes()
        ref.close()

    folder, store, collection = tmp_path / "docs", tmp_path / "store", f"kill-{kill_after}"
    write_docs(folder, V1)
    first = drive(store, chroma_port, collection, ray_cluster, "-", folder)
    assert first.returncode == 0, first.stderr[-3000:]
    write_docs(folder, V2)
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
    cached_before = set(index.registry.cached_embeddings("test-hashing-embedder", sorted(refs["v3-hashes"])))
    index.close()

    write_docs(folder, V3)
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

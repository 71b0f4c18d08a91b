"""The ``--engine ray`` transforms and the driver's commit logic, run in this process (no cluster).

The transforms of ``proxypointer.ingest.ray.stages`` are plain functions and classes over
Arrow tables; here they are chained by hand on an embedded store, in the order Ray Data runs
them, and their result is compared with ``Index.ingest``. The cluster itself is exercised by
tests/integration/test_ray_ingest.py.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from proxypointer.config import ChunkingConfig, ProxyPointerConfig, StoreConfig  # noqa: E402
from proxypointer.errors import ConfigError  # noqa: E402
from proxypointer.ingest.ray import RayResources, check_store, ray_ingest  # noqa: E402
from proxypointer.ingest.ray import stages as stages  # noqa: E402
from proxypointer.ingest.ray.runner import _Sync  # noqa: E402
from proxypointer.ingest.stages import IngestReport, finish_sync, plan_changed, start_sync  # noqa: E402

CFG = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=40, overlap_tokens=0))
STAGES = ("read", "tree", "chunking", "embedding", "store", "registry", "ray_start")
PARA = "Paragraph {i} of section {s} talks about topic {s}{i} with enough words to stand alone here."


def doc(title: str, sections: dict[str, int]) -> str:
    out = [f"# {title}", ""]
    for s, n in sections.items():
        out += [f"## {s}", ""] + [x for i in range(n) for x in (PARA.format(i=i, s=s), "")]
    return "\n".join(out)


def write(folder, docs: dict[str, str | bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        path = folder / f"{name}.md"
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text, encoding="utf-8")


def run_stages(index, paths, *, reverse: bool = False, refuse: set[str] = frozenset(), write_batch: int = 5):
    """One sync through the transforms, in pipeline order, as ``ray_ingest`` chains them."""
    with index.write_lock(create=True):
        found = start_sync(index, paths)
        report = IngestReport(stage_seconds=dict.fromkeys(STAGES, 0.0))
        report.failed.extend(found.failed)
        report.documents = len(found.files)
        pending = {}
        for f in found.files:
            planned = plan_changed(f, index.readers[f.suffix], index.registry, index.pipeline_key, report)
            if planned is not None:
                pending[f.doc_id] = planned[0]
        root, model = str(index.root.resolve()), index.embedder.name
        owner = (index.registry.get_meta("store_id"), root)
        table = pa.Table.from_pylist([{"pending": pickle.dumps(p)} for p in pending.values()])
        parsed = stages.parse_batch(table, readers=index.readers, pipeline_key=index.pipeline_key,
                                    tree_config=index.config.tree, chunking_config=index.config.chunking,
                                    tokenizer=index.embedder.tokenizer)
        gated = stages.RegistryGate(root, model)(parsed)
        embedded = stages.EmbedActor(stages.ShippedEmbedder(index.embedder), model)(gated)
        cached = stages.CacheWriter(root, model)(embedded)
        rows = []
        for start in range(0, cached.num_rows, write_batch):
            part = cached.slice(start, write_batch)
            acks = stages.write_batch(part, store_config=index.config.store, root=root, owner=owner).to_pylist()
            for r in acks:
                if r["doc_id"] in refuse and r["kind"] == stages.CHUNK:
                    r.update(kind=stages.REFUSED, message=f"{r['doc_id']}: Chroma refused a write (test)")
            rows += acks
        sync = _Sync(index, report, pending, show_progress=False)
        sync.on_rows(rows[::-1] if reverse else rows)
        sync.finish()
        sync.close()
        finish_sync(index, found, report)
        return report, parsed


def observed(index) -> dict:
    meta = index.store.all_metadata()
    ids, vecs = index.store.vectors(sorted(meta))
    return {
        "docs": {r.doc_id: (r.version, r.state, r.n_chunks, r.title) for r in index.registry.documents()},
        "meta": meta,
        "vectors": {i: v.tobytes() for i, v in zip(ids, vecs, strict=True)},
        "lexical": index.registry.lexical.rows(),
    }


@pytest.mark.parametrize("reverse", [False, True])
def test_transforms_give_the_single_process_result(tmp_path, make_index, reverse):
    """Whatever order the acknowledgements come back in (documents before or after their chunks)."""
    write(tmp_path / "docs", {"one": doc("One", {"A": 3, "B": 4}), "two": doc("Two", {"X": 5}),
                              "empty": "\n", "bad": b"# Bad\n\n" + bytes([0x81, 0x8D, 0x8F, 0x90]) * 3})
    staged, local = make_index(CFG, tmp_path / "staged"), make_index(CFG, tmp_path / "local")
    report, _ = run_stages(staged, [tmp_path / "docs"], reverse=reverse)
    ref = local.ingest([tmp_path / "docs"], show_progress=False)
    assert (report.indexed, report.chunks, report.sections, report.embedded, report.cached) == \
        (ref.indexed, ref.chunks, ref.sections, ref.embedded, ref.cached) == (2, ref.chunks, ref.sections,
                                                                               ref.chunks, 0)
    assert [p for p, _ in report.failed] == [p for p, _ in ref.failed] == [str(tmp_path / "docs" / "bad.md")]
    assert [p for p, _ in report.notes] == [str(tmp_path / "docs" / "empty.md")]
    assert observed(staged) == observed(local)
    assert staged.check().ok


def test_cached_chunks_are_not_encoded_and_fresh_vectors_are_cached(tmp_path, make_index, fake_embedder):
    write(tmp_path / "docs", {"one": doc("One", {"A": 3, "B": 4})})
    index = make_index(CFG, tmp_path / "store")
    first, _ = run_stages(index, [tmp_path / "docs"])
    n_first = len(fake_embedder.embedded_texts)
    assert n_first == first.embedded == first.chunks
    write(tmp_path / "docs", {"one": doc("One", {"A": 3, "B": 4, "C": 2})})  # one section added
    second, parsed = run_stages(index, [tmp_path / "docs"])
    new = fake_embedder.embedded_texts[n_first:]
    assert second.cached == first.chunks and second.embedded == len(new) == second.chunks - first.chunks
    assert all("C" in t.split("\n", 1)[0] for t in new)  # only the new section's chunks were encoded
    hashes = [h for h, k in zip(parsed.column("content_hash").to_pylist(), parsed.column("kind").to_pylist(),
                                strict=True) if k == stages.CHUNK]
    assert set(index.registry.embeddings.get(fake_embedder.name, hashes)) == set(hashes)
    assert index.check().ok


def test_a_refused_document_keeps_its_old_version_and_the_rest_commit(tmp_path, make_index):
    write(tmp_path / "docs", {"one": doc("One", {"A": 3}), "two": doc("Two", {"X": 3})})
    index = make_index(CFG, tmp_path / "store")
    run_stages(index, [tmp_path / "docs"])
    old = {d: index.registry.chunk_ids(d) for d in ("one", "two")}
    write(tmp_path / "docs", {"one": doc("One", {"A": 5}), "two": doc("Two", {"X": 5})})
    report, _ = run_stages(index, [tmp_path / "docs"], refuse={"one"})
    assert [m for _, m in report.failed] == ["one: Chroma refused a write (test)"] and report.indexed == 1
    assert index.registry.chunk_ids("one") == old["one"] and index.registry.chunk_ids("two") != old["two"]
    assert index.registry.get("one").state == "ready"
    assert index.check().ok  # the chunks the writers did put in Chroma for it were rolled back


def test_gate_marks_documents_writing_once_and_never_after_their_commit(tmp_path, make_index):
    write(tmp_path / "docs", {"one": doc("One", {"A": 3})})
    index = make_index(CFG, tmp_path / "store")
    with index.write_lock(create=True):
        found = start_sync(index, [tmp_path / "docs"])
        report = IngestReport(stage_seconds=dict.fromkeys(STAGES, 0.0))
        (pending, _), = [plan_changed(f, index.readers[f.suffix], index.registry, index.pipeline_key, report)
                         for f in found.files]
    table = pa.Table.from_pylist([{"pending": pickle.dumps(pending)}])
    parsed = stages.parse_batch(table, readers=index.readers, pipeline_key=index.pipeline_key,
                                tree_config=index.config.tree, chunking_config=index.config.chunking,
                                tokenizer=index.embedder.tokenizer)
    root = str(index.root.resolve())
    assert index.registry.get("one") is None
    stages.RegistryGate(root, index.embedder.name)(parsed)
    rec = index.registry.get("one")
    assert (rec.state, rec.version, rec.pending_hash) == ("writing", "", parsed.column("doc_hash")[0].as_py())
    run_stages(index, [tmp_path / "docs"])  # commits it (the same version)
    assert index.registry.get("one").state == "ready"
    stages.RegistryGate(root, index.embedder.name)(parsed)  # a batch retried after the commit: a new actor
    assert index.registry.get("one").state == "ready"


def test_rows_have_one_schema_and_unknown_columns_are_refused():
    t = stages.rows_table([stages.make_row(stages.DOC, "a", payload=b"x"), stages.make_row(stages.CHUNK, "a")])
    assert t.schema == stages.row_schema() and t.column("kind").to_pylist() == ["doc", "chunk"]
    assert stages.rows_table([]).num_rows == 0
    with pytest.raises(KeyError, match="nope"):
        stages.make_row(stages.DOC, "a", nope=1)


def test_embed_actor_refuses_an_embedder_of_another_name(fake_embedder):
    with pytest.raises(ConfigError, match="all-MiniLM-L6-v2"):
        stages.EmbedActor(stages.ShippedEmbedder(fake_embedder), "all-MiniLM-L6-v2")


def test_embed_actor_encodes_each_distinct_text_once(fake_embedder):
    rows = [stages.make_row(stages.CHUNK, "a", content_hash=h, embed_text=t)
            for h, t in (("h1", "alpha beta"), ("h2", "gamma"), ("h1", "alpha beta"))]
    rows.append(stages.make_row(stages.CHUNK, "a", content_hash="h3", embed_text="cached", vector=b"\0" * 16))
    out = stages.EmbedActor(stages.ShippedEmbedder(fake_embedder), fake_embedder.name)(stages.rows_table(rows))
    assert fake_embedder.calls == [["alpha beta", "gamma"]]  # longest first, each once, the cached one not
    assert out.column("fresh").to_pylist() == [True, True, False, False]  # the first row of each text
    v = [np.frombuffer(b, dtype=np.float32) for b in out.column("vector").to_pylist()]
    assert np.array_equal(v[0], v[2]) and np.allclose(v[0], fake_embedder.encode(["alpha beta"])[0])


@pytest.mark.parametrize(
    ("cpus", "gpus", "expected"),
    [
        (2, 0, (1, 1.0, 0.0, 1.0, 2)),  # this machine: one actor, one CPU left to the parse tasks
        (1, 0, (1, 0.5, 0.0, 0.5, 2)),  # both fit on one CPU
        (16, 0, (15, 1.0, 0.0, 1.0, 2)),
        (16, 4, (4, 2.0, 1.0, 1.0, 2)),  # one actor per GPU, with half its share of the CPUs to tokenise
        (16, 1, (1, 8.0, 1.0, 1.0, 2)),
    ],
)
def test_resources_share_the_cluster(cpus, gpus, expected):
    r = RayResources.plan(cpus, gpus)
    assert (r.embed_actors, r.actor_cpus, r.actor_gpus, r.parse_cpus, r.writers) == expected
    assert RayResources.plan(cpus, gpus, embed_actors=3, writers=1).embed_actors == 3
    with pytest.raises(ConfigError, match="writers"):
        RayResources.plan(cpus, gpus, writers=0)
    with pytest.raises(ConfigError, match="no CPU"):
        RayResources.plan(0, gpus)


def test_embedded_store_is_refused_before_anything_is_written(tmp_path, make_index):
    index = make_index(CFG, tmp_path / "store")
    with pytest.raises(ConfigError, match="store.mode: http") as err:
        ray_ingest(index, [tmp_path])
    assert "not safe across processes" in str(err.value) and "chroma run" in str(err.value)
    assert not (tmp_path / "store").exists()
    http = make_index(ProxyPointerConfig(store=StoreConfig(mode="http")), tmp_path / "s2")
    check_store(http)  # no error
    with pytest.raises(ConfigError, match="Ray Client"):
        ray_ingest(http, [tmp_path], address="ray://head:10001")


def test_our_error_is_found_behind_rays_wrapping():
    """The CLI prints our one-line message, not Ray's traceback, when a worker raised it."""
    from proxypointer.errors import StoreError
    from proxypointer.ingest.ray.runner import _our_error

    text = ("ray::MapWorker(MapBatches(EmbedActor)).submit()\n  File \"x.py\", line 1, in f\n"
            "proxypointer.errors.ConfigError: embedding.model: the actors' embedder is 'a', the store's 'b'\n\n"
            "The above exception was the direct cause of the following exception:")
    found = _our_error(RuntimeError(text))
    assert type(found) is ConfigError and str(found) == "embedding.model: the actors' embedder is 'a', the store's 'b'"
    ours = StoreError("http://h:1: cannot reach")
    try:
        try:
            raise ours
        except StoreError as err:
            raise RuntimeError("wrapped") from err
    except RuntimeError as wrapped:
        assert _our_error(wrapped) is ours
    assert _our_error(RuntimeError("proxypointer.errors.NoSuchError: x")) is None
    assert _our_error(ValueError("a bug")) is None

"""The ingest stages on Ray Data: ``proxypointer ingest PATH --engine ray``.

The driver (this process) holds the store's write lock for the whole run and does what needs
the registry, which lives in the store folder beside it: it settles what an interrupted run
left (``ingest.start_sync``), plans every file (``ingest.plan_changed``: unchanged files end
there and never leave the driver), and commits each document once all its chunks are in
Chroma (``ingest.commit_document``: registry flip, then the old version's chunks deleted).
Ray Data does the rest as one streaming pipeline (:mod:`.ray_stages`):

``from_items(changed files)`` -> parse + chunk (tasks) -> registry gate (one actor on this
node: marks each document ``writing``, fills in cached vectors) -> embed (``map_batches`` over
an ``ActorPoolStrategy`` pool, ``num_gpus=1`` per actor when the cluster has GPUs) -> cache
writer (one actor on this node) -> write to the Chroma server (a bounded pool of tasks) ->
acknowledgements back to the driver.

Guarantees are those of the single-process runner (docs/lifecycle.md): a document is marked
``writing`` before any of its chunks can reach Chroma and made live only after all of them
are there, so killing the driver or any worker leaves each document at its old or its new
version, and the next run of either engine repairs what was in flight; fresh vectors reach
the embedding cache before Chroma, so a second run does not embed them again. A worker that
dies is retried by Ray Data (task retries, actor restarts), not by this code.

Requirements: a Chroma server (``store.mode: http``; the embedded store is refused, it is not
safe for several writing processes), and, on a cluster of several machines, the source files
and this package at the same paths on every node; the driver runs on a node of the cluster
(Ray Client, ``ray://``, is refused).
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import errors
from ...embed.embedder import SentenceTransformerEmbedder
from ...errors import ConfigError, EmptyDocumentError, MissingDependencyError, ProxyPointerError
from ...progress import progress_bar, tick
from ..local import EMBED_GROUP_BATCHES
from ..maintenance import repair_one
from ..stages import (
    IngestReport,
    Pending,
    PreparedDocument,
    begin_documents,
    commit_document,
    empty_note,
    finish_sync,
    plan_changed,
    start_sync,
    warn_approximate_sizes,
)
from . import stages as stages

if TYPE_CHECKING:
    from ...embed.embedder import Embedder
    from ...store.folder import Store

__all__ = ["PARSE_BATCH_DOCS", "WRITE_BATCH_CHUNKS", "RayResources", "check_store", "ray_ingest"]

logger = logging.getLogger(__name__)

#: Documents per parse call: words are counted once per call (``TokenCountCache``).
PARSE_BATCH_DOCS = 8

#: Chunks per Chroma write call at most (capped by the server's max batch size): Chroma 1.5.9
#: wrote ~420 chunks/s in 1,000-record calls and ~170 in 40-record ones (docs/benchmarks.md).
WRITE_BATCH_CHUNKS = 1000

#: Writer tasks at once: Chroma serialises writes to one collection, so more add little.
DEFAULT_WRITERS = 2


@dataclass(frozen=True, slots=True)
class RayResources:
    """How the pipeline's stages use the cluster (from ``ray.cluster_resources()``).

    Attributes:
        embed_actors: Embedding actors (one model each).
        actor_cpus: CPUs reserved per embedding actor (torch uses as many threads).
        actor_gpus: GPUs per embedding actor (1 when the cluster has GPUs, else 0).
        parse_cpus: CPUs reserved per parse task.
        writers: Writer tasks at once.
    """

    embed_actors: int
    actor_cpus: float
    actor_gpus: float
    parse_cpus: float
    writers: int

    @classmethod
    def plan(
        cls, cpus: float, gpus: float, embed_actors: int | None = None, writers: int | None = None
    ) -> RayResources:
        """Share a cluster of ``cpus`` CPUs and ``gpus`` GPUs between the stages.

        GPUs: one actor per GPU (``num_gpus=1``) with half of that GPU's share of the CPUs
        (at least 1): it tokenises on the CPU, about 1,400 texts/s per core here against
        ~9,800 (fp32) to ~46,000 (fp16) texts/s for MiniLM on an H200 (docs/scaling.md); the
        other half is left to the parse tasks. CPUs only: one actor per CPU but one, which is
        left to the parse tasks; on a 1-CPU cluster the actor and the parse tasks get half a
        CPU each, so that both can run. The registry actors and the writers reserve no CPU
        (they wait on SQLite and the Chroma server).

        Args:
            cpus: CPUs in the cluster.
            gpus: GPUs in the cluster.
            embed_actors: Override the number of embedding actors.
            writers: Override the number of writer tasks (default :data:`DEFAULT_WRITERS`).

        Raises:
            ConfigError: If the cluster has no CPU, or an override is < 1.
        """
        if cpus <= 0:
            raise ConfigError(f"the Ray cluster has no CPU ({cpus}); start it with at least one")
        for name, value in (("embed_actors", embed_actors), ("writers", writers)):
            if value is not None and value < 1:
                raise ConfigError(f"{name}: expected an int >= 1, got {value}")
        half = cpus < 2
        if gpus >= 1:
            actor_cpus = max(1.0, float(int(cpus / gpus / 2))) if not half else cpus / 2
            return cls(embed_actors or int(gpus), actor_cpus, 1.0, 1.0 if not half else cpus / 2,
                       writers or DEFAULT_WRITERS)
        return cls(
            embed_actors or max(1, int(cpus) - 1),
            cpus / 2 if half else 1.0,
            0.0,
            cpus / 2 if half else 1.0,
            writers or DEFAULT_WRITERS,
        )


def check_store(index: Store) -> None:
    """Refuse a store that several processes cannot write: ``--engine ray`` needs a Chroma server.

    Raises:
        ConfigError: If ``store.mode`` is not ``http``, with the cure.
    """
    if index.config.store.mode != "http":
        raise ConfigError(
            f"{index.root}: --engine ray writes from several processes, and the embedded Chroma store "
            f"(store.mode: {index.config.store.mode}, a PersistentClient) is not safe across processes; "
            f"run a server (`chroma run --path DIR --port 8000`) and set store.mode: http, store.host and "
            f"store.port in the config"
        )


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - the extra's other half
    except ImportError as err:
        raise MissingDependencyError("--engine ray needs Ray Data; pip install 'proxypointer[ray]'") from err
    return ray


def _check_address(address: str | None) -> None:
    """Refuse a Ray Client address (``ray://``): the driver must run beside the store folder.

    Raises:
        ConfigError: Naming the address and the cure.
    """
    if address and address.startswith("ray://"):
        raise ConfigError(
            f"--ray-address {address}: Ray Client is not supported: the driver must run on a node of the "
            f"cluster, beside the store folder; run proxypointer there with --ray-address auto, or submit it "
            f"with `ray job submit`"
        )


def _connect(ray: Any, address: str | None) -> bool:
    """Join (``address``) or start a Ray cluster unless this process is already on one.

    Returns:
        True if this call started or joined it (the caller shuts it down after the run).
    """
    if ray.is_initialized():
        return False
    ray.init(address=address or None, include_dashboard=False, logging_level=logging.WARNING)
    return True


#: How one of our errors reads in the traceback text Ray passes back from a worker.
_OUR_ERROR_LINE = re.compile(r"proxypointer\.errors\.(\w+): (.+)")


def _our_error(err: BaseException) -> ProxyPointerError | None:
    """Find the ProxyPointerError behind a Ray task failure, if one caused it.

    Ray Data wraps a transform's exception in its own (``UserCodeException``; an actor whose
    constructor raised becomes an ``ActorDiedError``) and only the traceback text crosses the
    process boundary: our error is rebuilt from its last line there when no exception object
    of ours is in the chain.
    """
    seen: set[int] = set()
    stack: list[BaseException | None] = [err]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ProxyPointerError):
            return e
        stack.extend([e.__cause__, e.__context__, getattr(e, "cause", None)])
    for match in _OUR_ERROR_LINE.finditer(str(err)):
        cls = getattr(errors, match.group(1), None)
        if isinstance(cls, type) and issubclass(cls, ProxyPointerError):
            return cls(match.group(2).strip())
    return None


def _factory(index: Store, embedder_factory: Callable[[], Embedder] | None) -> Callable[[], Embedder]:
    """Choose what each embedding actor calls to build its embedder (never the driver's loaded model)."""
    if embedder_factory is not None:
        return embedder_factory
    emb = index.embedder
    if isinstance(emb, SentenceTransformerEmbedder):
        return stages.SentenceTransformerFactory(emb.config, emb.quantize_int8)
    return stages.ShippedEmbedder(emb)


@dataclass(slots=True)
class _InFlight:
    """A document between the parse stage and its commit (the driver's per-document state)."""

    pending: Pending
    doc: PreparedDocument | None = None
    written: set[str] = field(default_factory=set)
    refused: str | None = None


class _Sync:
    """The driver's side of one run: progress, acknowledgements, commits, failures."""

    def __init__(self, index: Store, report: IngestReport, pending: dict[str, Pending], show_progress: bool) -> None:
        self.index = index
        self.registry = index.registry
        self.store = index.store
        self.report = report
        self.docs = {doc_id: _InFlight(p) for doc_id, p in pending.items()}
        self.rollback: list[str] = []
        self.doc_bar = progress_bar(total=report.documents, desc="documents", unit="doc", disable=not show_progress,
                                    position=0)
        self.chunk_bar = progress_bar(total=0, desc="chunks", unit="chunk", disable=not show_progress, position=1)

    def close(self) -> None:
        self.chunk_bar.close()
        self.doc_bar.close()

    def done(self, n: int = 1) -> None:
        self.doc_bar.update(n)

    def on_rows(self, rows: list[dict[str, Any]]) -> None:
        """Take one batch of rows coming out of the writers."""
        st = self.report.stage_seconds
        for r in rows:
            for stage in ("read", "tree", "chunking", "embed", "store"):
                key = "embedding" if stage == "embed" else stage
                st[key] += r[f"t_{stage}"]
            kind, doc_id = r["kind"], r["doc_id"]
            state = self.docs.get(doc_id)
            if state is None:  # already settled (a row repeated by a retry)
                continue
            path = state.pending.file.path
            if kind == stages.CHUNK:
                if r["chunk_id"] not in state.written:
                    state.written.add(r["chunk_id"])
                    self.chunk_bar.update(1)
                    self.report.embedded += r["fresh"]
                    self.report.cached += r["cached"]
            elif kind == stages.DOC:
                state.doc = pickle.loads(r["payload"])
                self.chunk_bar.total += len(state.doc.chunks)
                tick(self.chunk_bar)
                self.report.notes.extend((path, w) for w in state.doc.warnings)
            elif kind == stages.EMPTY:
                note = empty_note(self.registry, state.pending.file, EmptyDocumentError(r["message"]))
                self.report.skipped += 1
                self.report.notes.append((path, note))
                logger.info("%s", note)
                self._settle(doc_id)
                continue
            elif kind == stages.FAILED:
                self._fail(doc_id, r["message"])
                continue
            elif kind == stages.REFUSED:
                state.refused = r["message"]
            self._maybe_commit(doc_id)

    def _fail(self, doc_id: str, message: str) -> None:
        self.report.failed.append((self.docs[doc_id].pending.file.path, message))
        logger.info("failed: %s", message)
        self._settle(doc_id)

    def _settle(self, doc_id: str) -> None:
        del self.docs[doc_id]
        self.done()

    def _maybe_commit(self, doc_id: str) -> None:
        state = self.docs[doc_id]
        if state.refused is not None:
            # Chunks of it may still be on their way to Chroma: undo it after the pipeline.
            self.rollback.append(doc_id)
            self._fail(doc_id, state.refused)
            return
        doc = state.doc
        if doc is None or len(state.written) < len(doc.chunks):
            return
        p = state.pending
        t = time.perf_counter()
        # stores its text (and page map); it is already marked `writing` if its chunks passed the gate
        begin_documents(self.registry, [(doc, p.file.real_path)])
        commit_document(self.registry, self.store, doc, p.file.real_path, p.mtime, p.size)
        self.report.stage_seconds["registry"] += time.perf_counter() - t
        self.report.indexed += 1
        self.report.sections += doc.n_sections
        self.report.chunks += len(doc.chunks)
        self._settle(doc_id)

    def finish(self) -> None:
        """After the pipeline: fail what never completed, undo what was refused."""
        for doc_id in list(self.docs):
            self.rollback.append(doc_id)
            self._fail(doc_id, f"{self.docs[doc_id].pending.file.path}: not all chunks came back from the workers")
        for doc_id in self.rollback:
            try:
                repair_one(self.registry, self.store, self.registry.get(doc_id))
            except ProxyPointerError as err:
                logger.error("%s: could not roll back (%s); the next run repairs it", doc_id, err)


def _pipeline(
    ray: Any,
    index: Store,
    pending: dict[str, Pending],
    res: RayResources,
    make_embedder: Callable[[], Embedder],
) -> Any:
    """Build the Ray Data pipeline over the changed files (lazy: it runs when iterated)."""
    cfg = index.config
    root = str(index.root.resolve())
    store_id = index.registry.get_meta("store_id")
    owner = (store_id, root) if store_id else None
    here = {"ray.io/node-id": ray.get_runtime_context().get_node_id()}  # beside the registry
    model = index.embedder.name
    warn_approximate_sizes(index.embedder)
    items = [{"pending": pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL)} for p in pending.values()]
    # one block per parse batch, so that the parse tasks (and the stages after) run side by side
    ds = ray.data.from_items(items, override_num_blocks=-(-len(items) // PARSE_BATCH_DOCS))
    ds.context.enable_progress_bars = False  # the driver shows its own bars
    ds = ds.map_batches(
        stages.parse_batch,
        batch_size=PARSE_BATCH_DOCS,
        batch_format="pyarrow",
        fn_kwargs={
            "readers": index.readers,
            "pipeline_key": index.pipeline_key,
            "tree_config": cfg.tree,
            "chunking_config": cfg.chunking,
            "tokenizer": index.embedder.tokenizer,
        },
        num_cpus=res.parse_cpus,
    )
    ds = ds.map_batches(
        stages.RegistryGate,
        fn_constructor_kwargs={"root": root, "model": model},
        compute=ray.data.ActorPoolStrategy(size=1),
        batch_size=None,
        batch_format="pyarrow",
        num_cpus=0,
        label_selector=here,
    )
    ds = ds.map_batches(
        stages.EmbedActor,
        fn_constructor_kwargs={"make_embedder": make_embedder, "model": model},
        compute=ray.data.ActorPoolStrategy(size=res.embed_actors),
        batch_size=cfg.embedding.batch_size * EMBED_GROUP_BATCHES,
        batch_format="pyarrow",
        num_cpus=res.actor_cpus,
        num_gpus=res.actor_gpus or None,
    )
    ds = ds.map_batches(
        stages.CacheWriter,
        fn_constructor_kwargs={"root": root, "model": model},
        compute=ray.data.ActorPoolStrategy(size=1),
        batch_size=None,
        batch_format="pyarrow",
        num_cpus=0,
        label_selector=here,
    )
    return ds.map_batches(
        stages.write_batch,
        fn_kwargs={"store_config": cfg.store, "root": root, "owner": owner},
        compute=ray.data.TaskPoolStrategy(size=res.writers),
        batch_size=min(WRITE_BATCH_CHUNKS, index.store.max_batch),
        batch_format="pyarrow",
        num_cpus=0,
    )


def ray_ingest(
    index: Store,
    paths: Sequence[str | Path],
    *,
    address: str | None = None,
    prune: bool = False,
    include_hidden: bool = False,
    show_progress: bool = True,
    embed_actors: int | None = None,
    writers: int | None = None,
    embedder_factory: Callable[[], Embedder] | None = None,
) -> IngestReport:
    """Sync the index with source files on Ray Data (``proxypointer ingest --engine ray``).

    Same result as ``Index.ingest`` (documents, chunk ids, metadata, vectors) and the same
    guarantees; see the module docstring for the pipeline. Holds ``index.write_lock`` for the
    whole run, so a CLI ingest or a server writer on the same store waits. Ray is started
    only when some file changed.

    Args:
        index: The index; its config must say ``store.mode: http``.
        paths: Files or folders.
        address: Ray cluster to join (``auto``, ``HOST:6379``); None starts a local one (or
            joins the cluster of ``RAY_ADDRESS``). A process already on a cluster uses it.
        prune: Also delete documents whose files are gone from the given folders, and drop
            embedding-cache entries no live chunk uses.
        include_hidden: Also read hidden and tool folders (see ``discovery``).
        show_progress: Show tqdm bars (documents, chunks written) on stderr.
        embed_actors: Embedding actors (default: one per GPU, or one per CPU but one).
        writers: Writer tasks at once (default :data:`DEFAULT_WRITERS`).
        embedder_factory: Builds the embedder inside each actor; defaults to a fresh copy of
            ``index.embedder`` (a sentence-transformers model is loaded by each actor, never
            shipped).

    Returns:
        The report; ``stage_seconds`` sums the workers' seconds per stage (they overlap), and
        ``ray_start`` is the wall time of joining or starting the cluster. ``embedded`` counts
        texts encoded: a text that repeats in several embedding batches of one run (rare:
        chunk texts carry their breadcrumb) is encoded once per batch.

    Raises:
        ConfigError: If the store is not a Chroma server, the address is a Ray Client one, or
            the store was built with another model.
        MissingDependencyError: If Ray Data is not installed (extra ``ray``).
        LockError: If another writer holds the store past ``store.lock_timeout_s``.
        StoreError: If Chroma cannot be reached or refuses the run's collection.
    """
    check_store(index)
    _check_address(address)
    ray = _import_ray()
    with index.write_lock(create=True):
        t0 = time.perf_counter()
        found = start_sync(index, paths, include_hidden=include_hidden)
        stage_names = ("read", "tree", "chunking", "embedding", "store", "registry", "ray_start")
        report = IngestReport(stage_seconds=dict.fromkeys(stage_names, 0.0))
        report.failed.extend(found.failed)
        report.documents = len(found.files) + sum(1 for p, _ in found.failed if os.path.isfile(p))
        registry, key = index.registry, index.pipeline_key
        pending: dict[str, Pending] = {}
        for file in found.files:
            planned = plan_changed(file, index.readers[file.suffix], registry, key, report)
            if planned is not None:
                pending[file.doc_id] = planned[0]  # the bytes stay here: the workers read the file
        if pending:
            _run(ray, index, pending, report, address, show_progress, embed_actors, writers,
                 _factory(index, embedder_factory))
        finish_sync(index, found, report, prune=prune, started=t0)
        return report


def _run(
    ray: Any,
    index: Store,
    pending: dict[str, Pending],
    report: IngestReport,
    address: str | None,
    show_progress: bool,
    embed_actors: int | None,
    writers: int | None,
    make_embedder: Callable[[], Embedder],
) -> None:
    """Run the pipeline over the changed files and commit each document as it completes."""
    t = time.perf_counter()
    started = _connect(ray, address)
    report.stage_seconds["ray_start"] = time.perf_counter() - t
    sync = _Sync(index, report, pending, show_progress)
    sync.done(report.documents - len(pending))  # unchanged and failed files are done already
    try:
        total = ray.cluster_resources()
        res = RayResources.plan(total.get("CPU", 0.0), total.get("GPU", 0.0), embed_actors, writers)
        logger.info("ray: %d changed files; %s", len(pending), res)
        ds = _pipeline(ray, index, pending, res, make_embedder)
        try:
            for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
                sync.on_rows(batch.to_pylist())
        except ProxyPointerError:
            raise
        except Exception as err:  # a worker's failure arrives wrapped by Ray: surface ours
            ours = _our_error(err)
            if ours is None:
                raise
            raise ours from err
        sync.finish()
    finally:
        sync.close()
        if started:
            ray.shutdown()

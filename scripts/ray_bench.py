"""Measure ``ingest --engine ray`` on this machine for docs/scaling.md (one run per call).

Starts a ``chroma run`` server on a free loopback port (stopped by its pid at the end) and, for
``--engine ray``, a Ray local cluster of ``--cpus`` CPUs; ingests the first ``--limit`` files of
``--docs`` into a fresh store; prints one JSON line with the wall time, the report, per-stage
worker seconds, throughputs, the driver's memory, the registry's size per chunk (by table,
after ``VACUUM``) and the machine's load.

    nice -n 10 .venv/bin/python scripts/ray_bench.py --docs ../shared/bench/qasper-dev/docs \
        --limit 20 --engine ray --cpus 2 --embedder real

``--embedder fake`` uses the hashing embedder of tests/fakes.py (no model): the run is then
bound by parsing and writing, which is how the writer throughput is measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def rss_mb() -> float:
    """Current resident memory of this process, MB (from /proc)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def registry_sizes(store: Path, chunks: int) -> dict:
    """Bytes per chunk of the store folder after ``VACUUM``: the registry by table (sqlite's
    ``dbstat``; FTS5 shadow tables summed as ``fts5``, indexes as ``indexes``) and the other
    files (the stored sources)."""
    import sqlite3

    packed = store / "vacuumed.sqlite3"
    with sqlite3.connect(store / "registry.sqlite3") as db:
        db.execute("VACUUM INTO ?", (str(packed),))
    with sqlite3.connect(packed) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        sizes: dict[str, int] = {}
        for name, size in db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
            key = "fts5" if "fts" in name else name if name in tables else "indexes"
            sizes[key] = sizes.get(key, 0) + size
    total = packed.stat().st_size
    packed.unlink()
    other = sum(f.stat().st_size for f in store.rglob("*") if f.is_file() and not f.name.startswith("registry."))
    n = max(1, chunks)
    return {"registry": round(total / n), "by_table": {k: round(v / n) for k, v in sorted(sizes.items())},
            "stored_sources": round(other / n)}


def start_chroma(folder: Path) -> tuple[subprocess.Popen, int]:
    import chromadb

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(folder), "--host",
                             "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
            return proc, port
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("chroma run did not start") from None
            time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--engine", choices=["ray", "local"], default="ray")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--writers", type=int, default=None)
    ap.add_argument("--embedder", choices=["real", "fake"], default="real")
    ap.add_argument("--trace", action="store_true", help="tracemalloc the driver (slower)")
    args = ap.parse_args()

    from proxypointer.config import ProxyPointerConfig
    from proxypointer.index import Index
    from proxypointer.ingest.ray import ray_ingest

    tmp = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    chroma, port = start_chroma(tmp / "chroma")
    try:
        corpus = tmp / "corpus"
        corpus.mkdir()
        for f in sorted(Path(args.docs).glob("*.md"))[: args.limit]:
            shutil.copy(f, corpus / f.name)
        cfg = ProxyPointerConfig()
        cfg = dataclasses.replace(cfg, store=dataclasses.replace(cfg.store, mode="http", host="127.0.0.1", port=port,
                                                                collection="bench"))
        embedder = None
        if args.embedder == "fake":
            from fakes import HashingEmbedder

            embedder = HashingEmbedder()
        index = Index(tmp / "store", cfg, embedder)
        load_before = os.getloadavg()
        rss_before = rss_mb()
        ray_start = 0.0
        if args.engine == "ray":
            import ray

            t = time.perf_counter()
            ray.init(num_cpus=args.cpus, include_dashboard=False, logging_level="WARNING",
                     runtime_env={"env_vars": {"PYTHONPATH": str(ROOT / "tests")}})
            ray_start = time.perf_counter() - t
        if args.trace:
            tracemalloc.start()
        rss_start = rss_mb()
        t = time.perf_counter()
        if args.engine == "ray":
            report = ray_ingest(index, [corpus], show_progress=False, writers=args.writers)
        else:
            report = index.ingest([corpus], show_progress=False)
        wall = time.perf_counter() - t
        traced = tracemalloc.get_traced_memory()[1] / 2**20 if args.trace else None
        st = report.stage_seconds
        db_bytes = sum(f.stat().st_size for f in (tmp / "store").glob("registry.sqlite3*"))
        out = {
            "engine": args.engine, "cpus": args.cpus, "embedder": args.embedder, "docs": args.limit,
            "writers": args.writers, "wall_s": round(wall, 1), "ray_init_s": round(ray_start, 1),
            "report": report.to_dict(),
            "embed_chunks_per_s_per_worker": round(report.embedded / st["embedding"], 1) if st["embedding"] else None,
            "write_chunks_per_s_per_writer": round(report.chunks / st["store"], 1) if st["store"] else None,
            "chunks_per_s_overall": round(report.chunks / wall, 1),
            "driver_rss_mb": {"before": round(rss_before, 1), "after_ray_init": round(rss_start, 1),
                              "end": round(rss_mb(), 1),
                              "peak": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)},
            "driver_traced_peak_mb": round(traced, 2) if traced is not None else None,
            "registry_bytes_per_chunk": round(db_bytes / max(1, report.chunks)),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        }
        index.close()
        parse_s = sum(st.get(k, 0.0) for k in ("read", "tree", "chunking"))
        out["parse_ms_per_chunk"] = round(1000 * parse_s / max(1, report.chunks), 2)
        out["commit_chunks_per_s"] = round(report.chunks / st["registry"], 1) if st.get("registry") else None
        out["store_bytes_per_chunk_vacuumed"] = registry_sizes(tmp / "store", report.chunks)
        server = sum(f.stat().st_size for f in (tmp / "chroma").rglob("*") if f.is_file())
        out["chroma_server_bytes_per_chunk"] = round(server / max(1, report.chunks))  # its folder, on disk
        print(json.dumps(out))
    finally:
        if "ray" in sys.modules:  # the local cluster this run started, also when it failed
            sys.modules["ray"].shutdown()
        os.kill(chroma.pid, signal.SIGTERM)
        chroma.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Serving load: queries/s and p50/p95 latency through ``serve http`` vs ``Retriever.retrieve``.

Usage:
    nice -n 10 .venv/bin/python scripts/bench_serve.py [--docs data] [--store DIR]
        [--clients 1,4,16] [--requests 160] [--threads 4] [--json results/bench-serve.json]

Builds a store of ``--docs`` with the real model (unless ``--store`` is given), then:

1. in-process: ``Retriever.retrieve(q, k=5)`` one query after another (the library alone);
2. starts ``proxypointer serve http`` on a free loopback port (a subprocess, stopped by pid at
   the end) and sends ``POST /query {"query": q, "k": 5}`` from 1, 4 and 16 client threads at
   once (one keep-alive connection each), ``--requests`` per level.

Every query is distinct (a section title of the corpus in one of several question forms,
with a number), so the query-vector cache never answers and every request embeds its query.
Latency is per request, measured by the client (the in-process figure by the caller); q/s is
requests divided by the wall time of the level. Client threads run on the same machine as the
server and take CPU from it. Prints a markdown table and writes the JSON with the machine's
load average before and after each level.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FORMS = (
    "What does the document say about {}?",
    "{}: what are the rules?",
    "Explain {} in detail",
    "Where is {} described?",
    "Summarise {}",
    "Which requirements apply to {}?",
)


def _queries(store: Path, n: int) -> list[str]:
    """``n`` distinct questions built from the section titles of the store."""
    from proxypointer.config import ProxyPointerConfig
    from proxypointer.index import Index

    titles: list[str] = []
    with Index(store, ProxyPointerConfig()) as index:
        for rec in index.registry.documents():
            titles += [row[1] for row in json.loads(index.registry.tree_json(rec.doc_id) or "[]")]
    out = []
    i = 0
    while len(out) < n:
        title, form = titles[i % len(titles)], FORMS[(i // len(titles)) % len(FORMS)]
        out.append(form.format(title) + f" ({i})")
        i += 1
    return out


def _stats(latencies: list[float], wall: float) -> dict[str, float]:
    return {
        "requests": len(latencies),
        "qps": round(len(latencies) / wall, 2),
        "p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 1),
        "p95_ms": round(float(np.percentile(latencies, 95)) * 1000, 1),
        "wall_s": round(wall, 2),
    }


def _in_process(store: Path, queries: list[str]) -> dict[str, float]:
    from proxypointer.config import ProxyPointerConfig
    from proxypointer.index import Index
    from proxypointer.retrieve.retriever import Retriever

    with Index(store, ProxyPointerConfig()) as index:
        retriever = Retriever(index)
        retriever.retrieve("warm up the model and the traced encoder", k=5)
        latencies = []
        t0 = time.perf_counter()
        for q in queries:
            t = time.perf_counter()
            retriever.retrieve(q, k=5)
            latencies.append(time.perf_counter() - t)
        return _stats(latencies, time.perf_counter() - t0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _through_http(url: str, queries: list[str], clients: int) -> dict[str, float]:
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    parts = [queries[i::clients] for i in range(clients)]
    start = threading.Barrier(clients + 1)

    def client(mine: list[str]) -> None:
        with httpx.Client(base_url=url, timeout=300) as http:
            http.get("/healthz")  # connect before the clock starts
            start.wait()
            for q in mine:
                t = time.perf_counter()
                r = http.post("/query", json={"query": q, "k": 5})
                took = time.perf_counter() - t
                with lock:
                    latencies.append(took)
                    if r.status_code != 200:
                        errors.append(f"{r.status_code}: {r.text[:200]}")

    threads = [threading.Thread(target=client, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise SystemExit(f"{len(errors)} requests failed, e.g. {errors[0]}")
    return _stats(latencies, wall)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=Path, default=ROOT / "data", help="corpus to index (default data/)")
    ap.add_argument("--store", type=Path, help="an existing store (built with the default model) instead")
    ap.add_argument("--clients", default="1,4,16", help="concurrent clients per level")
    ap.add_argument("--requests", type=int, default=160, help="requests per level (and in-process)")
    ap.add_argument("--threads", type=int, default=4, help="serve.threads of the server")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    levels = [int(c) for c in args.clients.split(",")]
    tmp = tempfile.TemporaryDirectory(prefix="bench-serve-")
    store = args.store
    if store is None:
        from proxypointer.config import ProxyPointerConfig
        from proxypointer.index import Index

        store = Path(tmp.name) / "store"
        with Index(store, ProxyPointerConfig()) as index:
            report = index.ingest([args.docs], show_progress=False)
        print(f"store: {report.summary()}", file=sys.stderr)
    queries = _queries(store, args.requests * (len(levels) + 1))
    result: dict[str, object] = {"store": str(store), "docs": str(args.docs), "threads": args.threads}
    result["load_before"] = os.getloadavg()
    result["in_process"] = _in_process(store, queries[: args.requests])
    print(f"in-process: {result['in_process']}", file=sys.stderr)

    cfg = Path(tmp.name) / "serve.yaml"
    cfg.write_text(f"serve:\n  threads: {args.threads}\n", encoding="utf-8")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PROXYPOINTER_TOKEN"}
    cmd = [sys.executable, "-m", "proxypointer", "serve", "http", "--store", str(store), "--port", str(port)]
    server = subprocess.Popen([*cmd, "--config", str(cfg)], env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 300
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            try:
                httpx.get(url + "/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.5)
        _through_http(url, [f"warm up {i}" for i in range(8)], 4)
        result["http"] = {}
        for n, clients in enumerate(levels, 1):
            part = queries[n * args.requests : (n + 1) * args.requests]
            load = os.getloadavg()
            figures = _through_http(url, part, clients)
            figures["load_before"] = [round(x, 2) for x in load]
            figures["load_after"] = [round(x, 2) for x in os.getloadavg()]
            result["http"][str(clients)] = figures
            print(f"http, {clients} clients: {figures}", file=sys.stderr)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        tmp.cleanup()
    result["load_after"] = os.getloadavg()
    rows = [("in-process `Retriever.retrieve`", "1", result["in_process"])]
    rows += [("HTTP `POST /query`", c, f) for c, f in result["http"].items()]
    print("| path | clients | queries/s | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for name, clients, f in rows:
        print(f"| {name} | {clients} | {f['qps']} | {f['p50_ms']} | {f['p95_ms']} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

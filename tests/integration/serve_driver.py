"""Run a proxypointer server on a store with the test embedder (tests/fakes.py) or the real model.

Usage: python serve_driver.py STORE {http,mcp,mcp-http} [--host H] [--port P] [--allow-write]
       [--root DIR]... [--threads N] [--max-body N] [--real-model] [--request-timeout S]

The integration tests start it as a subprocess (its pid is theirs to stop) so the servers
run exactly as ``proxypointer serve`` runs them, without loading the real model when the
model is not what a test is about.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxypointer.config import ProxyPointerConfig
from proxypointer.serve import run_http, run_mcp
from proxypointer.serve.service import Service

DRIVER = Path(__file__).resolve()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(**extra: str) -> dict[str, str]:
    """Environment for a server subprocess: offline model hub, no token unless given."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PROXYPOINTER_TOKEN"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


class Server:
    """A server subprocess started by a test; stopped by its pid (``stop``), never by name."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, port: int | None = None) -> None:
        import subprocess

        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, str(DRIVER), *args, "--port", str(self.port)]
        import tempfile

        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, env=env or server_env())

    def stderr(self) -> str:
        """What the server wrote to stderr so far."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def wait_ready(self, path: str = "/healthz", timeout: float = 120.0) -> Server:
        """Poll until ``path`` answers (any status); raise with the server's stderr if it died."""
        import time

        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}: {self.stderr()[-3000:]}")
            try:
                httpx.get(self.url + path, timeout=2)
                return self
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"server not ready after {timeout} s")

    def stop(self) -> None:
        """Terminate the process (SIGTERM, then SIGKILL after 20 s) and reap it."""
        import subprocess

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        self.log.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("store")
    p.add_argument("kind", choices=["http", "mcp", "mcp-http"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--allow-write", action="store_true")
    p.add_argument("--root", action="append", default=[])
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--max-body", type=int, default=65536)
    p.add_argument("--token-env", default="PROXYPOINTER_TOKEN")
    p.add_argument("--real-model", action="store_true")
    p.add_argument("--request-timeout", type=float, default=30.0)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    base = ProxyPointerConfig()
    serve = dataclasses.replace(
        base.serve,
        threads=args.threads,
        max_body_bytes=args.max_body,
        ingest_roots=tuple(args.root),
        token_env=args.token_env,
        request_timeout_s=args.request_timeout,
    )
    config = dataclasses.replace(base, serve=serve)
    embedder = None
    if not args.real_model:
        from fakes import HashingEmbedder

        embedder = HashingEmbedder()
    service = Service(args.store, config, embedder, allow_write=args.allow_write)

    def ready(line: str) -> None:
        print(f"ready: {line}", file=sys.stderr, flush=True)

    try:
        if args.kind == "http":
            run_http(service, args.host, args.port, ready)
        else:
            run_mcp(service, http=args.kind == "mcp-http", host=args.host, port=args.port, ready=ready)
    finally:
        service.close()


if __name__ == "__main__":
    main()

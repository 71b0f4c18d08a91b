"""Subprocess driver for tests/integration/test_ray_ingest.py (not a test module).

``python ray_driver.py STORE PORT COLLECTION ADDRESS KILL_AFTER PATH...`` ingests PATHs with
``--engine ray`` (``ray_ingest``) into STORE, a Chroma server collection on 127.0.0.1:PORT,
joining the Ray cluster at ADDRESS, with the fake hashing embedder and small chunks and write
batches (4 chunks), so that a run has many writer tasks. When KILL_AFTER is a number, the
driver SIGKILLs itself once it has taken that many chunk acknowledgements (chunks the writers
confirmed in Chroma), mid-way through the writes and commits; ``-`` ingests without killing.
The hook lives here, by monkeypatching, so that the library carries no test code. Prints the
report as JSON on success.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ for fakes

from fakes import HashingEmbedder  # noqa: E402

from proxypointer.config import ChunkingConfig, ProxyPointerConfig
from proxypointer.index import Index
from proxypointer.ingest.ray import runner as ray_runner

#: Chunks per Chroma write call in these runs (the default is 1,000).
WRITE_BATCH = 4


def config(port: int, collection: str) -> ProxyPointerConfig:
    """The config of every store in the Ray tests: small chunks, a Chroma server."""
    cfg = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=40, overlap_tokens=0))
    return dataclasses.replace(
        cfg, store=dataclasses.replace(cfg.store, mode="http", host="127.0.0.1", port=port, collection=collection)
    )


def main() -> int:
    store, port, collection, address, kill_after, *paths = sys.argv[1:]
    ray_runner.WRITE_BATCH_CHUNKS = WRITE_BATCH
    if kill_after != "-":
        limit = int(kill_after)
        real = ray_runner._Sync.on_rows
        seen = {"acks": 0}

        def on_rows(self, rows):
            for row in rows:
                real(self, [row])
                if row["kind"] == "chunk":
                    seen["acks"] += 1
                    if seen["acks"] >= limit:
                        os.kill(os.getpid(), signal.SIGKILL)

        ray_runner._Sync.on_rows = on_rows
    import ray

    here = Path(__file__).resolve().parent
    # the workers unpickle the fake embedder: they import `fakes` from tests/
    ray.init(address=address, runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(here.parent), str(here)])}})
    index = Index(store, config(int(port), collection), HashingEmbedder())
    report = ray_runner.ray_ingest(index, paths, address=address, show_progress=False)
    print(json.dumps(report.to_dict()))
    index.close()
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())


class KillOnce:
    """Embedder factory for a worker-crash test: the first actor to encode SIGKILLs itself.

    The marker file makes it happen once per test, whichever actor (or restarted actor) is
    first: Ray restarts the actor and retries the batch, and the run must end as if nothing
    happened.
    """

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self) -> HashingEmbedder:
        marker = self.marker

        class _Killing(HashingEmbedder):
            def encode(self, texts):
                if not os.path.exists(marker):
                    Path(marker).write_text(str(os.getpid()), encoding="utf-8")
                    os.kill(os.getpid(), signal.SIGKILL)
                return super().encode(texts)

        return _Killing()

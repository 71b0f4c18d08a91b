"""Subprocess driver for tests/integration/test_lifecycle.py (not a test module).

``python lifecycle_driver.py STORE KILL_AT LOCK_TIMEOUT PATH...`` ingests PATHs into STORE with
the fake hashing embedder (no torch) and, when KILL_AT is ``<stage>:<n>``, SIGKILLs itself the
n-th time it reaches ``stage``:

* ``before_add`` - before a document's Chroma write (after ``begin_write``)
* ``mid_add``    - after the n-th Chroma upsert batch (write batches are 2 records here)
* ``after_add``  - after a document's chunks are written, before the registry flips
* ``after_commit`` - after the registry flip, before the old chunks are deleted
* ``after_delete`` - after the old chunks are deleted, before the document is marked ready
* ``mid_embed``  - after the n-th ``encode`` call (embedding groups are 8 texts here)

KILL_AT ``-`` ingests without killing. The hook lives here, by monkeypatching, so that the
library carries no test code. Prints the report as JSON on success.
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

from proxypointer.config import ChunkingConfig, EmbeddingConfig, ProxyPointerConfig
from proxypointer.index import Index


def main() -> int:
    store, kill_at, lock_timeout, *paths = sys.argv[1:]
    cfg = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=40, overlap_tokens=0),
                             embedding=EmbeddingConfig(batch_size=1))
    cfg = dataclasses.replace(cfg, store=dataclasses.replace(cfg.store, lock_timeout_s=float(lock_timeout)))
    index = Index(store, cfg, HashingEmbedder())
    if kill_at != "-":
        stage, n = kill_at.split(":")
        seen = {"count": 0}

        def hit(name: str) -> None:
            if name == stage:
                seen["count"] += 1
                if seen["count"] == int(n):
                    os.kill(os.getpid(), signal.SIGKILL)

        def around(obj, attr, before=None, after=None):
            real = getattr(obj, attr)

            def wrapped(*a, **k):
                if before:
                    hit(before)
                out = real(*a, **k)
                if after:
                    hit(after)
                return out

            setattr(obj, attr, wrapped)

        around(index.embedder, "encode", after="mid_embed")
        if not index.exists:
            index.ingest([], show_progress=False)  # create the store before hooking into it
        store_obj = index.store
        store_obj.batch_limit = 2
        around(store_obj, "add_documents", before="before_add", after="after_add")
        around(store_obj, "delete_ids", after="after_delete")
        around(index.registry, "commit_version", after="after_commit")
        around(store_obj.collection, "upsert", after="mid_add")
    report = index.ingest(paths, show_progress=False)
    print(json.dumps(report.to_dict()))
    index.close()
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The lexical indexes (chunk and title FTS5) move with the registry flip: a SIGKILLed writer leaves the old version."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from proxypointer.config import ChunkingConfig, ProxyPointerConfig, RetrievalConfig
from proxypointer.retrieve.ranking import Ranker
from proxypointer.store.terms import lexical_terms

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "lifecycle_driver.py"


def drive(store: Path, kill_at: str, folder: Path) -> subprocess.CompletedProcess:
    """Ingest ``folder`` in a subprocess that SIGKILLs itself at ``kill_at`` (see lifecycle_driver.py)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(DRIVER), str(store), kill_at, "120", str(folder)],
                          capture_output=True, text=True, timeout=300, env=env)

# What tests/integration/lifecycle_driver.py ingests with (the index must match its settings).
CFG = ProxyPointerConfig(chunking=ChunkingConfig(chunk_tokens=40, overlap_tokens=0),
                         retrieval=RetrievalConfig(hybrid=True))


def write(folder: Path, body: str, kettle: str = "Kettle") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "guide.md").write_text(f"# Guide\n\n## {kettle}\n\n{body}\n\n## Toaster\n\nEmpty the crumb tray.\n")


@pytest.mark.parametrize("kill_at", ["after_add:1", "mid_add:1", "after_commit:1"])
def test_a_writer_killed_around_the_flip_leaves_lexical_hits_of_one_version(tmp_path, make_index, kill_at):
    folder, store = tmp_path / "docs", tmp_path / "store"
    write(folder, "Descale the kettle with vinegar.")
    assert drive(store, "-", folder).returncode == 0
    write(folder, "Descale the kettle with citric acid.", kettle="Kettle limescale")
    proc = drive(store, kill_at, folder)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    index = make_index(CFG, store=store)
    ranker = Ranker(index)
    live = index.registry.get("guide").version
    old, new = ranker.lexical("vinegar", 10), ranker.lexical("citric", 10)
    flipped = kill_at == "after_commit:1"  # killed after the flip: the new version is live
    assert (bool(old), bool(new)) == ((False, True) if flipped else (True, False))
    assert all(h.metadata["version"] == live for h in old + new)
    assert set(index.registry.lexical.rows("guide")) == index.registry.chunk_ids("guide")
    # the title index (FTS5 over heading paths) flips with the same transaction
    titles = index.registry.lexical.title_search(lexical_terms("limescale"), 10)
    assert bool(titles) == flipped
    kettle = index.registry.lexical.title_search(lexical_terms("kettle"), 10)
    assert kettle and {h.version for h in kettle + titles} == {live}
    index.close()

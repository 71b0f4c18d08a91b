"""``embedding.backend: openai`` end to end in subprocesses: the CLI ingests and queries through a
local fake endpoint, and a query process never imports torch or sentence-transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakeendpoint import FakeEmbeddingServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

_QUERY = r"""
import json, sys
from proxypointer import Index, Retriever, load_config
config = load_config(sys.argv[1])
with Index.open(sys.argv[2], config) as index:
    sections = Retriever(index).retrieve("How many weeks of full basic pay do parents receive?", k=3)
print(json.dumps({"doc_ids": [s.doc_id for s in sections],
                  "heavy": sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules)}))
"""


@pytest.fixture
def server():
    fake = FakeEmbeddingServer()
    yield fake
    fake.close()


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)


def test_the_cli_ingests_and_queries_through_an_endpoint_without_torch(server, tmp_path):
    config = tmp_path / "endpoint.yaml"
    config.write_text(
        f"embedding:\n  backend: openai\n  base_url: {server.base_url}\n  model: fake-embed\n"
        '  document_prefix: "passage: "\n  query_prefix: "query: "\n'
    )
    store = tmp_path / "store"
    p = run("-m", "proxypointer", "--config", str(config), "--store", str(store), "ingest", str(ROOT / "data"),
            "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["indexed"] == 3
    assert "no embedding.tokenizer set" in p.stderr  # the approximation is said once
    p = run("-c", _QUERY, str(config), str(store))
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["heavy"] == [] and "employee-handbook" in out["doc_ids"]
    assert server.inputs[-1] == "query: How many weeks of full basic pay do parents receive?"
    # another model on the same store: refused, exit 1, one line naming both
    other = tmp_path / "other.yaml"
    other.write_text(config.read_text().replace("fake-embed", "other-embed"))
    p = run("-m", "proxypointer", "--config", str(other), "--store", str(store), "query", "parental leave")
    assert p.returncode == 1
    assert "built with model \"openai:fake-embed+document_prefix='passage: '\"" in p.stderr
    assert "model 'other-embed'" in p.stderr

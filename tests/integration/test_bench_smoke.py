"""scripts/bench.py runs every phase on a tiny input (no timing is asserted: benchmarks are
scripts, never timed tests; see docs/benchmarks.md)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_bench_smoke_config_runs_every_phase(shared_dir, tmp_path):
    corpus = shared_dir / "bench" / "qasper-dev"
    if not (corpus / "docs").is_dir():
        pytest.skip(f"{corpus} not found")
    cfg = yaml.safe_load((ROOT / "configs" / "bench-smoke.yaml").read_text())
    cfg["corpus"] = str(corpus)
    cfg["chunking"]["corpora"] = [str(corpus)]
    cfg["work"] = str(tmp_path / "work")
    cfg["out"] = str(tmp_path / "out")
    path = tmp_path / "bench-smoke.yaml"
    path.write_text(yaml.safe_dump(cfg))
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--config", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    [result] = (tmp_path / "out").glob("bench-*.json")
    res = json.loads(result.read_text())
    assert set(res["phases"]) == set(cfg["phases"])
    assert not [k for k, v in res["phases"].items() if "error" in v]
    assert "ingest_s" in res["phases"]["langchain"] or "skipped" in res["phases"]["langchain"]
    ingest = res["phases"]["ingest"]
    assert ingest["docs"] == 3 and ingest["chunks"] > 0 and 0 <= ingest["overhead_ratio"] < 1
    assert res["phases"]["reingest"]["unchanged"][-1]["embedded"] == 0
    scale = res["phases"]["query:1000"]
    assert scale["chunks"] >= 1000 and scale["retrieve"]["n"] == cfg["query"]["queries"]
    if "ingest_s" in res["phases"]["langchain"]:
        assert set(res["ratios"]) >= {"ingest docs/s", "query p50"}
    cold = res["phases"]["cold_query"]["onnx_split"]
    assert cold["rc"] == 0 and cold["heavy_modules"] == []  # a cold query loads no torch, no chromadb
    race = res["phases"]["ingest_race"]
    assert "skipped" in race or (race["proxypointer"]["chunks"] > 0 and race["langchain"]["chunks"] > 0)
    assert (tmp_path / "out" / result.name.replace(".json", ".md")).is_file()

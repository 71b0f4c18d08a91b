"""Smoke test: ``proxypointer eval`` on two qasper-dev documents with the real model and Chroma."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_eval_cli_on_two_documents(shared_dir, tmp_path):
    bench = shared_dir / "bench" / "qasper-dev"
    if not bench.is_dir():
        pytest.skip(f"{bench} not found")
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "proxypointer.cli", "-q", "eval", "--benchmark", str(bench), "--limit-docs", "2",
           "--systems", "proxypointer,flat,bm25-sections", "--budgets", "500,2000", "--bootstrap", "50",
           "--cache", str(tmp_path / "cache"), "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["n_questions"] > 0
    assert set(result["systems"]) == {"proxypointer", "flat", "bm25-sections"}
    for by_scope in result["systems"].values():
        for scope in ("doc", "corpus"):
            m = by_scope[scope]
            assert set(m) == {"hit@1", "hit@3", "hit@5", "mrr@10", "recall@5", "tokens@5",
                              "budget_hit@500", "budget_hit@2000"}
            assert 0.0 <= m["hit@1"] <= m["hit@3"] <= m["hit@5"] <= 1.0
            assert m["budget_hit@500"] <= m["budget_hit@2000"] <= 1.0
    assert out.with_suffix(".png").stat().st_size > 0
    assert "| proxypointer |" in out.with_suffix(".md").read_text()
    # A second run re-embeds nothing: the stores are cached by config and benchmark.
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(out.read_text())["systems"] == result["systems"]

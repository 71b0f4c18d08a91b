"""bench/tiny, the benchmark shipped in the repository: its documents are data/'s, its gold holds."""

import json
import re
from pathlib import Path

from proxypointer.eval.benchmark import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "bench" / "tiny"


def test_tiny_docs_are_copies_of_data():
    for doc in sorted((TINY / "docs").glob("*.md")):
        assert doc.read_bytes() == (ROOT / "data" / doc.name).read_bytes(), doc.name


def test_tiny_gold_lines_hold_their_quotes():
    rows = [json.loads(line) for line in (TINY / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert 10 <= len(rows) <= 15 and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        lines = (TINY / "docs" / f"{r['doc_id']}.md").read_text(encoding="utf-8").split("\n")
        for ev in r["evidence_lines"]:
            text = " ".join(lines[ev["start_line"] - 1 : ev["end_line"]])
            assert re.sub(r"\s+", " ", ev["quote"]) in re.sub(r"\s+", " ", text), r["id"]


def test_tiny_loads_as_a_benchmark():
    bench = load_benchmark(TINY)
    assert len(bench.questions) == 14 and len(bench.paths) == 3 and bench.skipped == 0

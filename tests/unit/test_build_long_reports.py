"""scripts/build_long_reports.py: the long-report benchmark is rebuilt byte for byte, gold checked."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_long_reports", ROOT / "scripts" / "build_long_reports.py")
blr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(blr)


def test_demote_moves_headings_down_but_not_code_and_numbers_the_first():
    text = "# Errors\n\nText.\n\n```sh\n# a shell comment\n```\n\n> ### A box\n>\n> Aside.\n\n## Sub\n\n###### Deep\n"
    out = blr.demote(text, "9.").split("\n")
    assert out[0] == "## 9. Errors"
    assert out[5] == "# a shell comment"  # inside a fence: untouched
    assert out[8] == "> #### A box"  # a heading in a block quote moves too
    assert out[12] == "### Sub"
    assert out[14] == "###### Deep"  # level 6 stays 6
    assert len(out) == len(text.split("\n"))  # lines are never added or removed


def test_summary_order_numbers_chapters_as_mdbook(tmp_path):
    (tmp_path / "SUMMARY.md").write_text(
        "# Book\n\n[Intro](intro.md)\n\n- [One](ch01.md)\n  - [One A](ch01-a.md)\n  - [Gone](missing.md)\n"
        "- [Two](ch02.md)\n  - [Two A](ch02-a.md)\n"
    )
    for name in ("intro.md", "ch01.md", "ch01-a.md", "ch02.md", "ch02-a.md"):
        (tmp_path / name).write_text(f"# {name}\n")
    assert blr.summary_order(tmp_path) == [
        ("intro.md", ""), ("ch01.md", "1."), ("ch01-a.md", "1.1."), ("ch02.md", "2."), ("ch02-a.md", "2.1."),
    ]


def test_check_gold_reports_quotes_outside_their_lines():
    docs = {"d": "# T\n\nalpha beta\ngamma\n"}
    good = {"id": "q1", "doc_id": "d", "evidence_lines": [{"start_line": 3, "end_line": 4, "quote": "beta gamma"}]}
    bad = {"id": "q2", "doc_id": "d", "evidence_lines": [{"start_line": 1, "end_line": 2, "quote": "gamma"}]}
    far = {"id": "q3", "doc_id": "d", "evidence_lines": [{"start_line": 4, "end_line": 9, "quote": "gamma"}]}
    assert blr.check_gold(docs, [good]) == []
    problems = blr.check_gold(docs, [good, bad, far, {"id": "q4", "doc_id": "x", "evidence_lines": []}])
    assert [p.split(":")[0] for p in problems] == ["q2", "q3", "q4"]


def test_absent_long_docs_builds_nothing(tmp_path, capsys):
    assert blr.main(["--long-docs", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 0
    assert not (tmp_path / "out").exists()
    assert "not found" in capsys.readouterr().err


def test_the_committed_gold_matches_the_built_documents(shared_dir, tmp_path):
    long_docs = shared_dir / "bench" / "long_docs"
    if not (long_docs / "rust_book" / "SUMMARY.md").is_file():
        pytest.skip(f"{long_docs} not found")
    out = tmp_path / "lr"
    assert blr.main(["--long-docs", str(long_docs), "--out", str(out)]) == 0
    from proxypointer.eval.benchmark import load_benchmark

    bench = load_benchmark(out)
    questions = [json.loads(x) for x in (blr.BENCH / "questions.jsonl").read_text().splitlines() if x.strip()]
    assert len(bench.questions) == len(questions) >= 30
    assert bench.titles["rust-book"] == "The Rust Programming Language"
    for q, row in zip(bench.questions, questions, strict=True):
        for span, ev in zip(q.spans, row["evidence_lines"], strict=True):
            assert (span.start_line, span.end_line) == (ev["start_line"], ev["end_line"])

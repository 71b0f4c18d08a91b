"""Page-level evaluation (issue 14): evidence_pages gold, page baselines, stored texts with pages."""

from __future__ import annotations

import json

import pytest

from proxypointer.config import ProxyPointerConfig
from proxypointer.errors import ConfigError
from proxypointer.eval.benchmark import hit_at, load_benchmark, load_page_benchmark

#: Three pages per filing; each page's words are its own, so the hashing embedder finds them.
FILING = (
    "<!-- page 1 -->\n\n# Acme 10-K\n\n## Business\n\nAcme sells anvils and rockets to desert customers.\n\n"
    "<!-- page 2 -->\n\nAnvil revenue rose sharply this year across every region.\n\n"
    "## Dividends\n\nCash dividends paid were forty million dollars.\n\n"
    "<!-- page 3 -->\n\n## Risks\n\nRoadrunners outrun our products; weather delays freight.\n"
)
OTHER = FILING.replace("Acme", "Bolt").replace("anvils", "magnets").replace("Anvil", "Magnet")


@pytest.fixture
def page_bench(tmp_path):
    root = tmp_path / "fb-pages"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "ACME_10K.md").write_text(FILING, encoding="utf-8")
    (root / "docs" / "BOLT_10K.md").write_text(OTHER, encoding="utf-8")
    rows = [
        {"id": "q1", "doc_id": "ACME_10K", "question": "How much were Acme cash dividends?", "evidence_pages": [2]},
        {"id": "q2", "doc_id": "ACME_10K", "question": "What risks: roadrunners, weather?", "evidence_pages": [3]},
        {"id": "q3", "doc_id": "BOLT_10K", "question": "Did magnet revenue rise?", "evidence_pages": [2]},
        {"id": "q4", "doc_id": "BOLT_10K", "question": "no gold here", "evidence_pages": []},
    ]
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def test_evidence_pages_become_the_content_lines_of_those_pages(page_bench):
    bench = load_benchmark(page_bench)  # no spans, pages given: read as a page benchmark
    assert [q.id for q in bench.questions] == ["q1", "q2", "q3"] and bench.skipped == 1
    q1 = bench.questions[0]
    (sp,) = q1.spans
    text = bench.texts["ACME_10K"]
    assert "<!--" not in text and text.count("\n") == FILING.count("\n")  # markers emptied, lines kept
    assert text[sp.start : sp.end] == (
        "Anvil revenue rose sharply this year across every region.\n\n## Dividends\n\n"
        "Cash dividends paid were forty million dollars."
    )
    lines = FILING.splitlines()
    assert lines[sp.start_line - 1].startswith("Anvil revenue") and lines[sp.end_line - 1].startswith("Cash")
    assert bench.pages["ACME_10K"][sp.start_line - 1] == 2
    # a unit hits when its line range reaches a content line of the page: the marker line alone does not
    from proxypointer.eval.benchmark import Unit

    marker = lines.index("<!-- page 2 -->") + 1
    assert hit_at([Unit("ACME_10K", 1, marker + 1, 10)], q1.spans, 1) == 0.0
    assert hit_at([Unit("ACME_10K", 1, sp.start_line, 10)], q1.spans, 1) == 1.0
    assert load_page_benchmark(page_bench, limit_docs=1).paths.keys() == {"ACME_10K"}


def test_page_gold_needs_pages(page_bench):
    (page_bench / "docs" / "BOLT_10K.md").write_text("# Bolt\n\nno markers\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="BOLT_10K has no page markers"):
        load_benchmark(page_bench)


def test_span_gold_moves_onto_the_stored_text(page_bench):
    """A markdown benchmark with span gold (financebench-dev-md) is read as ingest stores it."""
    whole_page_2 = FILING.index("<!-- page 2 -->"), FILING.index("<!-- page 3 -->")
    rows = [{"id": "q1", "doc_id": "ACME_10K", "question": "dividends?",
             "evidence_spans": [{"start": whole_page_2[0], "end": whole_page_2[1]}], "evidence_pages": [2]}]
    (page_bench / "questions.jsonl").write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    bench = load_benchmark(page_bench)
    (sp,) = bench.questions[0].spans
    text = bench.texts["ACME_10K"]
    assert "<!--" not in text
    # the same lines as before, the marker line now empty
    assert text[sp.start : sp.end] == FILING[whole_page_2[0] : whole_page_2[1]].replace("<!-- page 2 -->", "")
    assert bench.pages["ACME_10K"][sp.start_line - 1] == 2


def test_page_baselines_and_page_level_metrics_on_a_fake_model(page_bench, tmp_path, fake_embedder):
    from proxypointer.eval.harness import PAGE_SYSTEMS, EvalSettings, run_evaluation, system_specs

    cfg = ProxyPointerConfig()
    bench = load_benchmark(page_bench)
    names = ("proxypointer", "flat", *PAGE_SYSTEMS)
    settings = EvalSettings(benchmark=str(page_bench), systems=names, budgets=(20, 200), bootstrap=20,
                            cache=str(tmp_path / "c"), query_templates={"doc": "{question}", "corpus": "{question}"})
    result = run_evaluation(bench, cfg, settings, system_specs(names, cfg), fake_embedder)
    assert list(result["systems"]) == list(names)
    for name in names:
        for scope in ("doc", "corpus"):
            m = result["systems"][name][scope]
            assert set(m) >= {"hit@1", "hit@3", "hit@5", "mrr@10", "recall@5", "tokens@5", "budget_hit@20",
                              "budget_hit@200"}
    # each page is one unit: the dividends and magnet-revenue pages are found first by both page systems
    for name in PAGE_SYSTEMS:
        assert result["systems"][name]["doc"]["hit@1"] == 1.0, name
    assert result["system_configs"]["pages"]["kind"] == "pages"


def test_page_systems_refuse_a_benchmark_without_pages(tmp_path, fake_embedder):
    from proxypointer.eval.harness import EvalSettings, run_evaluation, system_specs

    root = tmp_path / "plain"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "d.md").write_text("# D\n\nalpha beta\n", encoding="utf-8")
    (root / "questions.jsonl").write_text(json.dumps({"id": "q", "doc_id": "d", "question": "alpha",
                                                      "evidence_spans": [{"start": 5, "end": 10}]}) + "\n")
    cfg = ProxyPointerConfig()
    settings = EvalSettings(benchmark=str(root), systems=("pages",), scopes=("doc",), budgets=(50,), bootstrap=5,
                            cache=str(tmp_path / "c"))
    with pytest.raises(ConfigError, match="d has no pages"):
        run_evaluation(load_benchmark(root), cfg, settings, system_specs(["pages"], cfg), fake_embedder)

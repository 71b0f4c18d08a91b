"""Metrics with hand-computed values, benchmark loading, intervals, the harness on a fake model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from proxypointer.config import ProxyPointerConfig
from proxypointer.errors import ConfigError
from proxypointer.eval.benchmark import (
    Delivered,
    EvidenceSpan,
    Unit,
    bootstrap_interval,
    budget_hit,
    delivered_ranges,
    hit_at,
    load_benchmark,
    paired_difference,
    recall_at,
    reciprocal_rank,
    tokens_at,
)


def span(start_line, end_line, doc="d", start=0, end=1):
    return EvidenceSpan(doc, start, end, start_line, end_line)


UNITS = [Unit("d", 1, 4, 10), Unit("d", 10, 12, 20), Unit("e", 5, 9, 30), Unit("d", 20, 30, 40)]
SPANS = [span(11, 11), span(25, 26)]


def test_hit_at_counts_line_overlap_in_the_same_document():
    assert hit_at(UNITS, SPANS, 1) == 0.0  # lines 1-4 miss 11 and 25-26
    assert hit_at(UNITS, SPANS, 2) == 1.0  # lines 10-12 hold line 11
    assert hit_at(UNITS, [span(5, 9)], 5) == 0.0  # same lines, other document
    assert hit_at(UNITS, [span(4, 4)], 1) == 1.0  # touching the last line counts
    assert hit_at([], SPANS, 5) == 0.0


def test_reciprocal_rank_is_one_over_first_hit_within_k():
    assert reciprocal_rank(UNITS, SPANS, 10) == pytest.approx(1 / 2)
    assert reciprocal_rank(UNITS, [span(29, 29)], 10) == pytest.approx(1 / 4)
    assert reciprocal_rank(UNITS, [span(29, 29)], 3) == 0.0


def test_recall_at_is_the_share_of_spans_covered():
    assert recall_at(UNITS, SPANS, 2) == pytest.approx(1 / 2)
    assert recall_at(UNITS, SPANS, 4) == pytest.approx(2 / 2)
    assert recall_at(UNITS, [span(11, 11), span(50, 51), span(60, 60)], 5) == pytest.approx(1 / 3)


def test_tokens_at_sums_the_first_k_units():
    assert tokens_at(UNITS, 2) == 30.0
    assert tokens_at(UNITS, 5) == 100.0


def words(text, n):
    """Cut after n whitespace words (a stand-in tokenizer)."""
    out = text.split(" ")
    return " ".join(out[:n])


def count(text):
    return len(text.split(" ")) if text else 0


def test_delivered_ranges_cuts_the_last_block_at_the_budget():
    blocks = [Delivered("d", 100, "a b c"), Delivered("d", 0, "w x y z"), Delivered("d", 200, "never")]
    # 3 words of the first block, then 2 of the 4 words of the second ("w x" = 3 chars), stop.
    assert delivered_ranges(blocks, 5, words, count) == [("d", 100, 105), ("d", 0, 3)]
    assert delivered_ranges(blocks, 3, words, count) == [("d", 100, 105)]
    assert delivered_ranges(blocks, 100, words, count)[-1] == ("d", 200, 205)
    # Precomputed token counts are trusted.
    assert delivered_ranges([Delivered("d", 0, "a b c", tokens=1)], 2, words, count) == [("d", 0, 5)]


def test_budget_hit_needs_character_overlap_with_a_span():
    spans = [EvidenceSpan("d", 50, 60, 3, 3)]
    assert budget_hit([("d", 0, 50)], spans) == 0.0  # ends where the span starts: half-open
    assert budget_hit([("d", 0, 51)], spans) == 1.0
    assert budget_hit([("e", 0, 100)], spans) == 0.0
    assert budget_hit([("d", 59, 70)], spans) == 1.0
    assert budget_hit([("d", 60, 70)], spans) == 0.0


def test_budget_hit_counts_only_what_fits_the_budget():
    # The evidence is in the second block; a budget of 4 words delivers it only partly.
    blocks = [Delivered("d", 0, "one two three"), Delivered("d", 100, "x y evidence")]
    spans = [EvidenceSpan("d", 104, 112, 2, 2)]  # "evidence"
    assert budget_hit(delivered_ranges(blocks, 4, words, count), spans) == 0.0
    assert budget_hit(delivered_ranges(blocks, 6, words, count), spans) == 1.0


def test_bootstrap_interval_resamples_documents():
    mean, lo, hi = bootstrap_interval([1, 1, 0, 0], ["a", "a", "b", "b"], n_boot=500, seed=1)
    assert mean == 0.5
    assert lo == 0.0 and hi == 1.0  # two documents: samples are {a,a}, {b,b} or mixed
    mean, lo, hi = bootstrap_interval([1.0] * 6, list("abcdef"))
    assert (mean, lo, hi) == (1.0, 1.0, 1.0)
    assert bootstrap_interval([], []) == (0.0, 0.0, 0.0)


def test_paired_difference_is_the_mean_of_differences():
    diff, lo, hi = paired_difference([1, 1, 1, 0], [0, 1, 0, 0], list("abcd"), n_boot=300)
    assert diff == pytest.approx(0.5)
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0


@pytest.fixture
def bench_dir(tmp_path):
    docs = tmp_path / "bench" / "docs"
    docs.mkdir(parents=True)
    a = "# Paper A\n\n## Method\n\nWe use a hashing trick.\n\n## Results\n\nIt works well.\n"
    # BOM + CRLF: raw offsets differ from the normalised text.
    b_raw = "\ufeff# Paper B\r\n\r\n## Data\r\n\r\nTwo corpora of news.\r\n"
    (docs / "a.md").write_text(a, encoding="utf-8")
    (docs / "b.md").write_bytes(b_raw.encode("utf-8"))
    s = a.index("hashing trick")
    sb = b_raw.index("Two corpora")
    rows = [
        {"id": "q1", "doc_id": "a", "question": "What trick?",
         "evidence_spans": json.dumps([{"start": s, "end": s + 13}]).replace('"', "'")},  # Python literal
        {"id": "q2", "doc_id": "b", "question": "Which data?", "evidence_spans": [{"start": sb, "end": sb + 11}]},
        {"id": "q3", "doc_id": "a", "question": "Unanswerable?", "evidence_spans": "[]"},
    ]
    (tmp_path / "bench" / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return tmp_path / "bench"


def test_load_benchmark_maps_offsets_to_normalised_text_and_lines(bench_dir):
    bench = load_benchmark(bench_dir)
    assert bench.skipped == 1
    assert [q.id for q in bench.questions] == ["q1", "q2"]
    q1, q2 = bench.questions
    sp = q1.spans[0]
    assert bench.texts["a"][sp.start : sp.end] == "hashing trick"
    assert (sp.start_line, sp.end_line) == (5, 5)
    assert q1.title == "Paper A"
    sp = q2.spans[0]
    assert bench.texts["b"][sp.start : sp.end] == "Two corpora"
    assert (sp.start_line, sp.end_line) == (5, 5)
    assert q2.title == "Paper B"


def test_load_benchmark_limit_and_errors(bench_dir, tmp_path):
    assert list(load_benchmark(bench_dir, limit_docs=1).paths) == ["a"]
    with pytest.raises(ConfigError, match="questions.jsonl"):
        load_benchmark(tmp_path / "nowhere")
    (bench_dir / "questions.jsonl").write_text('{"id": "x", "doc_id": "a", "question": "q",'
                                              ' "evidence_spans": [{"start": 0, "end": 99999}]}\n')
    with pytest.raises(ConfigError, match="outside"):
        load_benchmark(bench_dir)


def test_runs_on_other_documents_of_a_benchmark_get_their_own_store(bench_dir, tmp_path):
    # BM25 statistics are store-wide: the first N documents must not be ranked in a store that
    # a run on all of them filled
    from proxypointer.eval.harness import store_folder, system_specs

    spec = system_specs(["proxypointer"], ProxyPointerConfig())[0]
    one, both = load_benchmark(bench_dir, limit_docs=1), load_benchmark(bench_dir)
    assert len(both.paths) > len(one.paths)
    assert store_folder(spec, one, tmp_path, "m") != store_folder(spec, both, tmp_path, "m")
    again = load_benchmark(bench_dir, limit_docs=1)
    assert store_folder(spec, one, tmp_path, "m") == store_folder(spec, again, tmp_path, "m")


def test_new_tree_code_gets_a_new_store(bench_dir, tmp_path, monkeypatch):
    """A stored document whose text is unchanged is not ingested again, so a store filled by the
    old tree rules would be measured as the new ones' (an exhibit re-levelled, figures unchanged)."""
    from proxypointer.eval import harness

    spec = harness.system_specs(["proxypointer"], ProxyPointerConfig())[0]
    bench = load_benchmark(bench_dir)
    before = harness.store_folder(spec, bench, tmp_path, "m")
    assert harness.store_folder(spec, bench, tmp_path, "m") == before
    monkeypatch.setattr(harness, "tree_code_digest", lambda: "another-code")
    assert harness.store_folder(spec, bench, tmp_path, "m") != before


def test_baselines_keep_their_plain_ranking_whatever_the_defaults():
    # a baseline must not borrow the pipeline's own rankings (the focus ranking is on by default)
    from proxypointer.eval.harness import system_specs

    assert ProxyPointerConfig().retrieval.focus_weight > 0
    for spec in system_specs(["flat", "flat-title", "sections-no-breadcrumb"], ProxyPointerConfig()):
        r = spec.config.retrieval
        assert (r.focus_weight, r.title_routing_docs, r.title_weight, r.hybrid) == (0.0, 0, 0.0, False), spec.name


def test_load_benchmark_reads_line_range_gold(bench_dir):
    rows = [
        {"id": "l1", "doc_id": "a", "question": "Which sections?",
         "evidence_lines": [{"start_line": 3, "end_line": 5}, {"start_line": 9, "end_line": 9}]},
        {"id": "l2", "doc_id": "b", "question": "Data?", "evidence_lines": [{"start_line": 5, "end_line": 5}]},
    ]
    (bench_dir / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    q1, q2 = load_benchmark(bench_dir).questions
    a = load_benchmark(bench_dir).texts["a"]
    first, last = q1.spans
    assert a[first.start : first.end] == "## Method\n\nWe use a hashing trick."
    assert (first.start_line, first.end_line) == (3, 5)
    assert a[last.start : last.end] == "It works well."  # the last line, without its line end
    assert (last.start_line, last.end_line) == (9, 9)
    sp = q2.spans[0]
    assert load_benchmark(bench_dir).texts["b"][sp.start : sp.end] == "Two corpora of news."
    (bench_dir / "questions.jsonl").write_text(json.dumps(
        {"id": "x", "doc_id": "a", "question": "q", "evidence_lines": [{"start_line": 9, "end_line": 10}]}) + "\n")
    with pytest.raises(ConfigError, match="outside"):
        load_benchmark(bench_dir)


def test_qasper_spans_slice_to_their_evidence(shared_dir):
    root = shared_dir / "bench" / "qasper-dev"
    if not root.is_dir():
        pytest.skip("qasper-dev not present")
    bench = load_benchmark(root, limit_docs=3)
    raw = {json.loads(line)["id"]: json.loads(line) for line in (root / "questions.jsonl").open()}
    for q in bench.questions:
        evidence = raw[q.id]["evidence"]
        for sp in q.spans:
            assert bench.texts[q.doc_id][sp.start : sp.end] in evidence


def test_harness_on_a_fake_model(bench_dir, tmp_path, fake_embedder):
    from proxypointer.eval.benchmark import plot_budgets, to_markdown
    from proxypointer.eval.harness import EvalSettings, run_evaluation, system_specs

    bench = load_benchmark(bench_dir)
    cfg = ProxyPointerConfig()
    settings = EvalSettings(benchmark=str(bench_dir), budgets=(5, 50), bootstrap=50, cache=str(tmp_path / "c"))
    specs = system_specs(settings.systems, cfg, None)
    result = run_evaluation(bench, cfg, settings, specs, fake_embedder)
    assert result["n_questions"] == 2
    keys = {"hit@1", "hit@3", "hit@5", "mrr@10", "recall@5", "tokens@5", "budget_hit@5", "budget_hit@50"}
    for name in ("proxypointer", "flat", "flat-title", "sections-no-breadcrumb", "bm25-sections"):
        for scope in ("doc", "corpus"):
            assert set(result["systems"][name][scope]) == keys
    # Each document is one small section hit in doc scope: everything is found with 50 tokens.
    assert result["systems"]["proxypointer"]["doc"]["budget_hit@50"] == 1.0
    assert "proxypointer - flat" in result["paired"]
    assert "| proxypointer |" in to_markdown(result)
    assert plot_budgets(result, tmp_path / "p.png").stat().st_size > 0
    # A second run embeds no chunk again: only the queries (one batch).
    n = len(fake_embedder.embedded_texts)
    run_evaluation(bench, cfg, settings, specs, fake_embedder)
    again = fake_embedder.embedded_texts[n:]
    queries = {q.question for q in bench.questions} | {f"{q.title}. {q.question}" for q in bench.questions}
    assert again and set(again) <= queries


def test_a_new_store_reuses_vectors_other_stores_embedded(bench_dir, tmp_path, fake_embedder):
    from proxypointer.eval.harness import EvalSettings, VectorCache, run_evaluation, system_specs

    bench = load_benchmark(bench_dir)
    cfg = ProxyPointerConfig()
    settings = EvalSettings(benchmark=str(bench_dir), systems=("proxypointer",), scopes=("doc",), budgets=(50,),
                            bootstrap=10, cache=str(tmp_path / "c"))
    first = run_evaluation(bench, cfg, settings, system_specs(["proxypointer"], cfg), fake_embedder)
    n = len(fake_embedder.embedded_texts)
    # Another store folder (a different noise list) whose chunk texts are the same.
    other = {"v": {"pipeline": {"chunking": {"noise_titles": ["nothing here"]}}}}
    specs = system_specs(["v"], cfg, other)
    second = run_evaluation(bench, cfg, settings, specs, fake_embedder)
    texts = [t for t in fake_embedder.embedded_texts[n:] if t not in {q.question for q in bench.questions}]
    assert texts == []  # every chunk vector came from <cache>/vectors.sqlite
    assert second["per_question"]["values"]["v"] == first["per_question"]["values"]["proxypointer"]
    cache = VectorCache(tmp_path / "c" / "vectors.sqlite", fake_embedder.name)
    cache.put(["x"], np.ones((1, 4), np.float32))
    got = cache.get(["x", "y"])
    assert list(got) == [VectorCache.key("x")] and np.array_equal(got[VectorCache.key("x")], np.ones(4))
    assert VectorCache(tmp_path / "c" / "vectors.sqlite", "another-model").get(["x"]) == {}
    cache.close()


def test_system_specs_validate_names_and_variants():
    from proxypointer.eval.harness import settings_from_dict, system_specs

    cfg = ProxyPointerConfig()
    variant = {"v": {"base": "proxypointer", "pipeline": {"retrieval": {"hybrid": True}}}}
    specs = system_specs(["flat", "v"], cfg, variant)
    assert specs[0].config.chunking.strategy == "windows" and specs[0].config.chunking.breadcrumb == "none"
    assert specs[0].config.chunking.window_tokens == cfg.chunking.chunk_tokens
    assert specs[1].config.retrieval.hybrid and specs[1].assemble
    with pytest.raises(ConfigError, match="unknown system"):
        system_specs(["nope"], cfg)
    with pytest.raises(ConfigError, match="unknown key"):
        system_specs(["v"], cfg, {"v": {"pipelin": {}}})
    with pytest.raises(ConfigError, match="unknown key"):
        settings_from_dict({"benchmark": "x", "budget": [1]})
    with pytest.raises(ConfigError, match="template"):
        settings_from_dict({"benchmark": "x", "query_templates": {"doc": "{query}"}})
    assert settings_from_dict({"benchmark": "x", "budgets": [100]}).budgets == (100,)


def test_bootstrap_is_deterministic():
    v = np.random.default_rng(0).random(40)
    g = [str(i % 7) for i in range(40)]
    assert bootstrap_interval(v, g, seed=3) == bootstrap_interval(v, g, seed=3)


def test_merge_results_combines_runs_over_the_same_questions(bench_dir, tmp_path, fake_embedder):
    from proxypointer.eval.harness import EvalSettings, merge_results, run_evaluation, system_specs

    bench = load_benchmark(bench_dir)
    cfg = ProxyPointerConfig()
    settings = EvalSettings(benchmark=str(bench_dir), budgets=(50,), bootstrap=20, cache=str(tmp_path / "c"),
                            scopes=("doc",))
    a = run_evaluation(bench, cfg, settings, system_specs(["flat"], cfg), fake_embedder)
    b = run_evaluation(bench, cfg, settings, system_specs(["proxypointer", "flat"], cfg), fake_embedder)
    merged = merge_results([a, b])
    assert list(merged["systems"]) == ["proxypointer", "flat"]
    assert merged["systems"]["flat"] == a["systems"]["flat"]
    assert merged["systems"]["proxypointer"] == b["systems"]["proxypointer"]
    assert "proxypointer - flat" in merged["paired"]
    other = load_benchmark(bench_dir, limit_docs=1)
    c = run_evaluation(other, cfg, settings, system_specs(["flat"], cfg), fake_embedder)
    with pytest.raises(ConfigError, match="merge"):
        merge_results([a, c])

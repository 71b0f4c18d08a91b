"""scripts/retrieval_lab.py ranks and delivers exactly as the harness does for today's pipelines."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import yaml

from proxypointer.config import config_from_dict
from proxypointer.eval.benchmark import load_benchmark
from proxypointer.eval.harness import run_evaluation, settings_from_dict, system_specs

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("retrieval_lab", ROOT / "scripts" / "retrieval_lab.py")
lab = importlib.util.module_from_spec(_spec)
sys.modules["retrieval_lab"] = lab  # dataclasses look their module up
_spec.loader.exec_module(lab)

_SECTION = ("The {w} method stores {w} values in a table and reads them back later. " * 6 + "\n\n") * 3


def _bench(tmp_path: Path) -> Path:
    docs = tmp_path / "bench" / "docs"
    docs.mkdir(parents=True)
    rows = []
    for d, words in (("a", ["hashing", "sorting", "parsing"]), ("b", ["caching", "indexing", "ranking"])):
        text = f"# Paper {d}\n\nIntro text about {d}.\n\n" + "".join(
            f"## {w.title()}\n\n{_SECTION.format(w=w)}### {w.title()} details\n\nMore on {w} here.\n\n" for w in words)
        (docs / f"{d}.md").write_text(text)
        for i, w in enumerate(words):
            s = text.index(f"More on {w}")
            rows.append({"id": f"{d}{i}", "doc_id": d, "question": f"what about {w} details?",
                         "evidence_spans": [{"start": s, "end": s + 10}]})
    (tmp_path / "bench" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    exp = tmp_path / "exp.yaml"
    q = lab._Q
    # The lab's "today" candidates are the pipelines before the reports round: no title field,
    # no label lookup, whole subtrees, breadcrumb-only chunks ranked as any other.
    before = "title_weight: 0, label_lookup: false, subtree_cap_tokens: 0, demote_empty: false"
    exp.write_text(
        f"benchmark: {tmp_path / 'bench'}\nsystems: [proxypointer, pp-quality]\nscopes: [doc]\n"
        f"budgets: [40, 200]\nbootstrap: 20\ncache: {tmp_path / 'cache'}\n"
        "pipeline:\n  chunking: {chunk_tokens: 200}\n"
        f"  retrieval: {{hybrid: false, section_scoring: max, rrf_k: 60, lexical_weight: 1.0, section_top_n: 3, "
        f"title_routing_docs: 0, {before}}}\n"
        "variants:\n  pp-quality:\n    pipeline:\n      chunking: {chunk_tokens: 128}\n"
        f"      retrieval: {{hybrid: true, lexical_weight: {q['lexical_weight']}, rrf_k: {q['rrf_k']}, "
        f"section_scoring: {q['scoring']}, section_top_n: {q['top_n']}, title_routing_docs: {q['routing_docs']}, "
        f"{before}}}\n")
    return exp


def _harness(exp: Path, embedder) -> dict:
    """Run the experiment with the harness (this also fills the stores the lab reads)."""
    data = yaml.safe_load(exp.read_text())
    pipeline = config_from_dict(data.pop("pipeline"))
    variants = data.pop("variants")
    settings = settings_from_dict(data)
    bench = load_benchmark(data["benchmark"])
    return run_evaluation(bench, pipeline, settings, system_specs(settings.systems, pipeline, variants), embedder)


def test_lab_reproduces_the_harness_in_doc_scope(tmp_path, fake_embedder):
    exp = _bench(tmp_path)
    harness = _harness(exp, fake_embedder)
    args = argparse.Namespace(config=str(exp), bench=None, candidates="today-default,today-quality", scopes="doc",
                              limit_docs=None, cache=None, ref="today-quality", bootstrap=20,
                              out=str(tmp_path / "lab"), explain=True)
    result = lab.run(args, fake_embedder)
    got = result["per_question"]["values"]
    want = harness["per_question"]["values"]
    for cand, system in (("today-default", "proxypointer"), ("today-quality", "pp-quality")):
        for metric, values in got[cand]["doc"].items():
            assert values == want[system]["doc"][metric], (cand, metric)
    assert (tmp_path / "lab" / "explain.jsonl").stat().st_size > 0


def test_cap_delivery_bounds_each_unit(tmp_path, fake_embedder):
    exp = _bench(tmp_path)
    args = argparse.Namespace(config=str(exp), bench=None, candidates="today-quality", scopes="doc", limit_docs=None,
                              cache=None, ref="today-quality", bootstrap=20, out=str(tmp_path / "lab"), explain=False)
    _harness(exp, fake_embedder)
    lab.CANDIDATES["test-cap"] = lab.Candidate(**lab._Q, delivery="cap", cap_tokens=60)
    try:
        args.candidates = "today-quality,test-cap"
        result = lab.run(args, fake_embedder)
    finally:
        del lab.CANDIDATES["test-cap"]
    capped = result["per_question"]["values"]["test-cap"]["doc"]["tokens@5"]
    whole = result["per_question"]["values"]["today-quality"]["doc"]["tokens@5"]
    assert all(c <= w for c, w in zip(capped, whole, strict=True)) and sum(capped) < sum(whole)

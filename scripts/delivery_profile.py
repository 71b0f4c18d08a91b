"""Where the tokens of ``retrieve`` go: delivery kind and tokens by rank, and the ranks of hits.

For one system of an experiment YAML (stores from the eval cache, as ``run_experiment.py`` fills
them), every question's top 5 sections within its document: tokens@5 split by rank (1, 2, 3-5)
and delivery (subtree, own_text, excerpt), and for questions whose first hit is at rank 3 or
later, the delivery of that section. The numbers behind ``retrieval.tail_own_tokens``
(docs/evaluation.md, delivery round).

Usage:
    .venv/bin/python scripts/delivery_profile.py configs/experiments/defaults-long-reports.yaml pp-default
    .venv/bin/python scripts/delivery_profile.py configs/experiments/qasper-dev.yaml proxypointer
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proxypointer.config import config_from_dict  # noqa: E402
from proxypointer.embed.embedder import SentenceTransformerEmbedder  # noqa: E402
from proxypointer.eval.benchmark import load_benchmark  # noqa: E402
from proxypointer.eval.harness import _MemoEmbedder, _Runner, _shared_vectors, settings_from_dict, system_specs  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("experiment", type=Path)
    ap.add_argument("system")
    args = ap.parse_args(argv)
    data = yaml.safe_load(args.experiment.read_text(encoding="utf-8"))
    pipeline = config_from_dict(data.pop("pipeline", None), str(args.experiment))
    variants = data.pop("variants", None) or {}
    bench_path = Path(data["benchmark"])
    bench_path = bench_path if bench_path.is_absolute() else (ROOT / bench_path).resolve()
    data.update(benchmark=str(bench_path), systems=[args.system])
    settings = settings_from_dict(data, str(args.experiment))
    spec = system_specs(settings.systems, pipeline, variants)[0]
    bench = load_benchmark(bench_path, settings.limit_docs or None, config=pipeline,
                           conversion_cache=Path(settings.cache) / "converted")
    embedder = SentenceTransformerEmbedder(spec.config.embedding)
    runner = _Runner(spec, bench, _MemoEmbedder(embedder, _shared_vectors(settings.cache, embedder)),
                     settings.cache, False)
    tokens: dict[tuple[str, str], float] = collections.defaultdict(float)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    late: collections.Counter[str] = collections.Counter()
    first_hit: collections.Counter[str] = collections.Counter()
    questions = [q for q in bench.questions if q.spans]
    for q in questions:
        top = runner.retriever.retrieve(q.question, k=5, doc_ids=[q.doc_id])
        hits = [any(sp.doc_id == s.doc_id and sp.start_line <= s.text_end_line and s.text_start_line <= sp.end_line
                    for sp in q.spans) for s in top]
        for rank, s in enumerate(top, 1):
            key = (str(rank) if rank <= 2 else "3-5", s.delivery)
            tokens[key] += embedder.tokenizer.count(s.text) / len(questions)
            counts[key] += 1
        first = next((i for i, h in enumerate(hits) if h), None)
        first_hit[str(first + 1) if first is not None else "none"] += 1
        if first is not None and first >= 2:
            late[top[first].delivery] += 1
    print(f"{args.system}: {len(questions)} questions, tokens@5 {sum(tokens.values()):.0f}")
    print("rank  delivery   sections  tokens per question")
    for key in sorted(tokens):
        print(f"{key[0]:<5} {key[1]:<10} {counts[key]:>8}  {tokens[key]:>8.0f}")
    print("first hit at rank:", dict(sorted(first_hit.items())))
    print("first hit at rank 3-5, by its delivery:", dict(late))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

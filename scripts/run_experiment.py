"""Run one experiment config and write its results under results/<name>-<UTC time>/.

Usage:
    .venv/bin/python scripts/run_experiment.py configs/experiments/qasper-dev.yaml
        [--limit-docs N] [--systems a,b] [--scopes doc,corpus] [--out DIR] [--ingest-only] [--int8]

The YAML holds the evaluation settings (proxypointer.eval.harness.EvalSettings), ``pipeline`` (the
proxypointer system's config) and optional ``variants`` (name -> base, pipeline overrides,
assemble). Written: results.json, results.md, budget_hit.png and a copy of the config with the
resolved pipeline config beside them. ``--int8`` runs every dense system with the model's
linear layers quantised to int8 (``SentenceTransformerEmbedder(quantize_int8=True)``, documents
and queries alike; its stores are separate, keyed by the ``+int8`` model name).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="experiment YAML (configs/experiments/*.yaml)")
    ap.add_argument("--limit-docs", type=int, default=None, help="override limit_docs")
    ap.add_argument("--systems", help="override systems (comma-separated)")
    ap.add_argument("--scopes", help="override scopes (comma-separated)")
    ap.add_argument("--out", help="output folder (default results/<config name>-<UTC time>)")
    ap.add_argument("--ingest-only", action="store_true", help="fill the per-system stores and stop")
    ap.add_argument("--merge", nargs="+", metavar="RESULTS_JSON",
                    help="instead of running: combine results.json files of equal runs into --out")
    ap.add_argument("--int8", action="store_true", help="int8 dynamically quantised model (documents and queries)")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from proxypointer.config import config_from_dict, config_to_dict
    from proxypointer.errors import ProxyPointerError
    from proxypointer.eval.benchmark import load_benchmark
    from proxypointer.eval.harness import ingest_systems, run_evaluation, settings_from_dict, system_specs

    path = Path(args.config)
    if args.merge:
        from proxypointer.eval.harness import merge_results

        result = merge_results([json.loads(Path(f).read_text()) for f in args.merge])
        write_results(Path(args.out or ROOT / "results" / f"{path.stem}-merged"), path, result)
        return 0
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        pipeline = config_from_dict(data.pop("pipeline", None), f"{path}: pipeline")
        variants = data.pop("variants", None) or {}
        if args.limit_docs is not None:
            data["limit_docs"] = args.limit_docs
        if args.systems:
            data["systems"] = args.systems.split(",")
        if args.scopes:
            data["scopes"] = args.scopes.split(",")
        bench_path = Path(data.get("benchmark", ""))
        if not bench_path.is_absolute():
            bench_path = (ROOT / bench_path).resolve()
        data["benchmark"] = str(bench_path)
        settings = settings_from_dict(data, str(path))
        specs = system_specs(settings.systems, pipeline, variants)
        bench = load_benchmark(bench_path, settings.limit_docs or None, config=pipeline,
                               conversion_cache=Path(settings.cache) / "converted", show_progress=not args.quiet)
        embedder = None
        if args.int8:
            from proxypointer.embed.embedder import SentenceTransformerEmbedder

            embedder = SentenceTransformerEmbedder(pipeline.embedding, quantize_int8=True)
        if args.ingest_only:
            ingest_systems(bench, pipeline, settings, specs, embedder=embedder, show_progress=not args.quiet)
            return 0
        t0 = time.time()
        result = run_evaluation(bench, pipeline, settings, specs, embedder=embedder, show_progress=not args.quiet)
    except (ProxyPointerError, OSError, yaml.YAMLError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    result["seconds"] = round(time.time() - t0, 1)
    result["int8"] = bool(args.int8)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    resolved = {"pipeline": config_to_dict(pipeline), "variants": variants, "settings": result["settings"],
                "int8": bool(args.int8)}
    write_results(Path(args.out) if args.out else ROOT / "results" / f"{path.stem}-{stamp}", path, result, resolved)
    return 0


def write_results(out: Path, config_path: Path, result: dict, resolved: dict | None = None) -> None:
    """Write the experiment config, results.json/.md, the budget plot (and the resolved config) to ``out``."""
    from proxypointer.eval.benchmark import plot_budgets, to_markdown

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(config_path, out / config_path.name)
    if resolved is not None:
        (out / "resolved-config.json").write_text(json.dumps(resolved, indent=1))
    (out / "results.json").write_text(json.dumps(result, indent=1))
    table = to_markdown(result)
    (out / "results.md").write_text(table + "\n")
    plot_budgets(result, out / "budget_hit.png")
    print(table)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())

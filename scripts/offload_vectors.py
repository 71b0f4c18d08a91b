"""Embed an experiment's document texts elsewhere (a GPU machine) and load them into the eval cache.

The harness keeps every document vector in ``<cache>/vectors.sqlite`` by model and text
(``proxypointer.eval.harness.VectorCache``); a store whose texts are all there is filled without
running the model. This script moves the embedding of a large experiment (FinanceBench: ~115k
chunks, hours on 2 shared CPU cores) to another machine that has sentence-transformers and
the model folder, and brings the float32 vectors back, exact up to floating-point summation
order (``load`` checks a sample against the local CPU model before writing anything).

Usage:
    # 1. here: every text the experiment's dense systems would embed, minus those cached
    .venv/bin/python scripts/offload_vectors.py collect configs/experiments/financebench-dev-md.yaml \\
        [--systems a,b] [--limit-docs N] [--titles] --out build/offload/texts.jsonl.xz
    # 2. there (python3 with sentence-transformers and numpy only; no proxypointer needed)
    python3 scripts/offload_vectors.py embed build/offload/texts.jsonl.xz --model MODEL_DIR \\
        --out /tmp/vectors [--device cuda]
    python3 scripts/offload_vectors.py ship /tmp/vectors --parts 0-3 --out $OUT   # <=16 MiB files
    # 3. here: check a sample against the CPU model, then write into <cache>/vectors.sqlite
    .venv/bin/python scripts/offload_vectors.py load build/offload/texts.jsonl.xz DIR_WITH_PARTS... \\
        --cache .proxypointer/eval-cache

``collect`` runs the real ingestion of each dense system into a throw-away cache with an
embedder that records its input, so the texts are exactly what ``Index.ingest`` embeds.
``--titles`` adds each section's breadcrumb line (``[title > ... > section]``), the texts
scripts/retrieval_lab.py embeds for title vectors.
"""

from __future__ import annotations

import argparse
import json
import logging
import lzma
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PART_ROWS = 10_000  # 10,000 x 384 float32 = 14.6 MiB per part file


def read_texts(path: Path) -> list[str]:
    """Texts of a ``.jsonl.xz`` file written by ``collect`` (one JSON string a line)."""
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class _Recorder:
    """An embedder that records what it is asked to embed and returns one fixed unit vector."""

    def __init__(self, name: str, tokenizer: object, dim: int = 384) -> None:
        self.name, self.tokenizer, self.dim = name, tokenizer, dim
        self.texts: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0
        return out

    def encode_query(self, query: str) -> np.ndarray:
        return self.encode([query])[0]


def collect(args: argparse.Namespace) -> int:
    import yaml

    from proxypointer.config import config_from_dict
    from proxypointer.embed.embedder import SentenceTransformerEmbedder
    from proxypointer.eval.benchmark import load_benchmark
    from proxypointer.eval.harness import VectorCache, settings_from_dict, store_folder, system_specs
    from proxypointer.index import Index

    texts: dict[str, None] = {}
    for cfg_path in args.config:
        data = yaml.safe_load(Path(cfg_path).read_text(encoding="utf-8")) or {}
        pipeline = config_from_dict(data.pop("pipeline", None), f"{cfg_path}: pipeline")
        variants = data.pop("variants", None) or {}
        if args.systems:
            data["systems"] = args.systems.split(",")
        if args.limit_docs is not None:
            data["limit_docs"] = args.limit_docs
        bench_path = Path(data.get("benchmark", ""))
        data["benchmark"] = str(bench_path if bench_path.is_absolute() else (ROOT / bench_path).resolve())
        settings = settings_from_dict(data, str(cfg_path))
        bench = load_benchmark(data["benchmark"], settings.limit_docs or None)
        real = SentenceTransformerEmbedder(pipeline.embedding)
        cache = VectorCache(Path(args.cache or settings.cache) / "vectors.sqlite", real.name)
        with tempfile.TemporaryDirectory() as tmp:
            for spec in system_specs(settings.systems, pipeline, variants):
                if spec.kind != "dense":
                    continue
                rec = _Recorder(real.name, real.tokenizer)
                index = Index(store_folder(spec, bench, tmp, real.name), spec.config, rec)
                index.ingest(sorted(bench.paths.values()))
                if args.titles:
                    from proxypointer.chunk.chunker import breadcrumb_text
                    from proxypointer.eval.harness import build_tree_cached

                    for doc_id, text in bench.texts.items():
                        tree = build_tree_cached(text, doc_id, spec.config, paged=doc_id in bench.pages)
                        for node in tree.walk():
                            rec.texts.append(breadcrumb_text(tree.title_path(node.node_id)))
                index.close()
                new = [t for t in dict.fromkeys(rec.texts) if t not in texts]
                have = cache.get(new)
                new = [t for t in new if VectorCache.key(t) not in have]
                texts.update(dict.fromkeys(new))
                print(f"{cfg_path}: {spec.name}: {len(rec.texts)} texts, {len(new)} new", file=sys.stderr)
        cache.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(out, "wt", encoding="utf-8", preset=6) as f:
        for t in texts:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    print(f"wrote {out}: {len(texts)} texts, {out.stat().st_size / 2**20:.1f} MiB")
    return 0


def embed(args: argparse.Namespace) -> int:
    import time

    from sentence_transformers import SentenceTransformer

    texts = read_texts(Path(args.texts))
    model = SentenceTransformer(str(args.model), device=args.device)
    t0 = time.time()
    vectors = model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False).astype(np.float32)
    seconds = time.time() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(texts), PART_ROWS):
        np.save(out / f"part-{i // PART_ROWS:03d}.npy", vectors[i : i + PART_ROWS])
    print(f"embedded {len(texts)} texts in {seconds:.1f} s ({len(texts) / max(seconds, 1e-9):.0f}/s) "
          f"on {args.device}; {(len(texts) + PART_ROWS - 1) // PART_ROWS} parts in {out}")
    return 0


def ship(args: argparse.Namespace) -> int:
    import shutil

    first, _, last = args.parts.partition("-")
    parts = sorted(Path(args.vectors).glob("part-*.npy"))
    chosen = [p for p in parts if int(first) <= int(p.stem.split("-")[1]) <= int(last or first)]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for p in chosen:
        shutil.copy(p, Path(args.out) / p.name)
    print(f"shipped {[p.name for p in chosen]} of {len(parts)} parts")
    return 0


def load(args: argparse.Namespace) -> int:
    from proxypointer.config import ProxyPointerConfig
    from proxypointer.embed.embedder import SentenceTransformerEmbedder
    from proxypointer.eval.harness import VectorCache

    texts = read_texts(Path(args.texts))
    parts: dict[int, Path] = {}
    for folder in args.vectors:
        for p in Path(folder).glob("part-*.npy"):
            parts[int(p.stem.split("-")[1])] = p
    n_parts = (len(texts) + PART_ROWS - 1) // PART_ROWS
    missing = [i for i in range(n_parts) if i not in parts]
    if missing:
        print(f"missing vector parts {missing} of {n_parts}; ship them first", file=sys.stderr)
        return 1
    vectors = np.concatenate([np.load(parts[i]) for i in range(n_parts)]).astype(np.float32)
    if vectors.shape[0] != len(texts):
        print(f"{vectors.shape[0]} vectors for {len(texts)} texts", file=sys.stderr)
        return 1
    real = SentenceTransformerEmbedder(ProxyPointerConfig().embedding)
    rng = np.random.default_rng(0)
    sample = sorted(rng.choice(len(texts), size=min(args.check, len(texts)), replace=False).tolist())
    local = real.encode([texts[i] for i in sample])
    diff = float(np.abs(local - vectors[sample]).max()) if sample else 0.0
    cos = float(np.min(np.sum(local * vectors[sample], axis=1))) if sample else 1.0
    print(f"check on {len(sample)} texts against the CPU model: max |difference| {diff:.2e}, min cosine {cos:.7f}")
    if diff > args.tolerance:
        print(f"difference above {args.tolerance}: not loaded", file=sys.stderr)
        return 1
    cache = VectorCache(Path(args.cache) / "vectors.sqlite", real.name)
    for i in range(0, len(texts), 5000):
        cache.put(texts[i : i + 5000], vectors[i : i + 5000])
    cache.close()
    print(f"loaded {len(texts)} vectors into {Path(args.cache) / 'vectors.sqlite'} (model {real.name})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="texts the experiment's dense systems would embed, minus cached ones")
    c.add_argument("config", nargs="+", help="experiment YAML(s)")
    c.add_argument("--systems", help="override systems (comma-separated)")
    c.add_argument("--limit-docs", type=int, default=None)
    c.add_argument("--titles", action="store_true", help="also every section's breadcrumb line")
    c.add_argument("--cache", help="eval cache whose vectors.sqlite is consulted (default: the YAML's)")
    c.add_argument("--out", required=True, help=".jsonl.xz file to write")
    e = sub.add_parser("embed", help="embed a texts file with sentence-transformers (the other machine)")
    e.add_argument("texts")
    e.add_argument("--model", required=True, help="model folder (all-MiniLM-L6-v2)")
    e.add_argument("--out", required=True, help="folder for part-NNN.npy files")
    e.add_argument("--device", default="cuda")
    e.add_argument("--batch-size", type=int, default=256)
    s = sub.add_parser("ship", help="copy some part files (each < 16 MiB) to a folder")
    s.add_argument("vectors")
    s.add_argument("--parts", required=True, help="N or N-M (inclusive)")
    s.add_argument("--out", required=True)
    ld = sub.add_parser("load", help="check a sample on the CPU model, then write into <cache>/vectors.sqlite")
    ld.add_argument("texts")
    ld.add_argument("vectors", nargs="+", help="folders holding part-NNN.npy files")
    ld.add_argument("--cache", default=".proxypointer/eval-cache")
    ld.add_argument("--check", type=int, default=64, help="texts re-embedded on the CPU to compare")
    ld.add_argument("--tolerance", type=float, default=1e-4, help="largest |difference| accepted")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    return {"collect": collect, "embed": embed, "ship": ship, "load": load}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())

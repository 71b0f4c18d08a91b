"""scripts/offload_vectors.py: collect finds exactly the texts ingestion embeds; parts round-trip."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("offload_vectors", ROOT / "scripts" / "offload_vectors.py")
ov = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ov)


def _bench(tmp_path: Path) -> Path:
    docs = tmp_path / "bench" / "docs"
    docs.mkdir(parents=True)
    text = "# Paper\n\n## Method\n\nWe use a hashing trick.\n\n## Results\n\nIt works well.\n"
    (docs / "a.md").write_text(text)
    s = text.index("hashing")
    (tmp_path / "bench" / "questions.jsonl").write_text(json.dumps(
        {"id": "q", "doc_id": "a", "question": "trick?", "evidence_spans": [{"start": s, "end": s + 7}]}) + "\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"benchmark: {tmp_path / 'bench'}\nsystems: [proxypointer, flat, bm25-sections]\n"
                   f"cache: {tmp_path / 'cache'}\npipeline: {{}}\n")
    return exp


def test_collect_gives_the_texts_ingestion_embeds(tmp_path, fake_embedder):
    exp = _bench(tmp_path)
    out = tmp_path / "texts.jsonl.xz"
    args = argparse.Namespace(config=[str(exp)], systems=None, limit_docs=None, titles=True, cache=None, out=str(out))
    assert ov.collect(args) == 0
    texts = ov.read_texts(out)
    assert len(texts) == len(set(texts))
    assert "[Paper > Method]\nWe use a hashing trick." in texts  # a proxypointer chunk
    assert any(t.startswith("# Paper") for t in texts)  # a flat window (no breadcrumb)
    assert "[Paper > Results]" in texts  # a title line (--titles)
    # Texts already in the cache's vectors.sqlite are not collected again.
    from proxypointer.eval.harness import VectorCache

    cache = VectorCache(tmp_path / "cache" / "vectors.sqlite", "all-MiniLM-L6-v2")
    cache.put(texts[:2], np.zeros((2, 384), np.float32))
    cache.close()
    assert ov.collect(args) == 0
    assert ov.read_texts(out) == texts[2:]


def test_ship_copies_the_chosen_parts(tmp_path):
    vec = tmp_path / "v"
    vec.mkdir()
    for i in range(3):
        np.save(vec / f"part-{i:03d}.npy", np.full((2, 3), i, np.float32))
    args = argparse.Namespace(vectors=str(vec), parts="1-2", out=str(tmp_path / "o"))
    assert ov.ship(args) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["part-001.npy", "part-002.npy"]

"""What a cross-encoder reranker costs per query on this machine's CPU (README, "Reranking").

No reranker weights ship with proxypointer and none are downloaded here, so the model is a BERT
of the shape of ``cross-encoder/ms-marco-MiniLM-L-6-v2`` (6 layers, hidden size 384, 12 heads,
intermediate size 1536, vocabulary 30,522) with **random weights**, built in this process and
loaded through ``sentence_transformers.CrossEncoder`` from a temporary folder: the cost of a
forward pass depends on the shape, not on the weights. Each query scores ``--candidates`` pairs
of ``--tokens`` word pieces (query and candidate together, special tokens included).

Usage::

    .venv/bin/python scripts/rerank_cost.py                       # 20 candidates x 256 word pieces
    .venv/bin/python scripts/rerank_cost.py --candidates 50 --tokens 512 --threads 2

Prints one JSON line: load seconds, then per batch size the min, median and p90 milliseconds per
query (on a shared machine the min is the closest to an idle CPU's figure).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def build(folder: Path, layers: int, hidden: int, heads: int, intermediate: int) -> None:
    """Write a randomly initialised BERT cross-encoder (one label) and a 30,522-piece vocabulary."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces = [f"w{i}" for i in range(30522 - len(specials) - len(letters))]
    (folder / "vocab.txt").write_text("\n".join(specials + letters + pieces) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=intermediate, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)


def main() -> None:
    """Build, load, and time ``--queries`` queries per batch size after two warm-up queries."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--candidates", type=int, default=20, help="pairs scored per query")
    p.add_argument("--tokens", type=int, default=256, help="word pieces per pair (query + candidate)")
    p.add_argument("--queries", type=int, default=10, help="timed queries per batch size")
    p.add_argument("--batch-sizes", default="8,16,32", help="comma-separated batch sizes")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=384)
    args = p.parse_args()

    import torch
    from sentence_transformers import CrossEncoder

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder, args.layers, args.hidden, max(1, args.hidden // 32), 4 * args.hidden)
        t0 = time.perf_counter()
        model = CrossEncoder(str(folder), device="cpu", max_length=args.tokens, local_files_only=True)
        load_s = time.perf_counter() - t0
    # every pair fills the whole window: a 10-piece query and a candidate cut at --tokens
    query = " ".join(["a"] * 10)
    text = " ".join(chr(ord("a") + i % 26) for i in range(args.tokens))
    pairs = [(query, text)] * args.candidates
    out: dict[str, object] = {"model": f"BERT {args.layers} layers, hidden {args.hidden}, random weights",
                              "candidates": args.candidates, "tokens": args.tokens,
                              "threads": torch.get_num_threads(), "load_s": round(load_s, 2)}
    for bs in (int(b) for b in args.batch_sizes.split(",")):
        for _ in range(2):
            model.predict(pairs, batch_size=bs, show_progress_bar=False)
        times = []
        for _ in range(args.queries):
            t0 = time.perf_counter()
            model.predict(pairs, batch_size=bs, show_progress_bar=False)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        p90 = times[int(0.9 * (len(times) - 1))]
        out[f"batch_{bs}_ms"] = {"min": round(times[0]), "median": round(statistics.median(times)), "p90": round(p90)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

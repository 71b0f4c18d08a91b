"""The service's worker threads with the real model: one traced query encoder shared safely."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from proxypointer.config import ProxyPointerConfig
from proxypointer.embed.embedder import SentenceTransformerEmbedder
from proxypointer.index import Index
from proxypointer.serve.service import Service

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data"
QUERIES = [
    "How many weeks of full pay do new parents get?",
    "What is the deadline for expense claims?",
    "How does the gateway retry failed uploads?",
    "What safety issues were found on the site visit?",
    "Who approves overtime?",
    "What is the maximum payload size?",
    "How much notice is needed for annual leave?",
    "Which TLS versions are accepted?",
]


def test_threads_share_one_traced_encoder_and_get_the_sequential_answers(tmp_path):
    import torch

    # no query cache: every search below runs the traced model
    embedder = SentenceTransformerEmbedder(ProxyPointerConfig().embedding, query_cache_size=0)
    with Index(tmp_path / "store", ProxyPointerConfig(), embedder) as index:
        assert not index.ingest([DATA], show_progress=False).failed
    threads_before = torch.get_num_threads()
    service = Service(tmp_path / "store", ProxyPointerConfig(), embedder)
    try:
        service.warm_up()
        expected = {q: service.search(q, k=3) for q in QUERIES}
        errors: list[BaseException] = []
        mismatches: list[str] = []

        def work(i: int) -> None:
            try:
                for j in range(len(QUERIES)):
                    q = QUERIES[(i + j) % len(QUERIES)]
                    got = service.search(q, k=3)["sections"]
                    want = expected[q]["sections"]
                    if [s["citation"] for s in got] != [s["citation"] for s in want] or any(
                        abs(a["score"] - b["score"]) > 1e-5 for a, b in zip(got, want, strict=True)
                    ):
                        mismatches.append(q)
            except BaseException as err:  # noqa: BLE001 - collected and asserted below
                errors.append(err)

        workers = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        assert not errors and not mismatches, (errors[:3], mismatches[:3])
        assert torch.get_num_threads() == threads_before  # each query's thread setting was undone
    finally:
        service.close()

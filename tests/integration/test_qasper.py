"""Acceptance on real papers with the real model: the gold section is in the top-5."""

import ast
import json

import pytest

from proxypointer.index import Index
from proxypointer.read.readers import read_document
from proxypointer.retrieve.retriever import Retriever

pytestmark = pytest.mark.integration

PAPERS = 4


def _spans(q):
    spans = q.get("evidence_spans") or []
    return ast.literal_eval(spans) if isinstance(spans, str) else spans


@pytest.fixture(scope="module")
def qasper(shared_dir, tmp_path_factory):
    bench = shared_dir / "bench" / "qasper-dev"
    questions = [json.loads(line) for line in (bench / "questions.jsonl").read_text().splitlines() if line.strip()]
    docs = sorted({q["doc_id"] for q in questions if _spans(q)})[:PAPERS]
    index = Index(tmp_path_factory.mktemp("qasper") / "store")
    report = index.ingest([bench / "docs" / f"{d}.md" for d in docs], show_progress=False)
    assert report.indexed == PAPERS and not report.failed
    return index, bench, [q for q in questions if q["doc_id"] in docs and _spans(q)]


def test_gold_section_in_top5_restricted_to_its_paper(qasper):
    index, bench, questions = qasper
    retriever = Retriever(index)
    hits = 0
    for q in questions:
        text = read_document(bench / "docs" / f"{q['doc_id']}.md")
        gold_lines = set()
        for sp in _spans(q):
            a = text.count("\n", 0, sp["start"]) + 1
            b = text.count("\n", 0, max(sp["start"], sp["end"] - 1)) + 1
            gold_lines.update(range(a, b + 1))
        got = retriever.retrieve(q["question"], k=5, doc_ids=[q["doc_id"]])
        assert got and all(s.doc_id == q["doc_id"] for s in got)
        hits += any(gold_lines & set(range(s.start_line, s.end_line + 1)) for s in got)
    # The prototype measured hit@5 = 0.865 per paper on all of qasper-dev with this model.
    assert hits / len(questions) >= 0.7, (hits, len(questions))

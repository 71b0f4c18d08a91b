"""Differential test: the fast heading scanner against markdown-it-py, the reference parser.

If the two disagree on a document, the scanner is wrong (markdown-it-py defines CommonMark +
GFM tables + front matter here).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from property.strategies import heading_documents, markdown_documents

from proxypointer.readers import read_document
from proxypointer.tree import _headings_markdown_it, _scan_headings, normalise_text


def _bench_files(shared_dir: Path) -> list[Path]:
    files = sorted((shared_dir / "bench").rglob("*.md"))
    files += sorted((shared_dir / "cases").rglob("*.md"))
    if not files:
        pytest.skip(f"no markdown files under {shared_dir / 'bench'}")
    return files


def test_scanner_equals_markdown_it_on_every_bench_document(shared_dir):
    files = _bench_files(shared_dir)
    mismatched = []
    headings = 0
    for path in files:
        text = read_document(path)
        fast = _scan_headings(text)
        reference = _headings_markdown_it(text)[:2]
        headings += len(reference[0])
        if fast != reference:
            mismatched.append(str(path))
    assert mismatched == []
    assert len(files) > 1000 and headings > 10000  # the corpus was really there


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown_documents(raw=True))
def test_scanner_equals_markdown_it_on_random_markdown(raw):
    text = normalise_text(raw)
    assert _scan_headings(text) == _headings_markdown_it(text)[:2]


@settings(max_examples=150, deadline=None)
@given(heading_documents())
def test_scanner_equals_markdown_it_on_heading_documents(text):
    assert _scan_headings(text) == _headings_markdown_it(text)[:2]

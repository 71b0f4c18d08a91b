"""Tree invariants over every markdown file of the shared benchmarks (../shared/bench).

The benchmarks are real converter output and papers (qasper, long reports, 10-K filings):
each document must give a tree whose ranges nest, whose own texts cover the document once
and whose titles are clean (tests/property/invariants.py) in CommonMark mode, with the
defaults (converter rules on the documents that look converted) and with every mode on.
Skips, saying why, where ../shared is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from property.invariants import check_tree_invariants

from proxypointer.config import TreeConfig
from proxypointer.read.readers import read_document

COMMONMARK = TreeConfig(converter_output="off")
ALL_MODES = TreeConfig(converter_output="on", bold_headings=True, numbered_headings=True, html_headings=True,
                       relevel_numbered=True)


def _bench_files(shared_dir: Path) -> list[Path]:
    files = sorted((shared_dir / "bench").rglob("*.md"))
    if not files:
        pytest.skip(f"no markdown files under {shared_dir / 'bench'} (large benchmarks are not in the repo)")
    return files


def test_tree_invariants_on_every_bench_document(shared_dir):
    files = _bench_files(shared_dir)
    failed: list[str] = []
    headings = 0
    for path in files:
        text = read_document(path)
        try:
            tree = check_tree_invariants(text, COMMONMARK, twice=False)
            check_tree_invariants(text, syntax=False, twice=False)
            if not path.relative_to(shared_dir / "bench").parts[0].startswith("qasper"):
                check_tree_invariants(text, ALL_MODES, syntax=False, twice=False)
        except AssertionError as err:
            failed.append(f"{path}: {err}")
            continue
        headings += sum(1 for n in tree.nodes if n.kind == "heading")
    assert failed == []
    assert len(files) > 1000 and headings > 10000  # the corpus was really there

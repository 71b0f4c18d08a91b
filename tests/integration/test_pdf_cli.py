"""PDFs through `proxypointer ingest` for real: opendataloader-pdf (JVMs), MiniLM, Chroma, the CLI.

Pages of sections that start mid-page, span pages or start at the top of a page; citations;
every bad-input case through `ingest` (exit 1, the other files indexed, nothing partial);
Java missing; `tree FILE.pdf`; and one real 10-K filing of ../shared/bench/financebench-dev
whose known evidence page must be in the top 5.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("reportlab", reason="reportlab (dev dependency) writes the test PDFs")
pytest.importorskip("pypdf", reason="pypdf (extra pdf) is needed")
pytest.importorskip("opendataloader_pdf", reason="the pdf extra is not installed: pip install -e '.[pdf]'")
if shutil.which("java") is None:
    pytest.skip("Java not found: opendataloader-pdf needs a Java 11+ runtime", allow_module_level=True)

from pdfdocs import (  # noqa: E402
    write_encrypted,
    write_report,
    write_scanned,
    write_truncated,
    write_zero_pages,
)

pytestmark = pytest.mark.integration
EXE = str(Path(sys.executable).parent / "proxypointer")
UNIT_TESTS = Path(__file__).resolve().parents[1] / "unit"


def run(*args, cwd, env=None, check=True):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    p = subprocess.run([EXE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """report.pdf (3 pages) + notes.md ingested with the CLI into ./.proxypointer."""
    cwd = tmp_path_factory.mktemp("pdfcli")
    docs = cwd / "docs"
    docs.mkdir()
    write_report(docs / "report.pdf")
    (docs / "notes.md").write_text("# Notes\n\nThe anvil supplier changed in May.\n", encoding="utf-8")
    p = run("ingest", "docs", cwd=cwd)
    assert "2 documents (2 indexed" in p.stdout, p.stdout
    return cwd


def query(cwd, question, *extra):
    return json.loads(run("query", question, "--json", *extra, cwd=cwd).stdout)["sections"]


def test_the_fake_converter_of_the_unit_tests_writes_what_opendataloader_writes(ingested):
    sys.path.insert(0, str(UNIT_TESTS))
    from test_pdf_ingest import REPORT_MD

    (cached,) = (ingested / ".proxypointer" / "converted").glob("*/*.md")
    assert cached.read_text(encoding="utf-8") == REPORT_MD


def test_sections_get_their_pages_and_pdf_citations(ingested):
    risk = query(ingested, "roadrunners and competition from other suppliers", "-k", "1", "--doc", "report")[0]
    assert (risk["title"], risk["page_start"], risk["page_end"]) == ("Risk Factors", 1, 2)  # mid-page, spans
    assert risk["citation"] == f"report.pdf#page=1 (pp. 1-2; L{risk['start_line']}-L{risk['end_line']})"
    assert "<!--" not in risk["text"] and "Rocket skates" in risk["text"]
    fin = query(ingested, "net income five million dollars", "-k", "1", "--doc", "report.pdf")[0]
    assert (fin["title"], fin["page_start"], fin["page_end"]) == ("Financial Statements", 3, 3)  # top of page 3
    assert fin["citation"].startswith("report.pdf#page=3 (p. 3; L")
    notes = query(ingested, "anvil supplier", "-k", "1", "--doc", "notes")[0]
    assert (notes["page_start"], notes["page_end"]) == (0, 0) and notes["citation"].startswith("notes.md#L")
    text = run("query", "net income five million dollars", "-k", "1", "--doc", "report", cwd=ingested).stdout
    assert text.startswith("[1] report.pdf#page=3 (p. 3; L")


def test_unchanged_pdf_converts_and_embeds_nothing(ingested):
    rep = json.loads(run("ingest", "docs", "--json", cwd=ingested).stdout)
    assert (rep["indexed"], rep["unchanged"], rep["embedded"]) == (0, 2, 0)
    assert rep["stage_seconds"]["convert"] == 0.0


def test_tree_of_a_pdf_shows_pages(ingested):
    out = run("tree", "docs/report.pdf", cwd=ingested).stdout.splitlines()
    assert out[0] == "docs/report.pdf (20 lines, 3 pages)"
    # a converted PDF gets the converter rules: unnumbered headings at level 2
    assert any(ln.startswith("## Risk Factors  L") and ln.endswith("pp. 1-2") for ln in out)
    assert any(ln.startswith("## Financial Statements  L") and ln.endswith("p. 3") for ln in out)
    nodes = json.loads(run("tree", "--json", "docs/report.pdf", cwd=ingested).stdout)["nodes"]
    assert {(n["title"], n["page_start"], n["page_end"]) for n in nodes} >= {("Risk Factors", 1, 2)}


def test_every_bad_pdf_fails_alone_through_ingest(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    good = write_report(docs / "good.pdf")
    (docs / "notes.md").write_text("# Notes\n\nanvils\n", encoding="utf-8")
    bad = {
        "locked.pdf": (write_encrypted(docs / "locked.pdf", good), "encrypted"),
        "scan.pdf": (write_scanned(docs / "scan.pdf"), "no text layer"),
        "cut.pdf": (write_truncated(docs / "cut.pdf", good), "truncated or corrupt"),
        "zero.pdf": (write_zero_pages(docs / "zero.pdf"), "no pages"),
    }
    p = run("ingest", "docs", "--json", cwd=tmp_path, check=False)
    assert p.returncode == 1
    rep = json.loads(p.stdout)
    assert rep["indexed"] == 2
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == len(bad)
    for name, (path, what) in bad.items():
        (line,) = [e for e in errors if name in e]
        assert line.startswith(f"error: {path}: ") and what in line, line
    status = json.loads(run("status", "--json", cwd=tmp_path).stdout)
    assert status["documents"] == 2
    stored = {f.name.split(".")[0] for f in (tmp_path / ".proxypointer" / "sources").glob("*/*")}
    assert len(stored) == 2  # the good PDF's text and the note's, nothing of the bad files
    again = run("ingest", "docs", "--json", cwd=tmp_path, check=False)
    assert again.returncode == 1 and json.loads(again.stdout)["unchanged"] == 2


def test_java_missing_is_one_line_per_pdf_and_the_markdown_is_indexed(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    write_report(docs / "a.pdf")
    (docs / "notes.md").write_text("# Notes\n\nanvils\n", encoding="utf-8")
    bin_dir = tmp_path / "bin"  # PATH without java
    bin_dir.mkdir()
    p = run("ingest", "docs", cwd=tmp_path, env={"PATH": str(bin_dir)}, check=False)
    assert p.returncode == 1
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith("error: ")]
    assert line.startswith(f"error: {docs / 'a.pdf'}: not indexed: ") and "Java not found" in line
    assert "1 documents (1 indexed" in p.stdout or "2 documents (1 indexed" in p.stdout


# -- one real filing -------------------------------------------------------------------------
FILING = "AMERICANWATERWORKS_2020_10K"
QUESTION_ID = "financebench_id_05718"  # cash dividends paid in FY2020, statement of cash flows: page 86


def test_a_real_10k_is_converted_and_its_evidence_page_is_in_the_top_5(shared_dir, tmp_path):
    bench = shared_dir / "bench" / "financebench-dev"
    pdf = bench / "docs" / f"{FILING}.pdf"
    if not pdf.is_file():
        pytest.skip(f"{pdf} not found (../shared/bench/financebench-dev)")
    rows = [json.loads(ln) for ln in (bench / "questions.jsonl").read_text(encoding="utf-8").splitlines() if ln]
    (q,) = [r for r in rows if r["id"] == QUESTION_ID]
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(pdf, docs / pdf.name)
    p = run("ingest", "docs", "--json", cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert rep["indexed"] == 1 and rep["stage_seconds"]["convert"] > 0
    top = query(tmp_path, q["question"], "-k", "5")
    assert all(s["citation"].startswith(f"{FILING}.pdf#page=") for s in top)
    covered = [s for s in top if any(s["page_start"] <= e <= s["page_end"] for e in q["evidence_pages"])]
    assert covered, [(s["citation"], s["title"]) for s in top]

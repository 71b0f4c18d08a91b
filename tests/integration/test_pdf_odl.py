"""opendataloader-pdf for real (starts JVMs): pages, headers/footers, bad input, CLI convert."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("reportlab", reason="reportlab (dev dependency) writes the test PDFs")
pytest.importorskip("pypdf", reason="pypdf (extra pdf) is needed")
pytest.importorskip("opendataloader_pdf", reason="the extra is not installed: pip install -e '.[pdf]'")
if shutil.which("java") is None:
    pytest.skip("Java not found: opendataloader-pdf needs a Java 11+ runtime", allow_module_level=True)

from pdfdocs import (  # noqa: E402
    HEADER,
    REPORT_PAGES,
    write_encrypted,
    write_lines,
    write_report,
    write_scanned,
    write_styled,
    write_truncated,
    write_zero_pages,
)

from proxypointer.cli import main
from proxypointer.config import TreeConfig
from proxypointer.read.pdf import OpenDataLoaderConverter, convert_pdf, convert_pdfs
from proxypointer.tree.build import build_tree

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return write_report(tmp_path_factory.mktemp("pdf") / "report.pdf")


@pytest.fixture(scope="module")
def converted(report):
    return convert_pdf(report)


def _line(doc, text: str) -> int:
    return next(i for i, ln in enumerate(doc.markdown.splitlines(), 1) if text in ln)


def test_every_line_knows_its_page(converted):
    doc = converted
    assert doc.converter == "opendataloader-pdf" and doc.converter_version
    assert doc.page_count == 3 and doc.pages.page_count == 3
    assert doc.pages.style == "opendataloader"
    assert doc.pages.page_of(_line(doc, "Acme makes anvils")) == 1
    assert doc.pages.page_of(_line(doc, "Rocket skates")) == 2
    assert doc.pages.page_of(_line(doc, "Net income was five million")) == 3


def test_sections_of_the_tree_get_the_right_pages(converted):
    doc = converted
    tree = build_tree(doc.markdown, "report", TreeConfig())
    by_title = {n.title: n for n in tree.nodes}
    risk, fin = by_title["Risk Factors"], by_title["Financial Statements"]
    assert doc.markdown.splitlines()[fin.start_line - 1].startswith("#")
    # a section starting mid-page and spanning two pages with its own text (no subsection)
    assert not [n for n in tree.nodes if n.parent_id == risk.node_id]
    assert doc.pages.page_of(risk.start_line) == 1
    assert doc.pages.page_range(risk.start_line, risk.end_line) == (1, 2)
    # a heading at the top of a page: the heading line is on that page, not the one before
    assert doc.pages.page_of(fin.start_line) == 3
    assert doc.pages.page_range(fin.start_line, fin.end_line) == (3, 3)
    assert doc.pages.page_range(by_title["Business Overview"].start_line, by_title["Business Overview"].end_line) == (
        1,
        1,
    )


def test_headers_and_footers_are_left_out(converted, report):
    assert HEADER not in converted.markdown
    lines = converted.markdown.splitlines()
    content = [ln.strip() for i, ln in enumerate(lines, 1) if i not in converted.pages.marker_lines]
    assert not any(ln in ("1", "2", "3") for ln in content)  # the page-number footers
    kept = convert_pdf(report, OpenDataLoaderConverter(include_header_footer=True))
    assert HEADER in kept.markdown
    assert kept.key != converted.key


def test_output_is_deterministic(report, converted):
    again = convert_pdf(report)
    assert again.markdown == converted.markdown and again.key == converted.key


def test_bad_files_fail_alone_in_a_parallel_batch(tmp_path, report):
    same_name = tmp_path / "b" / "report.pdf"  # same file name as the good one, other folder
    same_name.parent.mkdir()
    write_report(same_name, REPORT_PAGES[2:])
    bad = [
        write_encrypted(tmp_path / "locked.pdf", report),
        write_zero_pages(tmp_path / "zero.pdf"),
        write_scanned(tmp_path / "scan.pdf"),
        write_truncated(tmp_path / "cut.pdf", report),
    ]
    batch = convert_pdfs([report, *bad, same_name], workers=2)
    assert [c.path for c in batch.converted] == [report, same_name]
    assert "Net income" in batch.converted[1].markdown and "Acme makes anvils" not in batch.converted[1].markdown
    messages = [f.message for f in batch.failed]
    assert [f.path for f in batch.failed] == bad
    assert "encrypted" in messages[0]
    assert "no pages" in messages[1]
    assert "no text layer" in messages[2]
    assert "truncated or corrupt" in messages[3]


def test_cli_convert_writes_markdown_and_exits_1_naming_the_failed_file(tmp_path, report, capsys):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(report, src / "good.pdf")
    write_scanned(src / "scan.pdf")
    out = tmp_path / "out"
    code = main(["convert", str(src), "-o", str(out), "-q"])
    captured = capsys.readouterr()
    assert code == 1
    assert "scan.pdf" in captured.err and "no text layer" in captured.err
    written = (out / "good.md").read_text(encoding="utf-8")
    assert written.startswith("<!-- page 1 -->")
    assert not (out / "scan.md").exists()
    # one file, -o naming the output file
    code = main(["convert", str(src / "good.pdf"), "-o", str(tmp_path / "one.md"), "-q"])
    assert code == 0 and (tmp_path / "one.md").read_text(encoding="utf-8") == written


def test_headings_set_in_different_type_nest_by_their_type(tmp_path):
    doc = convert_pdf(write_styled(tmp_path / "handbook.pdf"))
    assert "## Safety Programme {.styled}" in doc.markdown  # 12 pt bold italic, 2 headings
    assert "### Weekly Checks {.styled}" in doc.markdown  # 12 pt bold, 4 headings: below it
    tree = build_tree(doc.markdown, "handbook", TreeConfig())
    paths = {tuple(tree.title_path(n.node_id)) for n in tree.nodes if n.kind == "heading"}
    assert ("Operations Handbook", "Maintenance Schedule", "Weekly Checks") in paths
    assert ("Operations Handbook", "Safety Programme", "Incident Reporting") in paths
    # without the rule the converter's levels are kept as written, and flattened by the tree
    plain = convert_pdf(tmp_path / "handbook.pdf", OpenDataLoaderConverter(heading_styles=False))
    assert "{.styled}" not in plain.markdown
    flat = build_tree(plain.markdown, "handbook", TreeConfig())
    assert max(len(flat.title_path(n.node_id)) for n in flat.nodes) < 3


def test_bold_titles_run_into_a_paragraph_become_headings(tmp_path):
    bold, body = "Helvetica-Bold", "Helvetica"
    pdf = write_lines(tmp_path / "10k.pdf", [
        (bold, "PART I"),
        (body, "Acme Corp makes anvils and rockets for desert customers."),
        (body, "It sells them in forty countries through its own stores."),
        (bold, "Item 1. Business"),
        (bold, "General"),
        (body, "Acme traces its origins to a forge founded in 1851 in Ohio."),
        (bold, "Competition"),
        (body, "Rivals sell cheaper anvils in every market we serve today."),
    ])
    tree = build_tree(convert_pdf(pdf).markdown, "10k", TreeConfig(), paged=True)
    paths = {tuple(tree.title_path(n.node_id)) for n in tree.nodes if n.kind == "heading"}
    # a filing: the default nests Part > Item > the item's run-in titles
    assert ("PART I", "Item 1. Business", "General") in paths
    assert ("PART I", "Item 1. Business", "Competition") in paths
    # without the rule the converter runs the titles into the paragraph about Acme's stores
    plain = convert_pdf(pdf, OpenDataLoaderConverter(run_in_titles=False)).markdown
    assert "own stores. Item 1. Business General Acme traces" in plain


def test_pypdf_warnings_about_a_damaged_file_stay_off_the_command_line(tmp_path, caplog):
    import logging
    import re

    pdf = write_lines(tmp_path / "memo.pdf", [("Helvetica", "Acme Corp makes anvils for desert customers.")])
    data = pdf.read_bytes()
    at = re.search(rb"startxref\s+(\d+)", data)
    pdf.write_bytes(data[: at.start(1)] + str(int(at.group(1)) + 7).encode() + data[at.end(1) :])  # pypdf warns
    try:
        with caplog.at_level(logging.WARNING):
            main(["convert", str(pdf), "-o", str(tmp_path / "memo.md")])
        assert not [r for r in caplog.records if r.name.startswith("pypdf")]
        with caplog.at_level(logging.WARNING):
            main(["-v", "convert", str(pdf), "-o", str(tmp_path / "memo2.md")])
        assert [r for r in caplog.records if r.name.startswith("pypdf")]  # -v shows them
    finally:  # -v set these loggers' levels for the process
        logging.getLogger("pypdf").setLevel(logging.NOTSET)
        logging.getLogger("proxypointer").setLevel(logging.NOTSET)


def test_pypdf_warnings_stay_off_the_python_api_output_too(tmp_path, caplog):
    # found by an audit: Index.ingest printed pypdf's "startxref" warnings twice on stderr
    import logging
    import re

    from proxypointer.errors import DocumentError
    from proxypointer.read.readers import PDFReader

    pdf = write_lines(tmp_path / "memo.pdf", [("Helvetica", "Acme Corp makes anvils for desert customers.")])
    data = pdf.read_bytes()
    at = re.search(rb"startxref\s+(\d+)", data)
    pdf.write_bytes(data[: at.start(1)] + str(int(at.group(1)) + 7).encode() + data[at.end(1) :])
    log = logging.getLogger("pypdf")
    level = log.level
    log.setLevel(logging.NOTSET)  # no application chose a level (a CLI test in this process may have)
    try:
        with caplog.at_level(logging.WARNING), pytest.raises(DocumentError, match="memo.pdf: truncated or corrupt"):
            PDFReader().read(pdf.read_bytes(), str(pdf))  # our one line names the file
        assert not [r for r in caplog.records if r.name.startswith("pypdf")]
        assert log.level == logging.NOTSET  # and its level is put back
    finally:
        log.setLevel(level)

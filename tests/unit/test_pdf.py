"""pdf.py without Java: batch machinery, bad input, keys, dependency checks.

A small in-process converter (pypdf text per page, opendataloader's page separator) stands in
for the JVM; tests that run opendataloader-pdf itself are in tests/integration/test_pdf_odl.py.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

pytest.importorskip("reportlab", reason="reportlab (dev dependency) writes the test PDFs")
pytest.importorskip("pypdf", reason="pypdf (extra pdf / dev dependency) is needed")

from pdfdocs import (  # noqa: E402
    REPORT_PAGES,
    write_encrypted,
    write_owner_only,
    write_report,
    write_scanned,
    write_truncated,
    write_zero_pages,
)

from proxypointer.errors import ConfigError, DocumentError, MissingDependencyError
from proxypointer.read.pdf import (
    ConvertedPDF,
    OpenDataLoaderConverter,
    PDFConverter,
    _groups,
    _Job,
    conversion_key,
    convert_pdf,
    convert_pdfs,
    find_pdfs,
)
from proxypointer.tree.pages import BUILTIN_STYLES


class PypdfText(PDFConverter):
    """Text of each page by pypdf, each page opened by ``<!-- page N -->``; runs in-process."""

    name = "pypdf-text"
    marker_style = BUILTIN_STYLES["opendataloader"]

    def __init__(self, flavour: str = "plain") -> None:
        self.flavour = flavour
        self.groups: list[list[Path]] = []

    @property
    def version(self) -> str:
        import pypdf

        return pypdf.__version__

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        return (("flavour", self.flavour),)

    def check_available(self) -> None:
        import pypdf  # noqa: F401

    def convert_group(self, paths, done):
        from pypdf import PdfReader

        self.groups.append(list(paths))
        out = []
        for i, p in enumerate(paths):
            try:
                reader = PdfReader(p)
                parts = []
                for n, page in enumerate(reader.pages, 1):
                    parts += [f"<!-- page {n} -->", ""]
                    parts += [ln for ln in (page.extract_text() or "").splitlines() if ln.strip()] + [""]
                out.append("\n".join(parts))
            except Exception as err:  # noqa: BLE001 - a test converter: any failure is the file's
                out.append(DocumentError(f"{p}: corrupt ({err}); export it again"))
            done(i)
        return out


@pytest.fixture
def report(tmp_path) -> Path:
    return write_report(tmp_path / "report.pdf")


def test_pages_of_a_converted_report(report):
    doc = convert_pdf(report, PypdfText())
    assert isinstance(doc, ConvertedPDF)
    assert doc.page_count == 3 and doc.pages.page_count == 3
    lines = doc.markdown.splitlines()
    assert doc.markdown.endswith("\n")
    assert len(doc.pages.line_pages) == len(lines)

    def page(text: str) -> int:
        return doc.pages.page_of(next(i for i, ln in enumerate(lines, 1) if text in ln))

    assert page("Business Overview") == 1
    assert page("Risk Factors") == 1  # a section starting mid-page
    assert page("Rocket skates") == 2  # ... continuing on the next page
    assert page("Financial Statements") == 3  # a heading at the top of a page
    assert {lines[i - 1] for i in doc.pages.marker_lines} == {f"<!-- page {n} -->" for n in (1, 2, 3)}


def test_batch_converts_good_files_and_names_each_bad_one(tmp_path, report):
    bad = {
        "encrypted": write_encrypted(tmp_path / "locked.pdf", report),
        "zero": write_zero_pages(tmp_path / "zero.pdf"),
        "scanned": write_scanned(tmp_path / "scan.pdf"),
        "truncated": write_truncated(tmp_path / "cut.pdf", report),
        "empty": tmp_path / "empty.pdf",
        "notpdf": tmp_path / "notes.pdf",
        "missing": tmp_path / "missing.pdf",
    }
    bad["empty"].write_bytes(b"")
    bad["notpdf"].write_text("just some text\n")
    other = write_report(tmp_path / "other.pdf", REPORT_PAGES[:1])
    batch = convert_pdfs([report, *bad.values(), other], PypdfText(), workers=2)
    assert [c.path for c in batch.converted] == [report, other]
    assert batch.pages == 4
    messages = {f.path: f.message for f in batch.failed}
    assert list(messages) == list(bad.values())  # input order
    for path, message in messages.items():
        assert message.startswith(f"{path}: ")
        assert "; " in message  # what is wrong; what to do
    assert "password" in messages[bad["encrypted"]] and "qpdf --decrypt" in messages[bad["encrypted"]]
    assert "no pages" in messages[bad["zero"]]
    assert "no text layer" in messages[bad["scanned"]] and "OCR" in messages[bad["scanned"]]
    assert "corrupt" in messages[bad["truncated"]]
    assert "empty file" in messages[bad["empty"]]
    assert "not a PDF" in messages[bad["notpdf"]]
    assert "no such file" in messages[bad["missing"]]
    assert all(isinstance(f.error, DocumentError) for f in batch.failed)
    assert "2 PDF(s), 4 pages" in batch.summary() and "7 failed" in batch.summary()


def test_single_file_raises_its_document_error(tmp_path):
    with pytest.raises(DocumentError, match="no text layer"):
        convert_pdf(write_scanned(tmp_path / "scan.pdf"), PypdfText())


class BlindConverter(PypdfText):
    """A converter that reads no text: page markers only (a font encoding it cannot decode)."""

    name = "blind"

    def convert_group(self, paths, done):
        out = []
        for i, p in enumerate(paths):
            from pypdf import PdfReader

            out.append("\n".join(f"<!-- page {n} -->\n" for n in range(1, len(PdfReader(p).pages) + 1)))
            done(i)
        return out


def test_a_text_pdf_the_converter_cannot_read_falls_back_to_pypdf_text(tmp_path, report, caplog):
    # issue 32: "no text layer (a scanned PDF?)" was said of a PDF whose text pypdf reads
    doc = convert_pdf(report, BlindConverter())
    assert "pypdf read text on 3 of 3 page(s)" in caplog.text and str(report) in caplog.text
    lines = doc.markdown.splitlines()
    line = next(i for i, ln in enumerate(lines, 1) if "Net income was five million" in ln)
    assert doc.pages.page_of(line) == 3 and doc.page_count == 3
    assert not any(ln.startswith("#") for ln in lines)  # plain text: no headings made up
    # a scan has no text for pypdf either: still named as one
    with pytest.raises(DocumentError, match="no text layer"):
        convert_pdf(write_scanned(tmp_path / "scan.pdf"), BlindConverter())


def test_the_fallback_keeps_plain_text_plain():
    from proxypointer.lines import plain_line as escape

    assert escape("# 1 Introduction") == "\\# 1 Introduction"
    assert escape("1. Revenue") == "\\1. Revenue" and escape("2023 revenue rose") == "2023 revenue rose"
    assert escape("- 5%") == "\\- 5%" and escape("===") == "\\===" and escape("Plain") == "Plain"


def test_owner_password_only_pdf_is_not_refused(tmp_path, report):
    # Many real filings are "encrypted" with an empty user password (permissions only).
    doc = convert_pdf(write_owner_only(tmp_path / "perm.pdf", report), PypdfText())
    assert doc.page_count == 3


def test_workers_give_the_same_result_in_input_order(tmp_path):
    files = [write_report(tmp_path / f"r{k}.pdf", REPORT_PAGES[: 1 + k % 3]) for k in range(5)]
    one = convert_pdfs(files, PypdfText(), workers=1)
    conv = PypdfText()
    three = convert_pdfs(files, conv, workers=3)
    assert len(conv.groups) == 3
    assert [c.path for c in three.converted] == files
    assert [(c.markdown, c.pages) for c in three.converted] == [(c.markdown, c.pages) for c in one.converted]


def test_groups_balance_pages_deterministically():
    jobs = [_Job(i, Path(f"{i}.pdf"), "x", p) for i, p in enumerate([300, 10, 150, 140, 20, -1])]
    groups = _groups(jobs, 2)
    assert groups == _groups(list(reversed(jobs)), 2)
    loads = sorted(sum(max(j.pages, 1) for j in g) for g in groups)
    assert loads == [310, 311]  # largest first, each to the lightest list
    assert all([j.index for j in g] == sorted(j.index for j in g) for g in groups)
    assert len(_groups(jobs[:1], 4)) == 1


def test_duplicates_are_converted_once(report):
    batch = convert_pdfs([report, str(report), report.parent / "." / report.name], PypdfText())
    assert len(batch.converted) == 1


def test_find_pdfs_walks_folders_skipping_hidden_ones(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".cache").mkdir()
    for rel in ("a/x.pdf", "a/b/y.PDF", ".cache/z.pdf", "a/notes.md"):
        (tmp_path / rel).write_bytes(b"%PDF-1.4\n")
    found = find_pdfs([tmp_path, tmp_path / "a" / "x.pdf"])
    assert found == [tmp_path / "a" / "b" / "y.PDF", tmp_path / "a" / "x.pdf"]


def test_conversion_key_follows_bytes_converter_version_and_options(tmp_path, report):
    conv = PypdfText()
    doc = convert_pdf(report, conv)
    assert doc.key == conv.key(doc.pdf_sha256) == conversion_key(doc.pdf_sha256, conv.name, conv.version, conv.options)
    assert len(doc.key) == 64
    assert convert_pdf(report, PypdfText()).key == doc.key  # same input, same key
    assert convert_pdf(report, PypdfText("other")).key != doc.key  # an option changed
    assert conversion_key(doc.pdf_sha256, conv.name, "0.0.1", conv.options) != doc.key
    changed = write_report(tmp_path / "changed.pdf", REPORT_PAGES[:2])
    assert convert_pdf(changed, conv).key != doc.key


# --- opendataloader-pdf set-up, without starting a JVM ---------------------------------------


def test_opendataloader_options_are_validated_and_part_of_the_key():
    with pytest.raises(ConfigError, match="pdf.table_method"):
        OpenDataLoaderConverter(table_method="lattice")
    with pytest.raises(ConfigError, match="pdf.reading_order"):
        OpenDataLoaderConverter(reading_order="columns")
    opts = dict(OpenDataLoaderConverter().options)
    assert opts["markdown_page_separator"] == "<!-- page %page-number% -->"
    assert opts["include_header_footer"] == "false" and opts["image_output"] == "off"
    assert OpenDataLoaderConverter(table_method="cluster").options != OpenDataLoaderConverter().options


def test_missing_java_is_one_clear_error(tmp_path):
    conv = OpenDataLoaderConverter(java=str(tmp_path / "no-such-java"))
    with pytest.raises(MissingDependencyError, match="Java not found.*Java 11\\+"):
        conv.java_version()


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for java")
@pytest.mark.parametrize(("banner", "major"), [('java version "1.8.0_292"', 8), ('openjdk version "17.0.15" 2025', 17)])
def test_java_version_is_read_and_old_java_refused(tmp_path, banner, major):
    fake = tmp_path / "java"
    fake.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    conv = OpenDataLoaderConverter(java=str(fake))
    assert conv.java_version() == major
    if major < 11:
        pytest.importorskip("opendataloader_pdf", reason="the jar check runs first")
        with pytest.raises(MissingDependencyError, match="Java 8 is too old"):
            conv.check_available()


def test_missing_extra_is_one_clear_error(monkeypatch, tmp_path, report):
    monkeypatch.setitem(sys.modules, "opendataloader_pdf", None)  # import fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'proxypointer\[pdf\]'"):
        OpenDataLoaderConverter().check_available()
    with pytest.raises(MissingDependencyError, match="opendataloader-pdf is not installed"):
        convert_pdfs([report])


class _NoCheck(PypdfText):
    def check_available(self) -> None:  # the converter itself needs nothing; the preflight needs pypdf
        pass

    @property
    def version(self) -> str:
        return "0"


def test_missing_pypdf_is_one_clear_error(monkeypatch, report):
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(MissingDependencyError, match="pypdf is not installed"):
        convert_pdfs([report], _NoCheck())


def test_workers_must_be_positive(report):
    with pytest.raises(ValueError, match="workers"):
        convert_pdfs([report], PypdfText(), workers=0)


def test_importing_pdf_and_pages_loads_no_converter():
    import subprocess

    code = (
        "import sys, proxypointer.read.pdf, proxypointer.tree.pages, proxypointer.cli;"
        "print([m for m in ('opendataloader_pdf', 'pypdf', 'torch', 'chromadb') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


FAKE_JAVA = r'''#!{python}
"""Stands in for `java -jar opendataloader-pdf-cli.jar`: logs and writes as the CLI does."""
import os, sys
args = sys.argv[1:]
if args == ["-version"]:
    print('openjdk version "17.0.2" 2022-01-18', file=sys.stderr)
    sys.exit(0)
rest = args[args.index("-jar") + 2:]
inputs = rest[: rest.index("--output-dir")]
out = rest[rest.index("--output-dir") + 1]
code = 0
for path in inputs:
    name = os.path.basename(path)
    stem = name[:-4]
    target = os.path.basename(os.path.realpath(path))
    print(f"INFO: File name: {os.path.abspath(path)}", file=sys.stderr, flush=True)
    if "locked" in target:
        print(f"Error: '{name}' is password-protected. Use --password option.", flush=True)
        code = 1
        continue
    with open(os.path.join(out, stem + ".md"), "w") as f:
        if "crash" in target:
            f.write("<!-- page 1 -->\n\npartial")
            print("Exception in thread main java.lang.OutOfMemoryError: Java heap space", file=sys.stderr)
            sys.exit(1)
        f.write(f"<!-- page 1 -->\n\n# {target}\n\ntext\n")
    print(f"INFO: Created {os.path.join(out, stem + '.md')}", file=sys.stderr, flush=True)
sys.exit(code)
'''


@pytest.mark.skipif(os.name != "posix", reason="a script stands in for java")
def test_jvm_log_is_read_a_crash_is_retried_and_partial_output_refused(tmp_path, monkeypatch):
    fake = tmp_path / "java"
    fake.write_text(FAKE_JAVA.replace("{python}", sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(OpenDataLoaderConverter, "_jar", lambda self: tmp_path / "cli.jar")
    names = ["a.pdf", "crash.pdf", "b.pdf", "locked.pdf"]
    files = [write_report(tmp_path / n, REPORT_PAGES[:1]) for n in names]
    done: list[int] = []
    conv = OpenDataLoaderConverter(java=str(fake))
    results = conv.convert_group(files, done.append)
    assert sorted(done) == [0, 1, 2, 3]  # each file reported once
    assert "# a.pdf" in results[0] and "# b.pdf" in results[2]  # b: converted by a new JVM
    assert isinstance(results[1], DocumentError) and "ran out of memory on this file" in str(results[1])
    assert "raise pdf.java_heap_mb" in str(results[1])  # the setting to change, named
    assert str(results[1]).startswith(f"{files[1]}: ")
    assert isinstance(results[3], DocumentError) and "encrypted" in str(results[3])
    batch = convert_pdfs(files, conv, workers=2)
    assert [c.path.name for c in batch.converted] == ["a.pdf", "b.pdf"]
    assert [f.path.name for f in batch.failed] == ["crash.pdf", "locked.pdf"]


def test_java_heap_is_sized_from_the_machine_and_the_workers(tmp_path):
    from proxypointer.config import PDFConfig
    from proxypointer.read.pdf import AUTO_HEAP_MB, MIN_AUTO_HEAP_MB, auto_heap_mb, converter_from_config

    def xmx(conv):
        return [a for a in conv._command("java", tmp_path / "x.jar", ["in.pdf"], tmp_path) if a.startswith("-Xmx")]

    # never the JVM's own default (a quarter of the memory per JVM: 5.3 GB for one 10-K here)
    assert xmx(converter_from_config(PDFConfig())) == [f"-Xmx{auto_heap_mb(1)}m"]
    assert xmx(converter_from_config(PDFConfig(workers=3))) == [f"-Xmx{auto_heap_mb(3)}m"]
    assert xmx(converter_from_config(PDFConfig(java_heap_mb=700))) == ["-Xmx700m"]
    # all JVMs together at most a quarter of physical memory, each between the bounds
    assert auto_heap_mb(1, physical_mb=24_000) == AUTO_HEAP_MB
    assert auto_heap_mb(4, physical_mb=8_000) == 500
    assert auto_heap_mb(8, physical_mb=2_000) == MIN_AUTO_HEAP_MB
    # the heap does not change the output, so it is not part of the conversion key
    assert converter_from_config(PDFConfig(java_heap_mb=700)).options == converter_from_config(PDFConfig()).options
    with pytest.raises(ConfigError, match="pdf.java_heap_mb"):
        PDFConfig(java_heap_mb=-1)


def test_conversion_cache_round_trip_and_prune(tmp_path):
    from proxypointer.read.pdf import ConversionCache

    cache = ConversionCache(tmp_path / "conv")
    key = "ab" + "0" * 62
    assert cache.get(key) is None
    cache.put(key, "<!-- page 1 -->\n\n# T\n", "feedface00000000")
    cache.put("cd" + "1" * 62, "other\n", "0123456789abcdef")
    assert cache.get(key) == "<!-- page 1 -->\n\n# T\n"
    assert cache.prune(["feedface00000000"]) == 1
    assert cache.get(key) is not None and cache.get("cd" + "1" * 62) is None
    assert not list((tmp_path / "conv").glob("*/.tmp-*"))


def test_the_converters_html_escapes_are_undone_where_they_cannot_change_the_parse():
    from proxypointer.read.pdf import unescape_text
    from proxypointer.tree.build import build_tree

    md = (
        "## Research &amp; Development\n\nJohnson &amp; Johnson grew &lt;5% in AT&amp;T markets; a &gt; b.\n\n"
        "&gt; not a quote\n\n&lt;div&gt; kept as text &amp;lt; too\n"
    )
    out = unescape_text(md)
    assert out == (
        "## Research & Development\n\nJohnson & Johnson grew <5% in AT&T markets; a > b.\n\n"
        "&gt; not a quote\n\n&lt;div> kept as text &amp;lt; too\n"
    )
    before, after = build_tree(md, "d"), build_tree(out, "d")
    assert [(n.level, n.start_line, n.end_line) for n in before.nodes] == [
        (n.level, n.start_line, n.end_line) for n in after.nodes
    ]
    assert [n.title for n in after.nodes if n.kind == "heading"] == ["Research & Development"]
    assert unescape_text("no escapes") == "no escapes"


def test_the_entities_rule_is_part_of_the_conversion_key():
    from proxypointer.config import PDFConfig
    from proxypointer.read.pdf import ENTITIES_RULE, converter_from_config

    assert dict(converter_from_config(PDFConfig()).options)["entities"] == ENTITIES_RULE

"""PDFs and page-marked markdown through ingest, retrieval and the CLI, with a converter
that needs no Java (tests/fakes.py); the real converter is tests/integration/test_pdf_cli.py.

Pages on every pointer (issue 14): chunk metadata, Section, ContextBlock, citations; marker
lines never embedded nor shown; an unchanged PDF converts nothing; bad input fails alone.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json

import pytest

pytest.importorskip("reportlab", reason="reportlab (dev dependency) writes the test PDFs")
pytest.importorskip("pypdf", reason="pypdf (extra pdf) counts the pages of the test PDFs")

from fakes import FakePDFConverter  # noqa: E402
from pdfdocs import write_encrypted, write_report, write_scanned, write_zero_pages  # noqa: E402

from proxypointer.config import PagesConfig, PDFConfig, ProxyPointerConfig, TreeConfig
from proxypointer.read.readers import PDFReader
from proxypointer.retrieve.context import Assembler
from proxypointer.retrieve.retriever import Retriever, format_citation

#: What opendataloader-pdf 2.5.16 writes for pdfdocs.write_report (checked by
#: tests/integration/test_pdf_cli.py): Risk Factors starts mid-page 1 and runs on to page
#: 2; Financial Statements is the first line of page 3.
REPORT_MD = "\n".join([
    "<!-- page 1 -->",
    "",
    "# Business Overview {.styled}",  # every heading in 18 pt bold: one style, rank 1
    "",
    "Acme makes anvils, rockets and giant magnets for desert customers. "
    "Revenue grew ten percent in the year to a record level.",
    "",
    "# Risk Factors {.styled}",
    "",
    "Roadrunners are fast and our products sometimes miss. Competition from other suppliers of desert equipment "
    "is strong.",
    "",
    "<!-- page 2 -->",
    "",
    "Risk factors continue: falling anvils may injure the operator. Rocket skates are hard to steer on mountain "
    "roads. Giant magnets attract more than the intended target. Weather may delay deliveries of heavy goods "
    "across the desert.",
    "",
    "<!-- page 3 -->",
    "",
    "# Financial Statements {.styled}",
    "",
    "Net income was five million dollars, up from four million.",
    "",
    "",
])


@pytest.fixture
def corpus(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    write_report(docs / "report.pdf")
    (docs / "notes.md").write_text("# Notes\n\nThe anvil supplier changed in May.\n", encoding="utf-8")
    return docs


def pdf_index(make_index, outputs, config=None, converter=None):
    """An index whose PDF reader uses the fake converter (returned too)."""
    index = make_index(config)
    conv = converter or FakePDFConverter(outputs)
    index.readers[".pdf"] = PDFReader(index.config.pdf, cache=index.root / "converted", converter=conv)
    return index, conv


def section(retriever, query, doc="report"):
    (s,) = retriever.retrieve(query, k=1, doc_ids=[doc])
    return s


def test_pdf_sections_carry_their_pages_and_cite_them(make_index, corpus, fake_embedder):
    index, conv = pdf_index(make_index, {"report.pdf": REPORT_MD})
    report = index.ingest([corpus], show_progress=False)
    assert (report.indexed, report.failed) == (2, [])
    assert conv.calls == [["report.pdf"]]
    r = Retriever(index)
    risk = section(r, "roadrunners competition desert equipment")  # starts mid-page 1, runs on
    assert (risk.title, risk.page_start, risk.page_end) == ("Risk Factors", 1, 2)
    assert risk.citation == f"report.pdf#page=1 (pp. 1-2; L{risk.start_line}-L{risk.end_line})"
    fin = section(r, "net income five million")  # heading at the top of page 3
    assert (fin.page_start, fin.page_end) == (3, 3)
    assert fin.citation == f"report.pdf#page=3 (p. 3; L{fin.start_line}-L{fin.end_line})"
    overview = section(r, "anvils rockets magnets revenue")
    assert (overview.page_start, overview.page_end) == (1, 1)
    # line numbers are those of the converter's output (what `proxypointer convert` writes)
    assert REPORT_MD.splitlines()[fin.start_line - 1] == "# Financial Statements {.styled}"
    # markdown without markers: no pages, the plain citation
    notes = section(r, "anvil supplier changed", doc="notes")
    assert (notes.page_start, notes.page_end) == (0, 0)
    assert notes.citation == f"notes.md#L{notes.start_line}-L{notes.end_line}"
    # the JSON form carries the page fields
    assert {"page_start": 1, "page_end": 2}.items() <= risk.to_dict().items()


def test_chunk_metadata_has_section_and_chunk_pages(make_index, corpus):
    index, _ = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    metas = index.store.collection.get(where={"doc_id": "report"}, include=["metadatas"])["metadatas"]
    by_title = {m["title"]: m for m in metas}
    risk = by_title["Risk Factors"]
    assert (risk["page_start"], risk["page_end"]) == (1, 2)
    assert 1 <= risk["chunk_page_start"] <= risk["chunk_page_end"] <= 2
    assert (by_title["Financial Statements"]["page_start"], by_title["Financial Statements"]["page_end"]) == (3, 3)
    # the registry's copies (what queries read) carry them too
    rec = index.registry.chunk_records(sorted(index.registry.chunk_ids("report")))
    assert {m["page_start"] for _, m in rec.values()} == {1, 3}


def test_markers_are_never_embedded_nor_delivered(make_index, corpus, fake_embedder):
    index, _ = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    assert fake_embedder.embedded_texts
    assert not [t for t in fake_embedder.embedded_texts if "<!--" in t or "page 2" in t]
    lexical = index.registry.lexical.rows("report")
    assert lexical and not [t for t in lexical.values() if "<!--" in t]
    r = Retriever(index)
    risk = section(r, "roadrunners competition desert equipment")
    assert "<!--" not in risk.text and "Rocket skates" in risk.text
    # the marker line is an empty line: line numbers unchanged
    marker = REPORT_MD.splitlines().index("<!-- page 2 -->") + 1
    assert risk.start_line < marker < risk.end_line
    assert risk.text.split("\n")[marker - risk.start_line] == ""
    blocks = Assembler(r).assemble("rocket skates steer mountain roads", 60, doc_ids=["report"])
    assert blocks and not [b for b in blocks if "<!--" in b.text]
    b = next(b for b in blocks if "Rocket skates" in b.text)
    first = 1 if "Roadrunners" in b.text else 2  # the whole section, or only its lines on page 2
    assert (b.page_start, b.page_end) == (first, 2)
    pages = "pp. 1-2" if first == 1 else "p. 2"
    assert b.citation == f"report.pdf#page={first} ({pages}; L{b.start_line}-L{b.end_line})"
    assert {"page_start": first, "page_end": 2}.items() <= b.to_dict().items()
    (narrow,) = Assembler(r).pack([risk], 20)  # cut to its first lines: page 1 only
    assert (narrow.page_start, narrow.page_end) == (1, 1) and narrow.end_line < marker


def test_unchanged_pdf_converts_and_embeds_nothing(make_index, corpus, fake_embedder):
    index, conv = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    n_embedded = len(fake_embedder.embedded_texts)
    again = index.ingest([corpus], show_progress=False)
    assert (again.indexed, again.unchanged, again.embedded) == (0, 2, 0)
    assert conv.calls == [["report.pdf"]] and len(fake_embedder.embedded_texts) == n_embedded
    # a new converter version is a new source key: converted again
    index.readers[".pdf"].converter._version = "2.0"
    assert index.ingest([corpus], show_progress=False).indexed == 1
    assert conv.calls == [["report.pdf"], ["report.pdf"]]


def test_new_tree_settings_rechunk_from_the_cached_conversion(make_index, corpus, tmp_path):
    index, conv = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    index.close()
    cfg = ProxyPointerConfig(tree=TreeConfig(converter_output="off"))
    index2, _ = pdf_index(make_index, {}, config=cfg, converter=conv)
    assert index2.ingest([corpus], show_progress=False).indexed == 2  # new pipeline key: re-chunked
    assert conv.calls == [["report.pdf"]]  # ... from <store>/converted, not converted again


def test_conversion_cache_drops_what_no_document_uses(make_index, corpus):
    index, conv = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    cached = list((index.root / "converted").glob("*/*.md"))
    assert len(cached) == 1 and cached[0].read_text(encoding="utf-8") == REPORT_MD
    index.delete(["report"])  # the conversion goes with the last document that uses it
    assert not list((index.root / "converted").glob("*/*.md"))


def test_pdfs_convert_together_before_parsing(make_index, tmp_path):
    docs = tmp_path / "many"
    docs.mkdir()
    outputs = {}
    for name in ("a", "b", "c"):
        write_report(docs / f"{name}.pdf")
        outputs[f"{name}.pdf"] = REPORT_MD.replace("Acme", name.upper())
    index, conv = pdf_index(make_index, outputs)
    report = index.ingest([docs], show_progress=False)
    assert report.indexed == 3 and conv.calls == [["a.pdf", "b.pdf", "c.pdf"]]  # one batch, one run
    assert report.stage_seconds["convert"] > 0


def test_bad_pdfs_fail_alone_and_leave_nothing_stored(make_index, corpus, capsys):
    write_encrypted(corpus / "locked.pdf", corpus / "report.pdf")
    write_scanned(corpus / "scan.pdf")
    write_zero_pages(corpus / "empty.pdf")
    (corpus / "fake.pdf").write_text("not a pdf at all", encoding="utf-8")
    outputs = {"report.pdf": REPORT_MD, "scan.pdf": "<!-- page 1 -->\n\n<!-- page 2 -->\n\n"}
    index, _ = pdf_index(make_index, outputs)
    report = index.ingest([corpus], show_progress=False)
    assert sorted(r.doc_id for r in index.registry.documents()) == ["notes", "report"]
    failed = dict(report.failed)
    assert set(failed) == {str(corpus / n) for n in ("locked.pdf", "scan.pdf", "empty.pdf", "fake.pdf")}
    assert "encrypted" in failed[str(corpus / "locked.pdf")] and "qpdf --decrypt" in failed[str(corpus / "locked.pdf")]
    assert "no text layer" in failed[str(corpus / "scan.pdf")] and "OCR" in failed[str(corpus / "scan.pdf")]
    assert "no pages" in failed[str(corpus / "empty.pdf")]
    assert "not a PDF" in failed[str(corpus / "fake.pdf")]
    for path, message in report.failed:
        assert message.startswith(path + ":") and "\n" not in message
    stored = {p.name.split(".")[0] for p in (index.root / "sources").glob("*/*")}
    assert stored == {r.doc_hash for r in index.registry.documents()}  # nothing of the bad PDFs
    assert len(list((index.root / "converted").glob("*/*.md"))) == 1  # the good PDF's only


def test_an_empty_pdf_is_skipped_with_a_note_like_any_empty_file(make_index, corpus):
    # issue 32 (a breaker): a 0-byte .md, .html, .docx or .pptx is a note; a 0-byte .pdf failed the run
    (corpus / "blank.pdf").write_bytes(b"")
    (corpus / "void.md").write_bytes(b"")
    index, conv = pdf_index(make_index, {"report.pdf": REPORT_MD})
    report = index.ingest([corpus], show_progress=False)
    assert report.failed == [] and report.indexed == 2
    notes = dict(report.notes)
    assert set(notes) == {str(corpus / "blank.pdf"), str(corpus / "void.md")}
    assert "empty file (0 bytes); skipped" in notes[str(corpus / "blank.pdf")]
    assert conv.calls == [["report.pdf"]]  # never handed to the converter


def test_no_conversion_bar_when_no_pdf_is_left_to_convert(make_index, tmp_path, capsys):
    # a helper: a folder whose only PDF was empty printed two "converting PDFs: 0page" bars
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "blank.pdf").write_bytes(b"")
    (docs / "notes.md").write_text("# Notes\n\nkettle descaling\n", encoding="utf-8")
    index, conv = pdf_index(make_index, {})
    report = index.ingest([docs], show_progress=True)
    assert report.indexed == 1 and report.skipped == 1 and conv.calls == []
    assert "converting PDFs" not in capsys.readouterr().err


def test_java_missing_fails_each_pdf_and_indexes_the_markdown(make_index, corpus, monkeypatch, tmp_path):
    from proxypointer.read.pdf import OpenDataLoaderConverter

    monkeypatch.setenv("PATH", str(tmp_path / "no-java-here"))
    index = make_index()
    index.readers[".pdf"] = PDFReader(index.config.pdf, converter=OpenDataLoaderConverter())
    if index.readers[".pdf"].missing():
        pytest.skip("the pdf extra is not installed")
    report = index.ingest([corpus], show_progress=False)
    assert [r.doc_id for r in index.registry.documents()] == ["notes"]
    ((path, message),) = report.failed
    assert path == str(corpus / "report.pdf")
    assert message.startswith(f"{path}: not indexed: ") and "Java not found" in message and "openjdk" in message


def _no_pdf_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "opendataloader_pdf" else real(name, *a, **k))


def test_without_the_extra_a_folder_notes_its_pdfs(make_index, corpus, monkeypatch):
    _no_pdf_extra(monkeypatch)
    index = make_index()
    report = index.ingest([corpus], show_progress=False)
    assert [r.doc_id for r in index.registry.documents()] == ["notes"]
    assert report.failed == [] and report.documents == 1
    ((path, note),) = report.notes
    assert path == str(corpus / "report.pdf")
    assert note.startswith(f"{path}: skipped: PDF input needs the pdf extra") and "pip install" in note


def test_without_the_extra_a_named_pdf_fails(make_index, corpus, monkeypatch):
    _no_pdf_extra(monkeypatch)
    index = make_index()
    report = index.ingest([corpus / "report.pdf", corpus / "notes.md"], show_progress=False)
    assert [r.doc_id for r in index.registry.documents()] == ["notes"]
    ((path, message),) = report.failed
    assert message.startswith(f"{corpus / 'report.pdf'}: not indexed: PDF input needs the pdf extra")


# -- markdown with page markers -----------------------------------------------------------------
MARKED = {
    "opendataloader": ("<!-- page 1 -->\n\n# Alpha\n\nalpha apples\n\n<!-- page 2 -->\n\nmore apples\n\n"
                       "<!-- page 3 -->\n\n# Beta\n\nbeta bananas\n", None),
    "marker": ("{0}------------------------------------------------\n\n# Alpha\n\nalpha apples\n\n"
               "{1}------------------------------------------------\n\nmore apples\n\n"
               "{2}------------------------------------------------\n\n# Beta\n\nbeta bananas\n", None),
    "pymupdf4llm": ("# Alpha\n\nalpha apples\n\n--- end of page=0 ---\n\nmore apples\n\n--- end of page=1 ---\n\n"
                    "# Beta\n\nbeta bananas\n\n--- end of page=2 ---\n", None),
    "pymupdf4llm-layout": ("# Alpha\n\nalpha apples\n\n--- end of page.page_number=1 ---\n\nmore apples\n\n"
                           "--- end of page.page_number=2 ---\n\n# Beta\n\nbeta bananas\n\n"
                           "--- end of page.page_number=3 ---\n", None),
    "docling": ("# Alpha\n\nalpha apples\n\n<!-- page break -->\n\nmore apples\n\n<!-- page break -->\n\n"
                "# Beta\n\nbeta bananas\n", None),
    "llamaparse": ("# Alpha\n\nalpha apples\n---\nmore apples\n---\n# Beta\n\nbeta bananas\n", "llamaparse"),
    "custom": ("[[PAGE 1]]\n# Alpha\n\nalpha apples\n[[PAGE 2]]\nmore apples\n[[PAGE 3]]\n# Beta\n\nbeta bananas\n",
               "custom"),
}


@pytest.mark.parametrize("style", sorted(MARKED))
def test_markdown_page_markers_of_each_style_give_pages(style, make_index, tmp_path, fake_embedder):
    text, configured = MARKED[style]
    pages = PagesConfig()
    if configured == "custom":
        pages = PagesConfig(style="custom", marker="[[PAGE %page-number%]]")
    elif configured:
        pages = PagesConfig(style=configured)
    src = tmp_path / "docs" / "filing.md"
    src.parent.mkdir()
    src.write_text(text, encoding="utf-8")
    index = make_index(ProxyPointerConfig(pages=pages))
    index.ingest([src.parent], show_progress=False)
    r = Retriever(index)
    alpha, beta = section(r, "alpha apples more", "filing"), section(r, "beta bananas", "filing")
    assert (alpha.title, alpha.page_start, alpha.page_end) == ("Alpha", 1, 2)
    assert (beta.title, beta.page_start, beta.page_end) == ("Beta", 3, 3)
    assert alpha.citation == f"filing.md#L{alpha.start_line}-L{alpha.end_line} (pp. 1-2)"
    assert beta.citation == f"filing.md#L{beta.start_line}-L{beta.end_line} (p. 3)"
    # line numbers are the file's; marker lines are empty in what is delivered and embedded
    assert text.splitlines()[beta.start_line - 1] == "# Beta"
    assert [t for t in fake_embedder.embedded_texts if "page" in t.lower() or "---" in t] == []
    if style == "llamaparse":  # "alpha apples" above a `---` separator is not a setext heading
        assert [n[1] for n in json.loads(index.registry.tree_json("filing"))] == ["Alpha", "Beta"]


def test_markdown_pages_can_be_turned_off_and_old_stores_reread_marked_files(make_index, tmp_path):
    src = tmp_path / "docs" / "filing.md"
    src.parent.mkdir()
    src.write_text(MARKED["opendataloader"][0], encoding="utf-8")
    off = make_index(ProxyPointerConfig(pages=PagesConfig(style="none")), store=tmp_path / "off")
    off.ingest([src], show_progress=False)
    s = section(Retriever(off), "beta bananas", "filing")
    assert (s.page_start, s.page_end) == (0, 0) and "<!-- page 3 -->" in off.registry.sources.load(
        off.registry.get("filing").doc_hash)
    # the page style is part of the source key: turning pages on re-reads the file
    on = make_index(store=tmp_path / "off")
    assert on.ingest([src], show_progress=False).indexed == 1
    assert section(Retriever(on), "beta bananas", "filing").page_start == 3


def test_format_citation_forms():
    assert format_citation("h", "/x/h.md", 3, 9) == "h.md#L3-L9"
    assert format_citation("AMD_2022_10K", "/d/AMD_2022_10K.pdf", 1203, 1240, 45, 46) == (
        "AMD_2022_10K.pdf#page=45 (pp. 45-46; L1203-L1240)"
    )
    assert format_citation("a/b", "/d/a/b.PDF", 1, 2, 7, 7) == "a/b.PDF#page=7 (p. 7; L1-L2)"
    assert format_citation("r", "/d/r.md", 5, 8, 2, 3) == "r.md#L5-L8 (pp. 2-3)"


def test_conversion_key_is_the_source_key(tmp_path):
    pdf = write_report(tmp_path / "r.pdf")
    conv = FakePDFConverter({"r.pdf": REPORT_MD})
    data = pdf.read_bytes()
    import hashlib

    plain = PDFReader(dataclasses.replace(PDFConfig(), bookmarks=False, contents=False), converter=conv)
    assert plain.source_key(data, str(pdf)) == conv.key(hashlib.sha256(data).hexdigest())
    reader = PDFReader(converter=conv)  # bookmarks on: the key covers how they are read
    assert reader.source_key(data, str(pdf)) != plain.source_key(data, str(pdf))
    result = reader.read(data, str(pdf))
    assert result.source_key == reader.source_key(data, str(pdf))
    assert len(result.pages) == len(REPORT_MD.splitlines()) and result.pages[-1] == 3
    assert dataclasses.replace(result, pages=None).text.count("\n") == REPORT_MD.count("\n")


def test_served_search_structure_and_section_carry_pages(make_index, corpus, fake_embedder):
    from proxypointer.serve.service import Service

    index, _ = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    index.close()
    svc = Service(index.root, ProxyPointerConfig(), fake_embedder)
    try:
        (hit,) = svc.search("net income five million", k=1, doc_ids=["report"])["sections"]
        assert (hit["page_start"], hit["page_end"]) == (3, 3) and hit["citation"].startswith("report.pdf#page=3 (p. 3;")
        nodes = {n["title"]: n for n in svc.get_structure("report")["nodes"]}
        risk = nodes["Risk Factors"]
        assert (risk["page_start"], risk["page_end"]) == (1, 2)
        assert risk["citation"] == f"report.pdf#page=1 (pp. 1-2; L{risk['start_line']}-L{risk['end_line']})"
        part = svc.get_section("report", risk["node_id"], start_line=risk["start_line"] + 4)  # page 2 lines only
        assert (part["page_start"], part["page_end"]) == (2, 2)
        assert part["citation"].startswith("report.pdf#page=2 (p. 2; L")
        assert "<!--" not in part["text"]
        assert svc.get_structure("notes")["nodes"][0]["page_start"] == 0
    finally:
        svc.close()


def test_cli_tree_of_page_marked_markdown_shows_pages(tmp_path, capsys):
    from proxypointer.cli import main

    src = tmp_path / "filing.md"
    src.write_text(MARKED["opendataloader"][0], encoding="utf-8")
    assert main(["tree", str(src)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{src} (15 lines, 3 pages)"
    assert out[1:] == ["## Alpha  L3-L12  pp. 1-2", "## Beta  L13-L15  p. 3"]  # converter rules: unnumbered, level 2
    assert main(["tree", "--json", str(src)]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert tree["page_count"] == 3 and [(n["page_start"], n["page_end"]) for n in tree["nodes"]] == [(1, 2), (3, 3)]


def test_status_sees_a_changed_pdf_without_converting(make_index, corpus):
    index, conv = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    assert index.status()["stale_sources"] == []
    write_report(corpus / "report.pdf", [[("h", "Changed"), ("p", "A new first page.")]])
    assert index.status()["stale_sources"] == [
        {"doc_id": "report", "source": str((corpus / "report.pdf").resolve()), "reason": "changed"}
    ]
    assert conv.calls == [["report.pdf"]]  # the key is a hash of the bytes: nothing converted


def test_a_shared_conversion_cache_is_never_pruned_by_one_store(make_index, corpus, tmp_path):
    from proxypointer.read.pdf import ConversionCache

    shared = tmp_path / "shared-conversions"
    ConversionCache(shared).put("ff" + "0" * 62, "<!-- page 1 -->\n\nother store's\n", "0" * 16)
    index = make_index()
    conv = FakePDFConverter({"report.pdf": REPORT_MD})
    index.readers[".pdf"] = PDFReader(index.config.pdf, cache=shared, converter=conv, shared_cache=True)
    index.ingest([corpus], show_progress=False)
    assert len(list(shared.glob("*/*.md"))) == 2  # the other store's entry survives


def test_page_marked_documents_get_the_converter_rules_though_their_markers_are_emptied(make_index, tmp_path):
    """The reader empties page markers before the tree is built; auto must still see them.

    A converted filing whose only sign of conversion is its page markers: under the default
    (``tree.converter_output: auto``) a stand-alone statement title becomes a section, in the
    stored tree of a PDF and of page-marked markdown alike, and ``tree --check`` agrees.
    """
    filing = "\n".join([
        "<!-- page 1 -->", "", "# Item 8. Financial Statements", "", "See the statements below.", "",
        "<!-- page 2 -->", "", "CONSOLIDATED BALANCE SHEETS", "", "Cash and cash equivalents 1,284", "",
        "Total current assets 4,321", "",
    ])
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "filing.md").write_text(filing, encoding="utf-8")
    write_report(docs / "report.pdf")
    index, _ = pdf_index(make_index, {"report.pdf": filing})
    index.ingest([docs], show_progress=False)
    for doc_id in ("filing", "report"):
        titles = [n[1] for n in json.loads(index.registry.tree_json(doc_id))]
        assert "CONSOLIDATED BALANCE SHEETS" in titles, doc_id
    (sheet,) = Retriever(index).retrieve("total current assets", k=1, doc_ids=["filing"])
    assert sheet.title == "CONSOLIDATED BALANCE SHEETS" and sheet.page_start == 2


def test_cli_tree_of_an_ingested_pdf_reads_the_stores_conversion(make_index, corpus, tmp_path, capsys, monkeypatch):
    # issue 32: `tree FILE.pdf` converted again (minutes for a filing) what the store keeps
    from proxypointer.cli import main
    from proxypointer.read import pdf

    index, conv = pdf_index(make_index, {"report.pdf": REPORT_MD})
    index.ingest([corpus], show_progress=False)
    index.close()
    spy = FakePDFConverter({})  # the same converter, knowing no file: a conversion would fail
    monkeypatch.setattr(pdf, "converter_from_config", lambda config: spy)
    config = tmp_path / "c.yaml"
    config.write_text(f"store:\n  path: {index.root}\n", encoding="utf-8")
    assert main(["tree", "--config", str(config), str(corpus / "report.pdf")]) == 0
    out = capsys.readouterr().out
    assert "Risk Factors" in out and "pp. 1-2" in out and spy.calls == []
    # without a store there is nothing kept: the file is converted
    other = tmp_path / "nostore.yaml"
    other.write_text(f"store:\n  path: {tmp_path / 'none'}\n", encoding="utf-8")
    with pytest.raises(KeyError):
        main(["tree", "--config", str(other), str(corpus / "report.pdf")])
    assert spy.calls == [["report.pdf"]]

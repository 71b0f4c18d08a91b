"""Word, HTML and PowerPoint input (issue 34): fixtures made here, ingested, queried, cited, scored."""

from __future__ import annotations

import pytest

pytest.importorskip("mammoth", reason="the office extra is not installed: pip install -e '.[office]'")
pytest.importorskip("markdownify", reason="the office extra is not installed")
pytest.importorskip("bs4", reason="the office extra is not installed")
docx = pytest.importorskip("docx", reason="python-docx (dev dependency) writes the test files")
pptx = pytest.importorskip("pptx", reason="the office extra is not installed")

from proxypointer.cli import main  # noqa: E402
from proxypointer.eval.trees import score_tree  # noqa: E402
from proxypointer.read.office import OfficeReader  # noqa: E402
from proxypointer.retrieve.retriever import Retriever  # noqa: E402
from proxypointer.tree.build import build_tree  # noqa: E402
from proxypointer.tree.outline import outline_from_data  # noqa: E402


def write_contract(path):
    """A contract: numbered headings typed into Heading 1/2 paragraphs, and a price table."""
    d = docx.Document()
    d.add_heading("1. Definitions", level=1)
    d.add_paragraph("Services means the maintenance of the customer's coolant pumps.")
    d.add_heading("2. Fees", level=1)
    d.add_heading("2.1 Price list", level=2)
    d.add_paragraph("The customer pays the prices of this table for each part.")
    rows = [["Part number", "Size", "Unit price"]] + [[f"P-{n:03d}", f"{n} mm", f"${n * 3}"] for n in range(1, 60)]
    table = d.add_table(rows=len(rows), cols=3)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    d.add_heading("2.2 Late payment", level=2)
    d.add_paragraph("Invoices unpaid after 30 days bear interest of 1% a month.")
    d.add_heading("3. Termination", level=1)
    d.add_paragraph("Either party may terminate the agreement with 90 days notice in writing.")
    d.save(path)
    return path


def write_policy(path):
    """A policy: Title, then Heading 1-3."""
    d = docx.Document()
    d.add_paragraph("Travel Policy", style="Title")
    d.add_heading("Scope", level=1)
    d.add_paragraph("This policy covers every employee who travels for work.")
    d.add_heading("Booking", level=1)
    d.add_heading("Flights", level=2)
    d.add_paragraph("Economy class is booked for flights under six hours.")
    d.add_heading("Long-haul exceptions", level=3)
    d.add_paragraph("Business class is allowed for overnight flights over six hours.")
    d.add_heading("Hotels", level=2)
    d.add_paragraph("Hotels are booked through the travel desk at the negotiated rate.")
    d.add_heading("Expenses", level=1)
    d.add_paragraph("Receipts are filed within 30 days of return.")
    d.save(path)
    return path


POLICY_GOLD = [
    {"title": "Travel Policy", "page": 1, "children": [
        {"title": "Scope", "page": 1},
        {"title": "Booking", "page": 1, "children": [
            {"title": "Flights", "page": 1, "children": [{"title": "Long-haul exceptions", "page": 1}]},
            {"title": "Hotels", "page": 1}]},
        {"title": "Expenses", "page": 1}]},
]

HTML_PAGE = """<!doctype html><html><head><title>Handbook</title><script>var x = 1;</script></head><body>
<nav><h2>On this page</h2><ul><li><a href="/leave">Leave</a></li></ul></nav>
<h1>Employee Handbook</h1><p>Welcome to the company.</p>
<h2>Leave</h2><p>Employees take 25 days of paid leave a year.</p>
<h3>Parental leave</h3><p>Parents take 16 weeks of paid parental leave.</p>
<h3>Sick leave</h3><p>Sick days need a doctor's note after three days.</p>
<h2>Equipment</h2>
<table><tr><th>Item</th><th>Budget</th></tr><tr><td>Laptop</td><td>2,000</td></tr><tr><td>Monitor</td><td>400</td></tr></table>
</body></html>"""

HTML_GOLD = [
    {"title": "Employee Handbook", "page": 1, "children": [
        {"title": "Leave", "page": 1, "children": [{"title": "Parental leave", "page": 1},
                                                   {"title": "Sick leave", "page": 1}]},
        {"title": "Equipment", "page": 1}]},
]

#: An EDGAR-like 10-K: Items are styled divs (no <h> tags); the contents table links to them.
EDGAR = """<html><body>
<div style="display:none"><ix:header>dei:EntityCentralIndexKey 0000123456</ix:header></div>
<div><span style="font-weight:700">ACME CORP FORM 10-K</span></div>
<div><span style="font-weight:700">TABLE OF CONTENTS</span></div>
<table>
<tr><td colspan="2"><a href="#part1">PART I</a></td><td></td></tr>
<tr><td style="padding-left:10pt"><a href="#item1">Item 1.</a></td><td><a href="#item1">Business</a></td>
<td>3</td></tr>
<tr><td style="padding-left:10pt"><a href="#item1a">Item 1A.</a></td><td><a href="#item1a">Risk Factors</a></td>
<td>9</td></tr>
<tr><td colspan="2"><a href="#part2">PART II</a></td><td></td></tr>
<tr><td style="padding-left:10pt"><a href="#item7">Item 7.</a></td>
<td><a href="#item7">Management's Discussion and Analysis</a></td><td>31</td></tr>
<tr><td style="padding-left:10pt"><a href="#item8">Item 8.</a></td>
<td><a href="#item8">Financial Statements and Supplementary Data</a></td><td>45</td></tr>
</table>
<div id="part1"><span style="font-weight:700">PART I</span></div>
<div id="item1"><span style="font-weight:700">Item 1. Business</span></div>
<div><span>Acme makes anvils for desert customers and sells them in 40 countries.</span></div>
<div><span style="font-weight:700">Competition</span></div>
<div><span>Ajax Anvils competes with Acme on price.</span></div>
<div id="item1a"><span style="font-weight:700">Item 1A. Risk Factors</span></div>
<div><span>Roadrunners may avoid our products, and steel prices may rise.</span></div>
<div id="part2"></div>
<div><span style="font-weight:700">PART II</span></div>
<div id="item7"><span style="font-weight:700">Item 7. Management's Discussion and Analysis of Financial Condition
and Results of Operations</span></div>
<div><span>Revenue grew 12% to $4.2 billion on desert demand.</span></div>
<a name="item8"></a>
<div><span style="font-weight:700">Item 8. Financial Statements and Supplementary Data</span></div>
<table><tr><td>Net sales</td><td>4,200</td><td>3,750</td></tr>
<tr><td>Cost of sales</td><td>2,100</td><td>1,900</td></tr>
</table>
<div><a href="#toc">Table of Contents</a></div>
</body></html>"""


def write_deck(path):
    deck = pptx.Presentation()
    for title, body in [("Quarterly review", "Revenue grew 12% on cloud demand."),
                        ("Risks", "Supply chain constraints in Asia delay shipments."),
                        ("Outlook", "Guidance raised for fiscal 2025.")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    from pptx.util import Inches

    table = deck.slides[2].shapes.add_table(2, 2, Inches(1), Inches(5), Inches(4), Inches(1)).table
    for (r, c), value in {(0, 0): "Region", (0, 1): "Growth", (1, 0): "EMEA", (1, 1): "7%"}.items():
        table.cell(r, c).text = value
    deck.slides[1].notes_slide.notes_text_frame.text = "Mention the port strike."
    deck.save(path)
    return path


def tree_of(path, fmt):
    read = OfficeReader(fmt).read(path.read_bytes(), str(path))
    return read, build_tree(read.text, path.stem, paged=read.paged)  # as ingest builds it


def test_word_heading_styles_are_the_tree(tmp_path):
    read, tree = tree_of(write_policy(tmp_path / "policy.docx"), "docx")
    score = score_tree(tree, lambda line: 1, outline_from_data(POLICY_GOLD))
    assert score.recall == 1.0 and score.nesting == 1.0
    assert list(tree.title_path(next(n.node_id for n in tree.nodes if n.title == "Long-haul exceptions"))) == [
        "Travel Policy", "Booking", "Flights", "Long-haul exceptions"]


def test_html_heading_tags_are_the_tree_and_scripts_are_dropped(tmp_path):
    page = tmp_path / "handbook.html"
    page.write_text(HTML_PAGE, encoding="utf-8")
    read, tree = tree_of(page, "html")
    score = score_tree(tree, lambda line: 1, outline_from_data(HTML_GOLD))
    assert score.recall == 1.0 and score.nesting == 1.0
    assert "var x" not in read.text and "On this page" not in read.text and "| Item | Budget |" in read.text


def test_a_contents_table_never_overrides_the_pages_own_heading_tags(tmp_path):
    # a documentation page: its contents links to <section id> and <h3 id>, which carry the levels
    page = tmp_path / "guide.html"
    links = "".join(f'<tr><td><a href="#{a}">{t}</a></td></tr>' for a, t in
                    [("install", "Install"), ("usage", "Usage"), ("cli", "Command line"), ("faq", "FAQ")])
    page.write_text(
        f"<html><body><h1>Guide</h1><table>{links}</table>"
        '<section id="install"><h2>Install</h2><p>Run pip install anvil; it needs Python 3.10 or later.</p></section>'
        '<section id="usage"><h2>Usage</h2><p>Import anvil and call drop() over the roadrunner.</p>'
        '<h3 id="cli">Command line</h3><p>anvil drop --height 100 drops from 100 metres.</p></section>'
        '<h2><a name="faq"></a>FAQ</h2><p>Anvils are heavy.</p></body></html>', encoding="utf-8")
    read, tree = tree_of(page, "html")
    heads = [(n.level, n.title) for n in tree.nodes if n.kind == "heading"]
    assert heads == [(1, "Guide"), (2, "Contents"), (2, "Install"), (2, "Usage"), (3, "Command line"),
                     (2, "FAQ")]  # the contents table is a sibling of what it lists, never their parent


def test_an_edgar_filing_is_placed_by_its_linked_contents(tmp_path):
    page = tmp_path / "acme-10k.htm"
    page.write_text(EDGAR, encoding="utf-8")
    read, tree = tree_of(page, "html")
    heads = {n.title: n for n in tree.nodes if n.kind == "heading"}
    item7 = "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations"
    for item in ("Item 1. Business", "Item 1A. Risk Factors", item7, "Item 8. Financial Statements and "
                 "Supplementary Data"):
        assert item in heads, item
        assert heads[item].level == 2
    assert heads["PART I"].level == 1 and heads["PART II"].level == 1
    assert list(tree.title_path(heads["Item 1A. Risk Factors"].node_id)[-2:]) == ["PART I", "Item 1A. Risk Factors"]
    assert tree.title_path(heads[item7].node_id)[-2] == "PART II"
    # each Item's text is its own: the contents table is a section of its own, and noise
    lines = read.text.split("\n")
    item1 = heads["Item 1. Business"]
    assert "Acme makes anvils" in "\n".join(lines[item1.start_line - 1 : item1.end_line])
    assert "TABLE OF CONTENTS" in heads and "EntityCentralIndexKey" not in read.text


def test_each_format_is_ingested_queried_and_cited(tmp_path, make_index):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_contract(corpus / "contract.docx")
    write_deck(corpus / "deck.pptx")
    (corpus / "handbook.html").write_text(HTML_PAGE, encoding="utf-8")
    (corpus / "acme-10k.htm").write_text(EDGAR, encoding="utf-8")
    index = make_index()
    report = index.ingest([corpus], show_progress=False)
    assert not report.failed and report.indexed == 4
    retriever = Retriever(index)
    got = retriever.retrieve("How much notice is needed to terminate the agreement?", k=1, doc_ids=["contract"])[0]
    assert got.title == "3. Termination" and got.citation.startswith("contract.docx#L")
    got = retriever.retrieve("What did they say about supply chain risks?", k=1, doc_ids=["deck"])[0]
    assert got.citation.startswith("deck.pptx#slide=2 (slide 2; L") and "port strike" in got.text
    got = retriever.retrieve("How many weeks of parental leave?", k=1, doc_ids=["handbook"])[0]
    assert got.breadcrumb[-1] == "Parental leave" and got.citation.startswith("handbook.html#L")
    got = retriever.retrieve("What are Acme's risk factors?", k=1, doc_ids=["acme-10k"])[0]
    assert got.title == "Item 1A. Risk Factors"
    # unchanged files convert and embed nothing
    again = index.ingest([corpus], show_progress=False)
    assert again.indexed == 0 and again.unchanged == 4


def test_every_chunk_of_a_long_word_table_repeats_its_header(tmp_path, fake_embedder):
    from proxypointer.chunk.chunker import chunk_document
    from proxypointer.config import ChunkingConfig

    read, tree = tree_of(write_contract(tmp_path / "contract.docx"), "docx")
    assert "| Part number | Size | Unit price |" in read.text and "| P-059 | 59 mm | $177 |" in read.text
    chunks = chunk_document(tree, read.text, fake_embedder.tokenizer, ChunkingConfig(chunk_tokens=128))
    in_table = [c for c in chunks if "P-0" in c.embed_text]
    assert len(in_table) >= 3
    assert all("Part number | Size | Unit price" in c.embed_text for c in in_table)


def _zip(**members: str) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in members.items():
            z.writestr(name.replace("__", "/").replace("_ct", "[Content_Types]") + ".xml", text)
    return buf.getvalue()


@pytest.mark.parametrize(("name", "data", "says"), [
    # found by a breaker: these aborted the whole ingest with a traceback
    ("nodoc.docx", _zip(_ct="<Types/>"), "damaged DOCX file, cannot convert it"),
    ("badxml.docx", _zip(_ct='<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                         '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
                         'officedocument.wordprocessingml.document.main+xml"/></Types>',
                         word__document="<w:document><w:body><w:p"), "damaged DOCX file"),
    ("locked.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "password-protected or an old binary .doc"),
    ("broken.docx", b"PK\x03\x04 this is no zip", "not a .docx file"),
    ("photo.html", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + b"\0" * 100, "binary data, not HTML"),
    ("old.pptx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "password-protected or an old binary .ppt"),
])
def test_bad_files_fail_alone_with_one_line_naming_them(tmp_path, capsys, name, data, says):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "handbook.html").write_text(HTML_PAGE, encoding="utf-8")
    (corpus / name).write_bytes(data)
    store = tmp_path / "store"
    assert main(["--store", str(store), "ingest", str(corpus)]) == 1
    err = capsys.readouterr().err
    assert f"{name}: {says}" in err and "Traceback" not in err
    assert main(["--store", str(store), "status", "--docs"]) == 0
    out = capsys.readouterr().out
    assert "handbook" in out and name.rsplit(".", 1)[0] not in out  # the rest indexed, nothing partial


def test_empty_files_are_skipped_with_a_note_as_empty_markdown_is(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "handbook.html").write_text(HTML_PAGE, encoding="utf-8")
    for name in ("empty.docx", "blank.html", "none.pptx"):
        (corpus / name).write_bytes(b"")
    assert main(["--store", str(tmp_path / "store"), "ingest", str(corpus)]) == 0
    err = capsys.readouterr().err
    assert err.count("empty document (no text); skipped") == 3 and "Traceback" not in err and "bs4" not in err


def test_html_nested_thousands_deep_is_read(tmp_path):
    # found by a breaker: 350 nested <div>s ended the whole ingest in a RecursionError
    page = tmp_path / "deep.html"
    n = 3000
    page.write_text(f"<html><body><h1>Deep</h1>{'<div>' * n}<p>The pump hums.</p>{'</div>' * n}"
                    "<h2>After</h2><p>The end.</p></body></html>", encoding="utf-8")
    read, tree = tree_of(page, "html")
    assert "The pump hums." in read.text and [n.title for n in tree.nodes if n.kind == "heading"] == ["Deep", "After"]


def test_a_slides_text_never_becomes_headings_of_its_own(tmp_path):
    # found by a breaker: the page markers made the PDF converter rules read a deck's short lines
    # ("Currency exposure in Brazil", "PART II") as headings that swallowed later slides
    from pptx.util import Inches

    deck = pptx.Presentation()
    for title, lines in [("1. Introduction", ["Supply chain delays", "Currency exposure in Brazil"]),
                         ("Key Risks", ["PART II", "Hire 12 engineers in Berlin"]), ("Outlook", ["Growth ahead"])]:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = title
        box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(2)).text_frame
        box.text = lines[0]
        for line in lines[1:]:
            box.add_paragraph().text = line
    deck.save(tmp_path / "deck.pptx")
    read, tree = tree_of(tmp_path / "deck.pptx", "pptx")
    assert not read.paged and read.pages is not None
    heads = [(n.level, n.title) for n in tree.nodes if n.kind == "heading"]
    assert heads == [(1, "1. Introduction"), (1, "Key Risks"), (1, "Outlook")]


def test_an_anchor_inside_or_after_its_title_places_the_heading_on_the_title(tmp_path):
    # found by a breaker: the heading went to the paragraph after the title, and a Part's anchor
    # written after its title took the next Item's line
    page = tmp_path / "bakery.htm"
    page.write_text(
        '<html><body><table><tr><td>Item 1. Business</td><td><a href="#i1">4</a></td></tr>'
        '<tr><td>Item 1A. Risk Factors</td><td><a href="#i1a">9</a></td></tr>'
        '<tr><td>PART II</td><td><a href="#part2">20</a></td></tr>'
        '<tr><td>Item 7. Outlook</td><td><a href="#item7">21</a></td></tr></table>'
        '<p><a name="i1"></a><font style="font-weight:bold">Item 1. Business</font></p>'
        "<p>We operate 14 bakeries in Ohio.</p>"
        '<p><a name="i1a"></a><font style="font-weight:bold">Item 1A. Risk Factors</font></p>'
        "<p>Flour prices may rise.</p><div><b>PART II</b></div>"
        '<a name="part2"></a><a name="item7"></a><div><b>Item 7. Outlook</b></div><p>We expect growth.</p>'
        "</body></html>", encoding="utf-8")
    read, tree = tree_of(page, "html")
    heads = [(n.level, n.title) for n in tree.nodes if n.kind == "heading"]
    assert heads == [(2, "Contents"), (2, "Item 1. Business"), (2, "Item 1A. Risk Factors"), (1, "PART II"),
                     (2, "Item 7. Outlook")]


def test_a_huge_single_line_html_page_is_read(tmp_path):
    page = tmp_path / "one-line.html"
    body = "".join(f"<h2>Section {n}</h2><p>Paragraph {n} about anvils.</p>" for n in range(3000))
    page.write_text(f"<html><body><h1>Catalogue</h1>{body}</body></html>", encoding="utf-8")
    read, tree = tree_of(page, "html")
    assert sum(1 for n in tree.nodes if n.level == 2) == 3000


def test_a_missing_extra_names_the_files_and_the_install(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mammoth" else real(name, *a))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_contract(corpus / "contract.docx")
    (corpus / "notes.md").write_text("# Notes\n\nThe pump is serviced in spring.\n", encoding="utf-8")
    files = [str(corpus / "contract.docx"), str(corpus / "notes.md")]
    assert main(["--store", str(tmp_path / "store"), "ingest", *files]) == 1
    err = capsys.readouterr().err
    assert "contract.docx: not indexed: DOCX input needs the office extra (mammoth not installed)" in err


def test_convert_and_tree_read_office_files(tmp_path, capsys):
    deck = write_deck(tmp_path / "deck.pptx")
    assert main(["convert", str(deck), "-o", str(tmp_path / "deck.md")]) == 0
    text = (tmp_path / "deck.md").read_text(encoding="utf-8")
    assert text.startswith("<!-- page 1 -->") and "# Risks" in text and "| Region | Growth |" in text
    capsys.readouterr()
    assert main(["tree", str(write_policy(tmp_path / "policy.docx"))]) == 0
    out = capsys.readouterr().out
    assert "# Travel Policy" in out and "      #### Long-haul exceptions" in out


def test_the_tree_of_a_deck_counts_slides_not_pages(tmp_path, capsys):
    deck = write_deck(tmp_path / "deck.pptx")
    assert main(["tree", str(deck)]) == 0
    out = capsys.readouterr().out
    assert "3 slides)" in out and "pages" not in out
    assert "slide 2" in out and "p. " not in out


@pytest.mark.parametrize("declared", ["windows-1252", "iso-8859-1", "no-such-charset"])
def test_an_html_page_in_utf8_that_declares_another_charset_is_read_as_utf8(tmp_path, caplog, declared):
    page = tmp_path / "cafe.html"
    page.write_bytes(f'<html><head><meta charset="{declared}"></head><body><h1>Café menu</h1>'
                     "<p>Crème brûlée costs 5 €.</p></body></html>".encode())
    read, tree = tree_of(page, "html")
    assert "Crème brûlée costs 5 €." in read.text and "Ã" not in read.text
    assert [n.title for n in tree.nodes if n.kind == "heading"] == ["Café menu"]
    assert f"cafe.html: declares charset {declared}, but its bytes are UTF-8" in caplog.text


def test_an_html_page_in_the_charset_it_declares_is_read_in_it(tmp_path, caplog):
    page = tmp_path / "old.html"
    page.write_bytes('<html><head><meta charset="windows-1252"></head><body><h1>Café</h1>'
                     "<p>Crème brûlée.</p></body></html>".encode("cp1252"))
    read, _ = tree_of(page, "html")
    assert "Crème brûlée." in read.text and "declares charset" not in caplog.text

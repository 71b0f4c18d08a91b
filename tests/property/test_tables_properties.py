"""Properties of tables as text and of chunk pointers over documents full of tables.

* ``find_tables`` never raises, on any markdown soup or malformed HTML, and returns tables in
  order, non-overlapping, rows inside their table.
* ``EmbeddedText.source_span`` maps any piece inside the source, monotonically.
* Chunking a document of headings, prose, HTML and pipe tables (well formed or not, with
  colspan/rowspan, omitted end tags, nesting) and data-URI images: every chunk's text is an
  exact slice of its node's own lines, its embed text fits the model, and no table markup or
  base64 payload is embedded.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxypointer.chunk.chunker import chunk_document
from proxypointer.chunk.embedtext import EmbeddedText
from proxypointer.chunk.tables import find_tables
from proxypointer.config import ChunkingConfig
from proxypointer.embed.tokenizer import load_tokenizer
from proxypointer.lines import split_lines
from proxypointer.tree.build import build_tree

from .strategies import markdown_documents

WORDS = ("Revenue", "Total", "assets", "Cash", "net", "2023", "2022", "$ 1,234", "(56)", "—", "12.5%",
         "&amp;", "&nbsp;", "&#8212;", "R&D", "a|b", "<b>Bold</b>", "x<br>y", "", "", " ")
CELL = st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join)
SPAN = st.sampled_from(["", "", "", ' colspan="2"', ' rowspan="2"', " colspan=3", ' rowspan="0"',
                        ' colspan="x"', ' colspan="999"'])
B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg" * 3
IMAGES = (f"![Pump](data:image/png;base64,{B64})", f'<img alt="Site" src="data:image/jpeg;base64,{B64}">',
          f"[file](data:application/pdf;base64,{B64})")


@st.composite
def html_tables(draw: st.DrawFn) -> str:
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        tag = draw(st.sampled_from(["td", "td", "th"]))
        cells = [f"<{tag}{draw(SPAN)}>{draw(CELL)}" + draw(st.sampled_from([f"</{tag}>", f"</{tag}>", ""]))
                 for _ in range(draw(st.integers(0, 5)))]
        close = draw(st.sampled_from(["</tr>", "</tr>", ""]))
        rows.append("<tr>" + "".join(cells) + close)
    if rows and draw(st.booleans()):
        rows.insert(0, "<thead>")
        rows.insert(2, "</thead><tbody>")
    if rows and draw(st.booleans()):
        rows[-1] = rows[-1].replace("<td>", "<td><table><tr><td>inner</td></tr></table>", 1)
    caption = draw(st.sampled_from(["", "", "<caption>Table 1 Costs</caption>"]))
    sep = draw(st.sampled_from(["", "\n"]))
    end = draw(st.sampled_from(["</table>", "</table>", "</TABLE>"]))
    return sep.join([f"<table>{caption}", *rows, end])


@st.composite
def pipe_tables(draw: st.DrawFn) -> str:
    width = draw(st.integers(1, 5))
    row = st.lists(CELL.map(lambda c: c.replace("|", "\\|")), min_size=width, max_size=width)
    lines = ["| " + " | ".join(draw(row)) + " |", "|" + "|".join(["---"] * width) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in draw(st.lists(row, max_size=12))]
    return "\n".join(lines)


@st.composite
def table_documents(draw: st.DrawFn) -> str:
    blocks = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["heading", "prose", "title", "html", "pipe", "image"]))
        if kind == "heading":
            blocks.append("#" * draw(st.integers(1, 3)) + " " + draw(st.sampled_from(["Balance", "Notes", "Item 7"])))
        elif kind == "prose":
            blocks.append(" ".join(draw(st.lists(st.sampled_from(["cash", "debt", "grew", "in", "2023."]),
                                                 min_size=1, max_size=80))))
        elif kind == "title":
            blocks.append(draw(st.sampled_from(["CONSOLIDATED BALANCE SHEETS", "(in millions)", "<!-- page 4 -->"])))
        elif kind == "html":
            blocks.append(draw(html_tables()))
        elif kind == "pipe":
            blocks.append(draw(pipe_tables()))
        else:
            blocks.append(draw(st.sampled_from(IMAGES)))
    return "\n\n".join(blocks) + "\n"


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


@settings(max_examples=60, deadline=None)
@given(st.one_of(markdown_documents(raw=True), table_documents(), html_tables()))
def test_find_tables_never_raises_and_tables_are_ordered(text):
    tables = find_tables(text)
    end = 0
    for t in tables:
        assert end <= t.start < t.end <= len(text)
        assert t.title_start <= t.start
        last = t.start
        for r in t.rows:
            assert last <= r.start < r.end <= t.end and r.text
            last = r.start
        end = t.end


@settings(max_examples=60, deadline=None)
@given(st.one_of(table_documents(), markdown_documents(raw=True)), st.data())
def test_source_span_inside_source_and_monotone(text, data):
    e = EmbeddedText(text)
    if not e.text:
        return
    a = data.draw(st.integers(0, len(e.text) - 1))
    b = data.draw(st.integers(a + 1, len(e.text)))
    s, t = e.source_span(a, b)
    assert 0 <= s <= t <= len(text)
    assert text[s:t] == text[s:t].strip()
    if e.text[a:b].strip():  # pieces hold text (the splitter strips them)
        assert s < t
        s2, t2 = e.source_span(a, len(e.text))
        assert s2 == s and t2 >= t
        s3, _ = e.source_span(e.text.find(e.text.strip()[:1]), b)
        assert s3 <= s


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table_documents(), st.sampled_from([16, 48, 200]))
def test_chunks_of_table_documents(tok, text, size):
    tree = build_tree(text, "doc")
    lines = split_lines(text)
    chunks = chunk_document(tree, text, tok, ChunkingConfig(chunk_tokens=size))
    for c in chunks:
        assert c.n_tokens <= tok.max_seq_length
        assert "<td" not in c.embed_text.lower() and "</tr" not in c.embed_text.lower()
        assert not re.search(r"[A-Za-z0-9+/=]{101,}", c.embed_text)
        if c.kind == "window" or c.empty_body:
            continue
        node = tree.node(c.node_id)
        assert node.body_start_line <= c.chunk_start_line <= c.chunk_end_line <= node.body_end_line
        own = "\n".join(lines[c.chunk_start_line - 1 : c.chunk_end_line])
        assert c.text and c.text in own

"""Tables as text: HTML and pipe tables found with exact offsets and rendered for embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxypointer.chunk.embedtext import EmbeddedText
from proxypointer.chunk.tables import find_tables, render_tables

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def one(text: str):
    tables = find_tables(text)
    assert len(tables) == 1
    return tables[0]


@pytest.fixture(scope="module")
def tenk() -> str:
    return (FIXTURES / "harborlight-10k-2023.md").read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    """Own text of the heading ``title`` (up to the next heading) in a fixture."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    return "\n".join(lines[start + 1 : end])


# -- HTML ---------------------------------------------------------------------------------
def test_multi_row_html_header_combined_and_values_paired(tenk):
    t = one(section(tenk, "CONSOLIDATED BALANCE SHEETS"))
    assert t.kind == "html"
    assert t.headers == ("(in millions, except par value)", "December 31, 2023", "December 31, 2022")
    assert t.header_line == "(in millions, except par value) | December 31, 2023 | December 31, 2022"
    rows = [r.text for r in t.rows]
    assert "Total current assets: 2023 4,006; 2022 3,604" in rows
    assert "Long-term debt, less current portion: 2023 2,960; 2022 3,205" in rows
    assert "Cash and cash equivalents: 2023 $ 1,284; 2022 $ 1,102" in rows


def test_group_rows_kept_as_labels_and_empty_rows_dropped(tenk):
    t = one(section(tenk, "CONSOLIDATED BALANCE SHEETS"))
    rows = [r.text for r in t.rows]
    assert rows[:2] == ["ASSETS", "Current assets:"]
    assert "" not in rows
    assert len(rows) == 37  # 38 <tr> in tbody, one of them empty


def test_entities_and_inline_markup_become_text(tenk):
    t = one(section(tenk, "CONSOLIDATED BALANCE SHEETS"))
    rows = [r.text for r in t.rows]
    assert "Total stockholders’ equity: 2023 3,760; 2022 3,286" in rows
    assert "Preferred stock, $0.01 par value; 10 shares authorized; none issued: 2023 —; 2022 —" in rows
    assert not any("<" in r or "&" in r for r in rows)


def test_edgar_style_currency_and_parenthesis_cells_join_their_number(tenk):
    t = one(section(tenk, "CONSOLIDATED STATEMENTS OF OPERATIONS"))
    rows = [r.text for r in t.rows]
    assert rows[0] == "Net sales: 2023 $ 7,412; 2022 $ 6,985; 2021 $ 6,214"
    assert "Interest expense: 2023 (118); 2022 (109); 2021 (97)" in rows
    assert "Other income (expense), net: 2023 23; 2022 (12); 2021 8" in rows
    assert "Restructuring charges: 2023 41; 2022 —; 2021 26" in rows
    # Header rows without markup: the leading rows with no label and no amount.
    assert t.header_line == "Year Ended December 31, 2023 | Year Ended December 31, 2022 | Year Ended December 31, 2021"


def test_title_is_the_short_paragraph_before_the_table(tenk):
    ops = one(section(tenk, "CONSOLIDATED STATEMENTS OF OPERATIONS"))
    assert ops.title == "(in millions, except per share amounts)"
    # A units line takes the short paragraph above it too.
    cash = one(section(tenk, "CONSOLIDATED STATEMENTS OF CASH FLOWS"))
    assert cash.title == "HARBORLIGHT SYSTEMS, INC. (in millions)"
    # A table right under its heading has no title of its own: the breadcrumb names it.
    assert one(section(tenk, "CONSOLIDATED BALANCE SHEETS")).title == ""


def test_caption_is_the_title_and_opens_the_rendering(tenk):
    tables = find_tables(section(tenk, "Note 15 - Income Taxes"))
    rate = tables[1]
    assert rate.caption == rate.title == "Effective tax rate reconciliation"
    lead = ["Effective tax rate reconciliation", "Year ended December 31, | 2023 | 2022 | 2021"]
    assert rate.text.split("\n")[:2] == lead
    assert rate.rows[-1].text == "Effective tax rate: 2023 21.1%; 2022 22.0%; 2021 21.0%"


def test_one_line_html_table(tenk):
    t = one(section(tenk, "CONSOLIDATED STATEMENTS OF CASH FLOWS"))
    assert t.header_line == "2023 | 2022 | 2021"
    rows = [r.text for r in t.rows]
    assert rows[0] == "Operating activities"  # colspan section row: label only
    assert "Net cash provided by operating activities: 2023 1,229; 2022 1,089; 2021 937" in rows
    assert "Cash and cash equivalents at end of year: 2023 $ 1,284; 2022 $ 1,102; 2021 $ 857" in rows
    assert len(rows) == 29  # 30 <tr>, the first one the header


def test_offsets_slice_the_exact_table_and_rows(tenk):
    text = section(tenk, "CONSOLIDATED BALANCE SHEETS")
    t = one(text)
    assert text[t.start : t.end].startswith("<table>") and text[t.start : t.end].endswith("</table>")
    for r in t.rows:
        assert text[r.start : r.end].startswith("<tr>") and text[r.start : r.end].endswith("</tr>")
    assert text[t.start : t.header_end].endswith("</tr>") and "<th>2023</th>" in text[t.start : t.header_end]


def test_rowspan_label_repeated_and_colspan_header_spans_columns():
    html = (
        "<table><tr><th></th><th colspan=2>2022</th><th colspan=2>2021</th></tr>"
        "<tr><td rowspan=2>Segment A</td><td>Units</td><td>1</td><td>Units</td><td>2</td></tr>"
        "<tr><td>Revenue</td><td>$ 3</td><td>Revenue</td><td>$ 4</td></tr></table>"
    )
    assert [r.text for r in one(html).rows] == [
        "Segment A: 2022 Units 1; 2021 Units 2",
        "Segment A: 2022 Revenue $ 3; 2021 Revenue $ 4",
    ]


def test_omitted_end_tags_and_implicit_rows():
    html = "<TABLE><TR><TH>Name<TH>Value<TR><TD>A &amp; B<TD>&#8212;<TR><TD>C&nbsp;D<TD>5</TABLE>"
    assert render_tables(html) == "Name | Value\nA & B: —\nC D: 5"


def test_nested_table_flattened_into_its_cell():
    inner = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>"
    html = f"<table><tr><td>Segment</td><td>{inner}</td></tr></table>"
    assert one(html).rows[0].text == "Segment: a b; c"


def test_breaks_images_and_scripts_in_cells():
    html = (
        "<table><tr><td>Line one<br/>line two</td>"
        "<td><img src='data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==' alt='Company logo'></td>"
        "<td><script>var x = 1;</script>ok</td></tr></table>"
    )
    assert one(html).rows[0].text == "Line one line two: [image: Company logo]; ok"


def test_unclosed_table_runs_to_the_end():
    t = one("Intro\n\n<table><tr><td>Cash</td><td>5</td></tr>\n<tr><td>Debt</td><td>7</td>")
    assert [r.text for r in t.rows] == ["Cash: 5", "Debt: 7"]


def test_table_in_fenced_code_is_left_alone():
    text = "```html\n<table><tr><td>code</td></tr></table>\n```\n\n| a | b |\n|---|---|\n| x | 1 |\n"
    tables = find_tables(text)
    assert [t.kind for t in tables] == ["pipe"]
    assert render_tables(text).startswith("```html\n<table><tr><td>code</td></tr></table>\n```")


def test_markup_only_table_renders_to_nothing():
    assert one("<table><tr><td>&nbsp;</td><td></td></tr></table>").text == ""


# -- pipe tables -----------------------------------------------------------------------------
def test_pipe_table_with_inline_markup_and_escaped_pipes():
    text = "| Item \\| kind | **2023** |\n|:--|--:|\n| `Cash` *held* | [$ 5](http://x) |\n| Total | **$ 5** |\n"
    t = one(text)
    assert t.kind == "pipe" and t.header_line == "Item | kind | 2023"
    assert [r.text for r in t.rows] == ["Cash held: $ 5", "Total: $ 5"]
    assert text[t.start : t.end] == text.rstrip("\n")
    assert [text[r.start : r.end] for r in t.rows] == ["| `Cash` *held* | [$ 5](http://x) |", "| Total | **$ 5** |"]


def test_pipe_values_paired_with_headers_common_words_dropped(tenk):
    rows = [r.text for r in one(section(tenk, "Note 9 - Other Liabilities")).rows]
    assert rows[0] == "Uncertain tax positions: 2023 $ 118; 2022 $ 109"
    debt = [r.text for r in one(section(tenk, "Note 14 - Debt")).rows]
    assert debt[4] == (
        "Term loan: Maturity 2027; Interest rate SOFR + 1.125%; December 31, 2023 880; December 31, 2022 1,030"
    )
    assert debt[5] == "Total principal: December 31, 2023 3,230; December 31, 2022 3,380"


def test_header_row_holding_amounts_is_read_as_data():
    # opendataloader-pdf writes the first data row of a flattened table as the header row.
    text = "|Total current assets 19,378|17,095|16,103|\n|---|---|---|\n|Goodwill 10,806|10,604|10,769|\n"
    t = one(text)
    assert t.headers == ()
    rows = [r.text for r in t.rows]
    assert rows == ["Total current assets 19,378: 17,095; 16,103", "Goodwill 10,806: 10,604; 10,769"]


def test_empty_pipe_header_then_header_like_first_row():
    text = "| | | |\n|---|---|---|\n| | 2023 | 2022 |\n| Revenue | 10 | 9 |\n"
    t = one(text)
    assert t.header_line == "2023 | 2022"
    assert [r.text for r in t.rows] == ["Revenue: 2023 10; 2022 9"]


def test_single_value_column_rows_read_label_value():
    t = one("| Expense type | Limit |\n|---|---|\n| Hotel (London) | £180 per night |\n")
    assert t.text == "Expense type | Limit\nHotel (London): £180 per night"


def test_case_15_heading_markup_in_cells_stays_cell_text(cases_dir):
    text = (cases_dir / "15-heading-markup-in-table-cells" / "input.md").read_text(encoding="utf-8")
    t = one(text)
    assert t.text == "# Part name | Qty\n## Bolt: 4\nWasher: 8"
    assert t.title == "Before the table."


def test_html_and_pipe_tables_in_one_text_in_order(tenk):
    tables = find_tables(section(tenk, "Note 15 - Income Taxes"))
    assert [t.kind for t in tables] == ["pipe", "html"]
    assert tables[0].rows[-1].text == "Provision for income taxes: 2023 $ 221; 2022 $ 204; 2021 $ 157"


def test_text_without_tables():
    assert find_tables("Plain prose with a | pipe and a <b>tag</b>.\n") == ()
    assert render_tables("No tables here.") == "No tables here."


# -- embedded text ---------------------------------------------------------------------------
def test_embedded_text_maps_pieces_back_to_whole_source_rows(tenk):
    source = section(tenk, "Note 9 - Other Liabilities")
    e = EmbeddedText(source)
    assert "<" not in e.text and "|---" not in e.text
    line = "Deferred compensation: 2023 97; 2022 90"
    a = e.text.index(line)
    s, t = e.source_span(a, a + len(line))
    assert source[s:t] == "| Deferred compensation | 97 | 90 |"
    # A piece inside a row still covers the whole row.
    assert e.source_span(a + 3, a + 10) == (s, t)
    # Prose maps character for character.
    p = e.text.index("consisted")
    assert e.source_span(p, p + 9) == (source.index("consisted"), source.index("consisted") + 9)


def test_embedded_text_context_repeats_title_and_headers(tenk):
    e = EmbeddedText(section(tenk, "CONSOLIDATED STATEMENTS OF OPERATIONS"))
    first = e.text.index("Year Ended")
    assert e.context_at(first) == "(in millions, except per share amounts)"
    later = e.text.index("Net income:")
    assert e.context_at(later) == (
        "(in millions, except per share amounts)\n"
        "Year Ended December 31, 2023 | Year Ended December 31, 2022 | Year Ended December 31, 2021"
    )
    assert e.context_at(0) == ""  # the prose before the table


def test_embedded_text_of_plain_prose_is_the_source():
    text = "Some prose.\n\nMore prose | with a pipe.\n"
    e = EmbeddedText(text)
    assert e.text == text and e.source_span(0, len(text)) == (0, len(text.rstrip()))


def test_docstring_examples_hold():
    import doctest

    import proxypointer.chunk.datauri
    import proxypointer.chunk.embedtext
    import proxypointer.chunk.tables

    for module in (proxypointer.chunk.tables, proxypointer.chunk.embedtext, proxypointer.chunk.datauri):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_title_paragraph_opens_the_table_paragraph(tenk):
    source = section(tenk, "CONSOLIDATED STATEMENTS OF CASH FLOWS")
    e = EmbeddedText(source)
    assert "HARBORLIGHT SYSTEMS, INC.\n(in millions)\n2023 | 2022 | 2021\nOperating activities\n" in e.text
    a = e.text.index("HARBORLIGHT")
    b = e.text.index("Operating activities") + len("Operating activities")
    s, t = e.source_span(a, b)
    assert source[s:t].startswith("HARBORLIGHT SYSTEMS, INC.\n\n(in millions)\n\n<table><tr><th></th>")
    assert source[s:t].endswith("<em>Operating activities</em></td></tr>")

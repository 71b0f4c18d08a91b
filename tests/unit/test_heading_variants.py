"""scripts/heading_variants.py: converter-heading fixes change heading markers only, line for line."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("heading_variants", ROOT / "scripts" / "heading_variants.py")
hv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hv)


def test_row_like_titles_are_numbers_not_words():
    assert hv.row_like("Total Liabilities and Equity $ 29,499 $ 30,154")
    assert hv.row_like("44")
    assert not hv.row_like("Note 7. Debt")
    assert not hv.row_like("Item 7. Management's Discussion and Analysis")


def test_title_like_lines():
    assert hv.title_like("CONSOLIDATED BALANCE SHEETS")
    assert hv.title_like("Consolidated Statements of Operations")
    assert hv.title_like("SQUARE, INC. CONSOLIDATED BALANCE SHEETS (In thousands, except share and per share data)")
    assert not hv.title_like("(In millions, except per share data)")
    assert not hv.title_like("For the Years Ended December 31, 2020 2019 2018")  # numbers
    assert not hv.title_like("The Company records accruals for legal matters.")  # a sentence
    assert not hv.title_like("- Item 5. Market for Registrant's Common Equity")  # a list item
    assert not hv.title_like("Total")  # one word
    assert not hv.title_like("Cash and equivalents 12")  # a table row
    assert not hv.title_like("5/7/26, 3:39 AM EX-10.1")  # a page banner


def test_runs_of_title_like_lines_are_a_column_not_titles():
    text = "New York\n\nNorth Carolina\n\nNorth Dakota\n\nSome text here.\n\nANNUAL REPORT SUMMARY\n\nBody.\n"
    new, counts = hv.transform(text, drop_row_headings=False, title_lines=True)
    assert counts["promoted"] == 1 and "## ANNUAL REPORT SUMMARY" in new


def test_transform_keeps_every_line_and_leaves_code_alone():
    text = ("<!-- page 1 -->\n\nCONSOLIDATED BALANCE SHEETS\n\n### Total assets $ 1,200 $ 1,100\n\n"
            "```\nCONSOLIDATED CODE LISTING\n```\n\nplain sentence here.\n")
    new, counts = hv.transform(text, drop_row_headings=True, title_lines=True)
    lines = new.split("\n")
    assert len(lines) == len(text.split("\n"))
    assert lines[2] == "## CONSOLIDATED BALANCE SHEETS"
    assert lines[4] == "Total assets $ 1,200 $ 1,100"
    assert lines[7] == "CONSOLIDATED CODE LISTING"
    assert counts == {"dropped": 1, "promoted": 1, "flattened": 0}
    flat, counts = hv.transform("# A\n\n### B\n\n> ##### C\n", False, False, flatten=2)
    assert flat.split("\n")[:3] == ["## A", "", "## B"] and counts["flattened"] == 2


def test_variant_benchmark_keeps_gold_as_lines(tmp_path):
    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    text = "<!-- page 1 -->\n\nCONSOLIDATED BALANCE SHEETS\n\nCash 12\n<!-- page 2 -->\n\nOther text.\n"
    (src / "docs" / "d.md").write_text(text)
    start, end = text.index("<!-- page 1"), text.index("<!-- page 2")
    (src / "questions.jsonl").write_text(json.dumps(
        {"id": "q", "doc_id": "d", "question": "cash?", "evidence_spans": [{"start": start, "end": end}]}) + "\n")
    assert hv.main([str(src), str(tmp_path / "out"), "--title-lines"]) == 0
    from proxypointer.eval.benchmark import load_benchmark

    bench = load_benchmark(tmp_path / "out")
    span = bench.questions[0].spans[0]
    assert (span.start_line, span.end_line) == (1, 5)
    assert bench.texts["d"].split("\n")[2:5] == ["## CONSOLIDATED BALANCE SHEETS", "", "Cash 12"]

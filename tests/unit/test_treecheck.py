"""PageIndex export, outline and validation report of a tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proxypointer.cli import main
from proxypointer.config import TreeConfig
from proxypointer.errors import ConfigError, StaleSourceError
from proxypointer.lines import split_lines
from proxypointer.read.readers import read_document
from proxypointer.tree.build import build_tree
from proxypointer.tree.check import TreeWarning, check_tree, tree_outline, tree_to_pageindex

ROOT = Path(__file__).resolve().parents[2]

DOC = "Intro text.\n# A\n## B\ntext\n### C\n## D\n# E\n"


def _check(text, **kw):
    tree = build_tree(text, "doc")
    return check_tree(tree, split_lines(text), **kw)


def test_pageindex_layout():
    tree = build_tree(DOC, "doc")
    out = tree_to_pageindex(tree)
    assert out["doc_name"] == "doc" and out["line_count"] == 7

    def shape(nodes):
        return [(n["title"], n["line_num"], shape(n["nodes"])) for n in nodes]

    assert shape(out["structure"]) == [
        ("doc", 1, []),
        ("A", 2, [("B", 3, [("C", 5, [])]), ("D", 6, [])]),
        ("E", 7, []),
    ]
    assert out["structure"][1]["node_id"] == tree.nodes[1].node_id


def test_pageindex_of_case_01(cases_dir):
    (folder,) = [p for p in cases_dir.iterdir() if p.name.startswith("01-")]
    out = tree_to_pageindex(build_tree(read_document(folder / "input.md"), "input"))
    assert [(n["title"], n["line_num"]) for n in out["structure"][0]["nodes"]] == [
        ("Configure", 10), ("Verify", 26)]


def test_outline():
    assert tree_outline(build_tree(DOC, "doc")) == "\n".join([
        "[preamble] doc  L1-L1",
        "# A  L2-L6",
        "  ## B  L3-L5",
        "    ### C  L5-L5",
        "  ## D  L6-L6",
        "# E  L7-L7",
    ])
    assert tree_outline(build_tree("no headings\n", "doc")) == ""


def test_clean_tree_has_no_warnings():
    assert _check(DOC) == []


def test_no_headings_is_a_note_naming_the_flags():
    (w,) = _check("just text\n")
    assert (w.code, w.line, w.severity) == ("no-headings", 0, "note")
    assert "sliding windows" in w.message and "--bold-headings" in w.message
    assert w.format("notes.md") == f"notes.md: note[no-headings]: {w.message}"
    assert _check("") == []


def test_flat_levels():
    text = "## 3 A\nx\n## 3.1 B\nx\n## 3.2 C\nx\n## 4 D\nx\n"
    (w,) = _check(text)
    assert (w.code, w.severity) == ("flat-levels", "warning")
    assert "--relevel-numbered (tree.relevel_numbered)" in w.message
    # flat but numbering has one depth only: fine
    assert _check("## 1 A\nx\n## 2 B\nx\n## 3 C\nx\n## 4 D\nx\n") == []


def test_dominant_node():
    body = ("word " * 20 + "\n") * 30
    text = "# Big\n" + body + "# Small\nshort\n"
    warnings = _check(text)
    assert [(w.code, w.line) for w in warnings] == [("dominant-node", 1)]
    assert "Big" in warnings[0].message


def test_sentence_heading():
    text = "# Title\n## This is some content under heading 1.\n## " + "w " * 16 + "\n## Why?\n"
    assert [(w.code, w.line) for w in _check(text)] == [
        ("sentence-heading", 2), ("sentence-heading", 3)]


def test_duplicate_title_path():
    text = "# A\n## Usage\nx\n## Usage\ny\n# B\n## Usage\nz\n"
    assert [(w.code, w.line) for w in _check(text)] == [("duplicate-title", 4)]


def test_long_section_with_custom_counter():
    text = "# A\n" + "one two three\n" * 10 + "# B\nx\n"
    warnings = _check(text, count_tokens=lambda s: len(s.split()), max_section_tokens=29)
    assert [(w.code, w.line) for w in warnings] == [("long-section", 1)]
    assert _check(text, count_tokens=lambda s: len(s.split()), max_section_tokens=30) == []
    # default counter: 30 words * 1.3 = 39 tokens
    assert [w.code for w in _check(text, max_section_tokens=38)] == ["long-section"]
    assert _check(text, max_section_tokens=39) == []


def test_bad_arguments():
    tree = build_tree(DOC, "doc")
    with pytest.raises(ConfigError, match="max_section_tokens"):
        check_tree(tree, split_lines(DOC), max_section_tokens=0)
    with pytest.raises(StaleSourceError, match="doc: lines has 1 lines"):
        check_tree(tree, ["x"])


def test_warning_is_frozen():
    w = TreeWarning("x", 1, "m")
    with pytest.raises(AttributeError):
        w.code = "y"  # type: ignore[misc]


# -- 35: display math read as a heading --------------------------------------------------------
def test_math_heading_flags_an_equation_read_as_a_heading():
    # a blank line inside the equation keeps the CommonMark reading: "$$ L" is a setext heading
    text = "# Model\n\n$$ L\n=\n\nR\n$$\n\n## Training\n\n\\[ x\n-\n\ny\n\\]\n"
    warnings = [(w.code, w.line) for w in _check(text) if w.code == "math-heading"]
    assert warnings == [("math-heading", 3), ("math-heading", 11)]


def test_case_35_checks_clean(cases_dir):
    (folder,) = [p for p in cases_dir.iterdir() if p.name.startswith("35-")]
    text = read_document(folder / "input.md")
    assert check_tree(build_tree(text, "input"), split_lines(text)) == []


def test_row_headings_reported_once_with_count():
    text = "# Results\ntext\n###### 4,867,457 $ 133.54\nx\n## Outlook\ny\n###### 2021 FORM 10-K 30\n"
    rows = [w for w in _check(text) if w.code == "row-headings"]
    assert [(w.line, w.severity) for w in rows] == [(3, "warning")]
    assert "2 heading(s)" in rows[0].message and "--converter-output on" in rows[0].message
    tree = build_tree(text, "doc", TreeConfig(converter_output="on"))
    assert not [w for w in check_tree(tree, split_lines(text)) if w.code == "row-headings"]


# -- the tree --check command ----------------------------------------------------------------
def test_cli_check_headingless_sample_exits_0(capsys):
    sample = ROOT / "data" / "site-visit-notes.md"
    assert main(["tree", "--check", str(sample)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{sample}: note[no-headings]: ")
    assert out[-1] == f"{sample}: ok (0 nodes)"


def test_cli_tree_of_a_document_without_headings_says_so(tmp_path, capsys):
    paged = tmp_path / "paged.md"  # page markers and no heading: the outline printer once crashed
    paged.write_text("<!-- page 1 -->\nsome notes\n<!-- page 2 -->\nmore notes\n", encoding="utf-8")
    for doc in (paged, ROOT / "data" / "site-visit-notes.md"):
        assert main(["tree", str(doc)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith(f"{doc} (") and out[1].startswith("no headings: ")


def test_cli_check_warnings_exit_1_with_one_location_each(tmp_path, capsys):
    doc = tmp_path / "flat.md"
    doc.write_text("## 3 A\nx\n## 3.1 B\nx\n## 3.2 C\nx\n## 4 D\nx\n## 4 D\ny\n", encoding="utf-8")
    assert main(["tree", "--check", str(doc)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and not any(line.endswith("ok") for line in lines)
    for line in lines:
        assert ":0:" not in line and "line 0" not in line
        assert line.count(str(doc)) == 1  # the location is said once, at the start
        assert "tree." not in line.split("(", 1)[0]  # CLI flags first, config keys only in (...)
    assert lines[0] == f"{doc}: warning[flat-levels]: all 5 headings are level 2 but their numbering has 2 " \
        "depths; try --relevel-numbered (tree.relevel_numbered)"
    assert lines[1].startswith(f"{doc}:9: warning[duplicate-title]: ")


def test_cli_check_json_is_one_json_object_per_file(tmp_path, capsys):
    doc = tmp_path / "flat.md"
    doc.write_text("## 3 A\nx\n## 3.1 B\nx\n## 3.2 C\nx\n## 4 D\nx\n## 4 D\ny\n", encoding="utf-8")
    sample = ROOT / "data" / "site-visit-notes.md"
    assert main(["tree", "--check", "--json", str(doc), str(sample)]) == 1
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(g["file"], g["nodes"], g["warnings"]) for g in got] == [(str(doc), 5, 2), (str(sample), 0, 0)]
    assert [(w["code"], w["line"], w["severity"]) for w in got[0]["findings"]] == [
        ("flat-levels", 0, "warning"), ("duplicate-title", 9, "warning")]
    assert got[1]["findings"][0]["code"] == "no-headings" and got[1]["findings"][0]["severity"] == "note"


def test_cli_check_with_a_mode_flag(tmp_path, capsys):
    doc = tmp_path / "flat.md"
    doc.write_text("## 3 A\nx\n## 3.1 B\nx\n## 3.2 C\nx\n## 4 D\nx\n", encoding="utf-8")
    assert main(["tree", "--check", "--relevel-numbered", str(doc)]) == 0
    assert capsys.readouterr().out.strip() == f"{doc}: ok (4 nodes)"


CONVERTED_PAGE = """\
<!-- page 1 -->
# Item 8. Financial Statements

CONSOLIDATED BALANCE SHEETS

Cash and cash equivalents $ 1,284 $ 1,102

## Total current assets $ 1,234

<!-- page 2 -->
## Note 14 - Debt

text
"""


def test_cli_check_says_what_the_converter_rules_did(tmp_path, capsys):
    doc = tmp_path / "converted.md"
    doc.write_text(CONVERTED_PAGE, encoding="utf-8")
    assert main(["tree", "--check", str(doc)]) == 0
    note, ok = capsys.readouterr().out.splitlines()
    assert note.startswith(f"{doc}: note[converter-rules]: converter rules ran (page markers (read and emptied)): ")
    assert "1 heading(s) dropped as table rows or page furniture" in note
    assert "1 title line(s) made headings (first: line 4, 'CONSOLIDATED BALANCE SHEETS')" in note
    assert note.endswith("to keep the headings as written: --converter-output off (tree.converter_output: off)")
    assert ok == f"{doc}: ok (3 nodes)"  # Item 8, the statement, Note 14 (the emptied marker is no preamble)


def test_cli_converter_output_off_keeps_the_headings_as_written(tmp_path, capsys):
    doc = tmp_path / "converted.md"
    doc.write_text(CONVERTED_PAGE, encoding="utf-8")
    assert main(["tree", "--json", "--converter-output", "off", str(doc)]) == 0
    titles = [n["title"] for n in json.loads(capsys.readouterr().out)["nodes"] if n["kind"] == "heading"]
    assert titles == ["Item 8. Financial Statements", "Total current assets $ 1,234", "Note 14 - Debt"]
    # and the check then warns about the row heading instead
    assert main(["tree", "--check", "--converter-output", "off", str(doc)]) == 1
    assert "warning[row-headings]" in capsys.readouterr().out


def test_the_outline_cuts_a_huge_title_and_says_how_long_it_was():
    from proxypointer.tree.build import build_tree
    from proxypointer.tree.check import OUTLINE_TITLE_MAX_CHARS, tree_outline

    title = "word " * 100_000
    out = tree_outline(build_tree(f"# {title}\ntext\n## Short\n", "doc"))
    first, second = out.split("\n")
    assert len(first) < OUTLINE_TITLE_MAX_CHARS + 60
    assert first.startswith("# word word") and "… (499,999 characters)  L1-L3" in first
    assert second == "  ## Short  L3-L3"


def test_headings_written_with_a_no_break_space_are_reported_with_their_lines():
    from proxypointer.lines import split_lines
    from proxypointer.tree.build import build_tree
    from proxypointer.tree.check import check_tree

    text = (
        "# Manual\n\nIntro.\n\n##\u00a0Installation\n\nRun the installer.\n\n"
        "```\n##\u00a0not a heading: code\n```\n\n###\u202fSafety\n\nWear gloves.\n"
    )
    tree = build_tree(text, "manual")
    assert [n.title for n in tree.nodes if n.kind == "heading"] == ["Manual"]  # CommonMark: text
    (w,) = [w for w in check_tree(tree, split_lines(text)) if w.code == "space-heading"]
    assert w.line == 5 and "lines 5, 13" in w.message and "2 line(s)" in w.message
    only = "##\u00a0Installation\n\nRun it.\n"
    codes = [w.code for w in check_tree(build_tree(only, "d"), split_lines(only))]
    assert "space-heading" in codes and "no-headings" in codes


def test_converter_output_gets_its_no_break_space_headings_repaired():
    # issue 32: Word, Google Docs and some converters export "##" + U+00A0 + title. In converter
    # output (here: page markers) the rule makes them the headings they were meant to be.
    from proxypointer.config import TreeConfig
    from proxypointer.lines import split_lines
    from proxypointer.tree.build import build_tree
    from proxypointer.tree.check import check_tree

    text = (
        "<!-- page 1 -->\n\n# Manual\n\nIntro.\n\n##\u00a0Installation\u00a0##\nRun the installer.\n\n"
        "```\n##\u00a0not a heading: code\n```\n\n- ##\u00a0a list item stays one\n\n"
        "<!-- page 2 -->\n\n###\u202fSafety\n\nWear gloves.\n"
    )
    tree = build_tree(text, "manual", TreeConfig(converter_output="on", flatten_levels=False))
    got = [(n.title, n.level, n.start_line, n.end_line, n.body_start_line) for n in tree.nodes if n.kind == "heading"]
    assert got == [("Manual", 1, 3, 20, 4), ("Installation", 2, 7, 20, 8), ("Safety", 3, 18, 20, 19)]
    # with every default on (flatten_levels too) they are still found
    default = build_tree(text, "manual", TreeConfig(converter_output="on"))
    assert {"Installation", "Safety"} <= {n.title for n in default.nodes}
    assert not [w for w in check_tree(tree, split_lines(text)) if w.code == "space-heading"]
    # the rule can be switched off; hand-written markdown keeps CommonMark's reading
    off = build_tree(text, "manual", TreeConfig(converter_output="on", space_headings=False, flatten_levels=False))
    assert [n.title for n in off.nodes if n.kind == "heading"] == ["Manual"]
    plain = text.replace("<!-- page 1 -->\n", "").replace("<!-- page 2 -->\n", "")
    assert [n.title for n in build_tree(plain, "manual").nodes if n.kind == "heading"] == ["Manual"]


def test_check_warnings_cut_a_huge_title_too(tmp_path, capsys):
    doc = tmp_path / "huge.md"
    title = "Word " * 3_000  # a heading that reads like a sentence and is 15,000 characters long
    doc.write_text(f"# Intro\ntext\n## {title}is what we said.\ntext\n", encoding="utf-8")
    main(["tree", "--check", str(doc)])
    out = capsys.readouterr().out
    assert out and all(len(line) < 600 for line in out.splitlines())

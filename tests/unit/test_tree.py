"""Skeleton tree: every parsing bug case (exact nodes from expected.md) plus variants of each."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from proxypointer.config import TreeConfig
from proxypointer.errors import StaleSourceError
from proxypointer.lines import normalise_text, slice_lines, split_lines
from proxypointer.read.readers import read_document
from proxypointer.tree.build import PREAMBLE_ID, DocumentTree, build_tree, find_headings

BOLD = TreeConfig(bold_headings=True)
NUMBERED = TreeConfig(numbered_headings=True)
HTML = TreeConfig(html_headings=True)
RELEVEL = TreeConfig(relevel_numbered=True)


# -- expected.md tables ------------------------------------------------------------------------
_ROW = re.compile(r"^\| (\d+) \| (\d+) \| (.*?) \| (\d+) \| (\d+) \| (\d+) \| (.*?) \|$")


def _expected_tables(path: Path) -> list[tuple[int, list[tuple]]]:
    """Every node table of an expected.md with the last ``(total_lines = N)`` before it."""
    tables: list[tuple[int, list[tuple]]] = []
    total = -1
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.search(r"total_lines = (\d+)", line)
        if m:
            total = int(m.group(1))
        if line.startswith("| # | level | title |"):
            tables.append((total, []))
            continue
        m = _ROW.match(line)
        if m and tables:
            level, title, start, end, body_end, parent = m.group(2, 3, 4, 5, 6, 7)
            tables[-1][1].append((int(level), title, int(start), int(end), int(body_end), parent))
    return tables


def _rows(tree: DocumentTree) -> list[tuple]:
    out = []
    for n in tree.nodes:
        if n.kind != "heading":
            continue
        parent = tree.node(n.parent_id).title if n.parent_id else "-"
        out.append((n.level, n.title, n.start_line, n.end_line, n.body_end_line, parent))
    return out


# (case folder prefix, input file, config, index of the table in expected.md)
CASES = [
    ("01-", "input.md", None, 0),
    ("02-", "input.md", None, 0),
    ("04-", "input.md", None, 0),
    ("05-", "input_lf.md", None, 0),
    ("05-", "input_crlf.md", None, 1),
    ("05-", "input_ff.md", None, 2),
    ("07-", "input.md", None, 0),
    ("08-", "input.md", None, 0),
    ("09-", "input.md", None, 0),
    ("11-", "input.md", None, 0),
    ("12-", "input.md", None, 0),
    ("12-", "input.md", BOLD, 1),
    ("13-", "input_flat.md", None, 0),
    ("13-", "input_flat.md", RELEVEL, 1),
    ("13-", "input_paragraph_headings.md", None, 2),
    ("14-", "input.md", None, 0),
    ("14-", "input.md", NUMBERED, 1),
    ("15-", "input.md", None, 0),
    ("30-", "input.md", None, 0),
    ("30-", "input_html_mode.md", HTML, 1),
    ("35-", "input.md", None, 0),
]


def _case(cases_dir: Path, prefix: str) -> Path:
    (folder,) = [p for p in cases_dir.iterdir() if p.name.startswith(prefix)]
    return folder


@pytest.mark.parametrize(
    ("prefix", "name", "config", "table"), CASES,
    ids=[f"{p}{n}-{'default' if c is None else 'opt-in'}" for p, n, c, _ in CASES],
)
def test_case_tree_equals_expected(cases_dir, prefix, name, config, table):
    folder = _case(cases_dir, prefix)
    total, expected = _expected_tables(folder / "expected.md")[table]
    tree = build_tree(read_document(folder / name), Path(name).stem, config)
    assert tree.line_count == total
    assert _rows(tree) == expected


def test_case_tables_were_parsed(cases_dir):
    # Guards the parser above: a silently empty table would make the case tests vacuous.
    assert len(_expected_tables(_case(cases_dir, "01-") / "expected.md")[0][1]) == 3
    assert len(_expected_tables(_case(cases_dir, "04-") / "expected.md")[0][1]) == 8
    tables = _expected_tables(_case(cases_dir, "13-") / "expected.md")
    assert [len(rows) for _, rows in tables] == [5, 5, 4]
    tables = _expected_tables(_case(cases_dir, "12-") / "expected.md")
    assert [len(rows) for _, rows in tables] == [1, 4]
    tables = _expected_tables(_case(cases_dir, "30-") / "expected.md")
    assert [(total, len(rows)) for total, rows in tables] == [(24, 3), (20, 3)]
    assert [(total, len(rows)) for total, rows in _expected_tables(_case(cases_dir, "35-") / "expected.md")] == [
        (27, 3)]


# -- 01 fenced code ------------------------------------------------------------------------------
def test_fence_slice_keeps_code_blocks_whole(cases_dir):
    text = read_document(_case(cases_dir, "01-") / "input.md")
    tree = build_tree(text, "input")
    configure = next(n for n in tree.nodes if n.title == "Configure")
    section = slice_lines(split_lines(text), configure.start_line, configure.end_line)
    assert "~~~yaml\n# comment inside a tilde fence\nretries: 3\n~~~" in section
    assert section.count("````") == 2


def test_fence_state_is_per_document(cases_dir):
    build_tree(read_document(_case(cases_dir, "01-") / "input.md"), "a")  # ends in an open fence
    assert [n.title for n in build_tree("# After\n", "b").nodes] == ["After"]


@pytest.mark.parametrize(
    ("text", "titles"),
    [
        ("~~~\n# x\n```\n# y\n~~~\n# z\n", ["z"]),  # a backtick fence does not close tildes
        ("`````\n# x\n````\n# y\n`````\n# z\n", ["z"]),  # closing fence must be >= as long
        ("```\n# x\n``` not a close\n# y\n```\n# z\n", ["z"]),  # closing fence has no info
        ("    ```\n# real\n", ["real"]),  # 4-space indent: indented code, not a fence
        ("``` a`b\n# real\n", ["real"]),  # backtick in info string: not a fence
        ("# a\n```\n# code\n", ["a"]),  # unclosed at end of file
        ("# a\n\n    # indented code\n\n# b\n", ["a", "b"]),
    ],
)
def test_fence_and_code_variants(text, titles):
    assert [h.title for h in find_headings(text)[0]] == titles


# -- 02 setext ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Title\n===\n", [(1, "Title", 1)]),
        ("Title\n-\n", [(2, "Title", 1)]),
        ("line one\nline two\n---\n", [(2, "line one line two", 1)]),  # one heading, joined
        ("text\n\n---\n", []),  # after a blank line: thematic break
        ("- item\n---\n", []),  # after a list item: thematic break
        ("> quote\n---\n", []),  # after a quote: thematic break
        ("```\ncode\n```\n---\n", []),
        ("    code\n---\n", []),
        ("Title\n    ===\n", []),  # underline indented 4: paragraph continuation
        ("Title\n= =\n", []),
        ("| a |\n---\n", []),  # a one-column table, per GFM in markdown-it
    ],
)
def test_setext_variants(text, expected):
    headings, _ = find_headings(text)
    assert [(h.level, h.title, h.line) for h in headings] == expected


def test_setext_body_starts_after_underline(cases_dir):
    tree = build_tree(read_document(_case(cases_dir, "02-") / "input.md"), "input")
    started = {n.title: n.body_start_line for n in tree.nodes}
    assert started["Getting Started"] == 8
    assert started["Field Handbook"] == 3


# -- 04 ATX edges ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("# Overview #", (1, "Overview")),
        ("## Setup ##########", (2, "Setup")),
        ("### Notes for C#", (3, "Notes for C#")),
        ("# foo#", (1, "foo#")),
        ("# Foo # bar #", (1, "Foo # bar")),
        ("#\tTabbed", (1, "Tabbed")),
        ("   ### three spaces", (3, "three spaces")),
        ("###### six", (6, "six")),
        ("## Trailing hashes and spaces ##   ", (2, "Trailing hashes and spaces")),
        ("####### seven", None),
        ("#hashtag", None),
        ("    # four spaces", None),
        ("\\# escaped", None),
        ("#", None),  # bare: deliberately no node (case 04)
        ("## ##", None),
        ("#\f x", None),  # a form feed is not a space after the marker
    ],
)
def test_atx_variants(line, expected):
    headings, _ = find_headings(line + "\n")
    assert [(h.level, h.title) for h in headings] == ([expected] if expected else [])


def test_bare_hash_does_not_reparent(cases_dir):
    tree = build_tree(read_document(_case(cases_dir, "04-") / "input.md"), "input")
    assert all(n.title for n in tree.nodes)
    overview = tree.nodes[0]
    assert [c.title for c in tree.children(overview.node_id)][-2:] == [
        "Trailing hashes and spaces",
        "Indented by two spaces is still a heading",
    ]


# -- 05 line endings -----------------------------------------------------------------------------
def test_crlf_gives_same_ids_and_slices(cases_dir):
    folder = _case(cases_dir, "05-")
    lf_text = read_document(folder / "input_lf.md")
    crlf_text = read_document(folder / "input_crlf.md")
    lf, crlf = build_tree(lf_text, "doc"), build_tree(crlf_text, "doc")
    assert lf.nodes == crlf.nodes
    assert not any("\r" in n.title for n in crlf.nodes)
    for n in lf.nodes:
        assert slice_lines(split_lines(crlf_text), n.start_line, n.end_line) == slice_lines(
            split_lines(lf_text), n.start_line, n.end_line
        )


def test_form_feed_and_separators_do_not_end_lines(cases_dir):
    text = read_document(_case(cases_dir, "05-") / "input_ff.md")
    lines = split_lines(text)
    tree = build_tree(text, "input_ff")
    outflow = next(n for n in tree.nodes if n.title == "Outflow")
    assert (outflow.start_line, outflow.end_line) == (11, 13)
    section = slice_lines(lines, 11, 13).split("\n")
    assert section[:2] == ["## Outflow", ""]
    assert section[2].startswith("Valves are checked monthly.\x85")


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_endings_and_bom(eol):
    raw = "\ufeff" + eol.join(["# A", "text\f more", "para\u2028graph", "## B", "x"]) + eol
    tree = build_tree(normalise_text(raw), "doc")
    assert [(n.title, n.start_line, n.end_line) for n in tree.nodes] == [("A", 1, 5), ("B", 4, 5)]


def test_split_lines_rules():
    assert split_lines("") == []
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("a\fb\u2028c\x85d\n") == ["a\fb\u2028c\x85d"]
    with pytest.raises(StaleSourceError):
        slice_lines(["a"], 1, 2)


# -- front matter --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "fm_end", "first"),
    [
        ("---\ntitle: x\n---\n# A\n", 3, ("A", 4)),
        ("\ufeff---\ntitle: x\n---\n# A\n", 3, ("A", 4)),  # after a BOM
        ("---\ntitle: x\n...\n# A\n", 3, ("A", 4)),
        ("---\r\n# not a heading: yaml comment\r\n---\r\n# A\r\n", 3, ("A", 4)),
        ("---\ntitle: x\n", 0, None),  # unclosed: a thematic break and a paragraph
        ("\n---\na: 1\n---\n# A\n", 0, ("a: 1", 3)),  # not at line 1: setext heading
    ],
)
def test_front_matter(raw, fm_end, first):
    tree = build_tree(normalise_text(raw), "doc")
    assert tree.front_matter_end == fm_end
    headings = [(n.title, n.start_line) for n in tree.nodes if n.kind == "heading"]
    assert (headings[0] if headings else None) == first
    assert all(n.start_line > fm_end for n in tree.nodes)


def test_front_matter_is_not_preamble():
    tree = build_tree("---\na: 1\n---\nIntro.\n# A\n", "doc")
    pre = tree.nodes[0]
    assert (pre.kind, pre.start_line, pre.end_line) == ("preamble", 4, 4)


# -- 07 preamble, 08 no headings, 09 single heading, 11 empty sections ---------------------------
def test_preamble_node(cases_dir):
    text = read_document(_case(cases_dir, "07-") / "input.md")
    tree = build_tree(text, "input")
    pre = tree.nodes[0]
    assert (pre.node_id, pre.level, pre.start_line, pre.end_line, pre.parent_id) == (
        PREAMBLE_ID, 0, 1, 3, "")
    assert pre.title == "input"
    assert PREAMBLE_ID not in {n.node_id for n in tree.nodes[1:]}
    assert "Snapshots are kept for 30 days" in slice_lines(split_lines(text), 1, 3)
    assert "# Installation" not in slice_lines(split_lines(text), 1, 3)


@pytest.mark.parametrize("text", ["\n\n# A\n", "   \n\t\n# A\n"])
def test_blank_preamble_creates_no_node(text):
    assert [n.kind for n in build_tree(text, "d").nodes] == ["heading"]


@pytest.mark.parametrize("name", ["empty.md", "whitespace_only.md", "input.md"])
def test_documents_without_headings_have_no_nodes(cases_dir, name):
    text = read_document(_case(cases_dir, "08-") / name)
    tree = build_tree(text, Path(name).stem)
    assert tree.nodes == ()
    assert not tree.has_headings
    assert tree.line_count == len(split_lines(text))


def test_single_heading_slice_is_whole_file(cases_dir):
    text = read_document(_case(cases_dir, "09-") / "input.md")
    (node,) = build_tree(text, "input").nodes
    assert slice_lines(split_lines(text), node.start_line, node.end_line) == text.rstrip("\n")


def test_empty_and_trailing_headings_are_kept(cases_dir):
    text = read_document(_case(cases_dir, "11-") / "input.md")
    tree = build_tree(text, "input")
    by_title = {n.title: n for n in tree.nodes}
    assert (by_title["Usage"].start_line, by_title["Usage"].body_end_line) == (9, 10)
    changelog = by_title["Changelog"]
    assert (changelog.start_line, changelog.end_line, changelog.body_start_line) == (11, 11, 12)
    assert build_tree("# A\n## B\n## C", "d").nodes[-1].title == "C"


# -- nesting, ids ------------------------------------------------------------------------------
def test_skipped_levels_nest_and_breadcrumb_resets():
    tree = build_tree("# A\n### C\n## B\n#### D\n# E\n### F\n", "d")
    paths = [tree.title_path(n.node_id) for n in tree.nodes]
    assert paths == [("A",), ("A", "C"), ("A", "B"), ("A", "B", "D"), ("E",), ("E", "F")]
    assert [n.end_line for n in tree.nodes] == [4, 2, 4, 4, 6, 6]


def test_duplicate_titles_get_distinct_stable_ids():
    text = "# A\n## Usage\n## Usage\n# B\n## Usage\n"
    tree = build_tree(text, "d")
    ids = [n.node_id for n in tree.nodes]
    assert len(set(ids)) == len(ids)
    assert [n.node_id for n in build_tree(text, "d").nodes] == ids
    # inserting a section elsewhere does not renumber the others
    later = build_tree("# Z\n" + text, "d")
    assert {n.node_id for n in later.nodes} >= set(ids)


def test_headings_inside_containers_are_not_sections():
    text = "- # in list\n\n> # in quote\n\n1. ## numbered\n\n| # a | b |\n|---|---|\n| # c | d |\n"
    assert find_headings(text) == ([], 0)


def test_lazy_continuation_and_list_end():
    text = "> quote\ncontinued\n# Real\n- item\n  # in item\n# Also real\n"
    assert [(h.title, h.line) for h in find_headings(text)[0]] == [("Real", 3), ("Also real", 6)]


def test_html_block_hides_headings_until_blank_line():
    text = "<div>\n# inside html\n</div>\n\n# Outside\n"
    assert [h.title for h in find_headings(text)[0]] == ["Outside"]


@pytest.mark.parametrize(
    ("text", "titles"),
    [
        ("[ref]: /url\n===\n", []),  # a reference definition is not a setext title
        ("[ref]: /url\nTitle\n===\n", ["Title"]),
        ("[ref]:\n/url\n'title'\n# H\n", ["H"]),
        ("- a\n\n  b\n# c\n", ["c"]),
        ("1. a\n   > b\n# c\n", ["c"]),
        ("> - a\nlazy\n---\n", []),
        ("\t# tab indented\n", []),  # a tab is 4 columns: indented code
        (">\t# quote tab\n# x\n", ["x"]),
        ("a | b\n--|--\nrow\n# H\n", ["H"]),
        ("<!-- c\n# hidden\n-->\n# shown\n", ["shown"]),
        ("<pre>\n# hidden\n\n# still\n</pre>\n# shown\n", ["shown"]),
        ("x\x00y\n===\n", ["x\ufffdy"]),  # NUL becomes U+FFFD, as CommonMark says
    ],
)
def test_block_structure_edges(text, titles):
    assert [h.title for h in find_headings(text)[0]] == titles


# -- converter modes: 12 bold ------------------------------------------------------------------
def test_bold_mode_is_off_by_default_and_noop_without_bold_lines(cases_dir):
    text = read_document(_case(cases_dir, "01-") / "input.md")
    assert build_tree(text, "d", BOLD) == build_tree(text, "d")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("## Top\n\n**Sub**\n\ntext\n", [(2, "Top"), (3, "Sub")]),
        ("**Alone**\n", [(1, "Alone")]),
        ("# T\n\n** Spaced **\n\nx\n", [(1, "T"), (2, "Spaced")]),
        ("# T\n\n**a** and **b**\n\nx\n", [(1, "T")]),  # two spans
        ("# T\n\n**Note:** more text\n", [(1, "T")]),  # bold lead-in
        ("# T\n\n**Tight**\nnext line\n", [(1, "T")]),  # no blank line after
        ("# T\ntext\n**Tight**\n\nx\n", [(1, "T")]),  # paragraph continuation
        ("# T\n\n- **In list**\n\nx\n", [(1, "T")]),
        ("# T\n\n> **In quote**\n\nx\n", [(1, "T")]),
        ("# T\n\n```\n**In code**\n```\n", [(1, "T")]),
        ("# T\n\n    **Indented code**\n", [(1, "T")]),
        (
            "# T\n\n**A**\n\n**B**\n\n## U\n\n__C__\n",
            [(1, "T"), (2, "A"), (2, "B"), (2, "U"), (3, "C")],
        ),
    ],
)
def test_bold_variants(text, expected):
    headings, _ = find_headings(text, BOLD)
    assert [(h.level, h.title) for h in headings] == expected
    assert all(h.md_level == 0 for h in headings if h.source == "bold")


# -- 13 relevel ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("titles", "levels"),
    [
        (["3 A", "3.1 B", "3.2.4 C", "4 D"], [1, 2, 3, 1]),
        (["1. A", "1.1. B", "2. C"], [1, 2, 1]),  # trailing dots
        (["Item 7 MD&A", "Item 7A Risk", "Note 14 Leases"], [1, 1, 1]),
        (["Annex 2 Data", "Annex 2.1 Tables", "Appendix A.1 Proofs"], [1, 2, 2]),
        (["Abstract", "1 Intro", "1.1 Background", "References"], [1, 1, 2, 1]),
        (["1 Only one numbered", "Other"], [2, 2]),  # fewer than 2 numbered: unchanged
        (["2023 Review", "2024 Outlook"], [2, 2]),  # years are not section numbers
    ],
)
def test_relevel_variants(titles, levels):
    text = "".join(f"## {t}\n\ntext\n\n" for t in titles)
    headings, _ = find_headings(text, RELEVEL)
    assert [h.level for h in headings] == levels
    assert all(h.md_level == 2 for h in headings)


def test_relevel_needs_one_shared_level():
    text = "# 1 A\n## 1.1 B\n## 2 C\n"
    assert [h.level for h in find_headings(text, RELEVEL)[0]] == [1, 2, 2]


# -- 14 numbered -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 Scope\n\ntext\n\n1.1 Materials\n\nx\n", [(1, "1 Scope"), (2, "1.1 Materials")]),
        ("1. Check the feet\n\n2. Check the rungs\n", []),  # ordered list items
        ("1) Check\n", []),
        ("3 Things are checked yearly.\n", []),  # ends with "."
        ("4 Results:\n", []),
        ("5 one two three four five six seven eight\n", []),  # 9 words
        ("2023 Annual report\n", []),
        ("1.2.3 4.5\n", []),  # no letter after the number
        ("text\n1.1 Materials\n\nx\n", []),  # no blank line before
        ("```\n1.1 In code\n```\n", []),
        ("- 1.1 In list\n", []),
        ("| 1.1 In table | x |\n|---|---|\n", []),
        ("# Doc\n\n2.3.1 Results\n", [(1, "Doc"), (3, "2.3.1 Results")]),
    ],
)
def test_numbered_variants(text, expected):
    headings, _ = find_headings(text, NUMBERED)
    assert [(h.level, h.title) for h in headings] == expected


# -- HTML headings -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<h2>Results</h2>\n\ntext\n", [(2, "Results", 1)]),
        ('<H3 class="x">A &amp; <em>B</em></H3>\n', [(3, "A & B", 1)]),
        ("# Doc\n\n<h2>Part</h2>\n\n<p>x</p>\n", [(1, "Doc", 1), (2, "Part", 3)]),
        ("```\n<h2>code</h2>\n```\n", []),
        ("<h2>unclosed\n", []),
        ("<h2></h2>\n", []),
        ("text <h2>inline</h2>\n", []),
    ],
)
def test_html_variants(text, expected):
    headings, _ = find_headings(text, HTML)
    assert [(h.level, h.title, h.line) for h in headings] == expected
    assert find_headings(text)[0] == [h for h in headings if h.source != "html"]


def test_modes_combine():
    text = "## 1 A\n\n**Bold**\n\n## 1.1 B\n\n<h2>2 C</h2>\n\n2.1 D\n"
    config = TreeConfig(bold_headings=True, numbered_headings=True, html_headings=True,
                        relevel_numbered=True)
    headings, _ = find_headings(text, config)
    assert [(h.title, h.level, h.source) for h in headings] == [
        ("1 A", 1, "atx"), ("Bold", 2, "bold"), ("1.1 B", 2, "atx"), ("2 C", 1, "html"),
        ("2.1 D", 2, "numbered"),
    ]


# -- 15 tables ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "table",
    [
        "| # Part | Qty |\n|---|---|\n| ## Bolt | 4 |\n",
        "Part | # Qty\n--- | ---\nBolt | ## 4\n",  # no outer pipes
        "| # Part |\n| :-: |\n| # Bolt |\n",
    ],
)
def test_table_cells_are_not_headings(table):
    text = "# Top\n\n" + table + "\n## After\n"
    assert [h.title for h in find_headings(text)[0]] == ["Top", "After"]


def test_unpiped_row_starting_with_hash_is_a_heading():
    # GFM: a body row is not a table row when it starts a block; "## Bolt | 4" is a heading.
    text = "# Part | Qty\n--- | ---\n## Bolt | 4\n"
    assert [(h.title, h.line) for h in find_headings(text)[0]] == [("Bolt | 4", 3)]


def test_table_ends_at_a_heading():
    text = "# Top\n\n| a | b |\n|---|---|\n| 1 | 2 |\n# Next\n"
    assert [(h.title, h.line) for h in find_headings(text)[0]] == [("Top", 1), ("Next", 6)]


# -- 30 HTML comments and <pre> ------------------------------------------------------------------
def test_case_30_pre_block_stays_whole_in_its_section(cases_dir):
    text = read_document(_case(cases_dir, "30-") / "input_html_mode.md")
    tree = build_tree(text, "input_html_mode", HTML)
    maintenance = next(n for n in tree.nodes if n.title == "Maintenance")
    section = slice_lines(split_lines(text), maintenance.start_line, maintenance.end_line)
    assert "<pre>\n<h2>Example page title</h2>\n</pre>" in section
    titles = [n.title for n in tree.nodes]
    assert "Warranty (withdrawn)" not in titles and "Example page title" not in titles


@pytest.mark.parametrize(
    ("text", "titles"),
    [
        ("<!--\n<h2>Hidden</h2>\n-->\n\n<h2>Shown</h2>\n", ["Shown"]),
        ("<!-- <h2>One line</h2> -->\n\n<h2>Shown</h2>\n", ["Shown"]),
        ("<pre>\n<h2>Literal</h2>\n\n<h2>still literal</h2>\n</pre>\n<h2>Shown</h2>\n", ["Shown"]),
        ("<script>\n<h2>in script</h2>\n</script>\n", []),
        ("<style>\n<h2>in style</h2>\n</style>\n", []),
        ("<textarea>\n<h2>in textarea</h2>\n</textarea>\n", []),
        ("<?php\n<h2>in a processing instruction</h2>\n?>\n", []),
        ("<![CDATA[\n<h2>in cdata</h2>\n]]>\n", []),
        # a comment or <pre> opened inside an ordinary HTML block hides the lines it spans
        ("<div>\n<!--\n<h2>Hidden</h2>\n-->\n<h2>Shown</h2>\n</div>\n", ["Shown"]),
        ("<div>\n<pre>\n<h2>Literal</h2>\n</pre>\n<h2>Shown</h2>\n</div>\n", ["Shown"]),
        ("<div>\n<h2>Real</h2>\n</div>\n", ["Real"]),
        ("```html\n<h2>code</h2>\n```\n", []),
        ("    <h2>indented code</h2>\n", []),
        ("- <h2>in a list</h2>\n", []),
        ("> <h2>in a quote</h2>\n", []),
    ],
)
def test_html_headings_only_from_ordinary_html_blocks(text, titles):
    assert [h.title for h in find_headings(text, HTML)[0]] == titles


# -- 35 display math ---------------------------------------------------------------------------
def test_case_35_formulas_stay_in_their_sections(cases_dir):
    text = read_document(_case(cases_dir, "35-") / "input.md")
    tree = build_tree(text, "input")
    assert not any(n.title.startswith("$$") for n in tree.nodes)
    model, training = tree.nodes[0], tree.nodes[1]
    assert model.body_start_line <= 5 and 9 <= model.body_end_line
    assert training.body_start_line <= 17 and 21 <= training.body_end_line


@pytest.mark.parametrize(
    ("math", "opaque"),
    [
        ("$$\nL\n=\nR\n$$", True),
        ("$$\nL\n-\nR\n$$", True),
        ("$$ L(\\theta)\n=\nR $$", True),  # content on the delimiter lines
        ("\\[\nL\n=\nR\n\\]", True),
        ("\\[\nL\n---\nR\n\\]", True),
        ("\\begin{equation}\nL\n=\nR\n\\end{equation}", True),
        ("\\begin{align*}\na &= b\n-\nc\n\\end{align*}", True),
        ("   $$\nL\n=\n$$", True),  # up to 3 spaces of indent
        ("$$\nL\n=\nR", False),  # unclosed: CommonMark applies (a setext heading)
        ("$$\nL\n\nM\n=\n$$", False),  # a blank line: not display math (LaTeX refuses it)
    ],
)
def test_display_math_is_opaque(math, opaque):
    text = f"# Top\n\nBefore.\n\n{math}\n\nAfter.\n\n## Next\n"
    titles = [h.title for h in find_headings(text)[0]]
    if opaque:
        assert titles == ["Top", "Next"]
    else:
        assert len(titles) == 3 and titles[0] == "Top" and titles[-1] == "Next"


@pytest.mark.parametrize("opener", ["$$", "\\[", "\\begin{equation}"])
def test_display_math_ends_a_paragraph(opener):
    closer = {"$$": "$$", "\\[": "\\]", "\\begin{equation}": "\\end{equation}"}[opener]
    text = f"# Top\nThe loss is\n{opener}\nL\n=\nR\n{closer}\nwhere R is fixed.\n## Next\n"
    assert [h.title for h in find_headings(text)[0]] == ["Top", "Next"]


@pytest.mark.parametrize(
    "text",
    [
        "```\n$$\n```\n# Real\n\nx\n\n```\n$$\n```\n",  # dollar lines inside code do not pair up
        "Costs $$5 and $$6.\n\n# Real\n",  # dollars inside a line
        "$$ x $$\n\n# Real\n",  # a one-line equation
    ],
)
def test_dollar_signs_elsewhere_do_not_hide_headings(text):
    assert [h.title for h in find_headings(text)[0]] == ["Real"]


def test_display_math_inside_a_list_item():
    text = "- item\n\n  $$\n  L\n  =\n  $$\n\n# Real\n"
    assert [h.title for h in find_headings(text)[0]] == ["Real"]


# -- 10-K structure: drop_row_headings, relevel_filing -------------------------------------------
ROWS = TreeConfig(converter_output="on", title_lines=False, flatten_levels=False)
FILING = TreeConfig(converter_output="on", drop_row_headings=False, title_lines=False, flatten_levels=False,
                    relevel_filing=True)

FLAT_10K = """\
### FORM 10-K

### Table of Contents

### PART I

### ITEM 1. Business

### General

text

### ITEM 1A. Risk Factors

### PART II

### ITEM 7. MANAGEMENT'S DISCUSSION

###### Results of Operations

####### not a heading

###### Fiscal 2018 Compared to Fiscal 2017

### ITEM 8. Financial Statements

#### Consolidated Balance Sheets

### Notes to Consolidated Financial Statements

###### Basis of Consolidation

###### NOTE 14 — Debt

###### Credit Facilities

### PART III

### Item 10. Directors
"""


def _paths(text: str, config: TreeConfig) -> list[tuple[str, ...]]:
    tree = build_tree(text, "doc", config)
    return [tree.title_path(n.node_id) for n in tree.nodes if n.kind == "heading"]


def test_relevel_filing_nests_items_under_parts_and_notes_under_the_notes_heading():
    tree = build_tree(FLAT_10K, "doc", FILING)
    levels = {n.title: n.level for n in tree.nodes}
    assert [levels[t] for t in ("PART I", "ITEM 1. Business", "ITEM 7. MANAGEMENT'S DISCUSSION", "PART III",
                                "Item 10. Directors")] == [1, 2, 2, 1, 2]
    assert levels["Notes to Consolidated Financial Statements"] == 3
    assert levels["NOTE 14 — Debt"] == 4
    paths = _paths(FLAT_10K, FILING)
    assert ("PART II", "ITEM 8. Financial Statements", "Notes to Consolidated Financial Statements",
            "NOTE 14 — Debt", "Credit Facilities") in paths
    assert ("PART I", "ITEM 1. Business", "General") in paths
    assert ("PART II", "ITEM 7. MANAGEMENT'S DISCUSSION", "Fiscal 2018 Compared to Fiscal 2017") in paths
    # before the first label: relative levels kept, from 1
    assert (levels["FORM 10-K"], levels["Table of Contents"]) == (1, 1)
    # written levels do not change
    assert {n.md_level for n in tree.nodes} == {3, 4, 6}


def test_relevel_filing_is_a_converter_rule_on_by_default_and_needs_a_filing():
    # hand-written markdown keeps its levels: the converter rules do not run on it
    assert [lvl for *_, lvl in [(n.title, n.level) for n in build_tree(FLAT_10K, "doc").nodes]] == [
        3, 3, 3, 3, 3, 3, 3, 3, 6, 6, 3, 4, 3, 6, 6, 6, 3, 3]
    # converter output is nested from its labels by default
    levels = {n.title: n.level for n in build_tree(FLAT_10K, "doc", TreeConfig(converter_output="on")).nodes}
    assert (levels["PART II"], levels["ITEM 7. MANAGEMENT'S DISCUSSION"], levels["NOTE 14 — Debt"]) == (1, 2, 4)
    text = "## Intro\n\n## Item 7 of the list\n\n## Methods\n"  # one label: not a filing
    assert find_headings(text, FILING)[0] == find_headings(text)[0]


@pytest.mark.parametrize(
    ("titles", "levels"),
    [
        # 10-Q without item headings: notes are roots and nest what follows
        (["## Overview", "##### Note 1 – Basis of presentation", "###### Loans", "##### Note 2 – Leases"],
         [1, 1, 2, 1]),
        # numbered notes after a financial statement title
        (["### PART IV", "### Item 15. Exhibits", "### Consolidated Balance Sheets", "### 2. Investments",
          "#### Fair value", "### 3. Debt"], [1, 2, 3, 3, 4, 3]),
        # "N." headings elsewhere are not notes
        (["### PART I", "### 1. Overview", "### 2. Strategy", "### Item 1A. Risk"], [1, 2, 2, 2]),
        # a contents line ending in a page number is no label
        (["### Part II – Other information Item 1. Legal Proceedings. 191", "### PART I", "### Item 1. Business"],
         [1, 1, 2]),
    ],
)
def test_relevel_filing_variants(titles, levels):
    text = "".join(f"{t}\n\ntext\n\n" for t in titles)
    assert [h.level for h in find_headings(text, FILING)[0]] == levels


def test_relevel_filing_nests_a_title_line_below_the_written_heading_before_it():
    """A plain line made a heading ("Interest Expense" among ###### subsections of MD&A) is no
    parent of the written headings after it (Verizon's MD&A: it swallowed 400 lines)."""
    text = ("### PART II\n\n### ITEM 7. MANAGEMENT'S DISCUSSION\n\n##### Consolidated Results\n\n"
            "###### Operating Expenses\n\nCosts rose.\n\nInterest Expense\n\nInterest rose in 2022.\n\n"
            "###### Segment Results\n\nSegments grew.\n")
    config = dataclasses.replace(FILING, title_lines=True)
    paths = _paths(text, config)
    item = ("PART II", "ITEM 7. MANAGEMENT'S DISCUSSION", "Consolidated Results")
    assert (*item, "Operating Expenses", "Interest Expense") in paths
    assert (*item, "Segment Results") in paths


def test_relevel_filing_caps_levels_at_6():
    text = "# PART I\n\n# Item 1. A\n\n# Notes to Financial Statements\n\n# Note 1 X\n\n## a\n\n### b\n\n#### c\n"
    assert [h.level for h in find_headings(text, FILING)[0]] == [1, 2, 3, 4, 5, 6, 6]


def test_drop_row_headings_merges_rows_into_the_section_before():
    text = ("# Results\n\nIntro.\n\n###### 4,867,457 $ 133.54\n\nrow text\n\n"
            "###### RETURN ON INVESTED CAPITAL 48.8 % 21.5 %\n\n## Outlook\n\n###### 2021 FORM 10-K 30\n\n"
            "###### PAGE\n\nmore\n")
    tree = build_tree(text, "doc", ROWS)
    assert [(n.title, n.start_line, n.end_line) for n in tree.nodes] == [
        ("Results", 1, 17), ("Outlook", 11, 17)]
    assert len(build_tree(text, "doc", TreeConfig(converter_output="off")).nodes) == 6
    # four row-like headings: converter output for the default (auto), rows dropped, levels flattened
    assert [(n.title, n.level) for n in build_tree(text, "doc").nodes] == [("Results", 2), ("Outlook", 2)]


def test_drop_row_headings_keeps_section_titles_and_filters_converter_modes():
    text = "# Fiscal 2018 Compared to Fiscal 2017\n\n**$ 1,234 $ 5,678**\n\n**Liquidity**\n\nx\n"
    config = TreeConfig(converter_output="on", title_lines=False, flatten_levels=False, bold_headings=True)
    assert [h.title for h in find_headings(text, config)[0]] == ["Fiscal 2018 Compared to Fiscal 2017", "Liquidity"]


#: A 10-K as pymupdf4llm writes one: every heading at one level, wrapped in emphasis, items
#: with runs of spaces after their number.
EMPHASIS_10K = """\
## **PART I**

## **ITEM 1.    BUSINESS**

We sell water.

## **_Customers_**

Many.

## **PART II**

## **ITEM 8.    FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA**

## **Consolidated Balance Sheets**

| Assets | 1,000 |
|---|---|
| Cash | 500 |

## **Notes to Consolidated Financial Statements**

## **Note 1: Organization and Operation**

We operate.

## **_Basis of Presentation_**

GAAP.

## **Note 2: Debt**

We owe.

## **ITEM 9A.    CONTROLS AND PROCEDURES**

They work.
"""


def test_filing_labels_give_levels_and_the_rest_is_flattened_below_them():
    """tree.relevel_filing with tree.flatten_levels: the structure holds on another converter's markdown."""
    both = TreeConfig(converter_output="on", relevel_filing=True)
    paths = _paths(EMPHASIS_10K, both)
    assert ("**PART I**", "**ITEM 1.    BUSINESS**", "**_Customers_**") in paths
    assert ("**PART II**", "**ITEM 8.    FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA**",
            "**Notes to Consolidated Financial Statements**", "**Note 1: Organization and Operation**",
            "**_Basis of Presentation_**") in paths
    assert ("**PART II**", "**ITEM 9A.    CONTROLS AND PROCEDURES**") in paths
    balance = next(p for p in paths if p[-1] == "**Consolidated Balance Sheets**")
    assert balance[:2] == ("**PART II**", "**ITEM 8.    FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA**")
    # flattening alone reads the items' numbers through the emphasis: items are top-level
    # sections, every unnumbered heading one below
    alone = TreeConfig(converter_output="on", relevel_filing=False)
    flat = {n.title: n.level for n in build_tree(EMPHASIS_10K, "doc", alone).nodes}
    assert flat["**ITEM 1.    BUSINESS**"] == 1 and flat["**_Customers_**"] == 2


# A 10-K whose printed contents has an "Item" column: the entries it places read "1B. ..." and
# "8 Financial Statements ...", beside entries whose body heading says "Item 2." (Johnson &
# Johnson's 10-K), and whose notes heading follows the company's name (Costco's).
CONTENTS_ITEM_COLUMN = """\
<!-- page 1 -->

# PART I {.outline}

## Item 1. Business {.outline}

We make things.

## 1B. Unresolved Staff Comments {.outline}

None.

## Item 2. Properties {.outline}

Plants.

# PART II {.outline}

## Item 7. Management's Discussion {.outline}

Sales grew.

## 8 Financial Statements and Supplementary Data {.outline}

The statements follow.

##### ACME CORPORATION NOTES TO CONSOLIDATED FINANCIAL STATEMENTS (amounts in millions)

##### 1. Summary of Significant Accounting Policies

Basis of presentation.

##### 2. Cash and Cash Equivalents

Cash is cash.

## Item 9A. Controls and Procedures {.outline}

Effective.
"""


def test_a_contents_item_column_and_a_named_notes_heading_still_nest_the_notes():
    tree = build_tree(CONTENTS_ITEM_COLUMN, "ACME_2022_10K")
    paths = {n.title: tree.title_path(n.node_id) for n in tree.nodes}
    item8 = "8 Financial Statements and Supplementary Data"  # shown as written
    notes = "ACME CORPORATION NOTES TO CONSOLIDATED FINANCIAL STATEMENTS (amounts in millions)"
    assert paths["2. Cash and Cash Equivalents"] == ("PART II", item8, notes, "2. Cash and Cash Equivalents")
    assert paths["1. Summary of Significant Accounting Policies"][:3] == ("PART II", item8, notes)
    assert paths["1B. Unresolved Staff Comments"] == ("PART I", "1B. Unresolved Staff Comments")
    assert paths["Item 9A. Controls and Procedures"] == ("PART II", "Item 9A. Controls and Procedures")


def test_a_bare_number_is_an_item_only_between_the_items_around_it():
    from proxypointer.tree.build import find_headings
    from proxypointer.tree.headings import with_item_words

    headings, _ = find_headings(CONTENTS_ITEM_COLUMN)
    named = {h.title for h in with_item_words(headings)}
    assert {"Item 1B. Unresolved Staff Comments", "Item 8 Financial Statements and Supplementary Data"} <= named
    assert "1. Summary of Significant Accounting Policies" in named  # not an outline heading: never an item
    # numbered notes listed in the contents after Item 8 are no items: 1 < 8
    listed = CONTENTS_ITEM_COLUMN.replace("##### 1. Summary of Significant Accounting Policies",
                                          "### 1. Summary of Significant Accounting Policies {.outline}")
    named = {h.title for h in with_item_words(find_headings(listed)[0])}
    assert "1. Summary of Significant Accounting Policies" in named
    # one labelled item is no filing's contents: nothing is renamed
    alone = "# Item 1. Business {.outline}\n\ntext\n\n# 8 Financial Statements {.outline}\n\ntext\n"
    assert {h.title for h in with_item_words(find_headings(alone)[0])} == {"Item 1. Business", "8 Financial Statements"}


# -- appended exhibits ---------------------------------------------------------------------------
FILING_WITH_EXHIBITS = """\
### PART IV

### Item 15. Exhibits

text

### SIGNATURES

text

### ARTICLE I. DEFINITIONS

text

#### Section 11.14. Equitable Remedies

text

#### Exhibit 10.36

text

#### ARTICLE 2 SEVERANCE PAY

text

#### Exhibit 13.1 Management's Discussion and Analysis of Financial Condition and Results of Operations

text

#### Consolidated Statements of Operations

| Revenue | 10 |
|---|---|

#### Notes to Consolidated Financial Statements

text

#### 1. Significant Accounting Policies

text

#### EXHIBIT 31.1

text
"""


def test_an_appended_exhibit_opens_a_top_level_section_of_a_filing():
    """An exhibit's heading closes the agreement before it: the annual report a 10-K appends as
    Exhibit 13 stood under an earlier agreement's "Section 11.14. Equitable Remedies" (CVS 2018)."""
    paths = _paths(FILING_WITH_EXHIBITS, FILING)
    annual = "Exhibit 13.1 Management's Discussion and Analysis of Financial Condition and Results of Operations"
    assert ("Exhibit 10.36",) in paths and ("EXHIBIT 31.1",) in paths
    assert ("Exhibit 10.36", "ARTICLE 2 SEVERANCE PAY") in paths
    assert (annual, "Consolidated Statements of Operations") in paths
    assert (annual, "Notes to Consolidated Financial Statements", "1. Significant Accounting Policies") in paths
    assert not any("Section 11.14. Equitable Remedies" in p[:-1] and "Exhibit" in p[-1] for p in paths)


def test_an_exhibit_label_before_any_item_is_no_section_of_its_own():
    """Before the filing's first item (a cover or a contents page) an exhibit label is no exhibit."""
    text = "### Exhibit 99.1\n\ntext\n\n### PART I\n\n### Item 1. Business\n\ntext\n\n### Item 2. Properties\n\ntext\n"
    levels = [h.level for h in find_headings(text, FILING)[0]]
    assert levels == [1, 1, 2, 2]


def test_an_exhibit_climbs_out_of_the_outline_of_the_agreement_before_it():
    """CVS's 2018 10-K: a merger agreement's printed contents placed its articles and sections as
    outline headings; the exhibits after it (the annual report of Exhibit 13.1 among them) stood
    under its last "Section 11.14. Equitable Remedies"."""
    from proxypointer.tree.headings import outline_levels
    from proxypointer.tree.markdown import Heading

    text = [(3, "PART IV"), (3, "Item 15. Exhibits"), (3, "Item 16. Form 10-K Summary")]
    headings = [Heading(10 * i + 1, 10 * i + 1, lvl, title, lvl, "markdown") for i, (lvl, title) in enumerate(text)]
    headings += [Heading(41, 41, 1, "ARTICLE XI.", 1, "outline"),
                 Heading(51, 51, 2, "Section 11.14. Equitable Remedies", 2, "outline"),
                 Heading(61, 61, 4, "Exhibit 13.1 Annual Report", 4, "markdown"),
                 Heading(71, 71, 4, "Consolidated Statements of Operations", 4, "markdown"),
                 Heading(81, 81, 4, "EXHIBIT 31.1", 4, "markdown")]
    levels = {h.title: h.level for h in outline_levels(headings)}
    assert levels["PART IV"] == levels["Exhibit 13.1 Annual Report"] == levels["EXHIBIT 31.1"] == 1
    assert levels["Consolidated Statements of Operations"] > 1

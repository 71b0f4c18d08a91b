"""Page markers -> page of every line (pages.py)."""

from __future__ import annotations

import pytest

from proxypointer.config import PAGE_STYLES, PagesConfig, config_from_dict
from proxypointer.errors import ConfigError
from proxypointer.tree.pages import (
    BUILTIN_STYLES,
    blank_markers,
    custom_style,
    detect_style,
    page_map,
    page_map_for_config,
    stored_page_map,
)


def lines(text: str) -> list[str]:
    out = text.split("\n")
    if text.endswith("\n"):
        out.pop()
    return out


def test_config_style_names_equal_builtin_styles():
    assert set(PAGE_STYLES) == set(BUILTIN_STYLES)


# --- each tool's own separator, as its source writes it -----------------------------------

# opendataloader-pdf with markdown_page_separator="<!-- page %page-number% -->": start, 1-based.
ODL = """<!-- page 1 -->

# Overview

Acme makes anvils.

<!-- page 2 -->

More text.
"""

# marker-pdf --paginate_output: "\n\n{N}" + 48 dashes + "\n\n" before each page, N 0-based.
MARKER = "\n\n{0}" + "-" * 48 + "\n\n# Overview\n\nAcme makes anvils.\n\n{1}" + "-" * 48 + "\n\nMore text.\n"

# pymupdf4llm page_separators=True: "\n\n--- end of page=N ---\n\n" after each page, N 0-based.
PYMUPDF = "# Overview\n\nAcme makes anvils.\n\n--- end of page=0 ---\n\nMore text.\n\n--- end of page=1 ---\n\n"

# pymupdf4llm layout mode: "--- end of page.page_number=N ---" after each page, N 1-based.
PYMUPDF_LAYOUT = (
    "# Overview\n\nAcme makes anvils.\n\n--- end of page.page_number=1 ---\n\n"
    "More text.\n\n--- end of page.page_number=2 ---\n\n"
)

# docling export_to_markdown(page_break_placeholder="<!-- page break -->"): between pages.
DOCLING = "# Overview\n\nAcme makes anvils.\n\n<!-- page break -->\n\nMore text.\n"

# LlamaParse default page_separator "\n---\n": between pages, no number.
LLAMAPARSE = "# Overview\n\nAcme makes anvils.\n\n---\n\nMore text.\n"


@pytest.mark.parametrize(
    ("text", "style"),
    [
        (ODL, "opendataloader"),
        (MARKER, "marker"),
        (PYMUPDF, "pymupdf4llm"),
        (PYMUPDF_LAYOUT, "pymupdf4llm-layout"),
        (DOCLING, "docling"),
    ],
)
def test_every_auto_style_is_recognised_and_pages_are_right(text, style):
    ls = lines(text)
    assert detect_style(ls).name == style
    pm = page_map(ls)
    assert pm.style == style
    assert pm.page_count == 2
    heading = ls.index("# Overview") + 1
    body = ls.index("Acme makes anvils.") + 1
    more = ls.index("More text.") + 1
    assert (pm.page_of(heading), pm.page_of(body), pm.page_of(more)) == (1, 1, 2)
    assert all(ls[i - 1].strip() not in ("# Overview", "Acme makes anvils.", "More text.") for i in pm.marker_lines)
    assert len(pm.marker_lines) == {"docling": 1, "pymupdf4llm": 2, "pymupdf4llm-layout": 2}.get(style, 2)
    # a whole-document range spans both pages; a one-page range one
    assert pm.page_range(1, len(ls)) == (1, 2)
    assert pm.page_range(heading, body) == (1, 1)


def test_llamaparse_rule_is_only_a_separator_when_chosen():
    ls = lines(LLAMAPARSE)
    assert detect_style(ls) is None
    auto = page_map(ls)
    assert not auto.has_pages and auto.page_range(1, len(ls)) is None
    chosen = page_map(ls, BUILTIN_STYLES["llamaparse"])
    assert chosen.page_of(ls.index("Acme makes anvils.") + 1) == 1
    assert chosen.page_of(ls.index("More text.") + 1) == 2
    assert chosen.marker_lines == {ls.index("---") + 1}


def test_horizontal_rules_in_a_normal_document_are_not_pages():
    text = "# Title\n\nIntro.\n\n---\n\n## Part\n\nBody.\n\n***\n\nEnd.\n"
    pm = page_map(lines(text))
    assert pm.style == "" and not pm.marker_lines and set(pm.line_pages) == {0}
    # and a config that names the style turns them on
    pm = page_map_for_config(lines(text), PagesConfig(style="llamaparse"))
    assert pm.page_count == 2


def test_markers_inside_code_blocks_are_content_for_auto_detection():
    text = "# How to cite pages\n\n```\n<!-- page 12 -->\n```\n\n    <!-- page 13 -->\n\nNo real markers.\n"
    assert detect_style(lines(text)) is None
    assert not page_map(lines(text)).has_pages


def test_numbers_that_do_not_increase_are_not_taken_for_markers():
    text = "<!-- page 3 -->\n\nA\n\n<!-- page 1 -->\n\nB\n"
    assert detect_style(lines(text)) is None


def test_start_style_lines_before_the_first_marker_are_page_zero():
    text = "front matter\n\n<!-- page 1 -->\n\nbody\n"
    pm = page_map(lines(text))
    assert pm.line_pages == (0, 0, 1, 1, 1)
    assert pm.page_range(1, 2) is None
    assert pm.page_range(1, 5) == (1, 1)


def test_end_style_marker_and_the_lines_before_it_are_on_the_page_it_ends():
    ls = lines(PYMUPDF)
    pm = page_map(ls)
    first_end = ls.index("--- end of page=0 ---") + 1
    assert pm.page_of(first_end) == 1
    assert pm.page_of(first_end + 1) == 2
    # only blank lines after the last page's end marker: they stay on the last page
    assert pm.page_of(len(ls)) == 2 and pm.page_count == 2


def test_unnumbered_separators_are_counted():
    text = "one\n<!-- page break -->\ntwo\n<!-- page-break -->\nthree\n<!-- PAGE_BREAK -->\nfour\n"
    pm = page_map(lines(text))
    assert pm.style == "docling"
    assert [pm.page_of(i) for i in (1, 3, 5, 7)] == [1, 2, 3, 4]
    assert pm.page_count == 4


def test_page_range_ignores_marker_and_blank_lines_of_the_next_page():
    text = (
        "<!-- page 3 -->\n\n## Item 7\n\nMD&A text.\n\n<!-- page 4 -->\n\nmore MD&A.\n\n<!-- page 5 -->\n\n## Item 8\n"
    )
    ls = lines(text)
    pm = page_map(ls)
    item8 = ls.index("## Item 8") + 1
    # the section Item 7 runs to the line before Item 8, through the page-5 marker
    assert pm.page_range(ls.index("## Item 7") + 1, item8 - 1) == (3, 4)
    # heading at the top of a page: its page is the page the marker opens
    assert pm.page_of(item8) == 5
    assert pm.page_range(item8, item8) == (5, 5)


def test_section_starting_mid_page_and_spanning_pages():
    text = (
        "<!-- page 1 -->\n\nintro text\n\n## Risks\n\nrisk one\n\n<!-- page 2 -->\n\nrisk two\n\n"
        "<!-- page 3 -->\n\nrisk three\n"
    )
    ls = lines(text)
    pm = page_map(ls)
    start = ls.index("## Risks") + 1
    assert pm.page_of(start) == 1
    assert pm.page_range(start, len(ls)) == (1, 3)


def test_page_map_rejects_lines_outside_the_text():
    pm = page_map(lines(ODL))
    with pytest.raises(IndexError):
        pm.page_of(0)
    with pytest.raises(IndexError):
        pm.page_range(3, 2)
    with pytest.raises(IndexError):
        pm.page_range(1, 999)


# --- custom markers (config key pages.marker) ---------------------------------------------


def test_custom_format_with_opendataloader_placeholder():
    style = custom_style("[[PAGE %page-number%]]")
    text = "[[PAGE 1]]\nalpha\n[[PAGE 2]]\nbeta\n"
    pm = page_map(lines(text), style)
    assert pm.line_pages == (1, 1, 2, 2) and pm.marker_lines == {1, 3}


def test_custom_llamaparse_template_numbers_the_page_that_follows():
    # LlamaParse page_separator="\n=== {page_number} ===\n": "replaced by the next page number"
    style = custom_style("=== {page_number} ===", position="between")
    text = "first page\n=== 2 ===\nsecond page\n=== 3 ===\nthird page\n"
    pm = page_map(lines(text), style)
    assert pm.line_pages == (1, 1, 2, 2, 3)


def test_custom_regex_with_named_or_first_group_and_zero_base():
    pm = page_map(lines("Page 0 of 9\nx\nPage 1 of 9\ny\n"), custom_style(r"Page (\d+) of \d+", number_base=0))
    assert pm.line_pages == (1, 1, 2, 2)
    pm = page_map(lines("x\n# end (?P<page>)\n"), custom_style(r"# end (?P<page>\d*)", position="end"))
    assert pm.marker_lines == frozenset()  # an empty number is no marker
    pm = page_map(lines("a\n<<10>>\nb\n"), custom_style(r"<<(?P<page>\d+)>>", position="end"))
    assert pm.line_pages == (10, 10, 11)


def test_custom_regex_without_group_counts_pages():
    pm = page_map(lines("a\n\f\nb\n\f\nc\n"), custom_style(r"\f", position="between"))
    assert pm.line_pages == (1, 1, 2, 2, 3)


def test_config_marker_implies_custom_and_is_validated(tmp_path):
    cfg = config_from_dict({"pages": {"marker": "[[PAGE %page-number%]]"}})
    pm = page_map_for_config(["[[PAGE 4]]", "x"], cfg.pages)
    assert pm.style == "custom" and pm.line_pages == (4, 4)
    assert not page_map_for_config(lines(ODL), PagesConfig(style="none")).has_pages
    with pytest.raises(ConfigError, match="pages.marker: invalid regular expression"):
        config_from_dict({"pages": {"marker": "page (\\d+"}})
    with pytest.raises(ConfigError, match="pages.style"):
        config_from_dict({"pages": {"style": "pdfplumber"}})
    with pytest.raises(ConfigError, match="no marker"):
        config_from_dict({"pages": {"style": "custom"}})
    with pytest.raises(ConfigError, match="pages.marker_position"):
        config_from_dict({"pages": {"marker": "x", "marker_position": "middle"}})
    with pytest.raises(ConfigError, match="one line"):
        custom_style("a\nb")


def test_explicit_style_is_trusted_even_in_code_blocks():
    text = "```\n<!-- page 1 -->\n```\nx\n"
    assert not page_map(lines(text)).has_pages
    assert page_map(lines(text), BUILTIN_STYLES["opendataloader"]).page_of(4) == 1


def test_blanked_markers_keep_line_numbers_and_a_stored_map_gives_the_same_pages():
    lines = ["<!-- page 1 -->", "", "# A", "text a", "", "<!-- page 2 -->", "", "more a", "<!-- page 3 -->", "# B", "b"]
    pm = page_map(lines)
    blanked = blank_markers(lines, pm)
    assert len(blanked) == len(lines) and [blanked[i - 1] for i in sorted(pm.marker_lines)] == ["", "", ""]
    assert [a for a, b in zip(lines, blanked, strict=True) if a != b] == [lines[i - 1] for i in sorted(pm.marker_lines)]
    stored = stored_page_map(pm.line_pages, blanked)
    assert stored.has_pages and not stored.marker_lines
    for a in range(1, len(lines) + 1):
        for b in range(a, len(lines) + 1):
            if any(blanked[a - 1 : b]):  # a range with content (every section and window has some)
                assert stored.page_range(a, b) == pm.page_range(a, b), (a, b)
    assert stored.pages(3, 8) == (1, 2) and stored.pages(10, 11) == (3, 3)
    no_pages = stored_page_map([0, 0], ["# T", "x"])
    assert not no_pages.has_pages and no_pages.pages(1, 2) == (0, 0)
    with pytest.raises(ValueError, match="3 line pages for 2 lines"):
        stored_page_map([1, 1, 1], ["a", "b"])


def test_llamaparse_separator_under_a_line_is_no_setext_heading_once_blanked():
    from proxypointer.tree.build import build_tree

    lines = ["# Intro", "", "first page text", "---", "second page text", "---", "# Next", "third"]
    pm = page_map(lines, BUILTIN_STYLES["llamaparse"])
    assert [n.title for n in build_tree("\n".join(lines) + "\n", "d").nodes] != ["Intro", "Next"]  # the trap
    tree = build_tree("\n".join(blank_markers(lines, pm)) + "\n", "d")
    assert [n.title for n in tree.nodes] == ["Intro", "Next"]
    assert pm.pages(1, 5) == (1, 2) and pm.pages(7, 8) == (3, 3)

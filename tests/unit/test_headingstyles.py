"""Heading levels from type: styles read from the converter's JSON, ranked, written, nested by the tree."""

from __future__ import annotations

from proxypointer.config import TreeConfig
from proxypointer.lines import split_lines
from proxypointer.tree.build import build_tree
from proxypointer.tree.headingstyles import (
    HeadingStyle,
    StyledHeading,
    apply_heading_styles,
    font_style,
    odl_headings,
    style_ranks,
)

ON = TreeConfig(converter_output="on")
SECTION = HeadingStyle(10.0, True, True)  # Verizon: a section in 10 pt bold italic
SUB = HeadingStyle(10.0, True, False)  # its subsections in 10 pt bold
SUBSUB = HeadingStyle(9.0, True, False)  # theirs in 9 pt bold


def test_font_style_reads_weight_and_slant_from_the_font_name_whatever_the_family():
    assert font_style("TimesNewRoman,BoldItalic", 10.0) == HeadingStyle(10.0, True, True)
    assert font_style("TimesNewRoman-Bold", 9.96) == HeadingStyle(10.0, True, False)  # sizes in 0.5 pt steps
    assert font_style("HelveticaNeueLTStd-BdCn", 9.86) == HeadingStyle(10.0, True, False)
    assert font_style("Arial-ItalicMT", 8.0) == HeadingStyle(8.0, False, True)
    assert font_style("AmplitudeTF-Regular", 12.0) == HeadingStyle(12.0, False, False)
    # two embedded copies of one face are one style
    assert font_style("TimesNewRoman,Bold", 10.0) == font_style("ABCDEF+TimesNewRomanPS-BoldMT", 10.0)
    # a family whose name starts with a weight word is not bold; its style part decides
    assert not font_style("Blackstone-Regular", 10.0).bold
    assert not font_style("/QWERTY+Blackstone", 10.0).bold  # pypdf's name, subset tag and all
    assert not font_style("HeavyDataSans,Italic", 10.0).bold
    assert font_style("Blackstone-Bold", 10.0).bold and font_style("ArialBlack", 10.0).bold
    assert font_style("/Frutiger-Black", 10.0).bold


def test_larger_type_ranks_first_then_the_style_with_fewer_headings():
    big = HeadingStyle(16.0, True, False)
    # the subsections' style is seen first and is the more common one: it still ranks below
    seq = [big, SUB, SECTION, SUB, SUB, SUBSUB, SECTION, SUB, SUBSUB, SUBSUB]
    assert style_ranks(seq) == {big: 1, SECTION: 2, SUB: 3, SUBSUB: 4}
    # equal counts at one size: the style seen first ranks first
    assert style_ranks([SUB, SECTION, SECTION, SUB]) == {SUB: 1, SECTION: 2}
    assert style_ranks([]) == {}


def test_odl_headings_walks_nested_elements_and_skips_what_is_not_a_usable_heading():
    data = {"kids": [
        {"type": "heading", "page number": 4, "font": "TimesNewRoman,BoldItalic", "font size": 10.0,
         "content": "General"},
        {"type": "paragraph", "page number": 4, "font": "TimesNewRoman", "font size": 9.0, "content": "Text."},
        {"type": "list", "page number": 4, "kids": [
            {"type": "heading", "page number": 5, "font": "TimesNewRoman,Bold", "font size": 9.0,
             "content": "Wireless Equipment"},
        ]},
        {"type": "heading", "page number": 5, "font": "TimesNewRoman,Bold", "content": "no size"},
        {"type": "heading", "page number": 6, "font": "TimesNewRoman,Bold", "font size": 9.0, "content": "  "},
        "not an element",
    ]}
    assert odl_headings(data) == [
        StyledHeading(4, "General", SECTION),
        StyledHeading(5, "Wireless Equipment", SUBSUB),
    ]
    assert odl_headings({}) == []


MD = """\
<!-- page 4 -->

### PART I

### Global Network and Technology

Our network is everywhere.

### Network Evolution

<!-- page 5 -->

###### Fios

Fibre to the home.

### Not in the JSON

### Spectrum

## Item 7. MD&A {.outline}
"""

JSON_HEADINGS = [
    StyledHeading(4, "PART I", HeadingStyle(10.0, True, False)),
    StyledHeading(4, "Global Network and Technology", SECTION),
    StyledHeading(4, "Network Evolution", SUB),
    StyledHeading(5, "Fios", SUBSUB),
    StyledHeading(5, "Spectrum", SUB),
    StyledHeading(5, "Item 7. MD&A", SECTION),
    StyledHeading(9, "Network Evolution", SUB),  # same text, other page: not this line's
]


def test_levels_are_written_from_the_ranks_and_nothing_else_moves():
    text, styled = apply_heading_styles(MD, JSON_HEADINGS)
    lines, before = split_lines(text), split_lines(MD)
    assert len(lines) == len(before) and text.endswith("\n")
    changed = {i + 1: ln for i, ln in enumerate(lines) if ln != before[i]}
    assert changed == {
        3: "## PART I {.styled}",  # 10 pt bold: 3 headings vs the section style's 1
        5: "# Global Network and Technology {.styled}",
        9: "## Network Evolution {.styled}",
        13: "### Fios {.styled}",
        19: "## Spectrum {.styled}",
    }
    assert styled == 5
    # an outline heading and a heading the converter's JSON does not name keep their lines
    assert "## Item 7. MD&A {.outline}" in lines and "### Not in the JSON" in lines
    # styling twice changes nothing; no JSON headings, nothing either
    assert apply_heading_styles(text, JSON_HEADINGS) == (text, 0)
    assert apply_heading_styles(MD, []) == (MD, 0)


def test_a_heading_matches_only_a_converter_heading_of_its_own_page():
    md = "<!-- page 1 -->\n\n### Spectrum\n\n<!-- page 2 -->\n\n### Fios\n"
    text, styled = apply_heading_styles(md, [StyledHeading(2, "Spectrum", SUB), StyledHeading(2, "Fios", SUB)])
    assert styled == 1 and "### Spectrum\n" in text and "# Fios {.styled}" in text


FILING = """\
# Item 1. Business

Intro.

# Global Network and Technology {.styled}

Text.

## Network Evolution {.styled}

Text.

### Fios {.styled}

Fibre.

## Spectrum {.styled}

Text.

# Human Capital {.styled}

People.

# Item 1A. Risk Factors

Risks.
"""


def test_the_tree_nests_styled_headings_by_their_rank_below_the_label_before_them():
    tree = build_tree(FILING, "filing.md", ON)
    heads = {n.title: n for n in tree.nodes if n.kind == "heading"}
    assert tree.title_path(heads["Fios"].node_id) == (
        "Item 1. Business", "Global Network and Technology", "Network Evolution", "Fios")
    assert tree.title_path(heads["Spectrum"].node_id) == (
        "Item 1. Business", "Global Network and Technology", "Spectrum")
    assert tree.title_path(heads["Human Capital"].node_id) == ("Item 1. Business", "Human Capital")
    assert tree.title_path(heads["Item 1A. Risk Factors"].node_id) == ("Item 1A. Risk Factors",)
    assert heads["Fios"].title == "Fios"  # the attribute list is no part of the title


def test_levels_the_converter_wrote_are_still_flattened():
    plain = FILING.replace(" {.styled}", "")
    tree = build_tree(plain, "filing.md", ON)
    heads = {n.title: n for n in tree.nodes if n.kind == "heading"}
    # a converter's guess at levels is not trusted: every unnumbered heading sits under the item
    for title in ("Global Network and Technology", "Network Evolution", "Fios", "Spectrum", "Human Capital"):
        assert tree.title_path(heads[title].node_id) == ("Item 1. Business", title)


def test_the_rule_is_part_of_the_conversion_key_so_a_cached_conversion_is_not_reused():
    from proxypointer.config import PDFConfig
    from proxypointer.read.pdf import converter_from_config

    on, off = converter_from_config(PDFConfig()), converter_from_config(PDFConfig(heading_styles=False))
    assert dict(on.options)["format"] == "markdown,json" and "heading_styles" in dict(on.options)
    assert dict(off.options)["format"] == "markdown" and "heading_styles" not in dict(off.options)
    assert on.key("ab" * 32) != off.key("ab" * 32)

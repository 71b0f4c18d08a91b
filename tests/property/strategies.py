"""Hypothesis strategies that generate markdown for the tree property and differential tests.

Two families:

* ``markdown_documents``: random block soup built from line fragments that hit CommonMark's
  hard cases (ATX/setext edges, fences of both kinds and lengths, indented code, lists, block
  quotes, lazy continuation, pipe tables, HTML blocks, link reference definitions, front
  matter, tabs, form feeds, U+2028, CR/CRLF, BOM). Used against markdown-it-py.
* ``heading_documents``: documents with many real headings (ATX at levels 1-6 and setext)
  between paragraphs and code, for the tree invariants.
* ``converter_documents``: what PDF converters write: page markers, headings at any level
  (numbered labels, table rows, folios), stand-alone title-like lines, flattened table rows,
  lists, quotes and code holding title-like lines, for the converter rules.
"""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = [
    "BODIES",
    "CONVERTER_TITLES",
    "MATH_MARK",
    "PREFIXES",
    "converter_documents",
    "heading_documents",
    "markdown_documents",
    "markdown_lines",
]

#: Container and indentation prefixes; joined to nest (``> - `` etc.).
PREFIXES: tuple[str, ...] = (
    "", "", "", "", " ", "  ", "   ", "    ", "     ", "\t", " \t", "> ", ">", ">  ", "   > ",
    "- ", "* ", "+ ", "-   ", "1. ", "2) ", "10. ", "  - ", "   1. ", "-\t", "1.", "-",
)

#: Line bodies, each a known trouble-maker for heading detection.
BODIES: tuple[str, ...] = (
    "# Title", "## Sub title ##", "### Three", "#### Four #", "###### Six", "####### Seven",
    "#tag", "#", "# ", "#\tTab", "\\# escaped", "## C#", "# Foo # bar #", "#  spaced  ###  ",
    "Plain text line", "Another sentence here.", "text with | pipe", "a | b", "| a | b |",
    "|---|---|", "--|--", "| --- |", ":-:|:--", "|", "| x", "===", "---", "- - -", "***", "___",
    "= =", "==", "--", "```", "```python", "````", "``` `", "~~~", "~~~ info", "~~~~",
    "<div>", "</div>", "<div class='x'>", "<!-- comment", "-->", "<h2>Html heading</h2>",
    "<pre>", "</pre>", "<script>", "</script>", "<?php", "?>", "<!DOCTYPE html>", "<custom-tag>",
    "<a href='x'>", "[ref]: /url", "[ref]: /url 'title'", "[ref]:", "'title'", "[not a ref]",
    "**Bold heading**", "__Under bold__", "**Note:** text", "1.1 Numbered title", "2 Scope",
    "...", "- item", "+ item", "10. item", "1) item", "> quote", ">> deep", "",
    "$$", "$$ x = y $$", "\\[", "\\]", "\\begin{equation}", "\\end{equation}", "=", "-",
    "## Title {#id}", "## {#only}", "Setext {.c}", "<!-- <h2>hidden</h2> -->",
    "", "", "   ", "\t", "text\fwith form feed", "line\u2028separator", "nel\x85char", "x\x00y",
)

_LINE = st.tuples(
    st.lists(st.sampled_from(PREFIXES), min_size=0, max_size=3).map("".join),
    st.sampled_from(BODIES),
).map(lambda parts: parts[0] + parts[1])


def markdown_lines(max_lines: int = 40) -> st.SearchStrategy[list[str]]:
    """Lists of markdown lines built from :data:`PREFIXES` and :data:`BODIES`."""
    return st.lists(_LINE, min_size=0, max_size=max_lines)


@st.composite
def markdown_documents(draw: st.DrawFn, max_lines: int = 40, raw: bool = False) -> str:
    """Random markdown text, normalised (LF only, no BOM) unless ``raw`` is set.

    With ``raw=True`` the text may use CRLF or CR endings, start with a BOM and lack a final
    newline, so callers must pass it through ``normalise_text``.
    """
    lines = draw(markdown_lines(max_lines))
    if draw(st.booleans()) and lines:
        fm = draw(st.sampled_from([["---", "title: x", "---"], ["---", "a: 1", "..."], ["---"]]))
        lines = fm + lines
    text = "\n".join(lines)
    if draw(st.booleans()):
        text += "\n"
    if raw:
        eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
        text = text.replace("\n", eol)
        if draw(st.booleans()):
            text = "\ufeff" + text
    return text


#: Text placed only inside display-math blocks by ``heading_documents``.
MATH_MARK = "mathline"

_MATH_BLOCKS = (
    ("$$", "=", "$$"),
    ("$$", "-", "$$"),
    ("\\[", "=", "\\]"),
    ("\\begin{equation}", "---", "\\end{equation}"),
    ("\\begin{align*}", "=", "\\end{align*}"),
)

_WORDS = st.sampled_from(
    ["alpha", "beta", "gamma", "delta", "Results", "Methods", "Scope", "Notes", "Intro"]
)
_TITLE = st.lists(_WORDS, min_size=1, max_size=3).map(" ".join)


@st.composite
def _block(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(
        ["atx", "atx", "atx", "setext", "para", "para", "blank", "fence", "list", "quote", "math", "math_para"]
    ))
    if kind == "atx":
        level = draw(st.integers(1, 6))
        closing = draw(st.sampled_from(["", "", " " + "#" * level, " {#anchor}", " {: .c }"]))
        return ["#" * level + " " + draw(_TITLE) + closing]
    if kind == "setext":
        return [draw(_TITLE), draw(st.sampled_from(["===", "---", "=====", "-----"]))]
    if kind == "para":
        return [draw(_TITLE) + "." for _ in range(draw(st.integers(1, 3)))]
    if kind == "fence":
        fence = draw(st.sampled_from(["```", "~~~", "````"]))
        return [fence, "# not a heading " + draw(_TITLE), fence]
    if kind == "list":
        return ["- " + draw(_TITLE), "  # in list"]
    if kind in ("math", "math_para"):
        opener, rule, closer = draw(st.sampled_from(_MATH_BLOCKS))
        lead = [draw(_TITLE) + " is"] if kind == "math_para" else []  # math right after a paragraph line
        return [*lead, opener, MATH_MARK + " a", rule, MATH_MARK + " b", closer]
    if kind == "quote":
        return ["> # quoted " + draw(_TITLE)]
    return [""]


@st.composite
def heading_documents(draw: st.DrawFn, max_blocks: int = 30) -> str:
    """Normalised markdown with many real headings (ATX 1-6, setext) between other blocks.

    Blocks are separated by blank lines so every ATX/setext block is a top-level heading.
    """
    blocks = draw(st.lists(_block(), min_size=0, max_size=max_blocks))
    lines: list[str] = []
    for block in blocks:
        lines.extend(block)
        lines.append("")
    if lines and draw(st.booleans()):
        lines.pop()
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


#: Title-like lines (``titles.is_title_line`` accepts each), placed plain by ``converter_documents``.
CONVERTER_TITLES: tuple[str, ...] = (
    "CONSOLIDATED BALANCE SHEETS (In millions)", "Consolidated Statements of Cash Flows",
    "Risks Related to Our Business", "Notes to Consolidated Financial Statements", "Critical Audit Matters",
)
_CONVERTER_HEADINGS = (
    "Item 7. Management's Discussion", "PART II", "Note 14 - Debt", "14. Debt", "Section 2.05 Bids",
    "2.05.4 Quotes", "Overview", "44", "4,867,457 $ 133.54", "2021 FORM 10-K 30", "PAGE", "Results of Operations",
)


@st.composite
def _converter_block(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(
        ["heading", "heading", "title", "title", "para", "row", "marker", "list", "quote", "fence", "lead", "blank"]
    ))
    title = draw(st.sampled_from(CONVERTER_TITLES))
    if kind == "heading":
        return ["#" * draw(st.integers(1, 6)) + " " + draw(st.sampled_from(_CONVERTER_HEADINGS))]
    if kind == "title":
        return [title]
    if kind == "para":
        return [draw(_TITLE) + " was reported in the year."]
    if kind == "row":
        return [draw(st.sampled_from(["Total assets $ 9,869,550 $ 4,551,258", "December 31, 2020 2019", "83"]))]
    if kind == "marker":
        return [f"<!-- page {draw(st.integers(1, 400))} -->"]
    if kind == "list":
        return ["- " + title]
    if kind == "quote":
        return ["> " + title]
    if kind == "fence":
        return ["```", title, "```"]
    if kind == "lead":
        return ["The following table shows the amounts:"]
    return [""]


@st.composite
def converter_documents(draw: st.DrawFn, max_blocks: int = 30) -> str:
    """Normalised markdown shaped like PDF converter output (see ``_converter_block``).

    Blocks are separated by blank lines, or by nothing (a page marker or title line glued to
    its neighbour), so that title lines stand alone only sometimes.
    """
    blocks = draw(st.lists(_converter_block(), min_size=0, max_size=max_blocks))
    lines: list[str] = []
    for block in blocks:
        lines.extend(block)
        if draw(st.integers(0, 3)):
            lines.append("")
    return "\n".join(lines) + "\n"

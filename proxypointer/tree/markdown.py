r"""markdown-it-py set up for heading detection: block tokens and top-level headings.

The parser is markdown-it-py's ``commonmark`` preset with GFM tables, YAML front matter
(mdit-py-plugins' ``front_matter``) and display math made opaque, so that a ``=`` or ``-``
line inside an equation is never a setext underline (shared case 35):

* ``\begin{equation}`` ... ``\end{equation}`` and the other amsmath environments: the
  ``amsmath`` plugin of mdit-py-plugins.
* ``$$`` ... ``$$`` and ``\[`` ... ``\]``: :func:`display_math_block`, a block rule of ours.
  mdit-py-plugins' ``dollarmath`` cannot end a paragraph (``is\n$$`` keeps the phantom
  heading) and ``texmath``'s bracket rule matches its pattern against the rest of the
  document, so one stray ``\]`` pages later would swallow every section in between.

Only block structure is needed: the inline core rule is off, so a heading's title is its raw
inline text. ``token.map`` is 0-based ``[start, end)``; headings come out 1-based.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .outlinetext import is_outline_heading
from .titles import heading_title

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import StateBlock
    from markdown_it.token import Token

__all__ = [
    "STYLED_ATTRIBUTE",
    "Heading",
    "code_lines",
    "display_math_block",
    "is_styled_heading",
    "markdown_parser",
    "parse_blocks",
    "top_level_headings",
]


@dataclass(frozen=True, slots=True)
class Heading:
    """One heading found in a document, before the tree is built.

    Attributes:
        line: Line of the heading text, 1-based (setext: the text line, not the underline).
        last_line: Last line of the heading markup (setext: the underline), 1-based.
        level: Level used for nesting, 1..6 (after any re-levelling).
        title: Heading text without markers and without a trailing attribute list
            (``{#id}``); other inline markup kept as written.
        md_level: Level as written: the ``#`` count or setext level, N of an ``<hN>`` line,
            0 for bold, numbered and title lines (re-levelling changes ``level``, not this).
        source: ``atx``, ``setext``, ``outline`` (an ATX heading written from a PDF's
            bookmarks, marked ``{.outline}``: :mod:`proxypointer.tree.outlinetext`), ``styled``
            (an ATX heading whose level is its font's rank, marked ``{.styled}``:
            :mod:`proxypointer.tree.headingstyles`) or the
            converter mode that found it (``bold``, ``numbered``, ``html``, ``title``).

    """

    line: int
    last_line: int
    level: int
    title: str
    md_level: int
    source: str = "atx"


#: Attribute list that marks a heading whose level a reader wrote from its font's rank
#: (:mod:`proxypointer.tree.headingstyles`); dropped from the title like any attribute list.
STYLED_ATTRIBUTE = "{.styled}"
_STYLED_MARK = re.compile(r"\{[^{}]*(?<![\w-])\.styled(?![\w-])[^{}]*\}\s*$")


def is_styled_heading(raw_heading: str) -> bool:
    """Tell whether a heading's inline text ends in an attribute list with class ``styled``.

    Examples:
        >>> is_styled_heading("Network Evolution {.styled}"), is_styled_heading("Network Evolution")
        (True, False)
    """
    return bool(_STYLED_MARK.search(raw_heading))


_MATH_FENCES = (("$$", "$$"), ("\\[", "\\]"))


def display_math_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    r"""markdown-it block rule: a ``$$`` ... ``$$`` or ``\[`` ... ``\]`` display equation.

    The block opens on a line starting with ``$$`` or ``\[`` (up to 3 spaces of indent, as a
    fence) and closes at the first line, the opening one included, whose text ends with the
    matching ``$$`` or ``\]``. Like a fenced code block it ends a paragraph. No blank line may
    lie inside (LaTeX rejects a blank line in display math) and an unclosed opener is plain
    text, so a stray ``$$`` never hides the sections after it: CommonMark applies unchanged.
    This is a deliberate deviation from CommonMark, stated in shared case 35.

    Args:
        state: markdown-it's block state.
        start_line: First line to look at, 0-based.
        end_line: Line bound of the current container, 0-based exclusive.
        silent: Only say whether a block starts here (when ending a paragraph).

    Returns:
        True when a block was found (and, unless ``silent``, a ``math_block`` token pushed).

    """
    if state.is_code_block(start_line):
        return False
    pos = state.bMarks[start_line] + state.tShift[start_line]
    first = state.src[pos : state.eMarks[start_line]]
    closer = next((c for o, c in _MATH_FENCES if first.startswith(o)), None)
    if closer is None:
        return False
    rest = first[2:].rstrip()
    last = start_line
    if not (rest.endswith(closer) and len(rest) >= len(closer)):
        last = start_line + 1
        while True:
            if last >= end_line or state.isEmpty(last) or state.sCount[last] < state.blkIndent:
                return False
            text = state.src[state.bMarks[last] + state.tShift[last] : state.eMarks[last]]
            if text.rstrip().endswith(closer):
                break
            last += 1
    if silent:
        return True
    state.line = last + 1
    token = state.push("math_block", "math", 0)
    token.block = True
    token.markup = first[:2]
    token.map = [start_line, state.line]
    token.content = state.getLines(start_line, state.line, state.tShift[start_line], False)
    return True


@functools.lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    """Build the configured markdown-it-py parser once (parsing never mutates it).

    Returns:
        ``MarkdownIt("commonmark")`` with tables, front matter, amsmath environments and
        :func:`display_math_block`, inline parsing off.

    """
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin

    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin).use(amsmath_plugin)
    md.block.ruler.before(
        "fence", "display_math", display_math_block,
        {"alt": ["paragraph", "reference", "blockquote", "list"]},
    )
    md.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)
    return md


@functools.lru_cache(maxsize=1)
def _commonmark() -> MarkdownIt:
    """Plain CommonMark, block rules only: what :func:`code_lines` calls code."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)
    return md


def code_lines(lines: Sequence[str]) -> set[int]:
    """Return the 1-based numbers of lines inside code blocks: fenced *and* indented.

    The one definition of "code" for every rule that must not read code as text (page markers,
    labels, cross-references): a code block as CommonMark defines it (markdown-it-py), so a
    line indented four spaces after a blank line is code, as it is to the heading parser, while
    an indented line that continues a paragraph or a list item is not. Fences are included.
    Decided for issue 31, where the label rules saw only fenced code and the page rules both;
    ``tests/unit/test_labels.py`` pins it.

    Args:
        lines: The document's lines (``lines[i]`` is line ``i + 1``).
    """
    inside: set[int] = set()
    for tok in _commonmark().parse("\n".join(lines)):
        if tok.type in ("fence", "code_block") and tok.map:
            inside.update(range(tok.map[0] + 1, tok.map[1] + 1))
    return inside


def parse_blocks(text: str) -> list[Token]:
    """Block tokens of normalised markdown text (``token.map`` 0-based ``[start, end)``)."""
    return markdown_parser().parse(text)


def top_level_headings(tokens: list[Token]) -> tuple[list[Heading], int]:
    """ATX and setext headings at nesting level 0, and where front matter ends.

    Headings inside lists, block quotes, HTML blocks, code, tables or display math are not
    sections. A heading whose title is empty (a bare ``#``, or only an attribute list) is
    not either: it would add a nameless breadcrumb segment and re-parent what follows
    (shared case 04).

    Args:
        tokens: Output of :func:`parse_blocks`.

    Returns:
        ``(headings, front_matter_end)``: headings in line order (1-based lines) and the last
        line of YAML front matter, 0 when there is none.

    """
    headings: list[Heading] = []
    front_matter_end = 0
    for i, tok in enumerate(tokens):
        if tok.level != 0 or not tok.map:
            continue
        if tok.type == "front_matter":
            front_matter_end = tok.map[1]
        elif tok.type == "heading_open":
            title = heading_title(tokens[i + 1].content)
            if title:
                level = int(tok.tag[1])
                source = "setext" if tok.markup in ("=", "-") else "atx"
                if is_outline_heading(tokens[i + 1].content):
                    source = "outline"
                elif source == "atx" and is_styled_heading(tokens[i + 1].content):
                    source = "styled"
                headings.append(Heading(tok.map[0] + 1, tok.map[1], level, title, level, source))
    return headings, front_matter_end

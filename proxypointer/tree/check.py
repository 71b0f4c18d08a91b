"""Inspect a skeleton tree: PageIndex JSON, a readable outline, and a validation report.

The validation report flags trees that look wrong *before* they are indexed, so users can
change the converter-output modes (:class:`~proxypointer.config.TreeConfig`) or fix the
conversion: flat levels that numbering contradicts, one node holding most of the text,
headings that read like sentences, table rows or display math, duplicate title paths and
oversized sections. A document without headings gets a note, not a warning: sliding windows
are a supported fallback.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, StaleSourceError
from .build import DocumentTree, HeadingReport, Node
from .headings import SPACE_HEADING
from .titles import is_row_or_furniture, numbering_depth

__all__ = [
    "OUTLINE_TITLE_MAX_CHARS",
    "TreeWarning",
    "check_tree",
    "shown_title",
    "tree_outline",
    "tree_to_pageindex",
    "unread_space_headings",
]

logger = logging.getLogger(__name__)

#: Fewest heading nodes for the ``flat-levels`` check (fewer equal levels are normal).
FLAT_MIN_HEADINGS = 4
#: Share of the document's non-blank characters above which one node's own text is flagged.
DOMINANT_SHARE = 0.6
#: Documents with fewer non-blank characters than this are too small for ``dominant-node``.
DOMINANT_MIN_CHARS = 2000
#: A heading with more words than this reads like a sentence.
SENTENCE_MAX_WORDS = 15
#: A heading of at least this many words ending in ``.``, ``;`` or ``,`` reads like a sentence.
SENTENCE_PUNCT_MIN_WORDS = 5
#: Display-math openers; a heading title starting with one is an equation read as a heading.
MATH_OPENERS = ("$$", "\\[", "\\begin{")


@dataclass(frozen=True, slots=True)
class TreeWarning:
    """One finding of :func:`check_tree`.

    Attributes:
        code: Stable kind: ``no-headings``, ``converter-rules``, ``flat-levels``,
            ``dominant-node``, ``sentence-heading``, ``math-heading``, ``row-headings``,
            ``duplicate-title`` or ``long-section``.
        line: Line the finding points at, 1-based; 0 when it concerns the whole document.
        message: ``<what looks wrong>; <what to try>``, without the file or line (see
            :meth:`format`). Fixes name the CLI flag and, in parentheses, the config key.
        severity: ``warning`` (the tree looks wrong) or ``note`` (worth knowing, nothing
            wrong: a document without headings is indexed as sliding windows; the converter
            rules changed the headings).

    """

    code: str
    line: int
    message: str
    severity: str = "warning"

    def format(self, source: str) -> str:
        """One report line: ``<source>[:<line>]: <severity>[<code>]: <message>``.

        Args:
            source: The file as the user named it.

        Example:
            >>> TreeWarning("no-headings", 0, "no headings", "note").format("a.md")
            'a.md: note[no-headings]: no headings'

        """
        where = f"{source}:{self.line}" if self.line > 0 else source
        return f"{where}: {self.severity}[{self.code}]: {self.message}"


def _depth(tree: DocumentTree, node: Node) -> int:
    return len(tree.ancestors(node.node_id))


def tree_to_pageindex(tree: DocumentTree) -> dict[str, Any]:
    r"""Export a tree in PageIndex's markdown tree JSON layout.

    Args:
        tree: Output of :func:`proxypointer.tree.build.build_tree`.

    Returns:
        ``{"doc_name", "line_count", "structure"}`` where ``structure`` is a list of root
        nodes, each ``{"title", "node_id", "line_num", "nodes"}`` with ``line_num`` the
        heading line (1-based) and ``nodes`` its children (possibly empty). The preamble,
        when present, is the first root.

    Example:
        >>> from proxypointer.tree.build import build_tree
        >>> tree_to_pageindex(build_tree("# A\n## B\n", "doc"))["structure"][0]["nodes"][0]["title"]
        'B'

    """

    def entry(node: Node) -> dict[str, Any]:
        return {
            "title": node.title,
            "node_id": node.node_id,
            "line_num": node.start_line,
            "nodes": [entry(child) for child in tree.children(node.node_id)],
        }

    roots = [n for n in tree.nodes if not n.parent_id]
    return {
        "doc_name": tree.doc_id,
        "line_count": tree.line_count,
        "structure": [entry(n) for n in roots],
    }


#: Most characters of a title in :func:`tree_outline`; a longer one (a paragraph taken for a
#: heading, a 47 MB one-line "heading") is cut there with ``…`` and its length given.
OUTLINE_TITLE_MAX_CHARS = 160


def shown_title(title: str) -> str:
    """Return a title as printed for a reader: cut at :data:`OUTLINE_TITLE_MAX_CHARS` characters.

    Args:
        title: A node's title or one element of a breadcrumb.

    Returns:
        ``title`` itself when short enough, else its start, ``…`` and its length.

    Example:
        >>> shown_title("x" * 200)[-19:]
        'x… (200 characters)'
    """
    if len(title) <= OUTLINE_TITLE_MAX_CHARS:
        return title
    return f"{title[: OUTLINE_TITLE_MAX_CHARS - 1]}… ({len(title):,} characters)"


def tree_outline(tree: DocumentTree) -> str:
    r"""Render a tree as an indented outline for reading by eye.

    Args:
        tree: Output of :func:`proxypointer.tree.build.build_tree`.

    Returns:
        One line per node in document order: two spaces per ancestor, ``#`` repeated
        ``level`` times (``[preamble]`` for the preamble), the title (cut at
        :data:`OUTLINE_TITLE_MAX_CHARS` characters), and ``L<start_line>-L<end_line>``
        (1-based, inclusive, whole subtree). Lines are joined with ``\n``; empty string for a
        tree without nodes.

    Example:
        >>> from proxypointer.tree.build import build_tree
        >>> print(tree_outline(build_tree("# A\ntext\n## B\n", "doc")))
        # A  L1-L3
          ## B  L3-L3

    """
    out = []
    for node in tree.nodes:
        marker = "[preamble]" if node.kind == "preamble" else "#" * node.level
        indent = "  " * _depth(tree, node)
        out.append(f"{indent}{marker} {shown_title(node.title)}  L{node.start_line}-L{node.end_line}")
    return "\n".join(out)


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def unread_space_headings(tree: DocumentTree, lines: list[str]) -> list[int]:
    """Lines written as headings with a no-break (or other Unicode) space after the ``#``s that are no headings.

    CommonMark reads ``##`` + U+00A0 + title as text; in converter output the
    ``tree.space_headings`` rule makes such lines headings, elsewhere they stay text and are
    returned here (1-based, outside fenced code) for ``tree --check`` and ingest's note.
    """
    starts = {n.start_line for n in tree.nodes if n.kind == "heading"}
    return [ln for ln in _space_headings(lines) if ln not in starts]


def _space_headings(lines: list[str]) -> list[int]:
    """1-based lines, outside fenced code, that are headings but for the space after ``#``."""
    out, fence = [], ""
    for i, line in enumerate(lines, 1):
        m = _FENCE.match(line)
        if m and (not fence or m.group(1).startswith(fence)):
            fence = "" if fence else m.group(1)[:3]
            continue
        if not fence and SPACE_HEADING.match(line):
            out.append(i)
    return out


def _approx_tokens(text: str) -> int:
    # Word pieces per whitespace-separated word with all-MiniLM-L6-v2's WordPiece vocabulary,
    # measured with the bundled tokenizer: 1.31 over three FinanceBench filings, 1.40 over 30
    # QASPER papers, 1.57 over data/ (Dec 2026). The low end: an estimate, not a tokenizer.
    return math.ceil(len(text.split()) * 1.3)


def _own_text(lines: list[str], node: Node) -> str:
    if node.body_start_line > node.body_end_line:
        return ""
    return "\n".join(lines[node.body_start_line - 1 : node.body_end_line])


def _rules_note(report: HeadingReport) -> TreeWarning:
    done = []
    if "drop_row_headings" in report.rules:
        done.append(f"{len(report.dropped)} heading(s) dropped as table rows or page furniture")
    if "title_lines" in report.rules:
        first = ""
        if report.promoted:
            first = f" (first: line {report.promoted[0].line}, {shown_title(report.promoted[0].title)!r})"
        done.append(f"{len(report.promoted)} title line(s) made headings{first}")
    if "flatten_levels" in report.rules:
        done.append("levels taken from numbering only (a financial statement keeps its table's pieces as children)")
    if "relevel_filing" in report.rules:
        done.append("levels taken from filing labels (PART, ITEM, Note)")
    if report.relevelled:
        done.append(f"{report.relevelled} heading(s) at another level than written")
    return TreeWarning(
        "converter-rules", 0,
        f"converter rules ran ({report.converter_output}): {'; '.join(done) or 'nothing changed'}; "
        "to keep the headings as written: --converter-output off (tree.converter_output: off)",
        "note",
    )


def check_tree(
    tree: DocumentTree,
    lines: list[str],
    count_tokens: Callable[[str], int] | None = None,
    max_section_tokens: int = 2000,
    report: HeadingReport | None = None,
) -> list[TreeWarning]:
    """Flag a tree that looks wrongly converted before it is indexed.

    Checks, each with its ``code``:

    * ``no-headings`` (a note): the document has text but no heading; it will be indexed
      as sliding windows, a supported fallback. If the converter wrote titles as bold,
      numbered, ``<hN>`` or plain title lines, the converter-output modes find them.
    * ``converter-rules`` (a note, only with ``report``): the converter rules ran on the
      document, why (``page markers (opendataloader)``) and what they did: headings dropped,
      title lines promoted, levels re-set.
    * ``flat-levels``: at least :data:`FLAT_MIN_HEADINGS` headings, all at one level, and
      numbering (``3``, ``3.1``, ``Item 7``) shows more than one depth; try
      ``--relevel-numbered``.
    * ``dominant-node``: one node's own text holds more than :data:`DOMINANT_SHARE` of the
      document's non-blank characters (documents of at least :data:`DOMINANT_MIN_CHARS`),
      a sign of missed headings.
    * ``sentence-heading``: a title of more than :data:`SENTENCE_MAX_WORDS` words, or of at
      least :data:`SENTENCE_PUNCT_MIN_WORDS` words ending in ``.``, ``;`` or ``,``: body text
      promoted to a heading by the converter.
    * ``space-heading``: lines outside fenced code that start like an ATX heading but have a
      no-break or other Unicode space after the ``#``s (``##`` + U+00A0 + title): text to
      CommonMark, so no sections (in converter output ``tree.space_headings`` makes them
      headings and they are not reported); reported once, at the first, with the line numbers.
    * ``math-heading``: a title starting with a display-math opener (:data:`MATH_OPENERS`):
      an equation read as a setext heading (shared case 35; an unclosed ``$$`` or a blank
      line inside the equation keeps the CommonMark reading).
    * ``row-headings``: headings that read like table rows or page furniture
      (:func:`proxypointer.tree.titles.is_row_or_furniture`) left in the tree, reported once at
      the first one with their count; try ``--converter-output on``.
    * ``duplicate-title``: two nodes with the same title path (breadcrumb), which retrieval
      cannot tell apart; reported at the later one.
    * ``long-section``: a node's own text is over ``max_section_tokens`` tokens.

    Args:
        tree: Output of :func:`proxypointer.tree.build.build_tree`.
        lines: ``split_lines`` of the same text (1-based line ``i`` is ``lines[i - 1]``).
        count_tokens: Returns the number of word pieces of the embedding model's tokenizer
            (no special tokens) in a text; default: 1.3 x whitespace-separated words, an
            estimate for English prose.
        max_section_tokens: Own-text size above which ``long-section`` is reported, in the
            unit of ``count_tokens``; must be > 0.
        report: What the heading modes did (:func:`proxypointer.tree.build.explain_headings` with
            the config the tree was built with); None: no ``converter-rules`` note.

    Returns:
        Findings ordered by line (whole-document ones, line 0, first), then code; empty
        when nothing looks wrong.

    Raises:
        ConfigError: If ``max_section_tokens`` is not > 0.
        StaleSourceError: If ``lines`` does not match the tree's ``line_count`` (the tree
            was built from another text).

    """
    if max_section_tokens <= 0:
        raise ConfigError(f"max_section_tokens: expected an int > 0, got {max_section_tokens}")
    if len(lines) != tree.line_count:
        raise StaleSourceError(
            f"{tree.doc_id}: lines has {len(lines)} lines but the tree was built from "
            f"{tree.line_count}; pass split_lines() of the same text"
        )
    count = count_tokens or _approx_tokens
    found: list[TreeWarning] = []
    headings = [n for n in tree.nodes if n.kind == "heading"]
    total_chars = sum(len(s.strip()) for s in lines[tree.front_matter_end :])

    if report is not None and report.converter_output:
        found.append(_rules_note(report))

    found.extend(_space_heading_findings(tree, lines))

    if not headings:
        found.extend(_no_heading_findings(total_chars))
        return found

    found.extend(_level_findings(headings))
    found.extend(_dominant_findings(tree, lines, total_chars))
    found.extend(_row_findings(headings))
    found.extend(_heading_findings(tree, headings))
    found.extend(_long_section_findings(tree, lines, count, max_section_tokens))

    found.sort(key=lambda w: (w.line, w.code))
    if found:
        logger.debug("%s: %d tree finding(s)", tree.doc_id, len(found))
    return found


def _space_heading_findings(tree: DocumentTree, lines: list[str]) -> list[TreeWarning]:
    """``space-heading``: lines written ``#`` + a Unicode space that CommonMark reads as text."""
    found: list[TreeWarning] = []
    spaced = unread_space_headings(tree, lines)
    if spaced:
        shown = ", ".join(map(str, spaced[:10])) + (", ..." if len(spaced) > 10 else "")
        found.append(TreeWarning(
            "space-heading", spaced[0],
            f"{len(spaced)} line(s) start like a heading but a no-break or other Unicode space follows "
            f"the '#'s (lines {shown}): CommonMark reads them as text, so they are no sections; "
            "write a plain space after the '#'s (converter output gets them repaired: tree.space_headings)",
        ))
    return found


def _no_heading_findings(total_chars: int) -> list[TreeWarning]:
    """``no-headings`` (a note): a document with text and no heading is indexed as windows."""
    found: list[TreeWarning] = []
    if total_chars:
        found.append(TreeWarning(
            "no-headings", 0,
            "no headings: the document will be indexed as sliding windows (a supported "
            "fallback); if the converter wrote titles as bold, numbered, <hN> or plain title lines, try "
            "--bold-headings, --numbered-headings, --html-headings or --converter-output on "
            "(tree.bold_headings, tree.numbered_headings, tree.html_headings, tree.converter_output)",
            "note",
        ))
    return found


def _level_findings(headings: list[Node]) -> list[TreeWarning]:
    """``flat-levels``: every heading at one level while their numbering has several depths."""
    found: list[TreeWarning] = []
    if len(headings) >= FLAT_MIN_HEADINGS and len({n.level for n in headings}) == 1:
        depths = {d for n in headings if (d := numbering_depth(n.title))}
        if len(depths) > 1:
            found.append(TreeWarning(
                "flat-levels", 0,
                f"all {len(headings)} headings are level {headings[0].level} but their numbering "
                f"has {len(depths)} depths; try --relevel-numbered (tree.relevel_numbered)",
            ))
    return found


def _dominant_findings(tree: DocumentTree, lines: list[str], total_chars: int) -> list[TreeWarning]:
    """``dominant-node``: one node holding most of the text in its own body."""
    found: list[TreeWarning] = []
    if total_chars >= DOMINANT_MIN_CHARS:
        for n in tree.nodes:
            own = sum(len(s.strip()) for s in lines[n.body_start_line - 1 : n.body_end_line])
            if own > DOMINANT_SHARE * total_chars:
                found.append(TreeWarning(
                    "dominant-node", n.start_line,
                    f"node {shown_title(n.title)!r} holds {own * 100 // total_chars}% of the text in its own "
                    "body; headings may be missing (bold or numbered lines?), try --bold-headings "
                    "or --numbered-headings (tree.bold_headings, tree.numbered_headings)",
                ))
    return found


def _row_findings(headings: list[Node]) -> list[TreeWarning]:
    """``row-headings``: headings that read like table rows or page furniture."""
    found: list[TreeWarning] = []
    rows = [n for n in headings if is_row_or_furniture(n.title)]
    if rows:
        found.append(TreeWarning(
            "row-headings", rows[0].start_line,
            f"{len(rows)} heading(s) read like table rows or page furniture (first: "
            f"{shown_title(rows[0].title)!r}); try --converter-output on "
            "(tree.converter_output, tree.drop_row_headings)",
        ))
    return found


def _heading_findings(tree: DocumentTree, headings: list[Node]) -> list[TreeWarning]:
    """``math-heading``, ``sentence-heading`` and ``duplicate-title``, heading by heading."""
    found: list[TreeWarning] = []
    seen: dict[tuple[str, ...], int] = {}
    for n in headings:
        words = n.title.split()
        if n.title.startswith(MATH_OPENERS):
            found.append(TreeWarning(
                "math-heading", n.start_line,
                f"heading {shown_title(n.title)!r} starts like display math: an equation read as a heading "
                "(a '=' or '-' line under it?); close the equation on its own line and keep blank "
                "lines out of it",
            ))
        elif len(words) > SENTENCE_MAX_WORDS or (
            len(words) >= SENTENCE_PUNCT_MIN_WORDS and n.title.endswith((".", ";", ","))
        ):
            found.append(TreeWarning(
                "sentence-heading", n.start_line,
                f"heading {shown_title(n.title)!r} reads like a sentence; the converter may have promoted "
                "body text to a heading",
            ))
        path = tree.title_path(n.node_id)
        if path in seen:
            found.append(TreeWarning(
                "duplicate-title", n.start_line,
                f"title path {' > '.join(path)!r} repeats the heading of line {seen[path]}; "
                "retrieval cannot tell the two apart by breadcrumb",
            ))
        else:
            seen[path] = n.start_line
    return found


def _long_section_findings(
    tree: DocumentTree, lines: list[str], count: Callable[[str], int], max_section_tokens: int
) -> list[TreeWarning]:
    """``long-section``: own text over ``max_section_tokens`` (counted by ``count``)."""
    found: list[TreeWarning] = []
    for n in tree.nodes:
        size = count(_own_text(lines, n))
        if size > max_section_tokens:
            found.append(TreeWarning(
                "long-section", n.start_line,
                f"section {shown_title(n.title)!r} has {size} tokens of own text (> {max_section_tokens}); "
                "check for missed headings",
            ))
    return found

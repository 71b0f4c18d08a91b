r"""Skeleton tree: markdown text -> heading nodes with 1-based inclusive line ranges. No LLM.

Headings follow CommonMark as markdown-it-py parses it (commonmark preset + GFM tables + front
matter plugin; see :mod:`proxypointer.tree.markdown`): ATX and setext, nothing inside fenced or
indented code, display math, lists, block quotes, HTML blocks or table cells. YAML front
matter is not a section. Text before the first heading becomes a level-0 *preamble* node.
Converter-output modes (:mod:`proxypointer.tree.headings`) add, drop or re-level headings (by
default on documents that look converted from PDF); title rules live in
:mod:`proxypointer.tree.titles`.

Line numbering is defined once, in :mod:`proxypointer.lines`: only ``\n``, ``\r\n`` and
``\r`` end a line (never ``\f``, U+2028 or NEL), and the same splitting serves the parser and
the slicer.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..config import TreeConfig
from ..lines import split_lines
from .headings import HeadingReport, apply_converter_modes
from .markdown import Heading, parse_blocks, top_level_headings

__all__ = [
    "PREAMBLE_ID",
    "TREE_JSON_FIELDS",
    "DocumentTree",
    "Heading",
    "HeadingReport",
    "Node",
    "build_tree",
    "explain_headings",
    "find_headings",
    "tree_rows",
]

logger = logging.getLogger(__name__)

#: node_id of the preamble node; heading ids are 12 hex digits, so it never collides.
PREAMBLE_ID = "preamble"

@dataclass(frozen=True, slots=True)
class Node:
    """A section of a document: a heading and everything under it, or the preamble.

    Attributes:
        node_id: Stable id: 12 hex digits of a hash of the parent's id, the title and the
            ordinal among earlier siblings with the same title (not the position), so
            inserting a heading elsewhere does not renumber the rest. ``"preamble"`` for the
            preamble.
        title: Heading text; for the preamble, the document's display title.
        level: 1..6 for headings, 0 for the preamble.
        start_line: Heading line (setext: the text line), 1-based inclusive.
        end_line: Last line of the whole subtree: the line before the next heading of the
            same or a smaller level, else the last line of the document.
        body_start_line: First line of the node's own text (after the heading markup); may
            be ``body_end_line + 1`` when the own text is empty.
        body_end_line: Last line of the node's own text: the line before the next heading
            of any level, else the last line.
        parent_id: node_id of the nearest preceding heading with a smaller level; ``""`` for
            roots and the preamble.
        kind: ``heading`` or ``preamble``.
        md_level: Level as written in the markdown (differs from ``level`` after
            re-levelling; 0 for the preamble and converter-mode headings).

    """

    node_id: str
    title: str
    level: int
    start_line: int
    end_line: int
    body_start_line: int
    body_end_line: int
    parent_id: str
    kind: str = "heading"
    md_level: int = 0


@dataclass(frozen=True, slots=True)
class DocumentTree:
    """The skeleton tree of one document.

    Attributes:
        doc_id: Document id (path relative to the corpus root, no suffix, ``/`` separators).
        title: Display title: the first heading when it is the only heading of the
            shallowest level (before ``tree.flatten_levels`` re-levels them), else the file
            stem.
        line_count: Number of lines of the normalised text.
        front_matter_end: Last line of YAML front matter, 0 when there is none.
        nodes: Nodes in document order (preamble first when present).

    """

    doc_id: str
    title: str
    line_count: int
    front_matter_end: int
    nodes: tuple[Node, ...]
    _by_id: dict[str, Node] = field(default_factory=dict, repr=False, compare=False)
    _children: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id = {n.node_id: n for n in self.nodes}
        children: dict[str, list[str]] = {}
        for n in self.nodes:
            if n.parent_id:
                children.setdefault(n.parent_id, []).append(n.node_id)
        self._by_id.update(by_id)
        self._children.update({k: tuple(v) for k, v in children.items()})

    @property
    def has_headings(self) -> bool:
        """True when at least one heading node exists (else the window fallback applies)."""
        return any(n.kind == "heading" for n in self.nodes)

    def node(self, node_id: str) -> Node:
        """Return the node with this id; raises KeyError if there is none."""
        return self._by_id[node_id]

    def children(self, node_id: str) -> tuple[Node, ...]:
        """Direct children of a node, in document order."""
        return tuple(self._by_id[c] for c in self._children.get(node_id, ()))

    def ancestors(self, node_id: str) -> tuple[Node, ...]:
        """Ancestors from the root down to the parent (empty for a root)."""
        out: list[Node] = []
        pid = self._by_id[node_id].parent_id
        while pid:
            parent = self._by_id[pid]
            out.append(parent)
            pid = parent.parent_id
        return tuple(reversed(out))

    def title_path(self, node_id: str) -> tuple[str, ...]:
        """Titles from the root down to this node."""
        return tuple(a.title for a in self.ancestors(node_id)) + (self._by_id[node_id].title,)

    def walk(self) -> Iterator[Node]:
        """Nodes in document order."""
        return iter(self.nodes)

    def to_json(self) -> str:
        """Compact JSON of the nodes, as the registry stores a version's tree.

        One list per node, in the tree's order, its fields in the order of
        :data:`TREE_JSON_FIELDS` (lines 1-based, inclusive). The document's id, title, line
        count and front matter are not in it (the registry keeps them beside it).
        """
        return json.dumps([[getattr(n, f) for f in TREE_JSON_FIELDS] for n in self.nodes], ensure_ascii=False)

    @classmethod
    def from_json(cls, tree_json: str, doc_id: str, title: str, line_count: int) -> DocumentTree:
        """Rebuild a tree from :meth:`to_json`'s text (or :func:`tree_rows`' older forms).

        Args:
            tree_json: The stored rows; ``""`` for a store written before trees were stored.
            doc_id: Document id.
            title: The document's display title.
            line_count: Lines of its stored text.

        Returns:
            The tree (no nodes for an empty ``tree_json``; ``front_matter_end`` is not stored
            and reads 0).

        Raises:
            ValueError: If ``tree_json`` is not JSON.
        """
        nodes = tuple(
            Node(r["node_id"], r["title"], int(r["level"]), int(r["start_line"]), int(r["end_line"]),
                 int(r["body_start_line"]), int(r["body_end_line"]), r["parent_id"], r["kind"], int(r["md_level"]))
            for r in tree_rows(tree_json)
        )
        return cls(doc_id, title, line_count, 0, nodes)


#: Fields of one node in the stored tree JSON (:meth:`DocumentTree.to_json`), in order. Rows
#: written before ``kind`` (8 fields) and ``md_level`` (9) existed read ``"heading"`` and 0.
TREE_JSON_FIELDS = (
    "node_id",
    "title",
    "level",
    "start_line",
    "end_line",
    "body_start_line",
    "body_end_line",
    "parent_id",
    "kind",
    "md_level",
)


def tree_rows(tree_json: str) -> list[dict[str, Any]]:
    """Read the nodes of a stored tree as dicts keyed by :data:`TREE_JSON_FIELDS`.

    The one reader of the format: :meth:`DocumentTree.from_json`, the title index and the
    servers' tree views all read through it.

    Args:
        tree_json: :meth:`DocumentTree.to_json`'s rows, or a JSON list of objects with those
            keys; ``""`` reads as no nodes.

    Returns:
        One dict per node, in document order; a missing ``parent_id`` reads ``""`` (a root),
        ``kind`` ``"heading"``, ``level`` and ``md_level`` 0. Lines 1-based inclusive.

    Raises:
        ValueError: If ``tree_json`` is not JSON.
    """
    out = []
    for row in json.loads(tree_json or "[]"):
        node = dict(row) if isinstance(row, dict) else dict(zip(TREE_JSON_FIELDS, row, strict=False))
        node["parent_id"] = node.get("parent_id") or ""
        node.setdefault("kind", "heading")
        node.setdefault("level", 0)
        node.setdefault("md_level", 0)
        out.append(node)
    return out


def explain_headings(
    text: str, config: TreeConfig | None = None, *, lines: list[str] | None = None, paged: bool = False
) -> tuple[list[Heading], int, HeadingReport]:
    """Find the section headings of normalised markdown text and say what the modes did.

    markdown-it-py parses the text (:func:`proxypointer.tree.markdown.parse_blocks`); its
    top-level ATX and setext headings are the sections, and the converter-output modes that
    ``config`` switches on add, drop or re-level headings
    (:func:`proxypointer.tree.headings.apply_converter_modes`; with the defaults the converter
    rules run on documents that look converted from PDF, ``tree.converter_output: auto``).

    Args:
        text: Output of :func:`~proxypointer.lines.normalise_text`.
        config: Heading modes; None for the defaults (:class:`TreeConfig`).
        lines: ``split_lines(text)`` when the caller already has it.
        paged: The text came with page markers that its reader emptied (a PDF, or
            page-marked markdown as stored): it counts as converter output for
            ``tree.converter_output: auto``.

    Returns:
        ``(headings, front_matter_end, report)``: headings in line order, the last line of
        YAML front matter (0 when absent) and what the modes did.

    Note:
        A heading with an empty title (a bare ``#``) is not a section: it would add a
        nameless breadcrumb segment and re-parent what follows (shared case 04).

    """
    config = config or TreeConfig()
    tokens = parse_blocks(text)
    headings, front_matter_end = top_level_headings(tokens)
    lines = split_lines(text) if lines is None else lines
    headings, report = apply_converter_modes(lines, tokens, headings, config, front_matter_end, paged=paged)
    return headings, front_matter_end, report


def find_headings(
    text: str, config: TreeConfig | None = None, *, lines: list[str] | None = None
) -> tuple[list[Heading], int]:
    """Find the section headings of normalised markdown text (:func:`explain_headings`).

    Args:
        text: Output of :func:`~proxypointer.lines.normalise_text`.
        config: Heading modes; None for the defaults (:class:`TreeConfig`).
        lines: ``split_lines(text)`` when the caller already has it.

    Returns:
        ``(headings, front_matter_end)``: headings in line order, and the last line of YAML
        front matter (0 when absent).

    """
    headings, front_matter_end, _ = explain_headings(text, config, lines=lines)
    return headings, front_matter_end


def _node_id(parent_id: str, title: str, ordinal: int) -> str:
    key = f"{parent_id}\x1f{title}\x1f{ordinal}".encode()
    return hashlib.sha1(key).hexdigest()[:12]


def _is_blank(lines: list[str], start: int, end: int) -> bool:
    return all(not lines[i - 1].strip() for i in range(start, end + 1))


def build_tree(
    text: str,
    doc_id: str,
    config: TreeConfig | None = None,
    *,
    lines: list[str] | None = None,
    paged: bool = False,
) -> DocumentTree:
    r"""Build the skeleton tree of one document.

    Args:
        text: Normalised markdown (see :func:`~proxypointer.lines.normalise_text`).
        doc_id: Document id; its last ``/`` segment is the stem used as fallback title.
        config: Tree options (converter-output modes).
        lines: ``split_lines(text)`` when the caller already has it.
        paged: The text came with page markers that its reader emptied (a PDF, or
            page-marked markdown as stored): it counts as converter output for
            ``tree.converter_output: auto``.

    Returns:
        The tree. A document without headings has no heading nodes (and no preamble): the
        chunker then covers it with sliding windows.

    Example:
        >>> t = build_tree("# A\n\ntext\n## B\nmore\n", "doc")
        >>> [(n.title, n.start_line, n.end_line, n.body_end_line) for n in t.nodes]
        [('A', 1, 5, 3), ('B', 4, 5, 5)]

    """
    lines = split_lines(text) if lines is None else lines
    n_lines = len(lines)
    headings, fm_end, report = explain_headings(text, config, lines=lines, paged=paged)
    stem = doc_id.rsplit("/", 1)[-1] or doc_id

    nodes: list[Node] = []
    if headings:
        first = headings[0].line
        if first - 1 > fm_end and not _is_blank(lines, fm_end + 1, first - 1):
            nodes.append(
                Node(PREAMBLE_ID, stem, 0, fm_end + 1, first - 1, fm_end + 1, first - 1, "",
                     "preamble", 0)
            )
    # One pass with a stack of open headings: a heading closes every open one of the same or a
    # deeper level (their end_line is the line before it); the rest end at the last line.
    stack: list[tuple[int, str, int]] = []  # (level, node_id, index into rows) still open
    rows: list[list[object]] = []
    seen: dict[tuple[str, str], int] = {}
    for idx, h in enumerate(headings):
        while stack and stack[-1][0] >= h.level:
            rows[stack.pop()[2]][4] = h.line - 1
        parent_id = stack[-1][1] if stack else ""
        ordinal = seen.get((parent_id, h.title), 0)
        seen[(parent_id, h.title)] = ordinal + 1
        node_id = _node_id(parent_id, h.title, ordinal)
        body_end = headings[idx + 1].line - 1 if idx + 1 < len(headings) else n_lines
        rows.append([node_id, h.title, h.level, h.line, n_lines, h.last_line + 1, body_end,
                     parent_id, "heading", h.md_level])
        stack.append((h.level, node_id, len(rows) - 1))
    nodes.extend(Node(*row) for row in rows)  # type: ignore[arg-type]

    heading_nodes = [n for n in nodes if n.kind == "heading"]
    title = stem
    if report.title_line:  # levels were flattened: the heading that named the document still does
        title = next(n.title for n in heading_nodes if n.start_line == report.title_line)
    elif heading_nodes:
        top = min(n.level for n in heading_nodes)
        tops = [n for n in heading_nodes if n.level == top]
        if len(tops) == 1 and tops[0] is heading_nodes[0]:
            title = tops[0].title
    if nodes and nodes[0].kind == "preamble":
        nodes[0] = Node(PREAMBLE_ID, title, 0, nodes[0].start_line, nodes[0].end_line,
                        nodes[0].body_start_line, nodes[0].body_end_line, "", "preamble", 0)
    return DocumentTree(doc_id=doc_id, title=title, line_count=n_lines, front_matter_end=fm_end,
                        nodes=tuple(nodes))

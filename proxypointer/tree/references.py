"""In-document cross-references: "see Appendix G", "Table 5.3", "Note 14", without an LLM.

Long reports answer many questions by pointing elsewhere. The skeleton tree already knows
every section's title, so a reference is followed by matching its *label* (kind + number,
e.g. ``("table", "A2.1.1")``) against labels taken from

1. heading titles that start with a kind and a number (``ANNEX TABLE A2.1.1 Studies ...``,
   ``Note 14 — Debt``, ``Appendix G: Statistical Tables``, ``Section 2.04 Swing Line Loans``);
2. caption lines in the body text (``Table 5.3: Revenue by segment``), which resolve to the
   section that contains them;
3. headings numbered without a kind word (``2.4 Results``, ``14. Debt``, ``G. Tables``), for
   structural kinds only (section, chapter, note, ...), never for tables or figures.

``Section "Experiments and results"`` (a quoted title) resolves to the heading with that title.
A reference whose label is in no heading and no caption stays unresolved (empty targets).

Nothing here reads Chroma or the embedder: the functions work on a
:class:`~proxypointer.tree.build.DocumentTree` and the lines it was built from, so retrieval can
rebuild the reference graph from the stored source text in milliseconds.

Lines are 1-based inclusive; columns are 0-based character offsets into the line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import TreeConfig
from ..lines import split_lines
from .build import DocumentTree, Node, build_tree
from .labels import (
    KINDS,
    LINE_LEAD,
    REFERENCE,
    LabelIndex,
    caption_label,
    find_label_in_query,
    is_contents_node,
    label_index,
    label_matches,
    node_spans,
    normalise_label,
    resolve,
)
from .markdown import code_lines
from .pages import PageMap, stored_page_map

if TYPE_CHECKING:
    pass

__all__ = [
    "KINDS",
    "DocumentReferences",
    "LabelIndex",
    "Reference",
    "detect_references",
    "find_label_in_query",
    "label_index",
    "normalise_label",
    "reference_graph",
    "reference_graph_json",
    "resolve",
]

logger = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class Reference:
    """One cross-reference found in a section's text.

    Attributes:
        source_node_id: Node whose own text holds the reference (``preamble`` before the
            first heading).
        line: Line of the reference, 1-based.
        column: Start of ``text`` in the line, 0-based character offset.
        kind: Canonical kind (see :data:`KINDS`); ``section`` etc. for a quoted title.
        label: The label as written (``A2.1.1``, ``14``, ``G``) or the quoted title.
        text: The matched span as written, e.g. ``Table 5.3`` or ``Sections 2.04 and 2.05``
            (a list yields one Reference per label, all with the same span).
        target_node_ids: Resolved target nodes, best first; empty when unresolved.

    """

    source_node_id: str
    line: int
    column: int
    kind: str
    label: str
    text: str
    target_node_ids: tuple[str, ...] = ()

    @property
    def resolved(self) -> bool:
        """True when at least one target node was found."""
        return bool(self.target_node_ids)



def detect_references(
    tree: DocumentTree, lines: list[str], index: LabelIndex | None = None
) -> list[Reference]:
    r"""Find and resolve every cross-reference in a document's section text.

    Heading lines are not scanned (a heading defines its label), nor fenced code, nor the
    label that opens a caption line. A capitalised kind word followed by a label is a
    reference wherever it stands (``Section 2.04``); a lower-case one needs a label with a
    digit (``table 3``) or a cue before it (``see appendix g``), so ``table`` as an ordinary
    word is never one.

    Args:
        tree: The document's skeleton tree.
        lines: ``split_lines`` of the text the tree was built from.
        index: Output of :func:`label_index`; built when not given.

    Returns:
        References in line order; a list (``Sections 2.04 and 2.05``) gives one per label.

    Example:
        >>> from proxypointer.tree.build import build_tree, split_lines
        >>> text = "# Intro\nSee Appendix G.\n# Appendix G: Tables\nrows\n"
        >>> refs = detect_references(build_tree(text, "d"), split_lines(text))
        >>> [(r.line, r.kind, r.label, r.resolved) for r in refs]
        [(2, 'appendix', 'G', True)]

    """
    index = index or label_index(tree, lines)
    code = code_lines(lines)
    out: list[Reference] = []
    cache: dict[tuple[str, str, bool], tuple[str, ...]] = {}
    for start, end, n in node_spans(tree):
        for i in range(start, min(end, len(lines)) + 1):
            if i in code:
                continue
            text = lines[i - 1]
            skip_to = -1
            if caption_label(text):
                lead = LINE_LEAD.match(text)
                first = REFERENCE.search(text, lead.end() if lead else 0)
                skip_to = first.start() if first else -1
            for col, span, kind, label, quoted in label_matches(text, strict=True):
                if col == skip_to:
                    continue
                key = (kind, label, quoted)
                if key not in cache:
                    cache[key] = resolve(kind, label, index, quoted=quoted)
                out.append(Reference(n.node_id, i, col, kind, label, span, cache[key]))
    out.sort(key=lambda r: (r.line, r.column))
    n_res = sum(r.resolved for r in out)
    logger.debug("%s: %d references, %d resolved", tree.doc_id, len(out), n_res)
    return out


def reference_graph(refs: Iterable[Reference]) -> dict[str, tuple[str, ...]]:
    """``source node id -> target node ids`` (distinct, in first-seen order, self excluded).

    Args:
        refs: Output of :func:`detect_references`.

    Returns:
        One entry per node with at least one resolved reference to another node.

    """
    graph: dict[str, list[str]] = {}
    for r in refs:
        for t in r.target_node_ids:
            if t == r.source_node_id:
                continue
            targets = graph.setdefault(r.source_node_id, [])
            if t not in targets:
                targets.append(t)
    return {k: tuple(v) for k, v in graph.items()}


def reference_graph_json(refs: Iterable[Reference]) -> dict[str, str]:
    """Scalar metadata form of :func:`reference_graph`: node id -> JSON list of node ids.

    Suitable for a Chroma metadata value (a ``str``); nodes without references are absent
    (store ``""`` for them).
    """
    return {k: json.dumps(list(v)) for k, v in reference_graph(refs).items()}


@dataclass(frozen=True, slots=True)
class DocumentReferences:
    """A document's tree, label index and references, rebuilt from its stored text.

    Attributes:
        tree: Skeleton tree (same node ids as at ingest, given the same tree config).
        lines: ``split_lines`` of the stored text.
        labels: Output of :func:`label_index`.
        references: Output of :func:`detect_references`, in line order.
        pages: Page map of the stored text, or None when it has no pages.

    """

    tree: DocumentTree
    lines: list[str]
    labels: LabelIndex
    references: tuple[Reference, ...]
    pages: PageMap | None = None

    @classmethod
    def build(
        cls, text: str, doc_id: str, tree_config: TreeConfig | None = None, line_pages: Sequence[int] | None = None
    ) -> DocumentReferences:
        """Build everything from normalised text (milliseconds for a 500 kB document).

        Args:
            text: The stored (normalised) text of one document version.
            doc_id: Its document id.
            tree_config: The tree options the index was built with (node ids depend on them).
            line_pages: Its stored page of each line (``registry.sources.load_pages``), or None.

        Returns:
            The document's references.

        """
        lines = split_lines(text)
        tree = build_tree(text, doc_id, tree_config, lines=lines, paged=line_pages is not None)
        labels = label_index(tree, lines)
        pages = stored_page_map(line_pages, lines) if line_pages is not None and len(line_pages) == len(lines) else None
        return cls(tree, lines, labels, tuple(detect_references(tree, lines, labels)), pages)

    def targets(
        self,
        start_line: int,
        end_line: int,
        roadmap_targets: int = 3,
        focus: tuple[int, int] | None = None,
    ) -> list[tuple[Reference, Node]]:
        """Nodes referenced from lines ``start_line..end_line`` (1-based, inclusive).

        References in a list of contents (the preamble, a "Contents" section) are not
        followed: every entry there is a reference.

        Args:
            start_line: First line, 1-based inclusive.
            end_line: Last line, 1-based inclusive.
            roadmap_targets: A line (a paragraph) whose references resolve to this many
                distinct nodes or more is an outline ("Section 2 describes ..., Section 3
                ..., Section 4 ...") and is not followed; 0 follows every line.
            focus: Lines ``(first, last)``, 1-based inclusive, that matched the query (the
                best chunk): references nearest to them come first.

        Returns:
            ``(reference, target node)`` pairs, each target once, in line order (by distance
            from ``focus`` when given); targets that overlap the range itself (the citing
            section, its ancestors or descendants) are left out.

        """
        per_line: dict[int, set[str]] = {}
        for r in self.references:
            if start_line <= r.line <= end_line:
                per_line.setdefault(r.line, set()).update(r.target_node_ids)
        refs = [r for r in self.references if start_line <= r.line <= end_line]
        if focus is not None:
            refs.sort(key=lambda r: max(focus[0] - r.line, r.line - focus[1], 0))
        out: list[tuple[Reference, Node]] = []
        seen: set[str] = set()
        for r in refs:
            if roadmap_targets and len(per_line[r.line]) >= roadmap_targets:
                continue
            if is_contents_node(self.tree.node(r.source_node_id)):
                continue
            for t in r.target_node_ids:
                node = self.tree.node(t)
                if t in seen or (node.start_line <= end_line and start_line <= node.end_line):
                    continue
                seen.add(t)
                out.append((r, node))
        return out

    def breadcrumb(self, node_id: str) -> tuple[str, ...]:
        """Titles from the document title down to a node (chunking's ``path`` breadcrumb)."""
        path = self.tree.title_path(node_id)
        if path and path[0] != self.tree.title:
            path = (self.tree.title, *path)
        return path

    def lookup(self, query: str) -> tuple[str, ...]:
        """Node ids named by a label in the query (see :func:`find_label_in_query`)."""
        return find_label_in_query(query, self.labels)

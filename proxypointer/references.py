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
:class:`~proxypointer.tree.DocumentTree` and the lines it was built from, so retrieval can
rebuild the reference graph from the stored source text in milliseconds.

Lines are 1-based inclusive; columns are 0-based character offsets into the line.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import TreeConfig
from .labels import (
    _LEAD,
    _REF,
    KINDS,
    LabelIndex,
    _caption_label,
    _code_lines,
    _is_contents,
    _matches,
    _owner,
    find_label_in_query,
    label_index,
    normalise_label,
    resolve,
)
from .pages import PageMap, stored_page_map
from .tree import DocumentTree, Node, build_tree, split_lines

if TYPE_CHECKING:
    from .context import ContextBlock
    from .retrieval import Retriever, Section

__all__ = [
    "KINDS",
    "DocumentReferences",
    "LabelIndex",
    "Reference",
    "ReferenceFollower",
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
        >>> from proxypointer.tree import build_tree, split_lines
        >>> text = "# Intro\nSee Appendix G.\n# Appendix G: Tables\nrows\n"
        >>> refs = detect_references(build_tree(text, "d"), split_lines(text))
        >>> [(r.line, r.kind, r.label, r.resolved) for r in refs]
        [(2, 'appendix', 'G', True)]

    """
    index = index or label_index(tree, lines)
    code = _code_lines(lines)
    out: list[Reference] = []
    cache: dict[tuple[str, str, bool], tuple[str, ...]] = {}
    for start, end, n in _owner(tree):
        for i in range(start, min(end, len(lines)) + 1):
            if i in code:
                continue
            text = lines[i - 1]
            skip_to = -1
            if _caption_label(text):
                lead = _LEAD.match(text)
                first = _REF.search(text, lead.end() if lead else 0)
                skip_to = first.start() if first else -1
            for col, span, kind, label, quoted in _matches(text, strict=True):
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
            if _is_contents(self.tree.node(r.source_node_id)):
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


class ReferenceFollower:
    """A layer over a :class:`~proxypointer.retrieval.Retriever` that follows cross-references.

    It looks up labels named in a query ("summarise Note 14") and adds the sections that
    retrieved sections cite ("see Appendix G"), resolved on the stored source by this module,
    without an LLM. The reference graph of a document version is rebuilt from its stored text
    in milliseconds and kept for the 32 versions used last (thread-safe: a lock guards it).

    Args:
        retriever: Where sections come from.

    Example:
        >>> follower = ReferenceFollower(Retriever(index))                       # doctest: +SKIP
        >>> for s in follower.retrieve("what does note 14 say about the term loan?", k=3):
        ...     print(s.citation, s.reached_via)
    """

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self._lock = threading.Lock()
        self._refs: OrderedDict[str, DocumentReferences] = OrderedDict()  # doc_hash -> references

    def references(self, doc_id: str) -> DocumentReferences | None:
        """Return the live version's references (cached per doc_hash); None for an unknown document."""
        index = self.retriever.index
        rec = index.registry.get(doc_id)
        if rec is None or not rec.doc_hash:
            return None
        with self._lock:
            refs = self._refs.get(rec.doc_hash)
            if refs is not None:
                self._refs.move_to_end(rec.doc_hash)
                return refs
        sources = index.registry.sources
        refs = DocumentReferences.build(
            sources.load(rec.doc_hash), doc_id, index.config.tree, sources.load_pages(rec.doc_hash)
        )
        with self._lock:
            self._refs[rec.doc_hash] = refs
            while len(self._refs) > 32:
                self._refs.popitem(last=False)
        return refs

    def retrieve(
        self,
        query: str,
        k: int | None = None,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
        budget_tokens: int | None = None,
        max_references: int | None = None,
        lookup_labels: bool = True,
        interleave: bool = False,
    ) -> list[Section]:
        """:meth:`Retriever.retrieve`, then follow the cross-references of the sections found.

        A question that names a label ("summarise Note 14", "annex table A2.1.1") first gets
        the section carrying that label in the best-ranked document, ahead of the other hits
        (``k`` sections in all). :meth:`add_references` then appends the sections they cite.

        Args:
            query: Question or keywords.
            k: Sections found by the query (default ``retrieval.k``, 5).
            where: Extra metadata filter.
            doc_ids: Only search these documents (an empty list: none).
            source_prefix: Only search documents whose doc_id starts with this prefix.
            budget_tokens: Context budget for all returned text, in word pieces of the
                embedding model's tokenizer (no special tokens); ``None``: no budget.
            max_references: Most referenced sections to add (default: ``k``).
            lookup_labels: Look up labels named in the query, when the retriever does not
                already (``retrieval.label_lookup``, on by default, puts the best chunk of a
                named section first; this lookup puts the named section itself first).
            interleave: Put each referenced section right after its citing section.

        Returns:
            The ``k`` sections (label matches first, ``reached_via="query"``, with the best
            section's scores), then the referenced sections (see :meth:`add_references`).

        Raises:
            ConfigError: If ``k`` < 1 or the query is empty.
            StaleSourceError: If a stored source is missing.
        """
        k = self.retriever.config.k if k is None else k
        found = self.retriever.retrieve(query, k, where, doc_ids=doc_ids, source_prefix=source_prefix)
        if lookup_labels and found and not self.retriever.config.label_lookup:
            for doc_id in dict.fromkeys(s.doc_id for s in found):
                refs = self.references(doc_id)
                named = refs.lookup(query) if refs is not None else ()
                if named:
                    src = next(s.source for s in found if s.doc_id == doc_id)
                    top = found[0]
                    first = [
                        self._node_section(doc_id, refs, refs.tree.node(n), src, top.score, top.rank_score, "query")
                        for n in named[:k]
                    ]
                    keys = {(doc_id, s.node_id) for s in first}
                    found = (first + [s for s in found if (s.doc_id, s.node_id) not in keys])[:k]
                    break
        return self.add_references(found, budget_tokens, max_references, interleave=interleave)

    def add_references(
        self,
        sections: Sequence[Section],
        budget_tokens: int | None = None,
        max_references: int | None = None,
        *,
        interleave: bool = False,
        per_section: int = 2,
    ) -> list[Section]:
        """Add the sections that the given sections cite ("see Note 14"), best citer first.

        Args:
            sections: Output of :meth:`Retriever.retrieve`, best first.
            budget_tokens: Context budget for all text, in word pieces (no special tokens): the
                given sections' whole texts count first; a referenced section is added only
                when it fits whole. ``None``: no budget.
            max_references: Most sections to add (default: ``len(sections)``).
            interleave: Put each referenced section right after its citing section (the order
                a reader follows the trail; a budget cut then drops the lowest-ranked hits
                first) instead of after all of ``sections``.
            per_section: Most sections added for one citing section: the references nearest
                to its best-matching chunk (``chunk_start_line..chunk_end_line``) win.

        Returns:
            ``sections`` in their order, then (or, with ``interleave``, each after its citing
            section) the referenced sections in the order of their citing section and of the
            references in it, each once, none overlapping a section already there; each has
            the citing section's ``score`` and ``rank_score`` and ``reached_via`` set to
            ``<citing breadcrumb> (L<start>-L<end>)``.
        """
        tok = self.retriever.index.embedder.tokenizer
        used = sum(tok.count(s.text) for s in sections) if budget_tokens is not None else 0
        items = [(s, s.start_line, s.end_line) for s in sections]
        added = self._follow(items, used, budget_tokens, max_references, per_section)
        extra = [[sec for sec, _ in group] for group in added]
        if interleave:
            return [x for s, more in zip(sections, extra, strict=True) for x in (s, *more)]
        return [*sections, *(x for more in extra for x in more)]

    def add_to_blocks(
        self,
        blocks: Sequence[ContextBlock],
        budget_tokens: int | None = None,
        max_references: int | None = None,
        *,
        interleave: bool = False,
        per_section: int = 2,
    ) -> list[ContextBlock]:
        """Like :meth:`add_references`, for the blocks of :meth:`Assembler.assemble`.

        Only the lines a block delivers are read for references; the given blocks' ``tokens``
        count first against ``budget_tokens``, and each referenced section is added as one
        block of its delivered text (the whole section, or its own text and outline when big).

        Returns:
            ``blocks``, then (or interleaved) one block per referenced section.
        """
        from .context import ContextBlock

        used = sum(b.tokens for b in blocks)
        items = [(b.section, b.start_line, b.end_line) for b in blocks]
        added = self._follow(items, used, budget_tokens, max_references, per_section)
        extra = [[ContextBlock(s, s.text_start_line, s.text_end_line, s.text, n, s.page_start, s.page_end, s.outline)
                  for s, n in group] for group in added]
        if interleave:
            return [x for b, more in zip(blocks, extra, strict=True) for x in (b, *more)]
        return [*blocks, *(x for more in extra for x in more)]

    def _follow(
        self,
        items: Sequence[tuple[Section, int, int]],
        used: int,
        budget_tokens: int | None,
        max_references: int | None,
        per_section: int,
    ) -> list[list[tuple[Section, int]]]:
        """Referenced sections (with their tokens) per ``(section, first line read, last line read)``."""
        max_refs = len(items) if max_references is None else max_references
        tok = self.retriever.index.embedder.tokenizer
        spans: dict[str, list[tuple[int, int]]] = {}
        for s, _, _ in items:
            spans.setdefault(s.doc_id, []).append((s.start_line, s.end_line))
        added: list[list[tuple[Section, int]]] = [[] for _ in items]
        n_added = 0
        for i, (s, lo, hi) in enumerate(items):
            refs = self.references(s.doc_id) if s.kind != "window" else None
            if refs is None:
                continue
            for _ref, node in refs.targets(lo, hi, focus=(s.chunk_start_line, s.chunk_end_line)):
                if n_added >= max_refs or len(added[i]) >= per_section:
                    break
                if any(node.start_line <= e and b <= node.end_line for b, e in spans[s.doc_id]):
                    continue
                via = f"{' > '.join(s.breadcrumb)} (L{s.start_line}-L{s.end_line})"
                new = self._node_section(s.doc_id, refs, node, s.source, s.score, s.rank_score, via)
                n_tok = tok.count(new.text)
                if budget_tokens is not None and used + n_tok > budget_tokens:
                    continue
                used += n_tok
                spans[s.doc_id].append((node.start_line, node.end_line))
                added[i].append((new, n_tok))
                n_added += 1
        return added


    def _node_section(
        self, doc_id: str, refs: DocumentReferences, node: Node, source: str, score: float, rank_score: float,
        via: str,
    ) -> Section:
        """Build the section of a tree node reached by a reference or a label (no chunk).

        Delivered by the retriever's policy (``retrieval.subtree_cap_tokens``): a big
        referenced section comes as its own text and an outline of its children.
        """
        from .retrieval import build_section

        rec = self.retriever.index.registry.get(doc_id)
        delivery = None
        if rec is not None and rec.doc_hash and self.retriever.config.subtree_cap_tokens > 0:
            delivery = self.retriever.deliver(rec.doc_hash, doc_id, source, node.start_line, node.end_line,
                                              node.body_end_line, refs.tree.children(node.node_id))
        return build_section(
            doc_id=doc_id,
            node_id=node.node_id,
            title=node.title,
            breadcrumb=refs.breadcrumb(node.node_id),
            kind=node.kind,
            level=node.level,
            start_line=node.start_line,
            end_line=node.end_line,
            lines=refs.lines,
            source=source,
            score=score,
            rank_score=rank_score,
            reached_via=via,
            delivery=delivery,
            tokenizer=self.retriever.index.embedder.tokenizer,
            pages=refs.pages,
        )

"""Following cross-references at query time: a retrieved section's references, added as sections.

The parsing half (what a reference is, a document's reference graph) is
:mod:`proxypointer.tree.references`; this module follows it from retrieved sections.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._lru import LRU
from ..tree.build import Node
from ..tree.references import DocumentReferences

if TYPE_CHECKING:
    from .context import ContextBlock
    from .retriever import Retriever, Section

logger = logging.getLogger(__name__)

__all__ = ["ReferenceFollower"]


class ReferenceFollower:
    """A layer over a :class:`~proxypointer.retrieve.retriever.Retriever` that follows cross-references.

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
        self._refs: LRU[str, DocumentReferences] = LRU(32)  # doc_hash -> references

    def references(self, doc_id: str) -> DocumentReferences | None:
        """Return the live version's references (cached per doc_hash); None for an unknown document."""
        index = self.retriever.index
        rec = index.registry.get(doc_id)
        if rec is None or not rec.doc_hash:
            return None
        refs = self._refs.get(rec.doc_hash)
        if refs is not None:
            return refs
        sources = index.registry.sources
        refs = DocumentReferences.build(
            sources.load(rec.doc_hash), doc_id, index.config.tree, sources.load_pages(rec.doc_hash)
        )
        self._refs.put(rec.doc_hash, refs)
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
        from .retriever import build_section

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

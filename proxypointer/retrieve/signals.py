"""Section signals: sections a query finds by their titles, names by a label, or implies.

Each signal finds *sections*, and a section enters a chunk ranking through one chunk of its
subtree: the best-ranked one among the hits, else the one with the highest cosine similarity
to the query (a section's best chunk lies anywhere in its subtree). Used by
:class:`~proxypointer.retrieve.ranking.Ranker`:

* **title field** (:meth:`SectionSignals.titles`, ``retrieval.title_weight``): BM25 over each
  heading's title path, one more fused ranking;
* **labels** (:meth:`SectionSignals.label_first`, ``retrieval.label_lookup``): "Note 14",
  "box 1.1", "Item 7A" put their sections first;
* **implied sections** (:meth:`SectionSignals.implied_sections`, ``retrieval.implied_rank``):
  the statements a measure reads, the sections a form prescribes for a topic.

Scores are higher-is-better: BM25 for the title field, cosine similarity to choose chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..store.chroma import Hit
from ..store.terms import lexical_terms
from ..tree.labels import mentions_label
from .hits import LiveHits, filter_docs, id_hit
from .implied import statements_for_measures, topics_in_query

if TYPE_CHECKING:
    from ..config import RetrievalConfig
    from ..store.folder import StoreView
    from .dense import DenseSearch
    from .labels import LabelLookup
    from .live import LiveTrees

__all__ = ["LABEL_TARGETS", "SUBTREE_SCORED_CHUNKS", "SectionSignals"]

#: Most chunk vectors one query reads to find the best chunk of the sections its title search
#: and label lookup found (a section's best chunk lies anywhere in its subtree). Reading a
#: stored vector costs about 0.05 ms here (1,434 in 69 ms from a 40k-chunk store), so this
#: bounds that step to ~100 ms; sections whose subtrees would pass it are represented by the
#: chunks whose cosine the dense search already knows, or left out.
SUBTREE_SCORED_CHUNKS = 2000

#: Most sections a query's labels put first ("compare Note 14 and Note 15": both), as measured
#: by the research lab (``references`` lookup, ``named[:2]``).
LABEL_TARGETS = 2


class SectionSignals:
    """Find the sections a query points at (title field, labels, implied sections) as chunk hits.

    Thread-safe: its caches are the stored trees and label indexes it is given (bounded and
    locked); the registry is used as the store allows.

    Args:
        store: The store read (its registry's title index and live versions, looked up on
            each call).
        config: The retrieval settings (``implied_rank``).
        trees: Stored trees of live document versions (subtrees and their chunks).
        labels: Label indexes of live document versions.
        dense: Scores stored chunk vectors (:meth:`~proxypointer.retrieve.dense.DenseSearch.cosines`).
        hits: Checks hits against a filter (:meth:`~proxypointer.retrieve.hits.LiveHits.matching`).
    """

    def __init__(
        self, store: StoreView, config: RetrievalConfig, trees: LiveTrees, labels: LabelLookup, dense: DenseSearch,
        hits: LiveHits,
    ) -> None:
        self.store = store
        self.config = config
        self.trees = trees
        self.labels = labels
        self.dense = dense
        self.hits = hits

    # -- title field ------------------------------------------------------------------------
    def titles(
        self, query: str, n: int, where: dict[str, Any] | None, vectors: np.ndarray, cosine: dict[str, float]
    ) -> list[Hit]:
        """Chunk hits of the sections whose titles match the query, best title first.

        The registry's title index (BM25 over each heading's title path, Porter-stemmed:
        :meth:`~proxypointer.store.lexical.LexicalIndex.title_search`) ranks sections; each found section
        contributes its best chunk by cosine similarity, anywhere in its subtree (the subtree's
        chunk ids come with the title row; only rows written by an older version read the
        document's tree), so a question
        that names "the balance sheet" reaches the statement under that title whatever words its
        rows use. Measured by the research lab as ``q-tlex-stem`` (docs/evaluation.md, "Ideas
        measured": the only ranking idea that helped on all three dev sets).

        Args:
            query: Question or keywords (:func:`lexical_terms`).
            n: Hits wanted; up to ``4 * n`` titles are read (a section and its subsection may
                give the same chunk).
            where: Metadata filter; as in :meth:`~proxypointer.retrieve.ranking.Ranker.lexical`.
            vectors: The query vectors (:meth:`~proxypointer.retrieve.dense.DenseSearch.query_vectors`).
            cosine: ``chunk_id -> cosine`` known so far; the chunks scored here are added.

        Returns:
            Hits without text, ``score`` = the title's BM25 score (higher is better), distinct
            chunks.
        """
        terms = lexical_terms(query)
        if not terms:
            return []
        doc_ids, exact = filter_docs(where)
        found = self.store.registry.lexical.title_search(terms, 4 * n, doc_ids)
        budget = [SUBTREE_SCORED_CHUNKS]
        out: list[Hit] = []
        seen: set[str] = set()
        for i in range(0, len(found), max(n, 1)):
            groups = []
            for hit in found[i : i + max(n, 1)]:
                if hit.chunk_ids is not None:  # kept with the row: no tree to read
                    groups.append((hit.score, hit.chunk_ids))
                elif (live := self.trees.get(hit.doc_id, hit.version)) is not None:
                    groups.append((hit.score, live.subtree_chunks(hit.node_id)))
            for score, best in zip((g[0] for g in groups), self.best_chunks([g[1] for g in groups], vectors, cosine,
                                                                              budget), strict=True):
                if best is not None and best not in seen:
                    seen.add(best)
                    out.append(id_hit(best, score))
            if len(out) >= n:
                break
        return out[:n] if exact else self.hits.matching(out, where)[:n]

    def best_chunks(
        self, groups: Sequence[Sequence[str]], vectors: np.ndarray, cosine: dict[str, float], budget: list[int]
    ) -> list[str | None]:
        """Pick the chunk of each group with the highest cosine similarity (None for a group left out).

        Vectors not yet in ``cosine`` are read in one batch while ``budget[0]`` chunks are left
        (:data:`SUBTREE_SCORED_CHUNKS`); a group that would pass it is scored by the chunks
        already known. ``cosine`` gains every chunk scored, and ``budget[0]`` loses them.

        Args:
            groups: Chunk ids per section (its subtree's live chunks).
            vectors: The query vectors, float32 ``(n_windows, dim)``.
            cosine: ``chunk_id -> cosine`` known so far.
            budget: One-item list: chunk vectors that may still be read.

        Returns:
            One chunk id per group, or None.
        """
        todo: list[str] = []
        wanted: set[str] = set()
        usable: list[Sequence[str]] = []
        for ids in groups:
            new = [c for c in ids if c not in cosine and c not in wanted]
            if len(new) <= budget[0]:
                budget[0] -= len(new)
                wanted.update(new)
                todo.extend(new)
                usable.append(ids)
            else:
                usable.append([c for c in ids if c in cosine])
        if todo:
            cosine.update(self.dense.cosines(todo, vectors))
        out: list[str | None] = []
        for ids in usable:
            scored = [c for c in ids if c in cosine]
            out.append(max(scored, key=cosine.__getitem__) if scored else None)
        return out

    # -- labels -----------------------------------------------------------------------------
    def label_first(
        self, query: str, hits: list[Hit], where: dict[str, Any] | None, vectors: np.ndarray,
        cosine: dict[str, float], docs: int = 3, prefer: Sequence[str] = (),
    ) -> tuple[list[Hit], tuple[str, ...]]:
        """Put first the sections a label in the query names ("Note 14", "box 1.1", "Item 7A").

        The label is looked up (:class:`~proxypointer.retrieve.labels.LabelLookup`) in the documents
        of the best-ranked hits, in rank order (at most ``docs`` of them), or, when the query
        names documents (``prefer``), in those only; in the first that
        defines it, each named section (at most :data:`LABEL_TARGETS`) contributes one chunk
        of its subtree, ahead of every other hit: the best-ranked one among ``hits`` (so "the
        questions answered by chapter 2" reaches the chapter's Questions subsection, which the
        title ranking matched), else the one with the highest cosine similarity. A query that
        names no label costs one regular-expression test.

        Args:
            query: The query as searched.
            hits: The fused hits, best first.
            where: Metadata filter (a labelled chunk must match it).
            vectors: The query vectors.
            cosine: Known cosines; the chunks scored here are added.
            docs: Most documents looked up.
            prefer: Doc ids the query names (:attr:`~proxypointer.retrieve.routing.Route.prefer`): a
                label found in another document must not outrank them (issue 32: Best Buy's
                balance sheet asked for, Amcor's given).

        Returns:
            ``(hits, labelled)``: the hits with the labelled chunks first (score = the best
            hit's + 1, minus 0.01 per place), and those chunk ids; ``(hits, ())`` unchanged when
            no label resolves.
        """
        if not hits or not mentions_label(query):
            return hits, ()
        lead = self.named_chunks(hits, where, vectors, cosine, docs,
                                 lambda key: self.labels.named(query, *key)[:LABEL_TARGETS], prefer)
        if not lead:
            return hits, ()
        top = hits[0].score
        lead = [replace(x, score=top + 1.0 - 0.01 * i) for i, x in enumerate(lead)]
        ids = {x.chunk_id for x in lead}
        return lead + [x for x in hits if x.chunk_id not in ids], tuple(x.chunk_id for x in lead)

    def implied_sections(
        self, query: str, hits: list[Hit], where: dict[str, Any] | None, vectors: np.ndarray,
        cosine: dict[str, float], docs: int = 1, prefer: Sequence[str] = (),
    ) -> tuple[list[Hit], tuple[str, ...]]:
        """Find the sections a query implies without naming them, to be placed among the first sections.

        "Is Verizon a capital-intensive business?" names no statement, yet its figures are rows
        of the cash flow statement and the balance sheet; "Has PepsiCo any ongoing legal
        battles?" is answered where the form puts litigation, "Legal Proceedings"
        (:mod:`proxypointer.retrieve.implied`). In the document of the best hit (at most ``docs``
        documents tried, in rank order; only those the query names when it names some,
        ``prefer``), each such section
        (:meth:`~proxypointer.retrieve.labels.LabelLookup.implied`) contributes one chunk (chosen as in
        :meth:`label_first`). The retriever places their sections after the first
        ``retrieval.implied_rank`` sections (:func:`~proxypointer.retrieve.ranking.place_sections`;
        0: first).

        Args:
            query: The query as searched.
            hits: The ranked hits, best first.
            where: Metadata filter (a placed chunk must match it).
            vectors: The query vectors.
            cosine: Known cosines; the chunks scored here are added.
            docs: Most documents looked up.
            prefer: Doc ids the query names (as for :meth:`label_first`).

        Returns:
            ``(hits, placed)``: the hits, with the implied sections' chunks that were not among
            them added at the end (score 0), or with ``implied_rank`` 0 all of them first
            (scored as :meth:`label_first` scores, so that chunk-ordered delivery follows), and
            those chunks' ids in order; ``(hits, ())``
            when the query implies no section or the document has none of them.
        """
        if not hits or not (statements_for_measures(query) or topics_in_query(query)):
            return hits, ()
        found = self.named_chunks(hits, where, vectors, cosine, docs,
                                  lambda key: self.labels.implied(query, *key), prefer)
        if not found:
            return hits, ()
        ids = tuple(x.chunk_id for x in found)
        if self.config.implied_rank == 0:  # first, scored as label_first scores: the assembler follows
            top = hits[0].score
            lead = [replace(x, score=top + 1.0 - 0.01 * i) for i, x in enumerate(found)]
            return lead + [x for x in hits if x.chunk_id not in set(ids)], ids
        have = {h.chunk_id for h in hits}
        return hits + [x for x in found if x.chunk_id not in have], ids

    def named_chunks(
        self, hits: list[Hit], where: dict[str, Any] | None, vectors: np.ndarray, cosine: dict[str, float],
        docs: int, named_in: Callable[[tuple[str, str]], Sequence[str]], prefer: Sequence[str] = (),
    ) -> list[Hit]:
        """One chunk per section that ``named_in((doc_id, version))`` names, in the first document that names any.

        Documents are tried in the order of their best hit (at most ``docs``); with ``prefer``,
        only those documents, the ones without a hit after the others. A section's
        chunk is its subtree's best-ranked one among ``hits``, else the one with the highest
        cosine similarity (:meth:`best_chunks`); chunks not matching ``where`` are dropped.

        Returns:
            Hits without text, score 0.
        """
        order = list(dict.fromkeys((h.metadata.get("doc_id", ""), h.metadata.get("version", "")) for h in hits))
        if prefer:
            wanted = set(prefer)
            order = [key for key in order if key[0] in wanted]
            seen = {d for d, _ in order}
            versions = self.store.registry.live_versions(d for d in prefer if d not in seen)
            order += [(d, versions[d][0]) for d in prefer if d not in seen and d in versions]
        for key in order[:docs]:
            named = named_in(key)
            live = self.trees.get(*key) if named else None
            if live is None:
                continue
            groups = [live.subtree_chunks(node) for node in named]
            ranked = [next((x.chunk_id for x in hits if x.chunk_id in set(g)), None) for g in groups]
            unranked = [g if r is None else [] for g, r in zip(groups, ranked, strict=True)]
            scored = self.best_chunks(unranked, vectors, cosine, [SUBTREE_SCORED_CHUNKS])
            best = [r or c for r, c in zip(ranked, scored, strict=True) if r or c]
            lead = self.hits.matching([id_hit(c, 0.0) for c in dict.fromkeys(best)], where)
            if lead:
                return lead
        return []

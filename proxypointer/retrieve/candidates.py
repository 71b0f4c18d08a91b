"""Candidate sections of a query: rank chunks -> score sections -> place -> merge nested -> demote empty.

The one path from a routed query to its ranked sections, used by the
:class:`~proxypointer.retrieve.retriever.Retriever` (which over-fetches until ``k`` sections are
found, :meth:`Candidates.find`) and by the :class:`~proxypointer.retrieve.context.Assembler`
(which ranks once, :meth:`Candidates.ranked`). Sections are distinct (doc_id, node_id); scores
are higher-is-better (:func:`~proxypointer.retrieve.ranking.score_sections`); lines are 1-based
inclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..store.chroma import Hit
from .exhibits import asks_for_exhibit
from .ranking import Ranker, Ranking, Route, demoted, place_sections, score_sections

if TYPE_CHECKING:
    from ..config import RetrievalConfig
    from ..store.folder import StoreView
    from .live import LiveTrees

__all__ = ["Candidate", "Candidates", "RankedSections"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One ranked section.

    Attributes:
        section: Its pointer hit: the chunk whose metadata gives the section (its best-ranked
            chunk, or, after a nested merge, a chunk of the enclosing section).
        chunk: Its best-ranked chunk (lies inside the section).
        rank_score: The section score it was ordered by (higher is better).
        ranking: The ranking it came from (cosines, query vectors, labelled chunks).
        group: Its chunk hits, best first.
    """

    section: Hit
    chunk: Hit
    rank_score: float
    ranking: Ranking
    group: tuple[Hit, ...] = ()


@dataclass(frozen=True, slots=True)
class RankedSections:
    """The sections of one ranking, in order (see :meth:`Candidates.ranked`).

    Attributes:
        ranking: The chunk ranking they were scored from.
        candidates: The sections, best first (with ``demote_empty``, those known to have text
            first).
        with_text: How many of the first are known to have text (all of them without
            ``demote_empty``).
    """

    ranking: Ranking
    candidates: list[Candidate]
    with_text: int


class Candidates:
    """Rank a routed query's sections, over-fetching until ``k`` are found.

    Thread-safe: it keeps no state (the ranker's and the trees' caches are bounded and locked).

    Args:
        ranker: Ranks chunks and reads their records (:meth:`Ranker.rank`, :meth:`Ranker.hydrate`).
        config: The retrieval settings (``overfetch``, ``section_scoring``, ``section_top_n``,
            ``rrf_k``, ``implied_rank``, ``nested``, ``demote_empty``).
        trees: Stored trees of live document versions (section extents for ``nested: merge``).
        store: The store searched (its Chroma collection counts the chunks left to over-fetch).
    """

    def __init__(self, ranker: Ranker, config: RetrievalConfig, trees: LiveTrees, store: StoreView) -> None:
        self.ranker = ranker
        self.config = config
        self.trees = trees
        self.store = store

    def ranked(
        self, route: Route, n: int, k: int | None = None, *, merge: bool = False, hydrate: bool = False
    ) -> RankedSections:
        """Rank once, score and place the sections, merge nested ones, demote breadcrumb-only ones.

        Args:
            route: The routed query (:meth:`Ranker.route`).
            n: Hits fetched per ranking (the over-fetch).
            k: Sections wanted: with ``demote_empty``, records are read ``k`` sections at a
                time until ``k`` with text are known (:meth:`demote_empty`); None: every
                section is checked.
            merge: Merge nested sections (``retrieval.nested: merge``, :meth:`merge_nested`)
                before demoting.
            hydrate: Read every hit's record before scoring (hits whose records are gone are
                dropped); the sections' hits then carry their text and metadata.

        Returns:
            The ranking and its sections (``section_scoring``, then the implied sections placed
            after the first ``implied_rank``, :func:`~proxypointer.retrieve.ranking.place_sections`).
        """
        cfg = self.config
        ranking = self.ranker.rank(route, n)
        hits = self.ranker.hydrate(ranking.hits) if hydrate else ranking.hits
        scored = score_sections(hits, cfg.section_scoring, cfg.section_top_n, cfg.rrf_k)
        scored = place_sections(scored, ranking.placed, cfg.implied_rank)
        found = [Candidate(group[0], group[0], score, ranking, tuple(group)) for score, group in scored]
        if merge:
            found = self.merge_nested(found)
        with_text = len(found)
        if cfg.demote_empty or cfg.demote_exhibits:
            labelled = {*ranking.labelled, *ranking.placed}
            found, with_text = self.demote_empty(found, len(found) if k is None else k, labelled, route.query)
        return RankedSections(ranking, found, with_text)

    def find(self, route: Route, k: int) -> list[Candidate]:
        """Rank chunks, score sections, over-fetch more until ``k`` are found or none are left.

        The one over-fetch loop of every scoring mode (dense or hybrid, max, sum or rrf, routed,
        nested keep or merge). With ``demote_empty``, sections whose only chunk is
        breadcrumb-only go after the others, and the loop goes on until ``k`` sections with
        text are found.

        Ids first: ranking and grouping use the pointers carried by chunk ids; records are read
        for the winners only (docs/benchmarks.md, query latency).

        Args:
            route: The routed query.
            k: Sections wanted.

        Returns:
            At most ``k`` sections, best first.
        """
        cfg = self.config
        n = max(cfg.overfetch, 3 * k)
        total = -1  # counted only when the first over-fetch falls short (a Chroma call saved)
        while True:
            got = self.ranked(route, n, k, merge=cfg.nested == "merge")
            if got.with_text >= k:
                return got.candidates[:k]
            total = self.store.store.count() if total < 0 else total
            if n >= total:
                return got.candidates[:k]
            n *= 2

    def fill(self, first: list[Candidate], more: list[Candidate], k: int) -> list[Candidate]:
        """Add sections of ``more`` that ``first`` lacks after it, up to ``k`` (merged when nested: merge)."""
        keys = {_key(c.section) for c in first}
        out = first + [c for c in more if _key(c.section) not in keys]
        return (self.merge_nested(out) if self.config.nested == "merge" else out)[:k]

    def demote_empty(
        self, found: list[Candidate], k: int, labelled: set[str], query: str
    ) -> tuple[list[Candidate], int]:
        """Move sections whose best chunk is breadcrumb-only (``empty_body``) after the others.

        Reads the records of the candidates in rank order, ``k`` at a time, until ``k`` with
        text are known (the rest keep their order behind them). A section named by a label in
        the query (its chunk in ``labelled``), or whose own title answers the query
        (:func:`~proxypointer.store.terms.title_answers`), stays where it is. With
        ``demote_exhibits``, sections of a filing's non-disclosure exhibits go with them
        (:meth:`in_exhibit`); without ``demote_empty``, only those.

        Returns:
            ``(candidates, known with text)``: those with text first.
        """
        text: list[Candidate] = []
        empty: list[Candidate] = []
        i = 0
        while i < len(found) and len(text) < k:
            batch = found[i : i + k]
            i += k
            full = {h.chunk_id: h for h in self.ranker.hydrate([c.section for c in batch])}
            for c in batch:
                h = full.get(c.section.chunk_id)
                if h is None:  # gone meanwhile: building its section raises StaleSourceError and searches again
                    text.append(c)
                    continue
                c = replace(c, section=h, chunk=h if c.chunk.chunk_id == h.chunk_id else c.chunk)
                if (self.config.demote_empty and demoted(h, labelled, query)) or self.in_exhibit(h, labelled, query):
                    empty.append(c)
                else:
                    text.append(c)
        return text + empty + found[i:], len(text)

    def in_exhibit(self, hit: Hit, labelled: set[str], query: str) -> bool:
        """Whether a section lies in a filing's exhibit the query does not ask for (``demote_exhibits``)."""
        if not self.config.demote_exhibits or hit.chunk_id in labelled:
            return False
        m = hit.metadata
        live = self.trees.get(m.get("doc_id", ""), m.get("version", ""))
        head = live.exhibit_head(m.get("node_id", "")) if live is not None else None
        if live is None or head is None:
            return False
        return not asks_for_exhibit(query, head.title, str(m.get("title", "")), f"{live.doc_id} {live.tree.title}")

    # -- nested sections ----------------------------------------------------------------------
    def merge_nested(self, found: list[Candidate]) -> list[Candidate]:
        """Merge ranked sections that nest (``retrieval.nested: merge``), keeping rank order.

        A section inside one already taken is dropped; a section enclosing taken ones takes the
        place of the first of them (its rank score and its best chunk, which lies inside the
        enclosing section) and the others are dropped. Sections of unknown extent, and sections
        spanning more than half of their document, stay as ranked and neither absorb nor are
        absorbed.
        """
        out: list[Candidate] = []
        spans: list[tuple[str, int, int] | None] = []
        for c in found:
            span = self._span(c.section)
            if span is None:
                out.append(c)
                spans.append(None)
                continue
            if any(o is not None and _encloses(o, span) for o in spans):
                continue
            inside = [i for i, o in enumerate(spans) if o is not None and _encloses(span, o)]
            if inside:
                first = inside[0]
                taken = out[first]
                out[first], spans[first] = Candidate(c.section, taken.chunk, taken.rank_score, taken.ranking), span
                drop = set(inside[1:])
                out = [x for i, x in enumerate(out) if i not in drop]
                spans = [x for i, x in enumerate(spans) if i not in drop]
                continue
            out.append(c)
            spans.append(span)
        return out

    def _span(self, hit: Hit) -> tuple[str, int, int] | None:
        """Return ``(doc_id, start_line, end_line)`` of a hit's whole section, from the stored tree.

        ``None`` when unknown (a fallback window, a version no longer live) or broad (more than
        half of the document's lines).
        """
        m = hit.metadata
        live = self.trees.get(m.get("doc_id", ""), m.get("version", ""))
        node = live.node(m.get("node_id", "")) if live is not None else None
        if node is None:
            return None
        n_lines = max((n.end_line for n in live.tree.nodes), default=0)
        if node.end_line - node.start_line + 1 > n_lines / 2:
            return None
        return live.doc_id, node.start_line, node.end_line


def _key(hit: Hit) -> tuple[str, str]:
    return hit.metadata["doc_id"], hit.metadata["node_id"]


def _encloses(outer: tuple[str, int, int], inner: tuple[str, int, int]) -> bool:
    """Whether a ``(doc_id, start_line, end_line)`` range contains another one."""
    return outer[0] == inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2]

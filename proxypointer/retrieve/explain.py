"""Why each section ranked: what fusion saw for it (dense, lexical, title, routing, labels).

A layer on top of retrieval, read-only: :class:`Explainer` routes and ranks the query again
the way :meth:`~proxypointer.retrieve.candidates.Candidates.find` first does (``n`` =
``max(retrieval.overfetch, 3 * k)`` chunks per ranking) and reports, for each section that
:meth:`~proxypointer.retrieve.retriever.Retriever.retrieve` returned, where its first chunk
stood in each ranking fused (:class:`~proxypointer.retrieve.ranking.RankingPart`). It never
changes what is ranked nor how: the same routing, the same rankings, read twice.

A chunk counts for a section when it lies in the section's subtree (a section merged with its
subsections, ``retrieval.nested: merge``, is reached through their chunks). Ranks are 1-based
positions in a ranking's chunk list; scores are higher-is-better (cosine similarity for dense
rankings, BM25 for lexical and title rankings, RRF for the fused one).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..store.chroma import Hit
from .ranking import demoted, score_sections

if TYPE_CHECKING:
    from .ranking import Ranking
    from .retriever import Retriever
    from .sections import Section

__all__ = ["Explainer", "QueryExplanation", "SectionExplanation", "Signal"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Signal:
    """Where a section stood in one ranking that fusion saw.

    Attributes:
        name: The ranking (:attr:`~proxypointer.retrieve.ranking.RankingPart.name`).
        weight: Its RRF weight.
        rank: 1-based position of the section's first chunk in it; 0 when none of its chunks is there.
        score: That chunk's score in the ranking (cosine or BM25, higher is better); 0.0 when absent.
        contribution: ``weight / (rrf_k + rank)``, what the ranking added to that chunk's fused
            score; 0.0 when absent.
    """

    name: str
    weight: float
    rank: int
    score: float
    contribution: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"name": self.name, "weight": self.weight, "rank": self.rank, "score": self.score,
                "contribution": self.contribution}


@dataclass(frozen=True, slots=True)
class SectionExplanation:
    """Why one returned section ranked.

    Attributes:
        doc_id: Its document.
        node_id: Its node.
        rank: Its 1-based place in the returned list.
        fused_rank: 1-based position of its first chunk in the fused chunk ranking (after label
            lookup and implied sections moved theirs); 0 when absent (a section added by
            references, or found only by a deeper over-fetch).
        signals: One per ranking fused, in fusion order.
        labelled: The query names its label (or that of a section enclosing it): put first.
        implied: The query implies it without naming it (``retrieval.implied_rank``): placed.
        reached_via: :attr:`~proxypointer.retrieve.sections.Section.reached_via`.
        chunk_ranks: 1-based positions in the fused ranking of the section's own chunks that
            its score counts (``retrieval.section_scoring``: the best for ``max``, the
            ``section_top_n`` best for ``sum``, all for ``rrf``); empty when none was fetched.
        section_score: The score sections are ordered by before placing and demoting (the
            fused scores of ``chunk_ranks`` summed for ``sum``, the best for ``max``; RRF of
            their ranks for ``rrf``); 0.0 when none was fetched.
        demoted: Why it went after the sections with text: ``breadcrumb-only``
            (``retrieval.demote_empty``), ``exhibit`` (``retrieval.demote_exhibits``), or ``""``.
    """

    doc_id: str
    node_id: str
    rank: int
    fused_rank: int
    signals: tuple[Signal, ...]
    labelled: bool
    implied: bool
    reached_via: str
    chunk_ranks: tuple[int, ...] = ()
    section_score: float = 0.0
    demoted: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (signals as a list of dicts)."""
        return {"doc_id": self.doc_id, "node_id": self.node_id, "rank": self.rank, "fused_rank": self.fused_rank,
                "signals": [s.to_dict() for s in self.signals], "labelled": self.labelled, "implied": self.implied,
                "reached_via": self.reached_via, "chunk_ranks": list(self.chunk_ranks),
                "section_score": self.section_score, "demoted": self.demoted}


@dataclass(frozen=True, slots=True)
class QueryExplanation:
    """What fusion saw for one query, and each returned section's place in it.

    Attributes:
        query: The query as given.
        searched: The text searched (title routing removes a title the query names verbatim).
        named: Doc ids whose titles the query names (searched alone).
        boost: Doc ids whose titles best match the query (one more fused ranking, ``routed``).
        n: Chunks fetched per ranking (the first over-fetch).
        rrf_k: The RRF constant.
        rankings: ``(name, weight, chunks)`` of each ranking fused, in fusion order.
        sections: One per returned section, in rank order.
    """

    query: str
    searched: str
    named: tuple[str, ...]
    boost: tuple[str, ...]
    n: int
    rrf_k: int
    rankings: tuple[tuple[str, float, int], ...]
    sections: tuple[SectionExplanation, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "query": self.query,
            "searched": self.searched,
            "named": list(self.named),
            "boost": list(self.boost),
            "n": self.n,
            "rrf_k": self.rrf_k,
            "rankings": [{"name": name, "weight": w, "chunks": c} for name, w, c in self.rankings],
            "sections": [s.to_dict() for s in self.sections],
        }


class Explainer:
    """Explain a retriever's results: rank the query again and find each section in every ranking.

    Thread-safe as its retriever is (it keeps no state of its own).

    Args:
        retriever: The retriever whose results are explained (its ranker, trees and settings).

    Example:
        >>> sections = retriever.retrieve("parental leave pay", k=3)              # doctest: +SKIP
        >>> why = Explainer(retriever).explain("parental leave pay", sections, 3)  # doctest: +SKIP
        >>> [(s.name, s.rank) for s in why.sections[0].signals]                   # doctest: +SKIP
        [('dense', 1), ('lexical', 2), ('titles', 0)]
    """

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever

    def explain(
        self,
        query: str,
        sections: Sequence[Section],
        k: int,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> QueryExplanation:
        """Say where each returned section stood in the rankings fused for the query.

        Args:
            query: The query the sections were retrieved for.
            sections: What :meth:`~proxypointer.retrieve.retriever.Retriever.retrieve` returned
                for it, best first.
            k: The ``k`` it was called with (sets the over-fetch ``n``).
            where: The same metadata filter.
            doc_ids: The same allow-list.
            source_prefix: The same prefix.

        Returns:
            The explanation; rankings are read again (about the cost of the query's ranking).

        Raises:
            ConfigError: On a bad query or filter (as ``retrieve``).
            StoreError: If the store folder holds no store, or Chroma fails.
        """
        r = self.retriever
        cfg = r.config
        scope = r.scope(where, doc_ids, source_prefix)
        n = max(cfg.overfetch, 3 * k)
        route = r.ranker.route(query, scope.where)
        ranking = r.ranker.rank(route, n) if not scope.empty else None
        scored: dict[tuple[str, str], tuple[float, list[Hit]]] = {}
        if ranking is not None:
            for score, group in score_sections(ranking.hits, cfg.section_scoring, cfg.section_top_n, cfg.rrf_k):
                scored[(group[0].metadata["doc_id"], group[0].metadata["node_id"])] = (score, group)
        out = tuple(self._section(s, i, ranking, cfg.rrf_k, scored.get((s.doc_id, s.node_id)), route.query)
                    for i, s in enumerate(sections, 1))
        parts = ranking.parts if ranking is not None else ()
        return QueryExplanation(
            query=query,
            searched=route.query,
            named=tuple(route.named),
            boost=tuple(route.boost),
            n=n,
            rrf_k=cfg.rrf_k,
            rankings=tuple((p.name, p.weight, len(p.hits)) for p in parts),
            sections=out,
        )

    def _section(
        self, s: Section, rank: int, ranking: Ranking | None, rrf_k: int,
        scored: tuple[float, list[Hit]] | None, query: str,
    ) -> SectionExplanation:
        """Find one section's chunks in each ranking (first chunk of its subtree in each), its score and demotion."""
        if ranking is None:
            return SectionExplanation(s.doc_id, s.node_id, rank, 0, (), False, False, s.reached_via)
        live = self.retriever.ranker.trees.get(s.doc_id)
        nodes = set(live.subtree(s.node_id)) if live is not None else {s.node_id}

        def first(hits: Sequence[Hit]) -> tuple[int, Hit | None]:
            for i, h in enumerate(hits, 1):
                if h.metadata.get("doc_id") == s.doc_id and h.metadata.get("node_id") in nodes:
                    return i, h
            return 0, None

        signals = []
        for part in ranking.parts:
            at, hit = first(part.hits)
            signals.append(Signal(part.name, part.weight, at, float(hit.score) if hit else 0.0,
                                  part.weight / (rrf_k + at) if at else 0.0))
        fused, _ = first(ranking.hits)
        mine = {cid for n in nodes for cid in (live.chunks.get(n, ()) if live is not None else ())}
        score, counted = self._counted(ranking, scored)
        return SectionExplanation(
            doc_id=s.doc_id,
            node_id=s.node_id,
            rank=rank,
            fused_rank=fused,
            signals=tuple(signals),
            labelled=bool(mine & set(ranking.labelled)) or s.reached_via == "query",
            implied=bool(mine & set(ranking.placed)),
            reached_via=s.reached_via,
            chunk_ranks=counted,
            section_score=score,
            demoted=self._demoted(scored, ranking, query),
        )

    def _counted(self, ranking: Ranking, scored: tuple[float, list[Hit]] | None) -> tuple[float, tuple[int, ...]]:
        """Return the section score and the fused ranks of the chunks it counts (:func:`score_sections`)."""
        if scored is None:
            return 0.0, ()
        cfg = self.retriever.config
        position = {h.chunk_id: i for i, h in enumerate(ranking.hits, 1)}
        ranks = [position[h.chunk_id] for h in scored[1]]
        if cfg.section_scoring == "max":
            ranks = ranks[:1]
        elif cfg.section_scoring == "sum":
            ranks = ranks[: cfg.section_top_n]
        return float(scored[0]), tuple(ranks)

    def _demoted(self, scored: tuple[float, list[Hit]] | None, ranking: Ranking, query: str) -> str:
        """Say why the section's best chunk went after the sections with text, or ``""``."""
        cfg = self.retriever.config
        if scored is None or not (cfg.demote_empty or cfg.demote_exhibits):
            return ""
        hydrated = self.retriever.ranker.hydrate([scored[1][0]])
        if not hydrated:
            return ""
        hit = hydrated[0]
        labelled = {*ranking.labelled, *ranking.placed}
        if cfg.demote_empty and demoted(hit, labelled, query):
            return "breadcrumb-only"
        if self.retriever.candidates.in_exhibit(hit, labelled, query):
            return "exhibit"
        return ""

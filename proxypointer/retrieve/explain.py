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
    """

    doc_id: str
    node_id: str
    rank: int
    fused_rank: int
    signals: tuple[Signal, ...]
    labelled: bool
    implied: bool
    reached_via: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (signals as a list of dicts)."""
        return {"doc_id": self.doc_id, "node_id": self.node_id, "rank": self.rank, "fused_rank": self.fused_rank,
                "signals": [s.to_dict() for s in self.signals], "labelled": self.labelled, "implied": self.implied,
                "reached_via": self.reached_via}


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
        out = tuple(self._section(s, i, ranking, cfg.rrf_k) for i, s in enumerate(sections, 1))
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

    def _section(self, s: Section, rank: int, ranking: Ranking | None, rrf_k: int) -> SectionExplanation:
        """Find one section's chunks in each ranking (first chunk of its subtree in each)."""
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
        return SectionExplanation(
            doc_id=s.doc_id,
            node_id=s.node_id,
            rank=rank,
            fused_rank=fused,
            signals=tuple(signals),
            labelled=bool(mine & set(ranking.labelled)) or s.reached_via == "query",
            implied=bool(mine & set(ranking.placed)),
            reached_via=s.reached_via,
        )

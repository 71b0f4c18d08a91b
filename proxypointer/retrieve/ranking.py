"""Ranking: a query -> chunk hits, best first, and chunk hits -> scored sections.

Up to three rankings of chunks, fused by reciprocal rank fusion (RRF), then section scores:

* **dense**: cosine similarity of the query vector(s) to the chunk vectors (Chroma, or an exact
  numpy search for a small ``doc_id`` filter; :mod:`proxypointer.retrieve.dense`);
* **lexical**: BM25 over what was embedded (breadcrumb + chunk text), from the registry's SQLite
  FTS5 table (``retrieval.hybrid``);
* **title routing**: dense hits inside the documents whose titles best match the query
  (``retrieval.title_routing_docs``); a query that names a title verbatim is searched in that
  document only (:meth:`Ranker.route`, :mod:`proxypointer.retrieve.routing`);
* **focus**: the question sentence of a query of several sentences, searched alone inside the
  one document the whole query names by its chunks (``retrieval.focus_weight``,
  :meth:`Ranker.focus`), fused with the fused ranking;
* **section signals**: the title field, labels and implied sections
  (:mod:`proxypointer.retrieve.signals`), each section entering as one chunk of its subtree;
* chunk hits -> sections: :func:`score_sections` (``max``, ``sum`` or ``rrf``).

A :class:`Ranker` only ranks chunks (routing and fusion; its parts search, and
:mod:`proxypointer.retrieve.hits` checks and reads hits); :mod:`proxypointer.retrieve.retriever` turns
them into sections.
Scores are higher-is-better everywhere: cosine similarity (Chroma returns cosine *distance*),
BM25, or a fused RRF score. Tokens are word pieces of the embedding model's tokenizer without
special tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from ..store.chroma import Hit
from ..store.filters import doc_filter, filter_doc_ids
from ..store.terms import STOPWORDS, lexical_terms, title_answers
from .dense import EXACT_SEARCH_MAX_CHUNKS, MAX_QUERY_WINDOWS, DenseSearch
from .hits import LiveHits, filter_docs, id_hit
from .labels import LabelLookup
from .live import LiveTrees
from .query import focus_sentence
from .routing import LexicalIndex, Route, TitleRouter, strip_titles
from .signals import LABEL_TARGETS, SUBTREE_SCORED_CHUNKS, SectionSignals

if TYPE_CHECKING:
    from ..store.folder import StoreView

__all__ = [
    "EXACT_SEARCH_MAX_CHUNKS",  # EXACT_SEARCH_MAX_CHUNKS, MAX_QUERY_WINDOWS live in proxypointer.retrieve.dense
    "LABEL_TARGETS",  # LABEL_TARGETS, SUBTREE_SCORED_CHUNKS live in proxypointer.retrieve.signals
    "MAX_QUERY_WINDOWS",
    "SUBTREE_SCORED_CHUNKS",
    "STOPWORDS",
    "LexicalIndex",  # LexicalIndex, Route and strip_titles live in proxypointer.retrieve.routing
    "Ranker",
    "Ranking",
    "RankingPart",
    "Route",
    "demoted",
    "fuse_rrf",
    "lexical_terms",
    "place_sections",
    "rank_sections",
    "score_sections",
    "strip_titles",
]

logger = logging.getLogger(__name__)

# -- fusion and section scores ------------------------------------------------------------------
def _key(hit: Hit) -> tuple[str, str]:
    return hit.metadata["doc_id"], hit.metadata["node_id"]


def fuse_rrf(rankings: Sequence[Sequence[Hit]], weights: Sequence[float], rrf_k: int = 60) -> list[Hit]:
    """Reciprocal rank fusion of several chunk rankings (Cormack et al. 2009).

    Args:
        rankings: Hit lists, each best first; the same chunk is matched by ``chunk_id``.
        weights: One weight per ranking.
        rrf_k: The constant ``k`` of ``weight / (k + rank)``, rank 1-based.

    Returns:
        Every chunk once, ordered by fused score (higher is better; ties keep the order of
        first appearance); ``Hit.score`` is the fused score.
    """
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits, w in zip(rankings, weights, strict=True):
        for rank, h in enumerate(hits, 1):
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + w / (rrf_k + rank)
            first.setdefault(h.chunk_id, h)
    order = sorted(first, key=lambda cid: -scores[cid])
    return [replace(first[cid], score=scores[cid]) for cid in order]


def score_sections(
    hits: Sequence[Hit], method: str = "max", top_n: int = 3, rrf_k: int = 60
) -> list[tuple[float, list[Hit]]]:
    """Group chunk hits by section (doc_id, node_id) and score the sections.

    Args:
        hits: Chunk hits, best first (``score``: higher is better).
        method: ``max`` (score of the best chunk), ``sum`` (sum of the ``top_n`` best chunk
            scores) or ``rrf`` (sum of ``1 / (rrf_k + rank)`` over the section's chunks, rank
            1-based in ``hits``).
        top_n: Chunks counted by ``sum``.
        rrf_k: Constant of ``rrf``.

    Returns:
        ``(score, hits of the section best first)`` per section, best section first (ties keep
        the rank of their best chunk).

    Raises:
        ConfigError: If ``method`` is none of the three.
    """
    if method not in ("max", "sum", "rrf"):
        raise ConfigError(f"section_scoring: expected 'max', 'sum' or 'rrf', got {method!r}")
    groups: dict[tuple[str, str], list[Hit]] = {}
    score: dict[tuple[str, str], float] = {}
    for rank, h in enumerate(hits, 1):
        key = _key(h)
        group = groups.setdefault(key, [])
        group.append(h)
        if method == "max":
            score.setdefault(key, h.score)
        elif method == "sum":
            if len(group) <= top_n:
                score[key] = score.get(key, 0.0) + h.score
        else:
            score[key] = score.get(key, 0.0) + 1.0 / (rrf_k + rank)
    order = sorted(groups, key=lambda k: -score[k])  # stable: first-appearance order on ties
    return [(float(score[k]), groups[k]) for k in order]


def demoted(hit: Hit, labelled: set[str] | frozenset[str], query: str) -> bool:
    """Tell whether a section's best chunk ranks after every section with text (``retrieval.demote_empty``).

    A breadcrumb-only chunk (``empty_body``: a leaf heading with no text of its own, shared
    case 11) matches any query that names its document through the breadcrumb, so it goes
    last, unless a label in the query names it (``labelled`` chunk ids) or its own title
    answers the query (:func:`~proxypointer.store.terms.title_answers`: "Error E42 means the
    coolant pump has failed" for "what does error E42 mean", issue 32).

    Args:
        hit: The section's best chunk, with its metadata read (``empty_body``, ``title``).
        labelled: Chunk ids that labels or implied sections placed.
        query: The query searched (title routing's :attr:`Route.query`).
    """
    if not hit.metadata.get("empty_body") or hit.chunk_id in labelled:
        return False
    return not title_answers(query, str(hit.metadata.get("title", "")))


def place_sections(
    scored: list[tuple[float, list[Hit]]], placed: Sequence[str], at: int
) -> list[tuple[float, list[Hit]]]:
    """Move the sections holding ``placed`` chunks up to just after the first ``at`` sections.

    Args:
        scored: Output of :func:`score_sections`, best section first.
        placed: Chunk ids, in the order their sections are wanted.
        at: Sections kept ahead of them (0: they go first).

    Returns:
        The sections reordered; a placed section already within the first ``at`` (or ranked
        ahead of where it would go) stays where it is. A moved section takes the score of the
        section before its new place, so scores stay in order.
    """
    if not placed:
        return scored
    want = {cid: i for i, cid in enumerate(placed)}
    moving: list[tuple[int, tuple[float, list[Hit]]]] = []
    kept: list[tuple[float, list[Hit]]] = []
    for pos, item in enumerate(scored):
        order = min((want[h.chunk_id] for h in item[1] if h.chunk_id in want), default=None)
        if order is not None and pos > at + len(moving):
            moving.append((order, item))
        else:
            kept.append(item)
    if not moving:
        return scored
    moving.sort(key=lambda m: m[0])
    at = min(at, len(kept))
    lead = kept[at - 1][0] if at else kept[0][0] if kept else 0.0
    lifted = [(max(score, lead), group) for _, (score, group) in moving]
    return kept[:at] + lifted + kept[at:]


def rank_sections(hits: Sequence[Hit], method: str = "max", top_n: int = 3, rrf_k: int = 60) -> list[list[Hit]]:
    """Like :func:`score_sections`, without the scores: hits per section, best section first."""
    return [group for _, group in score_sections(hits, method, top_n, rrf_k)]


def _and(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    return b if not a else {"$and": [a, b]}


# -- the ranker ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RankingPart:
    """One ranking that fusion saw, kept so that a result can say why it ranked.

    Attributes:
        name: ``dense``, ``lexical`` (BM25 over breadcrumb + chunk text), ``routed`` (dense
            inside the documents title routing boosts), ``titles`` (the title field) or
            ``focus`` (the question sentence inside one document, fused with the fused ranking).
        weight: Its RRF weight (1.0 for dense, ``retrieval.lexical_weight``, ...).
        hits: Its chunk hits as fused, best first (ids only; ``score``: cosine similarity for
            dense, routed and focus, BM25 for lexical and titles; higher is better).
    """

    name: str
    weight: float
    hits: tuple[Hit, ...]


@dataclass(frozen=True, slots=True)
class Ranking:
    """Chunk hits of one query, best first.

    Attributes:
        hits: Live chunk hits, best first, without text (pointer metadata from the chunk id;
            :meth:`Ranker.hydrate` reads the rest). ``score`` is the cosine similarity when the
            dense ranking is the only one, else the fused RRF score; higher is better.
        cosine: ``chunk_id -> cosine similarity`` of the chunks found by a dense search (for a
            query embedded in several windows, the best over them).
        vectors: The query vectors searched, float32 ``(n_windows, dim)``, rows L2-normalised.
        labelled: Chunk ids put first because the query names their section's label
            (``retrieval.label_lookup``), best first; empty otherwise.
        placed: Chunk ids of the sections the query implies without naming them (the
            statements a measure reads, the sections a form prescribes for a topic:
            :meth:`Ranker.implied_sections`), to be placed after the first
            ``retrieval.implied_rank`` sections by :func:`place_sections`; empty otherwise.
        parts: The rankings fused, in fusion order (:class:`RankingPart`): bookkeeping for
            explanations (:mod:`proxypointer.retrieve.explain`), never read to rank.
    """

    hits: list[Hit]
    cosine: dict[str, float] = field(default_factory=dict)
    vectors: np.ndarray | None = None
    labelled: tuple[str, ...] = ()
    placed: tuple[str, ...] = ()
    parts: tuple[RankingPart, ...] = ()


class Ranker:
    """Rank the live chunks of a :class:`~proxypointer.store.folder.StoreView` for a query: routing and fusion.

    Composes one part per job, each given what it reads: :attr:`router` (title routing),
    :attr:`dense_search` (query vectors, dense and exact search, stored vectors),
    :attr:`signals` (title field, labels, implied sections), :attr:`live_hits` (live-version
    check, records); the lexical ranking and the focus ranking are its own. Its methods of the
    same names delegate to those parts; :meth:`dense` is the one every dense ranking goes
    through (a subclass may memoise it, as the evaluation harness does).

    Thread-safe: its caches (the document-title index of title routing, :attr:`router`, rebuilt
    when the registry's generation moves; the stored trees of 128 document versions, :attr:`trees`; the
    label indexes of 32, :attr:`labels`) are bounded and guarded by locks; the registry and
    Chroma are used as the Index allows.

    Args:
        index: The index to search; its embedder embeds the queries.
    """

    def __init__(self, index: StoreView) -> None:
        self.index = index
        self.config = index.config.retrieval
        #: Title routing (its cache: the document-title index).
        self.router = TitleRouter(index)
        #: Stored trees of live document versions (subtrees, children, extents).
        self.trees = LiveTrees(index)
        #: Label indexes of live document versions (``retrieval.label_lookup``).
        self.labels = LabelLookup(self.trees)
        #: Live-version check and record reads of chunk hits.
        self.live_hits = LiveHits(index)
        #: Query vectors, dense and exact search, stored vectors.
        self.dense_search = DenseSearch(index, self.live_hits)
        #: Sections found by title, named by a label or implied, as chunk hits.
        self.signals = SectionSignals(index, self.config, self.trees, self.labels, self.dense_search, self.live_hits)

    # -- dense ------------------------------------------------------------------------------
    def query_vectors(self, query: str) -> np.ndarray:
        """Embed a query, in windows when it is longer than the model reads: :meth:`DenseSearch.query_vectors`.

        Returns:
            float32 ``(n_windows, dim)``, rows L2-normalised; one row when the query fits.
        """
        return self.dense_search.query_vectors(query)

    def dense(
        self,
        query: str,
        n: int,
        where: dict[str, Any] | None = None,
        *,
        vectors: np.ndarray | None = None,
        hydrate: bool = False,
    ) -> list[Hit]:
        """Live chunk hits by cosine similarity, best first (no deduplication).

        Args:
            query: Question or keywords (embedded unless ``vectors`` is given).
            n: Chunks fetched per query vector before the live-version check (so up to ``n``
                come back).
            where: Metadata filter (checked by :func:`~proxypointer.store.filters.check_where`). A
                plain ``doc_id`` filter over at most :data:`EXACT_SEARCH_MAX_CHUNKS` live chunks
                is searched exactly (:meth:`DenseSearch.search`).
            vectors: Query vectors from :meth:`query_vectors`, float32 ``(n_windows, dim)``.
            hydrate: Read each hit's text and metadata (see :meth:`hydrate`). When false,
                ``text`` is ``""`` and ``metadata`` holds only ``doc_id``, ``version``,
                ``node_id`` and ``chunk_index`` (parsed from the chunk id).

        Returns:
            Hits with cosine similarity scores (best over the query's windows), best first.

        Raises:
            StoreError: If Chroma fails.
            ConfigError: If the store was built with another embedding model (or the same
                model with ``quantize_int8`` set differently).
        """
        found = self.dense_search.search(query, n, where, vectors)
        return self.hydrate(found) if hydrate else found

    def cosines(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> dict[str, float]:
        """Cosine similarity of stored chunk vectors to the query: :meth:`DenseSearch.cosines`.

        Raises:
            StaleSourceError: If some were deleted by a writer during the query.
        """
        return self.dense_search.cosines(chunk_ids, vectors)

    # -- lexical ----------------------------------------------------------------------------
    def lexical(self, query: str, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        """Live chunk hits by BM25 over breadcrumb + chunk text (the registry's FTS5 table).

        Args:
            query: Question or keywords; see :func:`lexical_terms` (any word of the query may
                match).
            n: Hits fetched. The documents of a ``doc_id`` filter (alone or in an ``$and``) are
                searched in SQL; any other condition is applied after fetching, so fewer may
                come back.
            where: Metadata filter (checked by :func:`~proxypointer.store.filters.check_where`).

        Returns:
            Hits without text (like :meth:`dense` with ``hydrate=False``), ``score`` = BM25
            (higher is better), best first.
        """
        terms = lexical_terms(query)
        if not terms:
            return []
        doc_ids, exact = filter_docs(where)
        pairs = self.index.registry.lexical.search(terms, n, doc_ids)
        hits = self.live([id_hit(cid, score) for cid, score in pairs])
        return hits if exact else self.live_hits.matching(hits, where)

    # -- section signals --------------------------------------------------------------------
    def titles(
        self, query: str, n: int, where: dict[str, Any] | None, vectors: np.ndarray, cosine: dict[str, float]
    ) -> list[Hit]:
        """Chunk hits of the sections whose titles match the query: :meth:`SectionSignals.titles`."""
        return self.signals.titles(query, n, where, vectors, cosine)

    def label_first(
        self, query: str, hits: list[Hit], where: dict[str, Any] | None, vectors: np.ndarray,
        cosine: dict[str, float], docs: int = 3, prefer: Sequence[str] = (),
    ) -> tuple[list[Hit], tuple[str, ...]]:
        """Put first the sections a label in the query names: :meth:`SectionSignals.label_first`."""
        return self.signals.label_first(query, hits, where, vectors, cosine, docs, prefer)

    def implied_sections(
        self, query: str, hits: list[Hit], where: dict[str, Any] | None, vectors: np.ndarray,
        cosine: dict[str, float], docs: int = 1, prefer: Sequence[str] = (),
    ) -> tuple[list[Hit], tuple[str, ...]]:
        """Find the sections a query implies without naming them: :meth:`SectionSignals.implied_sections`."""
        return self.signals.implied_sections(query, hits, where, vectors, cosine, docs, prefer)

    # -- title routing ----------------------------------------------------------------------
    def route(self, query: str, where: dict[str, Any] | None) -> Route:
        """Apply title routing (``retrieval.title_routing_docs``) to a query: :meth:`TitleRouter.route`."""
        return self.router.route(query, where)

    # -- focus ------------------------------------------------------------------------------
    def focus(self, route: Route, hits: Sequence[Hit], n: int) -> list[Hit]:
        """Dense hits of a query's question sentence inside the one document the whole query names.

        A query of several sentences often names its document before it asks ("<paper title>.
        What dataset do they use?"): the naming sentence finds the document, and then pulls
        the ranking inside it towards chunks like the title (abstract, introduction). When the
        search covers more than one document and one document holds at least
        ``retrieval.focus_share`` of the fused score of the first ``n`` hits, the question
        sentence (:func:`~proxypointer.retrieve.query.focus_sentence`) is searched alone inside that document.

        Args:
            route: The routed query (not one whose title routing named its documents).
            hits: The fused ranking of the whole query, best first.
            n: Hits fetched per ranking (and the hits that vote).

        Returns:
            The focused dense hits, best first (their scores are cosines to the question
            sentence; they are not added to the ranking's ``cosine``, so a section's ``score``
            stays the cosine of the whole query); empty when the query is one sentence, when
            only one document can match, or when no document holds the share.
        """
        part = focus_sentence(route.query)
        if not part or not hits or not self._several_documents(route.where):
            return []
        votes: dict[str, float] = {}
        for h in hits[:n]:
            d = h.metadata.get("doc_id", "")
            votes[d] = votes.get(d, 0.0) + h.score
        top = max(votes, key=votes.__getitem__)
        if votes[top] < self.config.focus_share * sum(votes.values()):
            return []
        found = self.dense(part, n, _and(route.where, doc_filter([top])), vectors=self.query_vectors(part))
        logger.debug("focus: %r searched inside %s (%.0f%% of the first hits' score)", part, top,
                     100 * votes[top] / sum(votes.values()))
        return found

    def _several_documents(self, where: dict[str, Any] | None) -> bool:
        """Whether a filter (or, without one, the store) allows more than one document."""
        ids = filter_doc_ids(where)
        if ids is not None:
            return len(set(ids)) > 1
        return self.index.registry.live_document_count() > 1

    # -- fused --------------------------------------------------------------------------------
    def rank(self, route: Route, n: int) -> Ranking:
        """All rankings of a routed query, fused (``retrieval.hybrid``, title routing).

        Args:
            route: From :meth:`route` (or ``Route(query, where)``).
            n: Hits fetched per ranking.

        Returns:
            The fused ranking: with only the dense ranking, its hits and cosine scores; else
            ``fuse_rrf`` of dense (weight 1), lexical (``lexical_weight``), routed
            (``title_routing_weight``) and title-field (``title_weight``, :meth:`titles`)
            rankings, with fused scores. With ``label_lookup``, the sections a label in the
            query names come first (:meth:`label_first`).
        """
        cfg = self.config
        vectors = self.query_vectors(route.query)
        dense = self.dense(route.query, n, route.where, vectors=vectors)
        cosine = {h.chunk_id: h.score for h in dense}
        parts = [RankingPart("dense", 1.0, tuple(dense))]
        if cfg.hybrid:
            parts.append(RankingPart("lexical", cfg.lexical_weight, tuple(self.lexical(route.query, n, route.where))))
        if route.boost:
            routed = self.dense(route.query, n, _and(route.where, doc_filter(route.boost)), vectors=vectors)
            cosine.update((h.chunk_id, h.score) for h in routed)
            parts.append(RankingPart("routed", cfg.title_routing_weight, tuple(routed)))
        if cfg.title_weight > 0:
            titled = self.titles(route.query, n, route.where, vectors, cosine)
            parts.append(RankingPart("titles", cfg.title_weight, tuple(titled)))
        hits = dense if len(parts) == 1 else fuse_rrf([list(p.hits) for p in parts], [p.weight for p in parts],
                                                      cfg.rrf_k)
        if cfg.focus_weight > 0 and not route.named:
            focused = self.focus(route, hits, n)
            if focused:  # fused with the fused ranking (weight 1), not with each of its parts
                hits = fuse_rrf([hits, focused], [1.0, cfg.focus_weight], cfg.rrf_k)
                parts.append(RankingPart("focus", cfg.focus_weight, tuple(focused)))
        labelled: tuple[str, ...] = ()
        if cfg.label_lookup:
            hits, labelled = self.label_first(route.query, hits, route.where, vectors, cosine, prefer=route.prefer)
        placed: tuple[str, ...] = ()
        if cfg.implied_rank >= 0 and not labelled:
            hits, placed = self.implied_sections(route.query, hits, route.where, vectors, cosine,
                                                 prefer=route.prefer)
        return Ranking(hits, cosine, vectors, labelled, placed, tuple(parts))

    # -- records ----------------------------------------------------------------------------
    def live(self, hits: Iterable[Hit]) -> list[Hit]:
        """Keep the hits whose version is their document's live version: :meth:`LiveHits.live`."""
        return self.live_hits.live(hits)

    def hydrate(self, hits: Sequence[Hit]) -> list[Hit]:
        """Fill in the text and metadata of hits that lack them, in order: :meth:`LiveHits.hydrate`.

        Hits whose records are gone (a writer replaced the document meanwhile) are dropped.
        """
        return self.live_hits.hydrate(hits)

"""Ranking: a query -> chunk hits, best first, and chunk hits -> scored sections.

Up to three rankings of chunks, fused by reciprocal rank fusion (RRF), then section scores:

* **dense**: cosine similarity of the query vector(s) to the chunk vectors (Chroma, or an exact
  numpy search for a small ``doc_id`` filter);
* **lexical**: BM25 over what was embedded (breadcrumb + chunk text), from the registry's SQLite
  FTS5 table (``retrieval.hybrid``);
* **title routing**: dense hits inside the documents whose titles best match the query
  (``retrieval.title_routing_docs``); a query that names a title verbatim is searched in that
  document only (:meth:`Ranker.route`, :mod:`proxypointer.retrieve.routing`);
* **focus**: the question sentence of a query of several sentences, searched alone inside the
  one document the whole query names by its chunks (``retrieval.focus_weight``,
  :meth:`Ranker.focus`), fused with the fused ranking;
* chunk hits -> sections: :func:`score_sections` (``max``, ``sum`` or ``rrf``).

A :class:`Ranker` only ranks chunks; :mod:`proxypointer.retrieve.retriever` turns them into sections.
Scores are higher-is-better everywhere: cosine similarity (Chroma returns cosine *distance*),
BM25, or a fused RRF score. Tokens are word pieces of the embedding model's tokenizer without
special tokens.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..chunk.ids import parse_chunk_id
from ..errors import ConfigError, StaleSourceError, StoreError
from ..store.chroma import Hit
from ..store.filters import doc_filter, filter_doc_ids, matches_where
from ..store.terms import STOPWORDS, lexical_terms, title_answers
from ..tree.labels import mentions_label
from .implied import statements_for_measures, topics_in_query
from .labels import LabelLookup
from .live import LiveTrees
from .query import focus_sentence
from .routing import LexicalIndex, Route, TitleRouter, strip_titles

if TYPE_CHECKING:
    from ..store.folder import Store

__all__ = [
    "EXACT_SEARCH_MAX_CHUNKS",
    "LABEL_TARGETS",
    "MAX_QUERY_WINDOWS",
    "SUBTREE_SCORED_CHUNKS",
    "STOPWORDS",
    "LexicalIndex",  # LexicalIndex, Route and strip_titles live in proxypointer.retrieve.routing
    "Ranker",
    "Ranking",
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

#: Largest number of live chunks that a plain ``doc_id`` filter searches exactly (their vectors
#: read by id and scored in numpy) rather than through Chroma's filtered HNSW search. Reading
#: vectors back costs about 0.1 ms per chunk here, Chroma's filtered search ~100 ms at 100k
#: chunks whatever the filter selects (docs/benchmarks.md).
EXACT_SEARCH_MAX_CHUNKS = 1000

#: Most chunk vectors one query reads to find the best chunk of the sections its title search
#: and label lookup found (a section's best chunk lies anywhere in its subtree). Reading a
#: stored vector costs about 0.05 ms here (1,434 in 69 ms from a 40k-chunk store), so this
#: bounds that step to ~100 ms; sections whose subtrees would pass it are represented by the
#: chunks whose cosine the dense search already knows, or left out.
SUBTREE_SCORED_CHUNKS = 2000

#: Most sections a query's labels put first ("compare Note 14 and Note 15": both), as measured
#: by the research lab (``references`` lookup, ``named[:2]``).
LABEL_TARGETS = 2

#: Most windows a long query is embedded in (see :meth:`Ranker.query_vectors`); beyond that,
#: the last paragraphs are kept (a question pasted after a preamble ends the query).
MAX_QUERY_WINDOWS = 8



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
    """

    hits: list[Hit]
    cosine: dict[str, float] = field(default_factory=dict)
    vectors: np.ndarray | None = None
    labelled: tuple[str, ...] = ()
    placed: tuple[str, ...] = ()


class Ranker:
    """Rank the live chunks of an :class:`~proxypointer.index.Index` for a query.

    Thread-safe: its caches (the document-title index of title routing, :attr:`router`, rebuilt
    when the registry's generation moves; the stored trees of 128 document versions, :attr:`trees`; the
    label indexes of 32, :attr:`labels`) are bounded and guarded by locks; the registry and
    Chroma are used as the Index allows.

    Args:
        index: The index to search; its embedder embeds the queries.
    """

    def __init__(self, index: Store) -> None:
        self.index = index
        self.config = index.config.retrieval
        #: Title routing (its cache: the document-title index).
        self.router = TitleRouter(index)
        #: Stored trees of live document versions (subtrees, children, extents).
        self.trees = LiveTrees(index)
        #: Label indexes of live document versions (``retrieval.label_lookup``).
        self.labels = LabelLookup(self.trees)

    # -- query vectors ----------------------------------------------------------------------
    def query_vectors(self, query: str) -> np.ndarray:
        """Embed a query; a query longer than the model reads is embedded in windows.

        The model reads at most ``max_seq_length`` tokens (256 for all-MiniLM-L6-v2, special
        tokens included) and silently drops the rest (shared case 36). A longer query is split
        at paragraph breaks (blank lines, else line ends): the last paragraph is one window, the
        ones before it are packed into as few windows as fit, and a paragraph longer than the
        model reads is cut at word-piece boundaries. Each window is embedded, and a chunk's
        similarity is its best over the windows, so a question typed after a pasted e-mail
        still finds its section. At most :data:`MAX_QUERY_WINDOWS` windows, the last ones (the
        question usually comes last). Logged at WARNING with both lengths.

        Args:
            query: The query text.

        Returns:
            float32 ``(n_windows, dim)``, rows L2-normalised; one row when the query fits.
        """
        embedder = self.index.embedder
        windows = self._windows(query)
        if not hasattr(embedder, "encode_query"):
            return np.asarray(embedder.encode(windows), dtype=np.float32)
        # encode_query adds the configured query prefix and caches repeated queries.
        return np.stack([np.asarray(embedder.encode_query(w), dtype=np.float32) for w in windows])

    def _windows(self, query: str) -> list[str]:
        tok = self.index.embedder.tokenizer
        max_len = getattr(tok, "max_seq_length", None)
        if not max_len:
            return [query]
        limit = max_len - int(getattr(tok, "n_special", 0))
        n_tokens = tok.count(query)
        if n_tokens <= limit:
            return [query]
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", query) if p.strip()]
        if len(paragraphs) == 1:
            paragraphs = [p.strip() for p in query.splitlines() if p.strip()]
        # The last paragraph (the question, typically) alone; the ones before it packed into as
        # few windows as fit.
        windows: list[str] = []
        for p in paragraphs[:-1]:
            joined = f"{windows[-1]}\n\n{p}" if windows else ""
            if joined and tok.count(joined) <= limit:
                windows[-1] = joined
            else:
                windows.extend(_split_to_tokens(p, limit, tok))
        windows.extend(_split_to_tokens(paragraphs[-1], limit, tok))
        windows = windows[-MAX_QUERY_WINDOWS:]
        logger.warning(
            "query has %d word pieces, more than the %d the model reads (max_seq_length %d less "
            "special tokens): embedded in %d windows, each chunk scored by its best window",
            n_tokens,
            limit,
            max_len,
            len(windows),
        )
        return windows

    # -- dense ------------------------------------------------------------------------------
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
                is searched exactly, by scoring those chunks' stored vectors, instead of by
                Chroma's filtered HNSW search (111 vs ~6 ms for one paper at 100k chunks,
                docs/benchmarks.md).
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
        self.index.check_model(record=False)  # vectors of another model would rank nonsense
        vecs = self.query_vectors(query) if vectors is None else vectors
        pairs = self._exact_search(vecs, n, where)
        if pairs is None:
            best: dict[str, float] = {}
            for v in vecs:
                for cid, score in self.index.store.query_ids(v, n, where):
                    if score > best.get(cid, -np.inf):
                        best[cid] = score
            pairs = sorted(best.items(), key=lambda p: -p[1])[:n] if len(vecs) > 1 else list(best.items())
        found = self.live([_id_hit(cid, score) for cid, score in pairs])
        return self.hydrate(found) if hydrate else found

    def _exact_search(
        self, vectors: np.ndarray, n: int, where: dict[str, Any] | None
    ) -> list[tuple[str, float]] | None:
        """Exact top-``n`` over the live chunks of a plain doc_id filter; ``None`` when not applicable."""
        doc_ids = filter_doc_ids(where)
        if doc_ids is None:
            return None
        ids = self.index.registry.live_chunk_ids(doc_ids, EXACT_SEARCH_MAX_CHUNKS)
        if ids is None:
            return None
        got = self._vectors(ids, vectors.shape[-1])
        if got is None:  # not readable now: Chroma's own filtered search instead
            return None
        found, stored = got
        if not found:
            return []
        scores = (stored @ np.asarray(vectors, dtype=np.float32).T).max(axis=1)
        order = np.argsort(-scores, kind="stable")[:n]
        return [(found[i], float(scores[i])) for i in order]

    def cosines(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> dict[str, float]:
        """Cosine similarity of stored chunk vectors to the query (best over its windows).

        Used for chunks a lexical search found that no dense search returned. Ids missing from
        Chroma are left out, and all of them when Chroma cannot read them now (:meth:`_vectors`).

        Raises:
            StaleSourceError: If some were deleted by a writer during the query.
        """
        if not chunk_ids:
            return {}
        found, stored = self._vectors(list(chunk_ids), np.asarray(vectors).shape[-1]) or ([], None)
        if not found:
            return {}
        scores = (stored @ np.asarray(vectors, dtype=np.float32).T).max(axis=1)
        return {cid: float(s) for cid, s in zip(found, scores, strict=True)}

    def _vectors(self, chunk_ids: list[str], dim: int) -> tuple[list[str], np.ndarray] | None:
        """Read stored vectors by id, or None; the ids found keep their order in ``chunk_ids``.

        The order is the tie-break of an exact search (equal cosines rank in request order,
        whichever store a vector came from). First from the registry's embedding cache
        (:meth:`~proxypointer.store.embedcache.EmbeddingCache.chunk_vectors`: the vectors ingest wrote, read
        from SQLite), the rest from Chroma (:meth:`~proxypointer.store.chroma.ChromaStore.vectors`).
        Chroma fails a whole read by id when another process writes meanwhile: a replaced
        version's chunks deleted, or new chunks that the metadata knows and this process's
        loaded vector index does not yet ("Error finding id"). The first is a document changed
        during the query; for the second the read is given up (None) and the caller ranks
        without it: these reads only refine a ranking the dense search already made.

        Raises:
            StaleSourceError: If the read failed and some ids are of a version no longer live
                (:meth:`~proxypointer.retrieve.retriever.Retriever.retrieve` then searches again).
        """
        cached, vectors = self.index.registry.embeddings.chunk_vectors(self.index.embedder.name, chunk_ids, dim)
        have = set(cached)
        rest = [c for c in chunk_ids if c not in have]
        if not rest:
            return _in_order(chunk_ids, cached, vectors)
        try:
            found, more = self.index.store.vectors(rest)
        except StoreError as err:
            if len(self.live(_id_hit(cid, 0.0) for cid in rest)) < len(rest):
                raise StaleSourceError("a chunk's vector was deleted by a writer during the query") from err
            logger.info("reading %d chunk vectors failed (%s); ranking without them", len(rest), err)
            return _in_order(chunk_ids, cached, vectors) if cached else None
        if not found:
            found, more = cached, vectors
        elif cached:
            found, more = cached + found, np.concatenate([vectors, more])
        return _in_order(chunk_ids, found, more)

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
        doc_ids, exact = _filter_docs(where)
        pairs = self.index.registry.lexical.search(terms, n, doc_ids)
        hits = self.live([_id_hit(cid, score) for cid, score in pairs])
        return hits if exact else self._matching(hits, where)

    def _matching(self, hits: list[Hit], where: dict[str, Any] | None) -> list[Hit]:
        """Keep the hits whose metadata matches ``where`` (read from their records), in order."""
        if not where:
            return hits
        keep = {h.chunk_id for h in self.hydrate(hits) if matches_where(h.metadata, where)}
        return [h for h in hits if h.chunk_id in keep]

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
            where: Metadata filter; as in :meth:`lexical`.
            vectors: The query vectors (:meth:`query_vectors`).
            cosine: ``chunk_id -> cosine`` known so far; the chunks scored here are added.

        Returns:
            Hits without text, ``score`` = the title's BM25 score (higher is better), distinct
            chunks.
        """
        terms = lexical_terms(query)
        if not terms:
            return []
        doc_ids, exact = _filter_docs(where)
        found = self.index.registry.lexical.title_search(terms, 4 * n, doc_ids)
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
            for score, best in zip((g[0] for g in groups), self._best_chunks([g[1] for g in groups], vectors, cosine,
                                                                               budget), strict=True):
                if best is not None and best not in seen:
                    seen.add(best)
                    out.append(_id_hit(best, score))
            if len(out) >= n:
                break
        return out[:n] if exact else self._matching(out, where)[:n]

    def _best_chunks(
        self, groups: Sequence[Sequence[str]], vectors: np.ndarray, cosine: dict[str, float], budget: list[int]
    ) -> list[str | None]:
        """Pick the chunk of each group with the highest cosine similarity (None for a group left out).

        Vectors not yet in ``cosine`` are read in one batch while ``budget[0]`` chunks are left
        (:data:`SUBTREE_SCORED_CHUNKS`); a group that would pass it is scored by the chunks
        already known. ``cosine`` gains every chunk scored.
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
            cosine.update(self.cosines(todo, vectors))
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
        lead = self._named_chunks(hits, where, vectors, cosine, docs,
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
        ``retrieval.implied_rank`` sections (:func:`place_sections`; 0: first).

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
        found = self._named_chunks(hits, where, vectors, cosine, docs,
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

    def _named_chunks(
        self, hits: list[Hit], where: dict[str, Any] | None, vectors: np.ndarray, cosine: dict[str, float],
        docs: int, named_in: Callable[[tuple[str, str]], Sequence[str]], prefer: Sequence[str] = (),
    ) -> list[Hit]:
        """One chunk per section that ``named_in((doc_id, version))`` names, in the first document that names any.

        Documents are tried in the order of their best hit (at most ``docs``); with ``prefer``,
        only those documents, the ones without a hit after the others. A section's
        chunk is its subtree's best-ranked one among ``hits``, else the one with the highest
        cosine similarity (:meth:`_best_chunks`); chunks not matching ``where`` are dropped.
        Returns hits without text, score 0.
        """
        order = list(dict.fromkeys((h.metadata.get("doc_id", ""), h.metadata.get("version", "")) for h in hits))
        if prefer:
            wanted = set(prefer)
            order = [key for key in order if key[0] in wanted]
            seen = {d for d, _ in order}
            versions = self.index.registry.live_versions(d for d in prefer if d not in seen)
            order += [(d, versions[d][0]) for d in prefer if d not in seen and d in versions]
        for key in order[:docs]:
            named = named_in(key)
            live = self.trees.get(*key) if named else None
            if live is None:
                continue
            groups = [live.subtree_chunks(node) for node in named]
            ranked = [next((x.chunk_id for x in hits if x.chunk_id in set(g)), None) for g in groups]
            unranked = [g if r is None else [] for g, r in zip(groups, ranked, strict=True)]
            scored = self._best_chunks(unranked, vectors, cosine, [SUBTREE_SCORED_CHUNKS])
            best = [r or c for r, c in zip(ranked, scored, strict=True) if r or c]
            lead = self._matching([_id_hit(c, 0.0) for c in dict.fromkeys(best)], where)
            if lead:
                return lead
        return []

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
        rankings, weights = [dense], [1.0]
        if cfg.hybrid:
            rankings.append(self.lexical(route.query, n, route.where))
            weights.append(cfg.lexical_weight)
        if route.boost:
            routed = self.dense(route.query, n, _and(route.where, doc_filter(route.boost)), vectors=vectors)
            cosine.update((h.chunk_id, h.score) for h in routed)
            rankings.append(routed)
            weights.append(cfg.title_routing_weight)
        if cfg.title_weight > 0:
            rankings.append(self.titles(route.query, n, route.where, vectors, cosine))
            weights.append(cfg.title_weight)
        hits = dense if len(rankings) == 1 else fuse_rrf(rankings, weights, cfg.rrf_k)
        if cfg.focus_weight > 0 and not route.named:
            focused = self.focus(route, hits, n)
            if focused:  # fused with the fused ranking (weight 1), not with each of its parts
                hits = fuse_rrf([hits, focused], [1.0, cfg.focus_weight], cfg.rrf_k)
        labelled: tuple[str, ...] = ()
        if cfg.label_lookup:
            hits, labelled = self.label_first(route.query, hits, route.where, vectors, cosine, prefer=route.prefer)
        placed: tuple[str, ...] = ()
        if cfg.implied_rank >= 0 and not labelled:
            hits, placed = self.implied_sections(route.query, hits, route.where, vectors, cosine,
                                                 prefer=route.prefer)
        return Ranking(hits, cosine, vectors, labelled, placed)

    # -- records ----------------------------------------------------------------------------
    def live(self, hits: Iterable[Hit]) -> list[Hit]:
        """Keep the hits whose version is their document's live version (registry), in order."""
        hits = list(hits)
        versions = self.index.registry.live_versions(h.metadata.get("doc_id", "") for h in hits)
        out = []
        for h in hits:
            live = versions.get(h.metadata.get("doc_id", ""))
            if live and h.metadata.get("version") == live[0]:
                out.append(h)
        return out

    def hydrate(self, hits: Sequence[Hit]) -> list[Hit]:
        """Fill in the text and metadata of hits that lack them, keeping their order and scores.

        Records are read from the registry's copies, and from Chroma for chunks without one
        (stores written by older versions, until their next ingest). Hits whose records are
        gone (a writer replaced the document meanwhile) are dropped.
        """
        missing = [h.chunk_id for h in hits if "doc_hash" not in h.metadata]
        if not missing:
            return list(hits)
        # The registry's copies first (SQLite, ~0.1 ms); Chroma only for chunks without one.
        records = self.index.registry.chunk_records(missing)
        rest = [cid for cid in missing if cid not in records]
        if rest:
            records.update((r.chunk_id, (r.text, r.metadata)) for r in self.index.store.get(rest))
        out = []
        for h in hits:
            if "doc_hash" in h.metadata:
                out.append(h)
            elif h.chunk_id in records:
                text, metadata = records[h.chunk_id]
                out.append(replace(h, text=text, metadata=metadata))
        return out


def _split_to_tokens(text: str, limit: int, tokenizer: Any) -> list[str]:
    """Cut ``text`` into consecutive pieces of at most ``limit`` word pieces (at word-piece boundaries)."""
    backend = getattr(tokenizer, "backend", None)
    if backend is None:
        words, out, cur = text.split(), [], []
        for w in words:
            if cur and tokenizer.count(" ".join([*cur, w])) > limit:
                out.append(" ".join(cur))
                cur = []
            cur.append(w)
        return [*out, " ".join(cur)] if cur else out
    offsets = backend.encode(text, add_special_tokens=False).offsets
    out = []
    for i in range(0, len(offsets), limit):
        part = offsets[i : i + limit]
        out.append(text[part[0][0] : part[-1][1]])
    return out


def _filter_docs(where: dict[str, Any] | None) -> tuple[list[str] | None, bool]:
    """``(doc_ids, exact)``: the documents a filter allows, and whether they are all it asks.

    A plain doc_id filter gives its ids (exact); an ``$and`` holding one gives those ids (not
    exact: the other conditions are checked on the hits); anything else gives None.
    """
    doc_ids = filter_doc_ids(where)
    if doc_ids is None and where and "$and" in where:  # documents and more: search the documents
        ids = next((ids for c in where["$and"] if (ids := filter_doc_ids(c)) is not None), None)
        return ids, False
    return doc_ids, doc_ids is not None or not where


def _in_order(wanted: Sequence[str], found: list[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``(found, vectors)`` reordered to follow ``wanted`` (every found id is in ``wanted``)."""
    rank = {cid: i for i, cid in reversed(list(enumerate(wanted)))}
    order = sorted(range(len(found)), key=lambda i: rank[found[i]])
    return [found[i] for i in order], vectors[order]


def _id_hit(chunk_id: str, score: float) -> Hit:
    """Make a hit whose metadata is only what its id carries (``<doc_id>::<version>::<node_id>::<index>``)."""
    parts = parse_chunk_id(chunk_id)
    if parts is None:
        return Hit(chunk_id, "", {}, score)
    meta = {"doc_id": parts.doc_id, "version": parts.version, "node_id": parts.node_id, "chunk_index": parts.position}
    return Hit(chunk_id, "", meta, score)

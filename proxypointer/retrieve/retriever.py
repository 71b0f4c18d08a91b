"""Retrieval: a query -> ranked chunk hits -> ``k`` distinct (doc_id, node_id) -> whole sections.

A chunk is only a proxy for a location: hits are grouped by (doc_id, node_id) in rank order
(:mod:`proxypointer.retrieve.ranking` scores the sections), over-fetching until ``k`` distinct sections
are found (shared case 27) in every scoring mode, and each section is sliced from the *stored
copy* of the text that was indexed, so a pointer can never point into a file whose lines have
moved. :class:`Retriever` checks the store and a query's scope and composes one part per job:
:class:`~proxypointer.retrieve.candidates.Candidates` (the over-fetch loop),
:class:`~proxypointer.retrieve.sections.SectionBuilder` (sections from hits, with
:class:`~proxypointer.retrieve.delivery.DeliveryPolicy`) and
:class:`~proxypointer.retrieve.stored.StoredTexts` (stored lines, word pieces, pages). Layers on
top: :mod:`proxypointer.retrieve.context` (a context budget), :mod:`proxypointer.tree.references`
(cross-references, labels), :mod:`proxypointer.retrieve.conversation` (follow-ups).
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..docids import check_text, normalize_doc_id
from ..errors import ConfigError, StaleSourceError, StoreNotFoundError
from ..store.chroma import Hit
from ..store.filters import check_where, doc_filter, names_field, sources_to_doc_ids
from ..tree.pages import PageMap
from .candidates import Candidate, Candidates
from .delivery import Delivery, DeliveryPolicy
from .ranking import Ranker, Route
from .rerank import Reranker, make_reranker
from .sections import STATEMENT_HEAD_LINES, Section, SectionBuilder, build_section, format_citation
from .stored import StoredTexts

if TYPE_CHECKING:
    from ..store.folder import StoreView


__all__ = [
    "QUERY_ATTEMPTS", "STATEMENT_HEAD_LINES", "Retriever", "Scope", "Section", "build_section", "check_query",
    "format_citation",
]

logger = logging.getLogger(__name__)

#: Searches one ``retrieve`` makes when writers keep replacing the documents its hits are in
#: (each failed search saw a version flipped during it). One retry was not enough under a
#: continuous ingest with 20 concurrent HTTP clients and the fused ranking, whose queries read
#: more (tests/integration/test_serve_http.py); the serve layer's reads try 5 times.
QUERY_ATTEMPTS = 4
#: Searches of one query while documents whose stored source is missing take places among the
#: top k: each search leaves out the documents the one before found missing.
MISSING_SOURCE_SEARCHES = 3


@dataclass(frozen=True, slots=True)
class Scope:
    """Which chunks a query may see (see :meth:`Retriever.scope`).

    Attributes:
        where: Metadata filter in the form Chroma accepts, or ``None`` (everything).
        empty: True when an allow-list left no document (``doc_ids=[]``): nothing matches.
    """

    where: dict[str, Any] | None = None
    empty: bool = False



def check_query(query: str) -> str:
    """Refuse an empty query (or one of only spaces), which would return arbitrary sections.

    Returns:
        The query unchanged.

    Raises:
        ConfigError: If the query has no visible character, or holds a lone surrogate (not
            text: :func:`~proxypointer.docids.check_text`).
    """
    if not isinstance(query, str) or not query.strip():
        raise ConfigError(f"query: expected a question or keywords, got {query!r}")
    return check_text(query, "query")


class Retriever:
    """Query an :class:`~proxypointer.index.Index` and get whole sections back.

    Checks the store and a query's scope itself; its parts, each given what it reads, do the
    rest: :attr:`candidates` (rank, score, over-fetch), :attr:`builder` (sections from hits),
    :attr:`policy` (what of a section is delivered), :attr:`texts` (stored lines, word pieces,
    pages). Its methods of the same jobs delegate to them.

    Thread-safe: its caches (stored source lines of 64 document versions, the word pieces of
    each line of 256; the ranker's stored trees and label indexes) are bounded and guarded by
    locks.

    Args:
        index: The index to read (its embedder embeds the queries).
        ranker: Ranks chunks (default: a :class:`~proxypointer.retrieve.ranking.Ranker` of ``index``).
        reranker: Orders the fused sections again before ``k`` are kept
            (:mod:`proxypointer.retrieve.rerank`); default: the one the config's ``rerank:``
            section names, none by default (``rerank.backend: none``).

    Raises:
        ConfigError: If ``rerank:`` names a cross-encoder folder that does not exist.

    Example:
        >>> sections = Retriever(Index(".proxypointer")).retrieve("parental leave pay", k=3)  # doctest: +SKIP
        >>> print(sections[0].citation, " > ".join(sections[0].breadcrumb))                    # doctest: +SKIP
    """

    def __init__(self, index: StoreView, *, ranker: Ranker | None = None, reranker: Reranker | None = None) -> None:
        self.index = index
        self.config = index.config.retrieval
        self.ranker = ranker or Ranker(index)
        #: The optional reranker after fusion (``rerank:``), or None.
        self.reranker = reranker if reranker is not None else make_reranker(index.config.rerank, index.config.llm)
        #: Stored lines, word pieces per line and page maps of document versions (four LRUs).
        self.texts = StoredTexts(index)
        #: The delivery policy (``retrieval.subtree_cap_tokens``).
        self.policy = DeliveryPolicy(self.config, self.texts, self.ranker.hydrate)
        #: Ranked sections: rank, score, place, merge nested, demote empty; the over-fetch loop.
        self.candidates = Candidates(self.ranker, self.config, self.ranker.trees, index)
        #: Sections built from ranked hits.
        self.builder = SectionBuilder(index, self.config, self.texts, self.ranker.trees, self.policy,
                                      self.ranker.hydrate, self.ranker.cosines)

    # -- scope --------------------------------------------------------------------------------
    def require_store(self) -> None:
        """Raise unless the index folder holds a store (the query path never creates one).

        Raises:
            StoreNotFoundError: If the folder holds no store (``Store.exists``).
        """
        if not self.index.exists:
            raise StoreNotFoundError.at(self.index.root)

    def resolve_doc_ids(self, doc_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Map doc ids as users write them to the store's ids.

        Ids are compared in Unicode NFC (:mod:`proxypointer.docids`: ``Café`` as typed matches
        a file named ``Cafe`` + U+0301). An id is taken as is when the store has it; otherwise
        its citation form (``employee-handbook.md``: the id plus the file's suffix) maps to the document
        ``employee-handbook`` indexed from a ``.md`` file.

        Args:
            doc_ids: Ids or citation forms.

        Returns:
            ``(ids, unknown)``: each input mapped (unknown ones kept as given, so they match
            nothing), and the inputs that name no document.
        """
        self.require_store()
        given = [normalize_doc_id(check_text(d, "doc_ids")) for d in doc_ids]
        stems = {d: d.rsplit(".", 1)[0] for d in given if "." in d.rsplit("/", 1)[-1]}
        live = self.index.registry.live_versions([*given, *stems.values()])
        out, unknown = [], []
        for d in given:
            if d in live:
                out.append(d)
                continue
            held = self.index.registry.stored_id(d)  # stored decomposed (NFD) by an older store
            if held is not None and held in self.index.registry.live_versions([held]):
                out.append(held)
                continue
            stem = stems.get(d)
            rec = self.index.registry.get(stem) if stem in live else None
            if rec is not None and Path(rec.source_path).suffix.lower() == "." + d.rsplit(".", 1)[1].lower():
                out.append(stem)
            else:
                out.append(d)
                unknown.append(d)
        return out, unknown

    def scope(
        self,
        where: dict[str, Any] | None = None,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> Scope:
        """Combine the filters of a query into one.

        Args:
            where: Metadata filter (see :func:`~proxypointer.store.filters.check_where`); ``{}`` means
                no condition. A ``source`` condition is met by the documents whose current
                source path meets it (:func:`~proxypointer.store.filters.sources_to_doc_ids`).
            doc_ids: Allow-list of documents (ids or citation forms, see
                :meth:`resolve_doc_ids`). ``None``: every document; an empty list: **none**
                (an allow-list with nothing allowed; shared case 32).
            source_prefix: Only documents whose doc_id starts with this (``""``: every one).

        Returns:
            The scope; ``empty`` when nothing can match.

        Raises:
            ConfigError: On an unsupported filter, or a string given as ``doc_ids``.
        """
        flt = check_where(where)
        if names_field(flt, "source"):  # the documents' current paths, not those embedded from
            self.require_store()
            flt = sources_to_doc_ids(flt, {r.doc_id: r.source_path for r in self.index.registry.documents()
                                           if r.version})
        if isinstance(doc_ids, str):
            raise ConfigError(f"doc_ids: expected a list of doc ids, got the string {doc_ids!r}")
        ids = None if doc_ids is None else self.resolve_doc_ids(doc_ids)[0]
        if source_prefix:
            self.require_store()
            prefix = normalize_doc_id(check_text(source_prefix, "source_prefix"))
            prefixed = {r.doc_id for r in self.index.registry.documents()
                        if normalize_doc_id(r.doc_id).startswith(prefix)}
            ids = sorted(prefixed) if ids is None else [i for i in ids if i in prefixed]
        if ids is None:
            return Scope(flt)
        ids = list(dict.fromkeys(ids))
        if not ids:
            return Scope(None, empty=True)
        return Scope(doc_filter(ids) if flt is None else {"$and": [flt, doc_filter(ids)]})

    # -- retrieve -------------------------------------------------------------------------------
    def retrieve(
        self,
        query: str,
        k: int | None = None,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> list[Section]:
        """Find the ``k`` best sections for a query.

        Args:
            query: Question or keywords (not empty).
            k: Sections wanted (default ``retrieval.k``, 5).
            where: Extra metadata filter, e.g. ``{"kind": "heading"}`` or
                ``{"level": {"$lte": 2}}`` (operators: :data:`~proxypointer.store.filters.SUPPORTED_OPERATORS`).
            doc_ids: Only search these documents (an empty list: none; see :meth:`scope`).
            source_prefix: Only search documents whose doc_id starts with this prefix
                (a folder of the corpus, e.g. ``"policies/"``).

        Returns:
            ``min(k, sections in scope)`` sections (with ``nested: merge``, sections left after
            merging), distinct by (doc_id, node_id), best first
            (ordered by ``rank_score``; ``score`` is the cosine similarity of each one's best
            chunk in every scoring mode). With ``retrieval.nested: merge`` no section lies
            inside another one returned: an enclosing section among the candidates takes the
            place of its best-ranked subsection. A query that title routing sends to the
            document it names gets that document's sections first, then (when it has fewer
            than ``k``) the best of the others for the same query without the title. A
            section named by a label in the query comes first (``retrieval.label_lookup``);
            sections whose only chunk is breadcrumb-only come after all others
            (``retrieval.demote_empty``). Each section's ``text`` is what the delivery policy
            gives (``retrieval.subtree_cap_tokens``, :mod:`proxypointer.retrieve.delivery`): the whole
            section when it has at most ``subtree_cap_tokens`` tokens, else its own text (cut
            to ``own_text_tokens``, to ``tail_own_tokens`` for sections ranked after
            ``full_ranks``) and an ``outline`` of its children. With a reranker
            (``rerank.backend``), the first ``max(k, rerank.candidates)`` sections found so are
            reordered by it (sections a label in the query names stay first), the first ``k``
            of its order are returned, delivered by their new ranks, and ``rank_score`` is the
            reranker's score (``score`` stays the cosine).

        Raises:
            ConfigError: If ``k`` < 1, the query is empty, or a filter is not supported.
            StoreError: If the store folder holds no store, or Chroma fails.
            StaleSourceError: If the documents kept changing under the query (a writer
                replacing them on every attempt). A document whose stored source is missing
                is left out of the answer with a warning (``proxypointer check --repair``),
                and the search is run again without it to fill the ``k`` places.
        """
        check_query(query)
        k = self.config.k if k is None else k
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ConfigError(f"k: expected an int >= 1, got {k!r}")
        self.require_store()
        scope = self.scope(where, doc_ids, source_prefix)
        if scope.empty:
            return []
        for _ in range(QUERY_ATTEMPTS - 1):
            try:
                return self._retrieve(query, k, scope)
            except StaleSourceError:
                # A writer replaced a document (and pruned its old chunks or stored source)
                # between the live-version check of a hit and its reading: the next search
                # sees the new version.
                logger.info("a document changed during the query; searching again")
        return self._retrieve(query, k, scope)

    def _retrieve(self, query: str, k: int, scope: Scope) -> list[Section]:
        n = k if self.reranker is None else max(k, self.index.config.rerank.candidates)  # sections ranked
        gone: set[str] = set()  # documents whose stored source is missing: searched again without them
        for _ in range(MISSING_SOURCE_SEARCHES):
            where = scope.where
            if gone:
                left_out = {"doc_id": {"$nin": sorted(gone)}}
                where = left_out if where is None else {"$and": [where, left_out]}
            route = self.ranker.route(query, where)
            found = self.candidates.find(route, n)
            if route.named and len(found) < n:  # the named document has fewer than n sections
                found = self.candidates.fill(found, self.candidates.find(Route(route.query, where), n), n)
            missing: set[str] = set()
            out = self.builder.sections(found, missing)
            if not missing or len(out) >= n:
                break
            gone |= missing
        return out if self.reranker is None else self.rerank(query, found, out, k)

    def rerank(self, query: str, found: Sequence[Candidate], sections: Sequence[Section], k: int) -> list[Section]:
        """Order fused sections by the reranker and build the first ``k`` in their new ranks.

        Sections put first because the query names their label (``reached_via == "query"``,
        ``retrieval.label_lookup``) stay first, in their order; the reranker orders the others.
        The first ``k`` are built again from their candidates, so that the delivery policy
        (``retrieval.full_ranks``, ``tail_own_tokens``, ``delivery_budget_tokens``) applies to
        their new ranks.

        Args:
            query: The query.
            found: The ranked candidates ``sections`` were built from.
            sections: Their sections, in fused order.
            k: Sections wanted.

        Returns:
            At most ``k`` sections in the reranker's order; ``rank_score`` is its score,
            ``score`` the cosine.

        Raises:
            StaleSourceError: If a record vanished meanwhile (:meth:`SectionBuilder.sections`).
        """
        if self.reranker is None:
            return list(sections[:k])
        pinned = [s for s in sections if s.reached_via == "query"]
        rest = [s for s in sections if s.reached_via != "query"]
        ranked = [*pinned, *self.reranker.rerank(query, rest)][:k]
        by_key = {(c.section.metadata.get("doc_id"), c.section.metadata.get("node_id")): c for c in found}
        return self.builder.sections([replace(by_key[(s.doc_id, s.node_id)], rank_score=s.rank_score)
                                      for s in ranked])

    # -- sections and stored texts (the parts' methods, for the layers on top) -----------------
    def section_of_hit(self, hit: Hit, score: float, rank_score: float, group: Sequence[Hit] = ()) -> Section:
        """Build the section of a hydrated chunk hit, with that chunk as its best-ranked chunk.

        Args:
            hit: The chunk hit (its metadata is the section's pointer).
            score: See :attr:`Section.score`.
            rank_score: See :attr:`Section.rank_score`.
            group: The section's hits, best first (the seed of an excerpt; default ``hit``).

        Returns:
            The section, delivered by the policy of ``retrieval.subtree_cap_tokens``
            (:meth:`SectionBuilder.section_of_hit`).
        """
        return self.builder.section_of_hit(hit, score, rank_score, group)

    def deliver(
        self,
        doc_hash: str,
        doc_id: str,
        source: str,
        start_line: int,
        end_line: int,
        body_end_line: int,
        children: Sequence[Any],
        hits: Sequence[Hit] = (),
        head_lines: int = 0,
        *,
        tail: bool = False,
        room: int | None = None,
    ) -> Delivery:
        """Apply the delivery policy (``retrieval.subtree_cap_tokens``) to one section: :meth:`DeliveryPolicy.deliver`.

        Args:
            doc_hash: The document version's stored text.
            doc_id: Its id (for citations).
            source: Path it was indexed from (its suffix goes in citations).
            start_line: The section's first line, 1-based inclusive.
            end_line: Its last line (whole subtree), 1-based inclusive.
            body_end_line: Last line of its own text, 1-based inclusive.
            children: Its child nodes, in document order.
            hits: Its own chunk hits that ranked, best first (the seed of an excerpt).
            head_lines: Lines at its start an excerpt also takes in when they fit; 0: no.
            tail: The section ranks after ``retrieval.full_ranks``.
            room: Word pieces left of ``retrieval.delivery_budget_tokens``; None: no budget.

        Returns:
            The delivery (:func:`~proxypointer.retrieve.delivery.plan_delivery`).
        """
        return self.policy.deliver(doc_hash, doc_id, source, start_line, end_line, body_end_line, children, hits,
                                   head_lines, tail=tail, room=room)

    def reader_tokens(self, doc_hash: str) -> list[int]:
        """Word pieces of each stored line as a reader is shown it (index 0 is line 1).

        :meth:`StoredTexts.reader_tokens`: a base64 ``data:`` payload counts as its placeholder.

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        return self.texts.reader_tokens(doc_hash)

    def line_tokens(self, doc_hash: str) -> list[int]:
        """Word pieces of each stored line (index 0 is line 1): :meth:`StoredTexts.line_tokens`.

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        return self.texts.line_tokens(doc_hash)

    def source_lines(self, doc_hash: str) -> list[str]:
        """Lines of a stored source (index 0 is line 1): :meth:`StoredTexts.lines`.

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        return self.texts.lines(doc_hash)

    def source_pages(self, doc_hash: str) -> PageMap | None:
        """Page map of a stored source, or None when it has no pages: :meth:`StoredTexts.pages`.

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        return self.texts.pages(doc_hash)

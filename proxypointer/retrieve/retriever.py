"""Retrieval: a query -> ranked chunk hits -> ``k`` distinct (doc_id, node_id) -> whole sections.

A chunk is only a proxy for a location: hits are grouped by (doc_id, node_id) in rank order
(:mod:`proxypointer.retrieve.ranking` scores the sections), over-fetching until ``k`` distinct sections
are found (shared case 27) in every scoring mode, and each section is sliced from the *stored
copy* of the text that was indexed, so a pointer can never point into a file whose lines have
moved. Layers on top: :mod:`proxypointer.retrieve.context` (a context budget), :mod:`proxypointer.tree.references`
(cross-references, labels), :mod:`proxypointer.retrieve.conversation` (follow-ups).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._lru import LRU
from ..chunk.datauri import replace_data_uris
from ..docids import check_text, normalize_doc_id
from ..embed.tokenizer import line_token_counts
from ..errors import ConfigError, StaleSourceError, StoreNotFoundError
from ..lines import slice_lines, split_lines
from ..store.chroma import Hit
from ..store.filters import check_where, doc_filter, names_field, sources_to_doc_ids
from ..tree.pages import PageMap, stored_page_map
from ..tree.titles import statement_kind
from .delivery import Delivery, OutlineEntry, cut_to_tokens, plan_delivery
from .ranking import Ranker, Ranking, Route, demoted, place_sections, score_sections

if TYPE_CHECKING:
    from ..store.folder import Store


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

#: Lines at the start of a financial statement's section (its title, the units and the column
#: headers: ``(in millions) 2022 2021 2020``) that an excerpt of it takes in when they fit with
#: its best chunks (:meth:`Retriever.deliver`): rows without their years cannot be read.
STATEMENT_HEAD_LINES = 5


@dataclass(frozen=True, slots=True)
class Section:
    r"""A whole section returned by :meth:`Retriever.retrieve`, best first.

    Attributes:
        doc_id: Document id (path relative to the ingested folder, no suffix).
        node_id: Stable node id (``preamble``, or ``w0001``... for fallback windows).
        title: Section title.
        breadcrumb: Titles from the document title down to this section.
        start_line: First line of the section, 1-based inclusive: the heading line itself.
        end_line: Last line of the section, 1-based inclusive (the whole subtree).
        text: What is delivered (see ``delivery``): the exact stored source lines
            ``text_start_line..text_end_line``, joined with ``\\n``; only a single line longer
            than the excerpt window (``retrieval.excerpt_tokens`` or ``own_text_tokens``, at
            most ``tail_own_tokens`` after the first ``full_ranks``) is cut, at a word-piece
            boundary. Its size is
            bounded by the delivery policy in word pieces as a reader is shown them (inline
            base64 payloads count as their placeholder, shared case 31).
        score: Cosine similarity between the query and the chunk ``chunk_id`` (the section's
            best-ranked chunk), in every scoring mode; higher is better. For a query longer
            than the model reads, the best over the query's windows; for a query that title
            routing sends to the document whose title it names, the query without that title.
            For a section added by :mod:`proxypointer.tree.references`, the citing section's.
        chunk_text: Text of that chunk (``""`` for a section added by references).
        citation: Where the delivered lines (``text_start_line..text_end_line``) are
            (:func:`format_citation`): ``handbook.md#L120-L188``; with pages,
            ``AMD_2022_10K.pdf#page=45 (pp. 45-46; L1203-L1240)`` for a PDF and
            ``report.md#L1203-L1240 (pp. 45-46)`` for markdown with page markers;
            :attr:`node_citation` cites the whole section.
        source: Path of the file the section was indexed from.
        kind: ``heading``, ``preamble`` or ``window``.
        level: Heading level (0 for preamble and windows).
        chunk_start_line: First line of the best-ranked chunk, 1-based inclusive.
        chunk_end_line: Last line of the best-ranked chunk, 1-based inclusive.
        chunk_id: Id of the best-ranked chunk (``""`` for a section added by references).
        rank_score: The score the sections were ordered by, higher is better: the cosine
            similarity (dense search, ``section_scoring: max``), else the section score of
            ``retrieval.section_scoring`` over fused RRF chunk scores. Comparable only within
            one result list.
        reached_via: For a section added by :mod:`proxypointer.tree.references`, the citing section
            as ``<breadcrumb> (L<start>-L<end>)``; ``"query"`` for a section put first because
            the query names its label, or that of a section enclosing it
            (``retrieval.label_lookup``); ``""`` otherwise.
        delivery: What ``text`` holds (:mod:`proxypointer.retrieve.delivery`, ``retrieval.subtree_cap_tokens``):
            ``subtree`` (the whole section, ``start_line..end_line``), ``own_text`` (its heading
            and own text, before its first subsection) or ``excerpt`` (one window of its own
            text around its best-ranked chunks).
        text_start_line: First delivered line, 1-based inclusive.
        text_end_line: Last delivered line, 1-based inclusive.
        outline: The section's children, one entry each (title, lines, citation), when
            ``delivery`` is not ``subtree``: where a reader can follow. Not part of ``text``.
        page_start: First PDF page of the delivered lines' content, 1-based in the file's page
            order (not the printed folio); 0 when the document has no pages (markdown without
            page markers). From ``PageMap.pages(text_start_line, text_end_line)``: page-marker
            and blank lines do not count.
        page_end: Last PDF page of the delivered lines' content, 1-based inclusive; 0 without pages.
    """

    doc_id: str
    node_id: str
    title: str
    breadcrumb: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    score: float
    chunk_text: str
    citation: str
    source: str
    kind: str
    level: int
    chunk_start_line: int
    chunk_end_line: int
    chunk_id: str = ""
    rank_score: float = 0.0
    reached_via: str = ""
    delivery: str = "subtree"
    text_start_line: int = 0
    text_end_line: int = 0
    outline: tuple[OutlineEntry, ...] = ()
    page_start: int = 0
    page_end: int = 0

    @property
    def node_citation(self) -> str:
        """``<doc_id><suffix>#L<start>-L<end>`` of the whole section (``start_line..end_line``, no pages)."""
        return f"{self.citation.split('#', 1)[0]}#L{self.start_line}-L{self.end_line}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (breadcrumb as a list, outline as a list of dicts)."""
        d = asdict(self)
        d["breadcrumb"] = list(self.breadcrumb)
        d["outline"] = [e.to_dict() for e in self.outline]
        return d


def format_citation(
    doc_id: str, source: str, start_line: int, end_line: int, page_start: int = 0, page_end: int = 0
) -> str:
    """Format where a line range is: file, pages when it has them, lines.

    Args:
        doc_id: Document id.
        source: Path of the file it was indexed from (its suffix goes in the citation; ``.md``
            when it has none).
        start_line: First line, 1-based inclusive (of the stored text: for a PDF, of
            ``proxypointer convert``'s output).
        end_line: Last line, 1-based inclusive.
        page_start: First PDF page, 1-based; 0: no pages.
        page_end: Last PDF page, 1-based inclusive.

    Returns:
        ``handbook.md#L120-L188`` without pages; for a PDF
        ``AMD_2022_10K.pdf#page=45 (pp. 45-46; L1203-L1240)`` (``#page=N`` is the standard PDF
        open parameter, RFC 8118: a link opens the viewer at that page; ``p. 45`` for one page);
        for markdown with page markers ``report.md#L1203-L1240 (pp. 45-46)``.

    Example:
        >>> format_citation("AMD_2022_10K", "/d/AMD_2022_10K.pdf", 1203, 1240, 45, 46)
        'AMD_2022_10K.pdf#page=45 (pp. 45-46; L1203-L1240)'
    """
    suffix = Path(source).suffix or ".md"
    lines = f"L{start_line}-L{end_line}"
    if page_start <= 0:
        return f"{doc_id}{suffix}#{lines}"
    pages = f"p. {page_start}" if page_end <= page_start else f"pp. {page_start}-{page_end}"
    if suffix.lower() == ".pdf":
        return f"{doc_id}{suffix}#page={page_start} ({pages}; {lines})"
    return f"{doc_id}{suffix}#{lines} ({pages})"


def build_section(
    *,
    doc_id: str,
    node_id: str,
    title: str,
    breadcrumb: Sequence[str],
    kind: str,
    level: int,
    start_line: int,
    end_line: int,
    lines: Sequence[str],
    source: str,
    score: float,
    rank_score: float,
    chunk_id: str = "",
    chunk_text: str = "",
    chunk_start_line: int | None = None,
    chunk_end_line: int | None = None,
    reached_via: str = "",
    delivery: Delivery | None = None,
    tokenizer: Any = None,
    pages: PageMap | None = None,
) -> Section:
    """Make a :class:`Section`: every Section is built here (from a chunk hit or a tree node).

    Args:
        doc_id: Document id.
        node_id: Node id.
        title: Section title.
        breadcrumb: Titles from the document title down to the section.
        kind: ``heading``, ``preamble`` or ``window``.
        level: Heading level (0 for preamble and windows).
        start_line: First line, 1-based inclusive.
        end_line: Last line, 1-based inclusive.
        lines: The stored source's lines (``split_lines``; index 0 is line 1).
        source: Path of the file the document was indexed from (its suffix goes in the citation;
            ``.md`` when it has none).
        score: See :attr:`Section.score`.
        rank_score: See :attr:`Section.rank_score`.
        chunk_id: The best-ranked chunk, if any.
        chunk_text: Its text.
        chunk_start_line: Its first line (default ``start_line``), 1-based inclusive.
        chunk_end_line: Its last line (default ``end_line``), 1-based inclusive.
        reached_via: See :attr:`Section.reached_via`.
        delivery: What to deliver (:func:`~proxypointer.retrieve.delivery.plan_delivery`); None: the
            whole section.
        tokenizer: Counts word pieces; needed only when ``delivery.max_tokens`` is set.
        pages: Page map of the stored source (``Retriever.source_pages``), or None when the
            document has no pages; gives ``page_start``/``page_end`` and the citation's pages.

    Returns:
        The section, its ``text`` sliced from ``lines``.

    Raises:
        StaleSourceError: If ``end_line`` is past the end of ``lines``.
    """
    d = delivery or Delivery("subtree", start_line, end_line)
    text = slice_lines(lines if isinstance(lines, list) else list(lines), d.start_line, d.end_line)
    if d.max_tokens > 0 and tokenizer is not None:
        text = cut_to_tokens(text, d.max_tokens, tokenizer)
    page_start, page_end = (0, 0)
    if pages is not None and d.end_line <= len(pages.line_pages):
        page_start, page_end = pages.pages(d.start_line, d.end_line)
    return Section(
        doc_id=doc_id,
        node_id=node_id,
        title=title,
        breadcrumb=tuple(breadcrumb),
        start_line=start_line,
        end_line=end_line,
        text=text,
        score=float(score),
        chunk_text=chunk_text,
        citation=format_citation(doc_id, source, d.start_line, d.end_line, page_start, page_end),
        source=source,
        kind=kind,
        level=level,
        chunk_start_line=start_line if chunk_start_line is None else chunk_start_line,
        chunk_end_line=end_line if chunk_end_line is None else chunk_end_line,
        chunk_id=chunk_id,
        rank_score=float(rank_score),
        reached_via=reached_via,
        delivery=d.kind,
        text_start_line=d.start_line,
        text_end_line=d.end_line,
        outline=d.outline,
        page_start=page_start,
        page_end=page_end,
    )


@dataclass(frozen=True, slots=True)
class Scope:
    """Which chunks a query may see (see :meth:`Retriever.scope`).

    Attributes:
        where: Metadata filter in the form Chroma accepts, or ``None`` (everything).
        empty: True when an allow-list left no document (``doc_ids=[]``): nothing matches.
    """

    where: dict[str, Any] | None = None
    empty: bool = False


@dataclass(frozen=True, slots=True)
class _Candidate:
    """One ranked section: its pointer hit, its best-ranked chunk, its ranking, its hits best first."""

    section: Hit
    chunk: Hit
    rank_score: float
    ranking: Ranking
    group: tuple[Hit, ...] = ()


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



_MISSING: Any = object()


class Retriever:
    """Query an :class:`~proxypointer.index.Index` and get whole sections back.

    Thread-safe: its caches (stored source lines of 64 document versions, the word pieces of
    each line of 256; the ranker's stored trees and label indexes) are bounded and guarded by
    locks.

    Args:
        index: The index to read (its embedder embeds the queries).
        ranker: Ranks chunks (default: a :class:`~proxypointer.retrieve.ranking.Ranker` of ``index``).

    Example:
        >>> sections = Retriever(Index(".proxypointer")).retrieve("parental leave pay", k=3)  # doctest: +SKIP
        >>> print(sections[0].citation, " > ".join(sections[0].breadcrumb))                    # doctest: +SKIP
    """

    def __init__(self, index: Store, *, ranker: Ranker | None = None) -> None:
        self.index = index
        self.config = index.config.retrieval
        self.ranker = ranker or Ranker(index)
        self._lines = LRU(64)  # doc_hash -> stored lines
        self._tokens = LRU(256)  # doc_hash -> word pieces per line
        self._reader = LRU(256)  # the same, data-URI payloads counted as their placeholders
        self._pages = LRU(64)  # doc_hash -> page map, or None

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
            ``full_ranks``) and an ``outline`` of its children.

        Raises:
            ConfigError: If ``k`` < 1, the query is empty, or a filter is not supported.
            StoreError: If the store folder holds no store, or Chroma fails.
            StaleSourceError: If the documents kept changing under the query (a writer
                replacing them on every attempt). A document whose stored source is missing
                is left out of the answer with a warning (``proxypointer check --repair``).
        """
        check_query(query)
        k = self.config.k if k is None else k
        if k < 1:
            raise ConfigError(f"k: expected an int >= 1, got {k}")
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
        route = self.ranker.route(query, scope.where)
        found = self._candidates(route, k)
        if route.named and len(found) < k:  # the named document has fewer than k sections
            found = self._fill(found, self._candidates(Route(route.query, scope.where), k), k)
        return self._sections(found)

    def _candidates(self, route: Route, k: int) -> list[_Candidate]:
        """Rank chunks, score sections, over-fetch more until ``k`` are found or none are left.

        The one over-fetch loop of every scoring mode (dense or hybrid, max, sum or rrf, routed,
        nested keep or merge). With ``demote_empty``, sections whose only chunk is
        breadcrumb-only go after the others, and the loop goes on until ``k`` sections with
        text are found.

        Ids first: ranking and grouping use the pointers carried by chunk ids; records are read
        for the winners only (docs/benchmarks.md, query latency).
        """
        cfg = self.config
        n = max(cfg.overfetch, 3 * k)
        total = -1  # counted only when the first over-fetch falls short (a Chroma call saved)
        while True:
            ranking = self.ranker.rank(route, n)
            scored = score_sections(ranking.hits, cfg.section_scoring, cfg.section_top_n, cfg.rrf_k)
            scored = place_sections(scored, ranking.placed, cfg.implied_rank)
            found = [_Candidate(group[0], group[0], score, ranking, tuple(group)) for score, group in scored]
            if cfg.nested == "merge":
                found = self._merge_nested(found)
            with_text = len(found)
            if cfg.demote_empty:
                found, with_text = self._demote_empty(found, k, {*ranking.labelled, *ranking.placed}, route.query)
            if with_text >= k:
                return found[:k]
            total = self.index.store.count() if total < 0 else total
            if n >= total:
                return found[:k]
            n *= 2

    def _demote_empty(
        self, found: list[_Candidate], k: int, labelled: set[str], query: str
    ) -> tuple[list[_Candidate], int]:
        """Move sections whose best chunk is breadcrumb-only (``empty_body``) after the others.

        Reads the records of the candidates in rank order, ``k`` at a time, until ``k`` with
        text are known (the rest keep their order behind them). A section named by a label in
        the query (its chunk in ``labelled``), or whose own title answers the query
        (:func:`~proxypointer.store.terms.title_answers`), stays where it is.

        Returns:
            ``(candidates, known with text)``: those with text first.
        """
        text: list[_Candidate] = []
        empty: list[_Candidate] = []
        i = 0
        while i < len(found) and len(text) < k:
            batch = found[i : i + k]
            i += k
            full = {h.chunk_id: h for h in self.ranker.hydrate([c.section for c in batch])}
            for c in batch:
                h = full.get(c.section.chunk_id)
                if h is None:  # gone meanwhile: _sections raises StaleSourceError and searches again
                    text.append(c)
                    continue
                c = replace(c, section=h, chunk=h if c.chunk.chunk_id == h.chunk_id else c.chunk)
                if demoted(h, labelled, query):
                    empty.append(c)
                else:
                    text.append(c)
        return text + empty + found[i:], len(text)

    def _fill(self, first: list[_Candidate], more: list[_Candidate], k: int) -> list[_Candidate]:
        keys = {_key(c.section) for c in first}
        out = first + [c for c in more if _key(c.section) not in keys]
        return (self._merge_nested(out) if self.config.nested == "merge" else out)[:k]

    def _sections(self, candidates: Sequence[_Candidate]) -> list[Section]:
        """Read the records of ranked candidates and build their sections.

        A document whose stored source is missing (deleted by hand, a damaged store) is left
        out with a warning: the others still answer.

        Raises:
            StaleSourceError: If a record vanished (a writer replaced the document meanwhile).
        """
        bare = {h.chunk_id: h for c in candidates for h in (c.section, c.chunk)}
        full = {h.chunk_id: h for h in self.ranker.hydrate(list(bare.values()))}
        if len(full) < len(bare):
            raise StaleSourceError("a chunk hit was deleted by a writer during the query")
        cosine: dict[str, float] = {}
        for c in candidates:
            if c.chunk.chunk_id in c.ranking.cosine:
                cosine[c.chunk.chunk_id] = c.ranking.cosine[c.chunk.chunk_id]
        by_ranking: dict[int, tuple[Ranking, list[str]]] = {}
        for c in candidates:
            if c.chunk.chunk_id not in cosine:  # found by lexical search only
                by_ranking.setdefault(id(c.ranking), (c.ranking, []))[1].append(c.chunk.chunk_id)
        for ranking, ids in by_ranking.values():
            if ranking.vectors is not None:
                cosine.update(self.ranker.cosines(ids, ranking.vectors))
        cfg = self.config
        out: list[Section] = []
        used = 0
        missing: set[str] = set()  # documents whose stored source is gone: skipped, said once
        for rank, c in enumerate(candidates, 1):
            room = max(0, cfg.delivery_budget_tokens - used) if cfg.delivery_budget_tokens else None
            meta = full[c.section.chunk_id].metadata
            if meta["doc_hash"] in missing:
                continue
            try:
                sec = self._section(full[c.section.chunk_id], full[c.chunk.chunk_id],
                                    cosine.get(c.chunk.chunk_id, 0.0), c.rank_score, c.group,
                                    "query" if c.chunk.chunk_id in c.ranking.labelled else "",
                                    tail=bool(cfg.tail_own_tokens) and rank > cfg.full_ranks, room=room)
            except StaleSourceError:
                if self.index.registry.sources.has(meta["doc_hash"]):
                    raise  # a writer replaced the document meanwhile: the caller searches again
                missing.add(meta["doc_hash"])
                logger.warning("%s: its stored source is missing; its sections are left out of the answer "
                               "(run `proxypointer check --repair`, then ingest the file again)", meta["doc_id"])
                continue
            if room is not None:
                toks = self.reader_tokens(full[c.section.chunk_id].metadata["doc_hash"])
                used += sum(toks[sec.text_start_line - 1 : sec.text_end_line])
            out.append(sec)
        return out

    def section_of_hit(self, hit: Hit, score: float, rank_score: float, group: Sequence[Hit] = ()) -> Section:
        """Build the section of a hydrated chunk hit, with that chunk as its best-ranked chunk.

        Args:
            hit: The chunk hit (its metadata is the section's pointer).
            score: See :attr:`Section.score`.
            rank_score: See :attr:`Section.rank_score`.
            group: The section's hits, best first (the seed of an excerpt; default ``hit``).

        Returns:
            The section, delivered by the policy of ``retrieval.subtree_cap_tokens``.
        """
        return self._section(hit, hit, score, rank_score, tuple(group) or (hit,))

    def _source_path(self, metadata: dict[str, Any]) -> str:
        """Return the file a hit's document is now read from: the registry's path for that content.

        A chunk's ``source`` metadata is the path at the time it was embedded; a folder moved
        and ingested again keeps the chunks (same content) and updates only the registry, so
        the registry's path wins while it records the same content (``doc_hash``).
        """
        stored = str(metadata.get("source", ""))
        record = self.index.registry.get(str(metadata.get("doc_id", "")))
        if record is not None and record.doc_hash == metadata.get("doc_hash") and record.source_path:
            return record.source_path
        return stored

    def _section(self, section: Hit, chunk: Hit, score: float, rank_score: float,
                 group: Sequence[Hit] = (), reached_via: str = "", tail: bool = False,
                 room: int | None = None) -> Section:
        m, c = section.metadata, chunk.metadata
        start, end = int(m["start_line"]), int(m["end_line"])
        lines = self.source_lines(m["doc_hash"])
        source = self._source_path(m)
        delivery = None
        if self.config.subtree_cap_tokens > 0:
            live = self.ranker.trees.get(m["doc_id"], m.get("version"))
            node = live.node(m["node_id"]) if live is not None else None
            own = [h for h in (chunk, *group) if h.metadata.get("node_id") == m["node_id"]]
            delivery = self.deliver(
                m["doc_hash"], m["doc_id"], source, start, end,
                node.body_end_line if node is not None else int(m.get("body_end_line", end)),
                live.tree.children(node.node_id) if node is not None else (),
                own,
                STATEMENT_HEAD_LINES if statement_kind(str(m.get("title", ""))) else 0,
                tail=tail,
                room=room,
            )
        return build_section(
            doc_id=m["doc_id"],
            node_id=m["node_id"],
            title=m.get("title", ""),
            breadcrumb=json.loads(m.get("breadcrumb_json", "[]")),
            kind=m.get("kind", "heading"),
            level=int(m.get("level", 0)),
            start_line=start,
            end_line=end,
            lines=lines,
            source=source,
            score=score,
            rank_score=rank_score,
            chunk_id=chunk.chunk_id,
            chunk_text=chunk.text,
            chunk_start_line=int(c.get("chunk_start_line", start)),
            chunk_end_line=int(c.get("chunk_end_line", end)),
            reached_via=reached_via,
            delivery=delivery,
            tokenizer=self.index.embedder.tokenizer,
            pages=self.source_pages(m["doc_hash"]),
        )

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
        """Apply the delivery policy (``retrieval.subtree_cap_tokens``) to one section.

        Args:
            doc_hash: The document version's stored text.
            doc_id: Its id (for citations).
            source: Path it was indexed from (its suffix goes in citations).
            start_line: The section's first line, 1-based inclusive.
            end_line: Its last line (whole subtree), 1-based inclusive.
            body_end_line: Last line of its own text, 1-based inclusive.
            children: Its child nodes, in document order.
            hits: Its own chunk hits that ranked, best first (the seed of an excerpt); those
                without text and metadata are read from their records.
            head_lines: An excerpt also takes in the section's first this many lines when the
                span from them to its best chunks fits the window (a statement's title and
                column headers, without which its rows cannot be read); 0: no.
            tail: The section ranks after ``retrieval.full_ranks``: its own text is delivered
                under ``retrieval.tail_own_tokens`` (when set) instead of ``own_text_tokens``.
            room: Word pieces left of ``retrieval.delivery_budget_tokens`` after the sections
                ranked above; a subtree that fits is delivered whole. None: no budget.

        Returns:
            The delivery (:func:`~proxypointer.retrieve.delivery.plan_delivery`).
        """
        cfg = self.config
        cap, own_cap, window = cfg.subtree_cap_tokens, cfg.own_text_tokens, cfg.excerpt_tokens
        toks = self.reader_tokens(doc_hash)
        whole = sum(toks[start_line - 1 : end_line])
        if room is not None and whole <= room:
            cap = 0  # the whole subtree fits what is left of retrieval.delivery_budget_tokens
        elif tail and cfg.tail_own_tokens:
            window = min(window or own_cap, cfg.tail_own_tokens)
            own_cap = min(own_cap, cfg.tail_own_tokens)
        ranges: list[tuple[int, int]] = []
        if cap and whole > cap:
            own = sum(toks[start_line - 1 : max(start_line, min(body_end_line, end_line))])
            if own > own_cap and hits:  # an excerpt: where did its chunks match?
                unique = list({h.chunk_id: h for h in hits}.values())
                for h in self.ranker.hydrate(unique):
                    hm = h.metadata
                    ranges.append((int(hm.get("chunk_start_line", start_line)),
                                   int(hm.get("chunk_end_line", end_line))))
                if head_lines > 0:
                    ranges.append((start_line, min(start_line + head_lines - 1, body_end_line)))
        return plan_delivery(
            start_line=start_line,
            end_line=end_line,
            body_end_line=body_end_line,
            children=children,
            line_tokens=toks,
            chunks=ranges,
            cap_tokens=cap,
            own_tokens=own_cap,
            citation_base=f"{doc_id}{Path(source).suffix or '.md'}",
            excerpt_tokens=window,
        )

    def reader_tokens(self, doc_hash: str) -> list[int]:
        """Word pieces of each stored line as a reader is shown it (index 0 is line 1).

        :meth:`line_tokens`, except that a line with an inline base64 ``data:`` payload counts
        it as its placeholder (``[image: alt]``, shared case 31: ``ask`` shows the model that,
        and a payload must not make a one-paragraph section "big"). The delivery policy
        measures sections with these counts.
        """
        counts = self.line_tokens(doc_hash)
        got = self._reader.get(doc_hash, _MISSING)
        if got is not _MISSING:
            return got
        lines = self.source_lines(doc_hash)
        tok = self.index.embedder.tokenizer
        got = counts
        if any("base64," in x for x in lines):
            got = [tok.count(replace_data_uris(x)) if "base64," in x else n for x, n in zip(lines, counts, strict=True)]
        self._reader.put(doc_hash, got)
        return got

    def line_tokens(self, doc_hash: str) -> list[int]:
        """Word pieces of each stored line of a document version (index 0 is line 1), from a small LRU.

        Read from the counts ingest stored beside the text
        (:meth:`~proxypointer.store.sources.StoredSources.load_line_tokens`); counted here only for a
        store written without them (tokenising a filing's lines took 117 ms on average, 29
        FinanceBench filings in 3.4 s: the tail of a query's first read of a document;
        docs/benchmarks.md, "Latency round").

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        counts = self._tokens.get(doc_hash, _MISSING)
        if counts is not _MISSING:
            return counts
        tok = self.index.embedder.tokenizer
        name = getattr(tok, "name", None)
        counts = self.index.registry.sources.load_line_tokens(doc_hash, name) if isinstance(name, str) else None
        lines = self.source_lines(doc_hash)
        if counts is None or len(counts) != len(lines):
            path = self.index.registry.sources.tokens_file(doc_hash)
            if isinstance(name, str) and path.exists():
                logger.warning("%s: stored word pieces per line cannot be used; counted for this query"
                               " (`proxypointer check --repair` rewrites them)", path)
            counts = line_token_counts(lines, tok)
        self._tokens.put(doc_hash, counts)
        return counts

    def source_lines(self, doc_hash: str) -> list[str]:
        """Lines of a stored source (index 0 is line 1), from a small LRU (sources are immutable).

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        lines = self._lines.get(doc_hash, _MISSING)
        if lines is not _MISSING:
            return lines
        lines = split_lines(self.index.registry.sources.load(doc_hash))
        self._lines.put(doc_hash, lines)
        return lines

    def source_pages(self, doc_hash: str) -> PageMap | None:
        """Page map of a stored source, or None when it has no pages (small LRU, like the lines).

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        pages = self._pages.get(doc_hash, _MISSING)
        if pages is not _MISSING:
            return pages
        stored = self.index.registry.sources.load_pages(doc_hash)
        pages = None
        if stored is not None:
            lines = self.source_lines(doc_hash)
            try:
                pages = stored_page_map(stored, lines)
            except ValueError:
                logger.warning("stored page map of %s does not fit its text; pages left out (run `proxypointer check`)",
                               doc_hash[:12])
        self._pages.put(doc_hash, pages)
        return pages

    # -- nested sections ----------------------------------------------------------------------
    def _merge_nested(self, found: list[_Candidate]) -> list[_Candidate]:
        """Merge ranked sections that nest (``retrieval.nested: merge``), keeping rank order.

        A section inside one already taken is dropped; a section enclosing taken ones takes the
        place of the first of them (its rank score and its best chunk, which lies inside the
        enclosing section) and the others are dropped. Sections of unknown extent, and sections
        spanning more than half of their document, stay as ranked and neither absorb nor are
        absorbed.
        """
        out: list[_Candidate] = []
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
                out[first], spans[first] = _Candidate(c.section, taken.chunk, taken.rank_score, taken.ranking), span
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
        live = self.ranker.trees.get(m.get("doc_id", ""), m.get("version", ""))
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

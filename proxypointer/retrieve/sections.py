"""Sections: what a query returns, built from ranked chunk hits or tree nodes, with their citations.

A :class:`Section` is a whole section of a stored document: its pointer (doc_id, node_id, line
range), its breadcrumb, the text the delivery policy gives (:mod:`proxypointer.retrieve.delivery`)
sliced from the *stored copy* of what was indexed, its scores and its citation
(:func:`format_citation`). Every Section is made by :func:`build_section`;
:class:`SectionBuilder` builds them from ranked candidates
(:mod:`proxypointer.retrieve.candidates`). Lines are 1-based inclusive; tokens are word pieces
of the embedding model's tokenizer without special tokens; scores are higher-is-better.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StaleSourceError
from ..lines import slice_lines
from ..store.chroma import Hit
from ..tree.pages import PageMap
from ..tree.titles import statement_kind
from .delivery import Delivery, DeliveryPolicy, OutlineEntry, cut_to_tokens

if TYPE_CHECKING:
    from ..config import RetrievalConfig
    from ..store.folder import StoreView
    from .candidates import Candidate
    from .live import LiveTrees
    from .ranking import Ranking
    from .stored import StoredTexts

__all__ = ["STATEMENT_HEAD_LINES", "Section", "SectionBuilder", "build_section", "format_citation"]

logger = logging.getLogger(__name__)

#: Lines at the start of a financial statement's section (its title, the units and the column
#: headers: ``(in millions) 2022 2021 2020``) that an excerpt of it takes in when they fit with
#: its best chunks (:meth:`DeliveryPolicy.deliver`): rows without their years cannot be read.
STATEMENT_HEAD_LINES = 5


@dataclass(frozen=True, slots=True)
class Section:
    r"""A whole section returned by :meth:`~proxypointer.retrieve.retriever.Retriever.retrieve`, best first.

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
            ``retrieval.section_scoring`` over fused RRF chunk scores; with a reranker
            (``rerank.backend``), its score (:mod:`proxypointer.retrieve.rerank`). Comparable
            only within one result list.
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
        page_start: First PDF page (a deck's slide), 1-based; 0: no pages.
        page_end: Last PDF page (slide), 1-based inclusive.

    Returns:
        ``handbook.md#L120-L188`` without pages; for a PDF
        ``AMD_2022_10K.pdf#page=45 (pp. 45-46; L1203-L1240)`` (``#page=N`` is the standard PDF
        open parameter, RFC 8118: a link opens the viewer at that page; ``p. 45`` for one page);
        for a deck, whose pages are its slides, ``deck.pptx#slide=12 (slide 12; L40-L52)``;
        for markdown with page markers ``report.md#L1203-L1240 (pp. 45-46)``.

    Example:
        >>> format_citation("AMD_2022_10K", "/d/AMD_2022_10K.pdf", 1203, 1240, 45, 46)
        'AMD_2022_10K.pdf#page=45 (pp. 45-46; L1203-L1240)'
    """
    suffix = Path(source).suffix or ".md"
    lines = f"L{start_line}-L{end_line}"
    if page_start <= 0:
        return f"{doc_id}{suffix}#{lines}"
    if suffix.lower() == ".pptx":  # a deck's pages are its slides
        slides = f"slide {page_start}" if page_end <= page_start else f"slides {page_start}-{page_end}"
        return f"{doc_id}{suffix}#slide={page_start} ({slides}; {lines})"
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



class SectionBuilder:
    """Build the sections of ranked chunk hits: pointer, delivered text, scores, citation.

    Thread-safe: it keeps no state (the stored texts and trees it reads are cached and locked).

    Args:
        store: The store read (its registry's document paths and stored sources, its
            embedder's tokenizer; looked up on each call).
        config: The retrieval settings (``subtree_cap_tokens``, ``delivery_budget_tokens``,
            ``tail_own_tokens``, ``full_ranks``).
        texts: Stored lines, word pieces per line and page maps.
        trees: Stored trees of live document versions (a section's own text and children).
        policy: The delivery policy.
        hydrate: Reads the records of chunk hits that lack them, in order
            (:meth:`~proxypointer.retrieve.ranking.Ranker.hydrate`).
        cosines: Cosine similarity of stored chunk vectors to query vectors
            (:meth:`~proxypointer.retrieve.ranking.Ranker.cosines`).
    """

    def __init__(
        self,
        store: StoreView,
        config: RetrievalConfig,
        texts: StoredTexts,
        trees: LiveTrees,
        policy: DeliveryPolicy,
        hydrate: Callable[[Sequence[Hit]], list[Hit]],
        cosines: Callable[[Sequence[str], np.ndarray], dict[str, float]],
    ) -> None:
        self.store = store
        self.config = config
        self.texts = texts
        self.trees = trees
        self.policy = policy
        self.hydrate = hydrate
        self.cosines = cosines

    def sections(self, candidates: Sequence[Candidate], missing: set[str] | None = None) -> list[Section]:
        """Read the records of ranked candidates and build their sections, in order.

        A document whose stored source is missing (deleted by hand, a damaged store) is left
        out with a warning: the others still answer.

        Args:
            candidates: Ranked candidates (:meth:`CandidateFinder.find`).
            missing: When given, the doc ids of the documents left out are added to it, so
                that the caller can search again without them.

        Raises:
            StaleSourceError: If a record vanished (a writer replaced the document meanwhile).
        """
        bare = {h.chunk_id: h for c in candidates for h in (c.section, c.chunk)}
        full = {h.chunk_id: h for h in self.hydrate(list(bare.values()))}
        if len(full) < len(bare):
            raise StaleSourceError("a chunk hit was deleted by a writer during the query")
        cosine = self._cosines(candidates)
        cfg = self.config
        out: list[Section] = []
        used = 0
        missing_hashes: set[str] = set()  # documents whose stored source is gone: skipped, said once
        for rank, c in enumerate(candidates, 1):
            room = max(0, cfg.delivery_budget_tokens - used) if cfg.delivery_budget_tokens else None
            meta = full[c.section.chunk_id].metadata
            if meta["doc_hash"] in missing_hashes:
                continue
            try:
                sec = self.section(full[c.section.chunk_id], full[c.chunk.chunk_id],
                                   cosine.get(c.chunk.chunk_id, 0.0), c.rank_score, c.group,
                                   "query" if c.chunk.chunk_id in c.ranking.labelled else "",
                                   tail=bool(cfg.tail_own_tokens) and rank > cfg.full_ranks, room=room)
            except StaleSourceError:
                if self.store.registry.sources.has(meta["doc_hash"]):
                    raise  # a writer replaced the document meanwhile: the caller searches again
                missing_hashes.add(meta["doc_hash"])
                if missing is not None:
                    missing.add(meta["doc_id"])
                logger.warning("%s: its stored source is missing; its sections are left out of the answer "
                               "(run `proxypointer check --repair`, then ingest the file again)", meta["doc_id"])
                continue
            if room is not None:
                toks = self.texts.reader_tokens(full[c.section.chunk_id].metadata["doc_hash"])
                used += sum(toks[sec.text_start_line - 1 : sec.text_end_line])
            out.append(sec)
        return out

    def _cosines(self, candidates: Sequence[Candidate]) -> dict[str, float]:
        """Cosine similarity of each candidate's best chunk: from its ranking, else read (lexical-only hits)."""
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
                cosine.update(self.cosines(ids, ranking.vectors))
        return cosine

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
        return self.section(hit, hit, score, rank_score, tuple(group) or (hit,))

    def source_path(self, metadata: dict[str, Any]) -> str:
        """Return the file a hit's document is now read from: the registry's path for that content.

        A chunk's ``source`` metadata is the path at the time it was embedded; a folder moved
        and ingested again keeps the chunks (same content) and updates only the registry, so
        the registry's path wins while it records the same content (``doc_hash``).
        """
        stored = str(metadata.get("source", ""))
        record = self.store.registry.get(str(metadata.get("doc_id", "")))
        if record is not None and record.doc_hash == metadata.get("doc_hash") and record.source_path:
            return record.source_path
        return stored

    def section(self, section: Hit, chunk: Hit, score: float, rank_score: float,
                group: Sequence[Hit] = (), reached_via: str = "", tail: bool = False,
                room: int | None = None) -> Section:
        """Build one section from its pointer hit and its best-ranked chunk (both hydrated).

        Args:
            section: The hit whose metadata is the section's pointer.
            chunk: Its best-ranked chunk (may be ``section``).
            score: See :attr:`Section.score`.
            rank_score: See :attr:`Section.rank_score`.
            group: The section's hits, best first (its own ones seed an excerpt).
            reached_via: See :attr:`Section.reached_via`.
            tail: It ranks after ``retrieval.full_ranks`` (see :meth:`DeliveryPolicy.deliver`).
            room: Word pieces left of ``retrieval.delivery_budget_tokens``; None: no budget.

        Raises:
            StaleSourceError: If the stored copy is missing or shorter than the pointer.
        """
        m, c = section.metadata, chunk.metadata
        start, end = int(m["start_line"]), int(m["end_line"])
        lines = self.texts.lines(m["doc_hash"])
        source = self.source_path(m)
        delivery = None
        if self.config.subtree_cap_tokens > 0:
            live = self.trees.get(m["doc_id"], m.get("version"))
            node = live.node(m["node_id"]) if live is not None else None
            own = [h for h in (chunk, *group) if h.metadata.get("node_id") == m["node_id"]]
            delivery = self.policy.deliver(
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
            tokenizer=self.store.embedder.tokenizer,
            pages=self.texts.pages(m["doc_hash"]),
        )

"""Retrieval: query -> chunk hits -> deduplicated (doc_id, node_id) -> whole sections.

A chunk is only a proxy for a location: hits are deduplicated by (doc_id, node_id) in rank
order, over-fetching until ``k`` distinct sections are found (shared case 27), and each
section is sliced from the *stored copy* of the text that was indexed, so a pointer can never
point into a file whose lines have moved.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .assembly import LexicalIndex, cut_to_tokens, fuse_rrf, matches_where, pack_windows, rank_sections
from .conversation import Turn, contextual_query
from .errors import ConfigError, StaleSourceError
from .pipeline import Index
from .references import DocumentReferences
from .store import Hit
from .tree import Node, slice_lines, split_lines

__all__ = ["Retriever", "Section"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Section:
    r"""A whole section returned by :meth:`Retriever.retrieve`, best first.

    Attributes:
        doc_id: Document id (path relative to the ingested folder, no suffix).
        node_id: Stable node id (``preamble``, or ``w0001``... for fallback windows).
        title: Section title.
        breadcrumb: Titles from the document title down to this section.
        start_line: First line, 1-based inclusive: the heading line itself.
        end_line: Last line, 1-based inclusive (the whole subtree).
        text: Exact stored source lines ``start_line..end_line``, joined with ``\\n``.
        score: Cosine similarity of its best chunk; higher is better.
        chunk_text: Text of that best-matching chunk.
        citation: ``<doc_id><suffix>#L<start>-L<end>``, e.g. ``handbook.md#L120-L188``.
        source: Path of the file the section was indexed from.
        kind: ``heading``, ``preamble`` or ``window``.
        level: Heading level (0 for preamble and windows).
        chunk_start_line: First line of the best-matching chunk, 1-based inclusive.
        chunk_end_line: Last line of the best-matching chunk, 1-based inclusive.
        delivered_start_line: First line delivered by :meth:`Retriever.assemble`, 1-based
            inclusive; 0 from :meth:`Retriever.retrieve` (which delivers ``text``, the whole
            section ``start_line..end_line``).
        delivered_end_line: Last line delivered by ``assemble`` (its text may stop inside this
            line when the budget ran out), 1-based inclusive; 0 from ``retrieve``.
        delivered_text: What ``assemble`` delivers: the stored lines
            ``delivered_start_line..delivered_end_line`` joined with ``\\n``, cut at a word-piece
            boundary when the budget ran out; ``""`` from ``retrieve``.
        delivered_tokens: Word pieces of ``delivered_text`` (embedding model's tokenizer, no
            special tokens); 0 from ``retrieve``.
        reached_via: For a section added by :meth:`Retriever.add_references`, the citing
            section as ``<breadcrumb> (L<start>-L<end>)`` (``"query"`` for a label named in the
            query, see :meth:`Retriever.retrieve_with_references`); ``""`` otherwise.
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
    delivered_start_line: int = 0
    delivered_end_line: int = 0
    delivered_text: str = ""
    delivered_tokens: int = 0
    reached_via: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (breadcrumb as a list)."""
        d = asdict(self)
        d["breadcrumb"] = list(self.breadcrumb)
        return d


class Retriever:
    """Query an :class:`~proxypointer.pipeline.Index` and get whole sections back.

    Args:
        index: The index to read (its embedder embeds the queries).

    Example:
        >>> sections = Retriever(Index(".proxypointer")).retrieve("parental leave pay", k=3)  # doctest: +SKIP
        >>> print(sections[0].citation, " > ".join(sections[0].breadcrumb))                    # doctest: +SKIP
    """

    def __init__(self, index: Index) -> None:
        self.index = index
        self.config = index.config.retrieval

    def hits(self, query: str, n: int, where: dict[str, Any] | None = None, *, hydrate: bool = True) -> list[Hit]:
        """Raw chunk hits of live document versions, best first (no deduplication).

        Args:
            query: Question or keywords.
            n: Chunks fetched before the live-version check (so up to ``n`` come back).
            where: Chroma metadata filter. A plain ``doc_id`` filter over at most
                :data:`EXACT_SEARCH_MAX_CHUNKS` live chunks is searched exactly, by scoring
                those chunks' stored vectors, instead of by Chroma's filtered HNSW search
                (111 vs ~6 ms for one paper at 100k chunks, docs/benchmarks.md).
            hydrate: Read each hit's text and metadata (see :meth:`hydrate`). When false, ``text`` is
                ``""`` and ``metadata`` holds only ``doc_id``, ``version``, ``node_id`` and
                ``chunk_index`` (parsed from the chunk id); :meth:`hydrate` reads the rest.

        Returns:
            Hits with cosine similarity scores, best first.

        Raises:
            StoreError: If Chroma fails.
            ConfigError: If the store was built with another embedding model (or the same
                model with ``quantize_int8`` set differently).
        """
        self.index.check_model(record=False)  # vectors of another model would rank nonsense
        vector = (
            self.index.embedder.encode_query(query)
            if hasattr(self.index.embedder, "encode_query")
            else self.index.embedder.encode([query])[0]
        )
        pairs = self._exact_search(vector, n, where)
        if pairs is None:
            pairs = self.index.store.query_ids(vector, n, where)
        found = self._live([_id_hit(cid, score) for cid, score in pairs])
        return self.hydrate(found) if hydrate else found

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

    def _exact_search(self, vector: Any, n: int, where: dict[str, Any] | None) -> list[tuple[str, float]] | None:
        """Exact top-``n`` over the live chunks of a plain doc_id filter; ``None`` when not applicable."""
        doc_ids = _filter_doc_ids(where)
        if doc_ids is None:
            return None
        ids = self.index.registry.live_chunk_ids(doc_ids, EXACT_SEARCH_MAX_CHUNKS)
        if ids is None:
            return None
        found, vectors = self.index.store.vectors(ids)
        if not found:
            return []
        scores = vectors @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:n]
        return [(found[i], float(scores[i])) for i in order]

    def _live(self, hits: list[Hit]) -> list[Hit]:
        versions = self.index.registry.live_versions(h.metadata.get("doc_id", "") for h in hits)
        out = []
        for h in hits:
            live = versions.get(h.metadata.get("doc_id", ""))
            if live and h.metadata.get("version") == live[0]:
                out.append(h)
        return out

    def _where(
        self, where: dict[str, Any] | None, doc_ids: Sequence[str] | None, source_prefix: str | None
    ) -> dict[str, Any] | None:
        clauses: list[dict[str, Any]] = [where] if where else []
        ids = list(doc_ids) if doc_ids else None
        if source_prefix is not None:
            pref = [r.doc_id for r in self.index.registry.documents() if r.doc_id.startswith(source_prefix)]
            ids = [i for i in ids if i in set(pref)] if ids is not None else pref
        if ids is not None:
            clauses.append({"doc_id": ids[0]} if len(ids) == 1 else {"doc_id": {"$in": ids or [""]}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    # -- hybrid ranking and context assembly (docs/evaluation.md) ------------------------
    def ranked_hits(
        self, query: str, n: int, where: dict[str, Any] | None = None, *, hydrate: bool = True
    ) -> list[Hit]:
        """Chunk hits best first: dense, fused with BM25 (``retrieval.hybrid``) and title routing.

        With ``retrieval.title_routing_docs`` > 0 and more documents searchable than that, the
        documents are ranked by BM25 of the query against their titles. If the query contains
        one of the best titles verbatim (case and spacing ignored), the search is restricted
        to that document and the title is removed from the query; otherwise the dense hits
        inside the best documents are fused as a third ranking (``title_routing_weight``).

        Args:
            query: Question or keywords.
            n: Dense hits fetched (and BM25 hits, when hybrid).
            where: Chroma metadata filter (applied to BM25 hits too).
            hydrate: Read text and metadata of every hit (see :meth:`hits`).

        Returns:
            Live chunk hits; ``score`` is the cosine similarity (dense only) or the fused
            reciprocal-rank score; higher is better either way.
        """
        cfg = self.config
        best = self._title_docs(query, where) if cfg.title_routing_docs else []
        named = [(d, t) for d, t in best if _normal(t) and _normal(t) in _normal(query)]
        if named:
            query = _strip_titles(query, [t for _, t in named])
            flt = _doc_filter([d for d, _ in named])
            where = {"$and": [where, flt]} if where else flt
            best = []
        dense = self.hits(query, n, where, hydrate=False)
        rankings, weights = [dense], [1.0]
        if cfg.hybrid:
            rankings.append(self._lexical().search(query, n, lambda h: matches_where(h.metadata, where)))
            weights.append(cfg.lexical_weight)
        if best and cfg.title_routing_weight > 0:
            rankings.append(self.hits(query, n, _doc_filter([d for d, _ in best]), hydrate=False))
            weights.append(cfg.title_routing_weight)
        ranked = dense if len(rankings) == 1 else fuse_rrf(rankings, weights, cfg.rrf_k)
        return self.hydrate(ranked) if hydrate else ranked

    def _title_docs(self, query: str, where: dict[str, Any] | None) -> list[tuple[str, str]]:
        """``(doc_id, title)`` of the documents whose titles best match the query (BM25), best first.

        Empty when the filter is not a plain doc_id filter or already allows at most
        ``retrieval.title_routing_docs`` documents.
        """
        allowed: set[str] | None = None
        if where is not None:
            ids = _filter_doc_ids(where)
            if ids is None:
                return []
            allowed = set(ids)
        m = self.config.title_routing_docs
        if allowed is not None and len(allowed) <= m:
            return []
        records = self.index.registry.documents()
        key = tuple(sorted((r.doc_id, r.title) for r in records))
        cached = getattr(self, "_title_cache", None)
        if cached is None or cached[0] != key:
            fake = [Hit(r.doc_id, r.title, {"doc_id": r.doc_id}, 0.0) for r in records if r.version]
            cached = self._title_cache = (key, LexicalIndex(fake))
        keep = (lambda h: h.metadata["doc_id"] in allowed) if allowed is not None else None
        return [(h.metadata["doc_id"], h.text) for h in cached[1].search(query, m, keep)]

    def _lexical(self) -> LexicalIndex:
        """BM25 index over every live chunk in the store, rebuilt when the registry's generation moves."""
        count = self.index.registry.generation()  # moves with every commit or delete, any process
        cached = getattr(self, "_lexical_cache", None)
        if cached is None or cached[0] != count:
            records = []
            ids = self.index.store.all_ids()
            step = self.index.store.max_batch
            for i in range(0, len(ids), step):
                records.extend(self.index.store.get(ids[i : i + step]))
            records.sort(key=lambda h: h.chunk_id)
            # Index what was embedded: the breadcrumb (document title, section path) and the text.
            cached = (
                count,
                LexicalIndex(self._live(records), lambda h: f"{h.metadata.get('breadcrumb', '')}\n{h.text}"),
            )
            self._lexical_cache = cached
            logger.info("BM25 index over %d chunks", len(cached[1].hits))
        return cached[1]

    def _lines_and_tokens(self, doc_hash: str) -> tuple[list[str], list[int]]:
        """Return the stored lines of a document version and the word pieces of each line.

        Kept for the 256 versions used last, so repeated assembly reads each source once.
        """
        cache = getattr(self, "_token_cache", None)
        if cache is None:
            cache = self._token_cache = OrderedDict()
        if doc_hash not in cache:
            lines = split_lines(self.index.registry.load_source(doc_hash))
            tok = self.index.embedder.tokenizer
            counts = tok.count_batch(lines) if hasattr(tok, "count_batch") else [tok.count(x) for x in lines]
            cache[doc_hash] = (lines, counts)
            while len(cache) > 256:
                cache.popitem(last=False)
        cache.move_to_end(doc_hash)
        return cache[doc_hash]

    def _line_tokens(self, doc_hash: str) -> list[int]:
        """Word pieces of each stored line of a document version (index 0 is line 1)."""
        return self._lines_and_tokens(doc_hash)[1]

    def assemble(
        self,
        query: str,
        budget_tokens: int | None = None,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> list[Section]:
        """Fill a context budget with the best-matching lines, each block with its section pointer.

        Chunk hits (dense, or hybrid) are ranked into sections (``retrieval.section_scoring``);
        then, in ``retrieval.assembly_order``, a section is delivered whole when it has at most
        ``retrieval.whole_section_tokens`` tokens and fits the budget left, otherwise the lines of
        the matched chunk; windows grow inside their sections while budget is left. No line is
        delivered twice (a parent after its child, overlapping chunks).

        Args:
            query: Question or keywords.
            budget_tokens: Context budget in word pieces of the embedding model's tokenizer (no
                special tokens); default ``retrieval.budget_tokens`` (2,000).
            where: Extra Chroma metadata filter.
            doc_ids: Only search these documents.
            source_prefix: Only search documents whose doc_id starts with this prefix.

        Returns:
            Delivered blocks in delivery order, each a :class:`Section` whose ``start_line`` /
            ``end_line`` / ``text`` give the whole section and ``delivered_*`` what is delivered.
            One section may give several blocks (disjoint line ranges). The ``delivered_tokens``
            sum to at most ``budget_tokens``: the last block is cut at a word-piece boundary.

        Raises:
            ConfigError: If ``budget_tokens`` < 1.
            StaleSourceError: If a stored source is missing.

        Example:
            >>> for s in Retriever(index).assemble("parental leave pay", 1000):  # doctest: +SKIP
            ...     print(s.citation, s.delivered_start_line, s.delivered_end_line)
        """
        budget = self.config.budget_tokens if budget_tokens is None else budget_tokens
        if budget < 1:
            raise ConfigError(f"budget_tokens: expected an int >= 1, got {budget}")
        cfg = self.config
        flt = self._where(where, doc_ids, source_prefix)
        n = max(cfg.overfetch, budget // 20)
        groups = rank_sections(self.ranked_hits(query, n, flt), cfg.section_scoring, cfg.section_top_n, cfg.rrf_k)
        windows = pack_windows(
            groups, self._line_tokens, budget, whole_section_tokens=cfg.whole_section_tokens, order=cfg.assembly_order
        )
        tok = self.index.embedder.tokenizer
        out: list[Section] = []
        used = 0
        for w, whole in zip(windows, self._sections([w.hit for w in windows]), strict=True):
            if used >= budget:
                break
            text = slice_lines(self._lines_and_tokens(w.hit.metadata["doc_hash"])[0], w.start_line, w.end_line)
            n_tok = w.tokens
            if used + n_tok > budget:
                text = cut_to_tokens(text, budget - used, tok)
                n_tok = tok.count(text)
            used += n_tok
            end = w.start_line + text.count("\n")
            out.append(
                replace(
                    whole,
                    delivered_start_line=w.start_line,
                    delivered_end_line=end,
                    delivered_text=text,
                    delivered_tokens=n_tok,
                )
            )
        return out

    def retrieve(
        self,
        query: str,
        k: int | None = None,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
        history: Sequence[Turn | str] | None = None,
    ) -> list[Section]:
        """Find the ``k`` best sections for a query.

        Args:
            query: Question or keywords.
            k: Sections wanted (default ``retrieval.k``, 5).
            where: Extra Chroma metadata filter, e.g. ``{"kind": "heading"}``.
            doc_ids: Only search these documents.
            source_prefix: Only search documents whose doc_id starts with this prefix
                (a folder of the corpus, e.g. ``"policies/"``).
            history: Earlier turns of a conversation, oldest first (a string is a bare
                question). A follow-up is then searched together with the previous question
                and the breadcrumbs of its sections (``conversation.contextual_query``).

        Returns:
            Up to ``k`` sections, distinct by (doc_id, node_id), ordered by the score of their
            best chunk (ties keep rank order). With ``retrieval.nested: merge`` no section lies
            inside another one returned: an enclosing section among the candidates takes the
            place of its best-ranked subsection. Fewer only when the collection holds fewer.

        Raises:
            ConfigError: If ``k`` < 1.
            StaleSourceError: If a stored source is missing (run ``proxypointer check``).
        """
        k = self.config.k if k is None else k
        if k < 1:
            raise ConfigError(f"k: expected an int >= 1, got {k}")
        if history:
            query = contextual_query(query, history)
        flt = self._where(where, doc_ids, source_prefix)
        try:
            return self._retrieve(query, k, flt)
        except StaleSourceError:
            # A writer replaced a document (and pruned its old stored source) between the
            # live-version check of a hit and its slicing: the second search sees the new one.
            logger.info("a document changed during the query; searching again")
            return self._retrieve(query, k, flt)

    def _retrieve(self, query: str, k: int, flt: dict[str, Any] | None) -> list[Section]:
        # Ids first: rank and deduplicate on the pointers carried by chunk ids, then read the
        # records of the k winners only (docs/benchmarks.md, query latency).
        cfg = self.config
        if cfg.hybrid or cfg.section_scoring != "max" or cfg.title_routing_docs:
            ranked = self.ranked_hits(query, max(cfg.overfetch, 3 * k), flt, hydrate=False)
            rank = {h.chunk_id: i for i, h in enumerate(ranked, 1)}
            groups = rank_sections(ranked, cfg.section_scoring, cfg.section_top_n, cfg.rrf_k)
            if cfg.nested == "keep":
                groups = groups[:k]
            best = [replace(g[0], score=_group_score(g, rank, cfg)) for g in groups]
            best = (self._merge_nested(best) if cfg.nested == "merge" else best)[:k]
        else:
            n = max(self.config.overfetch, 3 * k)
            total = -1  # counted only when the first over-fetch falls short (a Chroma call saved)
            while True:
                best = self._dedupe(self.hits(query, n, flt, hydrate=False))
                if cfg.nested == "merge":
                    best = self._merge_nested(best)
                if len(best) >= k:
                    break
                total = self.index.store.count() if total < 0 else total
                if n >= total:
                    break
                n *= 2
            best = best[:k]
        full = self.hydrate(best)
        if len(full) < len(best):
            raise StaleSourceError("a chunk hit was deleted by a writer during the query")
        return self._sections(full)

    def _merge_nested(self, hits: list[Hit]) -> list[Hit]:
        """Merge ranked sections that nest (``retrieval.nested: merge``), keeping rank order.

        A section inside one already taken is dropped; a section enclosing taken ones takes the
        place of the first of them (with its score) and the others are dropped. Sections of
        unknown extent, and sections spanning more than half of their document, stay as ranked
        and neither absorb nor are absorbed.
        """
        out: list[Hit] = []
        spans: list[tuple[str, int, int] | None] = []
        for h in hits:
            span = self._span(h)
            if span is None:
                out.append(h)
                spans.append(None)
                continue
            if any(o is not None and _encloses(o, span) for o in spans):
                continue
            inside = [i for i, o in enumerate(spans) if o is not None and _encloses(span, o)]
            if inside:
                first = inside[0]
                out[first], spans[first] = replace(h, score=out[first].score), span
                drop = set(inside[1:])
                out = [x for i, x in enumerate(out) if i not in drop]
                spans = [x for i, x in enumerate(spans) if i not in drop]
                continue
            out.append(h)
            spans.append(span)
        return out

    def _span(self, hit: Hit) -> tuple[str, int, int] | None:
        """Return ``(doc_id, start_line, end_line)`` of a hit's whole section, from the stored tree.

        ``None`` when unknown (a fallback window, a version no longer live) or broad (more than
        half of the document's lines).
        """
        m = hit.metadata
        doc_id, version = m.get("doc_id", ""), m.get("version", "")
        cache = getattr(self, "_spans_cache", None)
        if cache is None:
            cache = self._spans_cache = OrderedDict()
        key = (doc_id, version)
        if key not in cache:
            rec = self.index.registry.get(doc_id)
            nodes: dict[str, tuple[int, int]] = {}
            if rec is not None and rec.version == version:
                for n in json.loads(self.index.registry.tree_json(doc_id) or "[]"):
                    nodes[n[0]] = (int(n[3]), int(n[4]))
            n_lines = max((e for _, e in nodes.values()), default=0)
            cache[key] = {k: v for k, v in nodes.items() if v[1] - v[0] + 1 <= n_lines / 2}
            if len(cache) > 1024:
                cache.popitem(last=False)
        span = cache[key].get(m.get("node_id", ""))
        return None if span is None else (doc_id, span[0], span[1])

    @staticmethod
    def _dedupe(hits: list[Hit]) -> list[Hit]:
        seen: set[tuple[str, str]] = set()
        out = []
        for h in hits:
            key = (h.metadata["doc_id"], h.metadata["node_id"])
            if key not in seen:
                seen.add(key)
                out.append(h)
        return out

    def _source_lines(self, doc_hash: str) -> list[str]:
        """Lines of a stored source, from a small LRU (sources are immutable per doc_hash)."""
        cache = getattr(self, "_lines_cache", None)
        if cache is None:
            cache = self._lines_cache = OrderedDict()
        lines = cache.get(doc_hash)
        if lines is None:
            lines = cache[doc_hash] = split_lines(self.index.registry.load_source(doc_hash))
            if len(cache) > 64:
                cache.popitem(last=False)
        else:
            cache.move_to_end(doc_hash)
        return lines

    def _sections(self, hits: list[Hit]) -> list[Section]:
        texts: dict[str, list[str]] = {}
        out = []
        for h in hits:
            m = h.metadata
            doc_hash = m["doc_hash"]
            if doc_hash not in texts:
                texts[doc_hash] = self._source_lines(doc_hash)
            start, end = int(m["start_line"]), int(m["end_line"])
            source = str(m.get("source", ""))
            out.append(
                Section(
                    doc_id=m["doc_id"],
                    node_id=m["node_id"],
                    title=m.get("title", ""),
                    breadcrumb=tuple(json.loads(m.get("breadcrumb_json", "[]"))),
                    start_line=start,
                    end_line=end,
                    text=slice_lines(texts[doc_hash], start, end),
                    score=h.score,
                    chunk_text=h.text,
                    citation=f"{m['doc_id']}{Path(source).suffix or '.md'}#L{start}-L{end}",
                    source=source,
                    kind=m.get("kind", "heading"),
                    level=int(m.get("level", 0)),
                    chunk_start_line=int(m.get("chunk_start_line", start)),
                    chunk_end_line=int(m.get("chunk_end_line", end)),
                )
            )
        return out

    def retrieve_with_references(
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
        """:meth:`retrieve`, then follow the cross-references of the sections found.

        A question that names a label ("summarise Note 14", "annex table A2.1.1") first gets
        the section carrying that label in the best-ranked document, ahead of the vector hits
        (``k`` sections in all). :meth:`add_references` then appends the sections they cite
        ("see Appendix G"), found by ``proxypointer.references`` without an LLM.

        Args:
            query: Question or keywords.
            k: Sections found by the query (default ``retrieval.k``, 5).
            where: Extra Chroma metadata filter.
            doc_ids: Only search these documents.
            source_prefix: Only search documents whose doc_id starts with this prefix.
            budget_tokens: Context budget for all returned text, in word pieces of the
                embedding model's tokenizer (no special tokens); ``None``: no budget.
            max_references: Most referenced sections to add (default: ``k``).
            lookup_labels: Look up labels named in the query.
            interleave: Put each referenced section right after its citing section.

        Returns:
            The ``k`` sections (label matches first, ``reached_via="query"``), then the
            referenced sections (see :meth:`add_references`).

        Raises:
            ConfigError: If ``k`` < 1.
            StaleSourceError: If a stored source is missing.
        """
        k = self.config.k if k is None else k
        found = self.retrieve(query, k, where, doc_ids=doc_ids, source_prefix=source_prefix)
        if lookup_labels and found:
            for doc_id in dict.fromkeys(s.doc_id for s in found):
                refs = self._references(doc_id)
                named = refs.lookup(query) if refs is not None else ()
                if named:
                    src = next(s.source for s in found if s.doc_id == doc_id)
                    top = found[0].score
                    first = [self._node_section(doc_id, refs, refs.tree.node(n), src, top, "query") for n in named[:k]]
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

        References are detected and resolved on the stored source (``proxypointer.references``;
        the tree is rebuilt in milliseconds, cached per document version). Only the lines a
        section delivers are read for references (``delivered_*`` after :meth:`assemble`).

        Args:
            sections: Output of :meth:`retrieve` or :meth:`assemble`, best first.
            budget_tokens: Context budget for all text, in word pieces (no special tokens): the
                given sections count first (``delivered_tokens``, else their whole ``text``); a
                referenced section is added only when it fits whole. ``None``: no budget.
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
            the citing section's ``score`` and ``reached_via`` set to
            ``<citing breadcrumb> (L<start>-L<end>)``. After ``assemble`` they carry
            ``delivered_*`` fields too.
        """
        max_refs = len(sections) if max_references is None else max_references
        tok = self.index.embedder.tokenizer
        assembled = any(s.delivered_tokens for s in sections)
        used = 0
        if budget_tokens is not None:
            used = sum(s.delivered_tokens or tok.count(s.text) for s in sections)
        spans: dict[str, list[tuple[int, int]]] = {}
        for s in sections:
            spans.setdefault(s.doc_id, []).append((s.start_line, s.end_line))
        added: list[list[Section]] = [[] for _ in sections]
        n_added = 0
        for i, s in enumerate(sections):
            refs = self._references(s.doc_id) if s.kind != "window" else None
            if refs is None:
                continue
            lo, hi = (s.start_line, s.end_line)
            if s.delivered_tokens:
                lo, hi = s.delivered_start_line, s.delivered_end_line
            focus = (s.chunk_start_line, s.chunk_end_line)
            for _ref, node in refs.targets(lo, hi, focus=focus):
                if n_added >= max_refs or len(added[i]) >= per_section:
                    break
                if any(node.start_line <= e and b <= node.end_line for b, e in spans[s.doc_id]):
                    continue
                via = f"{' > '.join(s.breadcrumb)} (L{s.start_line}-L{s.end_line})"
                new = self._node_section(s.doc_id, refs, node, s.source, s.score, via)
                n_tok = tok.count(new.text) if budget_tokens is not None or assembled else 0
                if budget_tokens is not None and used + n_tok > budget_tokens:
                    continue
                used += n_tok
                if assembled:
                    new = replace(
                        new,
                        delivered_start_line=node.start_line,
                        delivered_end_line=node.end_line,
                        delivered_text=new.text,
                        delivered_tokens=n_tok,
                    )
                spans[s.doc_id].append((node.start_line, node.end_line))
                added[i].append(new)
                n_added += 1
        if interleave:
            return [x for s, extra in zip(sections, added, strict=True) for x in (s, *extra)]
        return [*sections, *(x for extra in added for x in extra)]

    def _references(self, doc_id: str) -> DocumentReferences | None:
        """Return the live version's references (cached per doc_hash); None if unknown."""
        rec = self.index.registry.get(doc_id)
        if rec is None or not rec.doc_hash:
            return None
        cache = getattr(self, "_refs_cache", None)
        if cache is None:
            cache = self._refs_cache = {}
        if rec.doc_hash not in cache:
            text = self.index.registry.load_source(rec.doc_hash)
            cache[rec.doc_hash] = DocumentReferences.build(text, doc_id, self.index.config.tree)
        return cache[rec.doc_hash]

    @staticmethod
    def _node_section(
        doc_id: str, refs: DocumentReferences, node: Node, source: str, score: float, via: str
    ) -> Section:
        start, end = node.start_line, node.end_line
        return Section(
            doc_id=doc_id,
            node_id=node.node_id,
            title=node.title,
            breadcrumb=refs.breadcrumb(node.node_id),
            start_line=start,
            end_line=end,
            text=slice_lines(refs.lines, start, end),
            score=score,
            chunk_text="",
            citation=f"{doc_id}{Path(source).suffix or '.md'}#L{start}-L{end}",
            source=source,
            kind=node.kind,
            level=node.level,
            chunk_start_line=start,
            chunk_end_line=end,
            reached_via=via,
        )


def _group_score(group: list[Hit], rank: dict[str, int], config: Any) -> float:
    """Section score of a ranked group (``RetrievalConfig.section_scoring``); higher is better."""
    if config.section_scoring == "sum":
        return float(sum(h.score for h in group[: config.section_top_n]))
    if config.section_scoring == "rrf":
        return float(sum(1.0 / (config.rrf_k + rank[h.chunk_id]) for h in group))
    return float(group[0].score)


def _encloses(outer: tuple[str, int, int], inner: tuple[str, int, int]) -> bool:
    """Whether a ``(doc_id, start_line, end_line)`` range contains another one."""
    return outer[0] == inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2]


def _normal(text: str) -> str:
    """Lower-case text with runs of whitespace collapsed (for finding a title in a query)."""
    return " ".join(text.lower().split())


def _strip_titles(query: str, titles: Sequence[str]) -> str:
    """Remove titles named in a query, and the punctuation left around them."""
    import re

    out = query
    for t in titles:
        out = re.sub(r"\s+".join(re.escape(w) for w in t.split()), " ", out, count=1, flags=re.IGNORECASE)
    out = " ".join(out.split()).strip(" .:;,-")
    return out or query


def _doc_filter(doc_ids: Sequence[str]) -> dict[str, Any]:
    """Chroma filter for a list of doc ids."""
    return {"doc_id": doc_ids[0]} if len(doc_ids) == 1 else {"doc_id": {"$in": list(doc_ids)}}


#: Largest number of live chunks that a plain ``doc_id`` filter searches exactly (their vectors
#: read by id and scored in numpy) rather than through Chroma's filtered HNSW search. Reading
#: vectors back costs about 0.1 ms per chunk here, Chroma's filtered search ~100 ms at 100k
#: chunks whatever the filter selects (docs/benchmarks.md).
EXACT_SEARCH_MAX_CHUNKS = 1000


def _id_hit(chunk_id: str, score: float) -> Hit:
    """Make a hit whose metadata is only what its id carries (``<doc_id>::<version>::<node_id>::<index>``)."""
    parts = chunk_id.rsplit("::", 3)
    if len(parts) != 4:
        return Hit(chunk_id, "", {}, score)
    doc_id, version, node_id, index = parts
    position = int(index) if index.isdigit() else -1
    meta = {"doc_id": doc_id, "version": version, "node_id": node_id, "chunk_index": position}
    return Hit(chunk_id, "", meta, score)


def _filter_doc_ids(where: dict[str, Any] | None) -> list[str] | None:
    """Doc ids allowed by a filter that is only a ``doc_id`` equality or ``$in``; else ``None``."""
    if not where or set(where) != {"doc_id"}:
        return None
    cond = where["doc_id"]
    if isinstance(cond, str):
        return [cond]
    if isinstance(cond, dict) and set(cond) == {"$in"} and isinstance(cond["$in"], list):
        return [str(c) for c in cond["$in"]]
    if isinstance(cond, dict) and set(cond) == {"$eq"} and isinstance(cond["$eq"], str):
        return [cond["$eq"]]
    return None

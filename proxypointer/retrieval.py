"""Retrieval: query -> chunk hits -> deduplicated (doc_id, node_id) -> whole sections.

A chunk is only a proxy for a location: hits are deduplicated by (doc_id, node_id) in rank
order, over-fetching until ``k`` distinct sections are found (shared case 27), and each
section is sliced from the *stored copy* of the text that was indexed, so a pointer can never
point into a file whose lines have moved.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .pipeline import Index
from .store import Hit
from .tree import slice_lines, split_lines

__all__ = ["Retriever", "Section"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Section:
    """A whole section returned by :meth:`Retriever.retrieve`, best first.

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

    def hits(self, query: str, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        """Raw chunk hits of live document versions, best first (no deduplication)."""
        vector = self.index.embedder.encode_query(query) if hasattr(self.index.embedder, "encode_query") \
            else self.index.embedder.encode([query])[0]
        return self._live(self.index.store.query(vector, n, where))

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
            query: Question or keywords.
            k: Sections wanted (default ``retrieval.k``, 5).
            where: Extra Chroma metadata filter, e.g. ``{"kind": "heading"}``.
            doc_ids: Only search these documents.
            source_prefix: Only search documents whose doc_id starts with this prefix
                (a folder of the corpus, e.g. ``"policies/"``).

        Returns:
            Up to ``k`` sections, distinct by (doc_id, node_id), ordered by the score of their
            best chunk (ties keep rank order). Fewer only when the collection holds fewer.

        Raises:
            ConfigError: If ``k`` < 1.
            StaleSourceError: If a stored source is missing (run ``proxypointer check``).
        """
        k = self.config.k if k is None else k
        if k < 1:
            raise ConfigError(f"k: expected an int >= 1, got {k}")
        flt = self._where(where, doc_ids, source_prefix)
        total = self.index.store.count()
        n = max(self.config.overfetch, 3 * k)
        while True:
            best = self._dedupe(self.hits(query, n, flt))
            if len(best) >= k or n >= total:
                break
            n *= 2
        return self._sections(best[:k])

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

    def _sections(self, hits: list[Hit]) -> list[Section]:
        texts: dict[str, list[str]] = {}
        out = []
        for h in hits:
            m = h.metadata
            doc_hash = m["doc_hash"]
            if doc_hash not in texts:
                texts[doc_hash] = split_lines(self.index.registry.load_source(doc_hash))
            start, end = int(m["start_line"]), int(m["end_line"])
            source = str(m.get("source", ""))
            out.append(
                Section(
                    doc_id=m["doc_id"], node_id=m["node_id"], title=m.get("title", ""),
                    breadcrumb=tuple(json.loads(m.get("breadcrumb_json", "[]"))),
                    start_line=start, end_line=end, text=slice_lines(texts[doc_hash], start, end),
                    score=h.score, chunk_text=h.text,
                    citation=f"{m['doc_id']}{Path(source).suffix or '.md'}#L{start}-L{end}",
                    source=source, kind=m.get("kind", "heading"), level=int(m.get("level", 0)),
                    chunk_start_line=int(m.get("chunk_start_line", start)),
                    chunk_end_line=int(m.get("chunk_end_line", end)),
                )
            )
        return out

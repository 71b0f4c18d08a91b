"""Stored texts at query time: each document version's lines, word pieces per line and page map.

A section's text is sliced from the *stored copy* of what was indexed
(:class:`~proxypointer.store.sources.StoredSources`), keyed by the version's ``doc_hash``; a
stored copy never changes, so what is read once is kept in small LRUs. Lines are 1-based
(index 0 of a list is line 1); tokens are word pieces of the embedding model's tokenizer without
special tokens.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .._lru import LRU
from ..chunk.datauri import replace_data_uris
from ..embed.tokenizer import line_token_counts
from ..lines import split_lines
from ..tree.pages import PageMap, stored_page_map

if TYPE_CHECKING:
    from ..store.folder import StoreView

__all__ = ["StoredTexts"]

logger = logging.getLogger(__name__)

_MISSING: Any = object()


class StoredTexts:
    """Read the stored texts of document versions, per ``doc_hash``, through four small LRUs.

    Thread-safe: the caches (lines and page maps of 64 versions, word pieces per line of 256,
    the same as a reader is shown them of 256) are bounded and guarded by locks; two threads
    missing at once both read, and the second result wins (they are equal).

    Args:
        store: The store whose registry holds the stored sources and whose embedder's
            tokenizer counts word pieces (both looked up on each miss).
    """

    def __init__(self, store: StoreView) -> None:
        self.store = store
        self._lines = LRU(64)  # doc_hash -> stored lines
        self._tokens = LRU(256)  # doc_hash -> word pieces per line
        self._reader = LRU(256)  # the same, data-URI payloads counted as their placeholders
        self._pages = LRU(64)  # doc_hash -> page map, or None

    def lines(self, doc_hash: str) -> list[str]:
        """Lines of a stored source (index 0 is line 1), from a small LRU (sources are immutable).

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        lines = self._lines.get(doc_hash, _MISSING)
        if lines is not _MISSING:
            return lines
        lines = split_lines(self.store.registry.sources.load(doc_hash))
        self._lines.put(doc_hash, lines)
        return lines

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
        tok = self.store.embedder.tokenizer
        name = getattr(tok, "name", None)
        counts = self.store.registry.sources.load_line_tokens(doc_hash, name) if isinstance(name, str) else None
        lines = self.lines(doc_hash)
        if counts is None or len(counts) != len(lines):
            path = self.store.registry.sources.tokens_file(doc_hash)
            if isinstance(name, str) and path.exists():
                logger.warning("%s: stored word pieces per line cannot be used; counted for this query"
                               " (`proxypointer check --repair` rewrites them)", path)
            counts = line_token_counts(lines, tok)
        self._tokens.put(doc_hash, counts)
        return counts

    def reader_tokens(self, doc_hash: str) -> list[int]:
        """Word pieces of each stored line as a reader is shown it (index 0 is line 1).

        :meth:`line_tokens`, except that a line with an inline base64 ``data:`` payload counts
        it as its placeholder (``[image: alt]``, shared case 31: ``ask`` shows the model that,
        and a payload must not make a one-paragraph section "big"). The delivery policy
        measures sections with these counts.

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        counts = self.line_tokens(doc_hash)
        got = self._reader.get(doc_hash, _MISSING)
        if got is not _MISSING:
            return got
        lines = self.lines(doc_hash)
        tok = self.store.embedder.tokenizer
        got = counts
        if any("base64," in x for x in lines):
            got = [tok.count(replace_data_uris(x)) if "base64," in x else n for x, n in zip(lines, counts, strict=True)]
        self._reader.put(doc_hash, got)
        return got

    def pages(self, doc_hash: str) -> PageMap | None:
        """Page map of a stored source, or None when it has no pages (small LRU, like the lines).

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        pages = self._pages.get(doc_hash, _MISSING)
        if pages is not _MISSING:
            return pages
        stored = self.store.registry.sources.load_pages(doc_hash)
        pages = None
        if stored is not None:
            lines = self.lines(doc_hash)
            try:
                pages = stored_page_map(stored, lines)
            except ValueError:
                logger.warning("stored page map of %s does not fit its text; pages left out (run `proxypointer check`)",
                               doc_hash[:12])
        self._pages.put(doc_hash, pages)
        return pages

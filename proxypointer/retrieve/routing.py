"""Title routing: which documents a query names by their titles (no LLM, BM25 over titles).

A query often names its document ("Lockheed Martin's FY2021 capital expenditure", "<paper
title>. What dataset do they use?"). :class:`TitleRouter` ranks the live documents by BM25 of
the query against each document's title and file name (an in-memory :class:`LexicalIndex`,
rebuilt when the registry's generation moves): a title the query names (verbatim, as whole
words, specific enough: :meth:`TitleRouter._named`) restricts the search to that document and
is removed from the query; otherwise the best-matching documents are searched as one more fused
ranking (:class:`Route`, used by :class:`~proxypointer.retrieve.ranking.Ranker`).
Settings: ``retrieval.title_routing_docs`` and ``retrieval.title_routing_weight``.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MissingDependencyError
from ..store.chroma import Hit
from ..store.filters import doc_filter, filter_doc_ids
from ..store.terms import name_query_words, name_words
from ..store.terms import words as _words

if TYPE_CHECKING:
    from ..store.folder import StoreView

__all__ = ["NAMING_TITLE_WORDS", "LexicalIndex", "Route", "TitleRouter", "strip_titles"]

#: Fewest content words (:func:`proxypointer.store.terms.words`: stop words and one-letter words
#: left out) of a title that a query can name to restrict its search to that document. One
#: word is an ordinary word of a question (a document titled "Leave" and "When must I leave
#: the building?"); QASPER's paper titles all have more (docs/evaluation.md, routing round).
NAMING_TITLE_WORDS = 2


def _and(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    return b if not a else {"$and": [a, b]}


class LexicalIndex:
    """In-memory BM25 (bm25s, Lucene variant) over a few texts: document titles, baselines.

    Chunks are searched through the registry's FTS5 table instead (see :class:`Ranker`); this
    index serves title routing (one text per document) and the ``bm25-sections`` baseline of
    the evaluation harness.

    Args:
        hits: The texts to index, as hits (text and metadata; score ignored).
        text_of: What is indexed for a hit; default its text.
        tokenize: Words of an indexed text; default :meth:`tokenize`.
        tokenize_query: Words of a query; default ``tokenize``.

    Raises:
        MissingDependencyError: If bm25s is not installed.
    """

    def __init__(
        self,
        hits: Sequence[Hit],
        text_of: Callable[[Hit], str] | None = None,
        tokenize: Callable[[str], list[str]] | None = None,
        tokenize_query: Callable[[str], list[str]] | None = None,
    ) -> None:
        try:
            import bm25s
        except ImportError as err:
            raise MissingDependencyError("title routing needs bm25s; pip install bm25s") from err
        # bm25s sets its own logger to DEBUG at import (STYLE.md); give the level back to the app.
        logging.getLogger("bm25s").setLevel(logging.NOTSET)
        self.hits = list(hits)
        self._bm25 = bm25s.BM25()
        self._words = tokenize or self.tokenize
        self._query_words = tokenize_query or self._words
        corpus = [self._words(text_of(h) if text_of else h.text) or ["__empty__"] for h in self.hits]
        if corpus:
            self._bm25.index(corpus, show_progress=False)

    @staticmethod
    def tokenize(text: str) -> list[str]:
        """Lower-cased words of two or more characters, stop words removed."""
        return _words(text)

    def search(self, query: str, n: int, keep: Callable[[Hit], bool] | None = None) -> list[Hit]:
        """Return the ``n`` best texts with a positive BM25 score, best first (``score``: BM25)."""
        if not self.hits:
            return []
        words = [w for w in dict.fromkeys(self._query_words(query)) if w in self._bm25.vocab_dict]
        if not words:
            return []
        scores = np.asarray(self._bm25.get_scores(words), dtype=np.float64)
        out: list[Hit] = []
        for i in np.argsort(-scores, kind="stable"):
            if scores[i] <= 0 or len(out) >= n:
                break
            h = self.hits[int(i)]
            if keep is None or keep(h):
                out.append(replace(h, score=float(scores[i])))
        return out


@dataclass(frozen=True, slots=True)
class Route:
    """Where title routing sends a query (see :meth:`Ranker.route`).

    Attributes:
        query: The text to search: the query, with a title it names verbatim removed.
        where: The filter, narrowed to the named documents when the query names titles.
        named: Doc ids whose titles the query names (searched alone); empty otherwise.
        boost: Doc ids whose titles best match the query, searched as an extra fused ranking
            (empty when ``named`` is set or routing is off).
        prefer: The documents (those of ``boost``, or in a scope too small to route, any in
            scope) that the query names by a distinctive word of their name
            (:meth:`TitleRouter.route`: "Best Buy" for ``BESTBUY_2023_10K``): where labels and
            implied sections are looked up (:meth:`~proxypointer.retrieve.ranking.Ranker.label_first`).
    """

    query: str
    where: dict[str, Any] | None
    named: tuple[str, ...] = ()
    boost: tuple[str, ...] = ()
    prefer: tuple[str, ...] = ()


class TitleRouter:
    """Route queries by the documents' titles (``retrieval.title_routing_docs``).

    Thread-safe: its one cache, the live documents' titles and their BM25 index, is rebuilt
    under a lock when the registry's generation moves (every commit or delete).

    Args:
        index: The index whose live documents are routed to.
    """

    def __init__(self, index: StoreView) -> None:
        self.index = index
        self.config = index.config.retrieval
        self._lock = threading.Lock()
        #: The live documents' titles at one registry generation (one entry).
        self._titles: _Titles | None = None

    def route(self, query: str, where: dict[str, Any] | None) -> Route:
        """Apply title routing (``retrieval.title_routing_docs``) to a query.

        With routing on and more documents searchable than ``title_routing_docs``, the
        documents are ranked by BM25 of the query against their titles. If the query names one
        of the best titles (:meth:`_named`: verbatim as whole words, at least
        :data:`NAMING_TITLE_WORDS` content words, and no other document in scope has it), the
        search is restricted to that document and the title removed from the query;
        otherwise the best documents are searched as an extra ranking
        (``title_routing_weight``), which adds to the search and never restricts it.

        Returns:
            The route; ``Route(query, where)`` when routing does not apply.
        """
        if not self.config.title_routing_docs:
            return Route(query, where)
        best = self._title_docs(query, where)
        named = self._named(query, best, where)
        if named:
            ids = tuple(d for d, _ in named)
            return Route(strip_titles(query, [t for _, t in named]), _and(where, doc_filter(ids)), named=ids)
        boost = tuple(d for d, _ in best) if self.config.title_routing_weight > 0 else ()
        # in a scope too small to route (no more than title_routing_docs documents), every one
        # of them may still be the one a query names ("Globex's balance sheet" among 3 filings)
        named_from = best or self._scope_titles(where)
        return Route(query, where, boost=boost, prefer=self._naming(query, named_from))

    def _scope_titles(self, where: dict[str, Any] | None) -> list[tuple[str, str]]:
        """``(doc_id, title)`` of the live documents a filter allows (every one without a doc filter)."""
        titles = self._titles_entry()
        allowed = filter_doc_ids(where) if where is not None else None
        ids = titles.names if allowed is None else [d for d in dict.fromkeys(allowed) if d in titles.names]
        return [(d, titles.normal.get(d, "")) for d in ids]

    def _naming(self, query: str, best: Sequence[tuple[str, str]]) -> tuple[str, ...]:
        """Doc ids of ``best`` whose name (doc id and title words) shares a distinctive word with the query.

        A word is distinctive when at most half of the live documents' names have it: "bestbuy"
        or "johnson" in a store of many companies' filings, not "10k" or "2022" in a store of
        10-Ks (issue 32: "What does Best Buy's balance sheet show?" got another company's).
        """
        titles = self._titles_entry()
        asked = set(name_query_words(query))
        limit = len(titles.names) / 2
        return tuple(
            d for d, _ in best
            if any(titles.name_counts[w] <= limit for w in titles.names.get(d, frozenset()) & asked)
        )

    def _named(
        self, query: str, best: Sequence[tuple[str, str]], where: dict[str, Any] | None
    ) -> list[tuple[str, str]]:
        """Return the ``(doc_id, title)`` pairs of ``best`` whose titles the query names.

        A title names its document when the query holds it verbatim (case, spacing and the
        characters around it ignored) as whole words, the title has at least
        :data:`NAMING_TITLE_WORDS` content words (a one-word title such as "Leave" is an
        ordinary word of a question: "When must I leave the building?"), and no other document
        in scope (``where``) has that title ("FORM 10-K", the title of several filings, names
        none of them).
        """
        text = _normal(query)
        candidates = [
            (d, t) for d, t in best
            if len(_words(t)) >= NAMING_TITLE_WORDS and re.search(rf"(?<!\w){re.escape(_normal(t))}(?!\w)", text)
        ]
        if not candidates:
            return []
        titles = self._titles_entry()  # a writer may have moved it on since ``best``: look ids up with get
        allowed = None if where is None else filter_doc_ids(where)
        if allowed is None:
            in_scope = titles.counts
        else:
            in_scope = Counter(titles.normal[d] for d in set(allowed) if d in titles.normal)
        return [(d, t) for d, t in candidates if d in titles.normal and in_scope[titles.normal[d]] == 1]

    def _title_docs(self, query: str, where: dict[str, Any] | None) -> list[tuple[str, str]]:
        """``(doc_id, title)`` of the documents whose titles best match the query (BM25), best first.

        Empty when the filter is not a plain doc_id filter, or when it (or, without a filter,
        the store) allows at most ``retrieval.title_routing_docs`` documents.
        """
        allowed: set[str] | None = None
        if where is not None:
            ids = filter_doc_ids(where)
            if ids is None:
                return []
            allowed = set(ids)
        m = self.config.title_routing_docs
        if allowed is not None and len(allowed) <= m:
            return []
        titles = self._titles_entry().index
        if allowed is None and len(titles.hits) <= m:  # the whole store is no more than m documents
            return []
        keep = (lambda h: h.metadata["doc_id"] in allowed) if allowed is not None else None
        return [(h.metadata["doc_id"], h.text) for h in titles.search(query, m, keep)]

    def _titles_entry(self) -> _Titles:
        """Return the live documents' titles, rebuilt when the registry's generation has moved."""
        generation = self.index.registry.generation()  # moves with every commit or delete
        with self._lock:
            if self._titles is None or self._titles.generation != generation:
                records = [r for r in self.index.registry.documents() if r.version]
                fake = [Hit(r.doc_id, r.title, {"doc_id": r.doc_id}, 0.0) for r in records]
                # the file's name names the document as much as its title does ("AMD_2022_10K")
                index = LexicalIndex(fake, lambda h: f"{h.metadata['doc_id']} {h.text}", name_words, name_query_words)
                normal = {r.doc_id: _normal(r.title) for r in records}
                names = {r.doc_id: frozenset(name_words(f"{r.doc_id} {r.title}")) for r in records}
                self._titles = _Titles(generation, index, normal, Counter(normal.values()), names,
                                       Counter(w for ws in names.values() for w in ws))
            return self._titles


@dataclass(frozen=True, slots=True)
class _Titles:
    """Title routing's cache: the live documents' titles at one registry generation."""

    generation: int
    index: LexicalIndex  # BM25 over each document's doc_id and title
    normal: dict[str, str]  # doc_id -> title, normalized by _normal
    counts: Counter[str]  # normalized title -> live documents with it
    names: dict[str, frozenset[str]]  # doc_id -> name words of its doc_id and title
    name_counts: Counter[str]  # name word -> live documents whose name has it


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
#: Markdown emphasis and code markers a heading's stored title keeps (``The *Green* Manual``);
#: an underscore inside a word (``AMERICANWATERWORKS_2020_10K``, a file name as title) stays,
#: which is why :func:`proxypointer.tree.titles.plain_title` (it drops every ``_``) is not used here.
_MARKUP = re.compile(r"[*`]|(?<!\w)_+|_+(?!\w)")


def _normal(text: str) -> str:
    """Return text as a title is compared with a query: :func:`_normal_chars`, lower case, spaces collapsed."""
    return " ".join(_normal_chars(text).lower().split())


def _normal_chars(text: str) -> str:
    """Return text in Unicode NFKC, with straight quotes and without emphasis markers."""
    return _MARKUP.sub("", unicodedata.normalize("NFKC", text).translate(_QUOTES))


def strip_titles(query: str, titles: Sequence[str]) -> str:
    """Remove titles named in a query (as whole words), and the punctuation left around them.

    Returns:
        The query without the titles; the query itself when nothing else would be left.
    """
    out = _normal_chars(query)
    for t in titles:
        pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in _normal(t).split()) + r"(?!\w)"
        out = re.sub(pattern, " ", out, count=1, flags=re.IGNORECASE)
    out = " ".join(out.split()).strip(" .:;,-")
    return out or query

"""Label lookups at query time: labels a query names, in the live versions of documents.

The parsing half (what a label is, a document's label index, labels named in a query) is
:mod:`proxypointer.tree.labels`; this module caches those indexes per live document version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lru import LRU
from ..lines import split_lines
from ..tree.labels import LabelIndex, find_label_in_query, label_index, mentions_label, statement_nodes, topic_nodes
from .implied import IMPLIED_TARGETS, statements_for_measures, topics_in_query

if TYPE_CHECKING:
    from .live import LiveTrees

__all__ = ["LabelLookup"]


class LabelLookup:
    """Label indexes of live document versions, for looking up labels named in queries.

    A document's index is built from its stored tree and stored text the first time a query
    naming a label reaches it (milliseconds: one pass over its lines), and kept for the
    ``size`` versions used last. Thread-safe: the cache is guarded by a lock.

    Args:
        trees: Stored trees of live versions (the node ids chunks carry); its index's registry
            holds the stored texts.
        size: Document versions kept.
    """

    def __init__(self, trees: LiveTrees, size: int = 32) -> None:
        self.trees = trees
        self.size = size
        self._cache: LRU[tuple[str, str], LabelIndex] = LRU(size)

    def index(self, doc_id: str, version: str) -> LabelIndex | None:
        """Return the label index of a document version; None when that version is not live.

        As :meth:`LiveTrees.get`: a version read while live stays answered from the cache.
        """
        key = (doc_id, version)
        got = self._cache.get(key)
        if got is not None:
            return got
        live = self.trees.get(doc_id, version)
        if live is None:
            return None
        got = label_index(live.tree, split_lines(self.trees.index.registry.sources.load(live.doc_hash)))
        self._cache.put(key, got)
        return got

    def named(self, query: str, doc_id: str, version: str) -> tuple[str, ...]:
        """Return the node ids of a document version named by a label in the query.

        Empty when the query names no label (tested first, without building an index), when
        the document defines none of those named, or when the version is not live.

        Raises:
            StaleSourceError: If the stored text is missing.
        """
        if not mentions_label(query):
            return ()
        idx = self.index(doc_id, version)
        return find_label_in_query(query, idx) if idx is not None else ()

    def implied(self, query: str, doc_id: str, version: str) -> tuple[str, ...]:
        """Return the sections of a document version that the query implies without naming them.

        First, for each statement kind of :func:`proxypointer.retrieve.implied.statements_for_measures`,
        the first heading titled as that statement (as for a statement the query names,
        :func:`find_label_in_query`); then, for each topic of
        :func:`proxypointer.retrieve.implied.topics_in_query`, the sections titled for it
        (:func:`topic_nodes`); at most :data:`proxypointer.retrieve.implied.IMPLIED_TARGETS`. Empty
        when the query implies none, the document has none of them, or the version is not live.

        Raises:
            StaleSourceError: If the stored text is missing.
        """
        kinds = statements_for_measures(query)
        topics = topics_in_query(query)
        if not kinds and not topics:
            return ()
        idx = self.index(doc_id, version)
        if idx is None:
            return ()
        out = statement_nodes(kinds, idx)
        for _, title in topics:
            out.extend(n for n in topic_nodes(title, idx) if n not in out)
        return tuple(out[:IMPLIED_TARGETS])

"""Skeleton trees of live document versions at query time, read from the registry and cached.

Retrieval needs a document's tree after ranking: which chunks lie in a section's subtree (a
section found by its title or named by a label contributes its best chunk), a section's own
text and its children (the delivery of big sections), section extents (``nested: merge``).
The registry stores each version's tree (:meth:`~proxypointer.tree.build.DocumentTree.to_json`) and its live chunk ids;
:class:`LiveTrees` rebuilds a :class:`~proxypointer.tree.build.DocumentTree` from them once per
document version. Lines are 1-based inclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._lru import LRU
from ..chunk.ids import parse_chunk_id
from ..tree.build import DocumentTree, Node
from .exhibits import exhibit_heads

if TYPE_CHECKING:
    from ..store.folder import StoreView

__all__ = ["LiveTree", "LiveTrees"]


@dataclass(frozen=True, slots=True)
class LiveTree:
    """One live document version: its tree and where its chunks are.

    Attributes:
        doc_id: Document id.
        version: The live version (chunk ids carry it).
        doc_hash: Hash of its stored text (``StoredSources.load``).
        tree: Its skeleton tree (no nodes for a store written before trees were stored, and for
            fallback windows, which are not tree nodes).
        chunks: ``node_id -> live chunk ids`` in chunk order (fallback windows included).
    """

    doc_id: str
    version: str
    doc_hash: str
    tree: DocumentTree
    chunks: dict[str, tuple[str, ...]]
    _subtrees: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)
    _exhibits: list[dict[str, str]] = field(default_factory=list, repr=False, compare=False)

    def node(self, node_id: str) -> Node | None:
        """Return the tree node, or None (a fallback window, an unknown id)."""
        try:
            return self.tree.node(node_id)
        except KeyError:
            return None

    def subtree(self, node_id: str) -> tuple[str, ...]:
        """Return the node and its descendants, in document order (the id alone for a node not in the tree)."""
        got = self._subtrees.get(node_id)
        if got is None:
            node = self.node(node_id)
            if node is None:
                got = (node_id,)
            else:
                out, todo = [], [node_id]
                while todo:
                    n = todo.pop()
                    out.append(n)
                    todo.extend(reversed([c.node_id for c in self.tree.children(n)]))
                got = tuple(out)
            self._subtrees[node_id] = got  # same value whichever thread computes it
        return got

    def exhibit_head(self, node_id: str) -> Node | None:
        """Return the heading of the appended non-disclosure exhibit holding a node, or None.

        (:func:`~proxypointer.retrieve.exhibits.exhibit_heads`: a filing's ``Exhibit 21``,
        ``Exhibit 31.1``; never an annual report or earnings release exhibit, nor any node of a
        document that is no filing.)
        """
        if not self._exhibits:
            self._exhibits.append(exhibit_heads(self.tree))  # same value whichever thread computes it
        head = self._exhibits[0].get(node_id)
        return self.node(head) if head is not None else None

    def subtree_chunks(self, node_id: str) -> list[str]:
        """Live chunk ids of the node's subtree, in document order."""
        return [c for n in self.subtree(node_id) for c in self.chunks.get(n, ())]


class LiveTrees:
    """Trees of live document versions, rebuilt from the registry once per version.

    Thread-safe: the cache (the ``size`` versions used last) is guarded by a lock; two threads
    missing at once both build, and the second result wins (they are equal).

    Args:
        index: The index whose registry stores the trees and chunk ids (read on each miss:
            the index may reopen its registry).
        size: Versions kept.
    """

    def __init__(self, index: StoreView, size: int = 128) -> None:
        self.index = index
        self.size = size
        self._cache: LRU[tuple[str, str], LiveTree] = LRU(size)

    def get(self, doc_id: str, version: str | None = None) -> LiveTree | None:
        """Return the live tree of a document.

        Args:
            doc_id: Document id.
            version: The version the caller saw (from a chunk id); None: whatever is live.

        Returns:
            The tree; None when the document has no live version, or another one than
            ``version`` (a writer replaced it meanwhile). A version's tree never changes, so
            one read while live is answered from the cache afterwards (its chunks then fail
            the live-version check of whoever uses them).
        """
        if version is not None:
            got = self._cache.get((doc_id, version))
            if got is not None:
                return got
        row = self.index.registry.live_tree(doc_id)
        if row is None or (version is not None and row[0] != version):
            return None
        live_version, doc_hash, title, line_count, tree_json = row
        key = (doc_id, live_version)
        got = self._cache.get(key)
        if got is not None:
            return got
        chunks: dict[str, list[str]] = {}
        for cid in sorted(self.index.registry.chunk_ids(doc_id)):
            parts = parse_chunk_id(cid)
            if parts is not None and parts.version == live_version:
                chunks.setdefault(parts.node_id, []).append(cid)
        got = LiveTree(doc_id, live_version, doc_hash, DocumentTree.from_json(tree_json, doc_id, title, line_count),
                       {k: tuple(v) for k, v in chunks.items()})
        self._cache.put(key, got)
        return got

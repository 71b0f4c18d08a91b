"""Skeleton trees of live document versions at query time, read from the registry and cached.

Retrieval needs a document's tree after ranking: which chunks lie in a section's subtree (a
section found by its title or named by a label contributes its best chunk), a section's own
text and its children (the delivery of big sections), section extents (``nested: merge``).
The registry stores each version's tree (``records.tree_to_json``) and its live chunk ids;
:class:`LiveTrees` rebuilds a :class:`~proxypointer.tree.DocumentTree` from them once per
document version. Lines are 1-based inclusive.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .tree import DocumentTree, Node

if TYPE_CHECKING:
    from .pipeline import Index

__all__ = ["LiveTree", "LiveTrees", "tree_from_json"]


def tree_from_json(tree_json: str, doc_id: str, title: str, line_count: int) -> DocumentTree:
    """Rebuild a document's skeleton tree from its stored JSON (``records.tree_to_json``).

    Args:
        tree_json: The stored rows (``[node_id, title, level, start_line, end_line,
            body_start_line, body_end_line, parent_id, kind, md_level]`` per node); ``""``
            for a store written before trees were stored.
        doc_id: Document id.
        title: The document's display title.
        line_count: Lines of its stored text.

    Returns:
        The tree (no nodes for an empty ``tree_json``; ``front_matter_end`` is not stored and
        reads 0).
    """
    nodes = []
    for row in json.loads(tree_json or "[]"):
        node_id, t, level, start, end, body_start, body_end, parent = row[:8]
        kind = row[8] if len(row) > 8 else "heading"
        md_level = row[9] if len(row) > 9 else 0
        nodes.append(Node(node_id, t, int(level), int(start), int(end), int(body_start), int(body_end), parent or "",
                          kind, int(md_level)))
    return DocumentTree(doc_id, title, line_count, 0, tuple(nodes))


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

    def __init__(self, index: Index, size: int = 128) -> None:
        self.index = index
        self.size = size
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], LiveTree] = OrderedDict()

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
            with self._lock:
                got = self._cache.get((doc_id, version))
                if got is not None:
                    self._cache.move_to_end((doc_id, version))
                    return got
        row = self.index.registry.live_tree(doc_id)
        if row is None or (version is not None and row[0] != version):
            return None
        live_version, doc_hash, title, line_count, tree_json = row
        key = (doc_id, live_version)
        with self._lock:
            got = self._cache.get(key)
            if got is not None:
                self._cache.move_to_end(key)
                return got
        chunks: dict[str, list[str]] = {}
        for cid in sorted(self.index.registry.chunk_ids(doc_id)):
            parts = cid.rsplit("::", 3)
            if len(parts) == 4 and parts[1] == live_version:
                chunks.setdefault(parts[2], []).append(cid)
        got = LiveTree(doc_id, live_version, doc_hash, tree_from_json(tree_json, doc_id, title, line_count),
                       {k: tuple(v) for k, v in chunks.items()})
        with self._lock:
            self._cache[key] = got
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return got

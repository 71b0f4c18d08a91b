"""Counting what retrieval can return, independently of the retriever (for its tests)."""

from __future__ import annotations

import json
from collections.abc import Iterable


def count_sections(registry, merged: bool = False, doc_ids: Iterable[str] | None = None) -> int:
    """Sections with at least one live chunk; with ``merged``, those left by ``nested: merge``.

    Merging keeps every section that no other section with chunks encloses, and every section
    of unknown extent (a window) or spanning more than half of its document (never merged),
    whatever the order of the hits.
    """
    allowed = None if doc_ids is None else set(doc_ids)
    keys = {(c.split("::")[0], c.split("::")[2]) for c in registry.chunk_ids()}
    keys = {k for k in keys if allowed is None or k[0] in allowed}
    if not merged:
        return len(keys)
    n = 0
    for doc in {d for d, _ in keys}:
        nodes = {x[0]: (x[3], x[4]) for x in json.loads(registry.tree_json(doc) or "[]")}
        half = max((e for _, e in nodes.values()), default=0) / 2
        narrow = {i: nodes[i] for d, i in keys if d == doc and i in nodes and nodes[i][1] - nodes[i][0] + 1 <= half}
        n += sum(1 for d, i in keys if d == doc and i not in narrow)
        n += sum(1 for i, (a, b) in narrow.items()
                 if not any(j != i and c <= a and b <= e for j, (c, e) in narrow.items()))
    return n

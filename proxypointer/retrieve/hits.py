"""Chunk hits at query time: made from chunk ids, kept when live, filled from their records.

Rankings work on ids first: a hit made by :func:`id_hit` carries only what its chunk id says
(``doc_id``, ``version``, ``node_id``, ``chunk_index``), :meth:`LiveHits.live` keeps the hits of
live document versions, and :meth:`LiveHits.hydrate` reads the text and metadata of the ones
that win. Scores pass through unchanged (higher is better).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..chunk.ids import parse_chunk_id
from ..store.chroma import Hit
from ..store.filters import filter_doc_ids, matches_where

if TYPE_CHECKING:
    from ..store.folder import StoreView

__all__ = ["LiveHits", "filter_docs", "id_hit"]


def id_hit(chunk_id: str, score: float) -> Hit:
    """Make a hit whose metadata is only what its id carries (``<doc_id>::<version>::<node_id>::<index>``).

    Args:
        chunk_id: The chunk id.
        score: The hit's score (higher is better).

    Returns:
        A hit without text; its metadata is empty when the id cannot be parsed.
    """
    parts = parse_chunk_id(chunk_id)
    if parts is None:
        return Hit(chunk_id, "", {}, score)
    meta = {"doc_id": parts.doc_id, "version": parts.version, "node_id": parts.node_id, "chunk_index": parts.position}
    return Hit(chunk_id, "", meta, score)


def filter_docs(where: dict[str, Any] | None) -> tuple[list[str] | None, bool]:
    """``(doc_ids, exact)``: the documents a filter allows, and whether they are all it asks.

    A plain doc_id filter gives its ids (exact); an ``$and`` holding one gives those ids (not
    exact: the other conditions are checked on the hits); anything else gives None (exact only
    when there is no filter).
    """
    doc_ids = filter_doc_ids(where)
    if doc_ids is None and where and "$and" in where:  # documents and more: search the documents
        ids = next((ids for c in where["$and"] if (ids := filter_doc_ids(c)) is not None), None)
        return ids, False
    return doc_ids, doc_ids is not None or not where


class LiveHits:
    """Keep the hits of live document versions and read their records.

    Thread-safe: it keeps no state; the registry and Chroma are used as the store allows.

    Args:
        store: The store read (its registry and Chroma collection, looked up on each call:
            the store reopens them when they change).
    """

    def __init__(self, store: StoreView) -> None:
        self.store = store

    def live(self, hits: Iterable[Hit]) -> list[Hit]:
        """Keep the hits whose version is their document's live version (registry), in order."""
        hits = list(hits)
        versions = self.store.registry.live_versions(h.metadata.get("doc_id", "") for h in hits)
        out = []
        for h in hits:
            live = versions.get(h.metadata.get("doc_id", ""))
            if live and h.metadata.get("version") == live[0]:
                out.append(h)
        return out

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
        records = self.store.registry.chunk_records(missing)
        rest = [cid for cid in missing if cid not in records]
        if rest:
            records.update((r.chunk_id, (r.text, r.metadata)) for r in self.store.store.get(rest))
        out = []
        for h in hits:
            if "doc_hash" in h.metadata:
                out.append(h)
            elif h.chunk_id in records:
                text, metadata = records[h.chunk_id]
                out.append(replace(h, text=text, metadata=metadata))
        return out

    def matching(self, hits: list[Hit], where: dict[str, Any] | None) -> list[Hit]:
        """Keep the hits whose metadata matches ``where`` (read from their records), in order."""
        if not where:
            return hits
        keep = {h.chunk_id for h in self.hydrate(hits) if matches_where(h.metadata, where)}
        return [h for h in hits if h.chunk_id in keep]

"""The registry's copy of a chunk's Chroma record: its one codec.

A live chunk's row in the registry keeps a copy of its Chroma record (text and metadata),
zlib-compressed JSON (:func:`encode_record`); queries read their winners from it instead of
from Chroma. (A document's row keeps its skeleton tree as compact JSON, whose codec is the
tree's own: :meth:`~proxypointer.tree.build.DocumentTree.to_json`.)
Pure functions: nothing here opens a file or a database.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

__all__ = [
    "decode_record",
    "encode_record",
    "lexical_text",
    "record_content_hash",
    "try_decode_record",
]


def encode_record(text: str, metadata: dict[str, Any]) -> bytes:
    """Encode the registry's copy of one Chroma record: zlib of compact JSON ``[text, metadata]``.

    Compressed because the metadata repeats its keys and the breadcrumb: ~1.3 KB of JSON per
    qasper chunk becomes ~0.7 KB (level 6; decoding five records takes microseconds).
    """
    return zlib.compress(json.dumps([text, metadata], ensure_ascii=False, separators=(",", ":")).encode())


def decode_record(record: bytes) -> tuple[str, dict[str, Any]]:
    """Inverse of :func:`encode_record`."""
    text, metadata = json.loads(zlib.decompress(record))
    return text, metadata


def lexical_text(text: str, metadata: dict[str, Any]) -> str:
    """Build the lexical row of a chunk known only by its record: breadcrumb line, then the text.

    What ingest embeds (``Chunk.embed_text``) is the same words for prose; it is used instead
    whenever ingest passes it (:meth:`~proxypointer.store.registry.Registry.commit_version`).
    """
    crumb = str(metadata.get("breadcrumb", ""))
    return f"{crumb}\n{text}" if crumb else text


#: Metadata a copy must carry, with these types, to be used: what retrieval reads to rank,
#: slice and cite (the pointer). Other keys are passed through as stored.
_POINTER_KEYS = {"doc_id": str, "doc_hash": str, "version": str, "node_id": str, "start_line": int, "end_line": int}


def try_decode_record(record: bytes) -> tuple[str, dict[str, Any]] | None:
    """Decode a copy; None unless it is ``[text, metadata]`` with the pointer metadata typed right."""
    try:
        text, metadata = decode_record(record)
        if not isinstance(text, str) or not isinstance(metadata, dict):
            raise ValueError("not [text, metadata]")
        if any(not isinstance(metadata.get(k), kind) for k, kind in _POINTER_KEYS.items()):
            raise ValueError("pointer metadata missing or mistyped")
    except (zlib.error, ValueError, TypeError):
        return None
    return text, metadata


def record_content_hash(record: bytes) -> str:
    """Return the ``content_hash`` of a record copy's metadata; ``''`` when it has none or cannot be read."""
    decoded = try_decode_record(record)
    h = decoded[1].get("content_hash") if decoded else None
    return h if isinstance(h, str) else ""

"""Stage 5, persistence: everything a store folder holds, read and written.

Modules:
    folder      ``Store``: one store folder opened (registry, Chroma collection, model, readers)
    registry    which version of each document is live (SQLite), with its parts:
    db            the SQLite connection, schema, meta and generation the parts share
    sources       stored normalised texts, content-addressed by hash
    embedcache    vectors by model and content hash
    lexical       BM25 over live chunks and section titles (SQLite FTS5)
    records     stored formats: a chunk's record copy
    chroma      the Chroma adapter: pointer metadata, batched writes, cosine queries
    filters     metadata filters with one meaning on every search path
    terms       words of lexical search (query terms, title fields, name words)
    preload     reading a store's files into the OS page cache

``from proxypointer.store import ChromaStore`` keeps working (the names of the old
``proxypointer.store`` module).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ChromaStore",
    "Hit",
    "OWNER_ID_KEY",
    "OWNER_PATH_KEY",
    "chunk_metadata",
    "embedded_writer",
    "is_chroma_error",
]

_EXPORTS = {
    "OWNER_ID_KEY": ".chroma",
    "OWNER_PATH_KEY": ".chroma",
    "ChromaStore": ".chroma",
    "Hit": ".chroma",
    "chunk_metadata": ".chroma",
    "embedded_writer": ".chroma",
    "is_chroma_error": ".chroma",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

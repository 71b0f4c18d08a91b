"""The store stage, persistence: everything a store folder holds, read and written.

Modules:
    folder      ``Store``: one store folder opened (registry, Chroma collection, model, readers)
    registry    which version of each document is live (SQLite), with its parts:
    db            the SQLite connection, schema, meta and generation the parts share
    sources       stored normalised texts, content-addressed by hash
    embedcache    vectors by model and content hash
    livechunks    which chunk ids are live, and the copies of their Chroma records
    lexical       BM25 over live chunks and section titles (SQLite FTS5), kept in step:
    fts             the tokenizer, row budgets and query planning both indexes share
    chunkindex      the chunk index (``chunks_fts``)
    titleindex      the section title index (``titles_fts``)
    records     stored formats: a chunk's record copy
    chroma      the Chroma adapter: pointer metadata, batched writes, cosine queries
    chromaclient  the Chroma client opened, shared per folder and closed; the owner mark
    filters     metadata filters with one meaning on every search path
    terms       words of lexical search (query terms, title fields, name words)
    preload     reading a store's files into the OS page cache

``from proxypointer.store import ChromaStore`` keeps working (the names of the old
``proxypointer.store`` module).
"""

from __future__ import annotations

from .._moved import lazy_dir, lazy_names

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

__getattr__ = lazy_names(__name__, _EXPORTS)
__dir__ = lazy_dir(globals(), _EXPORTS)

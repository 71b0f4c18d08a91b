"""The write path: files -> tree -> chunks -> vectors -> a store, as explicit stages.

Modules:
    stages       the stages any runner chains (plan, read, parse, chunk, embed, write, finish)
    local        the single-process runner
    maintenance  repair, delete, prune, status, check
    ray          the same stages on Ray Data (``--engine ray``)

Stages take a :class:`~proxypointer.store.folder.Store`, never the ``Index`` that calls them.
Never imports :mod:`proxypointer.retrieve`. ``from proxypointer.ingest import IngestReport``
keeps working (the names of the old ``proxypointer.ingest`` module).
"""

from __future__ import annotations

from .._moved import lazy_dir, lazy_names

__all__ = [
    "Embedded",
    "IngestReport",
    "Pending",
    "PreparedDocument",
    "begin_documents",
    "commit_document",
    "embed_chunks",
    "empty_note",
    "encode_groups",
    "finish_sync",
    "missing_embeddings",
    "parse_file",
    "plan_changed",
    "plan_file",
    "prepare_document",
    "prune_conversions",
    "read_batch",
    "reads_in_batches",
    "set_aside",
    "start_sync",
    "version_of",
    "write_documents",
    "write_vectors",
]

_EXPORTS = {
    "Embedded": ".stages",
    "IngestReport": ".stages",
    "Pending": ".stages",
    "PreparedDocument": ".stages",
    "begin_documents": ".stages",
    "commit_document": ".stages",
    "embed_chunks": ".stages",
    "empty_note": ".stages",
    "encode_groups": ".stages",
    "finish_sync": ".stages",
    "missing_embeddings": ".stages",
    "parse_file": ".stages",
    "plan_changed": ".stages",
    "plan_file": ".stages",
    "prepare_document": ".stages",
    "prune_conversions": ".stages",
    "read_batch": ".stages",
    "reads_in_batches": ".stages",
    "set_aside": ".stages",
    "start_sync": ".stages",
    "version_of": ".stages",
    "write_documents": ".stages",
    "write_vectors": ".stages",
}

__getattr__ = lazy_names(__name__, _EXPORTS)
__dir__ = lazy_dir(globals(), _EXPORTS)

"""The service's writes: ingest files under ``serve.ingest_roots`` and delete documents.

Only a server started with ``--allow-write`` has a write index; its writes run one at a time
(this server's write lock, shared with the Chroma reload of :mod:`.readers`) and take the
store's lock, so a CLI ``ingest`` and the server never write at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..read.discovery import discover
from .concurrency import ServedIndex
from .errors import MAX_ID_CHARS, BadRequest, Forbidden, NotFound, WriteBusy, text_arg

__all__ = ["MAX_INGEST_PATHS", "WriteAPI"]

logger = logging.getLogger(__name__)

#: Most paths one ``POST /ingest`` may name.
MAX_INGEST_PATHS = 100


class WriteAPI:
    """Ingest and delete through this server's one write index, one write at a time.

    Args:
        writer: The write index; None for a read-only server (every write raises Forbidden).
        write_lock: This server's write lock (also held by a Chroma reload).
        lock_timeout_s: Seconds a write waits for another write of this server
            (``store.lock_timeout_s``).
        ingest_roots: Folders files may be ingested from (``serve.ingest_roots``); none
            turns ingest off.
    """

    def __init__(
        self,
        writer: ServedIndex | None,
        write_lock: threading.Lock,
        lock_timeout_s: float,
        ingest_roots: Sequence[str],
    ) -> None:
        self._writer = writer
        self._write_lock = write_lock
        self._lock_timeout_s = lock_timeout_s
        self._ingest_roots = tuple(ingest_roots)

    @contextmanager
    def writing(self) -> Iterator[ServedIndex]:
        """Hold this server's write lock for the block and yield the write index.

        Raises:
            Forbidden: If the server is read-only.
            WriteBusy: If another write of this server runs past ``lock_timeout_s``.
        """
        if self._writer is None:
            raise Forbidden("this server is read-only; start it with --allow-write to ingest or delete")
        if not self._write_lock.acquire(timeout=self._lock_timeout_s):
            raise WriteBusy(f"another write is running in this server (waited {self._lock_timeout_s:g} s); try again")
        try:
            yield self._writer
        finally:
            self._write_lock.release()

    def ingest(self, paths: Sequence[str], prune: bool = False) -> dict[str, Any]:
        """Sync the index with files under ``serve.ingest_roots`` (as ``proxypointer ingest``).

        Every path, and every markdown file found under it (symbolic links resolved), must lie
        inside one of the configured roots; relative paths are taken from the server's working
        directory. Writes take the store's lock, so a CLI ``ingest`` and the server never
        write at once.

        Args:
            paths: Files or folders, 1..:data:`MAX_INGEST_PATHS`.
            prune: Also delete documents whose files are gone from the given folders.

        Returns:
            ``IngestReport.to_dict()``.

        Raises:
            Forbidden: If the server is read-only, no roots are configured, or a path or file
                lies outside them.
            BadRequest: On a path that does not exist.
            WriteBusy: If another write of this server runs past ``store.lock_timeout_s``.
            LockError: If another process holds the store's write lock.
        """
        if isinstance(paths, str) or not isinstance(paths, Sequence) or not paths:
            raise BadRequest("paths: expected a non-empty list of files or folders")
        if len(paths) > MAX_INGEST_PATHS:
            raise BadRequest(f"paths: at most {MAX_INGEST_PATHS}, got {len(paths)}")
        with self.writing() as writer:
            roots = [Path(r).expanduser().resolve() for r in self._ingest_roots]
            if not roots:
                raise Forbidden("POST /ingest is off: the config names no serve.ingest_roots")
            targets = [self._target(writer, raw, roots) for raw in paths]
            report = writer.ingest(targets, prune=bool(prune), show_progress=False)
            logger.info("ingest over HTTP: %s", report.summary())
            return report.to_dict()

    def delete(self, doc_id: str) -> dict[str, Any]:
        """Remove one document and its chunks (as ``proxypointer delete``).

        Returns:
            ``{"deleted": [doc_id]}``.

        Raises:
            Forbidden: If the server is read-only.
            NotFound: If the document is not in the index.
            WriteBusy: If another write of this server runs past ``store.lock_timeout_s``.
            LockError: If another process holds the store's write lock.
        """
        doc_id = text_arg("doc_id", doc_id, MAX_ID_CHARS)
        with self.writing() as writer:
            removed = writer.delete([doc_id])
        if not removed:
            raise NotFound(f"doc_id {doc_id!r}: no such document in the index")
        return {"deleted": removed}

    @staticmethod
    def _target(writer: ServedIndex, raw: Any, roots: list[Path]) -> Path:
        """Resolve one requested path, checking it and every file found under it against the roots.

        Raises:
            BadRequest: On a path that is not a string of at most 4096 characters, or does not exist.
            Forbidden: If the path, or a file found under it, lies outside the roots.
        """
        p = Path(text_arg("paths[]", raw, 4096)).expanduser()
        real = p.resolve()
        if not any(real == r or real.is_relative_to(r) for r in roots):
            raise Forbidden(f"{raw}: outside serve.ingest_roots; only files under them can be ingested")
        if not real.exists():
            raise BadRequest(f"{raw}: no such file or folder")
        found = discover([real], writer.readers.keys(), stores=[writer.root])
        for sf in found.files:
            if not any(Path(sf.real_path).is_relative_to(r) for r in roots):
                raise Forbidden(f"{sf.path}: resolves outside serve.ingest_roots (a symbolic link?); not ingested")
        return real

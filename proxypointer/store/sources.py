"""Stored sources: the normalised text of each indexed version, content-addressed by its hash.

Retrieval slices sections from these copies, never from the original files. Beside a version's
text (``sources/<hash[:2]>/<hash>.md``) a paged source keeps its page map (``.pages.json``) and
ingest keeps the word pieces of each line (``.tokens.json``). Every file is written atomically
(temporary file, fsync, rename). Which versions are live is read from the registry's
``documents`` table, through the registry's connection.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StaleSourceError
from ..storefiles import SOURCES_DIR

if TYPE_CHECKING:
    from .db import Database

__all__ = ["StoredSources"]

logger = logging.getLogger(__name__)


class StoredSources:
    """The ``sources/`` folder of a store, reached as ``Registry.sources``.

    Args:
        database: The registry database whose store folder holds ``sources/`` (created by it) and whose
            ``documents`` table says which versions are live.

    """

    def __init__(self, database: Database) -> None:
        self._database = database
        self.folder = database.root / SOURCES_DIR
        self._folder = str(self.folder)

    def text_file(self, doc_hash: str) -> Path:
        """Path of the stored copy of a version (content-addressed by its hash)."""
        return self.folder / doc_hash[:2] / f"{doc_hash}.md"

    def pages_file(self, doc_hash: str) -> Path:
        """Path of the page map stored beside a version's text (only for paged sources)."""
        return self.folder / doc_hash[:2] / f"{doc_hash}.pages.json"

    def tokens_file(self, doc_hash: str) -> Path:
        """Path of the word pieces per line stored beside a version's text (:meth:`load_line_tokens`)."""
        return self.folder / doc_hash[:2] / f"{doc_hash}.tokens.json"

    def has(self, doc_hash: str) -> bool:
        """Tell whether the stored copy of a version exists (a stat)."""
        return os.path.isfile(os.path.join(self._folder, doc_hash[:2], f"{doc_hash}.md"))

    def save(
        self,
        doc_hash: str,
        text: str,
        pages: Sequence[int] | None = None,
        line_tokens: tuple[str, Sequence[int]] | None = None,
    ) -> None:
        """Store normalised text under its hash, atomically (temp file + rename).

        Args:
            doc_hash: SHA-256 of ``text`` (``chunking.document_hash``).
            text: The text retrieval slices sections from.
            pages: Page of each line (1-based; ``pages[i]`` for line ``i + 1``) of a source
                converted from a paged format, stored beside the text as JSON before it (a
                present text always has its page map); None for markdown.
            line_tokens: ``(tokenizer name, word pieces of each line)``
                (:func:`~proxypointer.embed.tokenizer.line_token_counts`), stored beside the text as
                JSON, also when the text is already stored without them (an older store).

        Raises:
            OSError: If a file cannot be written (nothing half-written is left).
        """
        target = self.text_file(doc_hash)
        if line_tokens is not None and not self.tokens_file(doc_hash).exists():
            self.save_line_tokens(doc_hash, *line_tokens)
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        if pages is not None:
            _write_atomically(self.pages_file(doc_hash), json.dumps(list(pages), separators=(",", ":")))
        _write_atomically(target, text)

    def load(self, doc_hash: str) -> str:
        """Return the stored text of a version, exactly as stored (no newline translation).

        Raises:
            StaleSourceError: If the stored copy is missing (run ``proxypointer check``).

        """
        path = self.text_file(doc_hash)
        try:
            with path.open(encoding="utf-8", newline="") as fh:  # exact: no newline translation
                return fh.read()
        except FileNotFoundError as err:
            raise StaleSourceError(f"{path}: stored source is missing; run `proxypointer check` and re-ingest") from err

    def load_pages(self, doc_hash: str) -> tuple[int, ...] | None:
        """Return the page of each line of a stored version, or None if it has no page map."""
        try:
            return tuple(json.loads(self.pages_file(doc_hash).read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None

    def save_line_tokens(self, doc_hash: str, tokenizer: str, counts: Sequence[int]) -> None:
        """Store the word pieces of each line of a version's text beside it, atomically.

        Args:
            doc_hash: The version's stored text.
            tokenizer: Name of the tokenizer that counted them (``HFTokenizer.name``).
            counts: One count per line (:func:`~proxypointer.embed.tokenizer.line_token_counts`).
        """
        path = self.tokens_file(doc_hash)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, json.dumps({"tokenizer": tokenizer, "counts": list(counts)}, separators=(",", ":")))

    def load_line_tokens(self, doc_hash: str, tokenizer: str) -> list[int] | None:
        """Word pieces of each line of a stored version as ingest counted them, or None.

        None when ingest stored none (a store written before they were kept, a tokenizer
        without a name), another tokenizer counted them, or the file cannot be read: count
        the lines then (:func:`~proxypointer.embed.tokenizer.line_token_counts`).

        Args:
            doc_hash: The version's stored text.
            tokenizer: The name of the tokenizer the caller counts with (``HFTokenizer.name``).
        """
        try:
            data = json.loads(self.tokens_file(doc_hash).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        counts = data.get("counts") if isinstance(data, dict) and data.get("tokenizer") == tokenizer else None
        if not isinstance(counts, list) or not all(type(c) is int and c >= 0 for c in counts):
            return None
        return counts

    def live_doc_hashes(self) -> list[str]:
        """Return the doc hashes (stored texts) of the live versions."""
        return [r[0] for r in self._database.db.execute("SELECT DISTINCT doc_hash FROM documents WHERE version != ''")]

    def prune(self) -> int:
        """Delete stored copies no document points to (live or being written), with the files beside them.

        Returns:
            How many texts were removed (page maps and token counts are not counted).
        """
        db = self._database.db
        keep = {r[0] for r in db.execute("SELECT doc_hash FROM documents WHERE version != ''")}
        keep |= {r[0] for r in db.execute("SELECT pending_hash FROM documents WHERE pending_hash != ''")}
        removed = 0
        for f in self.folder.glob("*/*.md"):
            if f.stem not in keep:
                f.unlink(missing_ok=True)
                removed += 1
        for pattern in ("*/*.pages.json", "*/*.tokens.json"):
            for f in self.folder.glob(pattern):
                if f.name.split(".", 1)[0] not in keep:
                    f.unlink(missing_ok=True)
        if removed:
            logger.debug("%s: %d stored sources pruned", self.folder, removed)
        return removed


def _write_atomically(target: Path, text: str) -> None:
    """Write UTF-8 text to ``target`` through a temporary file, fsync and rename."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""Errors raised on purpose by proxypointer.

Every message follows ``<file>[:line]: <what is wrong>; <what to do>`` so a user can find the
cause without a traceback. This module imports nothing of ours.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DocumentError",
    "EmbeddingError",
    "EmptyDocumentError",
    "LLMError",
    "LockError",
    "MissingDependencyError",
    "ProxyPointerError",
    "StaleSourceError",
    "StoreError",
    "StoreNotFoundError",
]


class ProxyPointerError(Exception):
    """Base of every error proxypointer raises on purpose."""


class ConfigError(ProxyPointerError, ValueError):
    """Bad YAML, an unknown key, or a value out of range."""


class DocumentError(ProxyPointerError, ValueError):
    """A source file cannot be read or parsed (missing, binary, invalid UTF-8)."""


class StoreError(ProxyPointerError):
    """Chroma refused a write, cannot be reached, or the registry is inconsistent."""


class LockError(StoreError):
    """Another process holds the write lock of the store."""


class StoreNotFoundError(StoreError):
    """A command that only reads or maintains a store was pointed at a folder holding none."""

    @classmethod
    def at(cls, root: object) -> StoreNotFoundError:
        """Build the one error every command gives for a folder ``root`` that holds no store."""
        from pathlib import Path

        if Path(str(root)).is_file():
            return cls(f"{root}: is a file, not a store folder; give --store a folder (ingest creates it)")
        return cls(f"{root}: no proxypointer store here; run `proxypointer ingest` first")


class EmptyDocumentError(DocumentError):
    """A source file holds no text (empty or whitespace only): skipped with a note, not a failure."""


class StaleSourceError(ProxyPointerError):
    """A pointer no longer matches its stored source text."""


class MissingDependencyError(ProxyPointerError, ImportError):
    """An optional package is absent; the message names what to install."""


class EmbeddingError(ProxyPointerError):
    """The embedding endpoint failed: unreachable, timed out, refused, or sent malformed vectors."""


class LLMError(ProxyPointerError):
    """The chat endpoint failed: unreachable, timed out, refused, or sent a malformed reply."""

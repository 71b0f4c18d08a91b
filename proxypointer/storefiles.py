"""The names inside a store folder: the one place they are written.

A store folder holds the registry (:data:`REGISTRY_FILE`, SQLite), the stored texts
(:data:`SOURCES_DIR`), the embedded Chroma collection (:data:`CHROMA_DIR`), the writers' lock
(:data:`WRITE_LOCK`), cached PDF conversions (:data:`CONVERTED_DIR`), conversation sessions
(:data:`SESSIONS_DIR`) and exported query encoders (:data:`ENCODERS_DIR`). A folder is a
store when it holds a registry (:func:`is_store`). Renaming any of these breaks every store
already built.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "CHROMA_DIR",
    "CONVERTED_DIR",
    "ENCODERS_DIR",
    "REGISTRY_FILE",
    "SESSIONS_DIR",
    "SOURCES_DIR",
    "WRITE_LOCK",
    "is_store",
]

REGISTRY_FILE = "registry.sqlite3"
SOURCES_DIR = "sources"
CHROMA_DIR = "chroma"
WRITE_LOCK = "write.lock"
CONVERTED_DIR = "converted"
SESSIONS_DIR = "sessions"
ENCODERS_DIR = "encoders"


def is_store(folder: str | Path) -> bool:
    """Tell whether a folder holds a proxypointer store (its registry file)."""
    return (Path(folder) / REGISTRY_FILE).is_file()

"""Preload: read a store's files once so that the first queries find them in the OS page cache.

A query reads pages of the registry (SQLite: the FTS5 indexes of chunk texts and section
titles, the embedding cache whose vectors rank lexical and title hits, chunk records) and of
Chroma's metadata database. Once a process has run a few hundred queries those pages sit in
the OS page cache; until then each first read goes to the disk. At 1M chunks (a 3.4 GB
registry, docs/benchmarks.md) the first pass over a set of questions after the store was opened
took p95 68-180 ms against 49-59 ms for the same questions again, and 212-230 ms with the page
cache dropped before. Reading the files sequentially once, before serving, is what databases
offer for the same reason (PostgreSQL's ``pg_prewarm``, Elasticsearch's ``index.store.preload``):
with it, from a dropped page cache, the first pass took p95 69.6-97.1 ms in four runs, against
271-296 ms in two without (4.5 GB read in 5-10 s; docs/benchmarks.md, "Preload round").

Only the files a query reads are preloaded, most useful first: the registry, Chroma's metadata
database, then the stored sources. Chroma's HNSW segment files are not: Chroma reads them into
memory when it opens the collection. Reading stops at a byte limit, by default half of the
machine's physical memory: more would push out of the page cache what was just read.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..storefiles import CHROMA_DIR, REGISTRY_FILE, SOURCES_DIR

__all__ = ["PreloadReport", "default_preload_bytes", "preload_files", "store_files"]

logger = logging.getLogger(__name__)

#: Bytes per read call (sequential reads; the kernel reads ahead on its own as well).
READ_BLOCK = 1 << 20

#: Limit when the physical memory cannot be read from ``os.sysconf`` (1 GiB).
FALLBACK_PRELOAD_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class PreloadReport:
    """What :func:`preload_files` read.

    Attributes:
        files: Files read whole.
        bytes_read: Bytes read (whole files only).
        bytes_left: Bytes of the files not read because the limit was reached.
        seconds: Wall-clock time of the reads.
        failed: Files that could not be read (logged at WARNING; not counted in ``files``).
    """

    files: int
    bytes_read: int
    bytes_left: int
    seconds: float
    failed: int = 0

    def summary(self) -> str:
        """One line for logs and the server's start line.

        ``preloaded 4,467.8 MB of the store (122 files) in 5.2 s``, followed by
        ``; 12.0 MB left out by the limit`` and ``; 1 file could not be read`` when so.
        """
        line = (f"preloaded {self.bytes_read / 1e6:,.1f} MB of the store ({_files(self.files)}) "
                f"in {self.seconds:.1f} s")
        if self.bytes_left:
            line += f"; {self.bytes_left / 1e6:,.1f} MB left out by the limit"
        if self.failed:
            line += f"; {_files(self.failed)} could not be read"
        return line


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def default_preload_bytes() -> int:
    """Half of the machine's physical memory in bytes (:data:`FALLBACK_PRELOAD_BYTES` if unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES")) // 2
    except (AttributeError, ValueError, OSError):  # not POSIX, or the names are unknown
        return FALLBACK_PRELOAD_BYTES


def store_files(root: str | Path) -> list[Path]:
    """List the files of a store that queries read, most useful first.

    The registry (``registry.sqlite3`` and its write-ahead log), Chroma's metadata database
    (``chroma/chroma.sqlite3``), then the stored sources (``sources/``, their text and word-piece
    counts). Files that do not exist are left out; Chroma's HNSW segment files are not listed
    (Chroma loads them into memory when it opens the collection).

    Args:
        root: The store folder.

    Returns:
        Existing regular files, in the order to read them.
    """
    root = Path(root)
    first = [root / REGISTRY_FILE, root / f"{REGISTRY_FILE}-wal", root / CHROMA_DIR / "chroma.sqlite3",
             root / CHROMA_DIR / "chroma.sqlite3-wal"]
    out = [p for p in first if p.is_file()]
    sources = root / SOURCES_DIR
    if sources.is_dir():
        out.extend(sorted(p for p in sources.rglob("*") if p.is_file()))
    return out


def preload_files(files: list[Path], max_bytes: int | None = None) -> PreloadReport:
    """Read files whole, in order, until the next one would pass ``max_bytes``.

    A file that would pass the limit is skipped and the next ones are still tried (a small
    source after a big database still fits). A file that vanishes or cannot be read is logged
    and skipped: preloading only speeds up later reads, it never fails a caller.

    Args:
        files: Files in the order to read them (:func:`store_files`).
        max_bytes: Most bytes to read (0: none); None: :func:`default_preload_bytes`.

    Returns:
        The report.

    Raises:
        ValueError: If ``max_bytes`` is negative.
    """
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes: expected None or an int >= 0, got {max_bytes}")
    limit = default_preload_bytes() if max_bytes is None else int(max_bytes)
    t0 = time.perf_counter()
    n = read = left = failed = 0
    buf = bytearray(READ_BLOCK)
    for path in files:
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if read + size > limit:
            left += size
            continue
        try:
            read += sum(_read_all(path, buf))
            n += 1
        except OSError as err:
            failed += 1
            logger.warning("could not preload %s: %s", path, err.strerror or err)
    report = PreloadReport(n, read, left, round(time.perf_counter() - t0, 3), failed)
    logger.info("%s", report.summary())
    return report


def _read_all(path: Path, buf: bytearray) -> Iterator[int]:
    with open(path, "rb", buffering=0) as f:
        while got := f.readinto(buf):
            yield got

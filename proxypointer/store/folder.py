"""The store folder, opened: its registry, its Chroma collection, the model and readers that fill it.

:class:`Store` is what every stage below the facade gets: the ingest stages (which write
through its write lock), the query path (which reads its registry, stored sources and
collection) and maintenance. It opens nothing until a part is first used, and never creates
a store unless a writer asks for it (:meth:`Store.write_lock` with ``create=True``).
:class:`~proxypointer.index.Index` is a ``Store`` that also runs ingestion and maintenance.

Folder layout: ``registry.sqlite3`` (:mod:`proxypointer.store.db`), ``sources/``
(:mod:`proxypointer.store.sources`), ``chroma/`` (:mod:`proxypointer.store.chroma`),
``write.lock``, ``converted/`` (cached PDF conversions), ``sessions/`` (conversations).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..config import ProxyPointerConfig, config_to_dict
from ..embed.embedder import Embedder
from ..embed.make import make_embedder
from ..embed.names import describe_name
from ..errors import ConfigError, LockError, StoreError, StoreNotFoundError
from ..read.readers import Reader, default_readers
from ..storefiles import CONVERTED_DIR, ENCODERS_DIR, WRITE_LOCK, is_store
from .chroma import ChromaStore, embedded_writer
from .registry import Registry

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; a name for checkers only

__all__ = ["PIPELINE_REVISION", "Store", "StoreView"]

logger = logging.getLogger(__name__)


#: Revision of how trees and chunks are built from the same text and settings. A release that
#: changes them (2: a financial statement's title keeps the table pieces a converter wrote as
#: headings as its children; 3: an embedded text repeated in a document is stored at most
#: ``chunking.REPEATED_CHUNKS_KEPT`` times, and fallback windows over the same lines are one
#: node; 4: lines of a printed table of contents are never headings, and a part or item below
#: an outline heading climbs out to its filing level; 5: the notes heading is known after the
#: company's name, "COSTCO ... NOTES TO CONSOLIDATED FINANCIAL STATEMENTS", and a contents entry
#: "8 Financial Statements" among items is Item 8; 6: a line made a heading in a filing, a title or
#: bold line, nests one below the written heading before it, never above the written headings after
#: it) bumps it, so that the next ingest re-indexes every document of a
#: store rather than leaving it half old, half new. Part of :attr:`Store.pipeline_key`.
PIPELINE_REVISION = 6


class StoreView(Protocol):
    """What the query path reads of a store: the read-only view it is typed against.

    :class:`Store` and :class:`~proxypointer.index.Index` are such views; the query path
    (:mod:`proxypointer.retrieve`) never takes the write lock, never ingests and never creates
    a store.

    Attributes:
        root: The store folder.
        config: The configuration the store was opened with.
        embedder: The embedding model (queries are embedded with it).
    """

    root: Path
    config: ProxyPointerConfig
    embedder: Embedder

    @property
    def exists(self) -> bool:
        """True if the folder holds a store."""

    @property
    def registry(self) -> Registry:
        """The registry (opened on first use)."""

    @property
    def store(self) -> ChromaStore:
        """The Chroma collection (reopened when another process wrote)."""

    def check_model(self, record: bool = True) -> None:
        """Raise ConfigError if the store was built with another model (``record=False`` here)."""


class Store:
    """One store folder, opened lazily: registry, stored sources, Chroma collection, model, readers.

    Constructing one touches no file; the parts open on first use. Reading a store that does
    not exist raises StoreNotFoundError (use :meth:`open` to fail at once); only a writer
    holding :meth:`write_lock` with ``create=True`` creates one.

    Args:
        store: Store folder; defaults to ``config.store.path`` (``.proxypointer`` in the
            working directory).
        config: Full configuration; defaults to the built-in defaults.
        embedder: Embedding model; defaults to the one ``config.embedding`` names
            (:func:`~proxypointer.embed.make.make_embedder`; loaded on first use).

    Attributes:
        readers: Suffix table (lower-case suffix with the dot -> reader) used by ``ingest``
            and ``status``; ``readers.default_readers(config)`` by default: markdown with its
            page markers, and PDF (extra ``pdf``), which keeps its conversions in
            ``<store>/converted``.

    """

    def __init__(
        self,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.config = config or ProxyPointerConfig()
        self.root = Path(store if store is not None else self.config.store.path)
        self.embedder: Embedder = embedder or make_embedder(self.config.embedding, encoder_dir=self.root / ENCODERS_DIR)
        self.readers: dict[str, Reader] = default_readers(self.config, conversion_cache=self.root / CONVERTED_DIR)
        self._registry: Registry | None = None
        self._store: ChromaStore | None = None
        self._store_generation = -1
        self._writing = False
        self._creating = False

    @classmethod
    def open(
        cls,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
    ) -> Self:
        """Open an existing store (for queries and maintenance); never creates one.

        Args:
            store: Store folder (as for the constructor).
            config: Full configuration.
            embedder: Embedding model.

        Returns:
            The index, its registry open.

        Raises:
            StoreNotFoundError: ``<dir>: no proxypointer store here; run `proxypointer ingest`
                first``, if the folder holds no store.
        """
        index = cls(store, config, embedder)
        index.registry  # noqa: B018 - opening it checks that the store exists
        return index

    @property
    def exists(self) -> bool:
        """True if the folder holds a store (its registry)."""
        return self._registry is not None or is_store(self.root)

    # -- parts --------------------------------------------------------------------------
    @property
    def registry(self) -> Registry:
        """The registry (opened on first use).

        Raises:
            StoreNotFoundError: If the store does not exist and this is not an ingest.
        """
        if self._registry is None:
            self._registry = Registry(self.root, create=self._creating)
        return self._registry

    @property
    def store(self) -> ChromaStore:
        """The Chroma collection adapter (opened on first use).

        In embedded mode it is reopened when another process has changed the index since it
        was opened (the registry's generation moved), so a long-lived reader sees new
        versions instead of its process's cached HNSW index (shared case 26).

        Raises:
            StoreNotFoundError: If the store does not exist and this is not an ingest.
        """
        if self._store is not None and not self._writing and self.config.store.mode == "persistent":
            if self.registry.generation() != self._store_generation:
                logger.debug("%s: the index changed since it was opened; reopening Chroma", self.root)
                self._store.close()
                self._store = None
        if self._store is None:
            self._store_generation = self.registry.generation()
            store_id = self.registry.get_meta("store_id")
            self._store = ChromaStore(
                self.config.store,
                self.root,
                owner=(store_id, str(self.root.resolve())) if store_id else None,
                # the embedded collection lives in the store folder; a server one is taken
                # unmarked only if this store already has chunks in it (an older store)
                adopt=self.config.store.mode == "persistent" or self.registry.chunks.has_chunks(),
                # other Index objects of this process on the folder share Chroma's in-memory
                # index: opening for a newer generation reopens theirs too (shared case 26)
                generation=self._store_generation,
            )
        return self._store

    def close(self) -> None:
        """Release the registry connection and the Chroma client (reopened on next use)."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._registry is not None:
            self._registry.close()
            self._registry = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pipeline_key(self) -> str:
        """Hash of what shapes chunks and vectors: model, tree and chunking settings, revision.

        The revision is :data:`PIPELINE_REVISION` (a release that builds trees or chunks
        differently from the same text and settings).
        """
        cfg = config_to_dict(self.config)
        parts = {"model": self.embedder.name, "tree": cfg["tree"], "chunking": cfg["chunking"]}
        if PIPELINE_REVISION > 1:
            parts["revision"] = PIPELINE_REVISION
        key = json.dumps(parts, sort_keys=True)
        return hashlib.sha1(key.encode()).hexdigest()[:8]

    @contextmanager
    def write_lock(self, create: bool = False) -> Iterator[None]:
        """Hold the store's inter-process write lock (``<store>/write.lock``).

        Every writer (an ingest runner of any engine, delete, check) holds it for its whole
        run. Waits up to ``store.lock_timeout_s`` for another writer.

        Args:
            create: Create the store if there is none (ingest only); it is given a store id,
                which marks the Chroma collection it owns.

        Raises:
            StoreNotFoundError: If ``create`` is False and the folder holds no store.
            LockError: If another process holds the lock past ``store.lock_timeout_s``.
            StoreError: If the store folder cannot be created.
        """
        from filelock import FileLock, Timeout

        if self._writing:  # re-entered by the same writer
            yield
            return
        if not create and not self.exists:
            raise StoreNotFoundError.at(self.root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"{self.root}: cannot create the store folder ({err}); check the path") from err
        lock_path = self.root / WRITE_LOCK
        lock = FileLock(str(lock_path), timeout=self.config.store.lock_timeout_s)
        try:
            lock.acquire()
        except Timeout as err:
            raise LockError(
                f"{lock_path}: another process is writing to this store (waited "
                f"{self.config.store.lock_timeout_s:g} s); run again when it has finished, or raise "
                f"store.lock_timeout_s"
            ) from err
        self._writing = True
        self._creating = create
        try:
            if self.registry.get_meta("store_id") is None:
                self.registry.set_meta("store_id", uuid.uuid4().hex)
                if self._store is not None:  # opened before the store had an id: reopen with it
                    self._store.close()
                    self._store = None
            if self.config.store.mode == "persistent":
                # another process may have written since this store was opened: reopen before
                # writing through Chroma's in-process index (shared case 26)
                with embedded_writer(self.root, lambda: self.registry.generation()):
                    yield
            else:
                yield
        finally:
            self._writing = False
            self._creating = False
            if self._registry is not None:
                self._store_generation = self._registry.generation()
                if self._store is not None:
                    self._store.generation = self._store_generation
            lock.release()

    def check_model(self, record: bool = True) -> None:
        """Raise ConfigError if the store was built with another embedder than this one.

        The store records the embedder's name (meta key ``model``): backend, model, ``+int8``
        and document prefix (:func:`~proxypointer.embed.names.embedder_name`), whatever
        changes the stored vectors.

        Args:
            record: On a store without a model yet, record the embedder's (writers only).

        Raises:
            ConfigError: Naming both, spelled out (backend, model, document prefix), and the
                ways on: the store's settings back, or a new store.
        """
        stored = self.registry.get_meta("model")
        name = self.embedder.name
        if stored is None:
            if record:
                self.registry.set_meta("model", name)
        elif stored != name:
            raise ConfigError(
                f"{self.root}: the store was built with model {stored!r} ({describe_name(stored)}), the config "
                f"asks for {name!r} ({describe_name(name)}); vectors of two models or document prefixes do "
                "not compare: set embedding back to the store's, or ingest into a new store (another "
                "--store, or delete this folder and ingest again)"
            )

"""The Chroma client of a store: opened, shared and closed per folder, and the collection's owner.

:class:`ChromaConnection` opens one collection (embedded, ``PersistentClient``, or on a
server, ``HttpClient``), created with ``embedding_function=None`` (Chroma's default would
download a model) and ``hnsw:space = cosine``, and runs reads on it, reopening the client
when another process had not finished writing the index files (shared case 26).
:class:`~proxypointer.store.chroma.ChromaStore` does the batched reads, writes and queries
through it.

A collection records the store that owns it (collection metadata :data:`OWNER_ID_KEY` and
:data:`OWNER_PATH_KEY`, written at creation): a second store folder pointed at the same
server collection is refused, since each would see the other's chunks as unregistered and
delete them.

Only Chroma's own failures become :class:`~proxypointer.errors.StoreError` ("Chroma refused
a write", "cannot reach"): ``chromadb.errors.ChromaError``, Chroma's validation
``ValueError``, connection and HTTP errors, and the bare ``Exception`` its HTTP client raises
for an unexpected status (:func:`is_chroma_error`). Anything else (a bug of ours) propagates
unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..config import StoreConfig
from ..errors import ConfigError, MissingDependencyError, ProxyPointerError, StoreError
from ..storefiles import CHROMA_DIR

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

__all__ = [
    "OWNER_ID_KEY",
    "OWNER_PATH_KEY",
    "REOPEN_PAUSES_S",
    "ChromaConnection",
    "chroma_call",
    "embedded_writer",
    "is_chroma_error",
]

logger = logging.getLogger(__name__)

#: Collection metadata key holding the id of the store that owns the collection.
OWNER_ID_KEY = "proxypointer_store_id"
#: Collection metadata key holding that store's folder (for messages).
OWNER_PATH_KEY = "proxypointer_store_path"

#: Pauses (seconds) before each reopen-and-retry of a read that found the embedded index
#: half written by another process (:meth:`ChromaConnection.read`); 1.4 s in all at most.
REOPEN_PAUSES_S = (0.1, 0.3, 1.0)

T = TypeVar("T")


class _SharedViews:
    """Which registry generation each embedded Chroma folder's in-process system reflects.

    Chroma shares one in-memory system (its HNSW index included) between every
    ``PersistentClient`` of a process on the same folder, and that system does not see what
    another process writes (shared case 26). So a store opened for a newer registry
    generation than the shared system was opened for would read the old index, and so would
    every other store of the process on that folder, even after reopening its own client.
    :meth:`open` therefore closes every client this module opened on a stale folder (the
    shared system stops with its last client) before it opens a new one, which loads the
    index from disk; the stores whose clients were closed reopen theirs on next use.

    While a writer of this process holds the store's write lock (:meth:`writing`), no other
    process can write, and what this one writes goes through the shared system: it stays
    current, and the generations its commits make never reopen it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: folder -> newest registry generation the folder's shared system reflects
        self._generation: dict[str, int] = {}
        #: folder -> ``(connection, client)`` for every open client this module made there
        self._clients: dict[str, list[tuple[weakref.ref[ChromaConnection], ClientAPI]]] = {}
        #: folder -> writers of this process holding the store's write lock
        self._writers: dict[str, int] = {}

    def _reopen_if_stale(self, folder: str, generation: int) -> None:
        """Close this module's clients on ``folder`` if its system is older than ``generation``."""
        if generation <= self._generation.get(folder, generation):
            return
        stale = self._clients.pop(folder, [])
        self._generation.pop(folder, None)
        logger.debug("%s: the in-process Chroma system is older than generation %d; closing %d client(s)",
                     folder, generation, len(stale))
        for ref, client in stale:
            owner = ref()
            if owner is not None:
                owner._forget_client()
            _close_client(client, folder)

    def open(
        self, connection: ChromaConnection, folder: str, generation: int | None, make: Callable[[], ClientAPI]
    ) -> ClientAPI:
        """Open a client on ``folder`` that reflects at least registry ``generation`` (None: any)."""
        with self._lock:
            if generation is not None and not self._writers.get(folder):
                self._reopen_if_stale(folder, generation)
            client = make()
            self._clients.setdefault(folder, []).append((weakref.ref(connection), client))
            if generation is not None:
                self._generation[folder] = max(generation, self._generation.get(folder, generation))
            return client

    def closed(self, folder: str, client: ClientAPI) -> None:
        """Forget a client its store has closed."""
        with self._lock:
            held = [pair for pair in self._clients.get(folder, []) if pair[1] is not client]
            if held:
                self._clients[folder] = held
            else:
                self._clients.pop(folder, None)
                self._generation.pop(folder, None)

    @contextmanager
    def writing(self, folder: str, generation: Callable[[], int]) -> Iterator[None]:
        """Hold ``folder`` current for a writer of this process (it holds the write lock).

        Stale clients are closed first (``generation()`` is the registry's generation now);
        at the end the folder's system reflects the generation the writer left.
        """
        with self._lock:
            self._reopen_if_stale(folder, generation())
            self._writers[folder] = self._writers.get(folder, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._writers[folder] - 1
                if left:
                    self._writers[folder] = left
                else:
                    del self._writers[folder]
                if folder in self._clients:
                    self._generation[folder] = max(generation(), self._generation.get(folder, 0))


_VIEWS = _SharedViews()


def embedded_writer(root: str | Path, generation: Callable[[], int]) -> contextlib.AbstractContextManager[None]:
    """Context for a writer of this process holding the write lock of the embedded store at ``root``.

    Clients of the process on ``<root>/chroma`` older than the registry's generation now are
    closed first, and none is reopened for the generations the writer commits (see
    :class:`_SharedViews`).

    Args:
        root: Store folder (the Chroma files are in ``<root>/chroma``).
        generation: Returns the registry's current generation.
    """
    return _VIEWS.writing(str(Path(root) / CHROMA_DIR), generation)


def _close_client(client: ClientAPI, where: str) -> None:
    """Close a Chroma client; a failure is logged, never raised (it must not mask the caller's error)."""
    if hasattr(client, "close"):
        try:
            client.close()
        except Exception as err:  # noqa: BLE001 - closing must never mask the caller's own error
            logger.debug("closing Chroma client at %s: %s", where, err)


def is_chroma_error(err: BaseException) -> bool:
    """Tell whether ``err`` is Chroma refusing a call or being unreachable, not a bug of the caller.

    Chroma's errors (``chromadb.errors.ChromaError``), its input validation (``ValueError``),
    connection failures (``OSError``, ``httpx.HTTPError``) and the plain ``Exception`` its
    HTTP client raises for a status it has no error type for.
    """
    if type(err) is Exception:
        return True
    try:
        import httpx
        from chromadb.errors import ChromaError
    except ImportError:  # pragma: no cover - chromadb brings httpx
        return isinstance(err, (ValueError, OSError))
    return isinstance(err, (ChromaError, ValueError, OSError, httpx.HTTPError))


def _half_written(err: BaseException) -> bool:
    """Tell whether Chroma failed because another process had not yet written its index files."""
    text = str(err)
    return "Nothing found on disk" in text or "Error creating hnsw segment reader" in text


@contextmanager
def chroma_call(message: Callable[[BaseException], str]) -> Iterator[None]:
    """Turn Chroma's own failures inside the block into StoreError(message(err)); others pass."""
    try:
        yield
    except ProxyPointerError:
        raise
    except Exception as err:  # narrowed by is_chroma_error: anything else is re-raised as is
        if not is_chroma_error(err):
            raise
        raise StoreError(message(err)) from err


class ChromaConnection:
    """One Chroma collection opened: its client's lifecycle, its owner's mark, reads retried on reopen.

    Embedded (``PersistentClient``) or on a server (``HttpClient``). The client and the
    collection are opened on first use and reopened after :meth:`close`; in embedded mode the
    process's clients on one folder are closed together when a newer registry generation is
    opened (:class:`_SharedViews`).

    Args:
        config: Store settings.
        root: Folder of the embedded store (``<root>/chroma``); ignored in ``http`` mode.
        owner: ``(store_id, store_path)`` written into the collection's metadata at creation
            and compared on every open (None: a store without an id, read only).
        adopt: Mark an unmarked, non-empty collection as this store's (see :meth:`_claim`).
        generation: Embedded mode: the registry generation this store must see. Opening it
            reopens the process's other clients on the folder when they are older
            (:class:`_SharedViews`); None (a writer of its own, a test) opens as Chroma does.

    Raises:
        StoreError: If Chroma cannot be opened or reached, or the collection belongs to
            another store (named in the message).
        MissingDependencyError: If chromadb is not installed.

    """

    def __init__(
        self,
        config: StoreConfig,
        root: str | Path,
        owner: tuple[str, str] | None = None,
        adopt: bool = False,
        generation: int | None = None,
    ) -> None:
        #: Store settings (``store`` section of the config).
        self.config = config
        #: Folder of the embedded store (``<root>/chroma``); unused in ``http`` mode.
        self.root = Path(root)
        #: ``(store_id, store_path)`` of the store using this collection; None for a store
        #: that has no id yet (it reads any collection not marked by another folder, marks none).
        self.owner = owner
        #: Take an unmarked collection that already holds chunks (the store's own, from before
        #: collections were marked); an empty one is always taken.
        self.adopt = adopt
        #: Registry generation this store must see (embedded mode; see :class:`_SharedViews`).
        self.generation = generation
        self._client: ClientAPI | None = None
        self._collection: Collection | None = None
        self._max_batch: int | None = None

    @property
    def where(self) -> str:
        """``http://host:port`` of the server, or the folder of the embedded store."""
        cfg = self.config
        if cfg.mode == "http":
            return f"{'https' if cfg.ssl else 'http'}://{cfg.host}:{cfg.port}"
        return str(self.root / CHROMA_DIR)

    def close(self) -> None:
        """Release the client; the next use opens a fresh one.

        An embedded client caches the HNSW index in memory, so a process that reads while
        another one writes sees the other's writes only after reopening (shared case 26).
        Chroma shares one in-memory system per folder and process, which stops with its last
        client; a store opened for a newer registry generation closes the others
        (:class:`_SharedViews`).
        """
        client = self._client
        self._forget_client()
        if client is not None:
            if self.config.mode == "persistent":
                _VIEWS.closed(self.where, client)
            _close_client(client, self.where)

    def _forget_client(self) -> None:
        """Drop the client and collection handles (their owner closes the client)."""
        self._client, self._collection, self._max_batch = None, None, None

    @property
    def client(self) -> ClientAPI:
        """The Chroma client (created on first use).

        Raises:
            StoreError: If the server cannot be reached or the folder cannot be opened.
            ConfigError: If ``store.token_env`` names an unset variable.
        """
        if self._client is None:
            try:
                import chromadb
                from chromadb.config import Settings
            except ImportError as err:
                raise MissingDependencyError("the store needs chromadb; pip install chromadb") from err
            settings = Settings(anonymized_telemetry=False)
            cfg = self.config
            hint = "is `chroma run` up and reachable?" if cfg.mode == "http" else "check the folder"
            with chroma_call(lambda err: f"{self.where}: cannot open Chroma ({type(err).__name__}: {err}); {hint}"):
                if cfg.mode == "http":
                    headers = dict(cfg.headers)
                    if cfg.token_env:
                        token = os.environ.get(cfg.token_env)
                        if not token:
                            raise ConfigError(f"store.token_env: environment variable {cfg.token_env} is not set")
                        headers["Authorization"] = f"Bearer {token}"
                    client = chromadb.HttpClient(
                        host=cfg.host, port=cfg.port, ssl=cfg.ssl, headers=headers or None, settings=settings
                    )
                    client.heartbeat()
                else:
                    path = self.root / CHROMA_DIR
                    path.mkdir(parents=True, exist_ok=True)
                    client = _VIEWS.open(self, self.where, self.generation,
                                         lambda: chromadb.PersistentClient(path=str(path), settings=settings))
            self._client = client
        return self._client

    @property
    def collection(self) -> Collection:
        """The collection, created with cosine space, no embedding function and its owner's mark.

        Raises:
            StoreError: If it cannot be opened, or it belongs to another store (both named).
        """
        if self._collection is None:
            client = self.client
            metadata: dict[str, str] = {"hnsw:space": "cosine"}
            if self.owner:
                metadata[OWNER_ID_KEY], metadata[OWNER_PATH_KEY] = self.owner
            with chroma_call(
                lambda err: f"{self.where}: cannot open collection {self.config.collection!r} "
                f"({type(err).__name__}: {err}); check store.collection"
            ):
                collection = client.get_or_create_collection(
                    name=self.config.collection, embedding_function=None, metadata=metadata
                )
                self._claim(collection)
            self._collection = collection
        return self._collection

    def _claim(self, collection: Collection) -> None:
        """Refuse a collection another store owns; mark an unmarked one this store may take.

        An unmarked collection (made before stores marked theirs) is taken when it is empty or
        :attr:`adopt` is set (this store already has chunks in it); a collection marked by
        the same store folder, re-created since (its recorded path is ours), is taken over.
        """
        meta = dict(collection.metadata or {})
        mark, mark_path = meta.get(OWNER_ID_KEY), str(meta.get(OWNER_PATH_KEY, "?"))
        ours = self.owner[0] if self.owner else None
        here = self.owner[1] if self.owner else str(self.root.resolve())
        name = self.config.collection
        if mark is not None and mark == ours:
            return
        if mark is not None and mark_path != here:
            raise StoreError(
                f"{self.where}: collection {name!r} belongs to the store {mark_path} (store id {str(mark)[:8]}), "
                f"not to this one ({here}); two stores on one collection delete each other's chunks. Give this "
                f"store its own store.collection, or run from {mark_path}"
            )
        if self.owner is None:  # a store without an id yet (only read so far): nothing to mark
            return
        if mark is None and not self.adopt and collection.count():
            raise StoreError(
                f"{self.where}: collection {name!r} already holds {collection.count()} chunks written by "
                f"another store (it carries no owner mark); give this store its own store.collection"
            )
        if mark is not None:
            logger.warning("%s: collection %r was made by an earlier store in %s; this store takes it over",
                           self.where, name, here)
        keep = {k: v for k, v in meta.items() if not k.startswith("hnsw:")}  # the space cannot be re-set
        collection.modify(metadata={**keep, OWNER_ID_KEY: self.owner[0], OWNER_PATH_KEY: self.owner[1]})

    @property
    def max_batch_size(self) -> int:
        """Records Chroma takes per call: ``client.get_max_batch_size()``, asked once per client.

        Raises:
            StoreError: If Chroma cannot be asked.
        """
        if self._max_batch is None:
            client = self.client
            with chroma_call(lambda err: f"{self.where}: cannot ask Chroma for its max batch size ({err})"):
                self._max_batch = int(client.get_max_batch_size())
        return self._max_batch

    def read(self, what: str, call: Callable[[Collection], T]) -> T:
        """Run a read on the collection; StoreError naming ``what`` if Chroma fails.

        In embedded mode a reader that opens the collection while another process is writing
        its index files can find them missing ("Error creating hnsw segment reader: Nothing
        found on disk", shared case 26): the read is retried on a reopened client after each
        pause of :data:`REOPEN_PAUSES_S` before it fails. A read whose client was closed under
        it (another store of the process opened for a newer generation, :class:`_SharedViews`)
        is retried at once on a new one.

        Args:
            what: What failed, for the message (``"query failed"``).
            call: The read, given the collection.

        Returns:
            What ``call`` returned.

        Raises:
            StoreError: If Chroma fails (the last retry, or any failure that is not a half-written index).
        """
        for pause in (*REOPEN_PAUSES_S, None):
            collection = self.collection
            try:
                return call(collection)
            except Exception as err:  # narrowed by is_chroma_error: anything else is re-raised as is
                if not is_chroma_error(err):
                    raise
                if pause is not None and self._collection is not collection:
                    logger.debug("%s: client closed during a read (%s); retrying on a new one", self.where, err)
                    continue
                if pause is None or self.config.mode != "persistent" or not _half_written(err):
                    raise StoreError(f"{self.where}: {what} ({type(err).__name__}: {err})") from err
                logger.debug("%s: %s; reopening in %.1f s", self.where, err, pause)
            self.close()
            time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

"""The service both servers call: search, documents, structure, sections, and the writes.

Every request is validated and limited here (``serve`` section of the config), so the MCP
tools and the HTTP routes are thin adapters with the same behaviour. Texts are the stored
source lines of the live version of a document (read by its content hash from the registry,
never from a path in the request), cut to a budget in word pieces of the embedding model's
tokenizer at a line boundary (:mod:`.texts`), each with its citation
``<doc_id><suffix>#L<start>-L<end>``. Refusals are :mod:`.errors`.

Threads: one :class:`Service` serves many requests at once. What the library does that is not
safe to share between threads is kept apart (:mod:`.concurrency`):

* ``SentenceTransformerEmbedder.encode_query`` keeps an unlocked LRU of query vectors, builds
  its model and traced encoder on first use, and saves and restores torch's thread count
  around each forward pass: a :class:`~.concurrency.SharedEmbedder` serialises query
  encoding (one model, loaded once, shared by every thread).
* ``Registry`` holds one SQLite connection and ``Retriever`` keeps unlocked caches: each
  worker thread borrows its own ``Index`` and ``Retriever`` from a pool of ``serve.threads``.
* An embedded Chroma store is one in-memory system per folder and process, shared by every
  client; a client opened after another process wrote still searches the old HNSW index until
  *every* client of that folder in the process has been closed, and chromadb opens and closes
  clients without a lock. Clients are opened and closed under one lock, and when the
  registry's generation moves (another process wrote) the next request closes them all
  while no request runs, so the system reloads from disk.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from .._lru import LRU
from ..config import ProxyPointerConfig
from ..docids import normalize_doc_id
from ..embed.embedder import Embedder, SentenceTransformerEmbedder
from ..errors import StaleSourceError
from ..lines import slice_lines, split_lines
from ..read.discovery import discover
from ..retrieve.retriever import Retriever, format_citation
from ..store.registry import DocumentRecord
from ..tree.build import tree_rows
from ..tree.pages import PageMap, stored_page_map
from .concurrency import CHROMA_LOCK, Gate, ServedIndex, SharedEmbedder
from .errors import BadRequest, Forbidden, NotFound, WriteBusy, int_arg, text_arg
from .texts import breadcrumb, budgeted, depths, fit_lines

__all__ = ["MAX_DOC_IDS", "MAX_ID_CHARS", "MAX_INGEST_PATHS", "MAX_LIST", "Service"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Most documents one ``list_documents`` page returns.
MAX_LIST = 1000
#: Longest doc_id, node_id or prefix accepted, in characters.
MAX_ID_CHARS = 1024
#: Most doc_ids one search may name.
MAX_DOC_IDS = 200
#: Most paths one ``POST /ingest`` may name.
MAX_INGEST_PATHS = 100
#: Stored sources kept in memory, by content hash (immutable, so never stale).
_SOURCE_CACHE = 32


@dataclass(slots=True)
class _Reader:
    """What one request uses: its own registry connection, Chroma client and retriever caches."""

    index: ServedIndex
    retriever: Retriever


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """One live version of a document: its record, tree nodes and stored lines, read together."""

    record: DocumentRecord
    nodes: list[dict[str, Any]]
    lines: list[str]
    pages: PageMap | None = None

    def page_range(self, start_line: int, end_line: int) -> tuple[int, int]:
        """1-based PDF pages of the content of a line range; (0, 0) without pages."""
        if self.pages is None or end_line > len(self.pages.line_pages):
            return 0, 0
        return self.pages.pages(start_line, end_line)

    def citation(self, start_line: int, end_line: int) -> str:
        return format_citation(
            self.record.doc_id, self.record.source_path, start_line, end_line, *self.page_range(start_line, end_line)
        )


class Service:
    """Search and read an index from many threads; the layer under the MCP and HTTP servers.

    Args:
        store: Store folder (as for :class:`~proxypointer.index.Index`); defaults to
            ``config.store.path``.
        config: Full configuration; its ``serve`` section sets the limits and the threads.
        embedder: Embedding model; defaults to sentence-transformers with ``config.embedding``
            (loaded once, by :meth:`warm_up`). Wrapped in a :class:`SharedEmbedder`.
        allow_write: Accept :meth:`ingest` and :meth:`delete` (off: they raise Forbidden); a
            store folder that holds no store yet gets an empty one.

    Every public method is safe to call from any thread; :meth:`call` runs one in the
    service's pool of ``serve.threads`` worker threads from async code.

    Example:
        >>> service = Service(".proxypointer", load_config(None))        # doctest: +SKIP
        >>> service.warm_up()                                             # doctest: +SKIP
        >>> service.search("parental leave pay", k=3)["sections"][0]["citation"]  # doctest: +SKIP
        'employee-handbook.md#L120-L188'
    """

    def __init__(
        self,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
        *,
        allow_write: bool = False,
    ) -> None:
        self.config = config or ProxyPointerConfig()
        self.limits = self.config.serve
        self.root = Path(store if store is not None else self.config.store.path)
        self.allow_write = allow_write
        self.embedder = SharedEmbedder(embedder or SentenceTransformerEmbedder(self.config.embedding))
        if allow_write and not (self.root / "registry.sqlite3").is_file():
            # a server that may ingest starts on an empty store, created now (issue 32)
            with ServedIndex(self.root, self.config, self.embedder) as index:
                index.ingest([], show_progress=False)
            logger.info("%s: created an empty store (serve --allow-write)", self.root)
        n = self.limits.threads
        self._readers: list[_Reader] = []
        self._pool: queue.Queue[_Reader] = queue.Queue()
        for _ in range(n):
            index = ServedIndex(self.root, self.config, self.embedder)
            reader = _Reader(index, Retriever(index))
            self._readers.append(reader)
            self._pool.put(reader)
        self._writer = ServedIndex(self.root, self.config, self.embedder) if allow_write else None
        self._write_lock = threading.Lock()
        self._gate = Gate()
        self._probe = ServedIndex(self.root, self.config, self.embedder)  # registry generation only
        self._probe_lock = threading.Lock()
        self._loaded_generation = -1
        self._sources: LRU[str, list[str]] = LRU(_SOURCE_CACHE)  # doc_hash -> lines
        self._executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="proxypointer-serve")
        self._write_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="proxypointer-write")

    # -- life cycle -----------------------------------------------------------------------
    def warm_up(self) -> dict[str, Any]:
        """Load the model (and its traced query encoder), open the store; call before serving.

        With ``serve.preload`` the store's files are read once first, so that the first
        requests find them in the OS page cache (:meth:`~proxypointer.index.Index.preload`).

        Returns:
            ``{"documents": n, "store": path, "preloaded_mb": megabytes read (0.0 without
            preload), "preload": one line saying what the preload did, or that it is off}``.

        Raises:
            ConfigError: If the store was built with another embedding model.
            StoreError: If Chroma cannot be opened.
        """
        preloaded, note = 0, "store not preloaded (serve.preload: false)"
        if self.limits.preload:
            report = self._probe.preload(self.limits.preload_max_mb * 1_000_000 or None)
            preloaded, note = report.bytes_read, report.summary()
        self.embedder.encode_query("warm up")
        self.embedder.tokenizer.count("warm up")
        with self._probe_lock:
            self._loaded_generation = self._probe.registry.generation()
        for reader in self._readers:
            reader.index.check_model(record=False)
            reader.index.store  # noqa: B018 - open Chroma now, not during the first request
        n = sum(1 for r in self._readers[0].index.registry.documents() if r.version)
        logger.info("serving %d documents from %s", n, self.root.resolve())
        return {"documents": n, "store": str(self.root.resolve()), "preloaded_mb": round(preloaded / 1e6, 1),
                "preload": note}

    def close(self) -> None:
        """Stop the worker threads and close every registry connection and Chroma client."""
        self._executor.shutdown(wait=True)
        self._write_executor.shutdown(wait=True)
        for reader in self._readers:
            reader.index.close()
        if self._writer is not None:
            self._writer.close()
        self._probe.close()

    async def call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run one of the service's methods in its worker threads (writes in their own thread).

        Args:
            fn: A method of this service.
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What ``fn`` returns.
        """
        pool = self._write_executor if fn in (self.ingest, self.delete) else self._executor
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, functools.partial(fn, *args, **kwargs))

    # -- readers --------------------------------------------------------------------------
    @contextmanager
    def _reader(self) -> Iterator[_Reader]:
        """Borrow a reader for one request (after reloading Chroma if another process wrote)."""
        self._reload_if_changed()
        with self._gate.shared():
            reader = self._pool.get()
            try:
                yield reader
            finally:
                self._pool.put(reader)

    def _reload_if_changed(self) -> None:
        """Close every Chroma client of the process when the registry's generation moved.

        Skipped while this server writes: its own writes go through the same in-process Chroma
        system, and another process cannot write until it has finished (the store's lock).
        """
        if self.config.store.mode != "persistent":
            return
        with self._probe_lock:
            generation = self._probe.registry.generation()
        if generation == self._loaded_generation or not self._write_lock.acquire(blocking=False):
            return
        try:
            with self._gate.exclusive():
                with self._probe_lock:
                    generation = self._probe.registry.generation()
                if generation != self._loaded_generation:
                    logger.info("the index changed (generation %d); reopening Chroma", generation)
                    with CHROMA_LOCK:
                        for reader in self._readers:
                            reader.index.close()
                        if self._writer is not None:
                            self._writer.close()
                    self._loaded_generation = generation
        finally:
            self._write_lock.release()

    def _lines(self, reader: _Reader, doc_hash: str) -> list[str]:
        """Return the stored lines of one version (by content hash), from a small LRU."""
        lines = self._sources.get(doc_hash)
        if lines is None:
            lines = split_lines(reader.index.registry.sources.load(doc_hash))
            self._sources.put(doc_hash, lines)
        return lines

    def _snapshot(self, reader: _Reader, doc_id: str) -> _Snapshot:
        """Record, tree and lines of the live version of one document, read consistently.

        The registry gives the record and the tree in two reads; a writer may commit a new
        version between them, so the record is read again and the whole read repeated when
        it moved (a version's stored source is immutable, read by its hash).
        """
        reg = reader.index.registry
        doc_id = reg.stored_id(doc_id) or doc_id  # ids compare in Unicode NFC (proxypointer.docids)
        for _attempt in range(5):
            rec = reg.get(doc_id)
            if rec is None or not rec.version:
                raise NotFound(f"doc_id {doc_id!r}: no such document in the index; list_documents gives the ids")
            tree = reg.tree_json(doc_id)
            try:
                lines = self._lines(reader, rec.doc_hash)
            except StaleSourceError:
                continue  # replaced and pruned meanwhile: read the new version
            stored_pages = reg.sources.load_pages(rec.doc_hash)
            again = reg.get(doc_id)
            if again is not None and _version_key(again) == _version_key(rec):
                pages = None
                if stored_pages is not None and len(stored_pages) == len(lines):
                    pages = stored_page_map(stored_pages, lines)
                return _Snapshot(rec, tree_rows(tree), lines, pages)
        raise StaleSourceError(f"doc_id {doc_id!r}: the document kept changing during the request; try again")

    # -- read API -------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int | None = None,
        doc_ids: Sequence[str] | None = None,
        prefix: str | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """Find the ``k`` best whole sections for a query, their texts within a budget.

        Args:
            query: Question or keywords, 1..``serve.max_query_chars`` characters.
            k: Sections wanted, 1..``serve.max_k`` (default ``retrieval.k``).
            doc_ids: Only search these documents (each must be in the index); an empty list
                selects nothing (as `Retriever.retrieve`), never every document.
            prefix: Only search documents whose doc_id starts with this.
            max_tokens: Budget for all returned texts together, in word pieces of the
                embedding model's tokenizer (no special tokens), 1..``serve.max_tokens``
                (default ``serve.default_max_tokens``). Sections are filled in rank order,
                whole lines only; a section cut short has ``truncated`` set and
                ``next_start_line``, and once the budget is spent the rest come with
                ``text`` empty.

        Returns:
            ``{"query", "k", "max_tokens", "tokens", "sections": [...]}``. Each section is
            ``Section.to_dict()`` (citation, breadcrumb, start_line, end_line, score,
            delivery, outline, ...) without ``chunk_text``, whose ``text`` is the stored lines
            ``text_start_line..text_end_line`` of what retrieval delivered (the whole section,
            or for a big one its own text, with its children in ``outline``;
            ``text_end_line`` = ``text_start_line - 1`` when none fit), with ``tokens``,
            ``truncated`` and ``next_start_line`` (None when whole).

        Raises:
            BadRequest: On an empty or too long query, k or max_tokens out of range.
            NotFound: If a doc_id is not in the index.
        """
        query = text_arg("query", query, self.limits.max_query_chars)
        if not query.strip():
            raise BadRequest("query: must not be empty")
        k = self.config.retrieval.k if k is None else int_arg("k", k, 1, self.limits.max_k)
        budget = self._budget(max_tokens)
        ids = None
        if doc_ids is not None:
            if isinstance(doc_ids, str) or not isinstance(doc_ids, Sequence):
                raise BadRequest("doc_ids: expected a list of doc_id strings")
            if len(doc_ids) > MAX_DOC_IDS:
                raise BadRequest(f"doc_ids: at most {MAX_DOC_IDS} ids, got {len(doc_ids)}")
            ids = [text_arg("doc_ids[]", d, MAX_ID_CHARS) for d in doc_ids]  # [] selects nothing
        if prefix is not None:
            prefix = text_arg("prefix", prefix, MAX_ID_CHARS)
        with self._reader() as reader:
            if ids:  # as users write them: NFC or not, or the citation form (`handbook.md`)
                ids, unknown = reader.retriever.resolve_doc_ids(ids)
                if unknown:
                    raise NotFound(f"doc_ids: not in the index: {unknown[:5]}; list_documents gives the ids")
            sections = reader.retriever.retrieve(query, k, doc_ids=ids, source_prefix=prefix or None)
        tokenizer = self.embedder.tokenizer
        out, used = [], 0
        for s in sections:
            item, n_tok = budgeted(s, budget - used, tokenizer)
            used += n_tok
            out.append(item)
        return {"query": query, "k": k, "max_tokens": budget, "tokens": used, "sections": out}

    def list_documents(self, prefix: str | None = None, offset: int = 0, limit: int = MAX_LIST) -> dict[str, Any]:
        """List the documents with a live version, by doc_id.

        Args:
            prefix: Only documents whose doc_id starts with this.
            offset: Documents skipped (for paging), >= 0.
            limit: Most documents returned, 1..:data:`MAX_LIST`.

        Returns:
            ``{"total", "offset", "next_offset", "documents": [...]}``; each document has
            ``doc_id``, ``title``, ``source`` (the file it was indexed from), ``line_count``,
            ``sections``, ``chunks``, ``indexed_at`` (ISO 8601, UTC) and ``state``;
            ``next_offset`` is None on the last page.

        Raises:
            BadRequest: On a bad prefix, offset or limit.
        """
        if prefix is not None:
            prefix = text_arg("prefix", prefix, MAX_ID_CHARS)
        offset = int_arg("offset", offset, 0)
        limit = int_arg("limit", limit, 1, MAX_LIST)
        with self._reader() as reader:
            records = [r for r in reader.index.registry.documents() if r.version]
        if prefix:
            prefix = normalize_doc_id(prefix)
            records = [r for r in records if normalize_doc_id(r.doc_id).startswith(prefix)]
        page = records[offset : offset + limit]
        nxt = offset + limit if offset + limit < len(records) else None
        return {
            "total": len(records),
            "offset": offset,
            "next_offset": nxt,
            "documents": [
                {
                    "doc_id": r.doc_id,
                    "title": r.title,
                    "source": r.source_path,
                    "line_count": r.line_count,
                    "sections": r.n_sections,
                    "chunks": r.n_chunks,
                    "indexed_at": _iso(r.indexed_at),
                    "state": r.state,
                }
                for r in page
            ],
        }

    def get_structure(self, doc_id: str, depth: int | None = None) -> dict[str, Any]:
        """Return the skeleton tree of one document: every section with its lines, for navigation.

        Args:
            doc_id: A doc_id from :meth:`list_documents` or a search result.
            depth: Only nodes at most this deep (1: top-level sections); None: all.

        Returns:
            ``{"doc_id", "title", "source", "line_count", "indexed_at", "nodes": [...]}``;
            nodes in document order, each with ``node_id``, ``title``, ``level`` (heading
            level; 0 for the preamble), ``depth`` (1 for a top-level node), ``start_line``,
            ``end_line`` (1-based inclusive, the whole subtree), ``page_start``, ``page_end``
            (1-based PDF pages; 0 when the document has no pages), ``parent_id`` (``""`` at
            the top), ``kind`` and ``citation``.

        Raises:
            BadRequest: On a bad doc_id or depth.
            NotFound: If the document is not in the index.
        """
        doc_id = text_arg("doc_id", doc_id, MAX_ID_CHARS)
        if depth is not None:
            depth = int_arg("depth", depth, 1, 64)
        with self._reader() as reader:
            snap = self._snapshot(reader, doc_id)
        node_depths = depths(snap.nodes)
        nodes = [
            {
                "node_id": n["node_id"],
                "title": n["title"],
                "level": n["level"],
                "depth": node_depths[n["node_id"]],
                "start_line": n["start_line"],
                "end_line": n["end_line"],
                "page_start": snap.page_range(n["start_line"], n["end_line"])[0],
                "page_end": snap.page_range(n["start_line"], n["end_line"])[1],
                "parent_id": n["parent_id"],
                "kind": n["kind"],
                "citation": snap.citation(n["start_line"], n["end_line"]),
            }
            for n in snap.nodes
            if depth is None or node_depths[n["node_id"]] <= depth
        ]
        rec = snap.record
        return {
            "doc_id": rec.doc_id,
            "title": rec.title,
            "source": rec.source_path,
            "line_count": rec.line_count,
            "indexed_at": _iso(rec.indexed_at),
            "nodes": nodes,
        }

    def get_section(
        self,
        doc_id: str,
        node_id: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        r"""Read the exact stored lines of a section or a line range, with their citation, within a budget.

        Args:
            doc_id: A doc_id from :meth:`list_documents` or a search result.
            node_id: A node from :meth:`get_structure` or a search result: its lines
                ``start_line..end_line`` (the whole subtree). None: the whole document.
            start_line: First line wanted, 1-based inclusive; inside the node when one is
                given (use a previous answer's ``next_start_line`` to read on).
            end_line: Last line wanted, 1-based inclusive (default: the end of the node or
                document).
            max_tokens: Budget in word pieces of the embedding model's tokenizer (no special
                tokens), 1..``serve.max_tokens`` (default ``serve.default_max_tokens``): whole
                lines from ``start_line`` while they fit.

        Returns:
            ``{"doc_id", "node_id", "title", "breadcrumb", "kind", "level",
            "section_start_line", "section_end_line", "start_line", "end_line", "page_start",
            "page_end", "citation", "text", "tokens", "truncated", "next_start_line"}``: ``text``
            is exactly the stored lines ``start_line..end_line`` joined with ``\n`` and
            ``citation`` names those lines (and their pages: ``page_*`` are 0 without pages);
            ``section_*`` give the node (or document) range; ``next_start_line`` is the first
            line left out, None when the range was delivered whole.

        Raises:
            BadRequest: On lines outside the node or document, or a first line alone longer
                than the budget.
            NotFound: If the document or node is not in the index.
        """
        doc_id = text_arg("doc_id", doc_id, MAX_ID_CHARS)
        if node_id is not None:
            node_id = text_arg("node_id", node_id, MAX_ID_CHARS)
        budget = self._budget(max_tokens)
        with self._reader() as reader:
            snap = self._snapshot(reader, doc_id)
        rec = snap.record
        node: dict[str, Any] | None = None
        if node_id:
            node = next((n for n in snap.nodes if n["node_id"] == node_id), None)
            if node is None:
                raise NotFound(
                    f"node_id {node_id!r}: not a node of {doc_id!r}; get_structure lists the nodes "
                    "(for a window of a document without headings, pass start_line and end_line)"
                )
            lo, hi = int(node["start_line"]), int(node["end_line"])
            where = f"node {node_id!r} (lines {lo}-{hi})"
        else:
            lo, hi = 1, len(snap.lines)
            where = f"{doc_id!r} (lines 1-{hi})"
        if hi < lo:
            raise NotFound(f"{where}: has no lines")
        first = lo if start_line is None else int_arg("start_line", start_line, 1)
        last = hi if end_line is None else int_arg("end_line", end_line, 1)
        if not lo <= first <= last <= hi:
            raise BadRequest(f"lines {first}-{last}: expected 1-based lines with start <= end inside {where}")
        tokenizer = self.embedder.tokenizer
        wanted = snap.lines[first - 1 : last]
        n_fit, n_tok = fit_lines(wanted, budget, tokenizer)
        if n_fit == 0:
            raise BadRequest(
                f"line {first} alone has {tokenizer.count(wanted[0])} word pieces, more than max_tokens={budget}; "
                f"ask for more (at most {self.limits.max_tokens})"
            )
        end = first + n_fit - 1
        crumbs = breadcrumb(rec.title, snap.nodes, node_id) if node is not None else [rec.title]
        return {
            "doc_id": rec.doc_id,
            "node_id": node_id,
            "title": node["title"] if node is not None else rec.title,
            "breadcrumb": crumbs,
            "kind": node["kind"] if node is not None else "document",
            "level": node["level"] if node is not None else 0,
            "section_start_line": lo,
            "section_end_line": hi,
            "start_line": first,
            "end_line": end,
            "page_start": snap.page_range(first, end)[0],
            "page_end": snap.page_range(first, end)[1],
            "citation": snap.citation(first, end),
            "text": slice_lines(snap.lines, first, end),
            "tokens": n_tok,
            "truncated": end < last,
            "next_start_line": end + 1 if end < last else None,
        }

    def document_text(self, doc_id: str) -> str:
        """Return the whole stored text of a document's live version (the MCP document resource).

        Raises:
            NotFound: If the document is not in the index.
        """
        doc_id = text_arg("doc_id", doc_id, MAX_ID_CHARS)
        with self._reader() as reader:
            snap = self._snapshot(reader, doc_id)
        return "\n".join(snap.lines)

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "read_only": bool}``; touches nothing."""
        return {"status": "ok", "read_only": not self.allow_write}

    # -- write API ------------------------------------------------------------------------
    @contextmanager
    def _writing(self) -> Iterator[ServedIndex]:
        if not self.allow_write or self._writer is None:
            raise Forbidden("this server is read-only; start it with --allow-write to ingest or delete")
        if not self._write_lock.acquire(timeout=self.config.store.lock_timeout_s):
            raise WriteBusy(
                f"another write is running in this server (waited {self.config.store.lock_timeout_s:g} s); try again"
            )
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
        with self._writing() as writer:
            roots = [Path(r).expanduser().resolve() for r in self.limits.ingest_roots]
            if not roots:
                raise Forbidden("POST /ingest is off: the config names no serve.ingest_roots")
            targets = []
            for raw in paths:
                p = Path(text_arg("paths[]", raw, 4096)).expanduser()
                real = p.resolve()
                if not any(real == r or real.is_relative_to(r) for r in roots):
                    raise Forbidden(f"{raw}: outside serve.ingest_roots; only files under them can be ingested")
                if not real.exists():
                    raise BadRequest(f"{raw}: no such file or folder")
                found = discover([real], writer.readers.keys(), stores=[writer.root])
                for sf in found.files:
                    if not any(Path(sf.real_path).is_relative_to(r) for r in roots):
                        raise Forbidden(
                            f"{sf.path}: resolves outside serve.ingest_roots (a symbolic link?); not ingested"
                        )
                targets.append(real)
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
        with self._writing() as writer:
            removed = writer.delete([doc_id])
        if not removed:
            raise NotFound(f"doc_id {doc_id!r}: no such document in the index")
        return {"deleted": removed}

    # -- helpers --------------------------------------------------------------------------
    def _budget(self, max_tokens: int | None) -> int:
        if max_tokens is None:
            return self.limits.default_max_tokens
        return int_arg("max_tokens", max_tokens, 1, self.limits.max_tokens)


def _version_key(rec: DocumentRecord) -> tuple[str, str, float]:
    return (rec.version, rec.doc_hash, rec.indexed_at)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")

"""The service's reads: search and why it ranked, the document list, structure, sections, text, PDFs.

Every argument is checked and limited here (``serve`` section of the config). Texts are the
stored source lines of the live version of a document (:mod:`.snapshots`), cut to a budget in
word pieces of the embedding model's tokenizer at a line boundary (:mod:`.texts`), each with
its citation ``<doc_id><suffix>#L<start>-L<end>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..chunk.ids import parse_chunk_id
from ..config import ServeConfig
from ..docids import normalize_doc_id
from ..lines import slice_lines
from ..retrieve.explain import Explainer
from ..store.registry import DocumentRecord
from .concurrency import SharedEmbedder
from .errors import MAX_ID_CHARS, BadRequest, NotFound, int_arg, text_arg
from .readers import ReaderPool
from .snapshots import Snapshot, Snapshots
from .texts import breadcrumb, budgeted, depths, fit_lines

if TYPE_CHECKING:
    from ..retrieve.retriever import Retriever

__all__ = ["MAX_DOC_IDS", "MAX_LIST", "ReadAPI"]

#: Most documents one ``list_documents`` page returns.
MAX_LIST = 1000
#: Most doc_ids one search may name.
MAX_DOC_IDS = 200


class ReadAPI:
    """Search and read the index: each call borrows a reader from the pool for its reads.

    Args:
        pool: The readers (one per worker thread).
        snapshots: Consistent reads of a document's live version.
        embedder: The shared model; its tokenizer counts the budgets (read on first use).
        limits: The ``serve`` section: query length, ``k`` and token budgets.
        default_k: Sections a search returns when it names no ``k`` (``retrieval.k``).
    """

    def __init__(
        self, pool: ReaderPool, snapshots: Snapshots, embedder: SharedEmbedder, limits: ServeConfig, default_k: int
    ) -> None:
        self._pool = pool
        self._snapshots = snapshots
        self._embedder = embedder
        self._limits = limits
        self._default_k = default_k

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
        query, k, ids, prefix = self._search_args(query, k, doc_ids, prefix)
        budget = self._budget(max_tokens)
        with self._pool.borrow() as reader:
            ids = self._resolve(reader.retriever, ids)
            sections = reader.retriever.retrieve(query, k, doc_ids=ids, source_prefix=prefix or None)
        tokenizer = self._embedder.tokenizer
        out, used = [], 0
        for s in sections:
            item, n_tok = budgeted(s, budget - used, tokenizer)
            used += n_tok
            out.append(item)
        return {"query": query, "k": k, "max_tokens": budget, "tokens": used, "sections": out}

    def explain(
        self,
        query: str,
        k: int | None = None,
        doc_ids: Sequence[str] | None = None,
        prefix: str | None = None,
    ) -> dict[str, Any]:
        """Say why each section of a search ranked: what fusion saw for it (:mod:`proxypointer.retrieve.explain`).

        Args:
            query: As for :meth:`search`.
            k: As for :meth:`search`.
            doc_ids: As for :meth:`search`.
            prefix: As for :meth:`search`.

        Returns:
            :meth:`~proxypointer.retrieve.explain.QueryExplanation.to_dict`, ``k`` added: the
            text searched, the documents title routing named or boosted, the rankings fused
            (name, weight, chunks) and per section (``doc_id``, ``node_id``, ``rank``, in the
            order :meth:`search` gives) its ``fused_rank``, its ``signals`` (per ranking:
            ``rank`` 1-based, 0 when absent; ``score``; ``contribution`` to the RRF score),
            ``labelled``, ``implied``, ``reached_via``, ``chunk_ranks``, ``section_score`` and
            ``demoted``; ``reranker``: the ``rerank.backend`` that ordered the sections after
            fusion (their ``rank`` is its order, ``fused_rank`` fusion's), or None. Costs about a
            second search, a reranker's call included.

        Raises:
            BadRequest: On an empty or too long query, k out of range.
            NotFound: If a doc_id is not in the index.
        """
        query, k, ids, prefix = self._search_args(query, k, doc_ids, prefix)
        with self._pool.borrow() as reader:
            ids = self._resolve(reader.retriever, ids)
            sections = reader.retriever.retrieve(query, k, doc_ids=ids, source_prefix=prefix or None)
            why = Explainer(reader.retriever).explain(query, sections, k, doc_ids=ids, source_prefix=prefix or None)
            reranker = reader.retriever.index.config.rerank.backend if reader.retriever.reranker is not None else None
        return {"k": k, "reranker": reranker, **why.to_dict()}

    def document_file(self, doc_id: str) -> Path:
        """Return the original PDF a document was indexed from, for a viewer to open at a page.

        The store keeps the converted text, not the PDF: this is the file at the path the
        registry recorded, served only for a document of the index whose source is a ``.pdf``
        and only while that file still has the size it had when indexed (its pages are then
        those the citations name). No path from the request is ever read.

        Args:
            doc_id: A doc_id from :meth:`list_documents` or a search result.

        Returns:
            The absolute path of the PDF.

        Raises:
            NotFound: If the document is not in the index, was not indexed from a PDF, or its
                file is gone or changed (re-ingest it).
        """
        doc_id = text_arg("doc_id", doc_id, MAX_ID_CHARS)
        rec = self._snapshot(doc_id).record
        path = Path(rec.source_path)
        if path.suffix.lower() != ".pdf":
            raise NotFound(f"doc_id {rec.doc_id!r}: indexed from {path.name}, not a PDF; only PDFs are served")
        try:
            size = path.stat().st_size if path.is_file() else -1
        except OSError:
            size = -1
        if size != rec.source_size:
            what = "is gone" if size < 0 else f"changed since it was indexed ({size} bytes, was {rec.source_size})"
            raise NotFound(f"{path}: the PDF of {rec.doc_id!r} {what}; ingest it again")
        return path

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
        with self._pool.borrow() as reader:
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
            "documents": [_document_row(r) for r in page],
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
        snap = self._snapshot(doc_id)
        node_depths = depths(snap.nodes)
        nodes = [
            _node_row(snap, n, node_depths[n["node_id"]])
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
        snap = self._snapshot(doc_id)
        rec = snap.record
        node: dict[str, Any] | None = None
        if node_id:
            node = next((n for n in snap.nodes if n["node_id"] == node_id), None)
            if node is None:
                node = self._window(rec, node_id)
            if node is None:
                raise NotFound(
                    f"node_id {node_id!r}: not a node or window of {doc_id!r}; get_structure lists the nodes "
                    "(search gives the windows of a document without headings)"
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
        tokenizer = self._embedder.tokenizer
        wanted = snap.lines[first - 1 : last]
        n_fit, n_tok = fit_lines(wanted, budget, tokenizer)
        if n_fit == 0:
            raise BadRequest(
                f"line {first} alone has {tokenizer.count(wanted[0])} word pieces, more than max_tokens={budget}; "
                f"ask for more (at most {self._limits.max_tokens})"
            )
        end = first + n_fit - 1
        crumbs = breadcrumb(rec.title, snap.nodes, node_id) if node is not None and node["kind"] != "window" else [
            rec.title
        ]
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
        snap = self._snapshot(doc_id)
        return "\n".join(snap.lines)

    def _search_args(
        self, query: Any, k: Any, doc_ids: Any, prefix: Any
    ) -> tuple[str, int, list[str] | None, str | None]:
        """Check the arguments of :meth:`search` and :meth:`explain`: ``(query, k, doc_ids, prefix)``."""
        query = text_arg("query", query, self._limits.max_query_chars)
        if not query.strip():
            raise BadRequest("query: must not be empty")
        k = self._default_k if k is None else int_arg("k", k, 1, self._limits.max_k)
        ids = None
        if doc_ids is not None:
            if isinstance(doc_ids, str) or not isinstance(doc_ids, Sequence):
                raise BadRequest("doc_ids: expected a list of doc_id strings")
            if len(doc_ids) > MAX_DOC_IDS:
                raise BadRequest(f"doc_ids: at most {MAX_DOC_IDS} ids, got {len(doc_ids)}")
            ids = [text_arg("doc_ids[]", d, MAX_ID_CHARS) for d in doc_ids]  # [] selects nothing
        if prefix is not None:
            prefix = text_arg("prefix", prefix, MAX_ID_CHARS)
        return query, k, ids, prefix

    @staticmethod
    def _resolve(retriever: Retriever, ids: list[str] | None) -> list[str] | None:
        """Map doc ids as users write them (NFC or not, or the citation form ``handbook.md``) to the store's."""
        if ids:
            ids, unknown = retriever.resolve_doc_ids(ids)
            if unknown:
                raise NotFound(f"doc_ids: not in the index: {unknown[:5]}; list_documents gives the ids")
        return ids

    def _window(self, rec: DocumentRecord, node_id: str) -> dict[str, Any] | None:
        """Return a fallback window of a document without headings (``w0001``, as search gives it) as a node row.

        Its lines are those of its chunks (1-based inclusive); None when the live version has no
        such window.
        """
        with self._pool.borrow() as reader:
            registry = reader.index.registry
            ids = sorted(
                cid for cid in registry.chunk_ids(rec.doc_id)
                if (p := parse_chunk_id(cid)) is not None and p.node_id == node_id and p.version == rec.version
            )
            records = registry.chunk_records(ids) if ids else {}
        metas = [meta for _, meta in records.values() if meta.get("kind") == "window"]
        if not metas:
            return None
        lo = min(int(m["start_line"]) for m in metas)
        hi = max(int(m["end_line"]) for m in metas)
        return {"node_id": node_id, "title": str(metas[0].get("title") or rec.title), "kind": "window", "level": 0,
                "start_line": lo, "end_line": hi}

    def _snapshot(self, doc_id: str) -> Snapshot:
        """Read the live version of one document with a borrowed reader.

        The id may be written as the CLI takes it: in either Unicode normal form, or in its
        citation form (``employee-handbook.md``, :meth:`.Retriever.resolve_doc_ids`).
        """
        with self._pool.borrow() as reader:
            (resolved,), _unknown = reader.retriever.resolve_doc_ids([doc_id])  # unknown: NotFound below
            return self._snapshots.read(reader.index.registry, resolved)

    def _budget(self, max_tokens: int | None) -> int:
        if max_tokens is None:
            return self._limits.default_max_tokens
        return int_arg("max_tokens", max_tokens, 1, self._limits.max_tokens)


def _document_row(r: DocumentRecord) -> dict[str, Any]:
    """One document of a :meth:`ReadAPI.list_documents` page."""
    return {
        "doc_id": r.doc_id,
        "title": r.title,
        "source": r.source_path,
        "line_count": r.line_count,
        "sections": r.n_sections,
        "chunks": r.n_chunks,
        "indexed_at": _iso(r.indexed_at),
        "state": r.state,
    }


def _node_row(snap: Snapshot, n: dict[str, Any], depth: int) -> dict[str, Any]:
    """One node of :meth:`ReadAPI.get_structure`, at ``depth`` (1 at the top)."""
    return {
        "node_id": n["node_id"],
        "title": n["title"],
        "level": n["level"],
        "depth": depth,
        "start_line": n["start_line"],
        "end_line": n["end_line"],
        "page_start": snap.page_range(n["start_line"], n["end_line"])[0],
        "page_end": snap.page_range(n["start_line"], n["end_line"])[1],
        "parent_id": n["parent_id"],
        "kind": n["kind"],
        "citation": snap.citation(n["start_line"], n["end_line"]),
    }


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")

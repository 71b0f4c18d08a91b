"""Dense search: a query -> its vectors -> live chunk hits by cosine similarity.

A query is embedded in one window, or in several when it is longer than the model reads
(:meth:`DenseSearch.query_vectors`); chunks are searched through Chroma's HNSW index, or
exactly (their stored vectors scored in numpy) for a small ``doc_id`` filter
(:meth:`DenseSearch.search`); stored vectors are read back to score chunks that another
ranking found (:meth:`DenseSearch.cosines`). Scores are cosine similarities, higher is better
(Chroma returns cosine *distance*), each chunk's best over the query's windows. Tokens are
word pieces of the embedding model's tokenizer without special tokens.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EmbeddingError, StaleSourceError, StoreError
from ..store.chroma import Hit
from ..store.filters import filter_doc_ids
from .hits import LiveHits, id_hit

if TYPE_CHECKING:
    from ..store.folder import StoreView

__all__ = ["EXACT_SEARCH_ALL_MAX_CHUNKS", "EXACT_SEARCH_MAX_CHUNKS", "MAX_QUERY_WINDOWS", "DenseSearch"]

logger = logging.getLogger(__name__)

#: Largest number of live chunks that a plain ``doc_id`` filter searches exactly (their vectors
#: read by id and scored in numpy) rather than through Chroma's filtered HNSW search. Reading
#: vectors back costs about 0.1 ms per chunk here, Chroma's filtered search ~100 ms at 100k
#: chunks whatever the filter selects (docs/benchmarks.md).
EXACT_SEARCH_MAX_CHUNKS = 1000
#: Most chunks a whole store may hold for a search without a filter to be exact too (the
#: vectors read back and scored in numpy, about 0.1 ms per chunk) instead of Chroma's: a
#: process that queries once then never opens Chroma, whose import and client cost about 1 s
#: here (a cold ``proxypointer query`` on the store of ``data/``, 72 chunks; docs/benchmarks.md).
EXACT_SEARCH_ALL_MAX_CHUNKS = 256

#: Most windows a long query is embedded in (see :meth:`DenseSearch.query_vectors`); beyond
#: that, the last paragraphs are kept (a question pasted after a preamble ends the query).
MAX_QUERY_WINDOWS = 8


class DenseSearch:
    """Embed queries and search the live chunks by cosine similarity.

    Thread-safe: it keeps no cache of its own (the embedder caches repeated queries); the
    registry and Chroma are used as the store allows.

    Args:
        store: The store searched; its embedder embeds the queries (the registry, Chroma
            collection and embedder are looked up on each call).
        hits: Keeps the hits of live versions (also the check that a failed vector read
            raced a writer).
    """

    def __init__(self, store: StoreView, hits: LiveHits) -> None:
        self.store = store
        self.hits = hits

    # -- query vectors ----------------------------------------------------------------------
    def query_vectors(self, query: str) -> np.ndarray:
        """Embed a query; a query longer than the model reads is embedded in windows.

        The model reads at most ``max_seq_length`` tokens (256 for all-MiniLM-L6-v2, special
        tokens included) and silently drops the rest (shared case 36). A longer query is split
        at paragraph breaks (blank lines, else line ends): the last paragraph is one window, the
        ones before it are packed into as few windows as fit, and a paragraph longer than the
        model reads is cut at word-piece boundaries. Each window is embedded, and a chunk's
        similarity is its best over the windows, so a question typed after a pasted e-mail
        still finds its section. At most :data:`MAX_QUERY_WINDOWS` windows, the last ones (the
        question usually comes last). Logged at WARNING with both lengths.

        Args:
            query: The query text.

        Returns:
            float32 ``(n_windows, dim)``, rows L2-normalised; one row when the query fits.

        Raises:
            ConfigError: If the store was built with another embedder (checked first: no
                model loads and no endpoint is asked for a vector that would be refused).
            EmbeddingError: If the embedder gives vectors of another dimension than the store
                holds under its name (an endpoint whose model was swapped behind one name).
        """
        self.store.check_model(record=False)
        embedder = self.store.embedder
        windows = self.windows(query)
        if not hasattr(embedder, "encode_query"):
            got = np.asarray(embedder.encode(windows), dtype=np.float32)
        else:  # encode_query adds the configured query prefix and caches repeated queries.
            got = np.stack([np.asarray(embedder.encode_query(w), dtype=np.float32) for w in windows])
        held = self.store.registry.embeddings.vector_bytes(embedder.name)
        if held is not None and got.shape[-1] * 4 != held:
            raise EmbeddingError(
                f"{self.store.registry.root}: {embedder.name!r} gave a query vector of {got.shape[-1]} dimensions, "
                f"the store holds {held // 4} of the same name; was the model behind it changed? Query with the "
                "model the store was built with, or ingest into a new store"
            )
        return got

    def windows(self, query: str) -> list[str]:
        """Cut a query into the windows :meth:`query_vectors` embeds (the query alone when it fits).

        Args:
            query: The query text.

        Returns:
            Windows of at most ``max_seq_length`` less the special tokens word pieces each, in
            query order, at most :data:`MAX_QUERY_WINDOWS` (the last ones).
        """
        tok = self.store.embedder.tokenizer
        max_len = getattr(tok, "max_seq_length", None)
        if not max_len:
            return [query]
        limit = max_len - int(getattr(tok, "n_special", 0))
        n_tokens = tok.count(query)
        if n_tokens <= limit:
            return [query]
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", query) if p.strip()]
        if len(paragraphs) == 1:
            paragraphs = [p.strip() for p in query.splitlines() if p.strip()]
        # The last paragraph (the question, typically) alone; the ones before it packed into as
        # few windows as fit.
        windows: list[str] = []
        for p in paragraphs[:-1]:
            joined = f"{windows[-1]}\n\n{p}" if windows else ""
            if joined and tok.count(joined) <= limit:
                windows[-1] = joined
            else:
                windows.extend(_split_to_tokens(p, limit, tok))
        windows.extend(_split_to_tokens(paragraphs[-1], limit, tok))
        windows = windows[-MAX_QUERY_WINDOWS:]
        logger.warning(
            "query has %d word pieces, more than the %d the model reads (max_seq_length %d less "
            "special tokens): embedded in %d windows, each chunk scored by its best window",
            n_tokens,
            limit,
            max_len,
            len(windows),
        )
        return windows

    # -- search -----------------------------------------------------------------------------
    def search(
        self, query: str, n: int, where: dict[str, Any] | None = None, vectors: np.ndarray | None = None
    ) -> list[Hit]:
        """Live chunk hits by cosine similarity, best first (no deduplication), without text.

        Args:
            query: Question or keywords (embedded unless ``vectors`` is given).
            n: Chunks fetched per query vector before the live-version check (so up to ``n``
                come back).
            where: Metadata filter (checked by :func:`~proxypointer.store.filters.check_where`). A
                plain ``doc_id`` filter over at most :data:`EXACT_SEARCH_MAX_CHUNKS` live chunks
                is searched exactly, by scoring those chunks' stored vectors, instead of by
                Chroma's filtered HNSW search (111 vs ~6 ms for one paper at 100k chunks,
                docs/benchmarks.md).
            vectors: Query vectors from :meth:`query_vectors`, float32 ``(n_windows, dim)``.

        Returns:
            Hits with cosine similarity scores (best over the query's windows), best first;
            ``text`` is ``""`` and ``metadata`` holds only ``doc_id``, ``version``,
            ``node_id`` and ``chunk_index`` (:func:`~proxypointer.retrieve.hits.id_hit`).

        Raises:
            StoreError: If Chroma fails.
            ConfigError: If the store was built with another embedding model (or the same
                model with ``quantize_int8`` set differently).
        """
        self.store.check_model(record=False)  # vectors of another model would rank nonsense
        vecs = self.query_vectors(query) if vectors is None else vectors
        pairs = self.exact_search(vecs, n, where)
        if pairs is None:
            best: dict[str, float] = {}
            for v in vecs:
                for cid, score in self.store.store.query_ids(v, n, where):
                    if score > best.get(cid, -np.inf):
                        best[cid] = score
            pairs = sorted(best.items(), key=lambda p: -p[1])[:n] if len(vecs) > 1 else list(best.items())
        return self.hits.live([id_hit(cid, score) for cid, score in pairs])

    def exact_search(
        self, vectors: np.ndarray, n: int, where: dict[str, Any] | None
    ) -> list[tuple[str, float]] | None:
        """Exact top-``n`` over the chunks of a plain doc_id filter or a small store; ``None`` when not applicable.

        Args:
            vectors: Query vectors, float32 ``(n_windows, dim)``.
            n: Chunks wanted.
            where: The filter; a plain ``doc_id`` filter over at most
                :data:`EXACT_SEARCH_MAX_CHUNKS` live chunks, or no filter in a store of at most
                :data:`EXACT_SEARCH_ALL_MAX_CHUNKS` chunks, applies when their vectors can be
                read now.

        Returns:
            ``(chunk_id, cosine)`` pairs, best first (ties in the registry's chunk order), or
            None.
        """
        doc_ids = filter_doc_ids(where)
        if doc_ids is None and where is not None:
            return None
        if doc_ids is None:
            ids = self.store.registry.chunks.all_chunk_ids(EXACT_SEARCH_ALL_MAX_CHUNKS)
        else:
            ids = self.store.registry.live_chunk_ids(doc_ids, EXACT_SEARCH_MAX_CHUNKS)
        if ids is None:
            return None
        got = self.vectors(ids, vectors.shape[-1])
        if got is None:  # not readable now: Chroma's own filtered search instead
            return None
        found, stored = got
        if not found:
            return []
        scores = (stored @ np.asarray(vectors, dtype=np.float32).T).max(axis=1)
        order = np.argsort(-scores, kind="stable")[:n]
        return [(found[i], float(scores[i])) for i in order]

    # -- stored vectors ---------------------------------------------------------------------
    def cosines(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> dict[str, float]:
        """Cosine similarity of stored chunk vectors to the query (best over its windows).

        Used for chunks a lexical search found that no dense search returned. Ids missing from
        Chroma are left out, and all of them when Chroma cannot read them now (:meth:`vectors`).

        Raises:
            StaleSourceError: If some were deleted by a writer during the query.
        """
        if not chunk_ids:
            return {}
        found, stored = self.vectors(list(chunk_ids), np.asarray(vectors).shape[-1]) or ([], None)
        if not found:
            return {}
        scores = (stored @ np.asarray(vectors, dtype=np.float32).T).max(axis=1)
        return {cid: float(s) for cid, s in zip(found, scores, strict=True)}

    def vectors(self, chunk_ids: list[str], dim: int) -> tuple[list[str], np.ndarray] | None:
        """Read stored vectors by id, or None; the ids found keep their order in ``chunk_ids``.

        The order is the tie-break of an exact search (equal cosines rank in request order,
        whichever store a vector came from). First from the registry's embedding cache
        (:meth:`~proxypointer.store.embedcache.EmbeddingCache.chunk_vectors`: the vectors ingest wrote, read
        from SQLite), the rest from Chroma (:meth:`~proxypointer.store.chroma.ChromaStore.vectors`).
        Chroma fails a whole read by id when another process writes meanwhile: a replaced
        version's chunks deleted, or new chunks that the metadata knows and this process's
        loaded vector index does not yet ("Error finding id"). The first is a document changed
        during the query; for the second the read is given up (None) and the caller ranks
        without it: these reads only refine a ranking the dense search already made.

        Args:
            chunk_ids: Chunk ids, in the order wanted.
            dim: Vector dimension.

        Returns:
            ``(ids found, float32 (n_found, dim))``, or None when Chroma cannot read them now
            and the embedding cache has none of them.

        Raises:
            StaleSourceError: If the read failed and some ids are of a version no longer live
                (:meth:`~proxypointer.retrieve.retriever.Retriever.retrieve` then searches again).
        """
        registry = self.store.registry
        cached, vectors = registry.embeddings.chunk_vectors(self.store.embedder.name, chunk_ids, dim)
        have = set(cached)
        rest = [c for c in chunk_ids if c not in have]
        if not rest:
            return _in_order(chunk_ids, cached, vectors)
        try:
            found, more = self.store.store.vectors(rest)
        except StoreError as err:
            if len(self.hits.live(id_hit(cid, 0.0) for cid in rest)) < len(rest):
                raise StaleSourceError("a chunk's vector was deleted by a writer during the query") from err
            logger.info("reading %d chunk vectors failed (%s); ranking without them", len(rest), err)
            return _in_order(chunk_ids, cached, vectors) if cached else None
        if not found:
            found, more = cached, vectors
        elif cached:
            found, more = cached + found, np.concatenate([vectors, more])
        return _in_order(chunk_ids, found, more)


def _split_to_tokens(text: str, limit: int, tokenizer: Any) -> list[str]:
    """Cut ``text`` into consecutive pieces of at most ``limit`` word pieces (at word-piece boundaries)."""
    backend = getattr(tokenizer, "backend", None)
    if backend is None:
        words, out, cur = text.split(), [], []
        for w in words:
            if cur and tokenizer.count(" ".join([*cur, w])) > limit:
                out.append(" ".join(cur))
                cur = []
            cur.append(w)
        return [*out, " ".join(cur)] if cur else out
    offsets = backend.encode(text, add_special_tokens=False).offsets
    out = []
    for i in range(0, len(offsets), limit):
        part = offsets[i : i + limit]
        out.append(text[part[0][0] : part[-1][1]])
    return out


def _in_order(wanted: Sequence[str], found: list[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``(found, vectors)`` reordered to follow ``wanted`` (every found id is in ``wanted``)."""
    rank = {cid: i for i, cid in reversed(list(enumerate(wanted)))}
    order = sorted(range(len(found)), key=lambda i: rank[found[i]])
    return [found[i] for i in order], vectors[order]

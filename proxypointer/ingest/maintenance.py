"""Maintenance of a store: repair, delete, prune, status, check, record copies, cache pruning.

Every function takes the parts it works on (the :class:`~proxypointer.store.registry.Registry` and
the :class:`~proxypointer.store.chroma.ChromaStore`) and is called by :class:`~proxypointer.Index`
under the store's write lock (``status`` excepted), so no writer is between steps. The
invariants they keep are those of docs/lifecycle.md: a chunk is live only when the registry
lists it at its document's live version; every interrupted write leaves a document at its old
or its new version, with a state saying what is left to settle.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..docids import check_text
from ..embed.tokenizer import line_token_counts
from ..errors import DocumentError, StaleSourceError
from ..lines import document_hash, split_lines
from ..read.readers import Reader, read_bytes
from ..store.chroma import ChromaStore
from ..store.records import encode_record
from ..store.registry import DocumentRecord, Registry

__all__ = [
    "CheckReport",
    "check",
    "delete_documents",
    "fill_line_tokens",
    "fill_records",
    "prune_embedding_cache",
    "prune_missing",
    "repair_all",
    "repair_one",
    "stale_sources",
    "unusable_line_tokens",
]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class CheckReport:
    """Differences between the registry, the stored sources and Chroma.

    Attributes:
        documents: Documents in the registry.
        chunks: Live chunk ids in the registry.
        problems: One line per difference (empty when consistent).
        repaired: One line per repair made (``repair=True``).

    """

    documents: int = 0
    chunks: int = 0
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is inconsistent."""
        return not self.problems


def fill_records(registry: Registry, store: ChromaStore) -> int:
    """Copy Chroma records into the registry for live chunks that have no copy yet.

    Stores written before the registry kept record copies (docs/lifecycle.md) get them on
    their next ingest or ``check --repair`` (both call this); retrieval reads Chroma for
    chunks without a copy until then. Costs one registry query when nothing is missing
    (Chroma is not opened). Rows of such stores also get their embedding-cache key
    (:meth:`~proxypointer.store.livechunks.LiveChunks.fill_content_hashes`), so queries read their
    vectors from SQLite instead of Chroma.

    Returns:
        Number of chunks given a copy.

    Raises:
        StoreError: If Chroma cannot be read.
    """
    filled, absent, after = 0, 0, ""
    while True:
        ids = registry.chunks.chunks_without_record(500, after)
        if not ids:
            break
        after = ids[-1]
        got = {h.chunk_id: encode_record(h.text, h.metadata) for h in store.get(ids)}
        filled += registry.chunks.set_chunk_records(got) if got else 0
        absent += len(ids) - len(got)
    if absent:  # registered but missing from Chroma: `check --repair` settles these
        logger.warning("%d live chunks are missing from Chroma; run `proxypointer check --repair`", absent)
    if filled:
        logger.info("copied %d chunk records from Chroma into the registry", filled)
    hashed = registry.chunks.fill_content_hashes()
    if hashed:
        logger.info("gave %d chunks of an older store their embedding-cache key (vectors read from SQLite)", hashed)
    return filled


def fill_line_tokens(registry: Registry, tokenizer: Any, verify: bool = False) -> int:
    """Store word pieces per line beside live texts that have none (stores written before they were kept).

    Ingest counts them for every document it indexes; documents of an older store that did
    not change get them here, once (a stat per live document when nothing is missing), so
    that no query tokenises a whole document (docs/benchmarks.md, "Latency round").

    Args:
        registry: The registry.
        tokenizer: The embedding model's tokenizer; one without a ``name`` stores nothing.
        verify: Also count the lines of texts that have them and rewrite counts that differ
            (damaged, another tokenizer): ``check --repair``; tokenises every live text.

    Returns:
        Number of texts given their counts.

    Raises:
        OSError: If a file cannot be written (a read-only store).
    """
    name = getattr(tokenizer, "name", None)
    if not isinstance(name, str):
        return 0
    filled = 0
    for doc_hash in registry.sources.live_doc_hashes():
        stored = registry.sources.tokens_file(doc_hash).exists()
        if (stored and not verify) or not registry.sources.has(doc_hash):
            continue
        counts = line_token_counts(split_lines(registry.sources.load(doc_hash)), tokenizer)
        if stored and registry.sources.load_line_tokens(doc_hash, name) == counts:
            continue
        registry.sources.save_line_tokens(doc_hash, name, counts)
        filled += 1
    if filled:
        logger.info("stored the word pieces per line of %d documents", filled)
    return filled


def unusable_line_tokens(registry: Registry, rec: DocumentRecord, tokenizer: str) -> bool:
    """Tell whether a live version's stored word pieces per line exist but cannot be used.

    Unusable: unreadable, counted by another tokenizer, not one non-negative integer per line
    (``rec.line_count``). A query then counts the lines itself (slower, same result).
    """
    if not registry.sources.tokens_file(rec.doc_hash).exists():
        return False  # an older store: the next ingest fills them in
    counts = registry.sources.load_line_tokens(rec.doc_hash, tokenizer)
    return counts is None or len(counts) != rec.line_count


def _vector_dim(registry: Registry, store: ChromaStore, model: str, live: set[str]) -> int:
    """Return the store's embedding dimension: as the cache recorded it, else one Chroma vector's; 0 if unknown."""
    size = registry.embeddings.vector_bytes(model)
    if size:
        return size // 4
    for cid in list(live)[:1]:
        _, vectors = store.vectors([cid])
        return int(vectors.shape[1]) if vectors.size else 0
    return 0


def repair_all(registry: Registry, store: ChromaStore) -> list[str]:
    """Finish or undo whatever an interrupted run left in flight.

    Returns:
        One line per document repaired.
    """
    done: list[str] = []
    for rec in registry.documents():
        line = repair_one(registry, store, rec)
        if line:
            logger.warning("repaired %s", line)
            done.append(line)
    return done


def repair_one(registry: Registry, store: ChromaStore, rec: DocumentRecord | None) -> str:
    """Settle one document left in ``writing``, ``cleanup`` or ``deleting``.

    Chunks of any version but the live one are deleted; a document with no live version is
    forgotten; one whose rewrite of the *same* content was interrupted is marked ``stale`` so
    the next ingest completes it.

    Returns:
        What was done ('' if nothing).
    """
    if rec is None or rec.state in ("ready", "stale"):
        return ""
    live = registry.chunk_ids(rec.doc_id) if rec.version else set()
    stray = [i for i in store.ids_where({"doc_id": rec.doc_id}) if i not in live]
    if stray:
        store.delete_ids(stray)
    if rec.state == "deleting" or not rec.version:
        registry.remove(rec.doc_id)
        what = "deletion" if rec.state == "deleting" else "first version"
        return f"{rec.doc_id}: removed unfinished {what} ({len(stray)} chunks)"
    registry.finish(rec.doc_id)
    if rec.state == "writing" and rec.pending_hash == rec.doc_hash:
        registry.mark_stale(rec.doc_id)  # a rewrite of the live version (check --repair)
    return f"{rec.doc_id}: kept live version {rec.version}, removed {len(stray)} stray chunks"


def _delete_one(registry: Registry, store: ChromaStore, doc_id: str) -> None:
    """Hide (registry), delete chunks (Chroma), forget (registry); repair finishes a crash."""
    registered = registry.chunk_ids(doc_id)
    registry.begin_delete(doc_id)
    store.delete_ids(sorted(registered | set(store.ids_where({"doc_id": doc_id}))))
    registry.remove(doc_id)


def delete_documents(registry: Registry, store: ChromaStore, doc_ids: Iterable[str]) -> list[str]:
    """Remove documents, their chunks and their stored sources.

    Args:
        registry: The registry.
        store: The collection.
        doc_ids: Ids as shown by ``status`` (compared in Unicode NFC, see
            :mod:`proxypointer.docids`); unknown ids are skipped with a warning.

    Returns:
        The ids that were removed (as stored), in the order given.

    Raises:
        ConfigError: If an id holds a lone surrogate (not text).
    """
    removed = []
    for given in dict.fromkeys(doc_ids):
        doc_id = registry.stored_id(check_text(given, "doc_id")) or given
        if registry.get(doc_id) is None:
            logger.warning("%s: no such document in %s (`proxypointer status --docs` lists them)", doc_id,
                           registry.root)
            continue
        _delete_one(registry, store, doc_id)
        removed.append(doc_id)
    registry.sources.prune()
    return removed


def prune_missing(registry: Registry, store: ChromaStore, roots: Iterable[str | Path], present: set[str]) -> int:
    """Delete documents whose files are gone from the given folders (``ingest --prune``).

    Args:
        registry: The registry.
        store: The collection.
        roots: Folders that were synced; documents read from elsewhere are left alone.
        present: Doc ids found in this run (never deleted).

    Returns:
        Number of documents deleted.
    """
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    n = 0
    for rec in registry.documents():
        src = Path(rec.source_path)
        if rec.doc_id in present or src.exists():
            continue
        if any(src.is_relative_to(r) for r in real_roots):
            _delete_one(registry, store, rec.doc_id)
            n += 1
    return n


def prune_embedding_cache(registry: Registry, store: ChromaStore, model: str) -> int:
    """Drop embedding-cache entries that no live chunk uses (other models' included).

    The content hash of each live chunk comes from its registry record copy, or from Chroma
    for chunks without a usable copy.

    Returns:
        Number of cache entries removed.

    Raises:
        StoreError: If Chroma cannot be read.
    """
    keep, without = registry.embeddings.live_content_hashes()
    for i in range(0, len(without), 500):
        for hit in store.get(without[i : i + 500]):
            h = hit.metadata.get("content_hash")
            if isinstance(h, str):
                keep.add(h)
    removed = registry.embeddings.prune(model, keep)
    if removed:
        logger.info("removed %d embedding-cache entries no live chunk uses", removed)
    return removed


def stale_sources(
    registry: Registry, readers: Mapping[str, Reader], version_of_key: Any
) -> list[dict[str, str]]:
    """Documents whose files are missing or changed on disk since they were indexed.

    A file whose size and mtime match the registry is taken as unchanged (a stat); otherwise
    its source key is computed by its reader: equal to the stored ``doc_hash`` (markdown) or
    giving the live version with today's settings (a converted format) means unchanged.

    Args:
        registry: The registry.
        readers: The suffix table.
        version_of_key: ``source_key -> version`` with the current pipeline settings.

    Returns:
        ``{"doc_id", "source", "reason"}`` per document, reason ``missing`` or ``changed``.
    """
    stale: list[dict[str, str]] = []
    for rec in registry.documents():
        src = Path(rec.source_path)
        if not src.exists():
            stale.append({"doc_id": rec.doc_id, "source": rec.source_path, "reason": "missing"})
            continue
        st = src.stat()
        if st.st_size == rec.source_size and st.st_mtime == rec.source_mtime:
            continue
        reader = readers.get(src.suffix.lower()) or readers[".md"]
        try:
            key = reader.source_key(read_bytes(src), str(src))
            changed = key != rec.doc_hash and version_of_key(key) != rec.version
        except DocumentError:
            changed = True
        if changed:
            stale.append({"doc_id": rec.doc_id, "source": rec.source_path, "reason": "changed"})
    return stale


def _differing_copies(registry: Registry, store: ChromaStore, meta: dict[str, dict[str, Any]]) -> list[str]:
    """Live chunks whose registry copy is unreadable or differs from Chroma in text or metadata.

    Reads Chroma's texts page by page (never all at once) and the copies of each page.
    """
    differ: list[str] = []
    for ids, texts in store.text_pages():
        copies = registry.chunks.chunk_record_copies(ids)
        for cid, text in zip(ids, texts, strict=True):
            if cid in copies and copies[cid] != (text, meta.get(cid)):
                differ.append(cid)  # also an unusable copy (None)
    return sorted(differ)


def _check_document(registry: Registry, rec: DocumentRecord, meta: dict[str, dict[str, Any]], rep: CheckReport) -> bool:
    """Append the problems of one live document to ``rep``; True if its parts are missing or wrong."""
    broken = False
    lines = 0
    try:
        text = registry.sources.load(rec.doc_hash)
    except StaleSourceError:
        rep.problems.append(f"{rec.doc_id}: stored source {rec.doc_hash[:12]} is missing; re-ingest it")
        broken = True
    else:
        lines = len(split_lines(text))
        pages = registry.sources.load_pages(rec.doc_hash)
        if document_hash(text) != rec.doc_hash:
            rep.problems.append(f"{rec.doc_id}: stored source {rec.doc_hash[:12]} does not match its hash")
            broken = True
        elif lines != rec.line_count:
            rep.problems.append(f"{rec.doc_id}: stored source has {lines} lines, registry says {rec.line_count}")
        elif pages is not None and len(pages) != lines:
            rep.problems.append(f"{rec.doc_id}: stored page map has {len(pages)} lines, the text {lines}")
            broken = True
    ids = registry.chunk_ids(rec.doc_id)
    if len(ids) != rec.n_chunks:
        rep.problems.append(f"{rec.doc_id}: {len(ids)} chunks registered, record says {rec.n_chunks}")
    absent = sorted(i for i in ids if i not in meta)
    if absent:
        rep.problems.append(f"{rec.doc_id}: {len(absent)} registered chunks missing from Chroma (e.g. {absent[0]})")
        broken = True
    for cid in sorted(ids - set(absent)):
        m = meta[cid]
        if m.get("doc_id") != rec.doc_id or m.get("version") != rec.version or m.get("doc_hash") != rec.doc_hash:
            rep.problems.append(
                f"{rec.doc_id}: chunk {cid} has version {m.get('version')!r}, registry says {rec.version!r}"
            )
            return True
        start, end = m.get("start_line"), m.get("end_line")
        if lines and not (isinstance(start, int) and isinstance(end, int) and 1 <= start <= end <= lines):
            rep.problems.append(f"{rec.doc_id}: chunk {cid} points at lines {start}-{end} of {lines}")
            return True
    return broken


def check(
    registry: Registry, store: ChromaStore, model: str, repair: bool = False, tokenizer: Any = None
) -> CheckReport:
    """Verify registry, stored sources and Chroma against each other (see ``Index.check``).

    Args:
        registry: The registry.
        store: The Chroma collection.
        model: The store's embedding model (damaged cached vectors of it are dropped).
        repair: Also fix what can be fixed (see ``Index.check``). Cached embeddings no live
            chunk uses are kept (an interrupted run's finished work; ``ingest --prune`` drops
            them).
        tokenizer: The model's tokenizer: stored word pieces per line are checked (and, with
            ``repair``, rewritten where they differ); None: not checked.

    Returns:
        A report listing every difference found (before repairs) and each repair made.

    Raises:
        StoreError: If Chroma cannot be read.
    """
    rep = CheckReport()
    docs = registry.documents()
    rep.documents = len(docs)
    live = registry.chunk_ids()
    rep.chunks = len(live)
    meta = store.all_metadata()
    to_mark: list[str] = []
    for rec in docs:
        if rec.state != "ready":
            what = "needs re-ingest" if rec.state == "stale" else "interrupted run"
            rep.problems.append(f"{rec.doc_id}: state {rec.state} ({what})")
        if rec.version and _check_document(registry, rec, meta, rep):
            to_mark.append(rec.doc_id)
    stray = sorted(set(meta) - live)
    if stray:
        rep.problems.append(f"{len(stray)} chunks in Chroma are not registered (e.g. {stray[0]})")
    name = getattr(tokenizer, "name", None)
    if isinstance(name, str):
        bad = [r.doc_id for r in docs if r.version and unusable_line_tokens(registry, r, name)]
        if bad:
            rep.problems.append(f"{len(bad)} documents' stored word pieces per line cannot be used (e.g. {bad[0]});"
                                " queries count them instead")
    dim = _vector_dim(registry, store, model, live)
    damaged = registry.embeddings.damaged(model, dim) if dim else []
    if damaged:
        rep.problems.append(f"{len(damaged)} cached embeddings are damaged (e.g. {damaged[0][:12]}); queries read"
                            " Chroma for those chunks")
    differ = _differing_copies(registry, store, meta)
    if differ:
        rep.problems.append(
            f"{len(differ)} chunks' registry copies differ from their Chroma records or cannot be read"
            f" (e.g. {differ[0]})"
        )
    if repair:
        if differ:
            registry.chunks.set_chunk_records(dict.fromkeys(differ))  # re-read from Chroma below
        filled = fill_records(registry, store)
        if filled:
            rep.repaired.append(f"copied {filled} chunk records from Chroma into the registry")
        rep.repaired.extend(repair_all(registry, store))
        left = sorted(set(store.all_ids()) - registry.chunk_ids())
        if left:
            store.delete_ids(left)
            rep.repaired.append(f"deleted {len(left)} unregistered chunks")
        for doc_id in to_mark:
            registry.mark_stale(doc_id)
            rep.repaired.append(f"{doc_id}: marked stale; the next ingest of its file rewrites it")
        removed = registry.sources.prune()
        if removed:
            rep.repaired.append(f"removed {removed} unreferenced stored sources")
        # The embedding cache keeps the vectors no live chunk uses: after an interrupted run
        # they are the finished work its next ingest reuses (`ingest --prune` drops them).
        if damaged:
            registry.embeddings.drop(model, damaged)
            rep.repaired.append(f"removed {len(damaged)} damaged cached embeddings")
        if tokenizer is not None:
            counted = fill_line_tokens(registry, tokenizer, verify=True)
            if counted:
                rep.repaired.append(f"stored the word pieces per line of {counted} documents")
    for line in rep.problems:
        logger.info("check: %s", line)
    return rep

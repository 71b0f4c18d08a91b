"""Ranking and context assembly: fusion, section scores, BM25, packing under a token budget.

Pure functions over chunk hits (``store.Hit``) and per-line token counts; ``retrieval`` wires
them to an index. Lines are 1-based inclusive; tokens are word pieces of the embedding model's
tokenizer without special tokens; a context budget is a number of such tokens.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .errors import MissingDependencyError
from .store import Hit

__all__ = [
    "LexicalIndex",
    "Window",
    "cut_to_tokens",
    "fuse_rrf",
    "matches_where",
    "pack_windows",
    "rank_sections",
    "subtract_interval",
]

logger = logging.getLogger(__name__)

_WORD = re.compile(r"(?u)\b\w\w+\b")


def _key(hit: Hit) -> tuple[str, str]:
    return hit.metadata["doc_id"], hit.metadata["node_id"]


def fuse_rrf(rankings: Sequence[Sequence[Hit]], weights: Sequence[float], rrf_k: int = 60) -> list[Hit]:
    """Reciprocal rank fusion of several chunk rankings (Cormack et al. 2009).

    Args:
        rankings: Hit lists, each best first; the same chunk is matched by ``chunk_id``.
        weights: One weight per ranking.
        rrf_k: The constant ``k`` of ``weight / (k + rank)``, rank 1-based.

    Returns:
        Every chunk once, ordered by fused score (higher is better; ties keep the order of
        first appearance); ``Hit.score`` is the fused score.
    """
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits, w in zip(rankings, weights, strict=True):
        for rank, h in enumerate(hits, 1):
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + w / (rrf_k + rank)
            first.setdefault(h.chunk_id, h)
    order = sorted(first, key=lambda cid: -scores[cid])
    return [replace(first[cid], score=scores[cid]) for cid in order]


def rank_sections(hits: Sequence[Hit], method: str = "max", top_n: int = 3, rrf_k: int = 60) -> list[list[Hit]]:
    """Group chunk hits by section (doc_id, node_id) and order the sections.

    Args:
        hits: Chunk hits, best first (``score``: higher is better).
        method: ``max`` (score of the best chunk), ``sum`` (sum of the ``top_n`` best chunk
            scores) or ``rrf`` (sum of ``1 / (rrf_k + rank)`` over the section's chunks).
        top_n: Chunks counted by ``sum``.
        rrf_k: Constant of ``rrf``.

    Returns:
        One list per section, its hits best first; sections best first (ties keep the rank
        of their best chunk).
    """
    groups: dict[tuple[str, str], list[Hit]] = {}
    score: dict[tuple[str, str], float] = {}
    for rank, h in enumerate(hits, 1):
        key = _key(h)
        group = groups.setdefault(key, [])
        group.append(h)
        if method == "max":
            score.setdefault(key, h.score)
        elif method == "sum":
            if len(group) <= top_n:
                score[key] = score.get(key, 0.0) + h.score
        else:
            score[key] = score.get(key, 0.0) + 1.0 / (rrf_k + rank)
    order = sorted(groups, key=lambda k: -score[k])  # stable: first-appearance order on ties
    return [groups[k] for k in order]


def matches_where(metadata: dict[str, Any], where: dict[str, Any] | None) -> bool:
    """Evaluate a Chroma-style metadata filter (``$and``, ``$or``, ``$eq``, ``$ne``, ``$in``, ``$nin``).

    Used for lexical hits, which do not pass through Chroma's own filter.
    """
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            if not all(matches_where(metadata, c) for c in cond):
                return False
        elif key == "$or":
            if not any(matches_where(metadata, c) for c in cond):
                return False
        elif isinstance(cond, dict):
            value = metadata.get(key)
            for op, arg in cond.items():
                ok = {
                    "$eq": lambda v, a: v == a, "$ne": lambda v, a: v != a,
                    "$in": lambda v, a: v in a, "$nin": lambda v, a: v not in a,
                }.get(op)
                if ok is None or not ok(value, arg):
                    return False
        elif metadata.get(key) != cond:
            return False
    return True


class LexicalIndex:
    """BM25 (bm25s, Lucene variant) over chunk texts, lower-cased, English stop words removed.

    Args:
        hits: The chunks to index (text and metadata as stored; score ignored).
        text_of: What is indexed for a hit; default its text.
    """

    def __init__(self, hits: Sequence[Hit], text_of: Callable[[Hit], str] | None = None) -> None:
        try:
            import bm25s
        except ImportError as err:
            raise MissingDependencyError("hybrid retrieval needs bm25s; pip install bm25s") from err
        # bm25s sets its own logger to DEBUG at import (STYLE.md); give the level back to the app.
        logging.getLogger("bm25s").setLevel(logging.NOTSET)
        self.hits = list(hits)
        self._bm25 = bm25s.BM25()
        self._stop = set(bm25s.stopwords.STOPWORDS_EN)
        corpus = [self.tokenize(text_of(h) if text_of else h.text) or ["__empty__"] for h in self.hits]
        if corpus:
            self._bm25.index(corpus, show_progress=False)

    def tokenize(self, text: str) -> list[str]:
        """Lower-cased words of two or more characters, stop words removed."""
        return [w for w in _WORD.findall(text.lower()) if w not in self._stop]

    def search(self, query: str, n: int, keep: Callable[[Hit], bool] | None = None) -> list[Hit]:
        """Return the ``n`` best chunks with a positive BM25 score, best first (``score``: BM25)."""
        if not self.hits:
            return []
        words = [w for w in self.tokenize(query) if w in self._bm25.vocab_dict]
        if not words:
            return []
        scores = np.asarray(self._bm25.get_scores(words), dtype=np.float64)
        out: list[Hit] = []
        for i in np.argsort(-scores, kind="stable"):
            if scores[i] <= 0 or len(out) >= n:
                break
            h = self.hits[int(i)]
            if keep is None or keep(h):
                out.append(replace(h, score=float(scores[i])))
        return out


def cut_to_tokens(text: str, n_tokens: int, tokenizer: Any) -> str:
    """Cut ``text`` to its longest prefix of at most ``n_tokens`` word pieces.

    Args:
        text: Text to cut.
        n_tokens: Word pieces allowed (no special tokens).
        tokenizer: ``HFTokenizer`` (exact cut at a word-piece boundary via offsets) or any
            object with ``count(text) -> int`` (binary search on character prefixes).

    Returns:
        ``text`` itself when it fits, else a prefix ending at a word-piece boundary.
    """
    if n_tokens <= 0:
        return ""
    backend = getattr(tokenizer, "backend", None)
    if backend is not None:
        offsets = backend.encode(text, add_special_tokens=False).offsets
        return text if len(offsets) <= n_tokens else text[: offsets[n_tokens - 1][1]]
    if tokenizer.count(text) <= n_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tokenizer.count(text[:mid]) <= n_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def subtract_interval(start: int, end: int, taken: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of the line range ``start..end`` (inclusive) not covered by ``taken`` ranges."""
    parts: list[tuple[int, int]] = []
    cur = start
    for a, b in sorted(taken):
        if b < cur or a > end:
            continue
        if a > cur:
            parts.append((cur, a - 1))
        cur = max(cur, b + 1)
        if cur > end:
            break
    if cur <= end:
        parts.append((cur, end))
    return parts


@dataclass(slots=True)
class Window:
    """One contiguous range of lines chosen for delivery (mutable while packing).

    Attributes:
        hit: The chunk hit that selected it (its metadata is the section pointer).
        start_line: First delivered line, 1-based inclusive.
        end_line: Last delivered line, 1-based inclusive.
        tokens: Word pieces of the delivered lines.
        whole: True when the window is the whole section.
    """

    hit: Hit
    start_line: int
    end_line: int
    tokens: int
    whole: bool = False


class _Taken:
    """Delivered line ranges per document version."""

    def __init__(self) -> None:
        self.ranges: dict[str, list[tuple[int, int]]] = {}

    def add(self, doc: str, a: int, b: int) -> None:
        bisect.insort(self.ranges.setdefault(doc, []), (a, b))

    def free(self, doc: str, a: int, b: int) -> list[tuple[int, int]]:
        return subtract_interval(a, b, self.ranges.get(doc, []))

    def is_free(self, doc: str, line: int) -> bool:
        return self.free(doc, line, line) == [(line, line)]


def _order(groups: Sequence[Sequence[Hit]], order: str) -> Iterable[Hit]:
    if order == "chunks":
        return sorted((h for g in groups for h in g), key=lambda h: -h.score)
    out: list[Hit] = []
    depth = max((len(g) for g in groups), default=0)
    for i in range(depth):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def pack_windows(
    groups: Sequence[Sequence[Hit]],
    line_tokens: Callable[[str], list[int]],
    budget_tokens: int,
    *,
    whole_section_tokens: int = 300,
    order: str = "chunks",
    expand: bool = True,
) -> list[Window]:
    """Choose which lines to deliver for ranked sections within a token budget.

    For each hit (in chunk rank order, or round-robin over ranked sections): deliver the
    whole section if none of its lines was delivered yet, it has at most
    ``whole_section_tokens`` tokens and fits the budget left; else the hit chunk's lines
    (``chunk_start_line..chunk_end_line``). Lines already delivered are never delivered
    again (a parent after its child, overlapping chunks). When every hit is placed and
    budget is left, windows grow line by line inside their sections, round-robin in rank
    order, one line after and one before each window per round. The last window may exceed
    the budget: the caller cuts it.

    Args:
        groups: Output of :func:`rank_sections`: hits per section, sections best first.
        line_tokens: ``doc_hash -> tokens of each line`` (index 0 is line 1).
        budget_tokens: Context budget in word pieces.
        whole_section_tokens: Largest section delivered whole.
        order: ``chunks`` or ``sections`` (see above).
        expand: Grow windows into their sections while budget is left.

    Returns:
        Windows in delivery order; adjacent windows of one section are merged.
    """
    taken = _Taken()
    windows: list[Window] = []
    used = 0
    for hit in _order(groups, order):
        if used >= budget_tokens:
            break
        m = hit.metadata
        doc = m["doc_hash"]
        toks = line_tokens(doc)
        s_start, s_end = int(m["start_line"]), int(m["end_line"])
        section_tokens = sum(toks[s_start - 1 : s_end])
        whole = (
            taken.free(doc, s_start, s_end) == [(s_start, s_end)]
            and section_tokens <= min(whole_section_tokens, budget_tokens - used)
        )
        if whole:
            parts = [(s_start, s_end)]
        else:
            c_start = max(s_start, int(m.get("chunk_start_line", s_start)))
            c_end = min(s_end, int(m.get("chunk_end_line", s_end)))
            parts = taken.free(doc, c_start, c_end)
        for a, b in parts:
            n = sum(toks[a - 1 : b])
            taken.add(doc, a, b)
            windows.append(Window(hit, a, b, n, whole))
            used += n
    if expand:
        used = _expand(windows, taken, line_tokens, budget_tokens, used)
    return _merge(windows)


def _expand(windows: list[Window], taken: _Taken, line_tokens: Callable[[str], list[int]], budget: int,
            used: int) -> int:
    grew = True
    while used < budget and grew:
        grew = False
        for w in windows:
            if used >= budget or w.whole:
                continue
            m = w.hit.metadata
            doc, toks = m["doc_hash"], line_tokens(m["doc_hash"])
            s_start, s_end = int(m["start_line"]), int(m["end_line"])
            for after in (True, False):
                line = w.end_line + 1 if after else w.start_line - 1
                if used < budget and s_start <= line <= s_end and taken.is_free(doc, line):
                    taken.add(doc, line, line)
                    w.start_line, w.end_line = min(w.start_line, line), max(w.end_line, line)
                    w.tokens += toks[line - 1]
                    used += toks[line - 1]
                    grew = True
    return used


def _merge(windows: list[Window]) -> list[Window]:
    out: list[Window] = []
    for w in windows:
        for o in out:
            if _key(o.hit) == _key(w.hit) and o.hit.metadata["doc_hash"] == w.hit.metadata["doc_hash"] and (
                o.end_line + 1 == w.start_line or w.end_line + 1 == o.start_line
            ):
                o.start_line, o.end_line = min(o.start_line, w.start_line), max(o.end_line, w.end_line)
                o.tokens += w.tokens
                o.whole = o.whole or w.whole
                break
        else:
            out.append(w)
    return out

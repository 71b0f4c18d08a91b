"""Context assembly: ranked sections -> blocks of source lines that fit a context budget.

A :class:`ContextBlock` is what a reader (a person, an LLM prompt, the evaluation) is given: a
range of stored source lines, its word-piece count and the :class:`~proxypointer.retrieve.retriever.Section`
it belongs to (the pointer). :class:`Assembler` fills a budget two ways:

* :meth:`Assembler.assemble`: the best-matching *lines* of many sections (chunk hits in rank
  order, a small section whole, else the matched chunk's lines, windows grown while budget is
  left); docs/evaluation.md measures it as ``budget_hit``;
* :meth:`Assembler.pack`: given sections whole, in order, as far as they fit (``ask``).

Lines are 1-based inclusive; tokens are word pieces of the embedding model's tokenizer without
special tokens; a context budget is a number of such tokens.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, StaleSourceError
from ..lines import slice_lines
from ..store.chroma import Hit
from .delivery import OutlineEntry, cut_to_tokens, fit_window, format_outline
from .retriever import check_query, format_citation

if TYPE_CHECKING:
    from .retriever import Retriever, Section

__all__ = [
    "Assembler",
    "ContextBlock",
    "Window",
    "cut_to_tokens",
    "pack_windows",
    "subtract_interval",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ContextBlock:
    r"""Source lines delivered for a query, with the section they come from.

    Attributes:
        section: The section the lines belong to (its pointer, breadcrumb, scores).
        start_line: First delivered line, 1-based inclusive, inside the section.
        end_line: Last delivered line, 1-based inclusive (``text`` may stop inside it when the
            budget ran out).
        text: The stored lines ``start_line..end_line`` joined with ``\\n``, cut at a
            word-piece boundary when the budget ran out. Page-marker lines of a PDF or of
            markdown with page markers are empty lines (they were emptied when the document
            was read), so a marker is never delivered as content.
        tokens: Word pieces of ``text`` (embedding model's tokenizer, no special tokens).
        page_start: First PDF page of the delivered lines' content, 1-based; 0 when the
            document has no pages.
        page_end: Last PDF page of the delivered lines' content, 1-based inclusive; 0 without
            pages.
        outline: The section's children, when the block is the section's delivered text and
            that is not its whole subtree (:attr:`Section.outline`: where a reader can follow);
            empty for the windows of :meth:`Assembler.assemble`. Not part of ``text`` or
            ``tokens``.
    """

    section: Section
    start_line: int
    end_line: int
    text: str
    tokens: int
    page_start: int = 0
    page_end: int = 0
    outline: tuple[OutlineEntry, ...] = ()

    @property
    def doc_id(self) -> str:
        """The section's document id."""
        return self.section.doc_id

    @property
    def citation(self) -> str:
        """Citation of the delivered lines and their pages (``retrieval.format_citation``)."""
        s = self.section
        return format_citation(s.doc_id, s.source, self.start_line, self.end_line, self.page_start, self.page_end)

    @property
    def whole(self) -> bool:
        """True when the block is the whole section (its subtree), uncut."""
        return (self.start_line, self.end_line) == (self.section.start_line, self.section.end_line) and (
            self.text == self.section.text
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the delivered lines, the outline, and the section's fields except its text."""
        section = self.section.to_dict()
        section.pop("text")
        section.pop("outline")
        return {
            "citation": self.citation,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "tokens": self.tokens,
            "text": self.text,
            "outline": [e.to_dict() for e in self.outline],
            "section": section,
        }


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


def _key(hit: Hit) -> tuple[str, str]:
    return hit.metadata["doc_id"], hit.metadata["node_id"]


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
        groups: Output of :func:`~proxypointer.retrieve.ranking.rank_sections`: hydrated hits per
            section, sections best first.
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


class Assembler:
    """Fill a context budget from a :class:`~proxypointer.retrieve.retriever.Retriever`'s index.

    Thread-safe: it keeps no cache of its own (the retriever's caches of stored lines and of
    the word pieces of each line are bounded and locked).

    Args:
        retriever: Where sections come from (its index's tokenizer counts tokens).

    Example:
        >>> for b in Assembler(Retriever(index)).assemble("parental leave pay", 1000):  # doctest: +SKIP
        ...     print(b.citation, b.tokens)
    """

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.config = retriever.config

    @property
    def tokenizer(self) -> Any:
        """The embedding model's tokenizer (counts word pieces)."""
        return self.retriever.index.embedder.tokenizer

    def line_tokens(self, doc_hash: str) -> list[int]:
        """Word pieces of each stored line of a document version (index 0 is line 1)."""
        return self.retriever.line_tokens(doc_hash)

    def assemble(
        self,
        query: str,
        budget_tokens: int | None = None,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> list[ContextBlock]:
        """Fill a context budget with the best-matching lines, each block with its section.

        Chunk hits (dense, or hybrid) are ranked into sections (``retrieval.section_scoring``);
        then, in ``retrieval.assembly_order``, a section is delivered whole when it has at most
        ``retrieval.whole_section_tokens`` tokens and fits the budget left, otherwise the lines
        of the matched chunk; windows grow inside their sections while budget is left. No line
        is delivered twice (a parent after its child, overlapping chunks).

        Args:
            query: Question or keywords (not empty).
            budget_tokens: Context budget in word pieces of the embedding model's tokenizer (no
                special tokens); default ``retrieval.budget_tokens`` (2,000).
            where: Extra metadata filter (see :meth:`Retriever.scope`).
            doc_ids: Only search these documents (an empty list: none).
            source_prefix: Only search documents whose doc_id starts with this prefix.

        Returns:
            Blocks in delivery order; one section may give several blocks (disjoint line
            ranges). Their ``tokens`` sum to at most ``budget_tokens``: the last block is cut at
            a word-piece boundary.

        Raises:
            ConfigError: If ``budget_tokens`` < 1, the query is empty or a filter unsupported.
            StoreError: If the store folder holds no store.
            StaleSourceError: If a stored source is missing.
        """
        check_query(query)
        budget = self.config.budget_tokens if budget_tokens is None else budget_tokens
        if budget < 1:
            raise ConfigError(f"budget_tokens: expected an int >= 1, got {budget}")
        self.retriever.require_store()
        scope = self.retriever.scope(where, doc_ids, source_prefix)
        if scope.empty:
            return []
        try:
            return self._assemble(query, budget, scope.where)
        except StaleSourceError:
            logger.info("a document changed during the query; searching again")
            return self._assemble(query, budget, scope.where)

    def _assemble(self, query: str, budget: int, where: dict[str, Any] | None) -> list[ContextBlock]:
        cfg = self.config
        ranker = self.retriever.ranker
        route = ranker.route(query, where)
        # The retriever's ranked sections, ranked once: every hit's record read before scoring,
        # and with demote_empty every breadcrumb-only section after those with text.
        ranked = self.retriever.candidates.ranked(route, max(cfg.overfetch, budget // 20), hydrate=True)
        ranking, found = ranked.ranking, ranked.candidates
        rank_score = {_key(c.section): c.rank_score for c in found}
        groups = {_key(c.section): c.group for c in found}
        windows = pack_windows(
            [c.group for c in found],
            self.line_tokens,
            budget,
            whole_section_tokens=cfg.whole_section_tokens,
            order=cfg.assembly_order,
        )
        cosine = dict(ranking.cosine)
        missing = [w.hit.chunk_id for w in windows if w.hit.chunk_id not in cosine]
        if missing and ranking.vectors is not None:
            cosine.update(ranker.cosines(missing, ranking.vectors))
        tok = self.tokenizer
        out: list[ContextBlock] = []
        used = 0
        for w in windows:
            if used >= budget:
                break
            key = _key(w.hit)
            section = self.retriever.section_of_hit(w.hit, cosine.get(w.hit.chunk_id, 0.0), rank_score[key],
                                                    groups[key])
            text = slice_lines(self.retriever.source_lines(w.hit.metadata["doc_hash"]), w.start_line, w.end_line)
            n_tok = w.tokens
            if used + n_tok > budget:
                text = cut_to_tokens(text, budget - used, tok)
                n_tok = tok.count(text)
            used += n_tok
            end = w.start_line + text.count("\n")
            pages = self.retriever.source_pages(w.hit.metadata["doc_hash"])
            ps, pe = pages.pages(w.start_line, end) if pages is not None else (0, 0)
            out.append(ContextBlock(section, w.start_line, end, text, n_tok, ps, pe))
        return out

    def _pages_of(self, section: Section, start_line: int, end_line: int) -> tuple[int, int]:
        """Pages of lines of a given section: its own for its delivered lines, else the live page map's."""
        delivered = (section.text_start_line or section.start_line, section.text_end_line or section.end_line)
        if (start_line, end_line) == delivered or not section.page_start:
            return section.page_start, section.page_end
        rec = self.retriever.index.registry.get(section.doc_id)
        pages = self.retriever.source_pages(rec.doc_hash) if rec is not None and rec.doc_hash else None
        if pages is None or end_line > len(pages.line_pages):
            return section.page_start, section.page_end
        return pages.pages(start_line, end_line)

    def pack(self, sections: Sequence[Section], budget_tokens: int) -> list[ContextBlock]:
        """Deliver sections as retrieved (their ``text``), in the given order, as far as they fit a budget.

        Each block is a section's delivered text (``text_start_line..text_end_line``: the whole
        section, or its own text with its ``outline``, see :mod:`proxypointer.retrieve.delivery`). The
        outline lines count against the budget as :func:`~proxypointer.retrieve.delivery.format_outline`
        renders them. A section that does not fit the budget left is left out (logged) and
        later, smaller ones still get their turn; the first section is always delivered: when
        it alone exceeds the budget, as the whole lines around its best chunk that fit
        (:func:`~proxypointer.retrieve.delivery.fit_window`, without its outline), or when not even one
        of those lines fits, that line cut at a word-piece boundary.

        Args:
            sections: Sections best first (e.g. from :meth:`Retriever.retrieve`).
            budget_tokens: Context budget in word pieces (no special tokens).

        Returns:
            One block per delivered section; their ``tokens`` plus their outlines' word pieces
            sum to at most ``budget_tokens``.

        Raises:
            ConfigError: If ``budget_tokens`` < 1.
        """
        if budget_tokens < 1:
            raise ConfigError(f"budget_tokens: expected an int >= 1, got {budget_tokens}")
        tok = self.tokenizer
        out: list[ContextBlock] = []
        used = 0
        for s in sections:
            n = tok.count(s.text)
            extra = tok.count(format_outline(s.outline)) if s.outline else 0
            start, end = s.text_start_line or s.start_line, s.text_end_line or s.end_line
            if used + n + extra <= budget_tokens:
                out.append(ContextBlock(s, start, end, s.text, n, s.page_start, s.page_end, s.outline))
                used += n + extra
            elif not out:  # the lines around the best chunk, or the first of them cut to the budget
                lines = s.text.split("\n")
                seed = (s.chunk_start_line - start, s.chunk_end_line - start)
                a, b, n = fit_window(lines, seed, budget_tokens, tok)
                if b < a:
                    text = cut_to_tokens(lines[a], budget_tokens, tok)
                    b, n = a, tok.count(text)
                else:
                    text = "\n".join(lines[a : b + 1])
                start, end = start + a, start + b
                out.append(ContextBlock(s, start, end, text, n, *self._pages_of(s, start, end)))
                used += n
            else:
                logger.info("context budget %d tokens reached; left out %s (%d tokens)", budget_tokens, s.citation,
                            n + extra)
        return out

"""What ``retrieve`` delivers of a ranked section: its subtree when small, else its own text and an outline.

A heading's section is its whole subtree (the node and everything under it), which is right
for a leaf or a small section and wrong for a chapter: a hit on a chapter's introduction would
deliver the whole chapter (a 15,000-token chapter, a 27,500-token definitions article;
docs/evaluation.md, reports round). :func:`plan_delivery` applies the policy measured there:

* the subtree, when it has at most ``cap_tokens`` tokens (``retrieval.subtree_cap_tokens``);
* else the section's **own text** (its heading line and the text before its first subsection),
  when that has at most ``own_tokens`` tokens (``retrieval.own_text_tokens``);
* else an **excerpt** of the own text: one window of at most ``excerpt_tokens`` tokens
  (``retrieval.excerpt_tokens``; ``own_tokens`` when 0), seeded with
  the section's best-ranked chunk, widened to take in its next-ranked chunks while they fit,
  then grown a line at a time (after, then before) while it fits;

and, when not the subtree, an **outline** of the section's children (title and citation each)
so that a reader can follow into them. Delivered text is always whole stored lines, except
that a single line longer than ``own_tokens`` is cut at a word-piece boundary.

Lines are 1-based inclusive; tokens are word pieces of the embedding model's tokenizer without
special tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import RetrievalConfig
    from ..store.chroma import Hit
    from .stored import StoredTexts

__all__ = [
    "DELIVERY_KINDS", "Delivery", "DeliveryPolicy", "OutlineEntry", "cut_to_tokens", "fit_window", "format_outline",
    "plan_delivery",
]

#: What a Section's ``delivery`` may say, in order of size.
DELIVERY_KINDS = ("excerpt", "own_text", "subtree")


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """One child of a section delivered without its subtree: where a reader can follow.

    Attributes:
        node_id: The child's node id.
        title: Its heading title.
        start_line: Its first line (the heading line), 1-based inclusive.
        end_line: Its last line (its whole subtree), 1-based inclusive.
        citation: ``<doc_id><suffix>#L<start>-L<end>`` of its whole subtree.
    """

    node_id: str
    title: str
    start_line: int
    end_line: int
    citation: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"node_id": self.node_id, "title": self.title, "start_line": self.start_line,
                "end_line": self.end_line, "citation": self.citation}


@dataclass(frozen=True, slots=True)
class Delivery:
    """How much of a section is delivered.

    Attributes:
        kind: ``subtree`` (the whole section), ``own_text`` (heading and own text) or
            ``excerpt`` (one window of the own text).
        start_line: First delivered line, 1-based inclusive.
        end_line: Last delivered line, 1-based inclusive.
        outline: The section's children when ``kind`` is not ``subtree`` (empty for a leaf).
        max_tokens: When > 0, the delivered lines are one line longer than the window: cut them
            to this many word pieces (:func:`cut_to_tokens`).
    """

    kind: str
    start_line: int
    end_line: int
    outline: tuple[OutlineEntry, ...] = ()
    max_tokens: int = 0


def plan_delivery(
    *,
    start_line: int,
    end_line: int,
    body_end_line: int,
    children: Sequence[Any],
    line_tokens: Sequence[int],
    chunks: Sequence[tuple[int, int]],
    cap_tokens: int,
    own_tokens: int,
    citation_base: str,
    excerpt_tokens: int = 0,
) -> Delivery:
    """Decide what to deliver of one section (see the module docstring).

    Args:
        start_line: The section's first line (its heading line), 1-based inclusive.
        end_line: Its last line (the whole subtree), 1-based inclusive.
        body_end_line: Last line of its own text (before the first subsection), 1-based
            inclusive; ``end_line`` for a leaf.
        children: Its child nodes (objects with ``node_id``, ``title``, ``start_line``,
            ``end_line``), in document order.
        line_tokens: Word pieces of each stored line of the document (index 0 is line 1).
        chunks: ``(chunk_start_line, chunk_end_line)`` of the section's own chunks that
            ranked, best first (the seed of an excerpt); may be empty.
        cap_tokens: Largest subtree delivered whole; 0 delivers every subtree whole.
        own_tokens: Largest own text delivered whole.
        citation_base: ``<doc_id><suffix>`` for the children's citations.
        excerpt_tokens: Size of an excerpt's window; 0: ``own_tokens``.

    Returns:
        The delivery; its text has at most ``cap_tokens`` tokens when ``kind`` is ``subtree``
        (or any size when ``cap_tokens`` is 0), at most ``own_tokens`` when ``own_text``, at
        most the window when ``excerpt``.

    Raises:
        ValueError: If the line range is empty or past ``line_tokens``.
    """
    if not 1 <= start_line <= end_line <= len(line_tokens):
        raise ValueError(f"lines {start_line}-{end_line} outside 1-{len(line_tokens)}")
    pre = [0, *accumulate(line_tokens)]

    def tokens(a: int, b: int) -> int:
        return pre[b] - pre[a - 1]

    if cap_tokens <= 0 or tokens(start_line, end_line) <= cap_tokens:
        return Delivery("subtree", start_line, end_line)
    outline = tuple(
        OutlineEntry(c.node_id, c.title, c.start_line, c.end_line, f"{citation_base}#L{c.start_line}-L{c.end_line}")
        for c in children
    )
    own_a, own_b = start_line, max(start_line, min(body_end_line, end_line))
    if tokens(own_a, own_b) <= own_tokens:
        return Delivery("own_text", own_a, own_b, outline)
    own_tokens = excerpt_tokens or own_tokens  # the window from here on
    seeds = [(max(a, own_a), min(b, own_b)) for a, b in chunks if a <= own_b and b >= own_a and a <= b]
    a, b = seeds[0] if seeds else (own_a, own_a)
    if tokens(a, b) > own_tokens:  # the best chunk alone is longer than the window: its first lines
        e = a
        while e < b and tokens(a, e + 1) <= own_tokens:
            e += 1
        return Delivery("excerpt", a, e, outline, own_tokens if tokens(a, e) > own_tokens else 0)
    for ca, cb in seeds[1:]:
        na, nb = min(a, ca), max(b, cb)
        if tokens(na, nb) <= own_tokens:
            a, b = na, nb
    used, grew = tokens(a, b), True
    while grew:
        grew = False
        if b < own_b and used + line_tokens[b] <= own_tokens:  # line b + 1
            b += 1
            used += line_tokens[b - 1]
            grew = True
        if a > own_a and used + line_tokens[a - 2] <= own_tokens:  # line a - 1
            a -= 1
            used += line_tokens[a - 1]
            grew = True
    return Delivery("excerpt", a, b, outline)


class DeliveryPolicy:
    """Apply the delivery policy of ``retrieval`` to sections of stored documents.

    Thread-safe: it keeps no state (the stored texts it reads are cached and locked).

    Args:
        config: The retrieval settings (``subtree_cap_tokens``, ``own_text_tokens``,
            ``excerpt_tokens``, ``tail_own_tokens``).
        texts: Word pieces per stored line as a reader is shown them
            (:meth:`~proxypointer.retrieve.stored.StoredTexts.reader_tokens`).
        hydrate: Reads the records of chunk hits that lack them, in order
            (:meth:`~proxypointer.retrieve.ranking.Ranker.hydrate`).
    """

    def __init__(
        self, config: RetrievalConfig, texts: StoredTexts, hydrate: Callable[[Sequence[Hit]], list[Hit]]
    ) -> None:
        self.config = config
        self.texts = texts
        self.hydrate = hydrate

    def deliver(
        self,
        doc_hash: str,
        doc_id: str,
        source: str,
        start_line: int,
        end_line: int,
        body_end_line: int,
        children: Sequence[Any],
        hits: Sequence[Hit] = (),
        head_lines: int = 0,
        *,
        tail: bool = False,
        room: int | None = None,
    ) -> Delivery:
        """Apply the delivery policy (``retrieval.subtree_cap_tokens``) to one section.

        Args:
            doc_hash: The document version's stored text.
            doc_id: Its id (for citations).
            source: Path it was indexed from (its suffix goes in citations).
            start_line: The section's first line, 1-based inclusive.
            end_line: Its last line (whole subtree), 1-based inclusive.
            body_end_line: Last line of its own text, 1-based inclusive.
            children: Its child nodes, in document order.
            hits: Its own chunk hits that ranked, best first (the seed of an excerpt); those
                without text and metadata are read from their records.
            head_lines: An excerpt also takes in the section's first this many lines when the
                span from them to its best chunks fits the window (a statement's title and
                column headers, without which its rows cannot be read); 0: no.
            tail: The section ranks after ``retrieval.full_ranks``: its own text is delivered
                under ``retrieval.tail_own_tokens`` (when set) instead of ``own_text_tokens``.
            room: Word pieces left of ``retrieval.delivery_budget_tokens`` after the sections
                ranked above; a subtree that fits is delivered whole. None: no budget.

        Returns:
            The delivery (:func:`plan_delivery`).

        Raises:
            StaleSourceError: If the stored copy is missing.
        """
        cfg = self.config
        cap, own_cap, window = cfg.subtree_cap_tokens, cfg.own_text_tokens, cfg.excerpt_tokens
        toks = self.texts.reader_tokens(doc_hash)
        whole = sum(toks[start_line - 1 : end_line])
        if room is not None and whole <= room:
            cap = 0  # the whole subtree fits what is left of retrieval.delivery_budget_tokens
        elif tail and cfg.tail_own_tokens:
            window = min(window or own_cap, cfg.tail_own_tokens)
            own_cap = min(own_cap, cfg.tail_own_tokens)
        ranges: list[tuple[int, int]] = []
        if cap and whole > cap:
            own = sum(toks[start_line - 1 : max(start_line, min(body_end_line, end_line))])
            if own > own_cap and hits:  # an excerpt: where did its chunks match?
                unique = list({h.chunk_id: h for h in hits}.values())
                for h in self.hydrate(unique):
                    hm = h.metadata
                    ranges.append((int(hm.get("chunk_start_line", start_line)),
                                   int(hm.get("chunk_end_line", end_line))))
                if head_lines > 0:
                    ranges.append((start_line, min(start_line + head_lines - 1, body_end_line)))
        return plan_delivery(
            start_line=start_line,
            end_line=end_line,
            body_end_line=body_end_line,
            children=children,
            line_tokens=toks,
            chunks=ranges,
            cap_tokens=cap,
            own_tokens=own_cap,
            citation_base=f"{doc_id}{Path(source).suffix or '.md'}",
            excerpt_tokens=window,
        )


def format_outline(outline: Sequence[OutlineEntry], indent: str = "") -> str:
    """One line per child, ``- <title> (L<start>-L<end>)``, for a reader (CLI, ``ask``).

    The lines are those of the section's own document, whose citation heads the block the
    outline follows, so the document id is not repeated on every line
    (:attr:`OutlineEntry.citation` has it).

    Returns:
        The lines joined with LF; ``""`` for an empty outline.
    """
    return "\n".join(f"{indent}- {e.title} (L{e.start_line}-L{e.end_line})" for e in outline)


def fit_window(lines: Sequence[str], seed: tuple[int, int], budget: int, tokenizer: Any) -> tuple[int, int, int]:
    """Choose the whole lines around the lines that matched that fit a budget.

    When a delivered text must be cut to a budget (a search's ``max_tokens``, a context
    budget), its first lines are not what matched: the window starts at the seed (the best
    chunk's lines), takes as much of the seed as fits, then grows a line after and a line
    before in turn while it fits, as an excerpt does (:func:`plan_delivery`). Lines are counted
    one at a time as the window reaches them, so a huge text costs about ``budget`` word pieces
    of counting; the joined window is counted once more and cut from its far side if joining
    changed the count.

    Args:
        lines: The text's lines (no line ends).
        seed: ``(first, last)`` 0-based inclusive indices of the lines that matched; clamped to
            ``lines``; a seed outside them starts the window at the first line.
        budget: Word pieces allowed (tokenizer's word pieces, no special tokens).
        tokenizer: Has ``count(text) -> int``.

    Returns:
        ``(first, last, tokens)``: 0-based inclusive indices of the window and its word pieces
        joined with LF; ``(i, i - 1, 0)`` when not even the seed's first line ``i`` fits.
    """
    n = len(lines)
    lo, hi = seed
    if not lines or hi < 0 or lo >= n or lo > hi:
        lo = hi = 0
    lo, hi = max(lo, 0), min(hi, n - 1)
    counts: dict[int, int] = {}

    def count(i: int) -> int:
        if i not in counts:
            counts[i] = tokenizer.count(lines[i])
        return counts[i]

    if budget <= 0 or count(lo) > budget:
        return lo, lo - 1, 0
    a = b = lo
    used = count(lo)
    while b < hi and used + count(b + 1) <= budget:
        b += 1
        used += count(b)
    after = before = True
    while after or before:
        after = after and b + 1 < n and used + count(b + 1) <= budget
        if after:
            b += 1
            used += count(b)
        before = before and a > 0 and used + count(a - 1) <= budget
        if before:
            a -= 1
            used += count(a)
    used = tokenizer.count("\n".join(lines[a : b + 1]))
    while used > budget and b > a:  # joining added word pieces: drop lines farthest from the seed
        if b - hi >= lo - a and b > lo:
            b -= 1
        else:
            a += 1
        used = tokenizer.count("\n".join(lines[a : b + 1]))
    return (a, b, used) if used <= budget else (a, a - 1, 0)


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

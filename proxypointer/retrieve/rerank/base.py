"""The reranker interface: candidate sections in, the same sections out in a new order.

A reranker reads each candidate as its breadcrumb and an excerpt (:func:`candidate_text`) and
orders them for the query. It never builds sections: it returns the sections it was given,
each a :func:`dataclasses.replace` copy whose ``rank_score`` is the reranker's score (higher is
better) and whose ``score`` (the cosine similarity of its best chunk) is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from ...chunk.datauri import replace_data_uris

if TYPE_CHECKING:
    from ..sections import Section

__all__ = ["Reranker", "candidate_text", "reorder"]


class Reranker(Protocol):
    """Anything that orders candidate sections for a query (:mod:`proxypointer.retrieve.rerank`)."""

    def rerank(self, query: str, sections: Sequence[Section]) -> list[Section]:
        """Return ``sections`` best first for ``query``.

        Args:
            query: The query as retrieved.
            sections: Candidates in fused order, distinct by (doc_id, node_id).

        Returns:
            The same sections (``dataclasses.replace`` copies), each once, their ``rank_score``
            the reranker's score and their ``score`` (cosine) unchanged.
        """
        ...


def candidate_text(section: Section, max_chars: int) -> str:
    """Give what a reranker reads of a section: its breadcrumb, a line break, then an excerpt.

    The excerpt is the section's best-ranked chunk (where the query matched), or its delivered
    text when it has none, with base64 ``data:`` payloads shown as placeholders and runs of
    white space as one space.

    Args:
        section: The candidate.
        max_chars: Most characters of the result (breadcrumb included), >= 1.

    Returns:
        ``<title> > ... > <title>``, a line feed, then the excerpt;, at most ``max_chars`` characters.
    """
    crumb = " > ".join(" ".join(t.split()) for t in section.breadcrumb) or section.title
    body = " ".join(replace_data_uris(section.chunk_text or section.text).split())
    return f"{crumb}\n{body}"[:max_chars].rstrip()


def reorder(sections: Sequence[Section], order: Sequence[int], scores: Sequence[float]) -> list[Section]:
    """Put the sections in a new order, each with its new rank score (the cosine kept).

    Args:
        sections: The candidates.
        order: Indices into ``sections``, best first; each index once, all of them.
        scores: The rank score of each position of ``order`` (higher is better).

    Returns:
        ``replace(sections[i], rank_score=score)`` for each ``i`` of ``order``.

    Raises:
        ValueError: If ``order`` is not a permutation of the indices, or ``scores`` differs in length.
    """
    if sorted(order) != list(range(len(sections))) or len(scores) != len(order):
        raise ValueError(f"order {list(order)} is not a permutation of {len(sections)} sections with a score each")
    return [replace(sections[i], rank_score=float(s)) for i, s in zip(order, scores, strict=True)]

"""An optional reranker after fusion (``rerank:``; off by default): sections in, sections out.

The :class:`~proxypointer.retrieve.retriever.Retriever` asks for ``rerank.candidates`` fused
sections (at least ``k``), hands them to the reranker, and returns the first ``k`` of its order,
delivered by their new ranks. A reranker returns the same sections, ``rank_score`` replaced by
its own score and ``score`` (the cosine) kept.

Modules:
    base          the ``Reranker`` protocol; what a reranker reads of a section; reordering
    crossencoder  a sentence-transformers ``CrossEncoder`` from a local folder (lazy import)
    llm           the ``llm:`` endpoint, one chat call per query; the fused order on failure
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Reranker, candidate_text, reorder
from .crossencoder import CrossEncoderReranker
from .llm import LLMReranker

if TYPE_CHECKING:
    from ...config import LLMConfig, RerankConfig

__all__ = ["CrossEncoderReranker", "LLMReranker", "Reranker", "candidate_text", "make_reranker", "reorder"]


def make_reranker(config: RerankConfig, llm: LLMConfig) -> Reranker | None:
    """Make the reranker ``rerank.backend`` names, or ``None`` for ``none``.

    Args:
        config: The ``rerank`` section.
        llm: The ``llm`` section (the endpoint of ``backend: llm``).

    Returns:
        A :class:`CrossEncoderReranker` (its model loaded on the first query), an
        :class:`LLMReranker`, or ``None``.

    Raises:
        ConfigError: If the cross-encoder's folder does not exist, or ``backend: llm`` has no
            endpoint.
    """
    if config.backend == "cross-encoder":
        return CrossEncoderReranker(config)
    if config.backend == "llm":
        return LLMReranker(config, llm)
    return None

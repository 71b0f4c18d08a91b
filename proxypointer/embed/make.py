"""Build the embedder that ``embedding.backend`` names: the one place that chooses the class."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..config import EmbeddingConfig

if TYPE_CHECKING:
    from .embedder import Embedder

__all__ = ["make_embedder"]


def make_embedder(
    config: EmbeddingConfig,
    *,
    encoder_dir: Path | None = None,
    trace_query: bool = True,
) -> Embedder:
    """Return the embedder of ``config.backend``, loading nothing yet.

    Args:
        config: The embedding settings.
        encoder_dir: The store's folder of exported ONNX encoders (``<store>/encoders``);
            ``sentence-transformers`` only (see ``SentenceTransformerEmbedder``).
        trace_query: Trace the query encoder at the first query (``sentence-transformers``
            only; False for one-shot processes).

    Returns:
        A :class:`~proxypointer.embed.endpoint.EndpointEmbedder` for ``openai`` (no torch is
        imported, now or later), else a
        :class:`~proxypointer.embed.embedder.SentenceTransformerEmbedder`.
    """
    if config.backend == "openai":
        from .endpoint import EndpointEmbedder

        return EndpointEmbedder(config)
    from .embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(config, trace_query=trace_query, query_encoder_dir=encoder_dir)

"""A sentence-transformers ``CrossEncoder`` read from a local folder scores each (query, candidate).

``rerank.backend: cross-encoder``. The model is never downloaded: ``rerank.model`` names a
folder (e.g. one where ``cross-encoder/ms-marco-MiniLM-L-6-v2`` was saved by the user), checked
when the reranker is made and loaded on the first query. sentence-transformers (and torch) are
imported only then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, MissingDependencyError
from .base import candidate_text, reorder

if TYPE_CHECKING:
    from ...config import RerankConfig
    from ..sections import Section

__all__ = ["CrossEncoderReranker"]

logger = logging.getLogger(__name__)


class CrossEncoderReranker:
    """Order candidates by a cross-encoder's score of (query, breadcrumb + excerpt).

    Each candidate's text is :func:`~proxypointer.retrieve.rerank.base.candidate_text` cut to
    ``excerpt_chars``; each pair is truncated to ``max_tokens`` word pieces of the model's own
    tokenizer. Its ``rank_score`` becomes the model's score (after the model's default
    activation: a sigmoid in [0, 1] for a one-label model; higher is better); ties keep the fused
    order.

    Thread-safe: one lock serialises loading (once, on the first :meth:`rerank`) and scoring: a
    Hugging Face fast tokenizer used by two threads at once can fail ("Already borrowed"), and
    one forward pass already uses the cores torch is given. A server's readers share one
    reranker (:class:`~proxypointer.serve.readers.ReaderPool`), so one model is loaded.

    Args:
        config: The ``rerank`` section (``model``, ``max_tokens``, ``batch_size``, ``device``,
            ``excerpt_chars``).

    Raises:
        ConfigError: If ``config.model`` is not an existing folder.
    """

    def __init__(self, config: RerankConfig) -> None:
        self.config = config
        self.path = Path(config.model).expanduser()
        if not self.path.is_dir():
            raise ConfigError(
                f"rerank.model: {self.path}: no such folder; save a cross-encoder there (e.g. "
                "cross-encoder/ms-marco-MiniLM-L-6-v2) or set rerank.backend: none"
            )
        self._model: Any = None
        self._lock = threading.Lock()

    def model(self) -> Any:
        """Return the ``CrossEncoder``, loaded on the first call.

        Raises:
            MissingDependencyError: If sentence-transformers is not installed.
            ConfigError: If the folder holds no model sentence-transformers can read, or one
                with more than one output label.
        """
        with self._lock:
            return self._loaded()

    def _loaded(self) -> Any:
        if self._model is None:  # under self._lock
            self._model = self._load()
        return self._model

    def _load(self) -> Any:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as err:
            raise MissingDependencyError(
                "sentence-transformers is not installed; pip install sentence-transformers "
                "to use rerank.backend: cross-encoder"
            ) from err
        try:
            model = CrossEncoder(str(self.path), device=self.config.device, max_length=self.config.max_tokens,
                                 local_files_only=True)
        except (OSError, ValueError) as err:
            raise ConfigError(f"rerank.model: {self.path}: not a cross-encoder sentence-transformers can read "
                              f"({err})") from err
        if model.num_labels != 1:
            raise ConfigError(f"rerank.model: {self.path}: the model has {model.num_labels} output labels; "
                              "a reranker needs one relevance score (num_labels 1)")
        logger.info("loaded the cross-encoder %s (max %d word pieces per pair)", self.path, self.config.max_tokens)
        return model

    def rerank(self, query: str, sections: Sequence[Section]) -> list[Section]:
        """Score each (query, candidate) pair in ``batch_size`` batches and sort by score.

        Args:
            query: The query.
            sections: Candidates in fused order.

        Returns:
            The same sections, highest score first (a stable sort: ties keep the fused order),
            ``rank_score`` replaced by the score, ``score`` kept.

        Raises:
            MissingDependencyError: If sentence-transformers is not installed.
            ConfigError: If the model cannot be loaded (:meth:`model`).
        """
        if not sections:
            return []
        pairs = [(query, candidate_text(s, self.config.excerpt_chars)) for s in sections]
        with self._lock:
            raw = self._loaded().predict(pairs, batch_size=self.config.batch_size, show_progress_bar=False)
        scores = [float(x) for x in raw.reshape(-1)]
        order = sorted(range(len(sections)), key=lambda i: -scores[i])
        return reorder(sections, order, [scores[i] for i in order])

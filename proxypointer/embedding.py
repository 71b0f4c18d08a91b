"""Embedding: texts -> L2-normalised float32 vectors, with sentence-transformers.

``import proxypointer`` never imports torch or sentence-transformers (about 7 s here,
STACK.md); the model loads on the first ``encode`` call, offline, from a local folder.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .config import EmbeddingConfig
from .errors import MissingDependencyError
from .tokenizer import HFTokenizer, load_tokenizer, resolve_model_path

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["Embedder", "SentenceTransformerEmbedder"]

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    """What the pipeline needs from an embedding model.

    Attributes:
        name: Model name as configured; part of the embedding-cache key.
        tokenizer: Counts word pieces and knows ``max_seq_length`` (chunk sizing).
    """

    name: str
    tokenizer: Any

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed texts.

        Returns:
            float32 array of shape ``(len(texts), dim)``, rows L2-normalised, so that the
            dot product is the cosine similarity.
        """
        ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily from a local folder.

    Args:
        config: Model name or path, batch size, device.
        quantize_int8: Quantise the model's linear layers to int8 after loading (torch
            dynamic quantisation, CPU only). Vectors change slightly, so the name, and with it
            the embedding-cache key, gets a ``+int8`` suffix; speed and retrieval quality on
            qasper-dev are in docs/benchmarks.md.
        query_cache_size: Query vectors kept by :meth:`encode_query` (least recently used
            evicted; 0 disables the cache).
        query_threads: torch intra-op threads for :meth:`encode_query` only (restored after
            each call; batch ``encode`` keeps torch's setting); None keeps torch's setting.
            Default 1: on this 2-core machine with any other process running, a one-query
            forward pass took ~20-50 ms with one thread and ~400-700 ms with torch's two
            (each op waits for the descheduled thread; docs/benchmarks.md). The setting is
            process-wide while a query runs: do not encode in another thread of the same
            process at the same time.

    Raises:
        MissingDependencyError: On first use, if sentence-transformers is not installed.
        ConfigError: If the model is neither packaged, a folder, nor in the local cache.
    """

    def __init__(
        self,
        config: EmbeddingConfig | None = None,
        *,
        quantize_int8: bool = False,
        query_cache_size: int = 1024,
        query_threads: int | None = 1,
    ) -> None:
        self.config = config or EmbeddingConfig()
        self.quantize_int8 = quantize_int8
        self.name = self.config.model + ("+int8" if quantize_int8 else "")
        self.query_cache_size = max(0, int(query_cache_size))
        self.query_threads = query_threads
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._tokenizer: HFTokenizer | None = None
        self._model: SentenceTransformer | None = None

    @property
    def tokenizer(self) -> HFTokenizer:
        """The model's tokenizer (loaded without torch)."""
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.config.model)
        return self._tokenizer

    @property
    def model(self) -> SentenceTransformer:
        """The loaded ``SentenceTransformer`` (first access loads it, ~1 s plus imports)."""
        if self._model is None:
            # Models are never downloaded at run time: keep the hub client offline.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as err:
                raise MissingDependencyError(
                    "embedding needs sentence-transformers; pip install sentence-transformers"
                ) from err
            try:  # the weight-loading bar would break our own progress line
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover
                pass
            path = resolve_model_path(self.config.model)
            logger.info("loading embedding model %s from %s", self.name, path)
            model = SentenceTransformer(str(path), device=self.config.device)
            if self.quantize_int8:
                model = _quantize_int8(model)
            self._model = model
        return self._model

    @property
    def dim(self) -> int:
        """Embedding dimension (384 for all-MiniLM-L6-v2)."""
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Embed texts in batches, in length-sorted order (sentence-transformers sorts).

        Args:
            texts: Texts, each within the model's ``max_seq_length`` (chunking ensures it).
            batch_size: Texts per forward pass; defaults to the config's.

        Returns:
            float32 array ``(len(texts), dim)``, rows L2-normalised.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=batch_size or self.config.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, query: str) -> np.ndarray:
        """Embed one query (with the configured ``query_prefix``); float32 ``(dim,)``.

        Repeated queries come from an in-process LRU cache of ``query_cache_size`` vectors
        (a forward pass costs ~5-15 ms on 2 CPU cores; a cache hit microseconds). The
        returned array is read-only: it is shared with the cache.
        """
        text = self.config.query_prefix + query
        vector = self._queries.get(text)
        if vector is not None:
            self._queries.move_to_end(text)
            return vector
        if self.query_threads:
            import torch

            before = torch.get_num_threads()
            torch.set_num_threads(self.query_threads)
            try:
                vector = self.encode([text])[0]
            finally:
                torch.set_num_threads(before)
        else:
            vector = self.encode([text])[0]
        if self.query_cache_size:
            vector.setflags(write=False)
            self._queries[text] = vector
            if len(self._queries) > self.query_cache_size:
                self._queries.popitem(last=False)
        return vector


def _quantize_int8(model: SentenceTransformer) -> SentenceTransformer:
    """Quantise every ``torch.nn.Linear`` to int8, dynamically (CPU only).

    Weights are stored as int8; activations are quantised per batch at run time.
    """
    import torch

    with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao
        warnings.simplefilter("ignore")
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)

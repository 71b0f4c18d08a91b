"""Embedding through an OpenAI-compatible ``/v1/embeddings`` endpoint: texts -> vectors over HTTP.

One client for every server that speaks the OpenAI embeddings API: Ollama
(``http://127.0.0.1:11434/v1``), Hugging Face TEI (``http://host:8080/v1``), vLLM, LM Studio and
OpenAI itself. Requests go through the ``openai`` package (imported on the first request;
``pip install openai``), which brings timeouts, retries with backoff and ``Retry-After``.
Neither torch nor sentence-transformers is imported: a query process only pays the HTTP call.

Vectors are checked (one per text, all of one dimension, finite, not all zero) and
L2-normalised to float32 here, since the store ranks by cosine and servers differ in whether
they normalise. Chunk sizes are counted with a local tokenizer (``embedding.tokenizer``), or,
without one, with the default model's as an approximation (:class:`EndpointEmbedder`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .._lru import LRU
from ..config import EmbeddingConfig
from ..errors import ConfigError, EmbeddingError, MissingDependencyError
from .names import embedder_name
from .tokenizer import DEFAULT_MODEL, HFTokenizer, less_prefix, load_local_tokenizer, load_tokenizer

__all__ = ["PLACEHOLDER_KEY", "EndpointEmbedder"]

logger = logging.getLogger(__name__)

#: Sent as the API key when ``embedding.api_key_env`` names no set variable: local servers
#: (Ollama, TEI, vLLM) ignore the key, and the ``openai`` client refuses to send none.
PLACEHOLDER_KEY = "not-needed"


class EndpointEmbedder:
    """An embedding model behind an OpenAI-compatible HTTP endpoint (``embedding.backend: openai``).

    Thread safety: :meth:`encode_query` keeps a thread-safe LRU; the ``openai`` client may be
    shared by threads. Picklable (the client and the cache are rebuilt in the new process), so
    a Ray actor can get a copy.

    Args:
        config: ``base_url``, ``model``, ``api_key_env``, ``batch_size`` (texts per request),
            ``timeout_s``, ``max_retries``, the prefixes, ``tokenizer`` and ``max_seq_length``.
        query_cache_size: Query vectors kept by :meth:`encode_query` (least recently used
            evicted; 0 disables the cache).

    Attributes:
        name: What the store records (``openai:<model>``, plus the document prefix:
            :func:`~proxypointer.embed.names.embedder_name`).

    Raises:
        ConfigError: If ``config.backend`` is not ``openai``.
    """

    def __init__(self, config: EmbeddingConfig, *, query_cache_size: int = 1024) -> None:
        if config.backend != "openai":
            raise ConfigError(f"embedding.backend: EndpointEmbedder serves backend openai, got {config.backend!r}")
        self.config = config
        self.name = embedder_name(config)
        self.query_cache_size = max(0, int(query_cache_size))
        self._queries: LRU[str, np.ndarray] = LRU(self.query_cache_size)
        self._tokenizer: HFTokenizer | None = None
        self._client: Any = None
        self._dim: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None  # holds sockets; rebuilt on the first request
        state["_queries"] = None  # holds a lock
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._queries = LRU(self.query_cache_size)

    @property
    def where(self) -> str:
        """The endpoint and model, as messages name them."""
        return f"embedding endpoint {self.config.base_url} (model {self.config.model!r})"

    @property
    def tokenizer(self) -> HFTokenizer:
        """The tokenizer that sizes chunks (``embedding.tokenizer``, else the default model's).

        Without ``embedding.tokenizer`` sizes are approximate: ingestion warns once per run
        (:attr:`approximate_sizes`); a query, whose token budgets are all it sizes, does not.
        ``max_seq_length`` is ``embedding.max_seq_length`` when set, and is lowered by the word
        pieces of ``document_prefix``, so that prefix + breadcrumb + text fit the model's input.

        Raises:
            ConfigError: If ``embedding.tokenizer`` is not a tokenizer folder or file.
        """
        if self._tokenizer is None:
            cfg = self.config
            if cfg.tokenizer:
                tok = load_local_tokenizer(cfg.tokenizer, max_seq_length=cfg.max_seq_length)
            else:
                logger.debug("%s", self.approximate_sizes)
                tok = load_tokenizer(DEFAULT_MODEL)
                tok = replace(tok, max_seq_length=cfg.max_seq_length or 512)
            self._tokenizer = less_prefix(tok, cfg.document_prefix)
        return self._tokenizer

    @property
    def approximate_sizes(self) -> str | None:
        """Why chunk sizes are approximate (no ``embedding.tokenizer`` set), or None when exact.

        Ingestion logs it as a warning once per run (:func:`~proxypointer.ingest.stages.warn_approximate_sizes`).
        """
        if self.config.tokenizer:
            return None
        return (f"{self.where}: no embedding.tokenizer set; chunks are sized with {DEFAULT_MODEL}'s tokenizer "
                "(BERT WordPiece), an approximation for this model; set embedding.tokenizer to its tokenizer "
                "folder or tokenizer.json for exact sizes")

    @property
    def dim(self) -> int:
        """Embedding dimension (asks the endpoint once when no vector has come back yet).

        Raises:
            EmbeddingError: As :meth:`encode`.
        """
        if self._dim is None:
            self._embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Embed chunk texts, each with ``document_prefix`` put before it.

        Args:
            texts: Texts, in any order; sent ``batch_size`` per request.
            batch_size: Texts per request; defaults to ``embedding.batch_size``.

        Returns:
            float32 array ``(len(texts), dim)``, rows L2-normalised, in the order of ``texts``.

        Raises:
            EmbeddingError: If a request fails after its retries (HTTP error, timeout,
                connection refused), or the reply is malformed (another number of vectors than
                texts, an empty, all-zero or non-finite vector, a dimension other than the
                replies before). The message names the endpoint and the model.
            MissingDependencyError: If ``openai`` is not installed.
        """
        prefix = self.config.document_prefix
        return self._embed([prefix + t for t in texts], batch_size)

    def encode_query(self, query: str) -> np.ndarray:
        """Embed one query (with the configured ``query_prefix``); float32 ``(dim,)``, read-only.

        Repeated queries come from an in-process LRU of ``query_cache_size`` vectors.

        Raises:
            EmbeddingError: As :meth:`encode`.
        """
        text = self.config.query_prefix + query
        vector = self._queries.get(text)
        if vector is None:
            vector = self._embed([text])[0]
            if self.query_cache_size:
                vector.setflags(write=False)
                self._queries.put(text, vector)
        return vector

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Embed many queries at once (each with ``query_prefix``); float32 ``(n, dim)``.

        Raises:
            EmbeddingError: As :meth:`encode`.
        """
        return self._embed([self.config.query_prefix + q for q in queries])

    # -- HTTP ---------------------------------------------------------------------------------
    def _openai(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as err:
                raise MissingDependencyError(
                    "embedding.backend openai needs the openai package; pip install openai "
                    "(or pip install 'proxypointer[llm]')"
                ) from err
            env = self.config.api_key_env
            key = os.environ.get(env, "") if env else ""
            if not key:
                logger.debug("$%s is not set; sending a placeholder key to %s", env, self.config.base_url)
            self._client = openai.OpenAI(
                base_url=self.config.base_url,
                api_key=key or PLACEHOLDER_KEY,
                timeout=self.config.timeout_s,
                max_retries=self.config.max_retries,
            )
        return self._client

    def _embed(self, inputs: list[str], batch_size: int | None = None) -> np.ndarray:
        """Send ``inputs`` as they are, ``batch_size`` per request; float32 ``(n, dim)`` normalised."""
        if not inputs:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        size = max(1, batch_size or self.config.batch_size)
        parts = [self._request(inputs[i : i + size]) for i in range(0, len(inputs), size)]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _request(self, inputs: list[str]) -> np.ndarray:
        """One request; float32 ``(len(inputs), dim)``, rows L2-normalised."""
        client = self._openai()
        import openai

        cfg = self.config
        try:
            resp = client.embeddings.create(model=cfg.model, input=inputs, encoding_format="float")
        except openai.APITimeoutError as err:
            raise EmbeddingError(
                f"{self.where}: no reply within embedding.timeout_s={cfg.timeout_s:g} s (after "
                f"{cfg.max_retries} retries); raise the timeout or embedding.max_retries, or check the server"
            ) from err
        except openai.APIConnectionError as err:
            raise EmbeddingError(
                f"{self.where}: cannot connect ({err}); check embedding.base_url and that the server runs"
            ) from err
        except openai.AuthenticationError as err:
            raise EmbeddingError(
                f"{self.where}: the server refused the API key (HTTP {err.status_code}); "
                f"set ${cfg.api_key_env} to a valid key"
            ) from err
        except openai.NotFoundError as err:
            raise EmbeddingError(
                f"{self.where}: HTTP 404 ({_short(err.message)}); check embedding.model and that "
                "embedding.base_url ends in /v1"
            ) from err
        except openai.APIStatusError as err:
            raise EmbeddingError(
                f"{self.where}: HTTP {err.status_code} (after {cfg.max_retries} retries): {_short(err.message)}"
            ) from err
        except openai.APIError as err:  # a body the client could not parse
            raise EmbeddingError(f"{self.where}: malformed reply ({_short(str(err))})") from err
        return self._vectors(resp, len(inputs))

    def _vectors(self, resp: Any, expected: int) -> np.ndarray:
        """Check a reply's vectors and L2-normalise them to float32 ``(expected, dim)``."""
        data = getattr(resp, "data", None)
        if not isinstance(data, list) and not hasattr(resp, "data"):  # an HTML page, a proxy's error text
            raise EmbeddingError(
                f"{self.where}: the reply is no embeddings JSON ({_short(str(resp))!r}); check that "
                "embedding.base_url is the endpoint's root with /v1"
            )
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else "no list of"
            raise EmbeddingError(f"{self.where}: sent {expected} texts, got {got} vectors back; check the server")
        # the API gives each vector its input's index; servers may return them in another order
        indices = [getattr(item, "index", None) for item in data]
        if sorted(i for i in indices if isinstance(i, int)) == list(range(expected)):
            data = [item for _, item in sorted(zip(indices, data, strict=True), key=lambda p: p[0])]
        try:
            rows = [np.asarray(getattr(item, "embedding", None), dtype=np.float32) for item in data]
        except (TypeError, ValueError) as err:
            raise EmbeddingError(f"{self.where}: a vector of the reply is not a list of numbers ({err})") from err
        for i, row in enumerate(rows):
            if row.ndim != 1 or row.size == 0:
                raise EmbeddingError(f"{self.where}: vector {i} of the reply is empty or not a flat list")
        dims = {row.size for row in rows}
        dim = self._dim or rows[0].size
        if dims != {dim}:
            raise EmbeddingError(
                f"{self.where}: vectors of {sorted(dims)} dimensions, expected {dim} (the first reply's); "
                "was the model behind the endpoint changed?"
            )
        vectors = np.stack(rows)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise EmbeddingError(f"{self.where}: a vector of the reply is all zeros or not finite")
        self._dim = dim
        return (vectors / norms).astype(np.float32)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

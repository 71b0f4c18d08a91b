"""Chat completions through any OpenAI-compatible endpoint (the ``llm:`` section).

One client for every caller of a chat model: :mod:`proxypointer.answer` (answers with citations,
follow-up rewriting) and :mod:`proxypointer.retrieve.rerank` (the LLM reranker). The endpoint is
any server speaking the OpenAI chat-completions API (OpenAI, vLLM, llama.cpp server, Ollama),
reached with the ``openai`` package (``pip install 'proxypointer[llm]'``), imported only when a
request is made.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .config import LLMConfig
from .errors import ConfigError, LLMError, MissingDependencyError

__all__ = ["ChatClient", "OpenAIChatClient", "short_text"]

logger = logging.getLogger(__name__)


class ChatClient(Protocol):
    """Anything that turns chat messages into the assistant's reply text."""

    @property
    def name(self) -> str:
        """Model name, reported in :attr:`Answer.model`."""
        ...

    def complete(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 0) -> str:
        """Return the reply to ``messages`` (``{"role": ..., "content": ...}`` dicts).

        ``max_tokens`` > 0 bounds the reply (tokens of the chat model); 0: the endpoint's limit.
        """
        ...


class OpenAIChatClient:
    """Chat completions over HTTP with the ``openai`` package (timeouts and retries built in).

    Args:
        config: Endpoint, model, key variable, timeout, retries, temperature.

    Raises:
        ConfigError: If ``config`` names no endpoint or model.

    """

    def __init__(self, config: LLMConfig) -> None:
        if not config.configured:
            raise ConfigError(
                "llm: not configured; set llm.base_url and llm.model (see configs/llm-example.yaml)"
            )
        self.config = config
        self._client: Any = None

    @property
    def name(self) -> str:
        """The model name."""
        return self.config.model

    def _openai(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as err:
                raise MissingDependencyError(
                    "openai is not installed; pip install 'proxypointer[llm]' to use llm.base_url"
                ) from err
            key = os.environ.get(self.config.api_key_env, "") if self.config.api_key_env else ""
            if not key:
                logger.debug("$%s is not set; sending a placeholder key", self.config.api_key_env)
            self._client = openai.OpenAI(
                base_url=self.config.base_url,
                api_key=key or "not-needed",
                timeout=self.config.timeout_s,
                max_retries=self.config.max_retries,
            )
        return self._client

    def complete(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 0) -> str:
        """Send ``messages`` and return the first choice's text.

        Args:
            messages: ``{"role": ..., "content": ...}`` dicts, in order.
            max_tokens: When > 0, sent as the request's ``max_tokens`` (the reply's bound, in
                tokens of the chat model); 0: not sent (the endpoint's limit).

        Raises:
            LLMError: On a timeout or connection error (after ``max_retries`` retries), an
                HTTP error status, or a reply without text.
            MissingDependencyError: If ``openai`` is not installed.

        """
        client = self._openai()
        import openai

        where = f"llm {self.config.base_url} ({self.config.model})"
        try:
            resp = client.chat.completions.create(
                model=self.config.model,
                messages=[dict(m) for m in messages],
                temperature=self.config.temperature,
                **({"max_tokens": max_tokens} if max_tokens > 0 else {}),
            )
        except openai.APITimeoutError as err:
            raise LLMError(
                f"{where}: no reply within llm.timeout_s={self.config.timeout_s:g} s "
                f"(after {self.config.max_retries} retries); raise the timeout or check the server"
            ) from err
        except openai.APIConnectionError as err:
            raise LLMError(
                f"{where}: cannot connect ({err}); check llm.base_url and that the server runs"
            ) from err
        except openai.AuthenticationError as err:
            raise LLMError(
                f"{where}: the server refused the API key (HTTP {err.status_code}); "
                f"set ${self.config.api_key_env}"
            ) from err
        except openai.APIStatusError as err:
            raise LLMError(f"{where}: HTTP {err.status_code}: {short_text(err.message)}") from err
        except openai.APIError as err:  # malformed body the client could not parse
            raise LLMError(f"{where}: malformed reply ({short_text(str(err))})") from err
        choices = getattr(resp, "choices", None)
        message = (
            getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
        )
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            raise LLMError(
                f"{where}: malformed reply (no message text in the first choice); check the server"
            )
        return content.strip()


def short_text(text: str, limit: int = 200) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``limit`` characters with ``...``."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

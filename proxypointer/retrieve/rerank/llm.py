"""The ``llm:`` endpoint orders the candidates: one chat call per query, bounded in and out.

``rerank.backend: llm``. The prompt lists the candidates numbered ``[1]..[n]`` in fused order,
each as its breadcrumb and a short excerpt (:func:`~proxypointer.retrieve.rerank.base.candidate_text`),
within ``rerank.prompt_chars`` characters together; the reply is bounded by
``rerank.reply_tokens`` and read as a JSON list of candidate numbers, best first
(:func:`parse_order`). The reranker never fails a query: when the endpoint fails or its reply
holds no candidate number, it logs a warning and keeps the fused order.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...chat import ChatClient, OpenAIChatClient, short_text
from ...errors import LLMError
from .base import candidate_text, reorder

if TYPE_CHECKING:
    from ...config import LLMConfig, RerankConfig
    from ..sections import Section

__all__ = ["RERANK_PROMPT", "LLMReranker", "build_rerank_messages", "parse_order"]

logger = logging.getLogger(__name__)

#: System prompt of :func:`build_rerank_messages`.
RERANK_PROMPT = (
    "You rank search results. The user gives a query and numbered candidate sections, each shown "
    "as its place in its document (titles joined by '>') and an excerpt. Reply with a JSON list of "
    "the candidate numbers, the most useful for answering the query first, for example [3, 1, 2]. "
    "Reply with the list only."
)

_LIST = re.compile(r"\[[^\[\]]*\]")


def build_rerank_messages(
    query: str, sections: Sequence[Section], prompt_chars: int, excerpt_chars: int
) -> list[dict[str, str]]:
    """Build the chat messages asking for the candidates' numbers, best first.

    Each candidate (``[i]``, its breadcrumb, a line feed, its excerpt) takes at most an equal share of
    ``prompt_chars`` (and at most ``excerpt_chars`` of breadcrumb and excerpt), so the candidates
    together take at most ``prompt_chars`` characters plus two separator characters each; the
    query is cut to ``excerpt_chars`` characters.

    Args:
        query: The query.
        sections: Candidates ``[1]..[n]`` in this order (not empty).
        prompt_chars: Characters of all candidates together, >= 1.
        excerpt_chars: Most characters of one candidate's breadcrumb and excerpt, >= 1.

    Returns:
        ``[system, user]`` messages.
    """
    n = len(sections)
    share = max(1, prompt_chars // max(n, 1))
    blocks = []
    for i, s in enumerate(sections, 1):
        label = f"[{i}] "
        room = max(1, min(excerpt_chars, share - len(label)))
        blocks.append((label + candidate_text(s, room))[:share])
    user = (
        f"Query: {short_text(query, excerpt_chars)}\n\nCandidates:\n\n" + "\n\n".join(blocks)
        + f"\n\nReply with the JSON list of the {n} candidate numbers, best first."
    )
    return [{"role": "system", "content": RERANK_PROMPT}, {"role": "user", "content": user}]


def parse_order(reply: str, n: int) -> list[int] | None:
    """Read a reply's order of candidates: 0-based indices, each once, all ``n`` of them.

    The first bracketed JSON list in the reply that names a candidate is read (code fences and
    words around it are ignored). Its numbers are 1-based; numbers that name no candidate
    (0, > n), repeats, and items that are not whole numbers are dropped; candidates it leaves
    out follow in their fused order.

    Args:
        reply: The model's reply.
        n: Candidates listed.

    Returns:
        The order, or ``None`` when no list in the reply names a candidate (unparsable).
    """
    for match in _LIST.finditer(reply):
        try:
            items = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        picked: list[int] = []
        for item in items:
            if isinstance(item, str) and item.strip().isdigit():
                item = int(item.strip())
            if isinstance(item, float) and item.is_integer():
                item = int(item)
            if isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= n and item - 1 not in picked:
                picked.append(item - 1)
        if picked:
            return picked + [i for i in range(n) if i not in picked]
    return None


class LLMReranker:
    """Order candidates by one chat call per query to the ``llm:`` endpoint.

    The ``rank_score`` of the section at position ``p`` (0-based) of ``n`` becomes
    ``(n - p) / n``: 1.0 for the first, higher is better. When the endpoint fails (an
    :class:`~proxypointer.errors.LLMError`: unreachable, timed out, refused, malformed reply) or
    its reply names no candidate, a warning is logged and the sections are returned as given:
    fused order, fused rank scores.

    Thread-safe: it keeps no state; the client is shared (the ``openai`` client is thread-safe).

    Args:
        config: The ``rerank`` section (``prompt_chars``, ``excerpt_chars``, ``reply_tokens``).
        llm: The ``llm:`` section (endpoint, model, timeout, retries).
        client: The chat model; default: :class:`~proxypointer.chat.OpenAIChatClient` over ``llm``.

    Raises:
        ConfigError: If no client is given and ``llm`` names no endpoint.
    """

    def __init__(self, config: RerankConfig, llm: LLMConfig, client: ChatClient | None = None) -> None:
        self.config = config
        self.client: ChatClient = client if client is not None else OpenAIChatClient(llm)

    def rerank(self, query: str, sections: Sequence[Section]) -> list[Section]:
        """Ask the model for the candidates' order and apply it.

        Args:
            query: The query.
            sections: Candidates in fused order.

        Returns:
            The same sections in the model's order (see the class docstring), or as given when
            the endpoint fails or its reply is unparsable.

        Raises:
            MissingDependencyError: If ``openai`` is not installed.
        """
        if len(sections) < 2:
            return list(sections)
        cfg = self.config
        messages = build_rerank_messages(query, sections, cfg.prompt_chars, cfg.excerpt_chars)
        try:
            reply = self.client.complete(messages, max_tokens=cfg.reply_tokens)
        except LLMError as err:
            logger.warning("rerank: %s; keeping the fused order", err)
            return list(sections)
        order = parse_order(reply, len(sections))
        if order is None:
            logger.warning("rerank: the reply names no candidate (%r); keeping the fused order", short_text(reply))
            return list(sections)
        n = len(sections)
        return reorder(sections, order, [(n - p) / n for p in range(n)])

"""Answers with citations through any OpenAI-compatible chat endpoint.

retrieve -> deliver the whole sections that fit a context budget in model tokens
(:meth:`~proxypointer.retrieve.context.Assembler.pack`) as blocks ``[1]..[n]``, each headed by its
citation and breadcrumb -> ask the model to answer only from them and cite blocks by number ->
parse the reply into the answer plus the blocks actually cited. A number that matches no block is
reported in :attr:`Answer.invalid_citations` and never turned into a citation.

The endpoint is any server speaking the OpenAI chat-completions API (OpenAI, vLLM, llama.cpp
server, Ollama), reached with the ``openai`` package (``pip install 'proxypointer[llm]'``),
imported only when a request is made.

Example:
    >>> from proxypointer import Index, Retriever, load_config           # doctest: +SKIP
    >>> index = Index(".proxypointer", load_config("configs/llm-example.yaml"))
    >>> answer = Answerer(Retriever(index)).answer("How is parental leave paid?")
    >>> print(answer.text); print([s.citation for s in answer.citations])

"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .chat import ChatClient, OpenAIChatClient, short_text
from .chunk.datauri import replace_data_uris
from .config import LLMConfig
from .errors import ConfigError, LLMError
from .retrieve.context import Assembler, ContextBlock
from .retrieve.conversation import Turn, contextual_query
from .retrieve.delivery import format_outline
from .tree.check import shown_title

if TYPE_CHECKING:
    from .retrieve.retriever import Retriever, Section

__all__ = [
    "Answer",
    "Answerer",
    "ChatClient",
    "Context",
    "DEFAULT_CONTEXT_TOKENS",
    "LLMError",
    "OpenAIChatClient",
    "build_messages",
    "format_block",
    "format_context",
    "parse_citations",
]

logger = logging.getLogger(__name__)

#: System prompt of :func:`build_messages`.
SYSTEM_PROMPT = (
    "You answer questions using only the numbered source blocks given by the user. "
    "Each block starts with [n], its citation and its breadcrumb (the section's place in "
    "its document). Rules: use only facts stated in the blocks; cite every statement with "
    "the number of the block it comes from in square brackets, like [1] or [2][3]; never "
    "cite a number that is not a block; if the blocks do not contain the answer, say that "
    "the sources do not answer it. Answer concisely, in the language of the question."
)

#: System prompt for rewriting a follow-up into a standalone question.
REWRITE_PROMPT = (
    "Rewrite the user's last question as one standalone question that can be understood "
    "without the conversation, keeping its meaning and naming what pronouns and phrases "
    "like 'what about' refer to. Reply with the question only."
)

#: Default context budget of :class:`Answerer`, in word pieces of the embedding model's
#: tokenizer: the former 24,000-character budget at the 4.1 characters per word piece measured
#: on ``data/`` (28,296 characters, 6,866 word pieces of all-MiniLM-L6-v2).
DEFAULT_CONTEXT_TOKENS = 6000

#: Answer text when retrieval found nothing (the model is not called).
NO_CONTEXT_ANSWER = "No indexed sections were found to answer from; ingest documents first."

# [3], [1, 2], [1-3], [2; 4], [1 and 2], [source 2], [Block #3]
_CITE = re.compile(
    r"\[\s*(?:(?:sources?|blocks?)\s*)?#?\s*(\d+(?:\s*(?:,|;|-|\u2013|and)\s*#?\s*\d+)*)\s*\]",
    re.IGNORECASE,
)
_MAX_RANGE = 50


def format_block(number: int, block: ContextBlock) -> str:
    """One prompt block: ``[n] <citation> | <breadcrumb>``, the delivered lines' text, then its outline.

    A title of the breadcrumb is cut like the outline's
    (:func:`~proxypointer.tree.check.shown_title`: a paragraph taken for a heading is in the
    text already). The text is the exact stored lines, except that inline ``data:...;base64`` payloads are
    shown as a short placeholder (``[image: alt]``, shared case 31): the model cannot read them
    and they would fill its context. A section delivered without its subsections (a big one,
    ``retrieval.subtree_cap_tokens``) is followed by their titles and citations
    (:func:`~proxypointer.retrieve.delivery.format_outline`), under ``Subsections not shown:``.
    """
    text = replace_data_uris(block.text)
    crumb = " > ".join(shown_title(t) for t in block.section.breadcrumb)
    out = f"[{number}] {block.citation} | {crumb}\n{text}"
    if block.outline:
        out += "\nSubsections not shown:\n" + format_outline(block.outline)
    return out


def format_context(blocks: Sequence[ContextBlock]) -> str:
    """All blocks ``[1]..[n]``, separated by blank lines (what the model is shown)."""
    return "\n\n".join(format_block(i, b) for i, b in enumerate(blocks, 1))


def build_messages(question: str, blocks: Sequence[ContextBlock]) -> list[dict[str, str]]:
    """Chat messages asking for an answer from ``blocks`` only, citing blocks by number.

    Args:
        question: The user's question, as asked.
        blocks: Blocks ``[1]..[n]`` in this order.

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}]``.

    """
    user = f"Source blocks:\n\n{format_context(blocks)}\n\nQuestion: {question.strip()}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_citations(text: str, n_blocks: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Find the block numbers a reply cites.

    Recognises ``[3]``, ``[1][2]``, ``[1, 2]``, ``[1-3]``, ``[2; 4]``, ``[1 and 2]`` and
    ``[source 2]``.

    Args:
        text: The model's reply.
        n_blocks: Blocks shown to the model; valid numbers are ``1..n_blocks``.

    Returns:
        ``(valid, invalid)``: distinct numbers in order of first appearance; ``invalid``
        holds the ones outside ``1..n_blocks``.

    """
    valid: list[int] = []
    invalid: list[int] = []
    for m in _CITE.finditer(text):
        numbers: list[int] = []
        for part in re.split(r"\s*(?:,|;|and)\s*", m.group(1), flags=re.IGNORECASE):
            bounds = [int(x) for x in re.findall(r"\d+", part)]
            if len(bounds) == 2 and 0 <= bounds[1] - bounds[0] < _MAX_RANGE:
                numbers.extend(range(bounds[0], bounds[1] + 1))
            else:
                numbers.extend(bounds)
        for n in numbers:
            bucket = valid if 1 <= n <= n_blocks else invalid
            if n not in bucket:
                bucket.append(n)
    return tuple(valid), tuple(invalid)


@dataclass(frozen=True, slots=True)
class Context:
    """What retrieval delivered for a question (no LLM involved).

    Attributes:
        question: The question as asked.
        query: The text actually searched (differs for a follow-up; see
            :func:`~proxypointer.retrieve.conversation.contextual_query`).
        blocks: Blocks ``[1]..[n]``, best first, within the context budget.

    """

    question: str
    query: str
    blocks: tuple[ContextBlock, ...]

    @property
    def sections(self) -> tuple[Section, ...]:
        """The section of each block, in block order."""
        return tuple(b.section for b in self.blocks)


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer grounded in retrieved sections.

    Attributes:
        question: The question as asked.
        query: The text actually searched.
        text: The model's reply, with its ``[n]`` markers.
        blocks: Blocks ``[1]..[n]`` the model was shown, best first.
        cited: Valid block numbers cited, in order of first appearance (1-based).
        invalid_citations: Numbers the reply cites that match no block (not passed on).
        model: Model name.

    """

    question: str
    query: str
    text: str
    blocks: tuple[ContextBlock, ...]
    cited: tuple[int, ...]
    invalid_citations: tuple[int, ...]
    model: str

    @property
    def sections(self) -> tuple[Section, ...]:
        """The section of each block the model was shown, in block order."""
        return tuple(b.section for b in self.blocks)

    @property
    def citations(self) -> tuple[Section, ...]:
        """The sections actually cited, in order of first citation."""
        return tuple(self.blocks[n - 1].section for n in self.cited)

    def to_turn(self) -> Turn:
        """Turn this exchange into a conversation turn (cited sections, else all delivered)."""
        used = self.citations or self.sections
        return Turn(
            self.question,
            self.text,
            tuple(s.breadcrumb for s in used),
            tuple(s.citation for s in used),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; ``citations`` lists the cited sections with their block number."""
        return {
            "question": self.question,
            "query": self.query,
            "answer": self.text,
            "model": self.model,
            "citations": [
                {
                    "block": n,
                    "citation": s.citation,
                    "breadcrumb": list(s.breadcrumb),
                    "doc_id": s.doc_id,
                    "node_id": s.node_id,
                    "start_line": s.start_line,
                    "end_line": s.end_line,
                }
                for n, s in zip(self.cited, self.citations, strict=True)
            ],
            "invalid_citations": list(self.invalid_citations),
            "blocks": [b.to_dict() for b in self.blocks],
        }


class Answerer:
    """Retrieve sections, ask a chat model, return the answer with the citations it used.

    Args:
        retriever: Where sections come from.
        client: The chat model; default: :class:`OpenAIChatClient` over ``llm`` when that is
            configured, else none (then only :meth:`context` works).
        llm: Endpoint settings; default: the index config's ``llm`` section.
        budget_tokens: Context budget of all blocks together, in word pieces of the embedding
            model's tokenizer (no special tokens; :data:`DEFAULT_CONTEXT_TOKENS`): sections are
            shown whole, lower-ranked ones that would exceed it are left out, and the first is
            always shown, cut to the budget if it alone exceeds it
            (:meth:`~proxypointer.retrieve.context.Assembler.pack`).

    Example:
        >>> a = Answerer(Retriever(index)).answer("What is the notice period?")  # doctest: +SKIP
        >>> a.text, [s.citation for s in a.citations]  # doctest: +SKIP
        ('Four weeks after probation [1].', ['employee-handbook.md#L263-L269'])

    """

    def __init__(
        self,
        retriever: Retriever,
        client: ChatClient | None = None,
        *,
        llm: LLMConfig | None = None,
        budget_tokens: int = DEFAULT_CONTEXT_TOKENS,
    ) -> None:
        if budget_tokens < 1:
            raise ConfigError(f"budget_tokens: expected an int >= 1, got {budget_tokens}")
        self.retriever = retriever
        self.assembler = Assembler(retriever)
        self.llm = llm if llm is not None else retriever.index.config.llm
        self.client: ChatClient | None = client
        if client is None and self.llm.configured:
            self.client = OpenAIChatClient(self.llm)
        self.budget_tokens = budget_tokens

    @property
    def configured(self) -> bool:
        """True when a chat model is available for :meth:`answer`."""
        return self.client is not None

    def rewrite(self, question: str, history: Sequence[Turn | str]) -> str:
        """Ask the model for a standalone version of a follow-up question.

        Returns:
            The rewritten question (one line); ``question`` itself when the reply is empty.

        Raises:
            LLMError: If the endpoint fails.
            ConfigError: If no chat model is configured.

        """
        client = self._require_client()
        lines = []
        for t in (h if isinstance(h, Turn) else Turn(str(h)) for h in history[-3:]):
            lines.append(f"User: {t.question}")
            if t.answer:
                lines.append(f"Assistant: {short_text(t.answer, 500)}")
        lines.append(f"User (last question): {question}")
        reply = client.complete(
            [
                {"role": "system", "content": REWRITE_PROMPT},
                {"role": "user", "content": "\n".join(lines)},
            ]
        )
        rewritten = " ".join(reply.split()).strip().strip('"')
        return rewritten or question

    def query_for(self, question: str, history: Sequence[Turn | str] | None = None) -> str:
        """Build the text to search for ``question`` after ``history``.

        With ``llm.rewrite_followups`` and a chat model, the model's standalone question
        (falling back to the built query, with a warning, if the endpoint fails); otherwise
        :func:`~proxypointer.retrieve.conversation.contextual_query`.
        """
        if not history:
            return question
        if self.llm.rewrite_followups and self.client is not None:
            try:
                return self.rewrite(question, history)
            except LLMError as err:
                logger.warning(
                    "could not rewrite the follow-up (%s); using the previous turn instead", err
                )
        return contextual_query(question, history)

    def context(
        self,
        question: str,
        history: Sequence[Turn | str] | None = None,
        *,
        k: int | None = None,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> Context:
        """Retrieve the blocks for a question without calling the model.

        Args:
            question: The question.
            history: Earlier turns, oldest first.
            k: Sections wanted (default ``retrieval.k``).
            doc_ids: Only search these documents.
            source_prefix: Only search documents whose doc_id starts with this.

        Returns:
            The query used and the blocks, within ``budget_tokens``.

        Raises:
            ConfigError: If the question is empty or ``k`` < 1.

        """
        query = self.query_for(question, history)
        sections = self.retriever.retrieve(query, k=k, doc_ids=doc_ids, source_prefix=source_prefix)
        return Context(question, query, tuple(self.assembler.pack(sections, self.budget_tokens)))

    def answer(
        self,
        question: str,
        history: Sequence[Turn | str] | None = None,
        *,
        k: int | None = None,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> Answer:
        """Answer a question from retrieved sections, with the citations the model used.

        Args:
            question: The question.
            history: Earlier turns, oldest first (follow-ups use them for retrieval).
            k: Sections shown to the model (default ``retrieval.k``).
            doc_ids: Only search these documents.
            source_prefix: Only search documents whose doc_id starts with this.

        Returns:
            The answer; ``citations`` holds only sections that exist, ``invalid_citations``
            the numbers that matched no block.

        Raises:
            ConfigError: If no chat model is configured.
            LLMError: If the endpoint fails or its reply has no text.

        """
        client = self._require_client()
        ctx = self.context(question, history, k=k, doc_ids=doc_ids, source_prefix=source_prefix)
        if not ctx.blocks:
            logger.warning("no sections found for %r; the model was not asked", question)
            return Answer(question, ctx.query, NO_CONTEXT_ANSWER, (), (), (), client.name)
        reply = client.complete(build_messages(question, ctx.blocks))
        cited, invalid = parse_citations(reply, len(ctx.blocks))
        if invalid:
            logger.warning(
                "the answer cites %s, which match no block (1..%d); ignored",
                ", ".join(f"[{n}]" for n in invalid),
                len(ctx.blocks),
            )
        if not cited:
            logger.warning("the answer cites no block")
        return Answer(question, ctx.query, reply, ctx.blocks, cited, invalid, client.name)

    def _require_client(self) -> ChatClient:
        if self.client is None:
            raise ConfigError(
                "llm: not configured; set llm.base_url and llm.model in the config "
                "(see configs/llm-example.yaml)"
            )
        return self.client

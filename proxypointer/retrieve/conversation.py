"""Conversation-aware retrieval: turns, follow-up queries, sessions kept in the store folder.

A follow-up such as "and what about parental leave?" says little on its own. Without an LLM,
the retrieval query is built from the follow-up, the previous question and the breadcrumbs
of the sections that question used (:func:`contextual_query`); with an LLM,
:class:`~proxypointer.answer.Answerer` can instead ask the model for a standalone question.
A question that does not look like a follow-up (:func:`is_followup`) is used as it is, so
changing the topic mid-conversation does not drag the old topic along.

:class:`ConversationRetriever` is the layer over a
:class:`~proxypointer.retrieve.retriever.Retriever` that applies this to every question.

This module imports nothing heavy and, at run time, nothing above ``config``/``errors``.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, StoreError
from ..storefiles import SESSIONS_DIR

if TYPE_CHECKING:
    from .retriever import Retriever, Section

__all__ = ["ConversationRetriever", "Session", "Turn", "contextual_query", "is_followup", "session_path"]

logger = logging.getLogger(__name__)

#: Openings that mark a question as continuing the previous one.
FOLLOWUP_OPENINGS: tuple[str, ...] = (
    "and ",
    "but ",
    "also ",
    "or ",
    "so ",
    "then ",
    "what about",
    "how about",
    "what of",
    "same for",
    "same question",
    "what else",
    "anything else",
    "why not",
    "why is that",
)

#: Pronouns that point back to something named earlier (``there``/``that`` are left out:
#: "is there ..." and "... that ..." are too common in standalone questions).
_ANAPHORA = frozenset(
    {
        "it",
        "its",
        "they",
        "them",
        "their",
        "theirs",
        "this",
        "these",
        "those",
        "he",
        "she",
        "him",
        "her",
        "his",
        "former",
        "latter",
    }
)

_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "were",
        "be",
        "do",
        "does",
        "did",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "when",
        "where",
        "about",
        "with",
        "by",
        "at",
        "as",
        "i",
        "we",
        "you",
        "my",
        "our",
        "your",
        "can",
        "could",
        "should",
        "would",
        "will",
        "there",
        "that",
        "so",
        "then",
        "also",
        "any",
        "me",
    }
)

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_SESSION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

#: Turns kept in a session file; older ones are dropped when a turn is added.
DEFAULT_MAX_TURNS = 20


@dataclass(frozen=True, slots=True)
class Turn:
    """One question of a conversation and what it used.

    Attributes:
        question: The question as the user asked it.
        answer: The model's answer (empty when no LLM was used).
        breadcrumbs: Breadcrumbs of the sections the turn used (cited ones when there is an
            answer, else the retrieved ones), best first.
        citations: Citations ``<doc>.md#L<start>-L<end>`` of the same sections.

    """

    question: str
    answer: str = ""
    breadcrumbs: tuple[tuple[str, ...], ...] = ()
    citations: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (tuples become lists)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "breadcrumbs": [list(b) for b in self.breadcrumbs],
            "citations": list(self.citations),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        """Inverse of :meth:`to_dict`.

        Raises:
            KeyError, TypeError, ValueError: If ``data`` is not a turn (callers wrap these).

        """
        return cls(
            question=str(data["question"]),
            answer=str(data.get("answer", "")),
            breadcrumbs=tuple(tuple(str(t) for t in b) for b in data.get("breadcrumbs", [])),
            citations=tuple(str(c) for c in data.get("citations", [])),
        )


def _as_turn(item: Turn | str) -> Turn:
    return item if isinstance(item, Turn) else Turn(question=str(item))


def _content_words(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOPWORDS]


def is_followup(question: str) -> bool:
    """Guess whether a question continues the previous one.

    A question is a follow-up when it opens with a connective (``and``, ``but``, ``what
    about`` ... see ``FOLLOWUP_OPENINGS``), contains a pronoun pointing back (``it``,
    ``they``, ``this``, ``those`` ...), or has at most one content word ("Eligibility?").

    Args:
        question: The new question.

    Returns:
        True for a follow-up; False for a question that stands on its own.

    """
    q = question.strip().lower()
    if q.startswith(FOLLOWUP_OPENINGS):
        return True
    words = [m.group(0).lower() for m in _WORD.finditer(q)]
    if any(w in _ANAPHORA for w in words):
        return True
    return len(_content_words(q)) <= 1


def contextual_query(
    question: str, history: Sequence[Turn | str], *, max_breadcrumbs: int = 1
) -> str:
    """Build the retrieval query for a question asked after ``history``.

    For a follow-up (:func:`is_followup`) the query is, one per line: the question, the
    previous question, and the breadcrumbs (titles joined with `` > ``) of the first
    ``max_breadcrumbs`` sections the previous turn used. Any other question is returned
    unchanged. One breadcrumb is the default because more of them outweigh the follow-up's
    own words: on 11 scripted follow-ups over ``data/``, follow-up + previous question + one
    breadcrumb found the right section in the top 3 for 10 (MiniLM and the hashing test
    embedder alike); with three breadcrumbs, 9 and 7.

    Args:
        question: The new question.
        history: Earlier turns, oldest first; a plain string is a question without sections.
        max_breadcrumbs: Breadcrumbs of the previous turn added to the query (>= 0).

    Returns:
        The query to embed.

    Example:
        >>> prev = Turn("How many days of annual leave do I get?",
        ...             breadcrumbs=(("Employee Handbook", "3 Leave", "3.1 Annual leave"),))
        >>> print(contextual_query("and parental leave?", [prev]))
        and parental leave?
        How many days of annual leave do I get?
        Employee Handbook > 3 Leave > 3.1 Annual leave

    """
    if not history or not is_followup(question):
        return question
    last = _as_turn(history[-1])
    parts = [question.strip(), last.question.strip()]
    seen: set[str] = set()
    for crumb in last.breadcrumbs:
        if len(seen) >= max_breadcrumbs:
            break
        line = " > ".join(crumb)
        if line and line not in seen:
            seen.add(line)
            parts.append(line)
    query = "\n".join(p for p in parts if p)
    logger.debug("follow-up %r -> query %r", question, query)
    return query


def session_path(store_root: str | Path, name: str) -> Path:
    """Where a named session lives: ``<store>/sessions/<name>.json``.

    Raises:
        ConfigError: If ``name`` is not 1-64 characters of letters, digits, ``.``, ``_``,
            ``-`` starting with a letter or digit.

    """
    if not _SESSION_NAME.match(name):
        raise ConfigError(
            f"--session {name!r}: expected 1-64 letters, digits, '.', '_' or '-', starting with "
            "a letter or digit"
        )
    return Path(store_root) / SESSIONS_DIR / f"{name}.json"


class Session:
    """A named conversation kept as JSON in the store folder.

    Args:
        path: The session file (see :func:`session_path`).
        turns: Turns so far, oldest first.
        max_turns: Turns kept; older ones are dropped on :meth:`append`.

    Example:
        >>> s = Session.load(".proxypointer", "demo")                  # doctest: +SKIP
        >>> s.append(Turn("How long is the notice period?")); s.save()  # doctest: +SKIP

    """

    def __init__(
        self, path: Path, turns: Sequence[Turn] = (), max_turns: int = DEFAULT_MAX_TURNS
    ) -> None:
        if max_turns < 1:
            raise ConfigError(f"max_turns: expected an int >= 1, got {max_turns}")
        self.path = Path(path)
        self.max_turns = max_turns
        self._turns: list[Turn] = list(turns)[-max_turns:]

    @classmethod
    def load(cls, store_root: str | Path, name: str, max_turns: int = DEFAULT_MAX_TURNS) -> Session:
        """Open a session; a new name gives an empty one (nothing is written yet).

        Raises:
            ConfigError: If the name is not allowed (see :func:`session_path`).
            StoreError: If the file exists but cannot be read or is not a session.

        """
        path = session_path(store_root, name)
        if not path.exists():
            return cls(path, (), max_turns)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            turns = [Turn.from_dict(t) for t in data["turns"]]
        except OSError as err:
            raise StoreError(
                f"{path}: cannot read the session ({err.strerror}); check permissions"
            ) from err
        except (ValueError, KeyError, TypeError) as err:
            raise StoreError(
                f"{path}: not a valid session file ({err}); delete it to start over"
            ) from err
        return cls(path, turns, max_turns)

    @property
    def name(self) -> str:
        """The session name (file stem)."""
        return self.path.stem

    @property
    def turns(self) -> tuple[Turn, ...]:
        """Turns so far, oldest first."""
        return tuple(self._turns)

    def append(self, turn: Turn) -> None:
        """Add a turn (in memory; call :meth:`save` to keep it)."""
        self._turns.append(turn)
        del self._turns[: -self.max_turns]

    def clear(self) -> None:
        """Forget every turn (in memory; call :meth:`save` to keep that)."""
        self._turns.clear()

    def save(self) -> None:
        """Write the session atomically (temporary file, then rename).

        Raises:
            StoreError: If the file cannot be written.

        """
        tmp = self.path.with_suffix(".json.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(
                json.dumps(
                    {"turns": [t.to_dict() for t in self._turns]}, indent=2, ensure_ascii=False
                ),
                encoding="utf-8",
            )
            os.replace(tmp, self.path)
        except OSError as err:
            raise StoreError(
                f"{self.path}: cannot write the session ({err.strerror}); check permissions"
            ) from err


class ConversationRetriever:
    """A layer over a :class:`~proxypointer.retrieve.retriever.Retriever` for conversations.

    A follow-up is searched together with the previous question and the breadcrumbs of the
    sections it used (:func:`contextual_query`); any other question as it is.

    Args:
        retriever: Where sections come from.
        max_breadcrumbs: Breadcrumbs of the previous turn added to a follow-up's query.

    Example:
        >>> chat = ConversationRetriever(Retriever(index))                      # doctest: +SKIP
        >>> first = chat.retrieve("Who is eligible for parental leave?", k=3)
        >>> turn = Turn("Who is eligible for parental leave?", breadcrumbs=tuple(s.breadcrumb for s in first))
        >>> chat.retrieve("and how is it paid?", [turn], k=3)
    """

    def __init__(self, retriever: Retriever, max_breadcrumbs: int = 1) -> None:
        if max_breadcrumbs < 0:
            raise ConfigError(f"max_breadcrumbs: expected an int >= 0, got {max_breadcrumbs}")
        self.retriever = retriever
        self.max_breadcrumbs = max_breadcrumbs

    def query_for(self, question: str, history: Sequence[Turn | str] = ()) -> str:
        """Build the text searched for ``question`` after ``history`` (see :func:`contextual_query`)."""
        return contextual_query(question, history, max_breadcrumbs=self.max_breadcrumbs)

    def retrieve(
        self,
        question: str,
        history: Sequence[Turn | str] = (),
        k: int | None = None,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
    ) -> list[Section]:
        """Find the ``k`` best sections for a question asked after ``history``.

        Args:
            question: The new question.
            history: Earlier turns, oldest first (a string is a bare question).
            k: Sections wanted (default ``retrieval.k``).
            where: Extra metadata filter.
            doc_ids: Only search these documents (an empty list: none).
            source_prefix: Only search documents whose doc_id starts with this prefix.

        Returns:
            As :meth:`Retriever.retrieve` for the query of :meth:`query_for`.
        """
        query = self.query_for(question, history)
        return self.retriever.retrieve(query, k, where, doc_ids=doc_ids, source_prefix=source_prefix)

"""Query text: the sentences of a one-line query, and the question a focus ranking searches.

:func:`focus_sentence` is what :meth:`~proxypointer.retrieve.ranking.Ranker.focus` searches alone inside
the document a query names ("<paper title>. What dataset do they use?" -> "What dataset do they
use?"); the rules and where they were measured are in its docstring and docs/evaluation.md,
focus round. Nothing here imports anything heavy.
"""

from __future__ import annotations

import re

__all__ = ["ABBREVIATIONS", "focus_sentence", "sentences"]

_SENTENCE_END = re.compile(r"[.?!]+(?=\s+\S)")

#: Words that end in a period without ending a sentence (lower case, the period left out);
#: besides these, a word with a period inside ("U.S.", "e.g.", "2.4.") or a single letter
#: ("J. Smith") ends none.
ABBREVIATIONS = frozenset(
    "al approx art ch co corp dept dr eq eqs etc fig figs inc jr ltd mr mrs ms no nos p pp sec sr st "
    "vol vs v".split()
)


def sentences(text: str) -> list[str]:
    """Split one line of text into sentences.

    A sentence ends at ``.``, ``?`` or ``!`` followed by white space, except at the period of
    an abbreviation (:data:`ABBREVIATIONS`, a word with a period inside, a single letter) and
    at an ellipsis.

    Returns:
        The sentences, stripped, in order; none empty.
    """
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group().startswith(".."):  # an ellipsis
            continue
        if m.group().endswith("."):
            before = text[start : m.start()].split()
            word = before[-1].lstrip("\"'([{").lower() if before else ""
            if "." in word or len(word) == 1 or word in ABBREVIATIONS:
                continue
        out.append(text[start : m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [x for x in out if x]


def focus_sentence(query: str, min_words: int = 2) -> str:
    """Return the question sentence of a query of several sentences.

    What :meth:`~proxypointer.retrieve.ranking.Ranker.focus` searches alone. Sentences are those of
    :func:`sentences` (``"U.S."``, ``"e.g."`` and an ellipsis end none); a sentence of fewer
    than ``min_words`` words (white-space separated) is joined to the one after it (the last
    one to the one before it). Only a one-line query is split: the lines of a longer one are
    not sentences of one question (a follow-up with its previous turn,
    ``conversation.contextual_query``, or a question after a pasted text: see
    :meth:`~proxypointer.retrieve.ranking.Ranker.query_vectors`).

    Args:
        query: The query text.
        min_words: Fewest words of a sentence of its own.

    Returns:
        The last sentence when it is a question (ends in ``?``) and follows at least one other;
        ``""`` otherwise: a one-sentence query, a query of more than one line, or one whose
        question comes first and is followed by what defines it ("What was the quick ratio?
        Define it as current assets minus inventories, divided by current liabilities.": the
        sentence after the question names the statement to read, and focusing on the
        question alone ranked the income statement first; FinanceBench phrases 22 of 43
        questions that way).
    """
    if "\n" in query.strip():
        return ""
    out: list[str] = []
    for part in sentences(query.strip()):
        if out and len(out[-1].split()) < min_words:
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    if len(out) > 1 and len(out[-1].split()) < min_words:
        out[-2:] = [f"{out[-2]} {out[-1]}"]
    if len(out) < 2:
        return ""
    return out[-1] if out[-1].endswith("?") else ""

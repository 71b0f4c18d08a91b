"""Words of lexical search: query terms, the title field of a section, the words of a document's name.

Both lexical indexes of the registry (chunks and section titles, SQLite FTS5) read what is
written here: :func:`lexical_terms` turns a query into the words any of which may match;
:func:`title_field` turns a section's title path into the text its title row indexes. FTS5's
own tokenizer (``porter unicode61``, :data:`~proxypointer.store.fts.LEXICAL_TOKENIZER`) then
folds case and diacritics and stems both sides alike. Nothing here imports anything heavy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..tree.titles import plain_title

__all__ = [
    "MAX_LEXICAL_TERMS", "QUESTION_WORDS", "STOPWORDS", "fold_word", "lexical_terms", "name_query_words", "name_words",
    "title_answers", "title_field", "words",
]

#: Words left out of lexical queries and title fields: Lucene's English stop set (the same 33
#: words as bm25s's ``STOPWORDS_EN``, which the in-memory index used before FTS5).
STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split()
)

#: Most distinct terms of one lexical query (the last ones are kept: a question pasted after a
#: long preamble ends the query); keeps an FTS5 ``OR`` query over a pasted page bounded.
MAX_LEXICAL_TERMS = 64

_WORD = re.compile(r"(?u)\b\w\w+\b")


def words(text: str) -> list[str]:
    """Lower-cased words of two or more word characters, stop words removed, in text order."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def lexical_terms(query: str, max_terms: int = MAX_LEXICAL_TERMS) -> list[str]:
    """Distinct lower-cased words of two or more characters, stop words removed, in query order.

    The registry quotes each one for FTS5 (:meth:`~proxypointer.store.chunkindex.ChunkTextIndex.search`),
    so operators (``AND``, ``NEAR``), column filters and ``*`` in a query are plain words.

    Args:
        query: The query text.
        max_terms: Most terms kept; the last ones win.

    Returns:
        The terms, at most ``max_terms``.
    """
    terms = list(dict.fromkeys(words(query)))
    return terms[-max_terms:]


def title_field(title_path: Iterable[str]) -> str:
    """Make the text a section's title row indexes: the words of its title path.

    Each title is reduced to its plain text (:func:`~proxypointer.tree.titles.plain_title`: markup,
    HTML tags and entities, attribute lists removed), then to its words as a query is
    (:func:`words`: lower case, two or more characters, no stop words), so that a section's
    BM25 length counts only words a query can match. Leading numbering of two or more digits
    stays (``Note 14`` keeps ``14``); stemming is left to the FTS5 tokenizer.

    Args:
        title_path: Titles from the outermost heading down to the section (the document's
            own display title is not part of it unless it is a heading).

    Returns:
        The words, space-separated; ``""`` when no title has a word.

    Example:
        >>> title_field(["ITEM 8. FINANCIAL STATEMENTS", "**Consolidated Balance Sheets**"])
        'item financial statements consolidated balance sheets'
    """
    return " ".join(w for t in title_path for w in words(plain_title(t)))


#: Words of how a question is asked, not of what it is about: they never make a title answer it.
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how do does did can could would should may might has have had "
    "were been being".split()
)


def fold_word(word: str) -> str:
    """Remove a plural or third-person ``s`` from a word (``means`` -> ``mean``; 4+ letters only)."""
    return word[:-1] if len(word) >= 4 and word.endswith("s") and not word.endswith("ss") else word


def title_answers(query: str, title: str) -> bool:
    """Tell whether a section's own title states an answer to the query: its subject and more.

    True when the title shares at least two words with the query and has at least one word the
    query lacks (:func:`words` on both sides, question words such as *what* and *does* left
    out, a final ``s`` folded). A heading-only section whose title says something about what is
    asked ("Error E42 means the coolant pump has failed" for "what does error E42 mean") is
    evidence (issue 32); a title that only repeats words of the query ("Empty Section" for
    "... empty section ...") or shares one word ("Network") adds nothing to read, and its
    breadcrumb-only chunk matches any query naming its document (shared case 11).

    Args:
        query: The query text (title routing may have removed a document title it names).
        title: The section's own title, not its breadcrumb.

    Example:
        >>> title_answers("what does error E42 mean", "Error E42 means the coolant pump has failed")
        True
        >>> title_answers("network changelog empty section: how do I install it?", "Empty Section")
        False
    """
    asked = {fold_word(w) for w in words(query) if w not in QUESTION_WORDS}
    named = {fold_word(w) for w in words(plain_title(title)) if w not in QUESTION_WORDS}
    return len(asked & named) >= 2 and bool(named - asked)


_NAME_PART = re.compile(r"[^\W_]+")
_LETTERS_DIGITS = re.compile(r"[^\W\d_]+|\d+")


def name_words(text: str) -> list[str]:
    """Words of a document's name (file name and title) for title routing.

    As :func:`words`, and a word is also split at underscores and between
    letters and digits, keeping the whole: ``CVSHEALTH_2022_10K`` -> ``cvshealth``, ``2022``,
    ``10k``, ``10``; ``FY2022`` -> ``fy2022``, ``fy``, ``2022`` (a fiscal year named in a
    question meets the year in a file name).

    Example:
        >>> name_words("LOCKHEEDMARTIN_2021_10K Annual Report")
        ['lockheedmartin', '2021', '10k', '10', 'annual', 'report']

    """
    out: list[str] = []
    for part in _NAME_PART.findall(text.lower()):
        for w in dict.fromkeys((part, *_LETTERS_DIGITS.findall(part))):  # the whole, then its pieces
            if len(w) >= 2 and w not in STOPWORDS:
                out.append(w)
    return out


def name_query_words(query: str) -> list[str]:
    """Words of a query for title routing: its name words and its words glued as file names glue them.

    :func:`name_words`, then each run of 2 or 3 of its words written together ("Lockheed
    Martin" -> ``lockheedmartin``, "American Water Works" -> ``americanwaterworks``).

    Example:
        >>> name_query_words("CVS Health FY2022")
        ['cvs', 'health', 'fy2022', 'fy', '2022', 'cvshealth', 'healthfy2022', 'cvshealthfy2022']

    """
    found = name_words(query)
    plain = [w for w in _NAME_PART.findall(query.lower()) if len(w) >= 2]
    glued = ["".join(plain[i : i + n]) for n in (2, 3) for i in range(len(plain) - n + 1)]
    return found + [g for g in glued if g not in found]

"""Which sections of a filing are appended exhibits that only a question about them should reach.

A 10-K, 10-Q or 8-K appends its exhibits after its own text (the tree makes each ``Exhibit N``
heading after the first item a top-level section: :func:`~proxypointer.tree.headings.filing_structure`).
Most are legal instruments, consents, certifications and lists whose words (the company's name,
its fiscal year, "litigation", "subsidiaries") match many questions about the business without
answering them: PepsiCo's list of subsidiaries ranked first for "What are the geographies that
PepsiCo primarily operates in?", its certifications for "legal battles" (issue 32). The
exhibits that carry the registrant's own disclosure (an annual report, an earnings release) are
searched like the body.
"""

from __future__ import annotations

import re

from ..store.terms import QUESTION_WORDS, fold_word, name_words, words
from ..tree.build import DocumentTree
from ..tree.titles import exhibit_label, filing_label, plain_title

__all__ = ["DISCLOSURE_EXHIBITS", "asks_for_exhibit", "exhibit_heads", "is_disclosure_exhibit"]

#: Exhibits whose text is the registrant's own disclosure, numbered by Regulation S-K Item 601(b):
#: 13 (annual report to security holders: MD&A, statements and notes), 95 (mine safety
#: disclosures), 96 (technical report summaries) and 99 (additional exhibits: press and earnings
#: releases). Every other number is an instrument, agreement, plan, consent, certification or
#: list (3 articles and bylaws, 4 indentures, 10 material contracts, 21 subsidiaries, 23
#: consents, 31 and 32 certifications, ...).
DISCLOSURE_EXHIBITS = frozenset({"13", "95", "96", "99"})

#: Fewest part or item headings before an exhibit for a document to count as a filing (as
#: :data:`~proxypointer.tree.headings.FILING_MIN_LABELS`; a report's "Exhibit 3" caption is no
#: filing's exhibit).
_MIN_ITEMS = 2

_EXHIBIT_WORD = re.compile(r"\bexhibits?\b", re.IGNORECASE)


def is_disclosure_exhibit(label: str) -> bool:
    """Whether an exhibit label (``"13.1"``, ``"99"``) numbers a disclosure (:data:`DISCLOSURE_EXHIBITS`).

    Example:
        >>> is_disclosure_exhibit("13.1"), is_disclosure_exhibit("21")
        (True, False)
    """
    return label.split(".")[0] in DISCLOSURE_EXHIBITS


def exhibit_heads(tree: DocumentTree) -> dict[str, str]:
    """Map each node inside an appended non-disclosure exhibit to that exhibit's heading node.

    A node is inside an exhibit when it, or an ancestor, is an ``Exhibit N`` heading
    (:func:`~proxypointer.tree.titles.exhibit_label`) that comes after at least two part or
    item headings of the document (a filing's body), and ``N`` is not a disclosure
    (:func:`is_disclosure_exhibit`).

    Args:
        tree: A document's skeleton tree (nodes in document order).

    Returns:
        ``node_id -> node_id`` of the exhibit heading (the heading maps to itself); empty for a
        document that is no filing.
    """
    items = 0
    heads: dict[str, str] = {}
    for node in tree.nodes:
        if node.kind != "heading":
            continue
        inherited = heads.get(node.parent_id)
        if inherited is not None:
            heads[node.node_id] = inherited
            continue
        label = exhibit_label(node.title)
        if label is not None:
            if items >= _MIN_ITEMS and not is_disclosure_exhibit(label):
                heads[node.node_id] = node.node_id
            continue
        kind = filing_label(node.title)
        if kind is not None and kind[0] in ("part", "item"):
            items += 1
    return heads


#: Words of an exhibit's title that say nothing of its subject: the label, the company's legal
#: form and the filing's dates ("EXHIBIT 21 PEPSICO, INC. SUBSIDIARIES (as of December 31, 2022)",
#: "Subsidiaries of the Registrant"). The document's own name words are left out too.
_NOT_SUBJECT = frozenset(
    "exhibit exhibits inc incorporated corp corporation company companies co ltd llc plc lp group holdings "
    "registrant annual quarterly report form fiscal year quarter ended dated january february march april "
    "may june july august september october november december".split()
)


def _subject_words(text: str, names: frozenset[str]) -> set[str]:
    """Folded words of ``text`` that can name a subject: no question word, number, date or name word."""
    out = set()
    for w in words(plain_title(text)):
        if w in QUESTION_WORDS or w in _NOT_SUBJECT or len(w) < 3 or any(c.isdigit() for c in w):
            continue
        w = w[:-3] + "y" if len(w) > 4 and w.endswith("ies") else w  # subsidiaries -> subsidiary
        if w not in names:
            out.add(fold_word(w))
    return out


def asks_for_exhibit(query: str, exhibit_title: str, title: str, doc_name: str = "") -> bool:
    """Whether a query asks for what an exhibit's section holds.

    True when the query says "exhibit", or shares a subject word with the exhibit's title or
    the section's own title: a word that is not the label, the company's legal form, a date, a
    question word nor a word of the document's name ("Which subsidiaries does the company
    have?" for "Exhibit 21 Subsidiaries of the Registrant"; not "What are the geographies
    PepsiCo operates in?" for "EXHIBIT 21 PEPSICO, INC. SUBSIDIARIES" in PEPSICO_2022_10K).

    Args:
        query: The query searched.
        exhibit_title: The title of the exhibit's heading.
        title: The section's own title.
        doc_name: The document's id and title (their words name the company, not a subject).
    """
    if _EXHIBIT_WORD.search(query):
        return True
    names = frozenset(name_words(doc_name)) if doc_name else frozenset()
    asked = _subject_words(query, names)
    return bool(asked & (_subject_words(exhibit_title, names) | _subject_words(title, names)))

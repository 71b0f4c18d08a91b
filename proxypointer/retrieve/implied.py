"""Sections a question about a filing implies without naming them. No LLM.

Two kinds, both read from the question by rule:

* **financial measures** and the statements their formulas read (:data:`MEASURES`,
  :func:`statements_for_measures`);
* **topics that Form 10-K and 10-Q prescribe a section for** (:data:`TOPICS`,
  :func:`topics_in_query`): litigation is disclosed under "Legal Proceedings" (Regulation S-K
  Item 103; 10-K Item 3, 10-Q Part II Item 1) and in the notes on commitments and
  contingencies (ASC 450); risks under "Risk Factors" (Item 105; 10-K Item 1A); market risk
  under "Quantitative and Qualitative Disclosures About Market Risk" (Item 305; 10-K Item 7A).

Measures
--------

A question about a filing often asks for a measure without naming the statement it comes
from: "Is Verizon a capital-intensive business?" (capital expenditure: the cash flow
statement; property and equipment: the balance sheet), "What is the quick ratio?" (current
assets and liabilities: the balance sheet), "What is the FY2019-FY2020 revenue growth?" (the
income statement). Dense search matches such a question to prose that uses its words (MD&A,
risk factors), seldom to the statement whose rows hold the figures.

:data:`MEASURES` lists the common measures of financial analysis with the statements their
standard definitions read, as textbooks of financial statement analysis give them (e.g. CFA
Institute, *International Financial Statement Analysis*, ch. "Financial Analysis
Techniques": activity, liquidity, solvency and profitability ratios; and the line items that
define each statement under US GAAP / IFRS: ASC 210 balance sheet, ASC 220/225 income
statement, ASC 230 cash flows). It is a list of *kinds* of question about a statement, not of
questions: every entry is a measure any analyst computes, whichever filing is asked about.

Retrieval (:meth:`proxypointer.retrieve.ranking.Ranker.implied_sections`, ``retrieval.implied_rank``)
places the document's own statements and prescribed sections
(:meth:`proxypointer.retrieve.labels.LabelLookup.implied`) among its first sections, so that the rows
with the figures, or the section the form puts the subject in, are delivered whatever words
the question shares with them.
"""

from __future__ import annotations

import re

__all__ = ["IMPLIED_TARGETS", "MEASURES", "TOPICS", "statements_for_measures", "topics_in_query"]

#: Most sections one query implies (a question naming many measures and topics must not push
#: every section its words found out of the first ranks). The dev questions imply at most 2.
IMPLIED_TARGETS = 3

_I, _B, _C = "income", "balance_sheet", "cash_flows"

#: ``(pattern, statement kinds)``: a measure's names (regular expressions, matched
#: case-insensitively at word boundaries) and the statements (:data:`proxypointer.tree.titles.
#: STATEMENT_KINDS`) its standard definition reads, the one holding the numerator first.
MEASURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # liquidity: current assets and liabilities (balance sheet)
    (r"working\s+capital|current\s+ratio|quick\s+ratio|acid[- ]test|cash\s+ratio"
     r"|total\s+current\s+(?:assets|liabilities)", (_B,)),
    # solvency and leverage
    (r"debt[- ]to[- ](?:equity|assets|capital)|debt\s+ratio|leverage\s+ratio|equity\s+multiplier"
     r"|total\s+(?:assets|liabilities)|book\s+value\s+per\s+share", (_B,)),
    (r"interest\s+coverage|times\s+interest\s+earned", (_I,)),
    # activity: a flow of the income statement over a stock of the balance sheet
    (r"(?:inventory|receivables?|payables?|asset|fixed[- ]asset)s?\s+turnover"
     r"|days?\s+(?:inventory|sales|payables?|receivables?)\s+outstanding|\bd[ispo]o\b"
     r"|days\s+(?:of|in)\s+inventory|cash\s+conversion\s+cycle", (_I, _B)),
    (r"return\s+on\s+(?:average\s+)?(?:assets|equity|invested\s+capital|capital\s+employed)"
     r"|\bro(?:a|e|ic|ce)\b", (_I, _B)),
    # profitability: the income statement (not the effective tax rate: filings disclose it,
    # reconciled, in the income taxes note and MD&A)
    (r"(?:gross|operating|ebitda|ebit|net|profit|pre-?tax)\s+(?:profit\s+)?margins?"
     r"|gross\s+profit|operating\s+income|operating\s+profit|\bebit\b"
     r"|earnings\s+per\s+share|\beps\b"
     r"|(?:total\s+)?(?:revenue|net\s+sales|sales)\s+(?:growth|cagr)|\bcagr\b"
     r"|cost\s+of\s+(?:goods\s+sold|sales|revenues?)|\bcogs\b", (_I,)),
    (r"\bebitda\b", (_I, _C)),
    # investment and distribution: the cash flow statement
    (r"capital[- ]intensive|capital\s+intensity|capital\s+expenditures?|\bcapex\b"
     r"|free\s+cash\s+flows?|\bfcf\b|(?:operating|investing|financing)\s+(?:activities|cash\s+flows?)"
     r"|cash\s+(?:flows?\s+)?from\s+(?:operations|operating|investing|financing)"
     r"|cash\s+dividends|dividends\s+paid|(?:share|stock)\s+(?:repurchases|buybacks)"
     r"|depreciation\s+and\s+amortization|\bd\s?&\s?a\b|\bd&amp;a\b", (_C,)),
    (r"capital[- ]intensive|capital\s+intensity", (_B,)),
    (r"(?:dividend\s+)?payout\s+ratio", (_C, _I)),
)

_COMPILED = tuple((re.compile(rf"(?<![\w-])(?:{p})(?![\w-])", re.IGNORECASE), kinds) for p, kinds in MEASURES)


def statements_for_measures(query: str) -> tuple[str, ...]:
    """Financial statements whose rows define the measures a question names.

    Args:
        query: The question.

    Returns:
        Statement kinds (:data:`proxypointer.tree.titles.STATEMENT_KINDS`), each once, in the order
        the measures stand in the question (a measure's own kinds in :data:`MEASURES` order);
        empty when it names none.

    Example:
        >>> statements_for_measures("Is Verizon a capital-intensive business based on FY2022 data?")
        ('cash_flows', 'balance_sheet')
        >>> statements_for_measures("What is the quick ratio of Verizon?")
        ('balance_sheet',)
        >>> statements_for_measures("What drove the risk factors?")
        ()
    """
    found: list[tuple[int, int, str]] = []
    for rank, (pattern, kinds) in enumerate(_COMPILED):
        m = pattern.search(query)
        if m:
            found.extend((m.start(), rank * 10 + i, k) for i, k in enumerate(kinds))
    out: list[str] = []
    for _, _, kind in sorted(found):
        if kind not in out:
            out.append(kind)
    return tuple(out)


#: ``(topic, question pattern, title pattern)``: a subject for which the SEC forms prescribe a
#: section, the words that ask about it (regular expressions, case-insensitive, whole words),
#: and the titles of the sections that hold it (searched in the plain heading title). Sources:
#: Regulation S-K Items 103, 105 and 305 (17 CFR 229.103, .105, .305); ASC 450 (loss
#: contingencies, where notes disclose litigation).
TOPICS: tuple[tuple[str, str, str], ...] = (
    ("legal",
     r"legal\s+(?:battles?|proceedings?|actions?|matters?|disputes?|cases?|challenges?|claims?|issues?)"
     r"|litigations?|lawsuits?|law\s?suits?|class\s+actions?",
     r"legal\s+proceedings|litigation|contingenc"),
    ("risk_factors", r"risk\s+factors", r"risk\s+factors"),
    ("market_risk",
     r"market\s+risks?|interest[- ]rate\s+risks?|(?:foreign\s+)?(?:currency|exchange[- ]rate)\s+risks?",
     r"market\s+risk"),
)

_TOPICS = tuple((key, re.compile(rf"(?<![\w-])(?:{q})(?![\w-])", re.IGNORECASE), re.compile(t, re.IGNORECASE))
                for key, q, t in TOPICS)


def topics_in_query(query: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Topics of :data:`TOPICS` a question asks about, with the title pattern of their sections.

    Args:
        query: The question.

    Returns:
        ``(topic, title pattern)`` pairs in the order the topics stand in the question; empty
        when it asks about none.

    Example:
        >>> [t for t, _ in topics_in_query("Has Pepsico reported any materially important ongoing legal battles?")]
        ['legal']
        >>> topics_in_query("What drove gross margin?")
        ()
    """
    found = []
    for key, ask, title in _TOPICS:
        m = ask.search(query)
        if m:
            found.append((m.start(), key, title))
    return tuple((key, title) for _, key, title in sorted(found))

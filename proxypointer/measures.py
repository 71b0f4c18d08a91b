"""Financial measures a question names, and the financial statements their formulas read.

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

:func:`statements_for_measures` reads them from a question; retrieval
(:meth:`proxypointer.ranking.Ranker.measure_statements`) then places the document's own
statements among the first hits, below the best ones, so that the rows with the figures are
delivered beside the discussion of them.
"""

from __future__ import annotations

import re

__all__ = ["MEASURES", "statements_for_measures"]

_I, _B, _C = "income", "balance_sheet", "cash_flows"

#: ``(pattern, statement kinds)``: a measure's names (regular expressions, matched
#: case-insensitively at word boundaries) and the statements (:data:`proxypointer.titles.
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
    # profitability: the income statement
    (r"(?:gross|operating|ebitda|ebit|net|profit|pre-?tax)\s+(?:profit\s+)?margins?"
     r"|gross\s+profit|operating\s+income|operating\s+profit|\bebit\b"
     r"|effective\s+tax\s+rate|earnings\s+per\s+share|\beps\b"
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
        Statement kinds (:data:`proxypointer.titles.STATEMENT_KINDS`), each once, in the order
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

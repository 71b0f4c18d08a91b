"""Questions about the two documents written for the purpose (tests/fixtures), with their sections.

Issue 13's acceptance: with the default configuration, each question returns the right section
first. The questions are worded as users ask them (FinanceBench's style for the ratio), never as
an echo of the heading they should reach. Used by the unit test (hashing embedder) and the
integration test (the real model).
"""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FILING = "harborlight-10k-2023"
REPORT = "water-for-growth-report"

#: ``(question, doc_id, titles ending the breadcrumb of the section that must come first, text its
#: delivery must hold)``.
QUESTIONS = [
    ("What was the largest liability in the balance sheet?", FILING, ("CONSOLIDATED BALANCE SHEETS",),
     "Long-term debt, less current portion"),
    ("What was Harborlight's quick ratio at the end of 2023? Define the quick ratio as total current assets "
     "minus inventories, divided by total current liabilities.", FILING, ("CONSOLIDATED BALANCE SHEETS",),
     "Inventories"),
    ("What is the effective tax rate?", FILING, ("Note 15 - Income Taxes",), "Effective tax rate"),
    ("What does Note 14 say about debt?", FILING, ("Note 14 - Debt",), "Long-term debt, less current portion"),
    ("What does Item 7A say about interest rate risk?", FILING,
     ("ITEM 7A. QUANTITATIVE AND QUALITATIVE DISCLOSURES ABOUT MARKET RISK",), "Interest rate risk"),
    ("What are the main risk factors for the business?", FILING, ("ITEM 1A. RISK FACTORS",), ""),
    ("How much cash did operating activities provide according to the cash flow statement?", FILING,
     ("CONSOLIDATED STATEMENTS OF CASH FLOWS",), ""),
    ("What was net income in the income statement?", FILING, ("CONSOLIDATED STATEMENTS OF OPERATIONS",), "Net income"),
    # statements named by another of their names (FinanceBench's wording)
    ("Basing your judgment on the statement of financial position, what is the working capital?", FILING,
     ("CONSOLIDATED BALANCE SHEETS",), "Total current liabilities"),
    ("Using the P&L statement, what were restructuring charges in 2023?", FILING,
     ("CONSOLIDATED STATEMENTS OF OPERATIONS",), "Restructuring charges"),
    ("What does Item 7 discuss?", FILING,
     ("ITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF OPERATIONS",), ""),
    ("What are the questions answered by chapter 2?", REPORT,
     ("Chapter 2. Irrigation and Agricultural Productivity", "Questions this chapter answers"), ""),
    ("What does box 1.1 explain?", REPORT, ("Box 1.1 Measuring Water Stress",), ""),
    ("Which studies are listed in annex table A2.1.1?", REPORT,
     ("Annex Table A2.1.1 Studies Included in the Review",), ""),
]


def fixture_paths() -> list[Path]:
    """The two documents."""
    return [FIXTURES / f"{FILING}.md", FIXTURES / f"{REPORT}.md"]

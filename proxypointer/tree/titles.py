r"""Heading titles: the one place for title normalisation, numbering and noise rules.

Display titles keep inline markup as written (the bug cases' convention); only a trailing
attribute list (``{#id .class}``, shared case 40) is dropped from them. Comparisons go
through normalised forms:

* :func:`plain_title`: inline markup, HTML tags and entities, and an attribute list removed;
  whitespace collapsed. The base of the other forms.
* :func:`normalise_title`: also leading numbering, case and trailing punctuation removed; the
  key of noise matching (``Contents``, ``References``, shared case 29).
* :func:`title_words`: the lower-case words of a title without leading numbering, for loose
  matching of quoted titles (``Section "Data collection"``).

Numbering rules read labels such as ``3.1.2``, ``Item 7A``, ``Part II``, ``Note 14``,
``Article IV`` or ``Section 2.03`` (:func:`numbering_depth`, :func:`filing_label`,
:func:`normalise_label`, roman numerals); :func:`is_row_or_furniture` tells table rows and
page furniture that a converter wrote as headings; :func:`is_title_line` tells a plain line that
reads like a title a converter left without ``#`` (a statement title). This module imports
nothing of ours.
"""

from __future__ import annotations

import html
import re

__all__ = [
    "EXHIBIT_TITLE_MAX_WORDS",
    "NUMBERED_TITLE",
    "ROMAN_DIGITS",
    "ROMAN_OR_LETTER",
    "SIGNATURE",
    "TITLE_LINE_BAD_CHARS",
    "TITLE_LINE_BAD_END",
    "TITLE_LINE_BAD_START",
    "TITLE_LINE_MAX_CHARS",
    "TITLE_LINE_MAX_WORDS",
    "arabic_to_roman",
    "ends_in_folio",
    "exhibit_label",
    "filing_label",
    "heading_title",
    "html_title",
    "is_noise_title",
    "is_row_or_furniture",
    "is_title_line",
    "normalise_label",
    "normalise_title",
    "numbered_line_depth",
    "numbering_depth",
    "plain_title",
    "roman_to_arabic",
    "statement_kind",
    "strip_attribute_list",
    "title_words",
]

# -- display titles ------------------------------------------------------------------------------
# A trailing attribute list as Pandoc, kramdown, Python-Markdown's attr_list, Quarto and
# markdown-it-attrs write it: "{#id}", "{.class}", "{#id .c key=v}", "{: #id}" (kramdown's
# colon), "{-}" (Pandoc's "unnumbered"). Content must start with "#", "." or ":" (or be "-")
# so that "## Use {braces} here" keeps its text (shared case 40).
_ATTRIBUTE_LIST = re.compile(r"[ \t]*\{[ \t]*(?:[#.:][^{}\n]*|-)\}[ \t]*$")


def strip_attribute_list(title: str) -> str:
    """Drop trailing attribute lists (``{#refs}``, ``{: #reqs .important }``) from a title.

    Args:
        title: Heading text.

    Returns:
        The title without the lists and the spaces before them (``""`` when nothing else is
        left); unchanged when the braces do not start with ``#``, ``.`` or ``:`` (and are
        not ``{-}``).

    Example:
        >>> strip_attribute_list("References {#refs}"), strip_attribute_list("Use {braces}")
        ('References', 'Use {braces}')

    """
    while title.endswith("}"):
        stripped = _ATTRIBUTE_LIST.sub("", title)
        if stripped == title:
            break
        title = stripped
    return title


def heading_title(content: str) -> str:
    r"""Display title of a heading from its raw inline content.

    Args:
        content: The heading's text without ATX markers (markdown-it's inline content);
            a setext heading's lines are joined by ``\n``.

    Returns:
        Lines joined by single spaces, outer whitespace stripped, a trailing attribute list
        dropped (:func:`strip_attribute_list`); inline markup kept as written.

    """
    title = " ".join(part.strip() for part in content.split("\n")).strip()
    return strip_attribute_list(title)


_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][^<>]*>", re.DOTALL)


def html_title(inner_html: str) -> str:
    """Title of an ``<hN>`` element from its inner HTML.

    Returns:
        Tags removed, entities decoded (``&amp;`` -> ``&``), whitespace collapsed.

    Example:
        >>> html_title("A &amp; <em>B</em>")
        'A & B'

    """
    return " ".join(html.unescape(_TAG.sub("", inner_html)).split())


# -- comparison forms ----------------------------------------------------------------------------
# Emphasis and code markers, link brackets with their destination, HTML comments and tags.
_MARKUP = re.compile(r"[*_`~]+|\]\([^)]*\)|[\[\]]|<!--.*?-->|</?[A-Za-z][^<>]*>", re.DOTALL)
_SPACES = re.compile(r"\s+")


def plain_title(title: str) -> str:
    """Strip a title of markup, for comparisons and label parsing.

    Args:
        title: Heading text as written.

    Returns:
        The text with a trailing attribute list, emphasis and code markers (``*``, ``_``,
        backticks, ``~``), link brackets and destinations (``[text](url)`` -> ``text``) and
        HTML tags and comments removed, entities decoded, whitespace collapsed and stripped.
        Case is kept.

    Example:
        >>> plain_title("**R&amp;D** [costs](#c) {#rd}")
        'R&D costs'

    """
    text = _MARKUP.sub("", strip_attribute_list(title))
    if "&" in text:
        text = html.unescape(text)
    return _SPACES.sub(" ", text).strip()


# Leading numbering dropped by normalise_title: "9", "2.1", "3.", "IV.", "A." (shared case 29).
_NOISE_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[ivxlcdm]+\.|[a-z]\.)\s+", re.IGNORECASE)


def normalise_title(title: str) -> str:
    """Normalise a heading title for noise matching (shared case 29).

    Takes :func:`plain_title`, then drops a leading section number (``9``, ``2.1``, ``3.``,
    ``IV.``, ``A.``), case (casefold) and trailing punctuation (`` .:;,-``).

    Example:
        >>> normalise_title("9. **REFERENCES**:"), normalise_title("References {#refs}")
        ('references', 'references')

    """
    text = _NOISE_NUMBER.sub("", plain_title(title))
    return text.casefold().rstrip(" .:;,-").strip()


def is_noise_title(title: str, noise_titles: tuple[str, ...] | list[str]) -> bool:
    """Tell whether a title *equals* one of ``noise_titles`` after :func:`normalise_title`.

    Never a substring match: ``References and notes`` is not ``References``.
    """
    return normalise_title(title) in {normalise_title(n) for n in noise_titles}


#: A heading numbered without a kind word: ``2.4 Results``, ``14. Debt``, ``IV) Scope``,
#: ``G: Tables``; group ``label`` holds the number (arabic, roman or one capital letter).
NUMBERED_TITLE = re.compile(r"^(?P<label>\d+(?:\.\d+)*|[IVXLC]{1,7}|[A-Z])(?:[.):]\s*|\s+)(?=\S)")
#: A label that is a roman numeral or a single capital letter (``IV``, ``G``).
ROMAN_OR_LETTER = re.compile(r"^(?:[IVXLC]{1,7}|[A-Z])$")
_WORD = re.compile(r"[a-z0-9]+")


def title_words(title: str) -> str:
    """Lower-case words of a title without its leading arabic numbering, space-joined.

    For loose title lookups (``Section "Data Collection"`` finds ``3.2 Data collection``):
    :func:`plain_title`, a leading arabic label (``3.2``, ``14.``) dropped (a roman or letter
    label is kept: ``A Study`` starts with a word), then the runs of ``[a-z0-9]``.

    Example:
        >>> title_words("3.2 Data *collection*: setup")
        'data collection setup'

    """
    text = plain_title(title)
    m = NUMBERED_TITLE.match(text)
    if m and not ROMAN_OR_LETTER.match(m.group("label")):
        text = text[m.end() :]
    return " ".join(_WORD.findall(text.lower()))


# -- labels and numbering ------------------------------------------------------------------------
def normalise_label(label: str) -> str:
    """Canonical form of a label: upper case, parts joined by ``.``, leading zeros dropped.

    ``2.04`` and ``2.4`` are the same label; ``A-1`` is ``A.1``; ``a2.1.1`` is ``A2.1.1``.

    Example:
        >>> normalise_label("2.04"), normalise_label("A-1"), normalise_label("iv")
        ('2.4', 'A.1', 'IV')

    """
    parts = re.split(r"[.\-]", label.strip().rstrip(".").upper())
    return ".".join(p.lstrip("0") or "0" if p.isdigit() else p for p in parts if p)


#: Values of the roman digits used in section labels (``Part IV``, ``Article XII``).
ROMAN_DIGITS = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


def arabic_to_roman(label: str) -> str:
    """``"4"`` -> ``"IV"`` for 1..199; ``""`` for anything else."""
    if not label.isdigit() or not 0 < int(label) < 200:
        return ""
    n, out = int(label), ""
    for v, sym in ((100, "C"), (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"),
                   (4, "IV"), (1, "I")):
        while n >= v:
            out += sym
            n -= v
    return out


def roman_to_arabic(label: str) -> str:
    """``"IV"`` -> ``"4"`` (upper-case, canonical numerals 1..199); ``""`` when not one."""
    if not label or any(ch not in ROMAN_DIGITS for ch in label):
        return ""
    total = 0
    for i, ch in enumerate(label):
        v = ROMAN_DIGITS[ch]
        total += -v if i + 1 < len(label) and ROMAN_DIGITS[label[i + 1]] > v else v
    return str(total) if arabic_to_roman(str(total)) == label else ""


# "3", "3.2.1", "4.1." at the start of a title; at most 3 digits per component, so that a
# year ("2023 Annual report") is not a section number.
# A number followed by a unit is a quantity, not numbering: "12 Weeks Ended" (a column caption of
# a quarterly statement), "3 Months Ended", "5 Years".
_HEADING_NUMBER = re.compile(
    r"^(\d{1,3}(?:\.\d{1,3})*)(?:\.(?:\s+|$)|\s+(?!(?i:weeks?|months?|years?|days?|quarters?|hours?|percent|million"
    r"|billion|thousand)\b)|$)"
)
# "Item 7A", "Part II", "Annex 2.1", "Appendix A.1", "Note 14 -": kind word, label, components.
_LABEL_NUMBER = re.compile(
    r"^(?i:part|chapter|section|article|item|note|annex|appendix|schedule|exhibit)"
    r"\s+(?:\d{1,3}[A-Z]?|[IVXLC]{1,6}|[A-Z])((?:\.\d{1,3})*)\.?(?=\s|$|[:.)\-])"
)


def numbering_depth(title: str) -> int:
    """Depth shown by a heading's numbering, 0 when it carries none.

    Args:
        title: Heading text as written.

    Returns:
        Number of numeric components: ``"3 Results"`` -> 1, ``"3.2.1 Layout"`` -> 3,
        ``"4.1. Setup"`` -> 2, ``"Item 7A"`` -> 1, ``"Annex 2.1"`` -> 2,
        ``"Appendix A.1"`` -> 2; 0 for ``"Results"``, ``"2023 report"`` or a quantity
        (``"12 Weeks Ended"``, ``"3 Months Ended"``). Emphasis around the title
        (``"**ITEM 1.    BUSINESS**"``, as some converters write headings) is looked through.

    """
    m = _HEADING_NUMBER.match(title) or _LABEL_NUMBER.match(title)
    if not m and ("*" in title or "_" in title or "<" in title):
        plain = plain_title(title)  # "**ITEM 1.    BUSINESS**": emphasis around the label
        m = _HEADING_NUMBER.match(plain) or _LABEL_NUMBER.match(plain)
    if not m:
        return 0
    return m.group(1).count(".") + 1


_PLAIN_NUMBERED = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*)\s+\S")
_LETTER = re.compile(r"[^\W\d_]")


def numbered_line_depth(line: str) -> int:
    """Depth of a plain line that reads like a numbered heading (``1.1 Materials``), else 0.

    Rule (shared case 14): the line starts with a number of 1-3 digit components and a
    space, has at most 8 words, does not end in ``.``, ``:`` or ``;``, and holds a letter
    after the number. Depth = number of components.

    Example:
        >>> numbered_line_depth("2.3.1 Results"), numbered_line_depth("2023 Annual report")
        (3, 0)

    """
    title = line.strip()
    m = _PLAIN_NUMBERED.match(title)
    if not m or len(title.split()) > 8 or title.endswith((".", ":", ";")):
        return 0
    if not _LETTER.search(title[m.end(1) :]):
        return 0
    return m.group(1).count(".") + 1


# -- filings (10-K, 10-Q) --------------------------------------------------------------------------
# Labels of SEC filings as converters write them: "PART II", "Part I – Financial information",
# "ITEM 7.", "Item 7A.", "ITEM 4(a).", "Note 14 – Debt", "NOTE 5 — Accrued Liabilities",
# "Note 1. Description of Business", and the heading of the notes section, "Notes to
# (the) Consolidated Financial Statements" (also Condensed/Combined). Seen in the 29 filings
# of bench/financebench-dev-md (opendataloader-pdf output).
_FILING_PART = re.compile(r"^part\s+(?P<label>[ivx]{1,4}|\d{1,2})(?=$|[\s.:,–—-])", re.IGNORECASE)
_FILING_ITEM = re.compile(r"^item\s+(?P<label>\d{1,2}[a-c]?(?:\([a-z]\))?)(?=$|[\s.:,–—-])", re.IGNORECASE)
_FILING_NOTE = re.compile(r"^note\s+(?P<label>\d{1,2}[a-z]?)(?=$|[\s.:,–—-])", re.IGNORECASE)
# The notes heading, after the company's name when the filing prints it first ("COSTCO WHOLESALE
# CORPORATION NOTES TO CONSOLIDATED FINANCIAL STATEMENTS", as statement titles do): up to 6 words,
# each capitalised or a joining word, never a sentence's start ("See Notes to ...").
_FILING_NOTES = re.compile(
    r"^(?!(?i:see|refer|read|in)\b)(?:(?:[A-Z0-9][\w.,&'’-]*|and|of|&)\s+){0,6}?"
    r"(?i:notes\s+to\s+(?:the\s+)?(?:[\w-]+\s+){0,3}financial\s+statements)\b"
)
# After the notes heading's words, a sentence goes on in lower case ("... are an integral part
# of these statements."); a parenthesis ("(unaudited)", "(in millions)") does not.
_SENTENCE_GOES_ON = re.compile(r"\b[a-z]{2,}")
_PARENTHESES = re.compile(r"\([^()]*\)")
# A table-of-contents line: text, then a page number (1-999) that no kind word labels.
_TOC_FOLIO = re.compile(r"\D\s+\d{1,3}$")
_BARE_LABEL = re.compile(r"^(?:part|item|note|chapter|section|article|schedule|exhibit)\s+\d{1,3}$", re.IGNORECASE)


def ends_in_folio(text: str) -> bool:
    """Tell whether text ends like a line of a table of contents: words, then a page number (1-999).

    A label and its number alone ("Note 14", "ITEM 7") end in no page number.

    Example:
        >>> ends_in_folio("Item 7. Management's Discussion 29"), ends_in_folio("Note 14")
        (True, False)
    """
    return bool(_TOC_FOLIO.search(text)) and not _BARE_LABEL.match(text.strip())
# A financial statement's title ("NIKE, Inc. Consolidated Statements of Income", "Consolidated
# Balance Sheets"), and a heading numbered like a note without the word ("14. Debt").
_FILING_STATEMENTS = re.compile(
    r"\bconsolidated\s+(?:condensed\s+)?(?:statements?\s+of|balance\s+sheets?)\b", re.IGNORECASE
)
_FILING_NUMBERED = re.compile(r"^(?P<label>\d{1,2})\.\s+(?=[A-Z])")


# -- financial statements ------------------------------------------------------------------------
#: Kinds of primary financial statement (:func:`statement_kind`), in the order 10-K filings and
#: IFRS annual reports print them most often.
STATEMENT_KINDS = ("income", "comprehensive_income", "balance_sheet", "cash_flows", "equity")
_STATEMENT_OF = (
    r"(?P<comprehensive>comprehensive\s+(?:income|loss|earnings)(?:\s*\((?:loss|income)\))?"
    r"|(?:income|earnings|loss)\s*(?:\((?:loss|income)\)\s*)?and\s+comprehensive\s+(?:income|loss))"
    r"|(?P<income>(?:income|operations|earnings|(?:net\s+)?loss|profit\s+(?:or|and)\s+loss)"
    r"(?:\s*\((?:loss|income)\))?(?:\s+and\s+comprehensive\s+(?:income|loss)(?:\s*\((?:loss|income)\))?)?)"
    r"|(?P<cash_flows>cash\s+flows?)"
    r"|(?P<balance_sheet>financial\s+(?:position|condition))"
    r"|(?P<equity>(?:changes\s+in\s+)?(?:(?:share|stock)holders|shareowners|members|partners)?['’]?\s*"
    r"(?:equity|deficit)(?:\s*\((?:deficit|equity)\))?)"
)
_STATEMENT_TITLE = re.compile(
    r"(?<![\w-])(?:(?:consolidated|combined|condensed|interim|unaudited|group|company)\s+)*"
    rf"(?:(?P<sheet>balance\s+sheets?)|statements?\s+of\s+(?:consolidated\s+)?(?:{_STATEMENT_OF}))(?![\w-])",
    re.IGNORECASE,
)
# What may follow a statement's name in its title: nothing, a parenthetical ("(In millions)"),
# a colon or dash, or capitalised words (a company name, "For the Years Ended ..."); a
# lower-case word makes it a sentence ("... balance sheets consist of"), and these words make
# it another table or a discussion of the statement.
_STATEMENT_TAIL = re.compile(r"^(?:$|[(:–—-]|[A-Z0-9])")
# The period a heading (not a line of text) may give in lower case after the name: "as of
# December 31, 2022 and 2021", "at June 30", "for the years ended ...", "for the three months ended".
_STATEMENT_PERIOD = re.compile(r"^(?:as\s+(?:of|at)\s|at\s+[A-Z]|for\s+the\s+(?:[\w-]+\s+){0,3}(?:ended|ending)\s)")
_STATEMENT_NOT_BEFORE = frozenset(
    "analysis changes condensed-consolidating consolidating discussion key note notes off review selected summary "
    "supplemental".split()
)
_STATEMENT_NOT_AFTER = frozenset(
    "analysis and components data highlights information items line note notes or schedule summary tax taxes".split()
)


def statement_kind(title: str, *, heading: bool = False) -> str | None:
    """Tell which primary financial statement a heading title names, if any.

    A financial statement's title names the statement, optionally after the company's name and
    before a parenthetical or the company's name: ``Consolidated Balance Sheets``, ``NIKE, Inc.
    Consolidated Statements of Income``, ``CONSOLIDATED STATEMENTS OF OPERATIONS (In thousands,
    except per share data)``, ``Consolidated Statements of Income Corning Incorporated and
    Subsidiary Companies``, ``Consolidated statements of cash flows (unaudited)``, ``Group
    statement of financial position`` (IFRS). A title that discusses a statement is none:
    ``Selected Consolidated balance sheets data``, ``Off-Balance Sheet Arrangements``,
    ``Amounts recognized in the consolidated balance sheets consist of``, ``CONSOLIDATED
    BALANCE SHEETS AND CASH FLOWS ANALYSIS``, ``Notes to Consolidated Financial Statements``.
    The rules come from the statement titles of the 29 filings of
    bench/financebench-dev-md and the IFRS names (IAS 1.10).

    Args:
        title: Heading title as written.
        heading: The title is a heading already (not a line of text that may become one): it
            may also end in its period in lower case, ``Consolidated Balance Sheets as of
            December 31, 2022 and 2021``, ``... for the years ended ...`` (a printed contents'
            entry placed as a heading); a line of text like that may be a sentence.

    Returns:
        One of :data:`STATEMENT_KINDS` (``income`` also for "statements of operations",
        "earnings", "profit or loss", and "income and comprehensive income";
        ``balance_sheet`` also for "financial position/condition"), or None.

    Example:
        >>> statement_kind("NIKE, Inc. Consolidated Statements of Income")
        'income'
        >>> statement_kind("Off-Balance Sheet Arrangements") is None
        True

    """
    text = plain_title(title)
    m = _STATEMENT_TITLE.search(text)
    if m is None or len(text) > 200:
        return None
    head, tail = text[: m.start()].split(), text[m.end() :].strip()
    words = [w.strip(",.()&;").casefold() for w in head]
    # before the name: a company name (capitalised words, "and", "&", "Inc.") and nothing else
    if len(head) > 10 or any(w in _STATEMENT_NOT_BEFORE or any(c.isdigit() for c in w) for w in words):
        return None
    if any(w[:1].islower() and w not in ("and", "&", "&amp;", "of", "de") for w in head):
        return None
    dated = heading and _STATEMENT_PERIOD.match(tail)
    if not (_STATEMENT_TAIL.match(tail) or dated) or tail.isdigit():  # "Consolidated Balance Sheets 45": contents
        return None
    first_tail = tail.split()[0].strip(",.():").casefold() if tail.split() else ""
    if first_tail in _STATEMENT_NOT_AFTER:
        return None
    sheet = m.group("sheet")
    if sheet and not sheet.casefold().endswith("s") and m.group(0).casefold().startswith("balance") and (head or tail):
        return None  # "BALANCE SHEET LOCATION" (a column header): singular, unqualified, not alone
    for kind in ("sheet", "comprehensive", "income", "cash_flows", "balance_sheet", "equity"):
        if m.group(kind):
            return "balance_sheet" if kind == "sheet" else ("comprehensive_income" if kind == "comprehensive" else kind)
    return None


def filing_label(title: str) -> tuple[str, str] | None:
    """Structural label of a filing heading.

    Args:
        title: Heading text as written.

    Returns:
        ``(kind, label)``, labels upper-case, arabic without leading zeros:

        * ``part`` (label ``II``), ``item`` (``7A``), ``note`` (``14``: ``Note 14 - Debt``);
        * ``notes`` (label ``""``): the heading of the notes to the financial statements,
          after the company's name or not, never a sentence that mentions them ("The Notes
          to Consolidated Financial Statements are an integral part of ...");
        * ``statements`` (``""``): a financial statement's title (``Consolidated Balance
          Sheets``, ``NIKE, Inc. Consolidated Statements of Income``);
        * ``numbered`` (``14``): ``14. Debt``, a note when it follows the statements or the
          notes heading (the caller decides).

        None for any other title, and for a part or item heading that ends in a page number
        (``Part II – Other information Item 1. Legal Proceedings. 191``: a line of the
        table of contents).

    Example:
        >>> filing_label("ITEM 7A. Quantitative"), filing_label("NOTE 14 — Debt")
        (('item', '7A'), ('note', '14'))

    """
    text = plain_title(title)
    notes = _FILING_NOTES.match(text)
    if notes and not _SENTENCE_GOES_ON.search(_PARENTHESES.sub(" ", text[notes.end() :])):
        return "notes", ""
    for kind, pattern in (("part", _FILING_PART), ("item", _FILING_ITEM), ("note", _FILING_NOTE),
                          ("numbered", _FILING_NUMBERED)):
        m = pattern.match(text)
        if m:
            if kind in ("part", "item") and _TOC_FOLIO.search(text[m.end() :]):
                return None
            return kind, normalise_label(m.group("label"))
    if _FILING_STATEMENTS.search(text):
        return "statements", ""
    return None


_FILING_EXHIBIT = re.compile(
    r"^exhibit\s+(?:no\.?\s*)?(?P<label>\d{1,3}(?:\.\d{1,3}){0,2}[a-z]?)(?=$|[\s.:,–—-])", re.IGNORECASE
)
#: Most words after an exhibit's label in its heading ("Exhibit 13.1 Management's Discussion and
#: Analysis of Financial Condition and Results of Operations": 11). More, and the line is a
#: sentence that mentions an exhibit.
EXHIBIT_TITLE_MAX_WORDS = 16


def exhibit_label(title: str) -> str | None:
    """Return the number of an exhibit whose first heading this is, as a filing appends it.

    A 10-K, 10-Q or 8-K carries its exhibits after its own text: agreements, plans, an annual
    report (``Exhibit 13``), the certifications (``Exhibit 31.1``), a press release (``Exhibit
    99.1``). Each opens with its label, alone or before its title.

    Args:
        title: Heading text as written.

    Returns:
        The label (``"10.36"``, ``"99.1"``), or None: for any other title, a contents line
        ending in a page number, a bare ``EXHIBIT`` (an index's column) and a sentence that
        mentions an exhibit (more than :data:`EXHIBIT_TITLE_MAX_WORDS` words after the label,
        or ending in a period after more than three).

    Example:
        >>> exhibit_label("EXHIBIT 10.36"), exhibit_label("Exhibit 13.1 Management's Discussion")
        ('10.36', '13.1')
    """
    text = plain_title(title)
    m = _FILING_EXHIBIT.match(text)
    if m is None:
        return None
    rest = text[m.end():].strip(" .:–—-").split()
    sentence = len(rest) > EXHIBIT_TITLE_MAX_WORDS or (len(rest) > 3 and text.endswith("."))
    if sentence or _TOC_FOLIO.search(text[m.end():]):
        return None
    return m.group("label")


# -- table rows and page furniture ---------------------------------------------------------------
_NUMBER_TOKEN = re.compile(r"^[(\[$€£]*[-–]?\d[\d,]*(?:\.\d+)?%?[)\]]?[,;:.]?$")
_YEAR = re.compile(r"^(?:19|20)\d\d[,;:.]?$")
_SYMBOL_TOKENS = frozenset({"$", "%", "€", "£", "—", "–", "-"})
_PAGE_WORD = re.compile(r"^(?:page(?:\s+\d{1,4}(?:\s+of\s+\d{1,4})?)?|.*\s[Pp]age)$", re.IGNORECASE)
_FOLIO_TAIL = re.compile(r"^(?P<head>.*?\D)\s+\d{1,3}$")
_LABEL_WORD = re.compile(
    r"(?:^|\s)(?:part|chapter|section|article|item|note|annex|appendix|schedule|exhibit|table|"
    r"figure|level|tier|phase|step|rule|form)$",
    re.IGNORECASE,
)


def is_row_or_furniture(title: str) -> bool:
    """Tell whether a heading reads like a table row or page furniture, not a section title.

    PDF converters promote table rows, folios and running headers to headings. The rules
    below come from the headings of the 29 filings of bench/financebench-dev-md
    (opendataloader-pdf 2.5.16), where they match 454 of 5,610 headings (``###### 44``,
    ``###### 4,867,457 $ 133.54``, ``###### RETURN ON INVESTED CAPITAL 48.8 % 21.5 %``,
    ``###### 2021 FORM 10-K 30``, ``###### PAGE``, ``### SIGNATURES 115``). A title is one
    when, after :func:`plain_title` and without its own leading label (``12.``, ``Item 7``,
    ``Note 14``):

    1. it holds no letter (a folio, a year, a row of figures, a phone number); or
    2. it is the word ``Page`` (optionally with a number) or ends in it (a table-of-contents
       column header); or
    3. it is a row of figures: at least one number that is not a year (1900-2099), at least
       two value tokens (numbers other than years, ``$``, ``%``, ``—``), and value tokens
       and years together at least 30% of its words; or
    4. it ends in a page number (1-999) after words without a lower-case letter, or after
       dot leaders, and no kind word (``Item``, ``Note``, ``Level``...) labels that number:
       a running header (``2021 FORM 10-K 30``) or a table-of-contents line
       (``SIGNATURES 115``).

    Args:
        title: Heading text as written.

    Returns:
        True for a row or furniture line. Section titles that mention years or one figure
        (``Fiscal 2018 Compared to Fiscal 2017``, ``$1.5 Billion Share Repurchase``,
        ``Exhibit 10.13.23``, ``Item 6. [Reserved]``) are kept.

    """
    text = plain_title(title)
    if not _LETTER.search(text):
        return True
    if _PAGE_WORD.match(text):
        return True
    m = _HEADING_NUMBER.match(text) or _LABEL_NUMBER.match(text)
    body = text[m.end() :] if m else text
    tokens = body.split()
    if not tokens:
        return False
    numbers = sum(1 for t in tokens if _NUMBER_TOKEN.match(t) and not _YEAR.match(t))
    years = sum(1 for t in tokens if _YEAR.match(t))
    symbols = sum(1 for t in tokens if t in _SYMBOL_TOKENS)
    if numbers >= 1 and numbers + symbols >= 2 and (numbers + symbols + years) >= 0.3 * len(tokens):
        return True
    tail = _FOLIO_TAIL.match(body)
    if tail:
        head = tail.group("head").rstrip(" .")
        dotted = tail.group("head").rstrip().endswith("..")
        if head and not _LABEL_WORD.search(head) and (dotted or not re.search(r"[a-z]", head)):
            return True
    return False


# -- title-like plain lines ----------------------------------------------------------------------
# A token that is a number, a date or a time: "2021", "29,499", "(1.5)", "12%", "5/7/26,", "3:39".
_NUMERIC_WORD = re.compile(r"^[(\[$€£]*[-+–]?\d[\d,.:/-]*%?[)\]]?[,;]?$")
# Text in round brackets, set aside before the word rules: "(In millions, except per share data)".
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)")
# A word group (1-3 words) written twice in a row: "Total Total", "Rank Share Rank Share".
_TANDEM = re.compile(r"(?i)\b(\w+(?:\s+\w+){0,2})\s+\1\b")
#: A signature mark: ``/s/``, ``/ S /``.
SIGNATURE = re.compile(r"/\s*s\s*/", re.IGNORECASE)
#: First characters of lines that are markup, list items, bullets, quotes, notes or footnotes,
#: never a title: markdown (``-*+>|<`#[!\``), bullets converters write as text, ``(1)``.
TITLE_LINE_BAD_START = "-*+>|<`#[!(\\•◦▪●■□–—"
#: Characters of math, code and form placeholders (``\frac{a}{b}``, ``x = 1``, ``[Name]``).
TITLE_LINE_BAD_CHARS = re.compile(r"[\\{}=^\[\]]")
#: Words a title does not end with: articles, conjunctions, prepositions (a line cut in two)
#: and ``Total`` (the last column of a flattened table header, ``Commitment Expiration Total``).
TITLE_LINE_BAD_END = frozenset(
    "a an and as at by for from in into of on or per than the to with total".split()
)
#: Most words (after the parentheticals) of a title line; more is a sentence or a row.
TITLE_LINE_MAX_WORDS = 14
#: Most characters of a title line (after the parentheticals).
TITLE_LINE_MAX_CHARS = 120


def is_title_line(line: str) -> bool:
    r"""Tell whether a plain line reads like a title (a statement or section title).

    PDF converters leave many titles as plain paragraphs (``SQUARE, INC. CONSOLIDATED BALANCE
    SHEETS (In thousands, except share and per share data)``, ``Consolidated Statements of
    Cash Flows (in millions)``). The rules come from the stand-alone plain lines of 24 of the
    29 filings of bench/financebench-dev-md (opendataloader-pdf 2.5.16; the other 5 were kept
    unseen as a check), read for what is a title and what is a sentence, a table row, a
    flattened table header, a signature or a form line. This looks at the line alone; where it
    stands (alone between blank lines, its neighbours, repeats) is the caller's part
    (:mod:`proxypointer.tree.headings`). A line is one when:

    1. it does not start with markup, a bullet or a bracket (:data:`TITLE_LINE_BAD_START`:
       list items, quotes, tables, HTML, ``(1)`` footnotes) and holds no ``/s/`` (a
       signature, :data:`SIGNATURE`) and no ``___`` (a form blank);
    2. it is not a table row or page furniture (:func:`is_row_or_furniture`), counting the
       figures in brackets (``Basic $ (0.50) $ (1.24)``);
    3. without its parentheticals (``(In millions)``) it has 2 to :data:`TITLE_LINE_MAX_WORDS`
       words and at most :data:`TITLE_LINE_MAX_CHARS` characters, does not end in sentence
       punctuation or a dash (``.,;:!?-``: a line cut in two), holds at most one number, date
       or time and does not end in one, does not end in an article, conjunction, preposition
       or ``Total``
       (:data:`TITLE_LINE_BAD_END`), holds none of ``\{}=^[]`` (math, code, form
       placeholders: :data:`TITLE_LINE_BAD_CHARS`) and at most one colon, not after its first
       word (``FHLB: Federal Home Loan Bank``, ``To: ...``, ``Answer: ...`` are fields or
       glossary entries; ``Derivatives and Hedging: Fair Value Hedging`` is a title);
    4. its first character is a capital letter or a digit, and it holds at least two words of
       four or more letters, at least two thirds of them capitalised (title case or capitals:
       ``Consolidated Statements of Operations``, ``CONSOLIDATED BALANCE SHEETS``);
    5. no word group is written twice in a row (``Total Total``, ``Rank Share Rank Share``:
       the repeated columns of a flattened table header).

    Args:
        line: One line of text, as written (markdown markup makes it no title).

    Returns:
        True for a title-like line.

    Example:
        >>> is_title_line("Consolidated Balance Sheets (in millions, except par value)")
        True
        >>> is_title_line("Total current assets 7,761,629 3,219,801"), is_title_line("Net sales:")
        (False, False)

    """
    full = line.strip()
    if not full or full[0] in TITLE_LINE_BAD_START or SIGNATURE.search(full) or "___" in full:
        return False
    text = _PARENTHETICAL.sub("", full).strip()
    words = text.split()
    if not 2 <= len(words) <= TITLE_LINE_MAX_WORDS or len(text) > TITLE_LINE_MAX_CHARS:
        return False
    if text[-1] in ".,;:!?-–—" or TITLE_LINE_BAD_CHARS.search(text):
        return False
    colon = text.find(":")
    if colon >= 0 and (text.count(":") > 1 or " " not in text[:colon]):
        return False
    if sum(1 for w in words if _NUMERIC_WORD.match(w)) > 1 or _NUMERIC_WORD.match(words[-1]):
        return False
    if words[-1].casefold() in TITLE_LINE_BAD_END:
        return False
    if not (text[0].isupper() or text[0].isdigit()):
        return False
    long_words = [w.strip("()[]“”\"'‘’,:") for w in words]
    long_words = [w for w in long_words if len(w) >= 4 and w[0].isalpha()]
    if len(long_words) < 2 or 3 * sum(1 for w in long_words if w[0].isupper()) < 2 * len(long_words):
        return False
    if _TANDEM.search(text):
        return False
    return not (is_row_or_furniture(full) or is_row_or_furniture(text))

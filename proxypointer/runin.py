"""Titles a converter ran into the paragraph before them, put back on a line of their own.

Where a heading sits close under the last line of a paragraph, opendataloader-pdf often
writes the two as one paragraph: CVS Health's 2022 10-K has, on page 172,

    ... liability was immaterial at both December 31, 2022 and 2021. Litigation and Regulatory Proceedings

and the litigation that the notes discuss over the next two pages has no section of its own.
:func:`split_run_in_titles` ends such a line after its last sentence and writes the title on
a line of its own, after a blank line, where the tree's ``title_lines`` rule finds it like any
other stand-alone title (:func:`proxypointer.titles.is_title_line`). A line qualifies when it
is a plain paragraph line (no heading, list, quote, table, HTML or page-marker line, not in
code), its text before the title holds at least :data:`RUN_IN_MIN_SENTENCE_WORDS` words and ends
a sentence (``.``, ``?`` or ``!``, after a lower-case letter, a digit or a closing bracket or
quote, not after an abbreviation such as ``Inc.``), and the rest is a title of at most
:data:`RUN_IN_MAX_TITLE_WORDS` words that :func:`~proxypointer.titles.is_title_line` accepts.

Read on the converted dev filings (financebench-dev, 29 PDFs): most such endings are section
titles ("Loss Contingencies", "Changes in Internal Control Over Financial Reporting",
"Interest Rate Risk"); the rest are place names after an auditor's signature ("New York, New
York") and rows of a subsidiaries exhibit, where a heading costs little.

This module knows lines of text and titles; nothing of trees or PDFs.
"""

from __future__ import annotations

import logging
import re

from .titles import is_title_line

__all__ = ["RUN_IN_MAX_TITLE_WORDS", "RUN_IN_MIN_SENTENCE_WORDS", "split_run_in_titles"]

logger = logging.getLogger(__name__)

#: Most words of a title run into the end of a paragraph (a longer tail is a sentence).
RUN_IN_MAX_TITLE_WORDS = 12
#: Fewest words before the title: a paragraph, not a label or a heading of its own.
RUN_IN_MIN_SENTENCE_WORDS = 6
_RUN_IN = re.compile(r"^(?P<body>.*[a-z0-9%)\]”\"’'][.?!][”\"’']?)\s+(?P<title>[A-Z][^.!?]*)$")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:#|[-*+]\s|\d{1,3}[.)]\s|>|\||<|```|~~~|\$\$)")
_ABBREVIATION = re.compile(r"(?:^|\s)(?:inc|corp|co|ltd|plc|llc|no|nos|vs|etc|[a-z])\.[”\"’']?$", re.IGNORECASE)


def split_run_in_titles(lines: list[str]) -> tuple[list[str], int]:
    """Put titles run into the end of a paragraph on a line of their own (module docstring).

    Args:
        lines: Lines of converted markdown (``tree.split_lines``), line ends removed.

    Returns:
        ``(lines, split)``: the new lines (each split line becomes the sentence, a blank line
        and the title) and how many lines were split. Every other line is kept as it was.
    """
    out: list[str] = []
    fence = ""
    split = 0
    for line in lines:
        s = line.strip()
        if fence:
            fence = "" if s.startswith(fence) else fence
            out.append(line)
            continue
        if s.startswith(("```", "~~~")):
            fence = s[:3]
            out.append(line)
            continue
        m = _RUN_IN.match(s) if s and not _NOT_PARAGRAPH.match(line) else None
        if m is not None:
            body, title = m.group("body"), m.group("title").strip()
            if (len(body.split()) >= RUN_IN_MIN_SENTENCE_WORDS and len(title.split()) <= RUN_IN_MAX_TITLE_WORDS
                    and not _ABBREVIATION.search(body) and is_title_line(title)):
                out.extend([body, "", title])
                split += 1
                continue
        out.append(line)
    if split:
        logger.debug("%d titles run into the paragraph before them put on lines of their own", split)
    return out, split

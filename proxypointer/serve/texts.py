"""Texts and trees as requests see them: token budgets at line boundaries, tree nodes, breadcrumbs.

Budgets are in word pieces of the embedding model's tokenizer, without special tokens; texts
are whole stored lines joined with LF.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..retrieve.delivery import fit_window
from ..retrieve.retriever import Section

__all__ = ["budgeted", "breadcrumb", "depths", "fit_lines"]

#: Section fields of ``Section.to_dict()`` left out of search results: the best chunk's text
#: repeats part of ``text``.
_DROPPED_FIELDS = ("chunk_text",)
def depths(nodes: list[dict[str, Any]]) -> dict[str, int]:
    """Return each node's depth: 1 at the top (no parent), the parent's + 1 below.

    Args:
        nodes: Output of :func:`~proxypointer.tree.build.tree_rows` (a parent comes before its children).

    Returns:
        ``node_id -> depth``.
    """
    depth: dict[str, int] = {}
    for n in nodes:
        depth[n["node_id"]] = depth.get(n["parent_id"], 0) + 1 if n["parent_id"] else 1
    return depth


def breadcrumb(doc_title: str, nodes: list[dict[str, Any]], node_id: str) -> list[str]:
    """Return the titles from the document title down to a node.

    The same path a chunk carries with ``chunking.breadcrumb: path`` (the default): the
    document title first unless the top heading already is it; the preamble gives the title.

    Args:
        doc_title: The document's display title (``DocumentRecord.title``).
        nodes: Output of :func:`~proxypointer.tree.build.tree_rows`.
        node_id: The node.

    Returns:
        Titles, outermost first.
    """
    by_id = {n["node_id"]: n for n in nodes}
    path: list[str] = []
    current = by_id.get(node_id)
    if current is not None and current.get("kind") == "preamble":
        return [doc_title]
    while current is not None:
        path.append(current["title"])
        current = by_id.get(current["parent_id"]) if current["parent_id"] else None
    path.reverse()
    return path if path and path[0] == doc_title else [doc_title, *path]


def fit_lines(lines: Sequence[str], budget: int, tokenizer: Any) -> tuple[int, int]:
    """Return how many leading lines fit ``budget`` word pieces together, and their word pieces.

    One count when everything fits; otherwise a binary search over prefixes (the word pieces
    of a prefix never decrease as lines are added), bounded by the first prefix with more
    whitespace-separated words than ``budget`` (each word gives at least one word piece), so
    a long section costs a few counts of about ``budget`` tokens each.

    Args:
        lines: Stored lines (no line ends).
        budget: Word pieces of the embedding model's tokenizer, no special tokens.
        tokenizer: Has ``count(text) -> int``.

    Returns:
        ``(n, tokens)``: the first ``n`` lines joined with LF count ``tokens`` <= ``budget``;
        ``(0, 0)`` when not even the first line fits.
    """
    if not lines or budget <= 0:
        return 0, 0
    total = tokenizer.count("\n".join(lines))
    if total <= budget:
        return len(lines), total
    words = hi = 0
    while hi < len(lines) - 1:
        words += len(lines[hi].split())
        if words > budget:
            break
        hi += 1
    lo, used = 0, 0  # count(lines[:lo]) <= budget; the answer lies in lo..hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        n_tok = tokenizer.count("\n".join(lines[:mid]))
        if n_tok <= budget:
            lo, used = mid, n_tok
        else:
            hi = mid - 1
    return lo, used


def budgeted(section: Section, budget: int, tokenizer: Any) -> tuple[dict[str, Any], int]:
    """Make a search result: ``Section.to_dict()`` with its text cut to ``budget`` word pieces.

    A text that does not fit is cut to the whole lines around the best chunk's lines
    (:func:`~proxypointer.retrieve.delivery.fit_window`): the lines that matched, not the first lines
    (issue 32: a revenue figure 50 lines into a long section was cut off).

    Args:
        section: From ``Retriever.retrieve``.
        budget: Word pieces left for this section's text (<= 0: none).
        tokenizer: Has ``count(text) -> int``.

    Returns:
        ``(result, tokens)``: the dict without ``chunk_text``, ``text`` = the section's
        delivered text (stored lines from ``text_start_line``: the whole section, or for a big
        one its own text, with ``delivery`` and ``outline`` saying so) cut to whole lines
        within ``budget``, ``text_start_line`` and ``text_end_line`` its first and last line,
        with ``tokens``, ``truncated`` (lines of the delivered text were left out, before or
        after) and ``next_start_line`` (the line after ``text_end_line`` when the delivered
        text goes on after it, else None); and the tokens used. With no budget left, ``text``
        is empty and ``text_end_line`` = ``text_start_line - 1``. The outline (titles and
        citations of the children) is structured data and does not count against the budget.
    """
    d = section.to_dict()
    for key in _DROPPED_FIELDS:
        d.pop(key, None)
    lines = section.text.split("\n")
    first = section.text_start_line or section.start_line
    last = section.text_end_line or section.end_line
    if budget <= 0:
        a, b, n_tok = 0, -1, 0
    else:
        n_tok = tokenizer.count(section.text)
        a, b = 0, len(lines) - 1
        if n_tok > budget:
            seed = (section.chunk_start_line - first, section.chunk_end_line - first)
            a, b, n_tok = fit_window(lines, seed, budget, tokenizer)
            if b < a:  # not even the seed's first line fits: nothing, from the top
                a, b, n_tok = 0, -1, 0
    whole = a == 0 and b == len(lines) - 1
    d["text"] = "\n".join(lines[a : b + 1])
    d["text_start_line"] = first + a
    d["text_end_line"] = last if whole else first + b
    d["tokens"] = n_tok
    d["truncated"] = not whole
    d["next_start_line"] = first + b + 1 if not whole and first + b < last else None
    return d, n_tok


def __getattr__(name: str) -> Any:
    if name == "parse_tree":  # the name before the tree's own codec; kept for one release
        import warnings

        from ..tree.build import tree_rows

        warnings.warn("proxypointer.serve.texts.parse_tree is now proxypointer.tree.build.tree_rows; the old "
                      "name works for one release", DeprecationWarning, stacklevel=2)
        return tree_rows
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Tree accuracy: a document's skeleton tree scored against a gold outline.

The gold is an :class:`~proxypointer.tree.outline.Outline` (titles with 1-based PDF pages and
nesting: a PDF's own bookmarks, or an outline written by hand from the printed contents).
Three figures (:class:`TreeScore`):

* **recall**: share of gold entries found as a heading of the tree *on their page*: a heading
  whose title matches (:func:`proxypointer.tree.outline.title_match`) and whose heading line lies on
  the gold page. Entries are placed on headings in order, each heading used once
  (:func:`proxypointer.tree.outline.align_monotone`), so a title repeated elsewhere (a contents
  line, a running header) cannot stand in for the real one.
* **nesting**: among found entries whose gold parent was found too, the share whose parent's
  heading is an ancestor of theirs in the tree.
* **unsupported**: headings of the tree that match no gold entry yet stand where they change
  the gold structure: an ancestor of a found heading (it swallows gold sections: a wrapped
  sentence made a level-1 heading), or no deeper than the found heading before it (it ends
  that gold section early, as a false sibling). Sub-headings nested below a found heading
  are not counted: the gold does not list them.

Pages come from the tree's page map (``page_of(line)``); a tree without pages scores 0 recall
against a paged gold. This module knows nothing of PDFs or converters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..tree.build import DocumentTree, Node
from ..tree.outline import Outline, align_monotone, title_match

__all__ = ["GoldResult", "TreeScore", "score_tree"]


@dataclass(frozen=True, slots=True)
class GoldResult:
    """How one gold entry fared.

    Attributes:
        title: The gold title.
        page: Its 1-based PDF page.
        level: Its gold level (1 = outermost).
        node_id: The tree heading it was found as; ``""`` when not found.
        line: That heading's line (1-based), 0 when not found.
        nested: True/False when the entry and its gold parent were both found (whether the
            parent's heading is an ancestor); None otherwise.
    """

    title: str
    page: int
    level: int
    node_id: str = ""
    line: int = 0
    nested: bool | None = None


@dataclass(frozen=True, slots=True)
class TreeScore:
    """A tree scored against a gold outline (module docstring).

    Attributes:
        gold: Number of gold entries.
        found: Gold entries found as headings on their page.
        nested_checked: Found entries whose gold parent was found too.
        nested_ok: Of those, entries whose parent's heading is their ancestor in the tree.
        headings: Heading nodes of the tree (preamble not counted).
        unsupported: Tree headings that change the gold structure without a gold entry:
            ``(line, title)`` pairs, in line order.
        entries: Per gold entry, in gold order.
    """

    gold: int
    found: int
    nested_checked: int
    nested_ok: int
    headings: int
    unsupported: tuple[tuple[int, str], ...] = ()
    entries: tuple[GoldResult, ...] = field(default=(), repr=False)

    @property
    def recall(self) -> float:
        """Share of gold entries found (1.0 for an empty gold)."""
        return self.found / self.gold if self.gold else 1.0

    @property
    def nesting(self) -> float:
        """Share of checked entries nested right (1.0 when nothing could be checked)."""
        return self.nested_ok / self.nested_checked if self.nested_checked else 1.0

    def missing(self) -> list[GoldResult]:
        """Gold entries not found, in gold order."""
        return [e for e in self.entries if not e.node_id]

    def misnested(self) -> list[GoldResult]:
        """Found entries whose gold parent's heading is not their ancestor."""
        return [e for e in self.entries if e.nested is False]

    def summary(self) -> str:
        """One line: recall, nesting and unsupported headings, with their counts."""
        return (
            f"recall {self.recall:.3f} ({self.found}/{self.gold}), nesting {self.nesting:.3f} "
            f"({self.nested_ok}/{self.nested_checked}), unsupported {len(self.unsupported)} of "
            f"{self.headings} headings"
        )


def _depths(tree: DocumentTree, headings: Sequence[Node]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for n in headings:
        depth[n.node_id] = depth.get(n.parent_id, 0) + 1
    return depth


def score_tree(tree: DocumentTree, page_of: Callable[[int], int], gold: Outline) -> TreeScore:
    """Score a tree against a gold outline (module docstring).

    Args:
        tree: The document's skeleton tree.
        page_of: Page of a 1-based line (:meth:`proxypointer.tree.pages.PageMap.page_of`): a
            1-based PDF page, 0 for a line without one.
        gold: The gold outline; entries with page 0 can never be found.

    Returns:
        The score, with a result per gold entry.
    """
    heads = [n for n in tree.nodes if n.kind == "heading"]
    pages = [page_of(n.start_line) for n in heads]
    by_page: dict[int, list[int]] = {}
    for j, p in enumerate(pages):
        by_page.setdefault(p, []).append(j)

    def matches(i: int) -> list[int]:
        e = gold.entries[i]
        return [j for j in by_page.get(e.page, []) if e.page and title_match(e.title, heads[j].title)]

    slot_of = align_monotone(len(gold.entries), len(heads), matches)
    ancestors = {n.node_id: {a.node_id for a in tree.ancestors(n.node_id)} for n in heads}
    results: list[GoldResult] = []
    checked = ok = 0
    for i, e in enumerate(gold.entries):
        j = slot_of[i]
        if j < 0:
            results.append(GoldResult(e.title, e.page, e.level))
            continue
        nested: bool | None = None
        if e.parent >= 0 and slot_of[e.parent] >= 0:
            nested = heads[slot_of[e.parent]].node_id in ancestors[heads[j].node_id]
            checked += 1
            ok += nested
        results.append(GoldResult(e.title, e.page, e.level, heads[j].node_id, heads[j].start_line, nested))
    matched = {heads[j].node_id for j in slot_of if j >= 0}
    over_found: set[str] = set()
    for node_id in matched:
        over_found |= ancestors[node_id]
    depth = _depths(tree, heads)
    unsupported: list[tuple[int, str]] = []
    last_found_depth = 0
    for n in heads:
        if n.node_id in matched:
            last_found_depth = depth[n.node_id]
            continue
        if n.node_id in over_found or (last_found_depth and depth[n.node_id] <= last_found_depth):
            unsupported.append((n.start_line, n.title))
    return TreeScore(len(gold.entries), sum(1 for j in slot_of if j >= 0), checked, ok, len(heads),
                     tuple(unsupported), tuple(results))

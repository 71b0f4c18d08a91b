"""In-document cross-references: "see Appendix G", "Table 5.3", "Note 14", without an LLM.

Long reports answer many questions by pointing elsewhere. The skeleton tree already knows
every section's title, so a reference is followed by matching its *label* (kind + number,
e.g. ``("table", "A2.1.1")``) against labels taken from

1. heading titles that start with a kind and a number (``ANNEX TABLE A2.1.1 Studies ...``,
   ``Note 14 — Debt``, ``Appendix G: Statistical Tables``, ``Section 2.04 Swing Line Loans``);
2. caption lines in the body text (``Table 5.3: Revenue by segment``), which resolve to the
   section that contains them;
3. headings numbered without a kind word (``2.4 Results``, ``14. Debt``, ``G. Tables``), for
   structural kinds only (section, chapter, note, ...), never for tables or figures.

``Section "Experiments and results"`` (a quoted title) resolves to the heading with that title.
A reference whose label is in no heading and no caption stays unresolved (empty targets).

Nothing here reads Chroma or the embedder: the functions work on a
:class:`~proxypointer.tree.DocumentTree` and the lines it was built from, so retrieval can
rebuild the reference graph from the stored source text in milliseconds.

Lines are 1-based inclusive; columns are 0-based character offsets into the line.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import TreeConfig
from .pages import PageMap, stored_page_map
from .titles import NUMBERED_TITLE as _NUMBERED_TITLE
from .titles import ROMAN_DIGITS as _ROMAN
from .titles import ROMAN_OR_LETTER as _ROMAN_OR_LETTER
from .titles import arabic_to_roman as _arabic_to_roman
from .titles import normalise_label
from .titles import plain_title as _plain
from .titles import roman_to_arabic as _roman_to_arabic
from .titles import title_words as _norm_title
from .tree import DocumentTree, Node, build_tree, split_lines

if TYPE_CHECKING:
    from .context import ContextBlock
    from .retrieval import Retriever, Section

__all__ = [
    "KINDS",
    "DocumentReferences",
    "LabelIndex",
    "Reference",
    "ReferenceFollower",
    "detect_references",
    "find_label_in_query",
    "label_index",
    "normalise_label",
    "reference_graph",
    "reference_graph_json",
    "resolve",
]

logger = logging.getLogger(__name__)

#: Canonical reference kinds.
KINDS = (
    "annex", "appendix", "article", "box", "chapter", "exhibit", "figure", "item", "note", "part",
    "schedule", "section", "table",
)

# Spelling (lower case, as written) -> canonical kind. Abbreviations that double as common
# words (app., tab., ch.) are left out on purpose.
_KIND_WORDS: dict[str, str] = {
    "annex": "annex", "annexes": "annex", "annexe": "annex",
    "appendix": "appendix", "appendices": "appendix", "appendixes": "appendix",
    "article": "article", "articles": "article", "art.": "article",
    "box": "box", "boxes": "box",
    "chapter": "chapter", "chapters": "chapter", "chap.": "chapter",
    "exhibit": "exhibit", "exhibits": "exhibit", "exh.": "exhibit",
    "figure": "figure", "figures": "figure", "fig.": "figure", "figs.": "figure",
    "item": "item", "items": "item",
    "note": "note", "notes": "note",
    "part": "part", "parts": "part",
    "schedule": "schedule", "schedules": "schedule", "sched.": "schedule",
    "section": "section", "sections": "section", "sec.": "section", "sect.": "section",
    "secs.": "section", "§": "section", "§§": "section",
    "table": "table", "tables": "table",
}
_PLURALS = frozenset(
    w for w in _KIND_WORDS if w.endswith(("s", "s.", "§§")) and w not in ("sec.", "sect.", "§")
)

# Kinds whose numbering is hierarchical: "Section 2.19.1" may fall back to "Section 2.19".
_HIERARCHICAL = frozenset({"annex", "appendix", "article", "chapter", "note", "part", "section"})
# Kinds a heading numbered without a kind word ("2.4 Results", "G. Tables") may carry.
_IMPLICIT_NUMERIC = frozenset({"article", "chapter", "item", "note", "part", "section"})
_IMPLICIT_LETTER = frozenset({"annex", "appendix", "exhibit", "schedule"})
# Kinds whose label must start with a digit ("Note I have...", "Item A" are prose).
_DIGIT_ONLY = frozenset({"item", "note"})
# Kinds numbered in either roman or arabic numerals ("Article IV" is "ARTICLE 4").
_ROMAN_KINDS = frozenset({"article", "chapter", "part", "section"})

_KIND_ALT = "|".join(
    re.escape(w) + ("" if w.endswith((".", "§")) else r"\b")
    for w in sorted(_KIND_WORDS, key=len, reverse=True)
)
# Labels: A2.1.1, A-1, 2.3.1, 14, 1A, 5a, IV, G, and qasper's placeholders (TABREF33).
_LABEL = (
    r"(?:(?:TAB|FIG|SEC)REF\d+|UID\d+"
    r"|[A-Z]{1,2}-?\d+(?:[.\-]\d+)*[a-z]?"
    r"|\d+(?:[.\-]\d+)*[A-Za-z]?"
    r"|[IVXLC]{2,7}|[A-Z])"
    r"(?![A-Za-z0-9])"
)
_SEP = r"\s*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|through|to)\s+|&|[–-])\s*"
# Kind words in any case, labels case-sensitive ("Table a" is not a label, "Table A" is).
_REF = re.compile(
    rf"(?<![\w.])(?P<kind>(?i:{_KIND_ALT}))\s*~?\s*(?P<label>{_LABEL})"
    rf"(?P<more>(?:(?i:{_SEP}){_LABEL})*)"
)
_KIND_AT = re.compile(rf"\s*(?P<kind>{_KIND_ALT})\s*", re.IGNORECASE)
_LABEL_RE = re.compile(_LABEL)
_QUOTED = re.compile(
    r"(?<![\w.])(?P<kind>section|chapter|appendix|part|annex)s?\s+[\"“](?P<title>[^\"”\n]{2,100})[\"”]",
    re.IGNORECASE,
)
# Cues that make a lower-case kind word with a letter label a reference ("see appendix b");
# bare prepositions are not enough ("an order from table A, then from table B").
_CUE = re.compile(
    r"(?:\bsee|\brefer\s+to|\bdescribed\s+in|\bshown\s+in|\bgiven\s+in|\blisted\s+in"
    r"|\breported\s+in|\bcf\.?|\(|\[)\s*(?:the\s+)?$",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_LEAD = re.compile(r"^(?:\s|[>*_|#]|<[^>]{1,40}>|\*\*|__)*")
_CAPTION_END = re.compile(r"\s*(?:[:.|—–]|-\s|\)|$)")


@dataclass(frozen=True, slots=True)
class Reference:
    """One cross-reference found in a section's text.

    Attributes:
        source_node_id: Node whose own text holds the reference (``preamble`` before the
            first heading).
        line: Line of the reference, 1-based.
        column: Start of ``text`` in the line, 0-based character offset.
        kind: Canonical kind (see :data:`KINDS`); ``section`` etc. for a quoted title.
        label: The label as written (``A2.1.1``, ``14``, ``G``) or the quoted title.
        text: The matched span as written, e.g. ``Table 5.3`` or ``Sections 2.04 and 2.05``
            (a list yields one Reference per label, all with the same span).
        target_node_ids: Resolved target nodes, best first; empty when unresolved.

    """

    source_node_id: str
    line: int
    column: int
    kind: str
    label: str
    text: str
    target_node_ids: tuple[str, ...] = ()

    @property
    def resolved(self) -> bool:
        """True when at least one target node was found."""
        return bool(self.target_node_ids)


@dataclass(slots=True)
class LabelIndex:
    """Where each label of a document is defined.

    Attributes:
        headings: ``(kind, normalised label) -> node ids`` from heading titles that start with
            a kind word and a label.
        captions: ``(kind, normalised label) -> node ids`` of the sections holding a caption
            line that starts with that kind and label.
        numbered: ``normalised label -> node ids`` of headings numbered without a kind word.
        titles: Normalised heading title (without leading numbering) -> node ids.
        kind_nodes: ``kind -> node ids`` whose title contains the kind word (e.g. a
            ``Notes to the Financial Statements`` heading for ``note``), to break ties
            among numbered headings.
        tree: The tree the index was built from.

    """

    headings: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    captions: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    numbered: dict[str, list[str]] = field(default_factory=dict)
    titles: dict[str, list[str]] = field(default_factory=dict)
    kind_nodes: dict[str, set[str]] = field(default_factory=dict)
    tree: DocumentTree | None = None


def _kind(word: str) -> str | None:
    return _KIND_WORDS.get(word.lower().replace(" ", ""))


def _label_ok(kind: str, label: str) -> bool:
    if kind in _DIGIT_ONLY and not label[:1].isdigit():
        return False
    return True


def _heading_label(title: str) -> tuple[str, str] | None:
    # "ANNEX TABLE A2.1.1 Studies", "Note 14 — Debt", "Appendix G: Tables" -> (kind, label).
    title = _plain(title)
    pos = 0
    kind = None
    while True:
        m = _KIND_AT.match(title, pos)
        if not m:
            break
        kind, pos = _kind(m.group("kind")), m.end()
    if kind is None:
        return None
    m = _LABEL_RE.match(title, pos)
    if not m or not _label_ok(kind, m.group(0)):
        return None
    return kind, normalise_label(m.group(0))


def _caption_label(line: str) -> tuple[str, str] | None:
    # A plain-text caption: "Table 5.3: Revenue", "**Figure 2.** Architecture", "Box 1 — ...".
    lead = _LEAD.match(line)
    rest = line[lead.end() if lead else 0 :]
    m = _REF.match(rest)
    if not m or m.group("more") or m.group("kind").islower():
        return None
    kind = _kind(m.group("kind"))
    label = m.group("label")
    if kind is None or not _label_ok(kind, label) or not _CAPTION_END.match(rest, m.end()):
        return None
    tail = rest[m.end():].lstrip(" *_")
    if tail[:1] in (")",):
        return None
    return kind, normalise_label(label)


def _code_lines(lines: list[str]) -> set[int]:
    # 1-based lines inside fenced code blocks (fences included).
    out: set[int] = set()
    fence = ""
    for i, ln in enumerate(lines, 1):
        m = _FENCE.match(ln)
        if fence:
            out.add(i)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
        elif m:
            fence = m.group(1)
            out.add(i)
    return out


def _owner(tree: DocumentTree) -> list[tuple[int, int, Node]]:
    # (body_start, body_end, node) for every node, the own-text ranges that tile the document.
    return [(n.body_start_line, n.body_end_line, n) for n in tree.nodes]


def label_index(tree: DocumentTree, lines: list[str]) -> LabelIndex:
    """Collect the labels a document defines, from its headings and caption lines.

    Args:
        tree: The document's skeleton tree.
        lines: ``split_lines`` of the text the tree was built from.

    Returns:
        The label index (see :class:`LabelIndex`).

    """
    idx = LabelIndex(tree=tree)
    for n in tree.nodes:
        if n.kind != "heading":
            continue
        hl = _heading_label(n.title)
        if hl:
            idx.headings.setdefault(hl, []).append(n.node_id)
        plain = _plain(n.title)
        m = _NUMBERED_TITLE.match(plain)
        if m and not hl and (m.group(0).rstrip()[-1:] in ".):" or m.group("label")[0].isdigit()):
            idx.numbered.setdefault(normalise_label(m.group("label")), []).append(n.node_id)
        idx.titles.setdefault(_norm_title(n.title), []).append(n.node_id)
        low = plain.lower()
        for word, kind in _KIND_WORDS.items():
            if not word.endswith((".", "§")) and re.search(rf"\b{word}\b", low):
                idx.kind_nodes.setdefault(kind, set()).add(n.node_id)
    code = _code_lines(lines)
    for start, end, n in _owner(tree):
        for i in range(start, min(end, len(lines)) + 1):
            if i in code:
                continue
            cl = _caption_label(lines[i - 1])
            if cl:
                ids = idx.captions.setdefault(cl, [])
                if n.node_id not in ids:
                    ids.append(n.node_id)
    return idx


def _under_kind(idx: LabelIndex, node_id: str, kind: str) -> bool:
    tree = idx.tree
    marks = idx.kind_nodes.get(kind, set())
    if tree is None or not marks:
        return False
    return any(a.node_id in marks for a in tree.ancestors(node_id))


def resolve(kind: str, label: str, index: LabelIndex, *, quoted: bool = False) -> tuple[str, ...]:
    """Find the nodes a reference points to.

    Order of preference: a heading labelled with this kind and label; the sections holding a
    caption with it; a heading numbered with the label but no kind word (structural kinds
    only); for hierarchical kinds (section, note, article, ...), the same steps for the
    parent label (``2.19.1`` -> ``2.19``), one level up at most.

    Args:
        kind: Canonical kind (see :data:`KINDS`).
        label: The label as written (any case, ``2.04`` equals ``2.4``), or a heading title
            when ``quoted``.
        index: Output of :func:`label_index` for the document.
        quoted: ``label`` is a quoted section title (``Section "Related work"``).

    Returns:
        Target node ids, best first; empty when nothing matches.

    """
    if quoted:
        return tuple(index.titles.get(_norm_title(label), ())[:3])
    norm = normalise_label(label)
    found = _resolve_exact(kind, norm, index)
    if not found and kind in _ROMAN_KINDS:
        other = _roman_to_arabic(norm) if norm[:1] in _ROMAN else _arabic_to_roman(norm)
        if other:
            found = _resolve_exact(kind, other, index)
    if not found:
        found = _resolve_implicit(kind, norm, index)
    if not found and kind in _HIERARCHICAL and "." in norm:
        parent = norm.rsplit(".", 1)[0]
        found = _resolve_exact(kind, parent, index) or _resolve_implicit(kind, parent, index)
    return found


def _is_contents(node: Node) -> bool:
    return node.kind == "preamble" or "contents" in node.title.lower()


def _resolve_exact(kind: str, norm: str, index: LabelIndex) -> tuple[str, ...]:
    hit = index.headings.get((kind, norm))
    if hit:
        return tuple(hit[:3])
    hit = index.captions.get((kind, norm))
    if hit:
        if len(hit) > 1 and index.tree is not None:
            # a caption-like line in a list of contents is not where the item is
            body = [h for h in hit if not _is_contents(index.tree.node(h))]
            hit = body or hit
        return tuple(hit[:3])
    return ()


def _resolve_implicit(kind: str, norm: str, index: LabelIndex) -> tuple[str, ...]:
    # A heading numbered without a kind word ("2.4 Results", "14. Debt", "B. Budget"). A
    # label without a dot ("Section 3") resolves so only under a heading naming the kind
    # ("Notes to the accounts") or in a document whose headings never name a structural kind:
    # where "ARTICLE 4" headings exist, "Section 3(3) of ERISA" is not "3. Fees".
    letter = bool(_ROMAN_OR_LETTER.match(norm)) and len(norm) == 1
    if kind not in _IMPLICIT_NUMERIC and not (letter and kind in _IMPLICIT_LETTER):
        return ()
    cands = index.numbered.get(norm, [])
    under = [c for c in cands if _under_kind(index, c, kind)]
    if letter and kind in _IMPLICIT_LETTER:
        cands = under
    elif "." not in norm:
        explicit = any(k in _IMPLICIT_NUMERIC for k, _ in index.headings)
        cands = under or ([] if explicit else cands)
    else:
        cands = under or cands
    if len(cands) > 1 and index.tree is not None:
        top = min(index.tree.node(c).level for c in cands)
        cands = [c for c in cands if index.tree.node(c).level == top]
    return tuple(cands[:1])


def _matches(text: str, *, strict: bool) -> Iterable[tuple[int, str, str, str, bool]]:
    # (column, span, kind, label, quoted) for each reference in one line of text.
    for m in _QUOTED.finditer(text):
        kind = _kind(m.group("kind")) or _kind(m.group("kind") + "s") or "section"
        yield m.start(), m.group(0), kind, m.group("title").strip(), True
    for m in _REF.finditer(text):
        word = m.group("kind")
        kind = _kind(word)
        if kind is None:
            continue
        label = m.group("label")
        if strict and word.islower() and not any(ch.isdigit() for ch in label):
            if not _CUE.search(text[: m.start()]):
                continue
        plural = word.lower() in _PLURALS
        if strict and len(label) == 1 and not plural and label in "AI":
            # "Section A"/"Part I" are labels, but "... in Table A man" is not: need a cue
            # or a capitalised kind word followed by a boundary that is not a capital word.
            nxt = text[m.end("label"):].lstrip()
            if nxt[:1].isupper() and nxt[:2].isalpha():
                continue
        labels = [label]
        more = m.group("more")
        if more:
            first_digit = any(ch.isdigit() for ch in label)
            for extra in _LABEL_RE.findall(more):
                if any(ch.isdigit() for ch in extra) == first_digit and (
                    first_digit or word.lower() in _PLURALS
                ):
                    labels.append(extra)
        span = m.group(0) if len(labels) > 1 else text[m.start(): m.end("label")]
        for lab in labels:
            if _label_ok(kind, lab):
                yield m.start(), span, kind, lab, False


def detect_references(
    tree: DocumentTree, lines: list[str], index: LabelIndex | None = None
) -> list[Reference]:
    r"""Find and resolve every cross-reference in a document's section text.

    Heading lines are not scanned (a heading defines its label), nor fenced code, nor the
    label that opens a caption line. A capitalised kind word followed by a label is a
    reference wherever it stands (``Section 2.04``); a lower-case one needs a label with a
    digit (``table 3``) or a cue before it (``see appendix g``), so ``table`` as an ordinary
    word is never one.

    Args:
        tree: The document's skeleton tree.
        lines: ``split_lines`` of the text the tree was built from.
        index: Output of :func:`label_index`; built when not given.

    Returns:
        References in line order; a list (``Sections 2.04 and 2.05``) gives one per label.

    Example:
        >>> from proxypointer.tree import build_tree, split_lines
        >>> text = "# Intro\nSee Appendix G.\n# Appendix G: Tables\nrows\n"
        >>> refs = detect_references(build_tree(text, "d"), split_lines(text))
        >>> [(r.line, r.kind, r.label, r.resolved) for r in refs]
        [(2, 'appendix', 'G', True)]

    """
    index = index or label_index(tree, lines)
    code = _code_lines(lines)
    out: list[Reference] = []
    cache: dict[tuple[str, str, bool], tuple[str, ...]] = {}
    for start, end, n in _owner(tree):
        for i in range(start, min(end, len(lines)) + 1):
            if i in code:
                continue
            text = lines[i - 1]
            skip_to = -1
            if _caption_label(text):
                lead = _LEAD.match(text)
                first = _REF.search(text, lead.end() if lead else 0)
                skip_to = first.start() if first else -1
            for col, span, kind, label, quoted in _matches(text, strict=True):
                if col == skip_to:
                    continue
                key = (kind, label, quoted)
                if key not in cache:
                    cache[key] = resolve(kind, label, index, quoted=quoted)
                out.append(Reference(n.node_id, i, col, kind, label, span, cache[key]))
    out.sort(key=lambda r: (r.line, r.column))
    n_res = sum(r.resolved for r in out)
    logger.debug("%s: %d references, %d resolved", tree.doc_id, len(out), n_res)
    return out


def reference_graph(refs: Iterable[Reference]) -> dict[str, tuple[str, ...]]:
    """``source node id -> target node ids`` (distinct, in first-seen order, self excluded).

    Args:
        refs: Output of :func:`detect_references`.

    Returns:
        One entry per node with at least one resolved reference to another node.

    """
    graph: dict[str, list[str]] = {}
    for r in refs:
        for t in r.target_node_ids:
            if t == r.source_node_id:
                continue
            targets = graph.setdefault(r.source_node_id, [])
            if t not in targets:
                targets.append(t)
    return {k: tuple(v) for k, v in graph.items()}


def reference_graph_json(refs: Iterable[Reference]) -> dict[str, str]:
    """Scalar metadata form of :func:`reference_graph`: node id -> JSON list of node ids.

    Suitable for a Chroma metadata value (a ``str``); nodes without references are absent
    (store ``""`` for them).
    """
    return {k: json.dumps(list(v)) for k, v in reference_graph(refs).items()}


def find_label_in_query(query: str, index: LabelIndex) -> tuple[str, ...]:
    """Nodes named by a label in a query ("what does annex table A2.1.1 say", "Note 14").

    Unlike in document text, the kind word may be in any case and the label in lower case
    (``appendix g``).

    Args:
        query: The question.
        index: Output of :func:`label_index` for one document.

    Returns:
        Target node ids in the order the labels appear in the query; empty when the query
        names no label, or none that the document defines.

    """
    out: list[str] = []
    seen_spans: set[int] = set()
    for col, _span, kind, label, quoted in _matches(query, strict=False):
        if col in seen_spans and not quoted:
            continue
        seen_spans.add(col)
        for t in resolve(kind, label, index, quoted=quoted):
            if t not in out:
                out.append(t)
    if not out:
        for m in re.finditer(rf"(?<![\w.])(?P<kind>{_KIND_ALT})\s+(?P<label>[a-z]\d*(?:\.\d+)*)\b",
                             query, re.IGNORECASE):
            kind = _kind(m.group("kind"))
            if kind and kind not in _DIGIT_ONLY:
                for t in resolve(kind, m.group("label"), index):
                    if t not in out:
                        out.append(t)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class DocumentReferences:
    """A document's tree, label index and references, rebuilt from its stored text.

    Attributes:
        tree: Skeleton tree (same node ids as at ingest, given the same tree config).
        lines: ``split_lines`` of the stored text.
        labels: Output of :func:`label_index`.
        references: Output of :func:`detect_references`, in line order.
        pages: Page map of the stored text, or None when it has no pages.

    """

    tree: DocumentTree
    lines: list[str]
    labels: LabelIndex
    references: tuple[Reference, ...]
    pages: PageMap | None = None

    @classmethod
    def build(
        cls, text: str, doc_id: str, tree_config: TreeConfig | None = None, line_pages: Sequence[int] | None = None
    ) -> DocumentReferences:
        """Build everything from normalised text (milliseconds for a 500 kB document).

        Args:
            text: The stored (normalised) text of one document version.
            doc_id: Its document id.
            tree_config: The tree options the index was built with (node ids depend on them).
            line_pages: Its stored page of each line (``registry.load_pages``), or None.

        Returns:
            The document's references.

        """
        lines = split_lines(text)
        tree = build_tree(text, doc_id, tree_config, lines=lines, paged=line_pages is not None)
        labels = label_index(tree, lines)
        pages = stored_page_map(line_pages, lines) if line_pages is not None and len(line_pages) == len(lines) else None
        return cls(tree, lines, labels, tuple(detect_references(tree, lines, labels)), pages)

    def targets(
        self,
        start_line: int,
        end_line: int,
        roadmap_targets: int = 3,
        focus: tuple[int, int] | None = None,
    ) -> list[tuple[Reference, Node]]:
        """Nodes referenced from lines ``start_line..end_line`` (1-based, inclusive).

        References in a list of contents (the preamble, a "Contents" section) are not
        followed: every entry there is a reference.

        Args:
            start_line: First line, 1-based inclusive.
            end_line: Last line, 1-based inclusive.
            roadmap_targets: A line (a paragraph) whose references resolve to this many
                distinct nodes or more is an outline ("Section 2 describes ..., Section 3
                ..., Section 4 ...") and is not followed; 0 follows every line.
            focus: Lines ``(first, last)``, 1-based inclusive, that matched the query (the
                best chunk): references nearest to them come first.

        Returns:
            ``(reference, target node)`` pairs, each target once, in line order (by distance
            from ``focus`` when given); targets that overlap the range itself (the citing
            section, its ancestors or descendants) are left out.

        """
        per_line: dict[int, set[str]] = {}
        for r in self.references:
            if start_line <= r.line <= end_line:
                per_line.setdefault(r.line, set()).update(r.target_node_ids)
        refs = [r for r in self.references if start_line <= r.line <= end_line]
        if focus is not None:
            refs.sort(key=lambda r: max(focus[0] - r.line, r.line - focus[1], 0))
        out: list[tuple[Reference, Node]] = []
        seen: set[str] = set()
        for r in refs:
            if roadmap_targets and len(per_line[r.line]) >= roadmap_targets:
                continue
            if _is_contents(self.tree.node(r.source_node_id)):
                continue
            for t in r.target_node_ids:
                node = self.tree.node(t)
                if t in seen or (node.start_line <= end_line and start_line <= node.end_line):
                    continue
                seen.add(t)
                out.append((r, node))
        return out

    def breadcrumb(self, node_id: str) -> tuple[str, ...]:
        """Titles from the document title down to a node (chunking's ``path`` breadcrumb)."""
        path = self.tree.title_path(node_id)
        if path and path[0] != self.tree.title:
            path = (self.tree.title, *path)
        return path

    def lookup(self, query: str) -> tuple[str, ...]:
        """Node ids named by a label in the query (see :func:`find_label_in_query`)."""
        return find_label_in_query(query, self.labels)


class ReferenceFollower:
    """A layer over a :class:`~proxypointer.retrieval.Retriever` that follows cross-references.

    It looks up labels named in a query ("summarise Note 14") and adds the sections that
    retrieved sections cite ("see Appendix G"), resolved on the stored source by this module,
    without an LLM. The reference graph of a document version is rebuilt from its stored text
    in milliseconds and kept for the 32 versions used last (thread-safe: a lock guards it).

    Args:
        retriever: Where sections come from.

    Example:
        >>> follower = ReferenceFollower(Retriever(index))                       # doctest: +SKIP
        >>> for s in follower.retrieve("what does note 14 say about the term loan?", k=3):
        ...     print(s.citation, s.reached_via)
    """

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self._lock = threading.Lock()
        self._refs: OrderedDict[str, DocumentReferences] = OrderedDict()  # doc_hash -> references

    def references(self, doc_id: str) -> DocumentReferences | None:
        """Return the live version's references (cached per doc_hash); None for an unknown document."""
        index = self.retriever.index
        rec = index.registry.get(doc_id)
        if rec is None or not rec.doc_hash:
            return None
        with self._lock:
            refs = self._refs.get(rec.doc_hash)
            if refs is not None:
                self._refs.move_to_end(rec.doc_hash)
                return refs
        refs = DocumentReferences.build(
            index.registry.load_source(rec.doc_hash), doc_id, index.config.tree, index.registry.load_pages(rec.doc_hash)
        )
        with self._lock:
            self._refs[rec.doc_hash] = refs
            while len(self._refs) > 32:
                self._refs.popitem(last=False)
        return refs

    def retrieve(
        self,
        query: str,
        k: int | None = None,
        where: dict[str, Any] | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        source_prefix: str | None = None,
        budget_tokens: int | None = None,
        max_references: int | None = None,
        lookup_labels: bool = True,
        interleave: bool = False,
    ) -> list[Section]:
        """:meth:`Retriever.retrieve`, then follow the cross-references of the sections found.

        A question that names a label ("summarise Note 14", "annex table A2.1.1") first gets
        the section carrying that label in the best-ranked document, ahead of the other hits
        (``k`` sections in all). :meth:`add_references` then appends the sections they cite.

        Args:
            query: Question or keywords.
            k: Sections found by the query (default ``retrieval.k``, 5).
            where: Extra metadata filter.
            doc_ids: Only search these documents (an empty list: none).
            source_prefix: Only search documents whose doc_id starts with this prefix.
            budget_tokens: Context budget for all returned text, in word pieces of the
                embedding model's tokenizer (no special tokens); ``None``: no budget.
            max_references: Most referenced sections to add (default: ``k``).
            lookup_labels: Look up labels named in the query.
            interleave: Put each referenced section right after its citing section.

        Returns:
            The ``k`` sections (label matches first, ``reached_via="query"``, with the best
            section's scores), then the referenced sections (see :meth:`add_references`).

        Raises:
            ConfigError: If ``k`` < 1 or the query is empty.
            StaleSourceError: If a stored source is missing.
        """
        k = self.retriever.config.k if k is None else k
        found = self.retriever.retrieve(query, k, where, doc_ids=doc_ids, source_prefix=source_prefix)
        if lookup_labels and found:
            for doc_id in dict.fromkeys(s.doc_id for s in found):
                refs = self.references(doc_id)
                named = refs.lookup(query) if refs is not None else ()
                if named:
                    src = next(s.source for s in found if s.doc_id == doc_id)
                    top = found[0]
                    first = [
                        _node_section(doc_id, refs, refs.tree.node(n), src, top.score, top.rank_score, "query")
                        for n in named[:k]
                    ]
                    keys = {(doc_id, s.node_id) for s in first}
                    found = (first + [s for s in found if (s.doc_id, s.node_id) not in keys])[:k]
                    break
        return self.add_references(found, budget_tokens, max_references, interleave=interleave)

    def add_references(
        self,
        sections: Sequence[Section],
        budget_tokens: int | None = None,
        max_references: int | None = None,
        *,
        interleave: bool = False,
        per_section: int = 2,
    ) -> list[Section]:
        """Add the sections that the given sections cite ("see Note 14"), best citer first.

        Args:
            sections: Output of :meth:`Retriever.retrieve`, best first.
            budget_tokens: Context budget for all text, in word pieces (no special tokens): the
                given sections' whole texts count first; a referenced section is added only
                when it fits whole. ``None``: no budget.
            max_references: Most sections to add (default: ``len(sections)``).
            interleave: Put each referenced section right after its citing section (the order
                a reader follows the trail; a budget cut then drops the lowest-ranked hits
                first) instead of after all of ``sections``.
            per_section: Most sections added for one citing section: the references nearest
                to its best-matching chunk (``chunk_start_line..chunk_end_line``) win.

        Returns:
            ``sections`` in their order, then (or, with ``interleave``, each after its citing
            section) the referenced sections in the order of their citing section and of the
            references in it, each once, none overlapping a section already there; each has
            the citing section's ``score`` and ``rank_score`` and ``reached_via`` set to
            ``<citing breadcrumb> (L<start>-L<end>)``.
        """
        tok = self.retriever.index.embedder.tokenizer
        used = sum(tok.count(s.text) for s in sections) if budget_tokens is not None else 0
        items = [(s, s.start_line, s.end_line) for s in sections]
        added = self._follow(items, used, budget_tokens, max_references, per_section)
        extra = [[sec for sec, _ in group] for group in added]
        if interleave:
            return [x for s, more in zip(sections, extra, strict=True) for x in (s, *more)]
        return [*sections, *(x for more in extra for x in more)]

    def add_to_blocks(
        self,
        blocks: Sequence[ContextBlock],
        budget_tokens: int | None = None,
        max_references: int | None = None,
        *,
        interleave: bool = False,
        per_section: int = 2,
    ) -> list[ContextBlock]:
        """Like :meth:`add_references`, for the blocks of :meth:`Assembler.assemble`.

        Only the lines a block delivers are read for references; the given blocks' ``tokens``
        count first against ``budget_tokens``, and each referenced section is added as one
        whole block.

        Returns:
            ``blocks``, then (or interleaved) one whole-section block per referenced section.
        """
        from .context import ContextBlock

        used = sum(b.tokens for b in blocks)
        items = [(b.section, b.start_line, b.end_line) for b in blocks]
        added = self._follow(items, used, budget_tokens, max_references, per_section)
        extra = [
            [ContextBlock(s, s.start_line, s.end_line, s.text, n, s.page_start, s.page_end) for s, n in group]
            for group in added
        ]
        if interleave:
            return [x for b, more in zip(blocks, extra, strict=True) for x in (b, *more)]
        return [*blocks, *(x for more in extra for x in more)]

    def _follow(
        self,
        items: Sequence[tuple[Section, int, int]],
        used: int,
        budget_tokens: int | None,
        max_references: int | None,
        per_section: int,
    ) -> list[list[tuple[Section, int]]]:
        """Referenced sections (with their tokens) per ``(section, first line read, last line read)``."""
        max_refs = len(items) if max_references is None else max_references
        tok = self.retriever.index.embedder.tokenizer
        spans: dict[str, list[tuple[int, int]]] = {}
        for s, _, _ in items:
            spans.setdefault(s.doc_id, []).append((s.start_line, s.end_line))
        added: list[list[tuple[Section, int]]] = [[] for _ in items]
        n_added = 0
        for i, (s, lo, hi) in enumerate(items):
            refs = self.references(s.doc_id) if s.kind != "window" else None
            if refs is None:
                continue
            for _ref, node in refs.targets(lo, hi, focus=(s.chunk_start_line, s.chunk_end_line)):
                if n_added >= max_refs or len(added[i]) >= per_section:
                    break
                if any(node.start_line <= e and b <= node.end_line for b, e in spans[s.doc_id]):
                    continue
                via = f"{' > '.join(s.breadcrumb)} (L{s.start_line}-L{s.end_line})"
                new = _node_section(s.doc_id, refs, node, s.source, s.score, s.rank_score, via)
                n_tok = tok.count(new.text)
                if budget_tokens is not None and used + n_tok > budget_tokens:
                    continue
                used += n_tok
                spans[s.doc_id].append((node.start_line, node.end_line))
                added[i].append((new, n_tok))
                n_added += 1
        return added


def _node_section(
    doc_id: str, refs: DocumentReferences, node: Node, source: str, score: float, rank_score: float, via: str
) -> Section:
    """Build the whole section of a tree node, reached by a reference or a label (no chunk)."""
    from .retrieval import build_section

    return build_section(
        doc_id=doc_id,
        node_id=node.node_id,
        title=node.title,
        breadcrumb=refs.breadcrumb(node.node_id),
        kind=node.kind,
        level=node.level,
        start_line=node.start_line,
        end_line=node.end_line,
        lines=refs.lines,
        source=source,
        score=score,
        rank_score=rank_score,
        reached_via=via,
        pages=refs.pages,
    )

"""Labels of a document ("Note 14", "Box 1.1", "Annex Table A2.1.1") and labels named in a query.

A label is a kind and a number (``("table", "A2.1.1")``), defined by

1. heading titles that start with a kind and a number (``ANNEX TABLE A2.1.1 Studies ...``,
   ``Note 14 — Debt``, ``Appendix G: Statistical Tables``, ``Section 2.04 Swing Line Loans``);
2. caption lines in the body text (``Table 5.3: Revenue by segment``), which resolve to the
   section that contains them;
3. headings numbered without a kind word (``2.4 Results``, ``14. Debt``, ``G. Tables``), for
   structural kinds only (section, chapter, note, ...), never for tables or figures;
4. financial statements' titles (``Consolidated Balance Sheets``, ``NIKE, Inc. Consolidated
   Statements of Income``), which a question names by their common names ("the balance
   sheet", "the income statement", "P&L", "statement of financial position"):
   :func:`statements_in_query`.

:func:`label_index` collects them from a tree and its lines; :func:`resolve` finds the nodes a
label points to; :func:`find_label_in_query` finds the nodes a question names ("what does Note
14 say about debt"). :class:`LabelLookup` keeps the label index of each live document version
for retrieval's label lookup (``retrieval.label_lookup``); :mod:`proxypointer.tree.references` uses
the same pieces to follow cross-references in section text.

Lines are 1-based inclusive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .build import DocumentTree, Node
from .headings import figure_row
from .markdown import code_lines
from .titles import NUMBERED_TITLE as _NUMBERED_TITLE
from .titles import ROMAN_DIGITS as _ROMAN
from .titles import ROMAN_OR_LETTER as _ROMAN_OR_LETTER
from .titles import arabic_to_roman as _arabic_to_roman
from .titles import filing_label, normalise_label, statement_kind
from .titles import plain_title as _plain
from .titles import roman_to_arabic as _roman_to_arabic
from .titles import title_words as _norm_title

__all__ = [
    "KINDS",
    "STATEMENT_MIN_ROWS",
    "STATEMENT_TABLE_LINES",
    "TOPIC_TARGETS",
    "TOPIC_TITLE_MAX_WORDS",
    "LabelIndex",
    "find_label_in_query",
    "label_index",
    "mentions_label",
    "normalise_label",
    "resolve",
    "statement_nodes",
    "statements_in_query",
    "topic_nodes",
]

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
REFERENCE = re.compile(
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
LINE_LEAD = re.compile(r"^(?:\s|[>*_|#]|<[^>]{1,40}>|\*\*|__)*")
_CAPTION_END = re.compile(r"\s*(?:[:.|—–]|-\s|\)|$)")


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
        statements: Financial statement kind (:data:`proxypointer.tree.titles.STATEMENT_KINDS`) ->
            node ids of the headings titled with that statement, in document order.
        tabular: Those of :attr:`statements` whose section holds the statement itself: at
            least :data:`STATEMENT_MIN_ROWS` of its first :data:`STATEMENT_TABLE_LINES` lines
            are rows of figures (:func:`~proxypointer.tree.headings.figure_row`), not a
            paragraph about it.
        tree: The tree the index was built from.

    """

    headings: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    captions: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    numbered: dict[str, list[str]] = field(default_factory=dict)
    titles: dict[str, list[str]] = field(default_factory=dict)
    kind_nodes: dict[str, set[str]] = field(default_factory=dict)
    statements: dict[str, list[str]] = field(default_factory=dict)
    tabular: set[str] = field(default_factory=set)
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


def caption_label(line: str) -> tuple[str, str] | None:
    # A plain-text caption: "Table 5.3: Revenue", "**Figure 2.** Architecture", "Box 1 — ...".
    lead = LINE_LEAD.match(line)
    rest = line[lead.end() if lead else 0 :]
    m = REFERENCE.match(rest)
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


def node_spans(tree: DocumentTree) -> list[tuple[int, int, Node]]:
    # (body_start, body_end, node) for every node, the own-text ranges that tile the document.
    return [(n.body_start_line, n.body_end_line, n) for n in tree.nodes]


#: Lines under a statement heading read to tell the statement (rows of figures) from a
#: paragraph about it: a balance sheet's first 80 lines hold its first rows however it is
#: converted (one row per line, or a pipe table), after an introduction of a few lines, and
#: a press release's paragraph titled "Balance Sheet" is a few lines of prose.
STATEMENT_TABLE_LINES = 80
#: Rows of figures (:func:`~proxypointer.tree.headings.figure_row`) among those lines that
#: make a statement: a balance sheet has tens of them; a paragraph quoting a few balances has none
#: or one or two, whatever its length.
STATEMENT_MIN_ROWS = 5


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
        statement = statement_kind(n.title, heading=True)
        if statement:
            idx.statements.setdefault(statement, []).append(n.node_id)
            last = min(n.end_line, n.start_line + STATEMENT_TABLE_LINES, len(lines))
            rows = sum(1 for line in lines[n.start_line : last] if figure_row(line))
            if rows >= STATEMENT_MIN_ROWS:
                idx.tabular.add(n.node_id)
        low = plain.lower()
        for word, kind in _KIND_WORDS.items():
            if not word.endswith((".", "§")) and re.search(rf"\b{word}\b", low):
                idx.kind_nodes.setdefault(kind, set()).add(n.node_id)
    code = code_lines(lines)
    for start, end, n in node_spans(tree):
        for i in range(start, min(end, len(lines)) + 1):
            if i in code:
                continue
            cl = caption_label(lines[i - 1])
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


def is_contents_node(node: Node) -> bool:
    return node.kind == "preamble" or "contents" in node.title.lower()


def _resolve_exact(kind: str, norm: str, index: LabelIndex) -> tuple[str, ...]:
    hit = index.headings.get((kind, norm))
    if hit:
        return tuple(hit[:3])
    hit = index.captions.get((kind, norm))
    if hit:
        if len(hit) > 1 and index.tree is not None:
            # a caption-like line in a list of contents is not where the item is
            body = [h for h in hit if not is_contents_node(index.tree.node(h))]
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


def label_matches(text: str, *, strict: bool) -> Iterable[tuple[int, str, str, str, bool]]:
    # (column, span, kind, label, quoted) for each reference in one line of text.
    for m in _QUOTED.finditer(text):
        kind = _kind(m.group("kind")) or _kind(m.group("kind") + "s") or "section"
        yield m.start(), m.group(0), kind, m.group("title").strip(), True
    for m in REFERENCE.finditer(text):
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


# The common names of the primary financial statements in questions ("from the balance sheet",
# "the P&L statement", "statement of financial position"), by kind; comprehensive income is
# tried before income so that "statement of comprehensive income" is not the income statement.
# "Off-balance sheet" is no statement.
_STATEMENT_NAMES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("comprehensive_income",
         r"\bstatements?\s+of\s+(?:consolidated\s+)?comprehensive\s+(?:income|loss|earnings)"
         r"|\bcomprehensive\s+income\s+statements?\b"),
        ("income",
         r"\bincome\s+statements?\b|\bstatements?\s+of\s+(?:consolidated\s+)?(?:income|operations|earnings"
         r"|profit\s+or\s+loss)\b|(?<![\w&])p\s?&\s?l\b|(?<![\w&])p&amp;l\b|\bprofit\s+(?:and|&)\s+loss\b"
         r"|\bearnings\s+statements?\b"),
        ("balance_sheet",
         r"(?<!off[-–— ])(?<!off)(?<!off the )\bbalance\s+sheets?\b"
         r"|\bstatements?\s+of\s+(?:consolidated\s+)?financial\s+(?:position|condition)\b"),
        ("cash_flows", r"\bcash[- ]flows?\s+statements?\b|\bstatements?\s+of\s+(?:consolidated\s+)?cash\s+flows?\b"),
        ("equity",
         r"\bstatements?\s+of\s+(?:changes\s+in\s+)?(?:(?:share|stock)holders['’]?\s+|shareowners['’]?\s+)?equity\b"
         r"|\b(?:shareholders['’]?|stockholders['’]?)\s+equity\s+statements?\b"),
    )
)


def statements_in_query(query: str) -> tuple[str, ...]:
    """Financial statements a question names, in the order it names them.

    Args:
        query: The question.

    Returns:
        Statement kinds (:data:`proxypointer.tree.titles.STATEMENT_KINDS`), each once: "the income
        statement", "statement of operations", "P&L" -> ``income``; "balance sheet",
        "statement of financial position" -> ``balance_sheet``; "cash flow statement" ->
        ``cash_flows``; "statement of comprehensive income" -> ``comprehensive_income``;
        "statement of shareholders' equity" -> ``equity``.

    Example:
        >>> statements_in_query("Using the balance sheet and the P&L statement, what is ...")
        ('balance_sheet', 'income')

    """
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _STATEMENT_NAMES:
        for m in pattern.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), kind))
    out: list[str] = []
    for _, kind in sorted(found):
        if kind not in out:
            out.append(kind)
    return tuple(out)


def statement_nodes(kinds: tuple[str, ...], index: LabelIndex) -> list[str]:
    """Return one heading per financial statement named, in the order of ``kinds``.

    The first heading of that kind that is neither in a list of contents ("Index to
    Financial Statements", "Table of Contents") nor titled with a colon ("Consolidated
    Balance Sheets:" introduces rows of a selected-data table); of those, the first that holds
    the statement's rows of figures (:attr:`LabelIndex.tabular`), if one does: an earnings
    release's "Balance Sheet" paragraph comes before its balance sheet.

    Args:
        kinds: Statement kinds (:func:`statements_in_query`).
        index: One document's label index.

    Returns:
        Node ids; a kind the document has no heading for adds none.
    """
    tree = index.tree

    def listed(node_id: str) -> bool:
        if tree is None:
            return False
        chain = [tree.node(node_id), *tree.ancestors(node_id)]
        return any(is_contents_node(n) or "index to" in n.title.lower() for n in chain)

    out: list[str] = []
    for kind in kinds:
        ids = index.statements.get(kind, [])
        if not ids:
            continue
        titled = [i for i in ids if tree is None or not _plain(tree.node(i).title).endswith(":")]
        body = [i for i in titled if not listed(i)]
        tables = [i for i in body if i in index.tabular]
        out.append((tables or body or titled or ids)[0])
    return out


def find_label_in_query(query: str, index: LabelIndex) -> tuple[str, ...]:
    """Nodes named by a label in a query ("what does annex table A2.1.1 say", "Note 14").

    Unlike in document text, the kind word may be in any case and the label in lower case
    (``appendix g``).

    Args:
        query: The question.
        index: Output of :func:`label_index` for one document.

    Returns:
        Target node ids in the order the labels appear in the query, then one heading per
        financial statement the query names (:func:`statements_in_query`; the first heading
        titled with that statement); empty when the query names no label, or none that the
        document defines.

    """
    out: list[str] = []
    seen_spans: set[int] = set()
    for col, _span, kind, label, quoted in label_matches(query, strict=False):
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
    for t in statement_nodes(statements_in_query(query), index):
        if t not in out:
            out.append(t)
    return tuple(out)


_LOWER_LABEL = re.compile(rf"(?<![\w.])(?P<kind>{_KIND_ALT})\s+(?P<label>[a-z]\d*(?:\.\d+)*)\b", re.IGNORECASE)


def mentions_label(query: str) -> bool:
    """Tell cheaply whether a query may name a label (a kind word followed by a label, or a quoted title).

    A regular-expression test, so that retrieval builds no label index for the many queries
    that name none; :func:`find_label_in_query` decides what, if anything, is named.
    """
    return bool(REFERENCE.search(query) or _QUOTED.search(query) or _LOWER_LABEL.search(query)
                or statements_in_query(query))


#: Most sections one topic of a query brings (the Item and the note that discloses it).
TOPIC_TARGETS = 2
#: Most words in the title of a section a topic brings. A form's sections are titled in a few
#: words ("Item 3. Legal Proceedings", "Note 15 – Legal Proceedings, Commitments and
#: Contingencies": 8); a risk factor is a sentence that names the topic ("We are subject to risks
#: related to litigation, including intellectual property claims ..."), and it took the second
#: place, after the Item, for "legal" questions in 17 of the 29 dev filings.
TOPIC_TITLE_MAX_WORDS = 12


def topic_nodes(title: re.Pattern[str], index: LabelIndex) -> list[str]:
    """Sections titled for a topic (:data:`proxypointer.retrieve.implied.TOPICS`), outermost first.

    Args:
        title: The topic's title pattern, searched in each heading's plain title.
        index: A document's label index (its tree).

    Returns:
        Up to :data:`TOPIC_TARGETS` heading node ids in document order, none inside another
        one found, none in a list of contents ("Table of Contents", "Index to ..."), none
        titled by a sentence (more than :data:`TOPIC_TITLE_MAX_WORDS` words); an
        Item's heading comes before the notes (``Item 3. Legal Proceedings``, then ``Note 16
        - Commitments and Contingencies``).
    """
    tree = index.tree
    if tree is None:
        return []
    found: list[str] = []
    for n in tree.nodes:
        if n.kind != "heading" or not title.search(_plain(n.title)):
            continue
        if len(_plain(n.title).split()) > TOPIC_TITLE_MAX_WORDS:  # a risk factor's sentence, not the section
            continue
        chain = [n, *tree.ancestors(n.node_id)]
        if any(is_contents_node(a) or "index to" in a.title.lower() for a in chain):
            continue
        if any(a.node_id in found for a in chain[1:]):
            continue
        found.append(n.node_id)
    items = [i for i in found if (lab := filing_label(tree.node(i).title)) and lab[0] in ("part", "item")]
    rest = [i for i in found if i not in items]
    return (items + rest)[:TOPIC_TARGETS]

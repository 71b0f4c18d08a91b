"""Outlines: titles with 1-based PDF pages and nesting, read from PDF bookmarks or a small file.

An *outline* is what a reader of a PDF sees in Acrobat's bookmark pane, or what a person
writes down from a printed table of contents: entries in document order, each a title, the
1-based PDF page it starts on (page 1 = the first page of the file, never the number printed
in a footer) and a level (1 = outermost). It is used twice:

* as the tree of a PDF that carries bookmarks (:mod:`proxypointer.tree.outlinetext` writes its
  entries into the converted markdown as headings);
* as the gold a tree is scored against (:mod:`proxypointer.eval.trees`).

Sources: :func:`pdf_outline` (pypdf's reading of the document outline, ISO 32000-1 section
12.3.3) and :func:`load_outline` (YAML or JSON, entries nested by ``children``). Titles are
compared by :func:`title_match`, and entries are placed on candidates (tree headings, text
lines) by :func:`align_monotone`: each entry lands at most once, in document order.
This module imports nothing heavy; pypdf and PyYAML are imported when used.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DocumentError
from ..pdflog import pypdf_warnings_hidden
from .titles import filing_label, plain_title

__all__ = [
    "TITLE_MATCH_MIN_RATIO",
    "Outline",
    "OutlineEntry",
    "align_monotone",
    "contains_words",
    "load_outline",
    "match_key",
    "outline_from_data",
    "pdf_outline",
    "title_match",
]

logger = logging.getLogger(__name__)

#: Least difflib ratio between two normalised titles for :func:`title_match` when neither
#: their words nor their labels decide. Chosen so that a title and the same title with a
#: typo, a dropped article or other punctuation match ("Management's Discussion" /
#: "Managements Discussion"), and two different items of a filing's list do not
#: ("Item 1A. Risk Factors" / "Item 1B. Unresolved Staff Comments": 0.45).
TITLE_MATCH_MIN_RATIO = 0.85


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """One entry of an outline.

    Attributes:
        title: The title as the source writes it (bookmark text, or a gold file's title).
        page: 1-based PDF page where the section starts; 0 when the source gives none (a
            bookmark whose destination cannot be resolved).
        level: 1 for an outermost entry, 2 for its children, and so on.
        parent: Index (into :attr:`Outline.entries`) of the entry it is nested in, -1 for an
            outermost entry.
    """

    title: str
    page: int
    level: int
    parent: int = -1


@dataclass(frozen=True, slots=True)
class Outline:
    """Entries of an outline in document order, with where they came from.

    Attributes:
        entries: The entries, parents before children.
        source: What the outline was read from (``"bookmarks of f.pdf"``, a file's path).
        read_from: 1-based lines of the text the outline was read from (a printed table of
            contents); they are never made headings of its entries.
    """

    entries: tuple[OutlineEntry, ...]
    source: str = ""
    read_from: frozenset[int] = frozenset()

    def __len__(self) -> int:
        """Return the number of entries."""
        return len(self.entries)

    @property
    def depth(self) -> int:
        """Deepest level, 0 for an empty outline."""
        return max((e.level for e in self.entries), default=0)


def outline_from_data(data: Any, source: str = "") -> Outline:
    """Build an outline from nested entries (what :func:`load_outline` reads).

    Args:
        data: A list of entries, or a mapping with such a list under ``outline``; an entry
            is a mapping with ``title`` (str), ``page`` (int >= 1, the 1-based PDF page) and
            optional ``children`` (a list of entries).
        source: Named in errors and kept on the outline.

    Returns:
        The entries flattened in document order, with levels and parents.

    Raises:
        ConfigError: When the structure, a title or a page is missing or of the wrong type;
            the message names the source and the entry.
    """
    if isinstance(data, dict):
        if "outline" not in data:
            raise ConfigError(f"{source}: expected a list of entries under 'outline'")
        data = data["outline"]
    if not isinstance(data, list):
        raise ConfigError(f"{source}: expected a list of outline entries, got {type(data).__name__}")
    entries: list[OutlineEntry] = []

    def add(items: list[Any], level: int, parent: int, where: str) -> None:
        for n, item in enumerate(items, 1):
            at = f"{where}[{n}]"
            if not isinstance(item, dict):
                raise ConfigError(f"{source}: outline entry {at} is not a mapping")
            title, page = item.get("title"), item.get("page")
            if not isinstance(title, str) or not title.strip():
                raise ConfigError(f"{source}: outline entry {at} has no title")
            if isinstance(page, bool) or not isinstance(page, int) or page < 1:
                raise ConfigError(
                    f"{source}: outline entry {at} ({title!r}) needs page: an int >= 1 (1-based PDF page)"
                )
            unknown = set(item) - {"title", "page", "children"}
            if unknown:
                raise ConfigError(f"{source}: outline entry {at} ({title!r}) has unknown key(s) {sorted(unknown)}")
            entries.append(OutlineEntry(title.strip(), page, level, parent))
            children = item.get("children") or []
            if not isinstance(children, list):
                raise ConfigError(f"{source}: children of outline entry {at} ({title!r}) is not a list")
            add(children, level + 1, len(entries) - 1, at)

    add(data, 1, -1, "outline")
    return Outline(tuple(entries), source)


def load_outline(path: str | Path) -> Outline:
    """Read an outline file: YAML (``.yaml``/``.yml``) or JSON (``.json``).

    The format (one file per document; pages 1-based PDF pages)::

        document: f.pdf            # optional, informative
        outline:
          - title: PART I
            page: 3
            children:
              - {title: "Item 1. Business", page: 3}

    Args:
        path: The file.

    Returns:
        The outline, ``source`` = the path.

    Raises:
        DocumentError: If the file cannot be read or parsed (names it).
        ConfigError: If its entries are malformed (:func:`outline_from_data`).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise DocumentError(f"{p}: cannot read the outline ({err.strerror or err})") from err
    from ..yamltext import load_yaml

    try:
        data = json.loads(text) if p.suffix.lower() == ".json" else load_yaml(text, str(p))
    except (ValueError, ConfigError) as err:
        raise DocumentError(f"{p}: not a valid outline file ({err})") from err
    return outline_from_data(data, str(p))


def pdf_outline(path: str | Path, data: bytes | None = None) -> Outline:
    """Read a PDF's bookmarks (its document outline) with pypdf.

    Entries whose destination names no page of the file (a link to another file) are left
    out, and so are their children; empty titles too. Titles keep their words, with runs of
    whitespace collapsed.

    Args:
        path: The PDF (named in messages; read unless ``data`` is given).
        data: The PDF's bytes, when the caller has them.

    Returns:
        The outline (empty when the PDF has none), ``source`` = ``"bookmarks of <path>"``.

    Raises:
        DocumentError: If pypdf cannot open the file (names it).
        MissingDependencyError: If pypdf is not installed.
    """
    from ..errors import MissingDependencyError

    try:
        import pypdf
    except ImportError as err:  # pragma: no cover - pypdf ships with the pdf extra
        raise MissingDependencyError("reading PDF bookmarks needs pypdf: pip install 'proxypointer[pdf]'") from err
    # pypdf warns "Unknown destination" for every bookmark into another file: those entries are
    # left out here, which is ours to say; its other messages still show from ERROR up.
    with pypdf_warnings_hidden():
        return _read_outline(pypdf, Path(path), data)


def _read_outline(pypdf: Any, p: Path, data: bytes | None) -> Outline:  # noqa: ANN401 - the module
    try:
        import io

        reader = pypdf.PdfReader(io.BytesIO(data) if data is not None else str(p), strict=False)
        raw = reader.outline
    except Exception as err:  # pypdf raises many types for broken files
        raise DocumentError(f"{p}: cannot read the PDF's outline ({err})") from err
    entries: list[OutlineEntry] = []
    try:
        own_pages = {
            pg.indirect_reference.idnum: n for n, pg in enumerate(reader.pages, 1) if pg.indirect_reference is not None
        }
    except Exception as err:  # noqa: BLE001 - a broken page tree
        raise DocumentError(f"{p}: cannot read the PDF's pages ({err})") from err

    def walk(items: list[Any], level: int, parent: int) -> None:
        last = parent
        for item in items:
            if isinstance(item, list):
                if last != parent:  # children of the entry just added
                    walk(item, level + 1, last)
                continue
            last = parent
            title = " ".join(str(getattr(item, "title", "") or "").split())
            target = item.get("/Page")
            node = getattr(item, "node", None)
            dest = node.get("/Dest") if node is not None else None
            dest = dest.get_object() if isinstance(dest, pypdf.generic.IndirectObject) else dest
            if isinstance(dest, list) and dest and isinstance(dest[0], pypdf.generic.NullObject):
                target = None  # a destination without a page (pypdf reads it as page 1)
            # a page of this file's page tree; else another file's page or a broken destination
            page = own_pages.get(target.idnum, 0) if isinstance(target, pypdf.generic.IndirectObject) else 0
            if not title or page < 1:
                continue
            entries.append(OutlineEntry(title, page, level, parent))
            last = len(entries) - 1

    try:
        walk(list(raw), 1, -1)
    except Exception as err:  # noqa: BLE001 - a malformed outline tree
        logger.warning("%s: its outline could not be read whole (%s); using %d entries", p, err, len(entries))
    return Outline(tuple(entries), f"bookmarks of {p}")


# -- comparing titles ----------------------------------------------------------------------------
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_NON_WORD = re.compile(r"[^\w]+")


def match_key(title: str) -> tuple[str, ...]:
    """Words of a title for comparison: NFKC, markup removed, case folded, punctuation dropped.

    Example:
        >>> match_key("**ITEM 7.** Management’s  Discussion")
        ('item', '7', 'management', 's', 'discussion')
    """
    text = unicodedata.normalize("NFKC", plain_title(title)).translate(_QUOTES).casefold()
    return tuple(w for w in _NON_WORD.split(text.replace("_", " ")) if w)


def _label(title: str) -> tuple[str, str] | None:
    lab = filing_label(title)
    if lab is None or lab[0] in ("notes", "statements"):
        return None
    kind, label = lab
    return ("note" if kind == "numbered" else kind), label


def contains_words(short: tuple[str, ...], long: tuple[str, ...], start: int = 0) -> bool:
    """Tell whether the words ``short`` stand together in ``long`` at position ``start`` or later.

    Example:
        >>> contains_words(("item", "1"), ("part", "i", "item", "1"), start=1)
        True
    """
    n = len(short)
    return any(long[i : i + n] == short for i in range(start, len(long) - n + 1))


#: A page label opening a title ("A-1 - ", "F-3: "), set off by a dash or a colon.
_PAGE_LABEL = re.compile(r"^\s*[A-Z]{1,2}-\d{1,3}\s*[-–—:]\s+(?=\S)")


def title_match(a: str, b: str) -> bool:
    """Tell whether two titles name the same section.

    In order: when both carry a part, item or note label, the labels decide (``Item 7.
    MD&A`` and ``ITEM 7. MANAGEMENT'S DISCUSSION...``; ``Note 14 - Debt`` and ``14. Debt``;
    never ``Item 1A`` and ``Item 1B``); their words (:func:`match_key`) are equal; the words
    of one start the other's (a title cut where the converter wrapped it, ``Item 7.
    Management's Discussion and``, or run on into its first sentence); the words of one (two
    or more) stand together inside the other's (``Consolidated Balance Sheets`` in ``NIKE,
    Inc. Consolidated Balance Sheets``); else, when neither is labelled, their difflib ratio is
    at least :data:`TITLE_MATCH_MIN_RATIO`.

    A page label that opens a title and is set off by a dash or a colon (``A-1 -
    Condensed Consolidated Statement of Income``: PepsiCo's bookmarks name the exhibit page
    first; ``F-3: Consolidated Balance Sheets``) is left out first.

    Args:
        a: A title as written.
        b: Another.

    Returns:
        True when they match.
    """
    a, b = _PAGE_LABEL.sub("", a, count=1), _PAGE_LABEL.sub("", b, count=1)
    ka, kb = match_key(a), match_key(b)
    if not ka or not kb:
        return False
    la, lb = _label(a), _label(b)
    if la and lb:
        return la == lb
    if ka == kb:
        return True
    short, long = (ka, kb) if len(ka) <= len(kb) else (kb, ka)
    if long[: len(short)] == short:
        return True
    if len(short) >= 2 and contains_words(short, long):
        return True
    if la or lb:
        return False  # a labelled title matches only by its words
    return difflib.SequenceMatcher(None, " ".join(ka), " ".join(kb), autojunk=False).ratio() >= TITLE_MATCH_MIN_RATIO


# -- placing entries in order --------------------------------------------------------------------
def align_monotone(
    n_entries: int, n_slots: int, matches: Callable[[int], Sequence[int]]
) -> list[int]:
    """Place entries on slots in order, each once, as many as can be.

    A longest chain: entry ``i`` may take slot ``j`` when ``j in matches(i)``; chosen pairs
    increase in both ``i`` and ``j`` (so each entry lands once, each slot holds one entry,
    and the order of the entries is kept). One chain of the greatest length is returned
    (patience sorting over the candidate pairs); O(P log P) for P candidate pairs.

    Args:
        n_entries: Number of entries (outline entries, in document order).
        n_slots: Number of slots (tree headings or text lines, in document order).
        matches: For entry ``i``, the slots it may take (any order).

    Returns:
        ``slot_of``: for each entry, its slot, or -1 when it is not placed.
    """
    import bisect

    # Patience-style longest strictly increasing chain over pairs sorted by (i, -j), so that
    # one entry never takes two slots of a chain.
    tails: list[int] = []  # tails[k] = smallest slot ending a chain of length k + 1
    tail_pair: list[int] = []  # index into pairs of that tail
    pairs: list[tuple[int, int]] = []
    back: list[int] = []
    for i in range(n_entries):
        for j in sorted(set(matches(i)), reverse=True):
            if not 0 <= j < n_slots:
                continue
            k = bisect.bisect_left(tails, j)
            pairs.append((i, j))
            back.append(tail_pair[k - 1] if k else -1)
            if k == len(tails):
                tails.append(j)
                tail_pair.append(len(pairs) - 1)
            else:
                tails[k] = j
                tail_pair[k] = len(pairs) - 1
    slot_of = [-1] * n_entries
    p = tail_pair[-1] if tail_pair else -1
    while p >= 0:
        i, j = pairs[p]
        slot_of[i] = j
        p = back[p]
    return slot_of

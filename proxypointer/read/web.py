"""HTML (``*.html``, ``*.htm``) to markdown: BeautifulSoup parses, markdownify writes.

Structure comes from the format, never from the look where the format says it:

* ``<h1>``-``<h6>`` are headings at their levels (markdownify writes them as ATX headings).
* A **linked contents table**, as SEC EDGAR filings have one, places its entries exactly: a
  ``<table>`` with at least :data:`MIN_CONTENTS_LINKS` links to anchors of the same page
  (``<a href="#item7">``) is a contents table, and each linked anchor's block (the element with
  that ``id`` or ``name``, or the first block with text after an empty anchor) becomes a
  heading, unless the page writes it as a heading tag already (a ``<section id>`` opening with
  ``<h2>``, an ``<h3 id>``: the tag's level stands). Its level is the contents': a ``Part``
  entry is one level above the entries after it, and an entry indented further than the least
  indented entries that are no Part (``padding-left``, ``margin-left`` or ``text-indent`` of its
  cell) one level below. A block longer than :data:`MAX_TITLE_WORDS` words (the anchor sits on a
  paragraph) gets the entry's title as a
  heading line before it instead. The table itself is headed by the line above it that says
  ``Contents``, or by a ``Contents`` heading written in, at its first entry's level (a sibling
  of what follows, never its parent), so that it is noise to the index (a contents section
  is not embedded), not a section to retrieve.
* Scripts, styles, the ``<head>``, navigation (``<nav>``: a site's menus, a page's "On this
  page" list) and hidden elements (``display:none``: an inline XBRL filing's ``ix:header``) are
  dropped; links keep their text; images are markdown images (alt text and address).

Tables become pipe tables whose first row is their header (markdownify's
``table_infer_header``).
"""

from __future__ import annotations

import codecs
import logging
import re
from typing import Any

from ..errors import DocumentError, EmptyDocumentError
from ..tree.outline import title_match

__all__ = ["MAX_DEPTH", "MAX_TITLE_WORDS", "MIN_CONTENTS_LINKS", "html_markdown"]

logger = logging.getLogger(__name__)

#: Fewest links to anchors of the page in one table for it to be a contents table (a table
#: with one or two such links is a footnote or a "back to top" row).
MIN_CONTENTS_LINKS = 3
#: Most words of an anchored block that becomes a heading itself (an EDGAR Item title:
#: "Item 7. Management's Discussion and Analysis of Financial Condition and Results of
#: Operations" has 13).
MAX_TITLE_WORDS = 24
#: Deepest nesting of containers (``div``, ``span``, ``font``, ...) kept; deeper ones are
#: unwrapped, their content kept (markdownify recurses once per level, and Python's stack
#: ended near 350 nested ``div``s).
MAX_DEPTH = 64
_CONTAINERS = frozenset({"div", "span", "font", "section", "article", "main", "aside", "center", "blockquote",
                         "b", "i", "u", "em", "strong", "small", "big", "sup", "sub", "label", "nav", "header",
                         "footer", "figure", "figcaption", "ul", "ol", "li", "dl", "dd", "dt", "p", "a"})
#: Points of indentation deeper than the table's least indented entry for a level below.
INDENT_STEP_PT = 4.0

_PART = re.compile(r"^\s*part\s+[ivx\d]+\b", re.IGNORECASE)
#: A contents entry's page number: a cell of its own (``45``, ``iv``, ``F-3``), or digits
#: ending the entry's only cell.
_FOLIO_CELL = re.compile(r"^(?:\d{1,4}|[ivxlc]{1,6}|[A-Z]{1,2}-\d{1,3})$", re.IGNORECASE)
_FOLIO_END = re.compile(r"\s+\d{1,4}$")
_INDENT = re.compile(r"(padding-left|margin-left|text-indent)\s*:\s*(-?[\d.]+)\s*(pt|px|em|in)?", re.IGNORECASE)
_UNITS = {"pt": 1.0, "px": 0.75, "em": 12.0, "in": 72.0, None: 0.75}
#: Elements that hold a line of their own (a heading replaces one of them).
_BLOCKS = ("p", "div", "li", "td", "th", "center", "h1", "h2", "h3", "h4", "h5", "h6")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_HIDDEN = re.compile(r"display\s*:\s*none", re.IGNORECASE)


def _text(el: Any) -> str:  # noqa: ANN401 - a bs4 element
    return " ".join(el.get_text(" ").split())


def _indent_pt(el: Any, stop: Any) -> float:  # noqa: ANN401 - bs4 elements
    """Indentation of ``el`` from its own style and its ancestors' up to ``stop`` (points)."""
    total = 0.0
    node = el
    while node is not None and node is not stop:
        for prop, value, unit in _INDENT.findall(node.get("style", "") if hasattr(node, "get") else ""):
            if prop.lower() != "text-indent" or float(value) > 0:
                total += float(value) * _UNITS.get(unit.lower() if unit else None, 0.75)
        node = node.parent
    return total


def _entry_title(row: Any) -> str:  # noqa: ANN401 - a bs4 element
    """Return a contents row's title: its cells' text without the page number."""
    cells = [t for t in (_text(c) for c in row.find_all(["td", "th"])) if t]
    if len(cells) > 1 and _FOLIO_CELL.match(cells[-1]):
        cells.pop()
    elif len(cells) == 1:
        cells[0] = _FOLIO_END.sub("", cells[0])
    return " ".join(cells).strip()


def _anchors(soup: Any) -> dict[str, Any]:  # noqa: ANN401 - bs4 elements
    """Every element a ``#fragment`` can name: ``id`` first, then ``<a name>`` (HTML's order)."""
    out: dict[str, Any] = {}
    for el in soup.find_all(attrs={"name": True}):
        out.setdefault(str(el["name"]), el)
    for el in soup.find_all(id=True):
        out[str(el["id"])] = el
    return out


def _contents_tables(soup: Any) -> list[tuple[Any, list[tuple[str, Any, float]]]]:  # noqa: ANN401
    """Tables of links to anchors of this page: ``(table, [(title, target, indent)])``."""
    found = []
    anchors: dict[str, Any] | None = None
    for table in soup.find_all("table"):
        if table.find_parent("table") is not None:
            continue
        entries: list[tuple[str, Any, float]] = []
        seen: set[int] = set()
        for row in table.find_all("tr"):
            link = next((a for a in row.find_all("a", href=True) if a["href"].startswith("#") and len(a["href"]) > 1),
                        None)
            if link is None:
                continue
            if anchors is None:
                anchors = _anchors(soup)
            target = anchors.get(link["href"][1:])
            if target is None or id(target) in seen or table in target.parents:
                continue
            seen.add(id(target))
            title = _entry_title(row) or _text(link)
            entries.append((title, target, _indent_pt(link, row)))  # the link, its cell and what holds it
        if len(entries) >= MIN_CONTENTS_LINKS:
            found.append((table, entries))
    return found


def _levels(entries: list[tuple[str, Any, float]]) -> list[int]:
    """Level of each contents entry: Parts above what follows them, indented entries below."""
    parts = any(_PART.match(title) for title, _, _ in entries)
    least = min((indent for title, _, indent in entries if not _PART.match(title)), default=0.0)
    out = []
    for title, _, indent in entries:
        if _PART.match(title):
            out.append(1)
            continue
        level = 2 if parts else 1
        if indent > least + INDENT_STEP_PT:
            level += 1
        out.append(level)
    return out


def _written_heading(target: Any) -> Any:  # noqa: ANN401 - bs4 elements
    """Return the heading tag an anchor is, is in, or opens with (``<section id><h2>``); else None."""
    if target.name in _HEADINGS:
        return target
    parent = target.find_parent(_HEADINGS)
    if parent is not None:
        return parent
    first = target.find(_HEADINGS)
    if first is not None and _text(first) and _text(target).startswith(_text(first)):
        return first
    return None


def _block_of(el: Any) -> Any:  # noqa: ANN401 - bs4 elements
    """Return the nearest block that holds ``el`` (itself when it is one), else None."""
    top = ("body", "[document]")
    block = el
    while block.name not in _BLOCKS and block.parent is not None and block.parent.name not in top:
        block = block.parent
    return block if block.name in _BLOCKS else None


def _innermost(el: Any) -> Any:  # noqa: ANN401 - bs4 elements
    """Return the innermost block at the start of ``el``'s text (a div of one line, not its table)."""
    inner = el
    while True:
        kids = [k for k in inner.find_all(_BLOCKS, recursive=False) if _text(k)]
        if not kids or _text(kids[0]) != _text(inner):
            return inner
        inner = kids[0]


def _heading_block(target: Any, title: str) -> Any:  # noqa: ANN401 - bs4 elements
    """Return the block an anchor names, or None.

    An anchor with text is its own block. An empty anchor (``<a name>``, an empty ``<div id>``)
    names the block it opens, else the next block with text, else the block before it: the one
    of these whose text is the contents entry's title (:func:`~proxypointer.tree.outline.title_match`),
    and when none is, the block it opens or the next.
    """
    if _text(target):
        return _block_of(target) or target
    candidates = []
    holder = _block_of(target.parent) if target.parent is not None else None
    if holder is not None and _text(holder):
        before = []
        for node in holder.descendants:  # the text of the block before the anchor
            if node is target:
                break
            if getattr(node, "name", None) is None:
                before.append(str(node))
        if not "".join(before).strip():  # the anchor opens this block: "<p><a name=i1></a><b>Item 1.</b></p>"
            candidates.append(holder)
    following = next((el for el in target.find_all_next(_BLOCKS) if _text(el)), None)
    if following is not None:
        candidates.append(_innermost(following))
    previous = next((el for el in target.find_all_previous(_BLOCKS) if _text(el) and el not in target.parents),
                    None)
    for block in candidates + ([_innermost(previous)] if previous is not None else []):
        if title_match(title, _text(block)):
            return block
    return candidates[0] if candidates else None


def _mark_contents(soup: Any) -> int:  # noqa: ANN401
    """Write each linked contents entry's block as a heading at its level; return how many."""
    placed = 0
    for table, entries in _contents_tables(soup):
        used: list[int] = []  # the entries' levels as written: the contents' or the page's tags
        for (title, target, _), level in zip(entries, _levels(entries), strict=True):
            written = _written_heading(target)
            if written is not None:
                used.append(int(written.name[1]))
                continue  # the page's own heading tag says it: its level stands
            block = _heading_block(target, title)
            if block is None:
                continue
            if block.name in _HEADINGS:
                used.append(int(block.name[1]))
                continue
            used.append(min(level, 6))
            words = _text(block).split()
            heading = soup.new_tag(f"h{min(level, 6)}")
            if len(words) <= MAX_TITLE_WORDS and not block.find("table"):
                heading.string = " ".join(words)
                block.replace_with(heading)
            else:  # the anchor sits on a paragraph: the entry's title goes before it
                heading.string = title
                block.insert_before(heading)
            placed += 1
        # the table's heading takes the level of its first entry: beside what follows, never above it
        label = soup.new_tag(f"h{used[0] if used else 1}")
        before = table.find_previous(string=lambda s: bool(s.strip()))
        block = _block_of(before.parent) if before is not None else None
        if block is not None and "contents" in _text(block).lower() and len(_text(block).split()) <= 6:
            label.string = _text(block)  # "TABLE OF CONTENTS" above the table is its heading
            block.replace_with(label)
        else:
            label.string = "Contents"
            table.insert_before(label)
    return placed


def _flatten_deep(soup: Any) -> int:  # noqa: ANN401 - a bs4 document
    """Unwrap containers nested deeper than :data:`MAX_DEPTH` (markdownify recurses per level).

    Returns:
        Containers unwrapped (their children stay where they were).
    """
    deep: list[Any] = []
    stack = [(soup, 0)]
    while stack:  # depth-first without recursion: the nesting may be thousands deep
        node, depth = stack.pop()
        for child in getattr(node, "contents", ()):
            if getattr(child, "name", None) is None:
                continue
            if depth >= MAX_DEPTH and child.name in _CONTAINERS:
                deep.append(child)
            stack.append((child, depth + 1))
    for el in reversed(deep):  # innermost first
        el.unwrap()
    return len(deep)


def _utf8_over_declared(data: bytes, path: str) -> str | None:
    """``"utf-8"`` where the bytes are UTF-8 but the page declares another charset, else None.

    Pages saved or served as UTF-8 keep a ``<meta charset="windows-1252">`` from their template
    often enough; read as declared, every accented letter becomes two (``Ã©``). Non-ASCII text
    that decodes as UTF-8 is UTF-8 all but always (Latin-1 text would need letters like ``Ã``
    followed by a symbol from 0x80-0xBF in every place), so the bytes win, with a warning.
    """
    from bs4.dammit import EncodingDetector

    if data.isascii():
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    declared = EncodingDetector.find_declared_encoding(data, is_html=True)
    try:
        other = bool(declared) and codecs.lookup(declared).name != "utf-8"
    except LookupError:  # a charset Python does not know: the bytes decide all the more
        other = True
    if other:
        logger.warning("%s: declares charset %s, but its bytes are UTF-8; read as UTF-8", path, declared)
    return "utf-8"


def html_markdown(data: bytes, path: str) -> str:
    """Convert the bytes of an HTML file to markdown.

    Args:
        data: The file's bytes (the encoding from a byte-order mark, UTF-8 where the bytes are
            UTF-8 whatever the page declares, a ``<meta charset>`` or a guess: BeautifulSoup's
            ``UnicodeDammit``).
        path: The file, for messages.

    Returns:
        Markdown: ATX headings from heading tags and from a linked contents table, paragraphs,
        lists, pipe tables.

    Raises:
        DocumentError: If the file is binary (NUL bytes: an image, a PDF or an archive named
            ``.html``).
        EmptyDocumentError: If it holds no text.
    """
    import markdownify
    from bs4 import BeautifulSoup

    head = data[:4096]
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError(f"{path}: binary data, not HTML; check that the file is really a web page")
    soup = BeautifulSoup(data, "html.parser", from_encoding=_utf8_over_declared(data, path))
    for el in soup.find_all(["script", "style", "noscript", "template", "head", "nav"]):
        el.decompose()
    for el in soup.find_all(style=_HIDDEN):
        el.decompose()
    _flatten_deep(soup)
    _mark_contents(soup)
    text = markdownify.markdownify(str(soup), heading_style="ATX", table_infer_header=True, bullets="-",
                                   escape_misc=False, strip=["a"])
    if not text.strip():
        raise EmptyDocumentError(f"{path}: no text in this HTML file; skipped")
    return text

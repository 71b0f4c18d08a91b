"""Inline ``data:`` URI payloads replaced by short placeholders in text meant for a model.

Converters that embed pictures write them inline: ``![alt](data:image/png;base64,iVBOR...)``
(pymupdf4llm ``embed_images=True``, docling ``ImageRefMode.EMBEDDED``), ``<img src="data:...">``
(HTML kept in markdown), reference definitions ``[logo]: data:image/png;base64,...``. A
12 KB payload is about 5,000 word pieces of noise: it became 63 chunks in shared case 31. The
payload is replaced wherever text is embedded or given to a language model; the stored source
keeps it (pointers slice the exact lines).

Replacements (alt text kept, payload dropped):

* a markdown image or an HTML ``<img>`` whose source is a base64 data URI ->
  ``[image: <alt>]`` (``[image]`` without alt text);
* any other base64 data URI (links, reference definitions, bare URIs, other MIME types) ->
  ``data:<mime>[;params];base64,...``.

Payloads wrapped over several lines are recognised inside ``(...)``, ``<...>`` and quotes, and
after a bare URI when the following lines hold base64 characters only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["DataUriEdit", "data_uri_edits", "image_placeholder", "replace_data_uris"]

# RFC 2397: data:[<mediatype>][;base64],<data>; only base64 payloads are long enough to matter.
_DATA_URI = re.compile(
    r"(?<![\w.+-])data:(?P<mime>[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+)?(?P<params>(?:;[a-z0-9!#$&^_.+-]+=[^;,\s\"'()<>]*)*)"
    r";base64,",
    re.IGNORECASE,
)
# Base64 (standard and URL-safe) and percent-encoding.
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-%")
_CLOSERS = {"(": ")", "<": ">", '"': '"', "'": "'"}
# A wrapped payload's lines are long; a short fragment before the last one is prose, not payload.
_MIN_WRAPPED = 16
_MD_IMAGE_BEFORE = re.compile(r"!\[(?P<alt>[^\[\]]*)\]\(\s*<?\Z")
_MD_IMAGE_AFTER = re.compile(r">?\s*(?:\"[^\"\n]*\"|'[^'\n]*')?\s*\)")
_IMG_BEFORE = re.compile(r"<img\b[^<>]*?\bsrc\s*=\s*[\"']?\Z", re.IGNORECASE)
_LOOKBEHIND = 600  # characters searched back for ``![alt](`` or ``<img ... src=``


@dataclass(frozen=True, slots=True)
class DataUriEdit:
    """One replacement: characters ``[start, end)`` (0-based, half-open) become ``text``."""

    start: int
    end: int
    text: str


def _payload_end(text: str, start: int, opener: str) -> int:
    """End (exclusive) of the payload that begins at ``start`` (just after ``base64,``)."""
    n = len(text)
    j = start
    while j < n and text[j] in _B64:
        j += 1
    strict = j
    closer = _CLOSERS.get(opener)
    if closer is None:
        # A bare URI (reference definition, plain text): continue over lines of payload only.
        while j < n and text[j] == "\n":
            k = text.find("\n", j + 1)
            k = n if k == -1 else k
            line = text[j + 1 : k].strip()
            if len(line) < _MIN_WRAPPED or not all(ch in _B64 for ch in line):
                break
            j = k
        return j
    # Delimited: the payload may be wrapped over lines, up to the closing delimiter.
    k = start
    while k < n and (text[k] in _B64 or text[k] in " \t\n"):
        k += 1
    end = k
    while end > start and text[end - 1] in " \t\n":
        end -= 1
    fragments = text[start:end].split()
    at_close = k < n and (text[k] == closer or (closer == ")" and text[k] in "\"'" and end < k))
    if at_close and all(len(f) >= _MIN_WRAPPED for f in fragments[:-1]):
        return end
    return strict


class _ImgAlt(HTMLParser):
    """Reads the ``alt`` attribute of one ``<img>`` tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.alt = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.alt = next((v or "" for k, v in attrs if k == "alt"), "")


def image_placeholder(alt: str) -> str:
    """``[image: <alt>]`` with the alt text's whitespace collapsed, ``[image]`` without one."""
    alt = " ".join(alt.split())
    return f"[image: {alt}]" if alt else "[image]"


def data_uri_edits(text: str) -> list[DataUriEdit]:
    """Find the base64 data URIs of ``text`` and what each becomes in embedded text.

    Args:
        text: Markdown (or HTML) text.

    Returns:
        Non-overlapping edits in text order; empty when ``text`` holds no base64 data URI.
        Offsets are 0-based, half-open, into ``text``.
    """
    if "base64," not in text and "BASE64," not in text.upper():
        return []
    edits: list[DataUriEdit] = []
    done = 0
    for m in _DATA_URI.finditer(text):
        if m.start() < done:
            continue
        opener = text[m.start() - 1] if m.start() > 0 else ""
        if opener == "=":  # unquoted HTML attribute: ends at whitespace or ">"
            opener = ""
        end = _payload_end(text, m.end(), opener)
        if end == m.end():
            continue  # no payload
        before = text[max(0, m.start() - _LOOKBEHIND) : m.start()]
        offset = m.start() - len(before)
        image = _MD_IMAGE_BEFORE.search(before)
        if image:
            after = _MD_IMAGE_AFTER.match(text, end)
            if after:
                edits.append(DataUriEdit(offset + image.start(), after.end(), image_placeholder(image["alt"])))
                done = after.end()
                continue
        tag = _IMG_BEFORE.search(before)
        if tag:
            close = text.find(">", end)
            if close != -1 and "<" not in text[end:close]:
                parser = _ImgAlt()
                parser.feed(text[offset + tag.start() : m.start()] + text[end : close + 1])
                parser.close()
                edits.append(DataUriEdit(offset + tag.start(), close + 1, image_placeholder(parser.alt)))
                done = close + 1
                continue
        mime = m["mime"] or "text/plain"
        edits.append(DataUriEdit(m.start(), end, f"data:{mime}{m['params']};base64,..."))
        done = end
    return edits


def replace_data_uris(text: str) -> str:
    """Replace inline base64 ``data:`` payloads by short placeholders (shared case 31).

    For text that is embedded or sent to a language model (chunk embed text, ``ask`` context);
    never apply it to the stored source, whose lines pointers slice.

    Args:
        text: Markdown (or HTML) text.

    Returns:
        ``text`` with each markdown image or ``<img>`` tag whose source is a base64 data URI
        replaced by ``[image: <alt>]`` (``[image]`` without alt text), and every other base64
        data URI shortened to ``data:<mime>;base64,...``. Text without one is returned as is.

    Example:
        >>> replace_data_uris("See ![Pump room](data:image/png;base64,iVBORw0KGgo=) above.")
        'See [image: Pump room] above.'
    """
    edits = data_uri_edits(text)
    if not edits:
        return text
    out: list[str] = []
    pos = 0
    for e in edits:
        out.append(text[pos : e.start])
        out.append(e.text)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)

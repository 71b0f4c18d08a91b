"""Word, HTML and PowerPoint input (extra ``office``): converted to markdown, then read like it.

One reader per format, each converting with a well-kept, permissively licensed library:

========  ==========================================  ======================================
suffix    converter (:mod:`.word`, :mod:`.web`,        licences
          :mod:`.slides`)
========  ==========================================  ======================================
.docx     mammoth -> HTML, markdownify -> markdown    BSD-2-Clause, MIT
.html     BeautifulSoup (html.parser), markdownify    MIT, MIT
.htm      the same
.pptx     python-pptx                                 MIT
========  ==========================================  ======================================

The stored text is the converter's markdown (``proxypointer convert`` writes the same), so a
citation's line numbers are its lines; a deck's slides are its pages (``deck.pptx#slide=12``).
The source key covers the file's bytes, the converter, the versions of its libraries and
:data:`CONVERSION_RULE`, so an unchanged file is neither converted nor embedded again, and a
new library version or rule converts it again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
from collections.abc import Callable

from ..errors import DocumentError, EmptyDocumentError, MissingDependencyError
from ..lines import normalise_text, split_lines
from ..tree.pages import BUILTIN_STYLES, page_map
from .base import ReadResult, with_pages

__all__ = ["CONVERSION_RULE", "OFFICE_INSTALL", "OFFICE_SUFFIXES", "OfficeReader"]

#: Version of our part of the conversions (style map, contents links, slide layout; 2: an HTML
#: page's UTF-8 bytes win over the charset it declares); part of the source key.
CONVERSION_RULE = "2"
#: Suffix -> format read by :class:`OfficeReader`.
OFFICE_SUFFIXES = {".docx": "docx", ".html": "html", ".htm": "html", ".pptx": "pptx"}
#: What to run when the ``office`` extra is absent.
OFFICE_INSTALL = ("pip install 'proxypointer[office]' "
                  "(in a checkout: pip install -c constraints-cpu.txt -e '.[dev,office]')")

#: Format -> (import names it needs, their distributions: named when absent, and their versions
#: key a conversion).
_NEEDS = {
    "docx": (("mammoth", "markdownify"), ("mammoth", "markdownify")),
    "html": (("bs4", "markdownify"), ("beautifulsoup4", "markdownify")),
    "pptx": (("pptx",), ("python-pptx",)),
}


def _converter(fmt: str) -> Callable[[bytes, str], str]:
    if fmt == "docx":
        from .word import docx_markdown

        return docx_markdown
    if fmt == "html":
        from .web import html_markdown

        return html_markdown
    from .slides import pptx_markdown

    return pptx_markdown


class OfficeReader:
    """``*.docx``, ``*.html``/``*.htm`` or ``*.pptx``: converted to markdown (module docstring).

    Picklable (a format name and version strings). Converting is quick and in-process (no
    cache: an unchanged file is skipped by its source key before it is read).

    Args:
        fmt: ``docx``, ``html`` or ``pptx``.

    Raises:
        ValueError: If ``fmt`` is none of those.
    """

    def __init__(self, fmt: str) -> None:
        if fmt not in _NEEDS:
            raise ValueError(f"format: expected one of {sorted(_NEEDS)}, got {fmt!r}")
        self.fmt = fmt
        self.name = fmt
        self._version_list: list[str] | None = None  # read once: a folder of files asks per file

    def missing(self) -> str | None:
        """Why this format cannot be read here (the extra's packages absent); None when it can."""
        modules, dists = _NEEDS[self.fmt]
        absent = [d for m, d in zip(modules, dists, strict=True) if importlib.util.find_spec(m) is None]
        if not absent:
            return None
        return f"{self.fmt.upper()} input needs the office extra ({', '.join(absent)} not installed): {OFFICE_INSTALL}"

    def _versions(self) -> list[str]:
        if self._version_list is not None:
            return self._version_list
        out = []
        for dist in _NEEDS[self.fmt][1]:
            try:
                out.append(f"{dist}=={importlib.metadata.version(dist)}")
            except importlib.metadata.PackageNotFoundError:
                out.append(f"{dist}==absent")
        self._version_list = out
        return out

    def source_key(self, data: bytes, path: str) -> str:
        """SHA-256 of the bytes + format + library versions + :data:`CONVERSION_RULE` (no conversion)."""
        payload = [hashlib.sha256(data).hexdigest(), self.fmt, self._versions(), CONVERSION_RULE]
        return hashlib.sha256(json.dumps(payload, separators=(",", ":")).encode("utf-8")).hexdigest()

    def convert(self, data: bytes, path: str) -> str:
        r"""Return the converter's markdown of the file (a deck's slide markers kept).

        What ``proxypointer convert`` writes; :meth:`read` stores it with the markers emptied.

        Raises:
            EmptyDocumentError: If the file is empty or holds no text (:meth:`read` gives empty
                text instead, which ingest skips with a note).
            DocumentError: If the file cannot be read as this format (damaged,
                password-protected, nested too deeply); the message names it and the cure.
            MissingDependencyError: If the extra is not installed.
        """
        why = self.missing()
        if why is not None:
            raise MissingDependencyError(f"{path}: {why}")
        if not data:
            raise EmptyDocumentError(f"{path}: empty file (0 bytes); skipped")
        try:
            markdown = _converter(self.fmt)(data, path)
        except (DocumentError, MissingDependencyError):
            raise
        except RecursionError as err:
            raise DocumentError(f"{path}: nested too deeply to convert; simplify or re-export the file") from err
        except Exception as err:  # the libraries raise many types on damaged files (OSError, ExpatError, ...)
            raise DocumentError(f"{path}: damaged {self.fmt.upper()} file, cannot convert it "
                                f"({type(err).__name__}: {err}); save it again from its application") from err
        text = normalise_text(markdown)
        if not text.strip():
            raise EmptyDocumentError(f"{path}: no text in this {self.fmt.upper()} file; skipped")
        return text if text.endswith("\n") else text + "\n"

    def read(self, data: bytes, path: str) -> ReadResult:
        """Convert the file; a deck's lines get their slide as page.

        Raises:
            DocumentError: If the file cannot be read as this format (names it and the cure).
            MissingDependencyError: If the extra is not installed.
        """
        try:
            text = self.convert(data, path)
        except EmptyDocumentError:
            return ReadResult("", self.source_key(data, path))  # skipped with a note, as an empty .md is
        if self.fmt != "pptx":
            return ReadResult(text, self.source_key(data, path))
        pages = page_map(split_lines(text), BUILTIN_STYLES["opendataloader"])
        stored, line_pages = with_pages(text, pages)
        return ReadResult(stored, self.source_key(data, path), line_pages, printed=False)

r"""Reading source files: bytes -> normalised markdown text, one reader per file suffix.

The first stage of ingestion after discovery. A :class:`Reader` turns a file's bytes into a
:class:`ReadResult`: the markdown text that is stored, parsed and cited (line ends normalised
to ``\n``), the *source key* that decides whether the file changed since it was indexed, and
optionally the page of each line. :class:`MarkdownReader` serves ``*.md`` and ``*.markdown``;
:class:`PDFReader` serves ``*.pdf`` (extra ``pdf``) through a PDF converter; both are entries
of the suffix table that :func:`default_readers` returns.

Pages (issue 14): a PDF's converted markdown and a markdown file that carries page markers
(``<!-- page 12 -->`` and the other styles of :mod:`proxypointer.tree.pages`) are read with the
page of every line, and their marker lines are emptied (:func:`~proxypointer.tree.pages.blank_markers`):
line numbers stay those of the file (or of ``proxypointer convert``'s output), while a marker is
never parsed as a heading, embedded, shown or cited.

A reader that converts in batches (``read_many``, the PDF reader: several JVMs at once) is
called once for all the changed files of a run by ``ingest.read_batch``, before they are
parsed.

Encodings (shared case 33): a byte-order mark decides (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE);
without one the file must be UTF-8, or failing that plausible Windows-1252 (what Windows
editors and Outlook exports write), which is decoded with a warning naming the file; anything
else is refused with the file, the line and the cure.
"""

from __future__ import annotations

import codecs
import hashlib
import importlib.util
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DocumentError, MissingDependencyError, ProxyPointerError
from ..lines import document_hash, normalise_text, split_lines
from ..tree.pages import PageMap, page_map, style_for_config
from .base import Reader, ReadResult, with_pages

if TYPE_CHECKING:
    from ..config import PagesConfig, PDFConfig, ProxyPointerConfig
    from .pdf import PDFConverter

__all__ = [
    "MARKDOWN_SUFFIXES",
    "OUTLINE_VERSION",
    "PAGES_VERSION",
    "PDF_SUFFIXES",
    "MarkdownReader",
    "PDFReader",
    "ReadResult",
    "Reader",
    "decode_markdown",
    "default_readers",
    "read_bytes",
    "read_document",
    "with_pages",
]

logger = logging.getLogger(__name__)

#: File suffixes read as markdown (lower case).
MARKDOWN_SUFFIXES = (".md", ".markdown")
#: File suffixes read as PDF (lower case).
PDF_SUFFIXES = (".pdf",)
#: Version of how a PDF's bookmarks or printed contents become headings
#: (:mod:`proxypointer.tree.outlinetext`, :mod:`proxypointer.tree.contents`; 2: contents entries run
#: together or wrapped over lines, parts starting with their first entry, an unplaced entry
#: written before its first placed child; 3: contents entries nested by their printed indents);
#: part of the source key of a PDF read with ``pdf.bookmarks`` or ``pdf.contents`` on.
OUTLINE_VERSION = 3
#: Version of how page markers become a page map and empty lines; part of the source key of a
#: markdown file with page markers, so that a store built before pages were read re-reads it.
PAGES_VERSION = 1

#: Byte-order marks, longest first: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32 BE"),
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16 BE"),
)

#: Three or more non-ASCII bytes in a row: a multi-byte encoding (Shift-JIS, GBK, ...) or
#: UTF-8 gone wrong, not Windows-1252 prose, where accented letters and typographic
#: punctuation stand between ASCII characters ("Caf\xe9", "\x93quoted\x94").
_NON_ASCII_RUN = re.compile(rb"[\x80-\xff]{3,}")


def _looks_like_utf16(data: bytes) -> str | None:
    """``UTF-16 LE``/``UTF-16 BE`` when NUL bytes sit at every other position (BOM-less UTF-16)."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    odd = sample[1::2].count(0) / (len(sample) // 2)
    even = sample[0::2].count(0) / ((len(sample) + 1) // 2)
    if odd > 0.3 and even < 0.05:
        return "UTF-16 LE"
    if even > 0.3 and odd < 0.05:
        return "UTF-16 BE"
    return None


def decode_markdown(data: bytes, path: str | Path) -> tuple[str, tuple[str, ...]]:
    r"""Decode a markdown file's bytes and normalise its line ends.

    Args:
        data: The file's bytes.
        path: The file, for messages.

    Returns:
        ``(text, warnings)``: the text (BOM dropped, ``\r\n`` and ``\r`` turned into
        ``\n``) and one warning when the Windows-1252 fallback was used.

    Raises:
        DocumentError: For NUL bytes without a byte-order mark (binary, or UTF-16 without a
            BOM: the message says which), data invalid for the encoding its BOM names, or bytes
            that are neither UTF-8 nor plausible Windows-1252; each message names the file,
            the line where it can, and the cure.
    """
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                return normalise_text(data.decode(codec)), ()
            except UnicodeDecodeError as err:
                raise DocumentError(
                    f"{path}: {label} file (BOM {bom.hex(' ').upper()}) holds invalid {label} data at byte "
                    f"{err.start}; re-save it as UTF-8"
                ) from err
    if b"\x00" in data:
        utf16 = _looks_like_utf16(data)
        if utf16:
            raise DocumentError(
                f"{path}: looks like {utf16} text without a byte-order mark; convert it to UTF-8 "
                "(or save it as UTF-16 with a BOM)"
            )
        raise DocumentError(f"{path}: looks like a binary file (NUL bytes); expected markdown text")
    try:
        return normalise_text(data.decode("utf-8")), ()
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        utf8_error = DocumentError(
            f"{path}:{line}: invalid UTF-8 at byte {err.start}, and not Windows-1252 text either; "
            "convert the file to UTF-8 (e.g. iconv -f <its encoding> -t UTF-8)"
        )
        if _NON_ASCII_RUN.search(data):
            raise utf8_error from err
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            raise utf8_error from err
    warning = f"{path}:{line}: not UTF-8; decoded as Windows-1252 (cp1252). Convert it to UTF-8 if that is wrong"
    logger.debug("%s", warning)
    return normalise_text(text), (warning,)


def read_bytes(path: str | Path) -> bytes:
    """Read a file's bytes.

    Raises:
        DocumentError: If it is missing, a folder, not a regular file (a named pipe, whose
            reading would wait for a writer, a socket, a device) or unreadable (names the file).
    """
    p = Path(path)
    if p.exists() and not p.is_file() and not p.is_dir():
        raise DocumentError(f"{p}: not a regular file (a pipe, socket or device); give a markdown file")
    try:
        return p.read_bytes()
    except FileNotFoundError as err:
        raise DocumentError(f"{p}: no such file; check the path") from err
    except IsADirectoryError as err:
        raise DocumentError(f"{p}: is a directory, expected a markdown file") from err
    except OSError as err:
        raise DocumentError(f"{p}: cannot read ({err.strerror})") from err


def read_document(path: str | Path) -> str:
    r"""Read a markdown file as normalised text (see :func:`decode_markdown`).

    Args:
        path: File path.

    Returns:
        The text, BOM removed and line ends normalised to ``\n``.

    Raises:
        DocumentError: If the file is missing or unreadable, looks binary, or its encoding
            cannot be told (see :func:`decode_markdown`); the message names the file.
    """
    return decode_markdown(read_bytes(path), path)[0]


class MarkdownReader:
    """``*.md`` and ``*.markdown``: decode (:func:`decode_markdown`), read page markers if any.

    Without page markers the key is the SHA-256 of the decoded, normalised text (not of the
    bytes), so re-saving a file with other line ends or another encoding of the same text
    changes nothing. With page markers (``pages.style``, auto-detected by default) the text
    is read with the page of each line and its marker lines emptied (:func:`with_pages`), and
    the key also covers the marker style and :data:`PAGES_VERSION`.

    Args:
        pages: The ``pages`` config section (default: auto-detect the built-in styles).
    """

    name = "markdown"

    def __init__(self, pages: PagesConfig | None = None) -> None:
        from ..config import PagesConfig

        self.pages = pages or PagesConfig()
        self._style = style_for_config(self.pages)

    def _paged(self, text: str) -> PageMap:
        return page_map(split_lines(text), self._style)

    def _key(self, text: str, pages: PageMap) -> str:
        if not pages.has_pages:
            return document_hash(text)
        style = self._style
        how = [pages.style, style.pattern.pattern, style.position, style.number_base] if style else [pages.style]
        payload = json.dumps([document_hash(text), "pages", PAGES_VERSION, how], separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def source_key(self, data: bytes, path: str) -> str:
        """SHA-256 of the normalised text, or with page markers of text + marker style."""
        text = decode_markdown(data, path)[0]
        return self._key(text, self._paged(text))

    def read(self, data: bytes, path: str) -> ReadResult:
        """Decode; with page markers, the page of each line and the marker lines emptied."""
        text, warnings = decode_markdown(data, path)
        pages = self._paged(text)
        stored, line_pages = with_pages(text, pages)
        return ReadResult(stored, self._key(text, pages), line_pages, warnings)


#: What to run when the ``pdf`` extra is absent.
PDF_INSTALL = "pip install 'proxypointer[pdf]' (in a checkout: pip install -c constraints-cpu.txt -e '.[dev,pdf]')"


class PDFReader:
    """``*.pdf``: converted to markdown with the page of every line (extra ``pdf``).

    The converter (:mod:`proxypointer.read.pdf`; default opendataloader-pdf, needs Java 11+) writes
    a page marker at every page boundary; the stored text is its markdown with the marker lines
    emptied (:func:`with_pages`), so line numbers are those of ``proxypointer convert``'s output.

    The source key is the conversion key: SHA-256 of the PDF's bytes + converter name + its
    version + its options (:func:`proxypointer.read.pdf.conversion_key`), computed without
    converting, so an unchanged PDF is neither converted nor embedded again. With a ``cache``
    folder, each conversion is also kept there by its key (:class:`proxypointer.read.pdf.ConversionCache`),
    so a change of tree or chunking settings re-chunks without converting again.

    Args:
        config: The ``pdf`` config section (converter options, ``workers``, ``java_heap_mb``).
        cache: Folder of the conversion cache, or None for none.
        converter: The converter (default: built from ``config``).
        shared_cache: The cache serves several stores (the evaluation harness's): never pruned
            by one store's ingest (:meth:`prune_cache`).
    """

    name = "pdf"

    def __init__(
        self,
        config: PDFConfig | None = None,
        *,
        cache: str | Path | None = None,
        converter: PDFConverter | None = None,
        shared_cache: bool = False,
    ) -> None:
        from ..config import PDFConfig
        from .pdf import ConversionCache, converter_from_config

        self.config = config or PDFConfig()
        self.converter = converter or converter_from_config(self.config)
        self.cache = ConversionCache(cache) if cache is not None else None
        self.shared_cache = shared_cache

    def missing(self) -> str | None:
        """Why PDFs cannot be read here: the extra's packages are absent; None when present.

        Java is checked when files are converted (:meth:`read_many`), not here.
        """
        absent = [m for m in ("opendataloader_pdf", "pypdf") if importlib.util.find_spec(m) is None]
        if not absent:
            return None
        return f"PDF input needs the pdf extra ({', '.join(absent)} not installed): {PDF_INSTALL}"

    def _conversion_key(self, data: bytes, path: str) -> str:
        try:
            return self.converter.key(hashlib.sha256(data).hexdigest())
        except MissingDependencyError as err:
            raise MissingDependencyError(f"{path}: not indexed: {err}") from err

    def source_key(self, data: bytes, path: str) -> str:
        """Conversion key of these bytes with this converter (no conversion).

        With ``pdf.bookmarks`` on, the key also covers :data:`OUTLINE_VERSION`, so that a
        store built before bookmarks were read reads the file again.

        Raises:
            MissingDependencyError: If the converter is not installed (names the file).
        """
        key = self._conversion_key(data, path)
        how = [name for name in ("bookmarks", "contents") if getattr(self.config, name)]
        if not how:
            return key
        return hashlib.sha256(json.dumps([key, "outline", OUTLINE_VERSION, how]).encode("utf-8")).hexdigest()

    def outlined(
        self, markdown: str, data: bytes | None = None, path: str = ""
    ) -> tuple[str, PageMap, tuple[str, ...]]:
        """Write the PDF's outline into the converter's markdown, page markers kept.

        What is indexed is this text with its marker lines emptied, so ``proxypointer
        convert`` writes it: a citation's line numbers are its lines.

        Args:
            markdown: The converter's output.
            data: The PDF's bytes, for its bookmarks (None: read from ``path``).
            path: The PDF, for messages.

        Returns:
            ``(text, page map, warnings)``; the warnings name contents entries left unplaced.
        """
        text = normalise_text(markdown)
        if text and not text.endswith("\n"):
            text += "\n"
        lines = split_lines(text)
        pages = page_map(lines, self.converter.marker_style)
        if pages.has_pages and (self.config.bookmarks or self.config.contents):
            return self._with_outline(lines, pages, data, path)
        return text, pages, ()

    def _result(self, markdown: str, key: str, data: bytes | None = None, path: str = "") -> ReadResult:
        text, pages, warnings = self.outlined(markdown, data, path)
        stored, line_pages = with_pages(text, pages)
        return ReadResult(stored, key, line_pages, warnings)

    def _with_outline(
        self, lines: list[str], pages: PageMap, data: bytes | None, path: str
    ) -> tuple[str, PageMap, tuple[str, ...]]:
        """Write the PDF's bookmarks, else its printed contents, into its converted lines.

        Bookmarks (``pdf.bookmarks``, :func:`~proxypointer.tree.outline.pdf_outline`) are placed on
        their page or inserted at its top; printed contents (``pdf.contents``,
        :func:`~proxypointer.tree.contents.contents_outline`) only where a line of the title lies
        within a page of the printed folio + offset, the others named in one warning.
        """
        from ..tree.contents import contents_outline
        from ..tree.indents import pdf_line_starts
        from ..tree.outline import Outline, pdf_outline
        from ..tree.outlinetext import apply_outline

        outline = Outline(())
        if self.config.bookmarks and (data is not None or path):
            try:
                outline = pdf_outline(path, data)
            except DocumentError as err:
                logger.warning("%s; its bookmarks are not used", err)
        same = "\n".join(lines) + "\n", pages, ()
        if outline.entries:
            got = apply_outline(lines, pages.line_pages, outline, pages.marker_lines)
            logger.info("%s: tree from its %d bookmarks (%d on their lines, %d inserted)",
                        path, len(outline), got.placed, got.inserted)
        elif self.config.contents:
            skip = frozenset(m - 1 for m in pages.marker_lines)
            starts = (lambda wanted: pdf_line_starts(path, data, wanted)) if data is not None or path else None
            outline = contents_outline(lines, pages.line_pages, skip, starts)
            if not outline.entries:
                return same
            got = apply_outline(lines, pages.line_pages, outline, pages.marker_lines, insert_missing=False,
                                page_slack=1, line_titles=True)
            logger.info("%s: %d of %d entries of its printed contents placed", path, got.placed, len(outline))
        else:
            return same
        warnings: tuple[str, ...] = ()
        if got.unplaced:
            names = ", ".join(f"'{e.title}' (p. {e.page})" for e in got.unplaced[:5])
            more = f" and {len(got.unplaced) - 5} more" if len(got.unplaced) > 5 else ""
            warnings = (f"{path}: {len(got.unplaced)} of {len(outline)} entries of its printed contents match no "
                        f"line near their page and are not headings: {names}{more}",)
        return "\n".join(got.lines) + "\n", page_map(got.lines, self.converter.marker_style), warnings

    def read(self, data: bytes, path: str) -> ReadResult:
        """Convert one PDF (one converter run; :meth:`read_many` converts many at once).

        Raises:
            DocumentError: If it cannot be converted (encrypted, no text layer, corrupt, no
                pages; the message names the file and what to do).
            MissingDependencyError: If the extra or Java is missing.
        """
        got = self.read_many([path], data=[data])[0]
        if isinstance(got, ProxyPointerError):
            raise got
        return got

    def read_many(
        self, paths: Sequence[str], *, data: Sequence[bytes] | None = None, show_progress: bool = False
    ) -> list[ReadResult | ProxyPointerError]:
        """Convert many PDFs, ``pdf.workers`` converter processes at once; bad files do not stop the rest.

        Files whose conversion is in the cache are not converted.

        Args:
            paths: PDF files.
            data: Their bytes when the caller has read them (else they are read here).
            show_progress: Show the converter's progress bar (pages) on stderr.

        Returns:
            Per file, in order: what was read, or the error naming the file (DocumentError for
            a bad file; MissingDependencyError for each file when the extra or Java is missing,
            then nothing is converted).
        """
        from .pdf import convert_pdfs

        out: list[ReadResult | ProxyPointerError | None] = [None] * len(paths)
        keys: list[str] = [""] * len(paths)
        conv_keys: list[str] = [""] * len(paths)
        pdf_bytes: list[bytes | None] = [None] * len(paths)  # never a whole batch of files in memory
        todo: list[int] = []
        for i, path in enumerate(paths):
            try:
                raw = read_bytes(path) if data is None else data[i]
                keys[i] = self.source_key(raw, path)
                conv_keys[i] = self._conversion_key(raw, path)
            except ProxyPointerError as err:
                out[i] = err
                continue
            if self.config.bookmarks and data is not None:
                pdf_bytes[i] = raw  # the caller's bytes; files read here are read again for their bookmarks
            cached = self.cache.get(conv_keys[i]) if self.cache is not None else None
            if cached is not None:
                out[i] = self._result(cached, keys[i], pdf_bytes[i], str(path))
            else:
                todo.append(i)
        if todo:
            try:
                batch = convert_pdfs(
                    [paths[i] for i in todo], self.converter, workers=self.config.workers, show_progress=show_progress
                )
            except MissingDependencyError as err:
                for i in todo:
                    out[i] = MissingDependencyError(f"{paths[i]}: not indexed: {err}")
                todo = []
            else:
                by_path = {str(c.path): c for c in batch.converted}
                failed = {str(f.path): f.error for f in batch.failed}
                for i in todo:
                    p = str(paths[i])
                    if p in failed:
                        out[i] = failed[p]
                        continue
                    conv = by_path[p]
                    result = self._result(conv.markdown, keys[i], pdf_bytes[i], p)
                    if self.cache is not None:
                        try:
                            self.cache.put(conv.key, conv.markdown, document_hash(result.text)[:16])
                        except OSError as err:  # only a cache: the file is read all the same
                            logger.warning("%s: cannot keep the conversion in %s (%s)", p, self.cache.folder, err)
                    out[i] = result
        return [r if r is not None else DocumentError(f"{paths[k]}: not converted") for k, r in enumerate(out)]

    def prune_cache(self, keep_hashes: Sequence[str]) -> int:
        """Drop cached conversions whose stored text no document uses.

        Args:
            keep_hashes: ``doc_hash`` of every stored source still in use.

        Returns:
            Entries deleted (0 without a cache, or with a shared one).
        """
        if self.cache is None or self.shared_cache:
            return 0
        return self.cache.prune(h[:16] for h in keep_hashes)


def default_readers(
    config: ProxyPointerConfig | None = None,
    *,
    conversion_cache: str | Path | None = None,
    shared_cache: bool = False,
) -> dict[str, Reader]:
    """Build the suffix table: lower-case suffix (with the dot) -> reader.

    Markdown (``*.md``, ``*.markdown``) with the ``pages`` section; PDF (``*.pdf``) with the
    ``pdf`` section; Word, HTML and PowerPoint (``*.docx``, ``*.html``, ``*.htm``, ``*.pptx``:
    :class:`~proxypointer.read.office.OfficeReader`). Each is listed even when its extra is
    absent, so that ingest can name the files it cannot read (``missing()``). Readers import their heavy dependencies
    only when they read.

    Args:
        config: The configuration (default: the built-in defaults).
        conversion_cache: Folder where the PDF reader keeps its conversions (None: none).
        shared_cache: That folder serves several stores: no ingest prunes it.
    """
    from ..config import ProxyPointerConfig

    cfg = config or ProxyPointerConfig()
    markdown = MarkdownReader(cfg.pages)
    table: dict[str, Reader] = dict.fromkeys(MARKDOWN_SUFFIXES, markdown)
    pdf = PDFReader(cfg.pdf, cache=conversion_cache, shared_cache=shared_cache)
    table.update(dict.fromkeys(PDF_SUFFIXES, pdf))
    from .office import OFFICE_SUFFIXES, OfficeReader

    office = {fmt: OfficeReader(fmt) for fmt in sorted(set(OFFICE_SUFFIXES.values()))}
    table.update({suffix: office[fmt] for suffix, fmt in OFFICE_SUFFIXES.items()})
    return table

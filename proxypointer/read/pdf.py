"""PDF -> markdown with the PDF page of every line (optional extra ``pdf``).

A :class:`PDFConverter` turns PDF files into markdown that carries a page marker at every page
boundary; :func:`convert_pdfs` runs one over many files in parallel and returns, per file, a
:class:`ConvertedPDF` (markdown, page map, page count, converter name/version/options and the
key a stored source is filed under) or a :class:`FailedPDF` naming the file and what to do.
A bad file never stops the others.

The default converter is opendataloader-pdf (Apache-2.0; rule-based, CPU only; a Java CLI,
needs a Java 11+ runtime), called as docs/stack.md records: markdown output, page separator
``<!-- page %page-number% -->``, images off, page headers and footers left out (its default;
``--include-header-footer`` "Include page headers and footers in output" keeps them), one
thread per JVM (its ``--threads`` help: "Default: 1 (sequential, stable)"), so the output of
a file is the same on every run. One JVM converts a whole list of files; ``workers`` JVMs run
side by side on lists balanced by page count.

Install: ``pip install -c constraints-cpu.txt -e '.[pdf]'`` (opendataloader-pdf and pypdf;
pypdf counts pages up front and recognises encrypted and empty files before Java starts).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError, DocumentError, EmptyDocumentError, MissingDependencyError
from ..lines import normalise_text, plain_line, split_lines
from ..pdflog import pypdf_warnings_hidden
from ..progress import progress_bar
from ..tree.headingstyles import apply_heading_styles, odl_headings
from ..tree.pages import BUILTIN_STYLES, MarkerStyle, PageMap, page_map
from .runin import PageLine, bold_titles, split_run_in_titles

if TYPE_CHECKING:
    from ..config import PDFConfig

__all__ = [
    "AUTO_HEAP_MB",
    "AUTO_HEAP_SHARE",
    "MIN_AUTO_HEAP_MB",
    "ConversionBatch",
    "ConversionCache",
    "ConvertedPDF",
    "FailedPDF",
    "OpenDataLoaderConverter",
    "PDFConverter",
    "auto_heap_mb",
    "conversion_key",
    "converter_from_config",
    "convert_pdf",
    "convert_pdfs",
    "find_pdfs",
]

logger = logging.getLogger(__name__)

#: Oldest Java major version opendataloader-pdf runs on (its README: "Java 11+").
MIN_JAVA = 11
_INSTALL_EXTRA = "pip install 'proxypointer[pdf]' (in a checkout: pip install -c constraints-cpu.txt -e '.[pdf]')"
_ODL_MISSING = f"opendataloader-pdf is not installed; PDF input needs it: {_INSTALL_EXTRA}"


def conversion_key(pdf_sha256: str, converter: str, version: str, options: Sequence[tuple[str, str]]) -> str:
    """Key of one conversion: same PDF bytes + converter + version + options -> same key.

    Args:
        pdf_sha256: SHA-256 hex digest of the PDF file's bytes.
        converter: Converter name, e.g. ``opendataloader-pdf``.
        version: Converter version, e.g. ``2.5.16``.
        options: ``(name, value)`` pairs of every option that changes the output.

    Returns:
        SHA-256 hex digest (64 characters) of all four; a stored converted source filed under
        it is valid for exactly this input and converter set-up.
    """
    payload = json.dumps([pdf_sha256, converter, version, sorted([k, v] for k, v in options)], separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ConvertedPDF:
    """One PDF converted to markdown.

    Attributes:
        path: The PDF as given to :func:`convert_pdfs`.
        markdown: Converted text, line ends normalised to LF, ending with a newline; the page
            marker lines are part of it (see ``pages``).
        pages: Page of every line of ``markdown`` (1-based PDF pages, file order) and the set
            of marker lines, which are not content.
        page_count: Pages in the PDF file.
        pdf_sha256: SHA-256 hex digest of the PDF's bytes.
        converter: Converter name (``opendataloader-pdf``).
        converter_version: Its version.
        options: ``(name, value)`` pairs of the options that change the output, sorted.
    """

    path: Path
    markdown: str
    pages: PageMap
    page_count: int
    pdf_sha256: str
    converter: str
    converter_version: str
    options: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        """Conversion key: PDF bytes + converter + version + options (see :func:`conversion_key`)."""
        return conversion_key(self.pdf_sha256, self.converter, self.converter_version, self.options)


@dataclass(frozen=True, slots=True)
class FailedPDF:
    """A PDF that could not be converted.

    Attributes:
        path: The PDF as given.
        error: The error; its message reads ``<file>: <what is wrong>; <what to do>``.
    """

    path: Path
    error: DocumentError

    @property
    def message(self) -> str:
        """One line naming the file, the problem and what to do."""
        return str(self.error)


@dataclass(frozen=True, slots=True)
class ConversionBatch:
    """Result of :func:`convert_pdfs`, each list in input order.

    Attributes:
        converted: Files converted.
        failed: Files that failed, each with its error.
        pages: Pages converted (sum of ``page_count`` of ``converted``).
        seconds: Wall-clock seconds of the whole call.
    """

    converted: tuple[ConvertedPDF, ...]
    failed: tuple[FailedPDF, ...]
    pages: int
    seconds: float

    def summary(self) -> str:
        """One line: files, pages, seconds, pages per second, failures."""
        rate = self.pages / self.seconds if self.seconds > 0 else 0.0
        line = (
            f"converted {len(self.converted)} PDF(s), {self.pages} pages in {self.seconds:.1f} s ({rate:.1f} pages/s)"
        )
        return line + (f"; {len(self.failed)} failed" if self.failed else "")


#: Called by a converter when the file at this index of its list is finished (done or failed).
FileDone = Callable[[int], None]


class PDFConverter(ABC):
    """A PDF -> markdown converter that writes a page marker at every page boundary.

    A subclass names itself, its version and output-changing options (the conversion key is
    built from them), the page-marker style it writes, and converts one list of files per
    call to :meth:`convert_group`, which :func:`convert_pdfs` runs in ``workers`` threads at
    once: the work itself must run outside this Python process (a subprocess) to go parallel.
    """

    #: Converter name, part of the conversion key.
    name: str = ""
    #: The page-marker style it writes (see pages.py).
    marker_style: MarkerStyle

    @property
    @abstractmethod
    def version(self) -> str:
        """Version of the converter; part of the conversion key.

        Raises:
            MissingDependencyError: If the converter is not installed.
        """

    @property
    @abstractmethod
    def options(self) -> tuple[tuple[str, str], ...]:
        """``(name, value)`` pairs of every option that changes the output, sorted."""

    @abstractmethod
    def check_available(self) -> None:
        """Check that the converter can run here, before any file is read.

        Raises:
            MissingDependencyError: Naming what to install (a package, a runtime).
        """

    @abstractmethod
    def convert_group(self, paths: Sequence[Path], done: FileDone) -> list[str | DocumentError]:
        """Convert a list of PDFs in one run of the converter.

        Args:
            paths: PDF files, already checked to exist and to have pages.
            done: Called with the index of each file as soon as it is finished.

        Returns:
            Per file, in order: the markdown as written (page markers included), or the
            error naming the file.
        """

    def key(self, pdf_sha256: str) -> str:
        """Conversion key of a PDF with this converter (see :func:`conversion_key`).

        Args:
            pdf_sha256: SHA-256 hex digest of the PDF's bytes.

        Returns:
            The key a stored converted source of that PDF is filed under.
        """
        return conversion_key(pdf_sha256, self.name, self.version, self.options)


# --- opendataloader-pdf ---------------------------------------------------------------------

_TABLE_METHODS = ("default", "cluster")
_READING_ORDERS = ("xycut", "off")
#: The separator we ask opendataloader-pdf for; pages.py reads it as style "opendataloader".
ODL_SEPARATOR = "<!-- page %page-number% -->"
_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')
_FILE_NAME = re.compile(r"File name: (.*?(\d{5})\.pdf)\s*$")
_ERROR = re.compile(r"Error: .*?'(?:[^']*/)?(\d{5})\.pdf'(.*)$")
_CREATED = re.compile(r"Created .*?(\d{5})\.md\s*$")


def _odl_message(path: Path, detail: str) -> str:
    """Our one-line message for an opendataloader-pdf ``Error: '<file>' ...`` line."""
    low = detail.lower()
    if "password" in low:
        return (
            f"{path}: encrypted (password-protected) PDF; remove the password first, e.g. "
            f"`qpdf --decrypt --password=PASSWORD in.pdf out.pdf`, and convert the copy"
        )
    if "%pdf-" in low or "header" in low:
        return f"{path}: not a PDF file (no %PDF- header); check that the file is really a PDF"
    if "corrupt" in low or "truncated" in low or "not a valid pdf" in low:
        return (
            f"{path}: truncated or corrupt PDF; download or export it again (or repair it, e.g. `qpdf in.pdf out.pdf`)"
        )
    return f"{path}: opendataloader-pdf could not convert it ({detail.strip(' .')}); check the file"


class OpenDataLoaderConverter(PDFConverter):
    """opendataloader-pdf (Apache-2.0), run as its Java CLI: one JVM per list of files.

    Args:
        table_method: ``default`` (border-based tables) or ``cluster`` (border + text
            clustering), opendataloader's ``--table-method``.
        markdown_with_html: Write complex tables (merged cells) as HTML inside the markdown
            (``--markdown-with-html``); off: tables as markdown/flattened text.
        include_header_footer: Keep running page headers and footers (``--include-header-footer``);
            off by default: they repeat on every page and would pollute every section.
        use_struct_tree: Take reading order and structure from the PDF's tags when it is a
            tagged PDF (``--use-struct-tree``).
        reading_order: ``xycut`` (its default; multi-column aware) or ``off``.
        java: The ``java`` executable (a name on PATH or a path).
        java_heap_mb: Largest Java heap of each JVM (``-Xmx``), MiB; 0 leaves the JVM's
            default (a quarter of the machine's memory, which a JVM converting a 10-K grew to:
            6.3 GB resident here). Not part of the conversion key: it does not change the output.
        heading_styles: Also ask for the JSON output and write each heading's level from its
            font's rank (:func:`proxypointer.tree.headingstyles.apply_heading_styles`); the JSON is
            read and dropped.
        run_in_titles: With ``heading_styles``, give the bold titles that the converter ran
            into a paragraph heading lines of their own, read from the PDF's bold lines
            (:mod:`proxypointer.read.runin`), ranked by their type with the other headings.

    Raises:
        ConfigError: If an option is out of range.
    """

    name = "opendataloader-pdf"
    marker_style = BUILTIN_STYLES["opendataloader"]

    def __init__(
        self,
        *,
        table_method: str = "default",
        markdown_with_html: bool = False,
        include_header_footer: bool = False,
        use_struct_tree: bool = False,
        reading_order: str = "xycut",
        java: str = "java",
        java_heap_mb: int = 0,
        heading_styles: bool = True,
        run_in_titles: bool = True,
    ) -> None:
        if table_method not in _TABLE_METHODS:
            raise ConfigError(f"pdf.table_method: expected one of {list(_TABLE_METHODS)}, got {table_method!r}")
        if reading_order not in _READING_ORDERS:
            raise ConfigError(f"pdf.reading_order: expected one of {list(_READING_ORDERS)}, got {reading_order!r}")
        if java_heap_mb < 0:
            raise ConfigError(f"pdf.java_heap_mb: expected an int >= 0, got {java_heap_mb}")
        self.table_method = table_method
        self.markdown_with_html = markdown_with_html
        self.include_header_footer = include_header_footer
        self.use_struct_tree = use_struct_tree
        self.reading_order = reading_order
        self.java = java
        self.java_heap_mb = java_heap_mb
        self.heading_styles = heading_styles
        self.run_in_titles = run_in_titles and heading_styles

    @property
    def version(self) -> str:  # noqa: D102 - documented on the base class
        from importlib import metadata

        try:
            return metadata.version("opendataloader-pdf")
        except metadata.PackageNotFoundError as err:
            raise MissingDependencyError(
                f"opendataloader-pdf is not installed; PDF input needs it: {_INSTALL_EXTRA}"
            ) from err

    @property
    def options(self) -> tuple[tuple[str, str], ...]:  # noqa: D102 - documented on the base class
        opts = {
            "format": "markdown,json" if self.heading_styles else "markdown",
            "image_output": "off",
            "include_header_footer": str(self.include_header_footer).lower(),
            "markdown_page_separator": ODL_SEPARATOR,
            "markdown_with_html": str(self.markdown_with_html).lower(),
            "reading_order": self.reading_order,
            "table_method": self.table_method,
            "threads": "1",
            "use_struct_tree": str(self.use_struct_tree).lower(),
        }
        if self.heading_styles:
            opts["heading_styles"] = HEADING_STYLES_RULE
        if self.run_in_titles:
            opts["run_in_titles"] = RUN_IN_TITLES_RULE
        opts["entities"] = ENTITIES_RULE
        return tuple(sorted(opts.items()))

    def _jar(self) -> Path:
        try:
            import importlib.resources as resources

            import opendataloader_pdf  # noqa: F401 - the package ships the CLI jar
        except ImportError as err:
            raise MissingDependencyError(
                f"opendataloader-pdf is not installed; PDF input needs it: {_INSTALL_EXTRA}"
            ) from err
        jar = Path(str(resources.files("opendataloader_pdf").joinpath("jar", "opendataloader-pdf-cli.jar")))
        if not jar.is_file():
            raise MissingDependencyError(
                f"{jar}: the opendataloader-pdf CLI jar is missing; reinstall: {_INSTALL_EXTRA}"
            )
        return jar

    def _java_path(self) -> str:
        found = shutil.which(self.java)
        if found is None:
            raise MissingDependencyError(
                f"{self.java}: Java not found; opendataloader-pdf needs a Java {MIN_JAVA}+ runtime: install one "
                f"(e.g. `apt-get install openjdk-17-jre-headless`) and put `java` on PATH"
            )
        return found

    def java_version(self) -> int:
        """Major version of the Java runtime (``java -version``).

        Returns:
            The major version, e.g. 17 (``1.8`` reads as 8).

        Raises:
            MissingDependencyError: If Java is missing or its version cannot be read.
        """
        java = self._java_path()
        try:
            run = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise MissingDependencyError(f"{java}: cannot run `java -version` ({err}); check the Java install") from err
        m = _JAVA_VERSION.search(run.stderr + run.stdout)
        if m is None:
            raise MissingDependencyError(
                f"{java}: cannot read the Java version from `java -version`; install Java {MIN_JAVA}+"
            )
        major = int(m.group(1))
        if major == 1 and m.group(2):
            major = int(m.group(2))
        return major

    def check_available(self) -> None:  # noqa: D102 - documented on the base class
        self._jar()
        _pypdf()
        major = self.java_version()
        if major < MIN_JAVA:
            raise MissingDependencyError(
                f"{self._java_path()}: Java {major} is too old; opendataloader-pdf needs Java {MIN_JAVA}+ "
                f"(e.g. `apt-get install openjdk-17-jre-headless`)"
            )

    def _command(self, java: str, jar: Path, inputs: list[str], out_dir: Path) -> list[str]:
        cmd = [
            java,
            *([f"-Xmx{self.java_heap_mb}m"] if self.java_heap_mb else []),
            "-XX:+ExitOnOutOfMemoryError",  # out of heap: exit at once, reported per file below
            "-Djava.awt.headless=true",
            "-Dfile.encoding=UTF-8",
            "-Duser.language=en",
            "-Duser.country=US",
            f"-Djava.io.tmpdir={tempfile.gettempdir()}",
            "-jar",
            str(jar),
            *inputs,
            "--output-dir",
            str(out_dir),
            "--format",
            "markdown,json" if self.heading_styles else "markdown",
            "--markdown-page-separator",
            ODL_SEPARATOR,
            "--image-output",
            "off",
            "--table-method",
            self.table_method,
            "--reading-order",
            self.reading_order,
            "--threads",
            "1",
        ]
        if self.markdown_with_html:
            cmd.append("--markdown-with-html")
        if self.include_header_footer:
            cmd.append("--include-header-footer")
        if self.use_struct_tree:
            cmd.append("--use-struct-tree")
        return cmd

    def convert_group(self, paths: Sequence[Path], done: FileDone) -> list[str | DocumentError]:  # noqa: D102
        java, jar = self._java_path(), self._jar()
        results: list[str | DocumentError | None] = [None] * len(paths)
        reported: set[int] = set()

        def finished(i: int) -> None:
            if i not in reported:
                reported.add(i)
                done(i)

        # The PDFs' bold lines are read by pypdf in a thread while the JVM converts them (a
        # pure-Python reader beside a subprocess: a spare core does it at no wall-clock cost).
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-in-titles") if self.run_in_titles else None
        bold = [pool.submit(bold_titles, p) for p in paths] if pool is not None else []
        with tempfile.TemporaryDirectory(prefix="proxypointer-pdf-") as tmp:
            in_dir, out_dir = Path(tmp, "in"), Path(tmp, "out")
            in_dir.mkdir()
            out_dir.mkdir()
            # Inputs get unique numbered names: the CLI names outputs <stem>.md and reports
            # errors by file name, so two report.pdf from different folders would collide.
            for i, p in enumerate(paths):
                link = in_dir / f"{i:05d}.pdf"
                try:
                    link.symlink_to(Path(p).resolve())
                except OSError:
                    shutil.copyfile(p, link)
            pending = list(range(len(paths)))
            while pending:
                code, tail, created, current = self._run(java, jar, pending, in_dir, out_dir, paths, results, finished)
                for i in pending:
                    md = out_dir / f"{i:05d}.md"
                    # A JVM that died while writing leaves a partial file: after a non-zero exit
                    # only the files it logged as "Created" count.
                    if results[i] is None and md.is_file() and (code == 0 or i in created):
                        results[i] = _read_output(md, paths[i])
                        if self.heading_styles and isinstance(results[i], str):
                            results[i] = _styled(results[i], out_dir / f"{i:05d}.json", paths[i],
                                                 bold[i].result() if bold else None)
                        if isinstance(results[i], str):
                            results[i] = unescape_text(results[i])
                left = [i for i in pending if results[i] is None]
                if not left:
                    break
                if current is None or current not in left:  # it stopped before starting a file
                    for i in left:
                        results[i] = DocumentError(
                            f"{paths[i]}: opendataloader-pdf stopped before converting it (exit code {code}: "
                            f"{tail}); convert it alone with `proxypointer -v convert {paths[i]}` to see why"
                        )
                    break
                # The JVM died on `current` (out of memory, a crash): that file fails, the files
                # after it get a new JVM.
                results[current] = DocumentError(self._crash_message(paths[current], code, tail))
                pending = [i for i in left if i != current]
                if pending:
                    logger.warning(
                        "opendataloader-pdf crashed on %s; converting the %d file(s) after it in a new JVM",
                        paths[current],
                        len(pending),
                    )
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        for i in range(len(paths)):
            finished(i)
        return [r if r is not None else DocumentError(f"{paths[k]}: not converted") for k, r in enumerate(results)]

    def _crash_message(self, path: Path, code: int, tail: str) -> str:
        """Return what a user reads when the JVM died on ``path``; out of memory names the heap setting."""
        if "OutOfMemoryError" in tail:
            heap = f"{self.java_heap_mb} MiB" if self.java_heap_mb else "the JVM's default"
            return (
                f"{path}: opendataloader-pdf ran out of memory on this file (Java heap {heap}, "
                f"pdf.java_heap_mb); raise pdf.java_heap_mb (e.g. {max(2 * self.java_heap_mb, 2048)}) "
                "in the config, or lower pdf.workers"
            )
        return (
            f"{path}: opendataloader-pdf crashed on this file (exit code {code}: {tail}); "
            f"convert it alone with `proxypointer -v convert {path}` to see why"
        )

    def _run(
        self,
        java: str,
        jar: Path,
        indices: list[int],
        in_dir: Path,
        out_dir: Path,
        paths: Sequence[Path],
        results: list[str | DocumentError | None],
        finished: FileDone,
    ) -> tuple[int, str, set[int], int | None]:
        """One JVM over the files at ``indices``.

        The CLI logs ``File name: <path>`` as it starts each file (so the one before is done),
        ``Created <out>.md`` when a file is written, and prints ``Error: '<name>' ...`` for a
        file it rejects; all are read as the run goes.

        Returns:
            Exit code, last log line, indices of the files logged as written, index of the
            last file started (None: none was).
        """
        cmd = self._command(java, jar, [str(in_dir / f"{i:05d}.pdf") for i in indices], out_dir)
        logger.debug("running opendataloader-pdf on %d file(s): %s", len(indices), " ".join(cmd[:8]))
        tail, current, created, oom = "", None, set(), ""
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.rstrip("\n")
                if line.strip():
                    tail = line.strip()
                if "OutOfMemoryError" in line:
                    oom = line.strip()
                err = _ERROR.search(line)
                if err:
                    i = int(err.group(1))
                    if i < len(results) and results[i] is None:
                        results[i] = DocumentError(_odl_message(paths[i], err.group(2)))
                    continue
                wrote = _CREATED.search(line)
                if wrote:
                    created.add(int(wrote.group(1)))
                start = _FILE_NAME.search(line)
                if start:
                    if current is not None:
                        finished(current)
                    current = int(start.group(2))
                logger.debug("opendataloader-pdf: %s", line)
            code = proc.wait()
        finally:
            if proc.poll() is None:  # interrupted: never leave the JVM running
                proc.kill()
                proc.wait()
        return code, (oom or tail)[:300], created, current


#: Most Java heap of each JVM when ``pdf.java_heap_mb`` is 0 (the default), MiB. The two largest
#: financebench-dev filings (NIKE_2023_10K, PEPSICO_2022_10K) converted in one JVM with
#: ``-Xmx512m`` byte for byte as with the JVM's own default heap (668 MB resident instead of
#: 6.3 GB), and a 252-page 10-K byte for byte at 1024 MiB in 1.18 GB (issue 33); twice the first
#: leaves room for larger files. The JVM's own default is a quarter of the machine's memory per
#: JVM, 5.3 GB for that 10-K here.
AUTO_HEAP_MB = 1024
#: Least heap :func:`auto_heap_mb` gives a JVM, MiB (below it opendataloader-pdf fails on small files).
MIN_AUTO_HEAP_MB = 256
#: Share of physical memory all converter JVMs together may take as heap when sized automatically.
AUTO_HEAP_SHARE = 0.25


def auto_heap_mb(workers: int, physical_mb: int | None = None) -> int:
    """Java heap of each converter JVM when ``pdf.java_heap_mb`` is 0, MiB.

    At most :data:`AUTO_HEAP_MB`, and all ``workers`` JVMs together at most
    :data:`AUTO_HEAP_SHARE` of physical memory, but never under :data:`MIN_AUTO_HEAP_MB`.

    Args:
        workers: JVMs that run at once.
        physical_mb: The machine's memory in MiB; None: read from the OS (``os.sysconf``;
            :data:`AUTO_HEAP_MB` where it cannot be read).
    """
    if physical_mb is None:
        try:
            physical_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
        except (ValueError, OSError, AttributeError):
            return AUTO_HEAP_MB
    share = int(physical_mb * AUTO_HEAP_SHARE) // max(1, workers)
    return max(MIN_AUTO_HEAP_MB, min(AUTO_HEAP_MB, share))


def converter_from_config(config: PDFConfig, workers: int | None = None) -> PDFConverter:
    """Build the converter a ``pdf`` config section names, with its options.

    Args:
        config: The ``pdf`` section (``converter``, ``table_method``, ...).
        workers: JVMs that will run at once (default ``config.workers``); with
            ``pdf.java_heap_mb`` 0 each JVM gets ``-Xmx`` :func:`auto_heap_mb` MiB instead of
            the JVM's default of a quarter of the machine's memory each.

    Returns:
        An :class:`OpenDataLoaderConverter` (the only converter so far).
    """
    n = config.workers if workers is None else workers
    heap = config.java_heap_mb or auto_heap_mb(n)
    return OpenDataLoaderConverter(
        table_method=config.table_method,
        markdown_with_html=config.markdown_with_html,
        include_header_footer=config.include_header_footer,
        use_struct_tree=config.use_struct_tree,
        java_heap_mb=heap,
        heading_styles=config.heading_styles,
        run_in_titles=config.run_in_titles,
    )


# --- shared machinery -----------------------------------------------------------------------


def _pypdf():  # noqa: ANN202 - the module, imported lazily
    try:
        import pypdf
    except ImportError as err:
        raise MissingDependencyError(f"pypdf is not installed; PDF input needs it: {_INSTALL_EXTRA}") from err
    return pypdf


#: Version of the heading-style rule (:mod:`proxypointer.tree.headingstyles`), part of the
#: conversion key: a new rule converts again.
HEADING_STYLES_RULE = "2"

#: Version of the run-in title rule (:mod:`proxypointer.read.runin`), part of the conversion key.
RUN_IN_TITLES_RULE = "7"

#: Version of :func:`unescape_text`, part of the conversion key.
ENTITIES_RULE = "1"
# The converter's escapes of ``&``, ``<`` and ``>`` in text (its markdown is HTML-escaped):
# ``&amp;`` unless it starts another escape (``&amp;lt;`` is a written "&lt;"); ``&lt;`` unless a
# letter, ``/``, ``!`` or ``?`` follows (``<`` there could open an HTML tag or block); ``&gt;``
# unless it opens a line (``>`` there starts a block quote).
_AMP = re.compile(r"&amp;(?!#?\w+;)")
_LT = re.compile(r"&lt;(?![A-Za-z/!?])")
_GT = re.compile(r"(?m)^( {0,3})&gt;|&gt;")


def _gt(m: re.Match[str]) -> str:
    return m.group(0) if m.group(1) is not None else ">"


def unescape_text(markdown: str) -> str:
    """Undo the converter's HTML escapes in text: ``Johnson &amp; Johnson`` -> ``Johnson & Johnson``.

    opendataloader-pdf writes ``&``, ``<`` and ``>`` of a PDF's text as ``&amp;``, ``&lt;`` and
    ``&gt;``; stored as written they are shown in citations and embedded as typed (2,352
    escapes in the 29 financebench-dev filings, 2,320 of them ``&amp;``). An escape is undone
    only where the character cannot change how the markdown parses (see the patterns above),
    so the tree is the same.

    Args:
        markdown: The converter's markdown.

    Returns:
        The markdown with those escapes undone; unchanged when it has none.
    """
    if "&" not in markdown:
        return markdown
    return _GT.sub(_gt, _LT.sub("<", _AMP.sub("&", markdown)))


def _styled(markdown: str, json_path: Path, pdf: Path, bold: Mapping[int, Sequence[PageLine]] | None = None) -> str:
    """Return the markdown with heading levels from their fonts (as it was when the JSON is unusable).

    ``bold``: the PDF's title-like bold lines per page (:func:`proxypointer.read.runin.bold_titles`);
    given, titles run into paragraphs first get lines of their own
    (:func:`proxypointer.read.runin.split_run_in_titles`), styled like the converter's headings.
    """
    try:
        data = json.loads(json_path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as err:
        logger.warning("%s: the converter's JSON is unreadable (%s); heading levels as written", pdf, err)
        return markdown
    if not isinstance(data, dict):
        logger.warning("%s: the converter's JSON is not an object; heading levels as written", pdf)
        return markdown
    style = BUILTIN_STYLES["opendataloader"]
    headings = odl_headings(data)
    if bold is not None:
        markdown, titles = split_run_in_titles(markdown, pdf, style, bold)
        headings = sorted(headings + titles, key=lambda h: h.page)  # stable: reading order within a page
    text, n = apply_heading_styles(markdown, headings, style)
    logger.debug("%s: %d heading levels written from their fonts", pdf, n)
    return text


def _read_output(md: Path, pdf: Path) -> str | DocumentError:
    data = md.read_bytes()
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        logger.warning("%s: the converter wrote bytes that are not UTF-8; replaced them with U+FFFD", pdf)
    return text


@dataclass(frozen=True, slots=True)
class _Job:
    index: int  # position in the caller's list
    path: Path
    sha256: str
    pages: int  # -1: unknown (pypdf could not read it; the converter decides)


def _inspect(index: int, path: Path) -> _Job | DocumentError:
    """Read, hash and count the pages of one PDF; the problems we can name before Java starts."""
    with pypdf_warnings_hidden():
        return _inspect_pdf(index, path)


def _inspect_pdf(index: int, path: Path) -> _Job | DocumentError:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return DocumentError(f"{path}: no such file; check the path")
    except IsADirectoryError:
        return DocumentError(f"{path}: is a directory, expected a PDF file")
    except OSError as err:
        return DocumentError(f"{path}: cannot read ({err.strerror})")
    if not data:  # skipped with a note, as an empty file of any other format (issue 32)
        return EmptyDocumentError(f"{path}: empty file (0 bytes); skipped (download or export the PDF again)")
    if not data.lstrip()[:5] == b"%PDF-":
        return DocumentError(f"{path}: not a PDF file (no %PDF- header); check that the file is really a PDF")
    sha = hashlib.sha256(data).hexdigest()
    pypdf = _pypdf()
    pages = -1
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception as err:  # noqa: BLE001 - pypdf raises several types (e.g. missing AES support)
                logger.debug("%s: pypdf cannot test the encryption (%s); leaving it to the converter", path, err)
                opened = None
            if opened is not None and not opened:
                return DocumentError(
                    f"{path}: encrypted (password-protected) PDF; remove the password first, e.g. "
                    f"`qpdf --decrypt --password=PASSWORD in.pdf out.pdf`, and convert the copy"
                )
        pages = len(reader.pages)
    except Exception as err:  # noqa: BLE001 - pypdf's errors on damaged files vary; the converter decides
        logger.debug("%s: pypdf cannot count the pages (%s); leaving it to the converter", path, err)
        return _Job(index, path, sha, -1)
    if pages == 0:
        return DocumentError(f"{path}: the PDF has no pages; nothing to convert (check the file)")
    return _Job(index, path, sha, pages)


def _groups(jobs: list[_Job], n: int) -> list[list[_Job]]:
    """Split jobs into at most n lists of about equal pages (largest first, to the lightest list).

    Deterministic; each list keeps the input order.
    """
    n = max(1, min(n, len(jobs)))
    bins: list[list[_Job]] = [[] for _ in range(n)]
    load = [0] * n
    for job in sorted(jobs, key=lambda j: (-max(j.pages, 1), j.index)):
        k = min(range(n), key=lambda b: (load[b], b))
        bins[k].append(job)
        load[k] += max(job.pages, 1)
    return [sorted(b, key=lambda j: j.index) for b in bins if b]


def _finish(job: _Job, raw: str, converter: PDFConverter) -> ConvertedPDF | DocumentError:
    text = normalise_text(raw)
    if text and not text.endswith("\n"):
        text += "\n"
    lines = split_lines(text)
    pm = page_map(lines, converter.marker_style)
    with_text = {pm.line_pages[i] for i, ln in enumerate(lines) if ln.strip() and (i + 1) not in pm.marker_lines}
    page_count = job.pages if job.pages > 0 else pm.page_count
    if not with_text:
        fallback = _pypdf_markdown(job.path, converter.marker_style)
        if fallback is None:
            return DocumentError(
                f"{job.path}: no text layer on any of its {page_count} page(s) (a scanned PDF?); "
                f"run OCR first (e.g. `ocrmypdf in.pdf out.pdf`) and convert the result"
            )
        text, read = fallback
        logger.warning(
            "%s: %s read no text, but pypdf read text on %d of %d page(s); indexed pypdf's plain text "
            "(no headings: sliding windows with page citations)", job.path, converter.name, read, page_count,
        )
        lines = split_lines(text)
        pm = page_map(lines, converter.marker_style)
        with_text = {pm.line_pages[i] for i, ln in enumerate(lines) if ln.strip() and (i + 1) not in pm.marker_lines}
    if job.pages > 0 and pm.page_count != job.pages:
        logger.warning(
            "%s: %d page markers for %d pages; page numbers of this file may be off", job.path, pm.page_count, job.pages
        )
    empty = page_count - len(with_text - {0})
    if page_count >= 4 and empty * 2 > page_count:
        logger.warning("%s: %d of %d pages have no text (scanned pages? they need OCR)", job.path, empty, page_count)
    return ConvertedPDF(
        path=job.path,
        markdown=text,
        pages=pm,
        page_count=page_count,
        pdf_sha256=job.sha256,
        converter=converter.name,
        converter_version=converter.version,
        options=converter.options,
    )


#: Where the pypdf fallback writes page N's marker: the opendataloader style, used only when
#: the converter's own style reads it.
_FALLBACK_MARKER = "<!-- page {} -->"


def _pypdf_markdown(path: Path, style: MarkerStyle) -> tuple[str, int] | None:
    """Pypdf's plain text of a PDF the converter read no text from, with page markers.

    A PDF whose text layer the converter cannot read (an unusual font encoding, a damaged
    content stream) may still give pypdf's text extraction its words (issue 32). Each page's
    text follows a ``<!-- page N -->`` marker; its lines lose their indentation (no code
    blocks), and a line that would open markdown markup (``#``, ``>``, ``-``, ``*``, ``+``, an
    ordered-list number, ``|``, ``<``, ``=``) gets a backslash first, so that plain text stays
    plain text.

    Returns:
        ``(markdown, pages with text)``, or None when pypdf reads no text either, cannot read
        the file, or the converter's marker style does not read ``<!-- page N -->``.
    """
    if style.position != "start" or style.match(_FALLBACK_MARKER.format(1)) != 1:
        return None
    pypdf = _pypdf()
    try:
        with pypdf_warnings_hidden():
            reader = pypdf.PdfReader(str(path), strict=False)
            pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as err:  # noqa: BLE001 - pypdf's errors on damaged files vary
        logger.debug("%s: pypdf cannot extract text (%s)", path, err)
        return None
    read = sum(1 for t in pages if t.strip())
    if not read:
        return None
    out: list[str] = []
    for number, page in enumerate(pages, 1):
        out += [_FALLBACK_MARKER.format(number), ""]
        out += [plain_line(ln) for ln in normalise_text(page).split("\n")]
        out.append("")
    return "\n".join(out) + "\n", read


class ConversionCache:
    """Converted markdown kept by conversion key, so that a PDF is converted once per key.

    A store keeps one (``<store>/converted``) so that a change of tree or chunking settings,
    which re-chunks every document, does not convert its PDFs again; the evaluation harness
    keeps one beside its stores, shared by every system of a benchmark. Each entry is the
    converter's markdown as written (page markers included, what ``proxypointer convert``
    writes), in ``<folder>/<key[:2]>/<key>.<tag>.md``; ``tag`` names what it was used for (the
    reader passes the first 16 hex digits of the stored text's hash) so :meth:`prune` can drop
    the entries no stored document uses. Writes are atomic (temporary file + rename); several
    processes may share a folder.

    Args:
        folder: The cache folder (created on the first write).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def _entries(self, key: str) -> list[Path]:
        sub = self.folder / key[:2]
        try:
            names = os.listdir(sub)
        except OSError:
            return []
        return sorted(sub / n for n in names if n.startswith(key + ".") and n.endswith(".md"))

    def get(self, key: str) -> str | None:
        """Return the markdown converted under ``key``, or None if there is none.

        Args:
            key: A conversion key (:func:`conversion_key`).
        """
        for path in self._entries(key):
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:  # a damaged entry is a miss
                logger.debug("%s: cannot read cached conversion (%s)", path, err)
        return None

    def put(self, key: str, markdown: str, tag: str) -> None:
        """Keep the markdown converted under ``key``.

        Args:
            key: A conversion key.
            markdown: The converter's markdown, page markers included.
            tag: What the entry is used for (hex digits; see the class docstring).

        Raises:
            OSError: If the folder cannot be written.
        """
        target = self.folder / key[:2] / f"{key}.{tag}.md"
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".md")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(markdown)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def prune(self, keep_tags: Iterable[str]) -> int:
        """Delete the entries whose tag is not in ``keep_tags``.

        Args:
            keep_tags: Tags still in use.

        Returns:
            Entries deleted.
        """
        keep = set(keep_tags)
        removed = 0
        for path in self.folder.glob("*/*.md"):
            parts = path.name.split(".")
            if len(parts) == 3 and parts[1] not in keep:
                path.unlink(missing_ok=True)
                removed += 1
        return removed


def find_pdfs(paths: Iterable[str | Path], suffixes: Sequence[str] = (".pdf",)) -> list[Path]:
    """Expand files and folders into PDF files (or files of other ``suffixes``).

    Args:
        paths: Files (taken as given, whatever their suffix) and folders (searched
            recursively for ``*.pdf``, any case; hidden folders skipped).
        suffixes: Lower-case suffixes searched for in folders.

    Returns:
        The files, folders' contents sorted by path, duplicates removed, in the order given.
    """
    out: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        p = Path(given)
        if p.is_dir():
            found = sorted(
                f
                for f in p.rglob("*")
                if f.suffix.lower() in suffixes
                and f.is_file()
                and not any(part.startswith(".") for part in f.relative_to(p).parts[:-1])
            )
        else:
            found = [p]
        for f in found:
            key = f.resolve() if f.exists() else f
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def convert_pdfs(
    paths: Sequence[str | Path],
    converter: PDFConverter | None = None,
    *,
    workers: int = 1,
    show_progress: bool = False,
) -> ConversionBatch:
    """Convert many PDFs, ``workers`` converter runs in parallel; bad files do not stop the rest.

    Args:
        paths: PDF files or folders (searched recursively, see :func:`find_pdfs`); a file
            given twice is converted once.
        converter: The converter; default :class:`OpenDataLoaderConverter` with its defaults.
        workers: Converter processes at once (one JVM each for opendataloader-pdf), each
            converting a list of files balanced by page count; >= 1.
        show_progress: Show a tqdm bar on stderr, by pages (by files when a page count is
            unknown up front).

    Returns:
        The converted files and the failed ones (encrypted, no pages, no text layer, corrupt,
        missing), each in input order.

    Raises:
        MissingDependencyError: If the extra is not installed or Java is missing or too old;
            nothing is converted then.
        ValueError: If workers < 1.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    t0 = time.perf_counter()
    converter = converter or OpenDataLoaderConverter()
    converter.check_available()
    given = find_pdfs(paths) if paths else []
    outcome: dict[int, ConvertedPDF | DocumentError] = {}
    jobs: list[_Job] = []
    for i, p in enumerate(given):
        got = _inspect(i, p)
        if isinstance(got, DocumentError):
            outcome[i] = got
        else:
            jobs.append(got)
    by_pages = all(j.pages > 0 for j in jobs)
    total = sum(j.pages for j in jobs) if by_pages else len(jobs)
    bar = progress_bar(total=total, unit="page" if by_pages else "file", desc="converting PDFs",
                       disable=not show_progress or not jobs)  # nothing to convert (only bad or empty files): no bar
    lock = threading.Lock()

    def run(group: list[_Job]) -> list[str | DocumentError]:
        def done(k: int) -> None:
            with lock:
                bar.update(group[k].pages if by_pages else 1)

        return converter.convert_group([j.path for j in group], done)

    groups = _groups(jobs, workers)
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(groups)), thread_name_prefix="pdf") as pool:
            for group, results in zip(groups, pool.map(run, groups), strict=True):
                for job, raw in zip(group, results, strict=True):
                    outcome[job.index] = raw if isinstance(raw, DocumentError) else _finish(job, raw, converter)
    finally:
        bar.close()
    converted = tuple(r for i, r in sorted(outcome.items()) if isinstance(r, ConvertedPDF))
    failed = tuple(FailedPDF(given[i], r) for i, r in sorted(outcome.items()) if isinstance(r, DocumentError))
    batch = ConversionBatch(converted, failed, sum(c.page_count for c in converted), time.perf_counter() - t0)
    logger.info("%s", batch.summary())
    for f in failed:
        logger.debug("failed: %s", f.message)
    return batch


def convert_pdf(path: str | Path, converter: PDFConverter | None = None) -> ConvertedPDF:
    """Convert one PDF.

    Args:
        path: The PDF file.
        converter: As for :func:`convert_pdfs`.

    Returns:
        The converted file.

    Raises:
        DocumentError: If it cannot be converted (the message names the file and what to do).
        MissingDependencyError: If the extra is not installed or Java is missing or too old.
    """
    batch = convert_pdfs([path], converter)
    if batch.failed:
        raise batch.failed[0].error
    if not batch.converted:
        raise DocumentError(f"{path}: not converted")
    return batch.converted[0]

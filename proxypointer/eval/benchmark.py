"""Evaluation: hit@k, MRR@10, recall@5 and equal-context-budget hits over a QA benchmark.

A benchmark folder holds ``docs/*.md`` and ``questions.jsonl`` with ``{id, doc_id, question,
evidence_spans: [{start, end}, ...]}``; offsets are 0-based half-open ``[start, end)``
character offsets into the UTF-8 text of ``docs/<doc_id>.md`` as read from disk. They are
mapped onto the normalised text that ``read_document`` gives (BOM dropped, CRLF -> LF) and
then onto 1-based inclusive lines with ``tree.split_lines``. Gold may instead be given as
line ranges, ``evidence_lines: [{start_line, end_line}, ...]`` (1-based inclusive lines of the
normalised text, as a reader sees them in an editor; bench/long-reports uses them); a question
may carry both. Systems and the harness that runs
them live in :mod:`proxypointer.eval.harness`; this module holds the data, the metrics and the
reports (markdown tables, the budget plot).
"""

from __future__ import annotations

import ast
import bisect
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, DocumentError
from ..lines import normalise_text, split_lines
from ..tree.build import build_tree

if TYPE_CHECKING:
    from ..config import ProxyPointerConfig

__all__ = [
    "METRICS",
    "Benchmark",
    "Delivered",
    "EvidenceSpan",
    "Question",
    "Unit",
    "bootstrap_interval",
    "budget_hit",
    "delivered_ranges",
    "hit_at",
    "load_benchmark",
    "load_page_benchmark",
    "paired_difference",
    "plot_budgets",
    "recall_at",
    "reciprocal_rank",
    "tokens_at",
    "to_markdown",
]

logger = logging.getLogger(__name__)

#: Metrics per question, in report order (budget metrics are added per budget).
METRICS = ("hit@1", "hit@3", "hit@5", "mrr@10", "recall@5", "tokens@5")


@dataclass(frozen=True, slots=True)
class EvidenceSpan:
    """One gold evidence span in a document's normalised text.

    Attributes:
        doc_id: Document id.
        start: First character, 0-based, inclusive (normalised text).
        end: Character after the last one, 0-based, exclusive.
        start_line: Line holding ``start``, 1-based inclusive.
        end_line: Line holding ``end - 1``, 1-based inclusive.
    """

    doc_id: str
    start: int
    end: int
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Question:
    """One benchmark question with at least one evidence span.

    Attributes:
        id: Question id.
        doc_id: Document that answers it.
        question: Question text.
        title: The document's first heading (``{title}`` in query templates).
        spans: Gold evidence spans.
    """

    id: str
    doc_id: str
    question: str
    title: str
    spans: tuple[EvidenceSpan, ...]


@dataclass(frozen=True, slots=True)
class Unit:
    """One returned unit (section or window) of a ranked list.

    Attributes:
        doc_id: Document id.
        start_line: First line, 1-based inclusive.
        end_line: Last line, 1-based inclusive.
        tokens: Word pieces of its text (embedding model's tokenizer, no special tokens).
    """

    doc_id: str
    start_line: int
    end_line: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Delivered:
    """Text delivered to a reader, in delivery order.

    Attributes:
        doc_id: Document id.
        start: Character offset of ``text`` in the normalised document, 0-based.
        text: The delivered text, an exact substring of the normalised document.
        tokens: Word pieces of ``text`` when known (-1: count them).
    """

    doc_id: str
    start: int
    text: str
    tokens: int = -1


@dataclass(slots=True)
class Benchmark:
    """A loaded benchmark: documents (normalised text, title) and questions.

    Attributes:
        root: Benchmark folder.
        name: Folder name (e.g. ``qasper-dev``).
        paths: ``doc_id -> docs/<doc_id>.md``, for the selected documents.
        texts: ``doc_id -> normalised text``.
        titles: ``doc_id -> first heading``.
        questions: Questions with evidence spans, on the selected documents, file order.
        skipped: Questions without evidence spans (not evaluated).
        pages: ``doc_id -> page of each line`` (1-based PDF pages; ``pages[i]`` is line
            ``i + 1``) for documents with pages: PDFs and markdown with page markers.
    """

    root: Path
    name: str
    paths: dict[str, Path]
    texts: dict[str, str]
    titles: dict[str, str]
    questions: list[Question]
    skipped: int = 0
    pages: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def line_offsets(self, doc_id: str) -> list[int]:
        """Character offset of the start of each line (index 0 is line 1)."""
        out, pos = [], 0
        for line in split_lines(self.texts[doc_id]):
            out.append(pos)
            pos += len(line) + 1
        return out


def _literal(value: Any) -> Any:
    """Parse a field that may be a JSON value or a Python-literal string (QASPER export)."""
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def _to_normalised(raw: str, offset: int) -> int:
    """Map a character offset in raw file text onto the normalised text."""
    return len(normalise_text(raw[:offset])) if ("\r" in raw or raw.startswith("\ufeff")) else offset


def _line_span(ev: dict[str, Any], starts: list[int], text: str) -> tuple[int, int]:
    """Character range ``[start, end)`` of the lines ``start_line..end_line`` (1-based inclusive).

    Raises:
        ValueError: If the range is empty or outside the text.
        KeyError: If a key is missing.
    """
    a, b = int(ev["start_line"]), int(ev["end_line"])
    if not 1 <= a <= b <= len(starts):
        raise ValueError(f"lines {a}-{b} outside 1-{len(starts)}")
    end = starts[b] - 1 if b < len(starts) else len(text) - text.endswith("\n")
    return starts[a - 1], max(end, starts[a - 1] + 1)  # an empty line: its line end


def load_benchmark(
    root: str | Path,
    limit_docs: int | None = None,
    *,
    config: ProxyPointerConfig | None = None,
    conversion_cache: str | Path | None = None,
    show_progress: bool = False,
) -> Benchmark:
    """Read a benchmark folder.

    A folder whose documents are PDFs, or whose gold is only ``evidence_pages``, is read by
    :func:`load_page_benchmark`. Documents are read as ingestion reads them
    (``readers.MarkdownReader``: page-marker lines emptied), so texts and offsets are those of
    the stored sources; evidence offsets are moved onto them line by line.

    Args:
        root: Folder with ``docs/*.md`` and ``questions.jsonl``.
        limit_docs: Keep only the first N documents (sorted by doc_id) that have questions
            with evidence spans; ``None`` keeps all.
        config: Pipeline configuration (its ``pages`` and ``pdf`` sections); default built-in.
        conversion_cache: Folder of converted PDFs (see :func:`load_page_benchmark`).
        show_progress: Show the PDF conversion's progress bar.

    Returns:
        The benchmark; questions without evidence spans are counted in ``skipped``.

    Raises:
        ConfigError: If the folder or ``questions.jsonl`` is missing or malformed, or no
            question has gold evidence.
        DocumentError: If a document cannot be read.
    """
    root = Path(root)
    qfile = root / "questions.jsonl"
    if not qfile.is_file() or not (root / "docs").is_dir():
        raise ConfigError(f"{root}: expected docs/*.md and questions.jsonl; check --benchmark")
    if _page_gold_only(root):
        return load_page_benchmark(root, limit_docs, config=config, conversion_cache=conversion_cache,
                                   show_progress=show_progress)
    rows = []
    for n, line in enumerate(qfile.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            spans = list(_literal(row.get("evidence_spans")) or [])
            spans += [{"lines": ev} for ev in _literal(row.get("evidence_lines")) or []]
            rows.append((n, row["id"], str(row["doc_id"]), row["question"], spans))
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ConfigError(f"{qfile}:{n}: bad question record ({err}); expected id, doc_id, question") from err
    with_spans = sorted({r[2] for r in rows if r[4]})
    keep = set(with_spans[:limit_docs] if limit_docs else with_spans)
    bench = Benchmark(root, root.name, {}, {}, {}, [])
    raws: dict[str, str] = {}
    for doc_id in sorted(keep):
        path = root / "docs" / f"{doc_id}.md"
        try:
            raws[doc_id] = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise DocumentError(f"{path}: cannot read benchmark document ({err})") from err
        text = normalise_text(raws[doc_id])
        bench.paths[doc_id], bench.texts[doc_id] = path, text
        bench.titles[doc_id] = build_tree(text, doc_id).title
    offsets: dict[str, list[int]] = {}
    for n, qid, doc_id, question, spans in rows:
        if not spans:
            bench.skipped += 1
            continue
        if doc_id not in keep:
            continue
        if doc_id not in offsets:
            offsets[doc_id] = bench.line_offsets(doc_id)
        starts, raw, out = offsets[doc_id], raws[doc_id], []
        for s in spans:
            try:
                if "lines" in s:
                    a, b = _line_span(s["lines"], starts, bench.texts[doc_id])
                else:
                    a, b = _to_normalised(raw, int(s["start"])), _to_normalised(raw, int(s["end"]))
            except (KeyError, TypeError, ValueError) as err:
                raise ConfigError(f"{qfile}:{n}: evidence span without integer start/end or "
                                  f"start_line/end_line inside docs/{doc_id}.md ({err})") from err
            if not 0 <= a < b <= len(bench.texts[doc_id]):
                raise ConfigError(f"{qfile}:{n}: evidence span [{a}, {b}) outside docs/{doc_id}.md")
            out.append(EvidenceSpan(doc_id, a, b, bisect.bisect_right(starts, a), bisect.bisect_right(starts, b - 1)))
        bench.questions.append(Question(str(qid), doc_id, question, bench.titles[doc_id], tuple(out)))
    if not bench.questions:
        raise ConfigError(f"{qfile}: no question with evidence spans or evidence lines; nothing to evaluate")
    logger.info("%s: %d documents, %d questions (%d without evidence spans skipped)",
                bench.name, len(bench.paths), len(bench.questions), bench.skipped)
    _read_as_stored(bench, config)
    return bench


def _page_gold_only(root: Path) -> bool:
    """Tell whether the documents are PDFs, or no question has span or line gold but some have pages."""
    if any(p.suffix.lower() == ".pdf" for p in (root / "docs").iterdir()):
        return True
    spans = pages = False
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                return False  # load_benchmark names the bad line
            spans = spans or bool(row.get("evidence_spans") or row.get("evidence_lines"))
            pages = pages or bool(row.get("evidence_pages"))
    return pages and not spans


def _read_as_stored(bench: Benchmark, config: ProxyPointerConfig | None) -> None:
    """Give each markdown document the text ingestion stores (page markers emptied), spans moved onto it.

    Emptying a marker line keeps every line where it was, so an offset moves to the same
    line and column, clamped to the line's new length.
    """
    from ..read.readers import MarkdownReader

    reader = MarkdownReader(config.pages if config is not None else None)
    for doc_id, text in list(bench.texts.items()):
        read = reader.read(text.encode("utf-8"), str(bench.paths[doc_id]))
        if read.text == text:
            continue
        old = bench.line_offsets(doc_id)
        bench.texts[doc_id] = read.text
        new = bench.line_offsets(doc_id)
        lines = split_lines(read.text)
        bench.titles[doc_id] = build_tree(read.text, doc_id, paged=read.paged).title
        if read.pages is not None:
            bench.pages[doc_id] = read.pages

        def move(offset: int, old: list[int] = old, new: list[int] = new, lines: list[str] = lines) -> int:
            i = bisect.bisect_right(old, offset) - 1
            return new[i] + min(offset - old[i], len(lines[i]) + (1 if i + 1 < len(lines) else 0))

        for k, q in enumerate(bench.questions):
            if q.doc_id == doc_id:
                spans = tuple(replace(s, start=move(s.start), end=max(move(s.end - 1) + 1, move(s.start) + 1))
                              for s in q.spans)
                bench.questions[k] = replace(q, spans=spans, title=bench.titles[doc_id])


def _content_span(doc_id: str, lines: list[str], line_pages: Sequence[int], starts: list[int], page: int
                  ) -> EvidenceSpan | None:
    """Make the evidence span of one page: its first to last content line (marker, blank lines left out)."""
    content = [i for i, p in enumerate(line_pages, 1) if p == page and lines[i - 1].strip()]
    if not content:
        return None
    a, b = content[0], content[-1]
    return EvidenceSpan(doc_id, starts[a - 1], starts[b - 1] + len(lines[b - 1]), a, b)


def load_page_benchmark(
    root: str | Path,
    limit_docs: int | None = None,
    *,
    config: ProxyPointerConfig | None = None,
    conversion_cache: str | Path | None = None,
    show_progress: bool = False,
) -> Benchmark:
    """Read a benchmark of PDFs (or markdown with page markers) whose gold is evidence pages.

    ``questions.jsonl`` rows are ``{id, doc_id, question, evidence_pages: [1-based PDF page,
    ...]}`` (FinanceBench's form); ``docs/<doc_id>.pdf`` or ``docs/<doc_id>.md``. Each PDF is
    converted as ``proxypointer ingest`` converts it (``readers.PDFReader``, the ``pdf``
    config section), keeping conversions in ``conversion_cache`` by conversion key, so a
    second run converts nothing; markdown is read with its page markers
    (``readers.MarkdownReader``, the ``pages`` section). Each evidence page becomes one
    evidence span: the page's first to last content line of the stored text (page-marker and
    blank lines left out). A delivered unit then overlaps it exactly when the unit's page range
    (``PageMap.page_range``) covers that page, so every metric of this module (hit@k, MRR,
    recall@5, budget_hit) is page-level with no other change.

    Args:
        root: Folder with ``docs/`` and ``questions.jsonl``.
        limit_docs: Keep only the first N documents (sorted by doc_id); None keeps all.
        config: Pipeline configuration (``pdf`` and ``pages`` sections); default built-in.
        conversion_cache: Folder for converted PDFs (``ConversionCache``); None converts every run.
        show_progress: Show the conversion's progress bar (pages) on stderr.

    Returns:
        The benchmark with ``pages`` for every document; questions whose evidence pages have
        no text are counted in ``skipped``.

    Raises:
        ConfigError: If ``questions.jsonl`` is malformed, a document is missing or has no
            pages, or no question has evidence pages.
        DocumentError: If a PDF cannot be converted (names the file and what to do).
        MissingDependencyError: If the ``pdf`` extra or Java is missing.
    """
    from ..config import ProxyPointerConfig
    from ..errors import ProxyPointerError
    from ..read.readers import MarkdownReader, PDFReader

    cfg = config or ProxyPointerConfig()
    root = Path(root)
    qfile = root / "questions.jsonl"
    rows = []
    for n, line in enumerate(qfile.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            pages = [int(p) for p in _literal(row.get("evidence_pages")) or []]
            rows.append((n, str(row["id"]), str(row["doc_id"]), row["question"], pages))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"{qfile}:{n}: bad question record ({err}); expected id, doc_id, question, "
                              "evidence_pages") from err
    with_pages = sorted({r[2] for r in rows if r[4]})
    keep = with_pages[:limit_docs] if limit_docs else with_pages
    bench = Benchmark(root, root.name, {}, {}, {}, [])
    pdfs: list[str] = []
    for doc_id in keep:
        pdf, md = root / "docs" / f"{doc_id}.pdf", root / "docs" / f"{doc_id}.md"
        if pdf.is_file():
            bench.paths[doc_id] = pdf
            pdfs.append(doc_id)
        elif md.is_file():
            bench.paths[doc_id] = md
            read = MarkdownReader(cfg.pages).read(md.read_bytes(), str(md))
            bench.texts[doc_id] = read.text
            if read.pages is not None:
                bench.pages[doc_id] = read.pages
        else:
            raise ConfigError(f"{root / 'docs'}: no {doc_id}.pdf or {doc_id}.md for the questions of {doc_id}")
    if pdfs:
        reader = PDFReader(cfg.pdf, cache=conversion_cache)
        results = reader.read_many([str(bench.paths[d]) for d in pdfs], show_progress=show_progress)
        for doc_id, got in zip(pdfs, results, strict=True):
            if isinstance(got, ProxyPointerError):
                raise got
            bench.texts[doc_id] = got.text
            if got.pages is not None:
                bench.pages[doc_id] = got.pages
    no_pages = [d for d in keep if d not in bench.pages]
    if no_pages:
        raise ConfigError(f"{root}: {', '.join(no_pages[:3])} has no page markers; page gold needs pages")
    for doc_id in keep:
        bench.titles[doc_id] = build_tree(bench.texts[doc_id], doc_id, paged=True).title  # markers emptied
    starts = {d: bench.line_offsets(d) for d in keep}
    lines = {d: split_lines(bench.texts[d]) for d in keep}
    for n, qid, doc_id, question, pages in rows:
        if doc_id not in bench.paths:
            if not pages:
                bench.skipped += 1
            continue
        spans = []
        for page in pages:
            span = _content_span(doc_id, lines[doc_id], bench.pages[doc_id], starts[doc_id], page)
            if span is None:
                logger.warning("%s:%d: evidence page %d of %s has no text in the converted document; left out",
                               qfile, n, page, doc_id)
            else:
                spans.append(span)
        if not spans:
            bench.skipped += 1
            continue
        bench.questions.append(Question(qid, doc_id, question, bench.titles[doc_id], tuple(spans)))
    if not bench.questions:
        raise ConfigError(f"{qfile}: no question with evidence pages that have text; nothing to evaluate")
    logger.info("%s: %d documents (%d PDFs), %d questions with page gold (%d skipped)",
                bench.name, len(bench.paths), len(pdfs), len(bench.questions), bench.skipped)
    return bench


# -- metrics, per question --------------------------------------------------------------

def _overlaps(unit: Unit, span: EvidenceSpan) -> bool:
    return unit.doc_id == span.doc_id and unit.start_line <= span.end_line and span.start_line <= unit.end_line


def hit_at(units: Sequence[Unit], spans: Sequence[EvidenceSpan], k: int) -> float:
    """1.0 if one of the first ``k`` units' line ranges overlaps an evidence span, else 0.0."""
    return float(any(_overlaps(u, s) for u in units[:k] for s in spans))


def reciprocal_rank(units: Sequence[Unit], spans: Sequence[EvidenceSpan], k: int = 10) -> float:
    """``1 / rank`` of the first unit (within ``k``) that overlaps an evidence span, else 0.0."""
    for rank, u in enumerate(units[:k], 1):
        if any(_overlaps(u, s) for s in spans):
            return 1.0 / rank
    return 0.0


def recall_at(units: Sequence[Unit], spans: Sequence[EvidenceSpan], k: int) -> float:
    """Share of the evidence spans overlapped by at least one of the first ``k`` units."""
    if not spans:
        return 0.0
    return sum(any(_overlaps(u, s) for u in units[:k]) for s in spans) / len(spans)


def tokens_at(units: Sequence[Unit], k: int) -> float:
    """Word pieces returned by the first ``k`` units (their whole texts)."""
    return float(sum(u.tokens for u in units[:k]))


def delivered_ranges(
    blocks: Sequence[Delivered], budget_tokens: int, cut: Callable[[str, int], str], count: Callable[[str], int]
) -> list[tuple[str, int, int]]:
    """Character ranges actually delivered within a budget, in delivery order.

    Blocks are delivered whole in order until the next one does not fit; that one is cut to
    the tokens left (``cut``) and delivery stops.

    Args:
        blocks: Delivered texts in order.
        budget_tokens: Context budget in word pieces.
        cut: ``(text, n_tokens) -> prefix`` with at most ``n_tokens`` word pieces.
        count: ``text -> word pieces``.

    Returns:
        ``(doc_id, start, end)`` character ranges, 0-based half-open.
    """
    out: list[tuple[str, int, int]] = []
    left = budget_tokens
    for b in blocks:
        if left <= 0:
            break
        n = b.tokens if b.tokens >= 0 else count(b.text)
        text = b.text if n <= left else cut(b.text, left)
        left -= min(n, left)
        if text:
            out.append((b.doc_id, b.start, b.start + len(text)))
    return out


def budget_hit(ranges: Sequence[tuple[str, int, int]], spans: Sequence[EvidenceSpan]) -> float:
    """1.0 if a delivered character range overlaps an evidence span, else 0.0."""
    return float(any(d == s.doc_id and a < s.end and s.start < b for d, a, b in ranges for s in spans))


# -- intervals ----------------------------------------------------------------------------

def _resample(groups: Sequence[str], n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap weights: ``(n_boot, n_docs)`` draw counts and each item's document index."""
    docs = sorted(set(groups))
    index = {d: i for i, d in enumerate(docs)}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(docs), size=(n_boot, len(docs)))
    flat = (draws + np.arange(n_boot)[:, None] * len(docs)).ravel()
    counts = np.bincount(flat, minlength=n_boot * len(docs)).reshape(n_boot, len(docs)).astype(np.float64)
    return counts, np.array([index[g] for g in groups])


def bootstrap_interval(
    values: Sequence[float], groups: Sequence[str], n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean with a percentile bootstrap interval, resampling documents (clusters) with replacement.

    Args:
        values: One value per question.
        groups: The question's doc_id (the resampling unit).
        n_boot: Bootstrap samples.
        seed: Random seed (numpy ``default_rng``).
        level: Coverage of the interval.

    Returns:
        ``(mean, low, high)``.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return 0.0, 0.0, 0.0
    counts, idx = _resample(groups, n_boot, seed)
    sums = np.bincount(idx, weights=v, minlength=counts.shape[1])
    ns = np.bincount(idx, minlength=counts.shape[1]).astype(np.float64)
    boot = (counts @ sums) / np.maximum(counts @ ns, 1.0)
    a = (1 - level) / 2
    return float(v.mean()), float(np.quantile(boot, a)), float(np.quantile(boot, 1 - a))


def paired_difference(
    a: Sequence[float], b: Sequence[float], groups: Sequence[str], n_boot: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``a - b`` over the same questions, with a document-bootstrap 95% interval."""
    return bootstrap_interval(np.asarray(a, float) - np.asarray(b, float), groups, n_boot, seed)


# -- reports ------------------------------------------------------------------------------

def to_markdown(result: dict[str, Any]) -> str:
    """Tables per scope (means, 95% intervals on hit@5 and budget hits) and paired differences."""
    lines: list[str] = []
    first = next(iter(result["systems"].values()))
    for scope in first:
        metrics = list(first[scope])
        lines += [f"### scope: {scope} ({result['n_questions']} questions, {result['n_documents']} documents)", "",
                  "| system | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
        for name, by_scope in result["systems"].items():
            cells = []
            for m in metrics:
                v = by_scope[scope][m]
                if m == "tokens@5":
                    cells.append(f"{v:.0f}")
                elif m == "hit@5" or m.startswith("budget_hit"):
                    lo, hi = result["intervals"][name][scope][m]
                    cells.append(f"{v:.3f} [{lo:.3f}, {hi:.3f}]")
                else:
                    cells.append(f"{v:.3f}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
        if result["paired"]:
            keys = [m for m in metrics if m == "hit@5" or m.startswith("budget_hit")]
            lines += ["| paired difference | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
            for pair, by_scope in result["paired"].items():
                if scope in by_scope:
                    cells = [f"{d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
                             for d in (by_scope[scope][m] for m in keys)]
                    lines.append(f"| {pair} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines)


def plot_budgets(result: dict[str, Any], path: str | Path) -> Path:
    """Save a PNG of budget_hit against budget, one panel per scope, one line per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = next(iter(result["systems"].values()))
    scopes = list(first)
    fig, axes = plt.subplots(1, len(scopes), figsize=(5.5 * len(scopes), 4), squeeze=False)
    for ax, scope in zip(axes[0], scopes, strict=True):
        for name, by_scope in result["systems"].items():
            pts = sorted((int(m.split("@")[1]), v) for m, v in by_scope[scope].items() if m.startswith("budget_hit@"))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks([p[0] for p in pts], [str(p[0]) for p in pts])
        ax.minorticks_off()
        ax.set_xlabel("context budget (word pieces)")
        ax.set_ylabel("budget_hit")
        ax.set_title(f"{Path(result['benchmark']).name}, scope {scope}")
        ax.grid(True, alpha=0.3)
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

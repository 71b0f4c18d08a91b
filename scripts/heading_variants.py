"""Write a copy of a benchmark whose documents have converter-heading fixes applied, line for line.

Usage:
    .venv/bin/python scripts/heading_variants.py BENCH_DIR OUT_DIR [--drop-row-headings] [--title-lines]
        [--title-level N]

Emulates heading options the parser may offer (issue 14: "dropping headings that read like
table rows", statement titles that converters leave as plain paragraphs), so their effect on
retrieval can be measured before they exist, on every benchmark alike. Rules are generic, not
fitted to any question:

- ``--drop-row-headings``: an ATX heading whose title reads like a table row or page furniture
  loses its ``#`` marks: two or more numeric tokens (``$ 29,499``, ``2021``, ``(1,234)``,
  ``12%``), or nothing but a number.
- ``--flatten N``: afterwards every top-level ATX heading is put at level N, so
  that ``tree.relevel_numbered`` re-nests them by their numbering (``Item 7`` -> 1,
  ``Section 2.05`` -> 2, unnumbered -> 1): the filing re-levelling the parser may offer.
- ``--title-lines``: a plain line standing alone (blank or page-marker lines around it, or the
  start of the text) that reads like a title becomes an ATX heading of ``--title-level``
  (default 2). Text in round brackets (``(In millions, except per share data)``) is set aside
  first; what is left has at most 14 words and 120 characters, at least two words, at most one
  numeric token and not as the last word, no final ``.``/``,``/``;``, is not a list item,
  table, HTML or code line, and has at least two words of four or more letters of which two
  thirds are capitalised (``CONSOLIDATED BALANCE SHEETS``, ``Consolidated Statements of
  Operations``); dates and times count as numbers (``5/7/26, 3:39 AM``); and the nearest
  non-blank lines before and after it are not title-like themselves (a run of such lines is a
  flattened table column or a list, not a title).

Only heading markers change: every line keeps its number, so gold given as lines stays valid;
gold given as character spans is rewritten as the same lines (``evidence_lines``). Fenced code
and HTML blocks are left alone (markdown-it-py finds them).
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import shutil
import sys
from pathlib import Path

_ATX = re.compile(r"^( {0,3})(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_NUMERIC = re.compile(r"^[\(\$€£]*[-+]?\d[\d,.:/-]*%?\)?[,;]?$")
_MARKER = re.compile(r"^\s*<!--.*-->\s*$")


def numeric_tokens(text: str) -> int:
    """Tokens that are numbers (``2021``, ``29,499``, ``(1.5)``, ``12%``); ``$`` alone is not one."""
    return sum(1 for t in text.split() if _NUMERIC.match(t))


def row_like(title: str) -> bool:
    """A heading title that reads like a table row or a page number."""
    words = title.split()
    return bool(words) and (numeric_tokens(title) >= 2 or all(_NUMERIC.match(w) or w in "$€£" for w in words))


def title_like(line: str) -> bool:
    """A plain line that reads like a title (see the module docstring)."""
    full = line.strip()
    if not full or full[0] in "-*+>|<`#[!(\\":
        return False
    s = re.sub(r"\s*\([^()]*\)", "", full).strip()  # units and notes in brackets: "(In millions)"
    if not s:
        return False
    words = s.split()
    if not 2 <= len(words) <= 14 or len(s) > 120 or s[-1] in ".,;" or numeric_tokens(s) > 1:
        return False
    if _NUMERIC.match(words[-1]):  # "Cash 12": a table row, not a title
        return False
    if s[0] in "-*+>|<`#[!" or re.match(r"^\d+[.)]\s", s) or "|" in s:
        return False
    long_words = [w.strip("()[]“”\"',:") for w in words]
    long_words = [w for w in long_words if len(w) >= 4 and w[:1].isalpha()]
    return len(long_words) >= 2 and sum(w[0].isupper() for w in long_words) * 3 >= 2 * len(long_words)


def _neighbour(lines: list[str], i: int, step: int) -> str:
    """The nearest non-blank line before (step -1) or after (step 1) line i, page markers skipped."""
    j = i + step
    while 0 <= j < len(lines) and (not lines[j].strip() or _MARKER.match(lines[j])):
        j += step
    return lines[j] if 0 <= j < len(lines) else ""


def _in_run(lines: list[str], i: int) -> bool:
    """Line i has a title-like neighbour: a column of a flattened table or a list, not a title."""
    return any(title_like(_neighbour(lines, i, step)) for step in (-1, 1))


def _blocks(text: str) -> set[int]:
    """0-based lines inside fenced/indented code or HTML blocks (never changed)."""
    from markdown_it import MarkdownIt

    out: set[int] = set()
    for t in MarkdownIt("commonmark").parse(text):
        if t.type in ("fence", "code_block", "html_block") and t.map:
            out.update(range(t.map[0], t.map[1]))
    return out


def transform(text: str, drop_row_headings: bool, title_lines: bool, title_level: int = 2,
              flatten: int = 0) -> tuple[str, dict]:
    """Apply the fixes; returns the new text (same lines) and counts of what changed."""
    lines = text.split("\n")
    frozen = _blocks(text)
    counts = {"dropped": 0, "promoted": 0, "flattened": 0}
    promote: list[int] = []
    for i, line in enumerate(lines):
        if i in frozen:
            continue
        m = _ATX.match(line)
        if m:
            if drop_row_headings and row_like(m.group(3) or ""):
                lines[i] = m.group(3) or ""
                counts["dropped"] += 1
            continue
        if not title_lines or not line.strip():
            continue
        before = i == 0 or not lines[i - 1].strip() or bool(_MARKER.match(lines[i - 1]))
        after = i + 1 >= len(lines) or not lines[i + 1].strip() or bool(_MARKER.match(lines[i + 1]))
        if before and after and title_like(line) and not _MARKER.match(line) and not _in_run(lines, i):
            promote.append(i)
    for i in promote:
        lines[i] = "#" * title_level + " " + lines[i].strip()
        counts["promoted"] += 1
    if flatten:
        for i, line in enumerate(lines):
            m = _ATX.match(line)
            if m and i not in frozen and m.group(3) and len(m.group(2)) != flatten:
                lines[i] = "#" * flatten + " " + m.group(3)
                counts["flattened"] += 1
    return "\n".join(lines), counts


def _line_gold(raw: str, spans: list[dict]) -> list[dict]:
    """Character spans of the original text as 1-based inclusive line ranges."""
    starts = [0] + [m.end() for m in re.finditer("\n", raw)]
    out = []
    for s in spans:
        a, b = int(s["start"]), int(s["end"])
        out.append({"start_line": bisect.bisect_right(starts, a), "end_line": bisect.bisect_right(starts, b - 1)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", help="benchmark folder (docs/*.md, questions.jsonl)")
    ap.add_argument("out", help="folder to write")
    ap.add_argument("--drop-row-headings", action="store_true")
    ap.add_argument("--title-lines", action="store_true")
    ap.add_argument("--title-level", type=int, default=2)
    ap.add_argument("--flatten", type=int, default=0, metavar="LEVEL",
                    help="then put every ATX heading at this level (with tree.relevel_numbered: numbering "
                         "re-levelling of converter output)")
    args = ap.parse_args(argv)
    src, out = Path(args.bench), Path(args.out)
    if out.resolve() == src.resolve():
        print("refusing to overwrite the source benchmark", file=sys.stderr)
        return 2
    if (out / "docs").is_dir():
        shutil.rmtree(out / "docs")
    (out / "docs").mkdir(parents=True)
    raws, total = {}, {"dropped": 0, "promoted": 0, "flattened": 0}
    for p in sorted((src / "docs").glob("*.md")):
        raw = p.read_bytes().decode("utf-8")
        if "\r" in raw or raw.startswith("\ufeff"):
            print(f"{p}: CRLF or BOM; normalise it first", file=sys.stderr)
            return 1
        raws[p.stem] = raw
        new, counts = transform(raw, args.drop_row_headings, args.title_lines, args.title_level, args.flatten)
        assert new.count("\n") == raw.count("\n")
        (out / "docs" / p.name).write_text(new, encoding="utf-8")
        for k in total:
            total[k] += counts[k]
    rows = []
    for line in (src / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        spans = row.pop("evidence_spans", None)
        if isinstance(spans, str):
            import ast

            spans = ast.literal_eval(spans)
        if spans and row["doc_id"] in raws:
            row["evidence_lines"] = row.get("evidence_lines", []) + _line_gold(raws[row["doc_id"]], spans)
        rows.append(row)
    (out / "questions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                         encoding="utf-8")
    print(f"wrote {out}: {len(raws)} documents; {total['dropped']} row-like headings dropped, "
          f"{total['promoted']} title lines promoted, {total['flattened']} headings moved to level {args.flatten}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

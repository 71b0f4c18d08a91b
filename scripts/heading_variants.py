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
- ``--title-lines``: a plain line standing alone (blank or page-marker lines around it, or the
  start of the text) that reads like a title becomes an ATX heading of ``--title-level``
  (default 2): at most 14 words and 120 characters, at least two words, at most one numeric
  token and not as the last word, no final ``.``/``,``/``;``, not a list item, table, HTML or
  code line, and at least
  two thirds of its words of four or more letters capitalised (``CONSOLIDATED BALANCE
  SHEETS``, ``Consolidated Statements of Operations``).

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
_NUMERIC = re.compile(r"^[\(\$€£]*[-+]?\d[\d,.]*%?\)?$")
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
    s = line.strip()
    words = s.split()
    if not 2 <= len(words) <= 14 or len(s) > 120 or s[-1] in ".,;" or numeric_tokens(s) > 1:
        return False
    if _NUMERIC.match(words[-1]):  # "Cash 12": a table row, not a title
        return False
    if s[0] in "-*+>|<`#[!" or re.match(r"^\d+[.)]\s", s) or "|" in s:
        return False
    long_words = [w.strip("()[]“”\"',:") for w in words]
    long_words = [w for w in long_words if len(w) >= 4 and w[:1].isalpha()]
    return bool(long_words) and sum(w[0].isupper() for w in long_words) * 3 >= 2 * len(long_words)


def _blocks(text: str) -> set[int]:
    """0-based lines inside fenced/indented code or HTML blocks (never changed)."""
    from markdown_it import MarkdownIt

    out: set[int] = set()
    for t in MarkdownIt("commonmark").parse(text):
        if t.type in ("fence", "code_block", "html_block") and t.map:
            out.update(range(t.map[0], t.map[1]))
    return out


def transform(text: str, drop_row_headings: bool, title_lines: bool, title_level: int = 2) -> tuple[str, dict]:
    """Apply the fixes; returns the new text (same lines) and counts of what changed."""
    lines = text.split("\n")
    frozen = _blocks(text)
    counts = {"dropped": 0, "promoted": 0}
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
        if before and after and title_like(line) and not _MARKER.match(line):
            lines[i] = "#" * title_level + " " + line.strip()
            counts["promoted"] += 1
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
    args = ap.parse_args(argv)
    src, out = Path(args.bench), Path(args.out)
    if out.resolve() == src.resolve():
        print("refusing to overwrite the source benchmark", file=sys.stderr)
        return 2
    if (out / "docs").is_dir():
        shutil.rmtree(out / "docs")
    (out / "docs").mkdir(parents=True)
    raws, total = {}, {"dropped": 0, "promoted": 0}
    for p in sorted((src / "docs").glob("*.md")):
        raw = p.read_bytes().decode("utf-8")
        if "\r" in raw or raw.startswith("\ufeff"):
            print(f"{p}: CRLF or BOM; normalise it first", file=sys.stderr)
            return 1
        raws[p.stem] = raw
        new, counts = transform(raw, args.drop_row_headings, args.title_lines, args.title_level)
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
          f"{total['promoted']} title lines promoted")
    return 0


if __name__ == "__main__":
    sys.exit(main())

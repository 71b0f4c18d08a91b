"""Build the long-report benchmark folder from ../shared/bench/long_docs (deterministic).

Usage:
    .venv/bin/python scripts/build_long_reports.py [--long-docs DIR] [--out DIR] [--check]

Three long documents stand in for a ~500-page report (chapters with introductions and
subsections, boxed asides, annex tables, definitions, cross-references):

- ``rust-book.md``: the 111 chapter files of "The Rust Programming Language" joined in
  SUMMARY.md order under one title heading ``# The Rust Programming Language``; every heading
  of the files (ATX, also inside block quotes, never inside code) is moved one level down, so
  chapters are level 2 under the title, their sections level 3, and so on (a level-6 heading
  stays 6); each file's first heading gets the number mdBook shows in its table of contents
  (``9. Error Handling``, ``9.1. Unrecoverable Errors with panic!``), as a printed report
  numbers its chapters. Files are separated by one blank line.
- ``emerson-credit-agreement.md`` and ``texas-roadhouse-credit-agreement.md``: the two credit
  agreements converted from PDF, byte for byte.

The long texts stay outside the repository: they are read from ``--long-docs`` (default
``$PROXYPOINTER_LONG_DOCS``, else ``../shared/bench/long_docs`` beside the project root); when
that folder is absent the script says so and builds nothing (exit 0). The questions and their
gold line ranges live in ``bench/long-reports/questions.jsonl`` (see its README); the built
folder (default ``build/long-reports``, gitignored) holds ``docs/*.md`` and a copy of the
questions, the layout ``proxypointer eval --benchmark`` reads. Every built document's SHA-256
is checked against ``bench/long-reports/docs.jsonl`` and every gold range against its quote,
so a changed source cannot silently move the gold (exit 1 with the reason).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "long-reports"
DEFAULT_LONG_DOCS = ROOT.parent / "shared" / "bench" / "long_docs"

#: doc_id -> file under long_docs, for documents copied as they are.
COPIED = {
    "emerson-credit-agreement": "credit_agreements/Emerson.md",
    "texas-roadhouse-credit-agreement": "credit_agreements/TRoadhouse.md",
}
RUST_TITLE = "The Rust Programming Language"
_SUMMARY_ITEM = re.compile(r"^(\s*)(-\s+)?\[[^\]]*\]\(([^)]+\.md)\)")
_ATX = re.compile(r"^((?:[ ]{0,3}>[ ]?)*[ ]{0,3})(#{1,6})([ \t]|$)")


def long_docs_dir(arg: str | None) -> Path:
    """Folder of the long documents: ``arg``, ``$PROXYPOINTER_LONG_DOCS`` or the shared default."""
    return Path(arg or os.environ.get("PROXYPOINTER_LONG_DOCS") or DEFAULT_LONG_DOCS)


def summary_order(rust_dir: Path) -> list[tuple[str, str]]:
    """``(file, number)`` in SUMMARY.md order, numbered as mdBook's table of contents does.

    Items before the first list item (title page, foreword, introduction) are unnumbered
    (``""``); top-level list items are chapters ``1.``, ``2.``...; nested items are
    ``1.1.``, ``1.2.``... Only files that exist are listed, each once.
    """
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    numbers: list[int] = []
    for line in (rust_dir / "SUMMARY.md").read_text(encoding="utf-8").splitlines():
        m = _SUMMARY_ITEM.match(line)
        if not m:
            continue
        indent, bullet, name = len(m.group(1).expandtabs(4)), m.group(2), m.group(3)
        number = ""
        if bullet:
            depth = indent // 2
            numbers = numbers[: depth + 1]
            while len(numbers) <= depth:
                numbers.append(0)
            numbers[depth] += 1
            number = ".".join(str(n) for n in numbers) + "."
        if name not in seen and (rust_dir / name).is_file():
            seen.add(name)
            out.append((name, number))
    return out


def heading_lines(text: str) -> set[int]:
    """0-based indexes of the lines that open an ATX heading, at any nesting (markdown-it-py)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    return {t.map[0] for t in tokens if t.type == "heading_open" and t.map and t.markup.startswith("#")}


def demote(text: str, number: str = "") -> str:
    """Move every ATX heading of ``text`` one level down (``#`` -> ``##``; 6 stays 6).

    ``number`` (e.g. ``9.1.``) is put before the title of the first heading, as mdBook shows it.
    """
    lines = text.split("\n")
    for n, i in enumerate(sorted(heading_lines(text))):
        m = _ATX.match(lines[i])
        if not m:
            continue
        head = m.group(1) + m.group(2) + ("#" if len(m.group(2)) < 6 else "")
        rest = lines[i][m.end(2):]
        if n == 0 and number:
            rest = f" {number} {rest.lstrip()}"
        lines[i] = head + rest
    return "\n".join(lines)


def build_rust_book(rust_dir: Path) -> str:
    """The Rust book as one document (see the module docstring)."""
    parts = [f"# {RUST_TITLE}\n"]
    for name, number in summary_order(rust_dir):
        body = (rust_dir / name).read_text(encoding="utf-8").replace("\r\n", "\n").strip("\n")
        parts.append(demote(body, number) + "\n")
    return "\n".join(parts)


def build_docs(long_docs: Path) -> dict[str, str]:
    """``doc_id -> text`` of the three documents."""
    docs = {doc_id: (long_docs / rel).read_text(encoding="utf-8") for doc_id, rel in COPIED.items()}
    docs["rust-book"] = build_rust_book(long_docs / "rust_book")
    return docs


def check_gold(docs: dict[str, str], questions: list[dict]) -> list[str]:
    """Problems with the gold: unknown documents, ranges outside the text, quotes not inside their range."""
    problems = []
    lines = {d: t.split("\n") for d, t in docs.items()}
    for q in questions:
        doc = q["doc_id"]
        if doc not in lines:
            problems.append(f"{q['id']}: unknown doc_id {doc!r}")
            continue
        for ev in q["evidence_lines"]:
            a, b = int(ev["start_line"]), int(ev["end_line"])
            if not 1 <= a <= b <= len(lines[doc]):
                problems.append(f"{q['id']}: lines {a}-{b} outside {doc} ({len(lines[doc])} lines)")
                continue
            quote = " ".join(ev.get("quote", "").split())
            if not quote or quote not in " ".join(" ".join(lines[doc][a - 1 : b]).split()):
                problems.append(f"{q['id']}: quote {ev.get('quote', '')!r} not found in {doc} lines {a}-{b}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--long-docs",
                    help="long_docs folder (default $PROXYPOINTER_LONG_DOCS or ../shared/bench/long_docs)")
    ap.add_argument("--out", default=str(ROOT / "build" / "long-reports"), help="benchmark folder to write")
    ap.add_argument("--check", action="store_true", help="only check hashes and gold quotes; write nothing")
    ap.add_argument("--write-manifest", action="store_true",
                    help="(maintainers) rewrite bench/long-reports/docs.jsonl from the built documents")
    args = ap.parse_args(argv)
    src = long_docs_dir(args.long_docs)
    if not (src / "rust_book" / "SUMMARY.md").is_file():
        print(f"{src}: long_docs not found (set PROXYPOINTER_LONG_DOCS or --long-docs); nothing built", file=sys.stderr)
        return 0
    docs = build_docs(src)
    manifest_path = BENCH / "docs.jsonl"
    if args.write_manifest:
        old = {}
        if manifest_path.is_file():
            old = {r["doc_id"]: r for r in map(json.loads, manifest_path.read_text().splitlines()) if r}
        rows = []
        for doc_id, text in sorted(docs.items()):
            row = {**old.get(doc_id, {}), "doc_id": doc_id, "sha256": hashlib.sha256(text.encode()).hexdigest(),
                   "lines": len(text.split("\n")) - (1 if text.endswith("\n") else 0), "chars": len(text)}
            rows.append(row)
        manifest_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    manifest = {r["doc_id"]: r for r in map(json.loads, manifest_path.read_text().splitlines()) if r}
    bad = [d for d, t in docs.items() if manifest.get(d, {}).get("sha256") != hashlib.sha256(t.encode()).hexdigest()]
    if bad:
        print(f"{manifest_path}: built documents differ from the recorded ones: {bad}; the gold line ranges may "
              "be stale (re-check them, then --write-manifest)", file=sys.stderr)
        return 1
    qpath = BENCH / "questions.jsonl"
    questions = [json.loads(x) for x in qpath.read_text(encoding="utf-8").splitlines() if x.strip()]
    problems = check_gold(docs, questions)
    if problems:
        print("\n".join(f"{qpath}: {p}" for p in problems), file=sys.stderr)
        return 1
    if args.check:
        print(f"ok: {len(docs)} documents, {len(questions)} questions")
        return 0
    out = Path(args.out)
    if (out / "docs").is_dir():
        shutil.rmtree(out / "docs")
    (out / "docs").mkdir(parents=True)
    for doc_id, text in docs.items():
        (out / "docs" / f"{doc_id}.md").write_text(text, encoding="utf-8")
    shutil.copy(qpath, out / "questions.jsonl")
    shutil.copy(manifest_path, out / "docs.jsonl")
    print(f"wrote {out}: {len(docs)} documents, {len(questions)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Chunking: token limits, breadcrumbs, noise filter, empty sections, window fallback."""

import dataclasses
from pathlib import Path

import pytest

from proxypointer.chunk.chunker import (
    REPEATED_CHUNKS_KEPT,
    breadcrumb_text,
    chunk_document,
    is_noise_title,
    normalise_title,
)
from proxypointer.config import ChunkingConfig
from proxypointer.embed.tokenizer import load_tokenizer
from proxypointer.lines import split_lines
from proxypointer.read.readers import read_document
from proxypointer.tree.build import build_tree


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


def _chunks(path: Path, tok, **cfg):
    text = read_document(path)
    tree = build_tree(text, path.stem)
    return tree, chunk_document(tree, text, tok, ChunkingConfig(**cfg)), split_lines(text)


def _assert_pointers(tree, chunks, lines):
    """A chunk's text lies inside its node's own lines, and within its own chunk lines."""
    for c in chunks:
        if c.kind == "window":
            body = "\n".join(lines[c.start_line - 1 : c.end_line])
        else:
            node = tree.node(c.node_id)
            assert (c.start_line, c.end_line, c.body_end_line) == (node.start_line, node.end_line, node.body_end_line)
            body = "\n".join(lines[node.start_line - 1 : node.body_end_line])
        assert c.text in body
        own = "\n".join(lines[c.chunk_start_line - 1 : c.chunk_end_line])
        assert c.text in own


def test_case_11_empty_sections_chunks(cases_dir, tok):
    tree, chunks, lines = _chunks(cases_dir / "11-empty-sections-heading-only" / "input.md", tok)
    got = [(tree.node(c.node_id).title, c.empty_body, c.text) for c in chunks]
    assert got == [
        ("Installation", False, "Run the installer and accept the defaults."),
        ("Power", False, "Check that the cable is seated."),
        ("Network", True, ""),
        ("Empty Section", True, ""),
        ("Usage", False, "Press the start button twice."),
        ("Changelog", True, ""),
    ]
    assert chunks[0].embed_text == "[Product Manual > Installation]\nRun the installer and accept the defaults."
    assert chunks[5].embed_text == "[Product Manual > Changelog]"
    _assert_pointers(tree, chunks, lines)


def test_case_24_no_chunk_exceeds_model_limit(cases_dir, tok):
    tree, chunks, lines = _chunks(cases_dir / "24-long-section-token-limit" / "input.md", tok)
    leaf = tree.nodes[-1]
    assert len(chunks) >= 6
    for c in chunks:
        full = len(tok.backend.encode(c.embed_text).ids)  # special tokens included
        assert full == c.n_tokens <= tok.max_seq_length
        assert (c.node_id, c.level, c.start_line, c.end_line) == (leaf.node_id, 4, 7, 27)
    assert sum("The override key code is KESTREL-7719." in c.text for c in chunks) == 1
    _assert_pointers(tree, chunks, lines)


def test_long_breadcrumb_is_shortened_not_overflowing(tok):
    title = " ".join(["Extraordinarily"] * 40)
    text = f"# {title} A\n## {title} B\n### {title} C\n#### Leaf\n\n" + "word " * 600 + "\n"
    tree = build_tree(text, "deep")
    chunks = chunk_document(tree, text, tok, ChunkingConfig())
    assert chunks and all(c.n_tokens <= tok.max_seq_length for c in chunks)
    assert all("..." in c.breadcrumb for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == ("word" * 600)


@pytest.mark.parametrize("size", [32, 64, 128, 200])
def test_chunk_sizes_never_over_limit_on_real_paper(shared_dir, tok, size):
    docs = sorted((shared_dir / "bench" / "qasper-dev" / "docs").glob("*.md"))[:3]
    for path in docs:
        tree, chunks, lines = _chunks(path, tok, chunk_tokens=size)
        assert all(c.n_tokens <= tok.max_seq_length for c in chunks)
        assert all(c.n_tokens - tok.n_special - tok.count(breadcrumb_text(c.breadcrumb)) <= size + 2 for c in chunks
                   if not c.empty_body)
        _assert_pointers(tree, chunks, lines)


def test_case_09_single_heading_is_not_a_window(cases_dir, tok):
    tree, chunks, lines = _chunks(cases_dir / "09-single-heading-doc" / "input.md", tok, chunk_tokens=128)
    assert len(chunks) >= 2
    assert all(c.kind == "heading" and c.embed_text.startswith("[Warranty Terms]") for c in chunks)
    assert all((c.level, c.start_line, c.end_line) == (1, 1, 9) for c in chunks)
    assert len({c.node_id for c in chunks}) == 1
    joined = "\n".join(c.text for c in chunks)
    for n in (3, 5, 7, 9):
        assert lines[n - 1][:40] in joined


def test_case_08_window_fallback_covers_every_line(cases_dir, tok):
    tree, chunks, lines = _chunks(
        cases_dir / "08-headerless-doc-window-fallback" / "input.md", tok, window_tokens=64, window_overlap_tokens=16
    )
    assert len(chunks) >= 2 and all(c.kind == "window" for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 21
    covered = set()
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start_line <= a.end_line + 1  # no gap
    for c in chunks:
        covered.update(range(c.start_line, c.end_line + 1))
        assert c.n_tokens <= 64 + tok.n_special
        # word boundaries: the text is whole words of the source line range
        body = "\n".join(lines[c.start_line - 1 : c.end_line])
        i = body.index(c.text)
        assert i == 0 or not body[i - 1].isalnum()
        j = i + len(c.text)
        assert j == len(body) or not body[j].isalnum()
    assert covered == set(range(1, 22))
    assert any("blue tin under the bench" in c.text for c in chunks)
    assert len({c.node_id for c in chunks}) == len(chunks)


@pytest.mark.parametrize("name", ["empty.md", "whitespace_only.md"])
def test_case_08_empty_documents_give_no_chunks(cases_dir, tok, name):
    _, chunks, _ = _chunks(cases_dir / "08-headerless-doc-window-fallback" / name, tok)
    assert chunks == []


def test_case_07_preamble_is_chunked(cases_dir, tok):
    tree, chunks, lines = _chunks(cases_dir / "07-preamble-before-first-heading" / "input.md", tok)
    pre = [c for c in chunks if c.kind == "preamble"]
    assert len(pre) == 1 and "Snapshots are kept for 30 days" in pre[0].text
    assert (pre[0].start_line, pre[0].end_line) == (1, 3)
    assert pre[0].breadcrumb == ("input",)
    assert pre[0].node_id not in {n.node_id for n in tree.nodes if n.kind == "heading"}


def test_blank_preamble_creates_no_node_or_chunk(tok):
    text = "\n   \n# Title\n\nBody text here.\n"
    tree = build_tree(text, "doc")
    assert [n.kind for n in tree.nodes] == ["heading"]
    assert [c.kind for c in chunk_document(tree, text, tok)] == ["heading"]


@pytest.mark.parametrize(
    ("title", "noise"),
    [("Contents", True), ("TABLE OF CONTENTS", True), ("9 References", True), ("9. References:", True),
     ("ACKNOWLEDGMENTS", True), ("Acknowledgements", True), ("**Bibliography**", True), ("IV. Foreword", True),
     ("2.1 Function References", False), ("Appendix A: Table of Contents for the printed edition", False),
     ("References to prior work", False), ("Contents of the kit", False)],
)
def test_noise_titles_match_exactly_after_normalising(title, noise):
    from proxypointer.config import DEFAULT_NOISE_TITLES

    assert is_noise_title(title, DEFAULT_NOISE_TITLES) is noise


def test_normalise_title_strips_numbering_markup_case():
    assert normalise_title("9. **REFERENCES**:") == "references"
    assert normalise_title("  3.2  Table  of   Contents ") == "table of contents"


def test_case_29_noise_skip_own_text_only_by_default(cases_dir, tok):
    tree, chunks, _ = _chunks(cases_dir / "29-noise-section-skip" / "input.md", tok)
    titles = [tree.node(c.node_id).title for c in chunks]
    # Default: a noise node skips its own text only; its child "Standards cited" is kept.
    # A report's executive summary is content (issue 32): embedded, unlike its contents.
    assert titles == ["Executive Summary", "1 Overview", "2.1 Function References", "2.2 Error codes",
                      "Standards cited", "Appendix A: Table of Contents for the printed edition"]
    assert not any("........" in c.text for c in chunks)


def test_case_29_noise_skip_with_descendants(cases_dir, tok):
    tree, chunks, _ = _chunks(cases_dir / "29-noise-section-skip" / "input.md", tok, skip_noise_descendants=True)
    titles = [tree.node(c.node_id).title for c in chunks]
    assert titles == ["Executive Summary", "1 Overview", "2.1 Function References", "2.2 Error codes",
                      "Appendix A: Table of Contents for the printed edition"]


def test_noise_list_is_configurable(cases_dir, tok):
    tree, chunks, _ = _chunks(cases_dir / "29-noise-section-skip" / "input.md", tok, noise_titles=("foreword",))
    titles = {tree.node(c.node_id).title for c in chunks}
    assert "Executive Summary" in titles and "Foreword" not in titles and "Contents" in titles


def test_case_15_table_stays_in_one_chunk_or_repeats_header(cases_dir, tok):
    path = cases_dir / "15-heading-markup-in-table-cells" / "input.md"
    tree, chunks, lines = _chunks(path, tok)
    table = "\n".join(lines[4:8])
    assert sum(table in c.text for c in chunks) == 1
    tree, small, _ = _chunks(path, tok, chunk_tokens=16)
    # Tables are embedded as text (issue 13): the header row is repeated in its rendered form.
    pieces = [c for c in small if c.text.lstrip().startswith("|")]
    assert pieces
    for c in pieces:
        assert "# Part name | Qty" in c.embed_text


def test_case_05_crlf_and_lf_give_identical_chunks(cases_dir, tok):
    d = cases_dir / "05-line-endings-crlf-formfeed"
    _, lf, _ = _chunks(d / "input_lf.md", tok)
    _, crlf, _ = _chunks(d / "input_crlf.md", tok)
    strip = lambda cs: [(c.node_id, c.embed_text, c.chunk_start_line, c.chunk_end_line) for c in cs]  # noqa: E731
    assert strip(lf) == strip(crlf)
    assert not any("\r" in c.embed_text or "\r" in "".join(c.breadcrumb) for c in crlf)


def test_breadcrumb_modes(tok):
    text = "# Paper\n\n## Method\n\nWe train a model on data.\n"
    tree = build_tree(text, "p")
    embed = {m: chunk_document(tree, text, tok, ChunkingConfig(breadcrumb=m))[0].embed_text
             for m in ("path", "section", "title", "none")}
    assert embed["path"] == "[Paper > Method]\nWe train a model on data."
    assert embed["section"] == "[Paper > Method]\nWe train a model on data."
    assert embed["title"] == "[Paper]\nWe train a model on data."
    assert embed["none"] == "We train a model on data."


def test_document_title_prefixed_when_not_root(tok):
    text = "# A\n\ntext a\n\n# B\n\ntext b\n"
    tree = build_tree(text, "folder/notes")
    crumbs = [c.breadcrumb for c in chunk_document(tree, text, tok)]
    assert crumbs == [("notes", "A"), ("notes", "B")]


def test_windows_strategy_ignores_headings(tok):
    text = "# A\n\n" + "alpha beta gamma. " * 200 + "\n\n## B\n\nend.\n"
    tree = build_tree(text, "d")
    config = ChunkingConfig(strategy="windows", window_tokens=64, window_overlap_tokens=8)
    chunks = chunk_document(tree, text, tok, config)
    assert len(chunks) > 3 and all(c.kind == "window" for c in chunks)
    assert chunks[-1].end_line == len(split_lines(text))


def test_chunk_ids_unique_and_deterministic(cases_dir, tok):
    path = cases_dir / "18-identical-chunk-text-ids" / "input.md"
    _, a, _ = _chunks(path, tok, chunk_tokens=80)
    _, b, _ = _chunks(path, tok, chunk_tokens=80)
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    assert len({c.chunk_id for c in a}) == len(a) == 5


def test_a_text_repeated_in_a_document_is_stored_at_most_eight_times(tok, caplog):
    # 40 copies of one paragraph in one section, 3 in another: the first keeps 8 (renumbered,
    # each pointing at its own line), the second all 3; shared case 18's two copies stay
    para = "The relief valve opens at six bar and closes at five bar on the return stroke."
    text = "# Pump\n\n## Valves\n\n" + "\n\n".join([para] * 40) + "\n\n## Seals\n\n" + "\n\n".join([para] * 3) + "\n"
    tree = build_tree(text, "pump")
    with caplog.at_level("WARNING", logger="proxypointer.chunk.chunker"):
        chunks = chunk_document(tree, text, tok, ChunkingConfig(chunk_tokens=32))
    assert REPEATED_CHUNKS_KEPT == 8
    valves, seals = _by_title(chunks, "Valves"), _by_title(chunks, "Seals")
    assert len(valves) == 8 and len(seals) == 3
    assert [c.chunk_index for c in valves] == list(range(8))
    assert [c.chunk_id.rsplit("::", 1)[1] for c in valves] == [f"{i:04d}" for i in range(8)]
    lines = split_lines(text)
    assert all(lines[c.chunk_start_line - 1] == para for c in valves + seals)
    assert len({c.chunk_start_line for c in valves}) == 8
    assert "pump: 32 chunks repeat a text already chunked 8 times" in caplog.text


def test_fallback_windows_over_one_long_line_are_chunks_of_one_node(tok):
    # A document without headings whose paragraphs are lines longer than a window: the windows
    # over one line point at the same lines, so they are one node (one search result); the
    # flat baseline (strategy: windows) keeps a node per window.
    words = " ".join(f"word{i}" for i in range(600))
    text = f"{words}\n\nA short closing line.\n"
    tree = build_tree(text, "notes")
    config = ChunkingConfig(window_tokens=64, window_overlap_tokens=8)
    chunks = chunk_document(tree, text, tok, config)
    first = [c for c in chunks if c.end_line == 1]
    assert len(first) > 3 and {c.node_id for c in first} == {"w0001"}
    assert [c.chunk_index for c in first] == list(range(len(first)))
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert [c.node_id for c in chunks if c.end_line > 1] == ["w0002"]  # the next range, numbered on
    flat = chunk_document(tree, text, tok, dataclasses.replace(config, strategy="windows"))
    assert len({c.node_id for c in flat}) == len(flat)


# -- tables embedded as text (issue 13) and their pointers ----------------------------------
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TENK = FIXTURES / "harborlight-10k-2023.md"


def _by_title(chunks, title):
    return [c for c in chunks if c.title == title]


@pytest.mark.parametrize("size", [200, 64])
def test_tables_are_embedded_as_text_never_as_markup(tok, size):
    tree, chunks, lines = _chunks(TENK, tok, chunk_tokens=size)
    for c in chunks:
        for markup in ("<td", "<tr", "</table", "<th", "|---", "| ---"):
            assert markup not in c.embed_text, (c.title, markup)
        full = len(tok.backend.encode(c.embed_text).ids)
        assert full == c.n_tokens <= tok.max_seq_length
    _assert_pointers(tree, chunks, lines)
    embedded = "\n".join(c.embed_text for c in chunks)
    assert "Total current assets: 2023 4,006; 2022 3,604" in embedded
    assert "Effective tax rate: 2023 21.1%; 2022 22.0%; 2021 21.0%" in embedded


def test_table_pieces_point_at_whole_source_rows(tok):
    tree, chunks, lines = _chunks(TENK, tok)
    sheet = [c for c in _by_title(chunks, "CONSOLIDATED BALANCE SHEETS") if "<t" in c.text]
    assert len(sheet) >= 3
    node = tree.node(sheet[0].node_id)
    for c in sheet:
        assert c.text.startswith(("<table>", "<tr>")) and c.text.endswith(("</tr>", "</table>"))
        assert c.text == "\n".join(lines[c.chunk_start_line - 1 : c.chunk_end_line])
    # Consecutive pieces tile the table: no row lost, none repeated (overlap_tokens is 0).
    for a, b in zip(sheet, sheet[1:], strict=False):
        assert b.chunk_start_line == a.chunk_end_line + 1
    table = [i + 1 for i in range(node.body_start_line - 1, node.body_end_line) if lines[i].startswith("<")]
    assert (sheet[0].chunk_start_line, sheet[-1].chunk_end_line) == (table[0], table[-1])


def test_long_table_split_between_rows_repeating_title_and_headers(tok):
    from proxypointer.chunk.tables import find_tables

    tree, chunks, lines = _chunks(TENK, tok)
    cash = _by_title(chunks, "CONSOLIDATED STATEMENTS OF CASH FLOWS")
    assert len(cash) >= 2
    node = tree.node(cash[0].node_id)
    (table,) = find_tables("\n".join(lines[node.body_start_line - 1 : node.body_end_line]))
    rows = [r.text for r in table.rows]
    # Every row is embedded whole, in exactly one piece, in order.
    placed = [[r for r in rows if f"\n{r}\n" in f"\n{c.embed_text}\n"] for c in cash]
    assert [r for piece in placed for r in piece] == rows
    for c in cash[1:]:
        body = c.embed_text.split("\n")
        assert body[1:3] == ["HARBORLIGHT SYSTEMS, INC. (in millions)", "2023 | 2022 | 2021"]
    # The one-line source table: every piece points at that line, and slices part of it.
    line = next(i + 1 for i, x in enumerate(lines) if x.startswith("<table><tr><th>"))
    assert cash[0].text.startswith("HARBORLIGHT SYSTEMS, INC.\n\n(in millions)\n\n<table>")
    for c in cash[1:]:
        assert (c.chunk_start_line, c.chunk_end_line) == (line, line)
        assert c.text in lines[line - 1] and c.text.startswith("<tr>") and c.text.endswith(("</tr>", "</table>"))


@pytest.mark.parametrize("size", [16, 32, 64])
def test_small_chunks_never_exceed_the_model_with_repeated_headers(tok, size):
    tree, chunks, lines = _chunks(TENK, tok, chunk_tokens=size)
    assert all(c.n_tokens <= tok.max_seq_length for c in chunks)
    _assert_pointers(tree, chunks, lines)
    debt = _by_title(chunks, "Note 14 - Debt")
    assert len(debt) > 2
    for c in debt:
        if c.text.startswith("|") and not c.text.startswith("| (in millions)"):
            assert "Maturity | Interest rate" in c.embed_text  # headers repeated


def test_markup_only_table_gives_no_markup_chunk(tok):
    text = "# Report\n\n## Empty table\n\n<table><tr><td>&nbsp;</td></tr></table>\n\n## Next\n\nSome text.\n"
    tree = build_tree(text, "r")
    chunks = chunk_document(tree, text, tok)
    empty = [c for c in chunks if c.title == "Empty table"]
    assert len(empty) == 1 and empty[0].empty_body and empty[0].embed_text == "[Report > Empty table]"


def test_tables_in_headingless_documents_windows(tok):
    rows = "\n".join(f"| Pump {i} | {i * 7} kW | station {i % 3} |" for i in range(60))
    text = f"Pump register of the north district.\n\n| Pump | Power | Site |\n|---|---|---|\n{rows}\n"
    tree = build_tree(text, "register")
    chunks = chunk_document(tree, text, tok, ChunkingConfig(window_tokens=96, window_overlap_tokens=16))
    assert len(chunks) > 2 and all(c.kind == "window" for c in chunks)
    for c in chunks[1:]:
        assert "Pump register of the north district.\nPump | Power | Site" in c.embed_text
    assert all("|" not in c.embed_text.split("\n", 3)[-1] for c in chunks)
    assert chunks[-1].end_line == len(split_lines(text))


def test_text_without_tables_is_embedded_as_written(cases_dir, tok):
    for name in ("09-single-heading-doc", "24-long-section-token-limit", "29-noise-section-skip"):
        _, chunks, _ = _chunks(cases_dir / name / "input.md", tok, chunk_tokens=64)
        for c in chunks:
            if not c.empty_body:
                assert c.embed_text == f"{breadcrumb_text(c.breadcrumb)}\n{c.text}"


def test_table_chunk_ids_and_hashes_are_stable(tok):
    _, a, _ = _chunks(TENK, tok)
    _, b, _ = _chunks(TENK, tok)
    assert [(c.chunk_id, c.content_hash) for c in a] == [(c.chunk_id, c.content_hash) for c in b]
    assert len({c.chunk_id for c in a}) == len(a)


@pytest.mark.parametrize("outer", [False, True])
def test_every_chunk_of_a_long_pipe_table_repeats_its_headers_with_or_without_outer_pipes(outer):
    from fakes import HashingEmbedder

    from proxypointer.config import ChunkingConfig

    rows = [f"Widget {i} | {i * 3} mm | ${i}.50" for i in range(60)]
    table = ["Part number | Size | Unit price", "--- | ---: | ---", *rows]
    if outer:
        table = [f"| {r} |" for r in table]
    text = "# Parts\n\nPrices of the parts.\n\n" + "\n".join(table) + "\n"
    chunks = chunk_document(build_tree(text, "d"), text, HashingEmbedder().tokenizer, ChunkingConfig(chunk_tokens=128))
    in_table = [c for c in chunks if "Widget" in c.embed_text]
    assert len(in_table) >= 3
    assert all("Part number | Size | Unit price" in c.embed_text for c in in_table)

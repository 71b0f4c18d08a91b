"""Chunking: token limits, breadcrumbs, noise filter, empty sections, window fallback."""

from pathlib import Path

import pytest

from proxypointer.chunking import breadcrumb_text, chunk_document, is_noise_title, normalise_title
from proxypointer.config import ChunkingConfig
from proxypointer.readers import read_document
from proxypointer.tokenizer import load_tokenizer
from proxypointer.tree import build_tree, split_lines


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
    assert titles == ["1 Overview", "2.1 Function References", "2.2 Error codes", "Standards cited",
                      "Appendix A: Table of Contents for the printed edition"]
    assert not any("........" in c.text for c in chunks)


def test_case_29_noise_skip_with_descendants(cases_dir, tok):
    tree, chunks, _ = _chunks(cases_dir / "29-noise-section-skip" / "input.md", tok, skip_noise_descendants=True)
    titles = [tree.node(c.node_id).title for c in chunks]
    assert titles == ["1 Overview", "2.1 Function References", "2.2 Error codes",
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
    header = lines[4]
    for c in small:
        if c.text.lstrip().startswith("|"):
            assert header in c.embed_text


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

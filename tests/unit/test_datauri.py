"""Shared case 31 (inline base64 data-URI images) and the variants of its kind."""

from __future__ import annotations

import re
import shutil

import pytest

from proxypointer.chunk.chunker import chunk_document
from proxypointer.chunk.datauri import data_uri_edits, replace_data_uris
from proxypointer.embed.tokenizer import load_tokenizer
from proxypointer.lines import slice_lines, split_lines
from proxypointer.read.readers import read_document
from proxypointer.tree.build import build_tree

B64_RUN = re.compile(r"[A-Za-z0-9+/=]{101,}")
PAYLOAD = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg" * 8


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


@pytest.fixture(scope="module")
def case31(cases_dir):
    path = cases_dir / "31-base64-data-uri-images" / "input.md"
    text = read_document(path)
    return path, text, build_tree(text, "site-survey")


def chunks_of(text: str, tok, doc_id: str = "doc"):
    tree = build_tree(text, doc_id)
    return chunk_document(tree, text, tok)


# -- case 31: one test per expected value -------------------------------------------------------
def test_case31_tree_unchanged(case31):
    _, _, tree = case31
    got = [(n.title, n.start_line, n.end_line, n.body_end_line) for n in tree.nodes]
    assert got == [
        ("Site Survey: North Pumping Station", 1, 13, 4),
        ("Photos", 5, 10, 10),
        ("Findings", 11, 13, 13),
    ]


def test_case31_photos_is_one_chunk_with_alt_text_and_caption(case31, tok):
    _, text, tree = case31
    photos = [c for c in chunk_document(tree, text, tok) if c.title == "Photos"]
    assert len(photos) == 1
    assert "Pump room" in photos[0].embed_text
    assert "The pump room holds two diesel pumps mounted on a concrete plinth." in photos[0].embed_text
    assert "[image: Pump room]" in photos[0].embed_text


def test_case31_three_chunks_in_total(case31, tok):
    _, text, tree = case31
    assert len(chunk_document(tree, text, tok)) == 3


def test_case31_no_base64_run_embedded(case31, tok):
    _, text, tree = case31
    for c in chunk_document(tree, text, tok):
        assert not B64_RUN.search(c.embed_text), c.title
        assert c.n_tokens <= tok.max_seq_length


def test_case31_chunk_points_at_the_source_lines_with_payload(case31, tok):
    _, text, tree = case31
    lines = split_lines(text)
    photos = next(c for c in chunk_document(tree, text, tok) if c.title == "Photos")
    assert (photos.start_line, photos.end_line, photos.chunk_start_line, photos.chunk_end_line) == (5, 10, 7, 9)
    assert photos.text == slice_lines(lines, 7, 9)  # the stored text keeps the 12,000-character payload
    assert len(lines[6]) == 12036 and lines[6] in photos.text


def test_case31_query_returns_photos_section_first_with_exact_text(case31, tmp_path, make_index):
    from proxypointer.retrieve.retriever import Retriever

    path, text, _ = case31
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(path, corpus / "site-survey.md")
    index = make_index()
    report = index.ingest([corpus], show_progress=False)
    assert report.failed == [] and index.store.count() == 3
    top = Retriever(index).retrieve("How many diesel pumps are in the pump room?", k=3)[0]
    assert top.citation == "site-survey.md#L5-L10"
    assert top.text == slice_lines(split_lines(text), 5, 10)


# -- variants of the kind ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"![Pump room](data:image/png;base64,{PAYLOAD})", "[image: Pump room]"),
        (f"![](data:image/jpeg;base64,{PAYLOAD})", "[image]"),
        (f'![Plan](data:image/webp;base64,{PAYLOAD} "Site plan")', "[image: Plan]"),
        (f"![Plan](<data:image/gif;base64,{PAYLOAD}>)", "[image: Plan]"),
        (f"![Logo](data:image/svg+xml;charset=utf-8;base64,{PAYLOAD})", "[image: Logo]"),
        (f'<img src="data:image/png;base64,{PAYLOAD}" alt="Pump room" width="300">', "[image: Pump room]"),
        (f"<IMG ALT='Valve' SRC='data:image/png;base64,{PAYLOAD}'/>", "[image: Valve]"),
        (f"<img src=data:image/png;base64,{PAYLOAD}>", "[image]"),
        (f"[Survey report](data:application/pdf;base64,{PAYLOAD})", "[Survey report](data:application/pdf;base64,...)"),
        (f"Font: data:font/woff2;base64,{PAYLOAD} end", "Font: data:font/woff2;base64,... end"),
        (f"![Chart](DATA:IMAGE/PNG;BASE64,{PAYLOAD})", "[image: Chart]"),
    ],
)
def test_payload_replaced_alt_text_kept(text, expected):
    assert replace_data_uris(text) == expected


def test_multi_line_payload_inside_quotes_and_parentheses():
    wrapped = "\n".join(PAYLOAD[i : i + 76] for i in range(0, len(PAYLOAD), 76))
    html = f'<img alt="Site plan"\n     src="data:image/png;base64,{wrapped}">\nCaption below.'
    assert replace_data_uris(html) == "[image: Site plan]\nCaption below."
    md = f"![Site plan](data:image/png;base64,{wrapped})\n\nThe plan shows two pumps."
    assert replace_data_uris(md) == "[image: Site plan]\n\nThe plan shows two pumps."


def test_reference_style_definition_with_wrapped_payload():
    wrapped = "\n".join(PAYLOAD[i : i + 76] for i in range(0, len(PAYLOAD), 76))
    text = f"See ![the logo][logo] above.\n\n[logo]: data:image/png;base64,{wrapped}\nThe end."
    assert replace_data_uris(text) == "See ![the logo][logo] above.\n\n[logo]: data:image/png;base64,...\nThe end."


def test_prose_after_a_payload_is_never_swallowed():
    # An unclosed parenthesis: the payload stops at the line end, the sentence survives.
    text = f"(data:image/png;base64,{PAYLOAD}\nThe pump room holds two diesel pumps)"
    assert replace_data_uris(text) == "(data:image/png;base64,...\nThe pump room holds two diesel pumps)"
    text = f"data:image/png;base64,{PAYLOAD}\nShort line\nThe end."
    assert replace_data_uris(text) == "data:image/png;base64,...\nShort line\nThe end."


def test_text_without_payload_unchanged():
    for text in ("No images here.", "![Pump](pump.png) and <img src='a.png' alt='x'>",
                 "The metadata:image/png;base64,AAAA field", "data:image/png;base64, nothing"):
        assert data_uri_edits(text) == []
        assert replace_data_uris(text) == text


def test_edits_are_offsets_into_the_text():
    text = f"A ![x](data:image/png;base64,{PAYLOAD}) B"
    (edit,) = data_uri_edits(text)
    assert text[: edit.start] == "A " and text[edit.end :] == " B" and edit.text == "[image: x]"


def test_many_images_in_one_section_stay_one_chunk(tok):
    body = "\n\n".join(
        f"![Photo {i}](data:image/png;base64,{PAYLOAD * 4})\n\nPhoto {i} shows pump {i}." for i in range(6)
    )
    text = f"# Survey\n\n## Photos\n\n{body}\n"
    chunks = chunks_of(text, tok)
    assert len(chunks) == 1
    assert all(f"[image: Photo {i}]" in chunks[0].embed_text for i in range(6))
    assert not B64_RUN.search(chunks[0].embed_text)


def test_payload_in_a_table_cell_and_in_windows_mode(tok):
    text = (
        "No headings in this note.\n\n"
        f"| Photo | Caption |\n|---|---|\n| ![Inlet](data:image/png;base64,{PAYLOAD}) | Inlet valve |\n"
    )
    chunks = chunks_of(text, tok)
    assert [c.kind for c in chunks] == ["window"]
    assert "[image: Inlet]" in chunks[0].embed_text and not B64_RUN.search(chunks[0].embed_text)
    assert PAYLOAD in chunks[0].text

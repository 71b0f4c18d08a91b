"""Reading files: encodings (shared case 33 and other byte-order marks), the reader table."""

from __future__ import annotations

import codecs
import pickle

import pytest

from proxypointer.errors import DocumentError
from proxypointer.lines import document_hash
from proxypointer.read.readers import MarkdownReader, ReadResult, decode_markdown, default_readers, read_document
from proxypointer.tree.build import build_tree

ROTA = "# Shift rota\r\n\r\nNight shift starts at 22:00.\r\n"
ROTA_TEXT = "# Shift rota\n\nNight shift starts at 22:00.\n"


# -- 33 ------------------------------------------------------------------------------------
def test_case33_utf16_le_with_bom_is_decoded(cases_dir):
    text = read_document(cases_dir / "33-non-utf8-encoding" / "corpus" / "shift-rota.md")
    assert text == ROTA_TEXT
    tree = build_tree(text, "shift-rota")
    (node,) = tree.nodes
    assert (node.title, node.level, node.start_line, node.end_line) == ("Shift rota", 1, 1, 3)


def test_case33_cp1252_is_decoded_with_a_warning_naming_the_file(cases_dir):
    path = cases_dir / "33-non-utf8-encoding" / "corpus" / "cafe-hours.md"
    text, warnings = decode_markdown(path.read_bytes(), path)
    assert text.splitlines()[0] == "# Caf\u00e9 opening hours"
    assert "\u2013" in text and "\u201cthe early shift\u201d" in text
    (w,) = warnings
    assert w.startswith(f"{path}:1: not UTF-8; decoded as Windows-1252")
    tree = build_tree(text, "cafe-hours")
    spans = [(n.title, n.start_line, n.end_line) for n in tree.nodes]
    assert spans == [("Caf\u00e9 opening hours", 1, 7), ("Closing", 5, 7)]
    assert tree.nodes[1].parent_id == tree.nodes[0].node_id


def test_case33_utf8_file_unchanged(cases_dir):
    text = read_document(cases_dir / "33-non-utf8-encoding" / "corpus" / "parking.md")
    assert text == "# Parking\n\nVisitors park in bay C.\n"


@pytest.mark.parametrize(
    ("encoded", "label"),
    [
        (codecs.BOM_UTF16_LE + ROTA.encode("utf-16-le"), "UTF-16 LE"),
        (codecs.BOM_UTF16_BE + ROTA.encode("utf-16-be"), "UTF-16 BE"),
        (codecs.BOM_UTF32_LE + ROTA.encode("utf-32-le"), "UTF-32 LE"),
        (codecs.BOM_UTF32_BE + ROTA.encode("utf-32-be"), "UTF-32 BE"),
        (codecs.BOM_UTF8 + ROTA.encode("utf-8"), "UTF-8"),
    ],
)
def test_kind33_every_byte_order_mark_is_decoded(tmp_path, encoded, label):
    path = tmp_path / "rota.md"
    path.write_bytes(encoded)
    text = read_document(path)
    assert text == ROTA_TEXT, label
    assert not text.startswith("\ufeff")


def test_kind33_same_text_in_any_encoding_has_one_source_key(tmp_path):
    reader = MarkdownReader()
    keys = {
        reader.source_key(data, "x.md")
        for data in (
            ROTA_TEXT.encode("utf-8"),
            codecs.BOM_UTF16_LE + ROTA.encode("utf-16-le"),
            codecs.BOM_UTF8 + ROTA.encode("utf-8"),
        )
    }
    assert keys == {document_hash(ROTA_TEXT)}


def test_kind33_utf16_without_bom_is_named_not_called_binary(tmp_path):
    for codec, label in (("utf-16-le", "UTF-16 LE"), ("utf-16-be", "UTF-16 BE")):
        path = tmp_path / f"{codec}.md"
        path.write_bytes(ROTA.encode(codec))
        with pytest.raises(DocumentError) as err:
            read_document(path)
        msg = str(err.value)
        assert msg.startswith(f"{path}: looks like {label} text without a byte-order mark")
        assert "convert it to UTF-8" in msg and "binary" not in msg


def test_kind33_binary_and_undecodable_files_are_refused_naming_the_file(tmp_path):
    png = tmp_path / "image.md"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(DocumentError, match=rf"^{png}: looks like a binary file"):
        read_document(png)
    sjis = tmp_path / "japanese.md"
    sjis.write_bytes("# 見出し\n\n本文です。\n".encode("shift_jis"))
    with pytest.raises(DocumentError) as err:
        read_document(sjis)
    assert str(err.value).startswith(f"{sjis}:1: invalid UTF-8 at byte 2")
    assert "convert the file to UTF-8" in str(err.value)
    broken = tmp_path / "broken-utf16.md"
    broken.write_bytes(codecs.BOM_UTF16_LE + "# T\n".encode("utf-16-le") + b"\x00")  # odd byte count
    with pytest.raises(DocumentError, match=r"UTF-16 LE file \(BOM FF FE\) holds invalid"):
        read_document(broken)
    with pytest.raises(DocumentError, match="no such file"):
        read_document(tmp_path / "missing.md")


def test_reader_table_and_results_are_picklable():
    table = default_readers()
    assert set(table) == {".md", ".markdown", ".pdf", ".docx", ".html", ".htm", ".pptx"}
    assert pickle.loads(pickle.dumps(table[".pdf"])).converter.options == table[".pdf"].converter.options
    assert pickle.loads(pickle.dumps(table[".htm"])).fmt == "html"
    reader = table[".md"]
    result = reader.read(b"# T\r\n\r\nbody\r\n", "t.md")
    assert result == ReadResult("# T\n\nbody\n", document_hash("# T\n\nbody\n"), None, ())
    assert result.source_key == reader.source_key(b"# T\n\nbody\n", "t.md")
    assert pickle.loads(pickle.dumps(result)) == result
    assert pickle.loads(pickle.dumps(reader)).read(b"x", "x.md") == reader.read(b"x", "x.md")


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.md")  # opening it to read would block until a writer comes
    with pytest.raises(DocumentError, match=r"pipe\.md: not a regular file \(a pipe, socket or device\)"):
        read_document(tmp_path / "pipe.md")

"""Document ids from file names of every kind: one Unicode normal form, names that cannot be ids
refused one by one, a file keeps the id it was first indexed under (issue 32)."""

from __future__ import annotations

import os
import sys
import unicodedata
from dataclasses import replace

import pytest

import proxypointer.ingest.stages as ingest_module
from proxypointer.docids import check_text, escaped, name_problem, normalize_doc_id
from proxypointer.errors import ConfigError
from proxypointer.read.discovery import Discovery, discover
from proxypointer.retrieve.retriever import Retriever

NFD = unicodedata.normalize("NFD", "Café-menu")
NFC = unicodedata.normalize("NFC", "Café-menu")
MENU = "# Menu\n\nThe soup of the day is a pumpkin soup with roasted seeds.\n"
NOTES = "# Notes\n\nThe boiler is serviced every spring by the landlord.\n"

needs_bytes_names = pytest.mark.skipif(
    sys.platform in ("darwin", "win32"), reason="the file system refuses names that are not UTF-8"
)


def test_normal_form_escaping_and_problems():
    assert NFD != NFC and normalize_doc_id(NFD) == NFC == normalize_doc_id(NFC)
    assert escaped("caf\udce9\nx\t") == "caf\\xe9\\nx\\t"
    assert "not valid UTF-8" in name_problem("caf\udce9")
    assert "control character" in name_problem("evil\nname")
    assert name_problem(NFD) == "" and name_problem("policies/leave") == ""
    assert "'..'" in name_problem("notes/..") and name_problem("v1.2/notes") == ""
    assert check_text("pump", "query") == "pump"
    with pytest.raises(ConfigError, match="lone surrogate") as err:
        check_text("pu\ud800mp", "query")
    # escaped once, as a user wrote it in JSON (a breaker saw 'pu\\\\ud800mp')
    assert str(err.value).startswith("query: 'pu\\ud800mp' holds a lone surrogate")


def test_a_decomposed_name_is_found_by_the_id_a_user_types(tmp_path, make_index):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / f"{NFD}.md").write_text(MENU, encoding="utf-8")
    index = make_index()
    index.ingest([corpus], show_progress=False)
    assert [r.doc_id for r in index.registry.documents()] == [NFC]
    r = Retriever(index)
    for typed in (NFC, NFD, f"{NFC}.md"):
        (s,) = r.retrieve("What is the soup of the day?", k=1, doc_ids=[typed])
        assert s.doc_id == NFC
    (s,) = r.retrieve("What is the soup of the day?", k=1, source_prefix=unicodedata.normalize("NFD", "Café"))
    assert s.doc_id == NFC
    assert index.delete([NFD]) == [NFC]
    assert index.registry.documents() == []


def test_a_store_holding_a_decomposed_id_keeps_it_and_answers_the_composed_one(tmp_path, make_index, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / f"{NFD}.md").write_text(MENU, encoding="utf-8")
    index = make_index()
    # The store an older release built: the id as the file system spelled it.
    older = replace(discover([corpus], {".md"}).files[0], doc_id=NFD)
    with monkeypatch.context() as m:
        m.setattr(ingest_module, "discover", lambda *a, **k: Discovery(files=[older], roots=[str(corpus)]))
        index.ingest([corpus], show_progress=False)
    assert [r.doc_id for r in index.registry.documents()] == [NFD]
    again = index.ingest([corpus], show_progress=False)  # today's discovery: the same file keeps its id
    assert not again.failed and again.unchanged == 1
    assert [r.doc_id for r in index.registry.documents()] == [NFD]
    (s,) = Retriever(index).retrieve("soup of the day", k=1, doc_ids=[NFC])
    assert s.doc_id == NFD
    assert index.delete([NFC]) == [NFD]


@needs_bytes_names
def test_names_that_cannot_be_ids_fail_alone_and_the_rest_is_indexed(tmp_path, make_index):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.md").write_text(NOTES, encoding="utf-8")
    with open(os.path.join(os.fsencode(corpus), b"caf\xe9.md"), "w", encoding="utf-8") as fh:
        fh.write(MENU)
    (corpus / "fake\nline.md").write_text(MENU, encoding="utf-8")
    index = make_index()
    report = index.ingest([corpus], show_progress=False)
    assert [r.doc_id for r in index.registry.documents()] == ["notes"]
    messages = sorted(m for _, m in report.failed)
    assert len(messages) == 2
    assert "caf\\xe9.md: not indexed: its name is not valid UTF-8" in messages[0]
    assert "fake\\nline.md: not indexed: its name holds a control character" in messages[1]
    for path, message in report.failed:  # printable, one line each
        assert "\n" not in message and message.encode("utf-8") and path.encode("utf-8")
    with pytest.raises(ConfigError, match="lone surrogate"):
        Retriever(index).retrieve("boiler", k=1, doc_ids=["\udcff"])
    with pytest.raises(ConfigError, match="lone surrogate"):
        Retriever(index).retrieve("pu\ud800mp", k=1)


def test_a_file_given_directly_keeps_the_id_it_got_from_its_folder(tmp_path, make_index):
    corpus = tmp_path / "corpus"
    (corpus / "policies").mkdir(parents=True)
    leave = corpus / "policies" / "leave.md"
    leave.write_text(NOTES, encoding="utf-8")
    index = make_index()
    index.ingest([corpus], show_progress=False)
    leave.write_text(NOTES + "\nThe landlord also checks the smoke alarms.\n", encoding="utf-8")
    report = index.ingest([leave], show_progress=False)
    assert not report.failed and report.indexed == 1
    assert [r.doc_id for r in index.registry.documents()] == ["policies/leave"]



@needs_bytes_names  # macOS file systems keep one of the two names
def test_two_files_whose_names_differ_only_in_normal_form_are_told_apart(tmp_path):
    # new-user trial: "doc_id 'Café-menu' is already the id of .../Café-menu.md" named two
    # paths that print alike; the message shows the difference
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in (NFC, NFD):
        (folder / f"{name}.md").write_text("# Menu\n\nSoup.\n", encoding="utf-8")
    found = discover([folder], {".md"})
    assert len(found.files) == 1 and len(found.failed) == 1
    message = found.failed[0][1]
    assert "\\u0301" in message and "\\xe9" in message and "Unicode normal form" in message

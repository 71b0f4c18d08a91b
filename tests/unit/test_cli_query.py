"""``query`` and ``ask`` on the command line, in-process with the hashing embedder (issue 15)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from proxypointer.config import ProxyPointerConfig

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from fakes import HashingEmbedder

    from proxypointer.index import Index

    root = tmp_path_factory.mktemp("store")
    with Index(root, ProxyPointerConfig(), HashingEmbedder()) as index:
        assert not index.ingest([DATA], show_progress=False).failed
    return root


@pytest.fixture
def cli(fake_embedder, monkeypatch):
    """``cli(*argv)`` runs ``proxypointer`` in-process with the hashing embedder."""
    from proxypointer import cli as cli_mod
    from proxypointer.index import Index

    opened = []

    def _index(args, **_):
        idx = Index(args.store, cli_mod._config(args), fake_embedder)
        opened.append(idx)
        return idx

    monkeypatch.setattr(cli_mod, "_index", _index)
    yield cli_mod.main
    for idx in opened:
        idx.close()


@pytest.mark.parametrize("command", ["query", "ask"])
@pytest.mark.parametrize("question", ["", "   ", "\t\n"])
def test_an_empty_question_is_refused(cli, capsys, store, command, question):
    assert cli([command, question, "--store", str(store)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: question: empty; give a question or keywords")


@pytest.mark.parametrize("command", ["query", "ask"])
def test_a_question_that_is_not_utf8_is_refused_as_such(cli, capsys, store, command):
    # bytes that are not UTF-8 reach argv as lone surrogates (Python's surrogateescape)
    question = b"pu\xed\xa0\x80mp".decode("utf-8", "surrogateescape")
    assert cli([command, question, "--store", str(store)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "is not valid UTF-8 text" in err and "empty" not in err
    assert err.count("\n") == 1


def test_doc_accepts_the_citation_form(cli, capsys, store):
    assert cli(["query", "How is parental leave paid?", "--doc", "employee-handbook.md", "--json",
                "--store", str(store)]) == 0
    sections = json.loads(capsys.readouterr().out)["sections"]
    assert sections and {s["doc_id"] for s in sections} == {"employee-handbook"}
    assert cli(["query", "How is parental leave paid?", "--doc", "employee-handbook", "--json",
                "--store", str(store)]) == 0
    assert json.loads(capsys.readouterr().out)["sections"] == sections


def test_an_unknown_doc_is_named(cli, capsys, store):
    code = cli(["query", "notice period", "--doc", "employee-handbook", "--doc", "x", "--doc", "y.md",
                "--store", str(store)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == "error: --doc: no document 'x', 'y.md' in the store; `proxypointer status --docs` lists them\n"
    assert cli(["ask", "notice period", "--doc", "x", "--store", str(store)]) == 1
    assert "no document 'x'" in capsys.readouterr().err


def test_a_query_on_a_missing_store_creates_nothing(cli, capsys, tmp_path):
    for command in ("query", "ask"):
        assert cli([command, "notice period", "--store", str(tmp_path / "typo")]) == 1
        assert "no proxypointer store here" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_a_prefix_matching_nothing_says_so(cli, capsys, store):
    assert cli(["query", "notice period", "--prefix", "policies/", "--store", str(store)]) == 0
    assert capsys.readouterr().out.startswith("no sections found under prefix 'policies/' (the store has 3 documents)")
    assert cli(["query", "notice period", "--prefix", "policies/", "--json", "--store", str(store)]) == 0
    assert json.loads(capsys.readouterr().out) == {"query": "notice period", "k": 5, "sections": []}


def test_a_closed_stdout_ends_quietly(cli, capsys, store, monkeypatch):
    # `proxypointer query --json ... | head -2`: the reader is gone before everything is written.
    import sys

    read, write = os.pipe()
    os.close(read)
    out = os.fdopen(write, "w")
    monkeypatch.setattr(sys, "stdout", out)
    try:
        code = cli(["query", "How is parental leave paid?", "--json", "-k", "5", "--store", str(store)])
    finally:
        out.close()
    assert code == 141
    assert "Traceback" not in capsys.readouterr().err


def test_a_big_section_prints_its_own_text_then_the_subsections_not_shown(cli, capsys, tmp_path):
    import yaml

    config = tmp_path / "capped.yaml"
    # Delivery is under test: scored by the best chunk, 3.2's own text comes first.
    config.write_text(yaml.safe_dump({"retrieval": {"subtree_cap_tokens": 100, "own_text_tokens": 80,
                                                    "section_scoring": "max"}}))
    store = tmp_path / "store"
    from fakes import HashingEmbedder

    from proxypointer.config import load_config
    from proxypointer.index import Index

    with Index(store, load_config(config), HashingEmbedder()) as index:
        assert not index.ingest([DATA / "employee-handbook.md"], show_progress=False).failed
    question = "enhanced scheme on top of statutory entitlements for parental leave"
    argv = ["query", question, "-k", "1", "--config", str(config), "--store", str(store)]
    assert cli(argv) == 0
    out = capsys.readouterr().out
    head, body = out.split("\n\n", 1)
    assert "3.2 Parental leave" in head and "is long: showing its own text" in head
    assert "    subsections not shown:\n    - 3.2.1 Eligibility (L" in body
    assert "#### 3.2.1" not in body  # the children's text is not printed
    assert cli([*argv, "--json"]) == 0
    (section,) = json.loads(capsys.readouterr().out)["sections"]
    assert section["delivery"] == "own_text" and section["outline"][0]["title"] == "3.2.1 Eligibility"
    assert section["citation"] == f"employee-handbook.md#L{section['text_start_line']}-L{section['text_end_line']}"


def test_the_model_loaders_progress_bar_is_off_unless_the_user_set_the_hubs_switch(cli, capsys, store, monkeypatch):
    # transformers draws its own "Loading weights" bar on every model load (every `query`)
    # unless the hub's switch is set before it is imported: the CLI sets it, and keeps a
    # value the user set.
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "")  # restored (absent or not) after the test
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS")
    assert cli(["query", "notice period", "--json", "--store", str(store)]) == 0
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    assert cli(["query", "notice period", "--json", "-q", "--store", str(store)]) == 0
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"
    capsys.readouterr()


def test_status_docs_lists_the_ids_that_doc_takes(cli, capsys, store):
    # the --doc error points here: every doc_id is listed, with its sections, chunks and source
    assert cli(["status", "--docs", "--store", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    listed = [line.split()[0] for line in out[3:]]
    assert "employee-handbook" in listed and listed == sorted(listed)
    assert cli(["status", "--docs", "--json", "--store", str(store)]) == 0
    docs = json.loads(capsys.readouterr().out)["document_list"]
    assert [d["doc_id"] for d in docs] == listed
    assert all(d["chunks"] > 0 and d["state"] == "ready" and Path(d["source"]).is_file() for d in docs)


def test_delete_takes_the_citation_form(cli, capsys, caplog, tmp_path, fake_embedder):
    from proxypointer.index import Index

    root = tmp_path / "store"
    with Index(root, ProxyPointerConfig(), fake_embedder) as index:
        assert not index.ingest([DATA / "employee-handbook.md"], show_progress=False).failed
    assert cli(["delete", "employee-handbook.md", "no-such-doc", "--store", str(root)]) == 1
    out = capsys.readouterr()
    assert out.out == "deleted 1 of 2 documents\n"
    assert out.err.startswith("error: no document 'no-such-doc' in the store; `proxypointer status --docs` lists them")
    # said once (issue 32: the store's own warning repeated it on stderr)
    assert out.err.count("no-such-doc") == 1 and not [r for r in caplog.records if "no-such-doc" in r.getMessage()]
    with Index(root, ProxyPointerConfig(), fake_embedder) as index:
        assert index.registry.get("employee-handbook") is None


def test_delete_counts_a_document_named_twice_once(cli, capsys, tmp_path, fake_embedder):
    from proxypointer.index import Index

    root = tmp_path / "store"
    with Index(root, ProxyPointerConfig(), fake_embedder) as index:
        assert not index.ingest([DATA / "employee-handbook.md"], show_progress=False).failed
    # its id twice, or its id and its file name: one document, all of it deleted, exit 0
    argv = ["delete", "employee-handbook", "employee-handbook.md", "employee-handbook", "--store", str(root)]
    assert cli(argv) == 0
    out = capsys.readouterr()
    assert (out.out, out.err) == ("deleted 1 of 1 documents\n", "")
    assert cli(["delete", "nope", "nope", "--store", str(root)]) == 1
    out = capsys.readouterr()
    assert out.out == "deleted 0 of 1 documents\n" and out.err.count("'nope'") == 1


def test_check_repair_says_it_repaired_and_check_then_says_ok(cli, capsys, fake_embedder, tmp_path):
    from proxypointer.index import Index

    root = tmp_path / "store"
    with Index(root, ProxyPointerConfig(), fake_embedder) as index:
        index.ingest([DATA], show_progress=False)
        damaged = index.registry.sources.tokens_file(index.registry.sources.live_doc_hashes()[0])
    damaged.write_text("{not json")
    assert cli(["check", "--store", str(root)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("inconsistent: 3 documents")
    assert cli(["check", "--repair", "--store", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "repaired: stored the word pieces per line of 1 documents" in out
    assert out[-1].startswith("repaired (run `proxypointer check` to confirm): 3 documents")
    assert cli(["check", "--store", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("ok: 3 documents")


def test_query_text_shows_an_inline_image_as_its_placeholder_and_json_the_exact_lines(cli, capsys, tmp_path):
    # A converter's inline picture is one line of hundreds of KB: the text output shows the
    # placeholder `ask` gives a model; --json keeps the stored lines (the pointer contract).
    payload = "iVBORw0KGgo" + "A" * 200_000
    doc = tmp_path / "survey.md"
    doc.write_text(f"# Survey\n\n## Photos\n\n![pump room](data:image/png;base64,{payload})\n\nTwo diesel pumps.\n")
    store = str(tmp_path / "store")
    assert cli(["ingest", str(doc), "--store", store, "-q"]) == 0
    capsys.readouterr()
    assert cli(["query", "diesel pumps photos", "-k", "1", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "[image: pump room]" in out and "Two diesel pumps." in out and len(out) < 2_000
    assert cli(["query", "diesel pumps photos", "-k", "1", "--json", "--store", store]) == 0
    (section,) = json.loads(capsys.readouterr().out)["sections"]
    assert payload in section["text"]


@pytest.mark.parametrize("command", ["query", "ask"])
def test_a_huge_heading_is_cut_in_the_breadcrumbs_shown(cli, capsys, tmp_path, fake_embedder, command):
    from proxypointer.index import Index

    doc = tmp_path / "docs" / "huge.md"
    doc.parent.mkdir()
    title = "Pump " + "x" * 20_000
    doc.write_text(f"# {title}\n\n## Maintenance\n\nThe coolant pump is serviced every spring.\n", encoding="utf-8")
    store = tmp_path / "store"
    with Index(store, ProxyPointerConfig(), fake_embedder) as index:
        assert not index.ingest([doc.parent], show_progress=False).failed
    assert cli([command, "When is the coolant pump serviced?", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "Maintenance" in out and "(20,005 characters)" in out
    assert max(len(line) for line in out.splitlines()) < 500


def test_ingest_of_only_missing_paths_creates_no_store(cli, capsys, tmp_path):
    store = tmp_path / "store"
    assert cli(["--store", str(store), "ingest", str(tmp_path / "nosuch"), str(tmp_path / "gone.md")]) == 1
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'nosuch'}: no such file or folder; check the path" in err
    assert f"error: {tmp_path / 'gone.md'}: no such file or folder" in err
    assert not store.exists()


def test_control_characters_of_a_document_reach_the_terminal_escaped(cli, capsys, tmp_path, fake_embedder):
    # a breaker: an ESC colour sequence and a bell in a heading and its text were printed raw by
    # `query` and `tree` (a document could recolour or ring the terminal that reads it)
    from proxypointer.index import Index

    doc = tmp_path / "ctrl.md"
    doc.write_text("# Alarm \x1b[31mcodes\x07\n\nCode 7 means \x1b[2Jthe pump\x08stopped.\n", encoding="utf-8")
    root = tmp_path / "store"
    with Index(root, ProxyPointerConfig(), fake_embedder) as index:
        assert not index.ingest([doc], show_progress=False).failed
    assert cli(["query", "alarm code pump", "-k", "1", "--store", str(root)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x08" not in out
    assert "Alarm \\x1b[31mcodes\\x07" in out and "\\x1b[2Jthe pump\\x08stopped." in out
    assert cli(["tree", str(doc)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "Alarm \\x1b[31mcodes\\x07" in out
    assert cli(["query", "alarm code pump", "-k", "1", "--json", "--store", str(root)]) == 0
    got = json.loads(capsys.readouterr().out)["sections"][0]
    assert "\x1b[2Jthe pump\x08stopped." in got["text"]  # the exact stored lines

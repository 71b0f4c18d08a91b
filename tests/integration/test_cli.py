"""The console script end to end, real model and real Chroma, in subprocesses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXE = str(Path(sys.executable).parent / "proxypointer")


def run(*args, cwd, check=True):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    p = subprocess.run([EXE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The shipped data/ corpus ingested once with the default model into ./.proxypointer."""
    cwd = tmp_path_factory.mktemp("cli")
    p = run("ingest", str(ROOT / "data"), cwd=cwd)
    assert "3 documents (3 indexed" in p.stdout
    return cwd


def test_ingest_is_idempotent_and_summarises(store):
    p = run("ingest", str(ROOT / "data"), "--json", cwd=store)
    rep = json.loads(p.stdout)
    assert (rep["documents"], rep["indexed"], rep["unchanged"], rep["embedded"]) == (3, 0, 3, 0)


def test_query_json_fields_and_citation(store):
    p = run("query", "How many weeks of full basic pay do birth and adoptive parents receive?", "-k", "3", "--json",
            cwd=store)
    out = json.loads(p.stdout)  # one shape with HTTP's POST /search: an object with its sections
    assert set(out) == {"query", "k", "sections"} and out["k"] == 3
    sections = out["sections"]
    assert len(sections) == 3
    for key in ("doc_id", "node_id", "title", "breadcrumb", "start_line", "end_line", "text", "score",
                "chunk_text", "citation"):
        assert key in sections[0]
    hit = [s for s in sections if "18 weeks at full basic pay" in s["text"]]
    assert hit, [s["citation"] for s in sections]
    s = hit[0]
    assert s["citation"] == f"employee-handbook.md#L{s['start_line']}-L{s['end_line']}"
    lines = (ROOT / "data" / "employee-handbook.md").read_text().split("\n")
    assert s["text"] == "\n".join(lines[s["start_line"] - 1 : s["end_line"]])
    assert s["breadcrumb"][0] == "Employee Handbook"


def test_query_text_output(store):
    p = run("query", "Where is the padlock key for the outer gate kept?", "-k", "2", cwd=store)
    assert "site-visit-notes.md#L" in p.stdout and "4471" in p.stdout


def test_bad_inputs_are_reported_and_others_indexed(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("# Good\n\nThe cafeteria opens at eight.\n")
    (corpus / "empty.md").write_text("")
    (corpus / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (corpus / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve\n".encode("latin-1"))
    (corpus / "utf16.md").write_bytes("\ufeff# Shift rota\r\n\r\nNight shift starts at 22:00.\r\n".encode("utf-16-le"))
    (corpus / "sjis.md").write_bytes("# 見出し\n\n本文です。\n".encode("shift_jis"))
    p = run("ingest", str(corpus), str(tmp_path / "missing.md"), cwd=tmp_path, check=False)
    assert p.returncode == 1
    err = p.stderr
    for name in ("binary.md", "sjis.md", "missing.md"):  # failures: each named once, as an error
        assert err.count(name) == 1 and f"error: {tmp_path}" in err, err
    assert "sjis.md:1: invalid UTF-8" in err and "convert the file to UTF-8" in err
    for name in ("empty.md", "latin1.md"):  # an empty file and a Windows-1252 one: notes, not failures
        assert err.count(name) == 1 and f"note: {corpus / name}" in err, err
    assert err.count("error: ") == 3 and "Traceback" not in err
    assert "6 documents (3 indexed" in p.stdout  # good, latin1 (cp1252), utf16 (BOM)
    q = json.loads(run("query", "when does the cafeteria open", "--json", cwd=tmp_path).stdout)["sections"]
    assert q[0]["doc_id"] == "good"
    q = json.loads(run("query", "when does the night shift start", "--json", cwd=tmp_path).stdout)["sections"]
    assert q[0]["doc_id"] == "utf16" and q[0]["citation"] == "utf16.md#L1-L3"


def test_doc_id_collisions_are_refused_naming_both(tmp_path):
    for team in ("teamA", "teamB"):
        (tmp_path / team).mkdir()
        (tmp_path / team / "README.md").write_text(f"# {team} onboarding\n\nLaptops for {team}.\n")
    p = run("ingest", "teamA", "teamB", "--store", "S", cwd=tmp_path, check=False)
    assert p.returncode == 1 and "1 indexed" in p.stdout
    (line,) = [x for x in p.stderr.splitlines() if x.startswith("error: ")]
    assert str(tmp_path / "teamA" / "README.md") in line and str(tmp_path / "teamB" / "README.md") in line
    p = run("ingest", "teamB", "--store", "S", cwd=tmp_path, check=False)
    assert p.returncode == 1 and "0 indexed" in p.stdout
    status = json.loads(run("status", "--json", "--store", "S", cwd=tmp_path).stdout)
    assert status["documents"] == 1


def test_commands_other_than_ingest_never_create_a_store(tmp_path):
    for args in (["status"], ["check"], ["delete", "x"], ["query", "anything"]):
        p = run(*args, "--store", "typo", cwd=tmp_path, check=False)
        assert p.returncode == 1, args
        assert p.stderr.strip().splitlines()[-1] == (
            "error: typo: no proxypointer store here; run `proxypointer ingest` first"), args
    assert not (tmp_path / "typo").exists()


def test_tree_json(tmp_path):
    p = run("tree", str(ROOT / "data" / "employee-handbook.md"), "--json", cwd=tmp_path)
    tree = json.loads(p.stdout)
    assert tree["doc_id"] == "employee-handbook" and tree["line_count"] > 100
    first = tree["nodes"][0]
    assert set(first) == {"node_id", "title", "level", "start_line", "end_line", "body_end_line", "parent_id", "kind",
                          "page_start", "page_end"}
    assert first["kind"] == "preamble"
    assert (first["page_start"], first["page_end"], tree["page_count"]) == (0, 0, 0)  # markdown without pages


def test_usage_error_exit_code(tmp_path):
    p = run("query", cwd=tmp_path, check=False)
    assert p.returncode == 2


def test_bad_config_is_one_line_error(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("chunking:\n  chunk_tokens: -5\n")
    p = run("ingest", str(ROOT / "data"), "--config", str(cfg), cwd=tmp_path, check=False)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines()[-1].startswith(f"error: {cfg}: chunking.chunk_tokens")


@pytest.mark.parametrize("command", ["query", "tree"])
def test_a_closed_pipe_ends_without_a_traceback(store, command):
    # `proxypointer query --json ... | head -2`: the reader is gone before the output is written.
    args = (["query", "How is parental leave paid?", "--json", "-k", "5"] if command == "query"
            else ["tree", "--json", str(ROOT / "data" / "employee-handbook.md")])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    p = subprocess.Popen([EXE, *args], cwd=store, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=600) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_case_36_long_query_keeps_the_question_with_the_real_model(tmp_path):
    # The e-mail preamble (296 word pieces) plus the question is over MiniLM's 256: the right
    # section stays first, and the CLI warns with both lengths.
    case = ROOT / "tests" / "cases" / "36-long-query-truncation"
    run("ingest", str(case / "corpus"), cwd=tmp_path)
    question = "How many weeks of full pay do new parents get?"
    long_q = (case / "filler.txt").read_text().strip() + "\n\n" + question
    for q in (question, long_q):
        p = run("query", q, "-k", "3", "--json", cwd=tmp_path)
        assert json.loads(p.stdout)["sections"][0]["title"] == "Parental leave pay", p.stdout
    assert "query has 307 word pieces, more than the 254 the model reads" in p.stderr


def test_verbose_shows_our_debug_messages_not_other_libraries(tmp_path):
    # Five documents: more than title routing's 3, so a query builds its small BM25 index over
    # the titles, whose library (bm25s) logs "Building index from tokens" at DEBUG.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("alpha", "bravo", "charlie", "delta", "echo"):
        text = f"# {name.title()} Plant Manual\n\n## Pumps\n\nThe {name} pump holds 6 bar.\n"
        (corpus / f"{name}.md").write_text(text)
    run("ingest", str(corpus), cwd=tmp_path)
    err = run("-v", "query", "What pressure does the delta pump hold?", "-k", "2", cwd=tmp_path).stderr
    # the query is embedded by the encoder the ingest exported (no torch): our DEBUG line says so
    assert "DEBUG proxypointer.embed.embedder: texts embedded by" in err, err
    assert "DEBUG bm25s" not in err and "DEBUG chromadb" not in err, err


def test_a_section_the_question_names_says_so_in_words(store):
    # new-user trial: "reached via query -> 3.2 Error codes (L155-L175)" read as a riddle
    out = run("query", "What does section 3.2 of the telemetry gateway spec say?", "-k", "2", cwd=store).stdout
    first = out.split("\n\n")[0]
    assert "3.2 Error codes" in first and "first because the question names it" in first, out
    assert "reached via" not in out

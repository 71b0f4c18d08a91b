"""Serving layer (proxypointer.serve.service.Service): what both servers return, refuse and share."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from proxypointer.config import ProxyPointerConfig, ServeConfig
from proxypointer.errors import LockError, StaleSourceError
from proxypointer.index import Index
from proxypointer.lines import slice_lines, split_lines
from proxypointer.retrieve.retriever import Retriever
from proxypointer.serve.concurrency import SharedEmbedder
from proxypointer.serve.errors import BadRequest, Forbidden, NotFound, WriteBusy, status_of
from proxypointer.serve.service import Service

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
QUERIES = ["parental leave pay", "expense claims deadline", "gateway retry backoff", "site visit safety findings"]


def _config(**serve) -> ProxyPointerConfig:
    return dataclasses.replace(ProxyPointerConfig(), serve=ServeConfig(**serve))


@pytest.fixture
def store(tmp_path, fake_embedder) -> Path:
    path = tmp_path / "store"
    with Index(path, ProxyPointerConfig(), fake_embedder) as index:
        assert not index.ingest([DATA], show_progress=False).failed
    return path


@pytest.fixture
def service(store, fake_embedder):
    svc = Service(store, _config(threads=3), fake_embedder)
    svc.warm_up()
    yield svc
    svc.close()


def _source_lines(store: Path, doc_id: str, fake_embedder) -> list[str]:
    with Index(store, ProxyPointerConfig(), fake_embedder) as index:
        rec = index.registry.get(doc_id)
        return split_lines(index.registry.sources.load(rec.doc_hash))


def test_search_returns_the_retriever_sections_with_their_citations(service, store, fake_embedder):
    with Index(store, ProxyPointerConfig(), fake_embedder) as index:
        for q in QUERIES:
            expected = Retriever(index).retrieve(q, 4)
            got = service.search(q, k=4, max_tokens=service.limits.max_tokens)["sections"]
            assert [(s["citation"], s["text"], s["breadcrumb"]) for s in got] == [
                (s.citation, s.text, list(s.breadcrumb)) for s in expected
            ]
            assert all(not s["truncated"] and s["next_start_line"] is None for s in got)
            assert all("chunk_text" not in s for s in got)


def test_search_budget_cuts_whole_stored_lines(service, store, fake_embedder):
    tok = fake_embedder.tokenizer
    for budget in (5, 40, 150, 400):
        res = service.search("parental leave pay", k=5, max_tokens=budget)
        assert res["max_tokens"] == budget and res["tokens"] == sum(s["tokens"] for s in res["sections"])
        assert res["tokens"] <= budget
        for s in res["sections"]:
            lines = _source_lines(store, s["doc_id"], fake_embedder)
            start, end = s["text_start_line"], s["text_end_line"]
            assert s["start_line"] <= start and start - 1 <= end <= s["end_line"]
            assert s["text"] == (slice_lines(lines, start, end) if end >= start else "")
            assert s["tokens"] == (tok.count(s["text"]) if s["text"] else 0)
            assert s["next_start_line"] in (None, end + 1) and (s["truncated"] or s["next_start_line"] is None)


def test_a_big_section_comes_as_its_own_text_with_an_outline_to_follow(store, fake_embedder):
    config = dataclasses.replace(_config(), retrieval=dataclasses.replace(
        ProxyPointerConfig().retrieval, subtree_cap_tokens=100, own_text_tokens=80))
    svc = Service(store, config, fake_embedder)
    try:
        res = svc.search("enhanced scheme on top of statutory entitlements for parental leave", k=5,
                         doc_ids=["employee-handbook"], max_tokens=10_000)
        big = [s for s in res["sections"] if s["delivery"] != "subtree"]
        assert big and all(s["tokens"] <= 80 for s in big)
        lines = _source_lines(store, "employee-handbook", fake_embedder)
        for s in big:
            assert s["text"] == slice_lines(lines, s["text_start_line"], s["text_end_line"])
            assert s["citation"] == f"employee-handbook.md#L{s['text_start_line']}-L{s['text_end_line']}"
        child = next(e for s in big for e in s["outline"])
        got = svc.get_section("employee-handbook", child["node_id"], max_tokens=10_000)  # follow the outline
        assert got["citation"] == child["citation"]
    finally:
        svc.close()


def test_get_section_pages_through_a_section_exactly(service, store, fake_embedder):
    with Index(store, ProxyPointerConfig(), fake_embedder) as index:
        target = max(Retriever(index).retrieve("parental leave", 5), key=lambda s: s.end_line - s.start_line)
    first = service.get_section(target.doc_id, target.node_id, max_tokens=service.limits.max_tokens)
    assert (first["text"], first["citation"]) == (target.text, target.citation)
    assert first["breadcrumb"] == list(target.breadcrumb) and first["title"] == target.title
    pages, start = [], None
    while True:
        page = service.get_section(target.doc_id, target.node_id, start_line=start, max_tokens=30)
        assert page["citation"] == f"{target.doc_id}.md#L{page['start_line']}-L{page['end_line']}"
        assert page["tokens"] <= 30 and page["section_start_line"] == target.start_line
        pages.append(page["text"])
        if page["next_start_line"] is None:
            break
        start = page["next_start_line"]
    assert len(pages) > 1 and "\n".join(pages) == target.text


def test_get_section_line_ranges_and_whole_document(service, store, fake_embedder):
    lines = _source_lines(store, "telemetry-gateway-spec", fake_embedder)
    part = service.get_section("telemetry-gateway-spec", start_line=3, end_line=9)
    assert part["text"] == slice_lines(lines, 3, 9) and part["citation"] == "telemetry-gateway-spec.md#L3-L9"
    assert part["node_id"] is None and part["kind"] == "document"
    whole = service.get_section("telemetry-gateway-spec", max_tokens=service.limits.max_tokens)
    assert whole["text"] == "\n".join(lines) and (whole["start_line"], whole["end_line"]) == (1, len(lines))
    assert service.document_text("telemetry-gateway-spec") == "\n".join(lines)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"doc_id": "nope"}, NotFound, ["nope", "list_documents"]),
        ({"doc_id": "employee-handbook", "node_id": "zz"}, NotFound, ["zz", "get_structure"]),
        ({"doc_id": "employee-handbook", "start_line": 0}, BadRequest, ["start_line"]),
        ({"doc_id": "employee-handbook", "start_line": 9, "end_line": 3}, BadRequest, ["9-3"]),
        ({"doc_id": "employee-handbook", "start_line": 5, "end_line": 99999}, BadRequest, ["lines 1-309"]),
        ({"doc_id": "employee-handbook", "max_tokens": 0}, BadRequest, ["max_tokens"]),
        (
            {"doc_id": "employee-handbook", "start_line": 1, "max_tokens": 1},
            BadRequest,
            ["line 1 alone", "max_tokens=1"],
        ),
        ({"doc_id": 7}, BadRequest, ["doc_id", "string"]),
    ],
)
def test_get_section_refusals_say_what_to_change(service, kwargs, error, words):
    with pytest.raises(error) as err:
        service.get_section(**kwargs)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_get_section_of_a_node_refuses_lines_outside_it(service):
    node = next(n for n in service.get_structure("employee-handbook")["nodes"] if n["kind"] == "heading")
    child = next(n for n in service.get_structure("employee-handbook")["nodes"] if n["parent_id"] == node["node_id"])
    got = service.get_section("employee-handbook", child["node_id"], start_line=child["start_line"] + 1)
    assert got["start_line"] == child["start_line"] + 1
    with pytest.raises(BadRequest):
        service.get_section("employee-handbook", child["node_id"], start_line=child["end_line"] + 1)


def test_structure_is_the_stored_tree_and_depth_filters_it(service, store, fake_embedder):
    full = service.get_structure("employee-handbook")
    lines = _source_lines(store, "employee-handbook", fake_embedder)
    by_id = {n["node_id"]: n for n in full["nodes"]}
    assert full["line_count"] == len(lines) and len(full["nodes"]) > 10
    for n in full["nodes"]:
        assert 1 <= n["start_line"] <= n["end_line"] <= len(lines)
        assert n["citation"] == f"employee-handbook.md#L{n['start_line']}-L{n['end_line']}"
        if n["parent_id"]:
            parent = by_id[n["parent_id"]]
            assert parent["start_line"] <= n["start_line"] <= n["end_line"] <= parent["end_line"]
            assert n["depth"] == parent["depth"] + 1
        else:
            assert n["depth"] == 1
    top = service.get_structure("employee-handbook", depth=2)["nodes"]
    assert top == [n for n in full["nodes"] if n["depth"] <= 2] and len(top) < len(full["nodes"])
    with pytest.raises(BadRequest):
        service.get_structure("employee-handbook", depth=0)


def test_list_documents_pages_and_filters(service):
    all_docs = service.list_documents()
    assert all_docs["total"] == 3 and all_docs["next_offset"] is None
    ids = [d["doc_id"] for d in all_docs["documents"]]
    assert ids == ["employee-handbook", "site-visit-notes", "telemetry-gateway-spec"]
    assert {"doc_id", "title", "source", "line_count", "sections", "chunks", "indexed_at"} <= set(
        all_docs["documents"][0]
    )
    assert all_docs["documents"][0]["indexed_at"].endswith("+00:00")
    page = service.list_documents(offset=1, limit=1)
    assert [d["doc_id"] for d in page["documents"]] == ids[1:2] and page["next_offset"] == 2
    assert [d["doc_id"] for d in service.list_documents(prefix="site")["documents"]] == ["site-visit-notes"]
    with pytest.raises(BadRequest):
        service.list_documents(limit=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"query": "   "}, BadRequest, ["query", "empty"]),
        ({"query": "x" * 2001}, BadRequest, ["2000 characters"]),
        ({"query": "leave", "k": 0}, BadRequest, ["k", "1..20"]),
        ({"query": "leave", "k": 21}, BadRequest, ["k", "1..20"]),
        ({"query": "leave", "k": True}, BadRequest, ["k", "integer"]),
        ({"query": "leave", "max_tokens": 20001}, BadRequest, ["max_tokens", "1..20000"]),
        ({"query": "leave", "doc_ids": "employee-handbook"}, BadRequest, ["doc_ids", "list"]),
        ({"query": "leave", "doc_ids": ["employee-handbook", "nope"]}, NotFound, ["nope"]),
        ({"query": "leave\x00"}, BadRequest, ["NUL"]),
    ],
)
def test_search_refusals_say_what_to_change(service, kwargs, error, words):
    with pytest.raises(error) as err:
        service.search(**kwargs)
    assert all(w in str(err.value) for w in words), str(err.value)
    assert status_of(err.value) == error.status


def test_search_filters_by_doc_ids_and_prefix(service):
    got = service.search("safety", k=5, doc_ids=["site-visit-notes"])["sections"]
    assert got and {s["doc_id"] for s in got} == {"site-visit-notes"}
    got = service.search("retry", k=5, prefix="telemetry")["sections"]
    assert got and {s["doc_id"] for s in got} == {"telemetry-gateway-spec"}


def test_a_document_is_found_by_its_citation_form_as_on_the_command_line(service):
    # a breaker: `--doc employee-handbook.md` worked on the CLI, /documents/employee-handbook.md/tree was 404
    by_id = service.get_structure("employee-handbook")
    assert service.get_structure("employee-handbook.md") == by_id
    assert service.get_section("employee-handbook.md", start_line=1, end_line=2)["doc_id"] == "employee-handbook"
    with pytest.raises(NotFound, match="no such document"):
        service.get_structure("employee-handbook.pdf")  # not the file it was indexed from


def test_a_window_that_search_returns_can_be_read_by_its_node_id(service):
    # a breaker: search gave site-visit-notes' windows (w0001) that get_section called "not a node"
    got = service.search("safety findings", k=3, doc_ids=["site-visit-notes"], max_tokens=20000)["sections"]
    windows = [s for s in got if s["node_id"].startswith("w")]
    assert windows
    for hit in windows:
        sec = service.get_section("site-visit-notes", hit["node_id"], max_tokens=20000)
        assert sec["kind"] == "window" and (sec["start_line"], sec["end_line"]) == (hit["start_line"], hit["end_line"])
        assert (sec["text"], sec["citation"]) == (hit["text"], hit["citation"])
    with pytest.raises(NotFound, match="not a node or window"):
        service.get_section("site-visit-notes", "w9999")


@pytest.mark.parametrize("empty", [[], ()])
def test_search_with_an_empty_doc_id_list_selects_nothing(service, empty):
    # an allow-list with no document is access control, not "no filter" (shared case 32)
    assert service.search("safety", k=5, doc_ids=empty)["sections"] == []


def test_errors_map_to_http_statuses():
    assert status_of(LockError("x")) == 409
    assert status_of(StaleSourceError("x")) == 503
    assert status_of(WriteBusy("x")) == 409 and status_of(Forbidden("x")) == 403


def test_read_only_service_refuses_writes(service):
    with pytest.raises(Forbidden, match="--allow-write"):
        service.ingest([str(DATA)])
    with pytest.raises(Forbidden, match="--allow-write"):
        service.delete("employee-handbook")


def test_ingest_reads_only_under_the_configured_roots(tmp_path, fake_embedder):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\n## One\n\nalpha text\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nnot for the index\n", encoding="utf-8")
    store = tmp_path / "store"
    no_roots = Service(store, _config(), fake_embedder, allow_write=True)
    with pytest.raises(Forbidden, match="ingest_roots"):
        no_roots.ingest([str(corpus)])
    no_roots.close()
    svc = Service(store, _config(ingest_roots=(str(corpus),)), fake_embedder, allow_write=True)
    try:
        for bad in (str(outside), str(outside / "secret.md"), str(corpus / ".." / "outside")):
            with pytest.raises(Forbidden, match="outside serve.ingest_roots"):
                svc.ingest([bad])
        with pytest.raises(BadRequest, match="no such file"):
            svc.ingest([str(corpus / "missing.md")])
        (corpus / "link.md").symlink_to(outside / "secret.md")
        with pytest.raises(Forbidden, match="resolves outside"):
            svc.ingest([str(corpus)])
        assert svc.list_documents()["total"] == 0  # refused before anything was written (the store is empty)
        (corpus / "link.md").unlink()
        report = svc.ingest([str(corpus)])
        assert report["indexed"] == 1 and not report["failed"]
        assert [d["doc_id"] for d in svc.list_documents()["documents"]] == ["a"]
        assert svc.search("alpha", k=1)["sections"][0]["doc_id"] == "a"
        assert svc.delete("a") == {"deleted": ["a"]}
        assert svc.list_documents()["total"] == 0
        with pytest.raises(NotFound):
            svc.delete("a")
    finally:
        svc.close()


def test_writes_wait_for_each_other_then_give_up_with_a_clear_error(tmp_path, fake_embedder, store):
    cfg = dataclasses.replace(
        _config(ingest_roots=(str(DATA),)), store=dataclasses.replace(ProxyPointerConfig().store, lock_timeout_s=0.2)
    )
    svc = Service(store, cfg, fake_embedder, allow_write=True)
    try:
        with svc.writes.writing():  # another write of this server is running
            with pytest.raises(WriteBusy, match="another write"):
                svc.delete("site-visit-notes")
        assert svc.delete("site-visit-notes") == {"deleted": ["site-visit-notes"]}
    finally:
        svc.close()


def test_concurrent_requests_give_the_sequential_answers(service):
    expected = {q: service.search(q, k=3) for q in QUERIES}
    structure = service.get_structure("employee-handbook")
    errors, results = [], []

    def work(i: int) -> None:
        try:
            for j in range(6):
                q = QUERIES[(i + j) % len(QUERIES)]
                results.append(service.search(q, k=3) == expected[q])
                results.append(service.get_structure("employee-handbook") == structure)
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 96 and all(results)


def test_service_sees_a_new_version_written_by_another_index(service, store, tmp_path, fake_embedder):
    before = service.get_section("site-visit-notes", start_line=1, end_line=1)["text"]
    changed = tmp_path / "changed"
    changed.mkdir()
    text = (DATA / "site-visit-notes.md").read_text(encoding="utf-8")
    (changed / "site-visit-notes.md").write_text("# Inserted heading\n\nzebra quokka\n\n" + text, encoding="utf-8")
    with Index(store, ProxyPointerConfig(), fake_embedder) as other:
        other.delete(["site-visit-notes"])  # another file takes an id only once it is free (shared case 37)
        assert other.ingest([changed], show_progress=False).indexed == 1
    after = service.get_section("site-visit-notes", start_line=1, end_line=1)["text"]
    assert before != after and after == "# Inserted heading"
    hit = service.search("zebra quokka", k=1)["sections"][0]
    assert hit["doc_id"] == "site-visit-notes" and "zebra quokka" in hit["text"]


class _SlowEmbedder:
    """Counts how many threads are inside encode_query at once."""

    def __init__(self, inner):
        self.inner, self.name, self.inside, self.most = inner, inner.name, 0, 0
        self.lock = threading.Lock()

    @property
    def tokenizer(self):
        return self.inner.tokenizer

    def encode(self, texts):
        return self.inner.encode(texts)

    def encode_query(self, query):
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(0.01)
        with self.lock:
            self.inside -= 1
        return self.inner.encode_query(query)


def test_shared_embedder_encodes_one_query_at_a_time(fake_embedder):
    slow = _SlowEmbedder(fake_embedder)
    shared = SharedEmbedder(slow)
    threads = [threading.Thread(target=shared.encode_query, args=(f"q{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert slow.most == 1 and shared.name == fake_embedder.name
    assert shared.tokenizer is fake_embedder.tokenizer


def test_importing_proxypointer_and_help_load_no_server_packages():
    code = (
        "import sys, contextlib, io\n"
        "import proxypointer, proxypointer.cli, proxypointer.serve, proxypointer.serve.service\n"
        "for argv in (['--help'], ['serve', '--help'], ['serve', 'http', '--help'], ['serve', 'mcp', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        proxypointer.cli.main(argv)\n"
        "heavy = ('mcp', 'fastapi', 'uvicorn', 'starlette', 'torch', 'chromadb')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("blocked", "run", "extra"), [("fastapi", "run_http", "server"), ("mcp", "run_mcp", "mcp")])
def test_a_missing_extra_is_named(blocked, run, extra):
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from proxypointer.errors import MissingDependencyError\n"
        f"from proxypointer.serve import {run}\n"
        "try:\n"
        f"    {run}(None)\n"
        "except MissingDependencyError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert f"proxypointer[{extra}]" in out and blocked in out


def test_fit_lines_takes_the_longest_prefix_within_the_budget(fake_embedder):
    from proxypointer.serve.texts import fit_lines

    tok = fake_embedder.tokenizer
    lines = [f"Line {i}: " + "word-piece tokenisation of unbelievably long identifiers " * (i % 4) for i in range(60)]
    for budget in (1, 3, 10, 57, 200, 1000, 10**6):
        n, used = fit_lines(lines, budget, tok)
        brute = max((m for m in range(len(lines) + 1) if tok.count("\n".join(lines[:m])) <= budget), default=0)
        assert n == brute and used == (tok.count("\n".join(lines[:n])) if n else 0), budget


def _long_report(folder: Path) -> tuple[Path, int]:
    """A report whose one long section holds the answer in its middle: (file, answer line)."""
    topics = ["store staffing", "logistics partners", "inventory shrink", "membership programs", "gift cards"]
    lines = ["# Annual Report", "", "## Results of Operations", ""]
    answer = 0
    for i in range(160):
        t = topics[i % len(topics)]
        lines += [f"In period {i} the company reviewed {t} across its regions and planned further reviews of {t}.", ""]
        if i == 80:
            lines += ["Enterprise revenue for fiscal 2023 was $46.3 billion, down 10.6% from fiscal 2022.", ""]
            answer = len(lines) - 1
    lines += ["## Other Matters", "", "Nothing else to report."]
    folder.mkdir()
    path = folder / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path, answer


def test_the_excerpt_of_a_long_section_holds_the_lines_that_matched_in_every_front_end(tmp_path, fake_embedder):
    # issue 32: a long section's excerpt showed lines away from the answer. The excerpt is
    # seeded by the chunks that matched, and serving it within a budget keeps them.
    doc, answer = _long_report(tmp_path / "docs")
    store = tmp_path / "store"
    with Index(store, ProxyPointerConfig(), fake_embedder) as index:
        index.ingest([doc.parent], show_progress=False)
        query = "enterprise revenue fiscal 2023 billion"
        (s,) = Retriever(index).retrieve(query, 1)
        assert s.delivery == "excerpt" and s.text_end_line - s.text_start_line < 200
        assert s.text_start_line <= answer <= s.text_end_line and "$46.3 billion" in s.text
    svc = Service(store, _config(), fake_embedder)
    try:
        for budget in (None, 120):  # the default budget, and one far smaller than the excerpt
            (got,) = svc.search(query, k=1, max_tokens=budget)["sections"]
            assert got["text_start_line"] <= answer <= got["text_end_line"] and "$46.3 billion" in got["text"]
    finally:
        svc.close()


def test_a_server_that_may_write_starts_on_a_new_store(tmp_path, fake_embedder):
    # issue 32: `serve http --allow-write` could not start where no store was yet
    root = tmp_path / "new-store"
    with pytest.raises(Exception, match="no proxypointer store here"):
        Service(root, _config(), fake_embedder).warm_up()  # read-only: never creates one
    assert not (root / "registry.sqlite3").exists()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\n## Kettle\n\nDescale the kettle.\n", encoding="utf-8")
    svc = Service(root, _config(ingest_roots=(str(docs),)), fake_embedder, allow_write=True)
    try:
        assert svc.warm_up()["documents"] == 0
        assert svc.ingest([str(docs)])["indexed"] == 1
        assert svc.search("kettle", k=1)["sections"][0]["doc_id"] == "guide"
    finally:
        svc.close()

"""``serve mcp``: the MCP SDK's own client over stdio and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from serve_driver import DRIVER, Server, server_env

from proxypointer.config import ProxyPointerConfig
from proxypointer.index import Index
from proxypointer.lines import slice_lines, split_lines
from proxypointer.retrieve.retriever import Retriever

mcp = pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
TOKEN = "mcp-integration-token-0123456789"
QUERIES = ("parental leave pay", "gateway retry backoff", "site visit safety findings")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    from fakes import HashingEmbedder

    path = tmp_path_factory.mktemp("serve-mcp") / "store"
    with Index(path, ProxyPointerConfig(), HashingEmbedder()) as index:
        assert not index.ingest([DATA], show_progress=False).failed
    return path


def _expected(store: Path, embedder) -> dict:
    """What the tools must return, from the library in this process."""
    with Index(store, ProxyPointerConfig(), embedder) as index:
        retriever = Retriever(index)
        out = {q: retriever.retrieve(q, 3) for q in QUERIES}
        rec = index.registry.get("employee-handbook")
        out["nodes"] = [(n[0], n[3], n[4]) for n in json.loads(index.registry.tree_json("employee-handbook"))]
        out["lines"] = split_lines(index.registry.sources.load(rec.doc_hash))
    return out


async def _exercise(session: ClientSession, expected: dict) -> None:
    """List the tools and call each one, its error paths included, on data/."""
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search", "explain", "list_documents", "get_structure", "get_section"}
    assert all(t.annotations.read_only_hint and t.description for t in tools.values())
    schema = tools["search"].input_schema
    assert schema["required"] == ["query"]
    assert (schema["properties"]["k"]["minimum"], schema["properties"]["k"]["maximum"]) == (1, 20)
    assert tools["get_section"].input_schema["required"] == ["doc_id"]

    for q in QUERIES:
        res = await session.call_tool("search", {"query": q, "k": 3, "max_tokens": 20000})
        assert not res.is_error, res.content
        got = res.structured_content["sections"]
        assert [(s["citation"], s["text"], s["breadcrumb"], s["score"]) for s in got] == [
            (s.citation, s.text, list(s.breadcrumb), pytest.approx(s.score, abs=1e-6)) for s in expected[q]
        ]
        assert json.loads(res.content[0].text) == res.structured_content  # same JSON for text-only clients
    why = await session.call_tool("explain", {"query": QUERIES[0], "k": 3})
    assert not why.is_error, why.content
    assert [(s["doc_id"], s["node_id"], s["rank"]) for s in why.structured_content["sections"]] == [
        (s.doc_id, s.node_id, i) for i, s in enumerate(expected[QUERIES[0]], 1)
    ]
    assert all(s["signals"] and s["signals"][0]["name"] == "dense" for s in why.structured_content["sections"])
    small = (await session.call_tool("search", {"query": QUERIES[0], "k": 3, "max_tokens": 40})).structured_content
    assert small["tokens"] <= 40 and any(s["truncated"] for s in small["sections"])

    docs = (await session.call_tool("list_documents", {})).structured_content
    assert [d["doc_id"] for d in docs["documents"]] == [p.stem for p in sorted(DATA.glob("*.md"))]

    tree = (await session.call_tool("get_structure", {"doc_id": "employee-handbook"})).structured_content
    assert [(n["node_id"], n["start_line"], n["end_line"]) for n in tree["nodes"]] == expected["nodes"]
    shallow = (await session.call_tool("get_structure", {"doc_id": "employee-handbook", "depth": 1})).structured_content
    assert shallow["nodes"] and all(n["depth"] == 1 for n in shallow["nodes"])

    top = expected[QUERIES[0]][0]
    sec = await session.call_tool("get_section", {"doc_id": top.doc_id, "node_id": top.node_id})
    assert (sec.structured_content["text"], sec.structured_content["citation"]) == (top.text, top.citation)
    lines = await session.call_tool("get_section", {"doc_id": "employee-handbook", "start_line": 5, "end_line": 9})
    assert lines.structured_content["text"] == slice_lines(expected["lines"], 5, 9)
    assert lines.structured_content["citation"] == "employee-handbook.md#L5-L9"

    refusals = [
        ("get_structure", {"doc_id": "nope"}, "no such document"),
        ("get_section", {"doc_id": "nope"}, "no such document"),
        ("get_section", {"doc_id": "employee-handbook", "node_id": "zz"}, "get_structure"),
        ("get_section", {"doc_id": "employee-handbook", "start_line": 9, "end_line": 3}, "9-3"),
        ("get_section", {"doc_id": "employee-handbook", "start_line": 1, "max_tokens": 1}, "line 1 alone"),
        ("search", {"query": ""}, "query"),
        ("search", {"query": "leave", "k": 500}, "less than or equal to 20"),
        ("search", {"query": "leave", "doc_ids": ["nope"]}, "not in the index"),
        ("search", {"query": "leave", "max_tokens": 10**6}, "max_tokens"),
        ("explain", {"query": "leave", "max_tokens": 100}, "max_tokens"),
        ("explain", {"query": "leave", "doc_ids": ["nope"]}, "not in the index"),
        ("nope", {}, "nope"),
    ]
    for name, args, words in refusals:
        res = await session.call_tool(name, args)
        assert res.is_error and words in res.content[0].text, (name, args, res.content)
    assert not (await session.call_tool("list_documents", {})).is_error  # still serving

    templates = (await session.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["proxypointer://doc/{+doc_id}"]
    doc = await session.read_resource("proxypointer://doc/employee-handbook")
    assert doc.contents[0].text == "\n".join(expected["lines"]) and doc.contents[0].mime_type == "text/markdown"
    with pytest.raises(MCPError, match="no such document"):
        await session.read_resource("proxypointer://doc/nope")


async def _over_stdio(params: StdioServerParameters, expected: dict) -> None:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await _exercise(session, expected)


def test_stdio_tools_answer_like_the_library(store):
    from fakes import HashingEmbedder

    params = StdioServerParameters(command=sys.executable, args=[str(DRIVER), str(store), "mcp"], env=server_env())
    asyncio.run(_over_stdio(params, _expected(store, HashingEmbedder())))


async def _over_http(url: str, expected: dict | None, token: str | None = None) -> None:
    import httpx2

    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as s:
            if expected is None:
                await s.initialize()
                res = await s.call_tool("list_documents", {})
                assert not res.is_error and res.structured_content["total"] == 3
            else:
                await _exercise(s, expected)


def test_streamable_http_tools_answer_like_the_library(store):
    from fakes import HashingEmbedder

    with Server([str(store), "mcp-http"]) as srv:
        srv.wait_ready("/mcp")
        asyncio.run(_over_http(srv.url + "/mcp", _expected(store, HashingEmbedder())))
        assert "Traceback" not in srv.stderr()


def test_streamable_http_off_loopback_needs_the_token(store):
    import httpx

    with Server([str(store), "mcp-http", "--host", "0.0.0.0"], env=server_env(PROXYPOINTER_TOKEN=TOKEN)) as srv:
        srv.wait_ready("/healthz")
        asyncio.run(_over_http(srv.url + "/mcp", None, TOKEN))
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        for auth in (None, "Bearer wrong-token-0123456789abcdef"):
            r = httpx.post(srv.url + "/mcp", json=init, headers={"authorization": auth} if auth else {})
            assert r.status_code == 401


def test_cli_serves_mcp_over_stdio_with_the_real_model(tmp_path):
    """``proxypointer serve mcp`` as a desktop client starts it: the real model, data/."""
    from proxypointer.embed.embedder import SentenceTransformerEmbedder

    store = tmp_path / "store"
    embedder = SentenceTransformerEmbedder(ProxyPointerConfig().embedding)
    with Index(store, ProxyPointerConfig(), embedder) as index:
        assert not index.ingest([DATA], show_progress=False).failed
    expected = _expected(store, embedder)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "proxypointer", "serve", "mcp", "--store", str(store)], env=server_env()
    )
    asyncio.run(_over_stdio(params, expected))


def _stdio_exchange(store: Path, lines: list[str], want_ids: set[int], timeout_s: float = 120) -> tuple[dict, list]:
    """Write raw JSON-RPC lines to a stdio server; return its answers by id and those without one."""
    import subprocess
    import threading

    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), str(store), "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env(),
    )
    by_id: dict = {}
    other: list = []
    done = threading.Event()

    def read() -> None:
        for raw in proc.stdout:
            msg = json.loads(raw)
            if msg.get("id") is None:
                other.append(msg)
            else:
                by_id[msg["id"]] = msg
            if want_ids <= set(by_id):
                done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        for line in lines:
            proc.stdin.write(line.encode("utf-8") + b"\n")
            proc.stdin.flush()
        done.wait(timeout_s)
    finally:
        proc.kill()
        proc.wait()
    return by_id, other


def test_stdio_answers_bad_input_as_errors_and_keeps_serving(store):
    """Text that is no text, unknown or mistyped arguments, a line that is no JSON: answered, never silence."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}

    def call(i: int, name: str, args: str) -> str:
        params = f'{{"name": "{name}", "arguments": {args}}}'
        return f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": {params}}}'

    lines = [
        json.dumps(init),
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        call(2, "search", '{"query": "pu\\ud800mp"}'),  # JSON's escape of a lone surrogate
        call(3, "search", '{"query": "leave", "doc_id": ["employee-handbook"]}'),
        call(4, "search", '{"query": "leave", "k": "3"}'),
        call(5, "get_structure", '{"doc_id": "\\udcff"}'),
        "this line is not JSON",
        '{"id": 7, "method": "tools/list"}',  # valid JSON, no JSON-RPC message: Invalid Request, id 7
        '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": [1, 2]}',
        '[{"jsonrpc": "2.0", "id": 10, "method": "tools/list"}]',  # a batch
        '"hello"',
        call(6, "list_documents", "{}"),
    ]
    by_id, other = _stdio_exchange(store, lines, {1, 2, 3, 4, 5, 6, 7, 8})
    assert set(by_id) >= {2, 3, 4, 5, 6, 7, 8}, (by_id, other)
    assert by_id[7]["error"]["code"] == -32600 and "jsonrpc" in by_id[7]["error"]["message"]
    assert by_id[8]["error"]["code"] == -32600 and "params" in by_id[8]["error"]["message"]

    def error_text(i: int) -> str:
        result = by_id[i]["result"]
        assert result["isError"], by_id[i]
        return result["content"][0]["text"]

    for i in (2, 5):  # JSON that is no text: the SDK cannot read the request, answered by its id
        assert by_id[i]["error"]["code"] == -32600 and "lone surrogate" in by_id[i]["error"]["message"]
    assert "doc_id" in error_text(3) and "doc_ids" in error_text(3)
    assert "k" in error_text(4) and "integer" in error_text(4)
    assert by_id[6]["result"]["structuredContent"]["total"] == 3  # still serving
    # no JSON: Parse error; JSON that is no request object (a batch, a string): Invalid Request
    assert [m["error"]["code"] for m in other if "error" in m] == [-32700, -32600, -32600]
    assert "batch" in other[1]["error"]["message"] and "string" in other[2]["error"]["message"]

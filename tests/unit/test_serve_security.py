"""The guard in front of both HTTP servers: token, Host check, body cap (ASGI, no sockets)."""

from __future__ import annotations

import asyncio
import json

import pytest

from proxypointer.config import ServeConfig
from proxypointer.errors import ConfigError
from proxypointer.serve.security import MIN_TOKEN_CHARS, Guard, bearer_token, is_loopback

TOKEN = "s3cret-token-0123456789"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.com", False),
        ("localhost.example.com", False),
        ("", False),
    ],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_loopback_needs_no_token_but_any_other_host_does(monkeypatch):
    cfg = ServeConfig(token_env="PP_TEST_TOKEN")
    monkeypatch.delenv("PP_TEST_TOKEN", raising=False)
    assert bearer_token(cfg, "127.0.0.1") is None
    with pytest.raises(ConfigError) as err:
        bearer_token(cfg, "0.0.0.0")
    assert "PP_TEST_TOKEN" in str(err.value) and "0.0.0.0" in str(err.value)
    with pytest.raises(ConfigError, match="serve.token_env"):
        bearer_token(ServeConfig(token_env=""), "0.0.0.0")
    monkeypatch.setenv("PP_TEST_TOKEN", "short")
    with pytest.raises(ConfigError, match=f"at least {MIN_TOKEN_CHARS}"):
        bearer_token(cfg, "0.0.0.0")
    monkeypatch.setenv("PP_TEST_TOKEN", TOKEN)
    assert bearer_token(cfg, "0.0.0.0") == TOKEN
    assert bearer_token(cfg, "127.0.0.1") == TOKEN  # set: asked for on loopback too


async def _echo(scope, receive, send):
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            break
    out = json.dumps({"path": scope["path"], "received": len(body), "body": body.decode()}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": out})


def _request(guard, path="/query", headers=None, chunks=(b"",), declared=True):
    """Run one request through the guard; returns (status, headers, json body)."""
    hdrs = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    if declared and "host" not in (headers or {}):
        hdrs.append((b"host", b"127.0.0.1:8765"))
    if declared:
        hdrs.append((b"content-length", str(sum(len(c) for c in chunks)).encode()))
    scope = {"type": "http", "method": "POST", "path": path, "headers": hdrs}
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(guard(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), json.loads(body)


def test_token_required_on_every_path_but_healthz():
    guard = Guard(_echo, token=TOKEN, max_body_bytes=1000, check_host=False)
    assert _request(guard)[0] == 401
    status, headers, body = _request(guard, headers={"authorization": "Bearer wrong-token-0123456789"})
    assert status == 401 and headers[b"www-authenticate"] == b"Bearer" and "bearer token" in body["detail"]
    assert _request(guard, headers={"authorization": f"Basic {TOKEN}"})[0] == 401
    assert _request(guard, headers={"authorization": f"Bearer {TOKEN}x"})[0] == 401
    assert _request(guard, headers={"authorization": f"Bearer {TOKEN}"})[0] == 200
    assert _request(guard, headers={"authorization": f"bearer {TOKEN}"})[0] == 200
    assert _request(guard, path="/healthz")[0] == 200
    assert _request(guard, path="/docs")[0] == 401


def test_body_cap_counts_bytes_received_whatever_is_declared():
    guard = Guard(_echo, token=None, max_body_bytes=100, check_host=False)
    status, _, body = _request(guard, chunks=(b"x" * 60, b"y" * 40))
    assert status == 200 and body["received"] == 100 and body["body"] == "x" * 60 + "y" * 40
    assert _request(guard, chunks=(b"x" * 101,))[0] == 413  # declared
    status, _, body = _request(guard, chunks=(b"x" * 60, b"y" * 60), declared=False)  # chunked, undeclared
    assert status == 413 and "100 bytes" in body["detail"]


def test_host_header_must_be_loopback_when_checked():
    guard = Guard(_echo, token=None, max_body_bytes=100, check_host=True)
    for host in ("127.0.0.1:8765", "localhost:8765", "localhost", "[::1]:8765"):
        assert _request(guard, headers={"host": host})[0] == 200, host
    for host in ("evil.example:8765", "example.com", "192.168.1.2:8765"):
        assert _request(guard, headers={"host": host})[0] == 421, host


def test_lifespan_passes_through():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(Guard(app, token=TOKEN, max_body_bytes=1, check_host=True)({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]

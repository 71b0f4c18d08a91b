"""What stands in front of both HTTP servers: the bearer token, the body cap, the Host check.

Plain ASGI (no framework import), so the same guard wraps the FastAPI app of ``serve http``
and the MCP SDK's streamable HTTP app of ``serve mcp --http``.

Rules (docs/integrations.md, "Serving"):

* Bound to a loopback address (``127.0.0.1``, ``::1``, ``localhost``) with no token set, no
  token is asked for, but the ``Host`` header must name a loopback host (a web page cannot
  reach the server through DNS rebinding).
* Any other host needs a token: the environment variable named by ``serve.token_env`` must
  hold at least :data:`MIN_TOKEN_CHARS` characters, or the server refuses to start. When the
  variable is set, every request except ``GET /healthz`` must carry
  ``Authorization: Bearer <token>``, compared in constant time (``hmac.compare_digest``).
* A request body larger than ``serve.max_body_bytes`` is refused with 413, counted on the
  bytes received (a missing or false ``Content-Length`` does not get around it).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..config import ServeConfig
from ..errors import ConfigError

__all__ = ["MIN_TOKEN_CHARS", "Guard", "bearer_token", "is_loopback"]

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Shortest bearer token accepted, in characters (e.g. ``python -c "import secrets;
#: print(secrets.token_urlsafe(32))"`` gives 43).
MIN_TOKEN_CHARS = 16
#: Paths served without a token (liveness checks of a load balancer); they reveal nothing.
OPEN_PATHS = ("/healthz",)
_LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether a bind address or Host name is loopback (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    name = host.strip().lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def bearer_token(config: ServeConfig, host: str) -> str | None:
    """Return the token requests must carry, or None when none is needed.

    Args:
        config: The ``serve`` section (``token_env`` names the environment variable).
        host: The address the server binds.

    Returns:
        The token from the environment, or None on a loopback host with no token set.

    Raises:
        ConfigError: If ``host`` is not loopback and no token is set, or the token is shorter
            than :data:`MIN_TOKEN_CHARS`.
    """
    name = config.token_env
    token = os.environ.get(name, "") if name else ""
    if not token:
        if is_loopback(host):
            return None
        what = f"set the environment variable {name}" if name else "set serve.token_env and that environment variable"
        raise ConfigError(
            f"serve.host: binding to {host} (not loopback) needs a bearer token; {what} "
            f"(at least {MIN_TOKEN_CHARS} characters), or bind 127.0.0.1"
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"{name}: the bearer token has {len(token)} characters; use at least {MIN_TOKEN_CHARS}")
    return token


class Guard:
    """ASGI middleware: Host check, bearer token, body cap (in that order), then the app.

    Args:
        app: The ASGI application behind it.
        token: Bearer token every request but :data:`OPEN_PATHS` must carry; None: no token.
        max_body_bytes: Largest request body passed on; larger ones get 413.
        check_host: Refuse requests whose ``Host`` is not a loopback name (use when bound to
            loopback without a token).

    Bodies are read whole (at most ``max_body_bytes``) before the app sees the request, then
    replayed to it, so the cap holds whatever the client declares.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int, check_host: bool) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.check_host = check_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection: refuse it with 421, 401 or 413, or pass it on."""
        if scope["type"] != "http":  # lifespan events pass through; no websockets are served
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        if self.check_host and not is_loopback(_host_name(headers.get("host", ""))):
            await _reply(send, 421, "Host header must name a loopback host (127.0.0.1, localhost, [::1])")
            return
        if self.token is not None and scope.get("path", "") not in OPEN_PATHS:
            scheme, _, given = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token):
                await _reply(send, 401, "missing or wrong bearer token", {"www-authenticate": "Bearer"})
                return
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _reply(send, 413, f"request body over {self.max_body_bytes} bytes")
            return
        buffered: list[Message] = []
        size = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break  # http.disconnect
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                await _reply(send, 413, f"request body over {self.max_body_bytes} bytes")
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)


def _host_name(host: str) -> str:
    """Return the name part of a Host header: ``[::1]:8765`` -> ``::1``, ``localhost:80`` -> ``localhost``."""
    host = host.strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def _reply(send: Send, status: int, detail: str, extra: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

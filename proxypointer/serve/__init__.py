"""Serve an index to agents and apps: an MCP server and an HTTP API over the same retrieval.

``proxypointer serve mcp`` (MCP SDK, extra ``mcp``) and ``proxypointer serve http`` (FastAPI +
uvicorn, extra ``server``) both call :class:`Service`, which validates and limits every
request and runs it in a pool of worker threads sharing one embedding model. Importing this
package loads neither ``mcp`` nor ``fastapi``; :func:`run_mcp` and :func:`run_http` do, and
raise ``MissingDependencyError`` naming the extra when it is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import MissingDependencyError

if TYPE_CHECKING:
    from .service import Service

__all__ = ["run_http", "run_mcp"]

_SERVER_PACKAGES = ("fastapi", "uvicorn", "starlette", "pydantic")
_MCP_PACKAGES = ("mcp", "mcp_types", "uvicorn", "starlette", "pydantic", "anyio")


def run_http(
    service: Service, host: str | None = None, port: int | None = None, ready: Callable[[str], None] | None = None
) -> None:
    """Serve the REST API (see :mod:`proxypointer.serve.http_api`) until interrupted.

    Raises:
        MissingDependencyError: If fastapi or uvicorn is not installed.
        ConfigError: If ``host`` is not loopback and no bearer token is set.
    """
    try:
        from .http_api import run_http as run
    except ImportError as err:
        if (err.name or "").split(".")[0] not in _SERVER_PACKAGES:
            raise
        raise MissingDependencyError(
            f"serve http needs FastAPI and uvicorn ({err.name} is missing); pip install 'proxypointer[server]'"
        ) from err
    run(service, host, port, ready)


def run_mcp(
    service: Service,
    *,
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve MCP (see :mod:`proxypointer.serve.mcp_server`) over stdio, or streamable HTTP.

    Raises:
        MissingDependencyError: If the MCP SDK (or uvicorn, with ``http``) is not installed.
        ConfigError: If ``http`` binds a non-loopback host and no bearer token is set.
    """
    try:
        from .mcp_server import run_mcp as run
    except ImportError as err:
        if (err.name or "").split(".")[0] not in _MCP_PACKAGES:
            raise
        raise MissingDependencyError(
            f"serve mcp needs the MCP SDK ({err.name} is missing); pip install 'proxypointer[mcp]'"
        ) from err
    run(service, http=http, host=host, port=port, ready=ready)

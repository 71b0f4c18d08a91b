r"""MCP over stdio that answers every line it reads.

The SDK's stdio transport parses each line with pydantic and hands a line it cannot parse to
the server as an exception, which the server only logs at debug level: the client gets no
answer. A client that sent a request whose JSON holds a lone surrogate (``"pu\ud800mp"``:
valid JSON, not text, refused by pydantic's parser) then waits forever, and a line that is
no JSON gets no JSON-RPC parse error. Here such lines are answered as JSON-RPC 2.0 says
(section 5.1): ``-32700`` Parse error with a null id for a line that is no JSON, and
``-32600`` Invalid Request with the request's own id for JSON that is not a message the
server can read (the message says why). Every other line goes to the server unchanged.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["answer_unreadable", "run_stdio"]

logger = logging.getLogger(__name__)


def _is_text(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unreadable_value(exc: Exception) -> tuple[bool, Any]:
    """``(is_json, value)`` of the line a transport could not read as a JSON-RPC message.

    The SDK validates each line with pydantic: a line that is no JSON gives one ``json_invalid``
    error whose input is the line; JSON that is no message gives errors whose inputs are the
    parsed value (a ``model_type`` error at the top) or the message object (a ``missing`` field
    of one of the message kinds).
    """
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors:
        return False, None
    if errors[0].get("type") == "json_invalid":
        raw = errors[0].get("input")
        try:  # Python's parser takes lone surrogates, which pydantic's refuses
            return True, json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            return False, None
    top = next((e.get("input") for e in errors if len(e.get("loc", ())) <= 1), None)
    if top is not None:
        return True, top
    missing = (e.get("input") for e in errors if e.get("type") == "missing" and isinstance(e.get("input"), dict))
    return True, next(missing, None)


def answer_unreadable(exc: Exception) -> JSONRPCError:
    """Return the JSON-RPC error that answers a line the transport could not parse.

    Args:
        exc: What the SDK's transport produced for the line (a pydantic ``ValidationError``
            whose inputs hold the line or its parsed value, for the stdio transport).

    Returns:
        ``-32700`` Parse error with id null when the line is no JSON; ``-32600`` Invalid
        Request otherwise (JSON-RPC 2.0, section 5.1), with the request's id when it has a
        readable one (a string or a number) and null when not, saying what is wrong: a
        batch, a value that is no object, a lone surrogate, or the message's fields.
    """
    is_json, message = _unreadable_value(exc)
    if not is_json:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error: not JSON"))
    if not isinstance(message, dict):
        kind = "null" if message is None else "boolean" if isinstance(message, bool) else (
            "string" if isinstance(message, str) else "number")
        what = ("a batch (a JSON array); send one request per line" if isinstance(message, list)
                else f"a JSON {kind}, not a request object")
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST,
                                                                     message=f"Invalid Request: {what}"))
    rid = message.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int | str) or not _is_text(rid):
        rid = None
    why = (
        "the request holds a lone surrogate (a \\ud800-\\udfff escape not in a pair), which is not text; "
        "send valid UTF-8"
        if not _is_text(message)
        else f"not a JSON-RPC 2.0 message: {_first_problem(exc)}"
    )
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: {why}"))


def _first_problem(exc: Exception) -> str:
    """Name the first field a request fails on, as ``params: Input should be a valid dictionary``."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    for e in errors:
        loc = [str(x) for x in e.get("loc", ())[1:]]
        if loc and e.get("loc", ("",))[0] == "JSONRPCRequest":
            return f"{'.'.join(loc)}: {e.get('msg', '')}"
    return str(exc).splitlines()[0]


async def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdin/stdout until stdin closes, answering unreadable lines.

    Args:
        server: The MCP server (its low-level server runs the session, as the SDK's own
            ``run_stdio_async`` does).
    """
    lowlevel = server._lowlevel_server  # noqa: SLF001 - what MCPServer.run_stdio_async runs, too
    async with stdio_server() as (read_stream, write_stream):
        relay_send, relay_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            async with relay_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        answer = answer_unreadable(item)
                        logger.info("answered an unreadable line: %s", answer.error.message)
                        await write_stream.send(SessionMessage(answer))
                    else:
                        await relay_send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            await lowlevel.run(relay_receive, write_stream, lowlevel.create_initialization_options())

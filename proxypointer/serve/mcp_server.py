"""``proxypointer serve mcp``: the index as MCP tools and resources, with the official MCP SDK.

Built on ``mcp.server.mcpserver.MCPServer`` (MCP Python SDK 2.x). Five read-only tools, each
a thin call of :class:`~proxypointer.serve.service.Service` in its worker threads:

* ``search``: the best whole sections for a query, with citations, within a token budget;
* ``explain``: why each section of a search ranked (what reciprocal rank fusion saw for it);
* ``list_documents``: what is indexed;
* ``get_structure``: one document's skeleton tree (PageIndex-style navigation);
* ``get_section``: the exact stored text of a section or a line range, with its citation.

and one resource template, ``proxypointer://doc/{+doc_id}`` (the whole stored text of a
document; ``+`` lets doc ids contain ``/``). Transports: stdio (for desktop clients) and
streamable HTTP at ``/mcp`` behind the same guard as ``serve http``. Refused requests come
back as tool errors (``is_error``) whose text says what to change; the server keeps running.
Arguments are checked as ``serve http`` checks them (strict JSON types, unknown names refused
with the valid ones: :mod:`proxypointer.serve.arguments`), and over stdio a line the SDK
cannot read is answered with a JSON-RPC error (:mod:`proxypointer.serve.mcp_stdio`).
"""

# No ``from __future__ import annotations``: the SDK reads the tool signatures at runtime,
# and their limits come from the config (closures).

import logging
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import Field

from .._version import __version__
from ..errors import ProxyPointerError
from .arguments import strict_model
from .errors import NotFound
from .listening import check_port
from .security import Guard, bearer_token, is_loopback
from .service import MAX_LIST, Service
from .timeouts import uvicorn_options

__all__ = ["create_mcp_server", "run_mcp"]

logger = logging.getLogger(__name__)

INSTRUCTIONS = """\
proxypointer indexes long structured documents (reports, filings, papers, manuals) by their
heading tree. Use `search` to find the sections that answer a question: each comes whole, with
its breadcrumb (where it sits in the document) and a citation `file.md#L<start>-L<end>` to quote.
To navigate instead, call `list_documents`, then `get_structure` for a document's outline, then
`get_section` for the exact text of a node. Texts are budgeted in tokens (`max_tokens`); a text
cut short has `truncated: true` and `next_start_line`: pass it as `start_line` to read on.
"""

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def create_mcp_server(service: Service) -> MCPServer:
    """Build the MCP server: the five tools and the document resource over one service.

    Args:
        service: The service the tools call (limits from its ``serve`` config).

    Returns:
        An ``MCPServer``; run it with :func:`run_mcp`, or ``server.run()`` for stdio.
    """
    # read-only tools, arguments strict; listed in this order
    tools = [_strict_tool(fn, _READ_ONLY) for fn in (*_search_tools(service), *_navigation_tools(service))]
    server = MCPServer("proxypointer", instructions=INSTRUCTIONS, version=__version__, tools=tools)
    _add_document_resource(server, service)
    return server


async def _call(service: Service, fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """Run a service method in its worker threads; a refusal becomes a tool error.

    Raises:
        ToolError: With the message of any ``ProxyPointerError`` (refusals and store errors:
            a message the model can act on).
    """
    try:
        return await service.call(fn, *args)
    except ProxyPointerError as err:  # refusals and store errors: a message the model can act on
        raise ToolError(str(err)) from err


def _search_tools(service: Service) -> tuple[Callable[..., Any], ...]:
    """Make the ``search`` and ``explain`` tools over ``service`` (limits and the default ``k`` from its config)."""
    lim = service.limits
    default_k = min(service.config.retrieval.k, lim.max_k)
    # the arguments both tools take (the SDK reads them from the signatures)
    Query = Annotated[  # noqa: N806
        str, Field(description="Question or keywords.", min_length=1, max_length=lim.max_query_chars)
    ]
    K = Annotated[int, Field(description="Number of sections wanted.", ge=1, le=lim.max_k)]  # noqa: N806
    DocIds = Annotated[  # noqa: N806
        list[str] | None, Field(description="Only search these documents (ids from list_documents).")
    ]
    Prefix = Annotated[  # noqa: N806
        str | None, Field(description="Only search documents whose doc_id starts with this, e.g. 'policies/'.")
    ]

    async def search(
        query: Query,
        k: K = default_k,
        doc_ids: DocIds = None,
        prefix: Prefix = None,
        max_tokens: Annotated[
            int | None,
            Field(
                description=f"Budget for all section texts together, in tokens (default {lim.default_max_tokens}).",
                ge=1,
                le=lim.max_tokens,
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Find the sections of the indexed documents that best match a question.

        Returns `sections`, best first. Each is a whole section of a document: `citation`
        (`file.md#L<start>-L<end>`, quote it), `breadcrumb` (document title down to the
        section), `doc_id`, `node_id`, `start_line`, `end_line`, `score` (cosine similarity,
        higher is better) and `text` (the exact source lines). Texts share the `max_tokens`
        budget in rank order; a text cut short has `truncated: true` and `next_start_line`:
        call get_section(doc_id, node_id, start_line=next_start_line) to read the rest.
        """
        return await _call(service, service.search, query, k, doc_ids, prefix, max_tokens)

    async def explain(
        query: Query,
        k: K = default_k,
        doc_ids: DocIds = None,
        prefix: Prefix = None,
    ) -> dict[str, Any]:
        """Say why each section of a search ranked; it searches again and returns no section text.

        `sections` in the order `search` gives them, each with `doc_id`, `node_id`, `rank`,
        `fused_rank` and `signals`: per ranking that reciprocal rank fusion saw (`dense`,
        `lexical`, `routed`, `titles`, `focus`), its `weight`, the section's first chunk's
        1-based `rank` there (0: absent), `score` and `contribution` weight / (rrf_k + rank);
        `chunk_ranks` and `section_score` are the fused ranks of the section's chunks that its
        score counts and that score; `labelled` / `implied` say whether the query named or
        implied the section, `demoted` why it went after the others (`breadcrumb-only`,
        `exhibit`, or ""). `searched`
        is the text searched, `named` / `boost` the documents title routing searched alone or
        boosted.
        """
        return await _call(service, service.explain, query, k, doc_ids, prefix)

    return search, explain


def _navigation_tools(service: Service) -> tuple[Callable[..., Any], ...]:
    """Make the ``list_documents``, ``get_structure`` and ``get_section`` tools over ``service``, in that order."""
    lim = service.limits

    async def list_documents(
        prefix: Annotated[str | None, Field(description="Only documents whose doc_id starts with this.")] = None,
        offset: Annotated[int, Field(description="Documents to skip (paging).", ge=0)] = 0,
        limit: Annotated[int, Field(description="Most documents returned.", ge=1, le=MAX_LIST)] = 100,
    ) -> dict[str, Any]:
        """List the indexed documents: doc_id, title, source file, line count, sections, indexed at.

        `next_offset` is set when more documents follow (pass it as `offset`).
        """
        return await _call(service, service.list_documents, prefix, offset, limit)

    async def get_structure(
        doc_id: Annotated[str, Field(description="A doc_id from list_documents or search.")],
        depth: Annotated[
            int | None, Field(description="Only nodes this deep or less (1: top-level sections).", ge=1)
        ] = None,
    ) -> dict[str, Any]:
        """Outline of one document: its sections as a tree, to navigate without searching.

        `nodes` in document order, each with `node_id`, `title`, `level`, `depth`,
        `start_line`, `end_line` (the whole subtree, 1-based inclusive), `parent_id` and
        `citation`. Read a node's text with get_section(doc_id, node_id).
        """
        return await _call(service, service.get_structure, doc_id, depth)

    async def get_section(
        doc_id: Annotated[str, Field(description="A doc_id from list_documents or search.")],
        node_id: Annotated[
            str | None, Field(description="A node_id from get_structure or search; omit for the whole document.")
        ] = None,
        start_line: Annotated[
            int | None, Field(description="First line (1-based), e.g. a previous next_start_line.", ge=1)
        ] = None,
        end_line: Annotated[int | None, Field(description="Last line (1-based, inclusive).", ge=1)] = None,
        max_tokens: Annotated[
            int | None,
            Field(description=f"Budget in tokens (default {lim.default_max_tokens}).", ge=1, le=lim.max_tokens),
        ] = None,
    ) -> dict[str, Any]:
        """Read the exact text of a section (node_id) or of a line range, with its citation.

        `text` is exactly the source lines `start_line..end_line` and `citation` names them.
        Whole lines are given while they fit `max_tokens`; when the range is longer,
        `truncated` is true and `next_start_line` is where to continue.
        """
        return await _call(service, service.get_section, doc_id, node_id, start_line, end_line, max_tokens)

    return list_documents, get_structure, get_section


def _add_document_resource(server: MCPServer, service: Service) -> None:
    """Register the ``proxypointer://doc/{+doc_id}`` resource template: a document's whole stored text."""

    @server.resource(
        "proxypointer://doc/{+doc_id}",
        name="document",
        description="The whole stored markdown of an indexed document (its live version).",
        mime_type="text/markdown",
    )
    async def document(doc_id: str) -> str:
        try:
            return await service.call(service.document_text, doc_id)
        except NotFound as err:
            raise ResourceNotFoundError(str(err)) from err
        except ProxyPointerError as err:
            raise ResourceError(str(err)) from err


def _strict_tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    """Make an MCP tool whose arguments validate as HTTP's do (:mod:`proxypointer.serve.arguments`).

    The SDK builds each tool's argument model from the function's signature, coercing types and
    ignoring unknown names; the model is swapped for its strict subclass, and the JSON schema
    the tool publishes is rebuilt from it (``additionalProperties: false``).
    """
    tool = Tool.from_function(fn, annotations=annotations)
    strict = strict_model(tool.fn_metadata.arg_model)
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def run_mcp(
    service: Service,
    *,
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve MCP over stdio (default) or streamable HTTP until the client or a signal ends it.

    Args:
        service: The service to expose (warmed up here, before the first message is read).
        http: Streamable HTTP at ``http://host:port/mcp`` instead of stdio.
        host: Address to bind with ``http`` (default ``serve.host``, 127.0.0.1).
        port: TCP port with ``http`` (default ``serve.mcp_port``, 8766).
        ready: Called with a one-line description once the model is loaded.

    Raises:
        ConfigError: If ``http`` binds a non-loopback host and no bearer token is set, or the
            address cannot be bound (a port another server holds).
    """
    server = create_mcp_server(service)
    if not http:
        started = service.warm_up()
        if ready is not None:
            ready(f"serving MCP over stdio ({started['preload']})")
        import anyio

        from .mcp_stdio import run_stdio

        anyio.run(run_stdio, server)  # stdout carries the protocol: nothing else may print there
        return
    import uvicorn

    host = host or service.limits.host
    port = port or service.limits.mcp_port
    token = bearer_token(service.limits, host)
    app = server.streamable_http_app(host=host, max_request_body_size=service.limits.max_body_bytes)
    guarded = Guard(
        app, token=token, max_body_bytes=service.limits.max_body_bytes, check_host=token is None and is_loopback(host)
    )
    check_port(host, port)  # a port another server holds: said now, not after "serving ..."
    started = service.warm_up()
    if ready is not None:
        shown = f"[{host}]" if ":" in host else host
        ready(f"serving MCP at http://{shown}:{port}/mcp ({'bearer token required; ' if token else ''}"
              f"{started['preload']})")
    uvicorn.run(guarded, host=host, port=port, **uvicorn_options(service.limits))

"""``proxypointer serve http``: a small REST API over :class:`~proxypointer.serve.service.Service`.

FastAPI routes (OpenAPI at ``/docs`` and ``/openapi.json``), served by uvicorn, behind the
:class:`~proxypointer.serve.security.Guard`:

==========================================  =====================================================
``GET /``                                   the inspector page (:mod:`.inspector`), ``/inspector/*`` its files
``POST /query``                             search: ``{"query", "k", "doc_ids", "prefix", "max_tokens"}``
``POST /explain``                           why each section ranked: ``{"query", "k", "doc_ids", "prefix"}``
``GET /documents``                          ``?prefix=&offset=&limit=``
``GET /documents/{doc_id}/tree``            skeleton tree, ``?depth=``
``GET /documents/{doc_id}/sections/{node}`` exact section text, ``?start_line=&end_line=&max_tokens=``
``GET /documents/{doc_id}/lines``           exact lines of the document, same query parameters
``GET /documents/{doc_id}/file``            the PDF it was indexed from (open at ``#page=N``)
``GET /healthz``                            liveness (no token needed; ``HEAD`` too, as on ``/``)
``POST /ingest``                            ``{"paths": [...], "prune": false}``: ``--allow-write`` only
``DELETE /documents/{doc_id}``              ``--allow-write`` only
==========================================  =====================================================

Doc ids may contain ``/`` (``policies/leave``): they are matched as the rest of the path.
Errors come back as ``{"detail": "..."}`` with 400, 401, 403, 404, 409, 413, 422 or 503.
"""

# No ``from __future__ import annotations``: FastAPI reads the route annotations at runtime.

import logging
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import Field

from .._version import __version__
from ..errors import ProxyPointerError
from .arguments import StrictArguments, validation_detail
from .errors import NotFound, status_of
from .inspector import CONTENT_SECURITY_POLICY, asset
from .listening import check_port
from .security import Guard, bearer_token, is_loopback
from .service import Service
from .timeouts import uvicorn_options

__all__ = ["create_app", "run_http"]

logger = logging.getLogger(__name__)


class QueryBody(StrictArguments):
    """Body of ``POST /query`` (JSON types as sent: ``"k": "3"`` is refused; unknown names too)."""

    query: str = Field(description="Question or keywords.")
    k: int | None = Field(None, description="Sections wanted (default retrieval.k, at most serve.max_k).")
    doc_ids: list[str] | None = Field(None, description="Only search these documents.")
    prefix: str | None = Field(None, description="Only search documents whose doc_id starts with this.")
    max_tokens: int | None = Field(
        None, description="Budget for all texts, in word pieces of the embedding model's tokenizer."
    )


class ExplainBody(StrictArguments):
    """Body of ``POST /explain``: a search's arguments, without the budget (strict as :class:`QueryBody`)."""

    query: str = Field(description="Question or keywords.")
    k: int | None = Field(None, description="Sections wanted (default retrieval.k, at most serve.max_k).")
    doc_ids: list[str] | None = Field(None, description="Only search these documents.")
    prefix: str | None = Field(None, description="Only search documents whose doc_id starts with this.")


class IngestBody(StrictArguments):
    """Body of ``POST /ingest`` (strict as :class:`QueryBody`)."""

    paths: list[str] = Field(description="Files or folders under serve.ingest_roots.")
    prune: bool = Field(False, description="Also delete documents whose files are gone from the given folders.")


#: Headers of the inspector page: no framing by others, no sniffing, only its own files (:mod:`.inspector`).
_PAGE_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


def create_app(service: Service, *, host: str) -> Any:
    """Build the ASGI application: FastAPI routes behind the token, Host and body-size guard.

    Args:
        service: The service the routes call (its ``allow_write`` decides the write routes).
        host: The address the server binds (decides whether a token is required).

    Returns:
        An ASGI application for uvicorn.

    Raises:
        ConfigError: If ``host`` is not loopback and no bearer token is set.
    """
    token = bearer_token(service.limits, host)
    app = FastAPI(
        title="proxypointer",
        version=__version__,
        description="Retrieval over long structured documents: whole sections with citations.",
    )

    @app.exception_handler(ProxyPointerError)
    async def _error(_request: Request, err: ProxyPointerError) -> JSONResponse:
        status = status_of(err)
        if status >= 500:
            logger.error("%s", err)
        return JSONResponse({"detail": str(err)}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer echoes the values sent, which may not be JSON (1e400 is infinity)
        detail = validation_detail(err.errors())
        sent = request.headers.get("content-type", "")
        if "json" not in sent.lower() and any(d["loc"] == ["body"] for d in detail):
            # a body that is not read as JSON (curl -d without -H) fails as a whole: say why
            for d in detail:
                if d["loc"] == ["body"]:
                    d["msg"] += (f"; the body was sent as {sent or 'no content type'!r}: send JSON with the "
                                 "header content-type: application/json")
        return JSONResponse({"detail": detail}, status_code=422)

    @app.post("/query", summary="Find the best whole sections for a query")
    async def query(body: QueryBody) -> dict[str, Any]:
        return await service.call(service.search, body.query, body.k, body.doc_ids, body.prefix, body.max_tokens)

    @app.post("/explain", summary="Why each section of a search ranked: what fusion saw for it")
    async def explain(body: ExplainBody) -> dict[str, Any]:
        return await service.call(service.explain, body.query, body.k, body.doc_ids, body.prefix)

    # HEAD as well as GET on the page and the liveness route: monitors and `curl -I` probe with HEAD
    @app.api_route("/", methods=["GET", "HEAD"], summary="The inspector page", include_in_schema=False)
    async def inspector_page() -> Response:
        content, media = asset("inspector.html")
        return Response(content, media_type=media, headers=_PAGE_HEADERS)

    @app.get("/inspector/{name}", summary="A file of the inspector page", include_in_schema=False)
    async def inspector_file(name: str) -> Response:
        if name == "inspector.html":
            raise NotFound("the inspector page is served at /")
        try:
            content, media = asset(name)
        except KeyError:
            raise NotFound(f"/inspector/{name}: no such file") from None
        return Response(content, media_type=media, headers={"cache-control": "no-cache"})

    @app.get("/documents", summary="List the indexed documents")
    async def documents(
        prefix: Annotated[str | None, Query(description="Only doc_ids starting with this.")] = None,
        offset: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1)] = 100,
    ) -> dict[str, Any]:
        return await service.call(service.list_documents, prefix, offset, limit)

    @app.get("/documents/{doc_id:path}/tree", summary="Skeleton tree of one document")
    async def tree(
        doc_id: str, depth: Annotated[int | None, Query(ge=1, description="Only nodes this deep or less.")] = None
    ) -> dict[str, Any]:
        return await service.call(service.get_structure, doc_id, depth)

    @app.get("/documents/{doc_id:path}/sections/{node_id}", summary="Exact text of one section")
    async def section(
        doc_id: str,
        node_id: str,
        start_line: Annotated[int | None, Query(ge=1)] = None,
        end_line: Annotated[int | None, Query(ge=1)] = None,
        max_tokens: Annotated[int | None, Query(ge=1)] = None,
    ) -> dict[str, Any]:
        return await service.call(service.get_section, doc_id, node_id, start_line, end_line, max_tokens)

    @app.get("/documents/{doc_id:path}/lines", summary="Exact lines of one document")
    async def lines(
        doc_id: str,
        start_line: Annotated[int | None, Query(ge=1)] = None,
        end_line: Annotated[int | None, Query(ge=1)] = None,
        max_tokens: Annotated[int | None, Query(ge=1)] = None,
    ) -> dict[str, Any]:
        return await service.call(service.get_section, doc_id, None, start_line, end_line, max_tokens)

    @app.get("/documents/{doc_id:path}/file", summary="The PDF a document was indexed from (open at #page=N)")
    async def document_file(doc_id: str) -> FileResponse:
        path = await service.call(service.document_file, doc_id)
        return FileResponse(path, media_type="application/pdf", content_disposition_type="inline",
                            filename=path.name, headers={"x-content-type-options": "nosniff"})

    @app.api_route("/healthz", methods=["GET", "HEAD"], summary="Liveness")
    async def healthz() -> dict[str, Any]:
        return service.health()

    @app.post("/ingest", summary="Sync the index with files under serve.ingest_roots (--allow-write)")
    async def ingest(body: IngestBody) -> dict[str, Any]:
        return await service.call(service.ingest, body.paths, body.prune)

    @app.delete("/documents/{doc_id:path}", summary="Remove a document (--allow-write)")
    async def delete(doc_id: str) -> dict[str, Any]:
        return await service.call(service.delete, doc_id)

    return Guard(
        app,
        token=token,
        max_body_bytes=service.limits.max_body_bytes,
        check_host=token is None and is_loopback(host),
    )


def run_http(
    service: Service,
    host: str | None = None,
    port: int | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the REST API with uvicorn until interrupted (warms the service up first).

    Args:
        service: The service to expose.
        host: Address to bind (default ``serve.host``, 127.0.0.1).
        port: TCP port (default ``serve.port``, 8765).
        ready: Called with a one-line description (URL, read-only or not, token or not) once
            the model is loaded, just before the server starts listening.

    Raises:
        ConfigError: If ``host`` is not loopback and no bearer token is set, or the address
            cannot be bound (a port another server holds).
    """
    import uvicorn

    host = host or service.limits.host
    port = port or service.limits.port
    app = create_app(service, host=host)  # refuses a bad host before the model loads
    check_port(host, port)  # a port another server holds: said now, not after "serving ..."
    started = service.warm_up()
    if ready is not None:
        shown = f"[{host}]" if ":" in host else host
        mode = "read-write" if service.allow_write else "read-only"
        ready(f"serving http://{shown}:{port} ({mode}{', bearer token required' if app.token else ''}; "
              f"inspector at /, API docs at /docs; "
              f"{started['preload']})")
    uvicorn.run(app, host=host, port=port, **uvicorn_options(service.limits))

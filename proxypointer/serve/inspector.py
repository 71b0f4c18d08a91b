"""The inspector page of ``serve http``: three static files shipped in the package, nothing else.

``GET /`` is ``static/inspector.html``; it loads ``/inspector/inspector.css`` and
``/inspector/inspector.js`` (vanilla, no framework, no CDN) and talks to the JSON routes
(``POST /query``, ``POST /explain``, ``GET /documents/{doc_id}/tree``, ``.../sections/{node}``,
``.../file``). Only the names in :data:`ASSETS` are served: a request never names a path.
The page is sent with a Content-Security-Policy that allows only the server's own scripts,
styles and fetches (document text is put in the page as text, never as HTML).
"""

from __future__ import annotations

from importlib import resources

from ..errors import ProxyPointerError

__all__ = ["ASSETS", "CONTENT_SECURITY_POLICY", "asset"]

#: Served name -> media type; the files lie in ``proxypointer/serve/static/``.
ASSETS = {
    "inspector.html": "text/html; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
}

#: Sent with the page: its own scripts, styles, fetches and frames (the PDF) only.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def asset(name: str) -> tuple[bytes, str]:
    """Read one of the inspector's files from the installed package.

    Args:
        name: A key of :data:`ASSETS`.

    Returns:
        ``(content, media type)``.

    Raises:
        KeyError: If ``name`` is not one of :data:`ASSETS` (the route answers 404).
        ProxyPointerError: If the file is missing from the installation (a wheel built
            without its package data).
    """
    media = ASSETS[name]
    try:
        return resources.files(__package__).joinpath("static", name).read_bytes(), media
    except OSError as err:
        raise ProxyPointerError(
            f"proxypointer/serve/static/{name}: missing from the installed package ({err}); reinstall proxypointer"
        ) from err

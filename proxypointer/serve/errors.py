"""What the service refuses, and the HTTP status each refusal maps to; argument checks."""

from __future__ import annotations

from typing import Any

from ..docids import check_text
from ..errors import ConfigError, LockError, ProxyPointerError, StaleSourceError

__all__ = [
    "MAX_ID_CHARS",
    "BadRequest",
    "Forbidden",
    "NotFound",
    "ServeError",
    "WriteBusy",
    "int_arg",
    "status_of",
    "text_arg",
]

#: Longest doc_id, node_id or prefix accepted, in characters.
MAX_ID_CHARS = 1024


class ServeError(ProxyPointerError):
    """A request the service refuses; ``status`` is the HTTP status it maps to."""

    status = 500


class BadRequest(ServeError, ValueError):
    """A request argument is missing, of the wrong type or out of its limits (HTTP 400)."""

    status = 400


class Forbidden(ServeError):
    """The server does not allow this request (read-only, or a path outside the roots; HTTP 403)."""

    status = 403


class NotFound(ServeError, LookupError):
    """No live document or node with this id (HTTP 404)."""

    status = 404


class WriteBusy(ServeError):
    """Another write is running in this server (HTTP 409)."""

    status = 409


def status_of(err: ProxyPointerError) -> int:
    """HTTP status for an error.

    Returns:
        The ``ServeError``'s own status, 409 for the store's write lock (``LockError``), 503 for
        a document that changed under the request (``StaleSourceError``), 500 otherwise.
    """
    if isinstance(err, ServeError):
        return err.status
    if isinstance(err, LockError):
        return 409
    if isinstance(err, StaleSourceError):
        return 503
    return 500


def text_arg(name: str, value: Any, max_chars: int) -> str:
    r"""Return ``value`` if it is a string of at most ``max_chars`` characters, without NUL, that is text.

    Raises:
        BadRequest: Naming the argument and the limit; also for a lone surrogate (JSON's
            ``"\ud800"`` escape: no UTF-8 text holds one, and no answer could carry it).
    """
    if not isinstance(value, str):
        raise BadRequest(f"{name}: expected a string, got {type(value).__name__}")
    if len(value) > max_chars:
        raise BadRequest(f"{name}: at most {max_chars} characters, got {len(value)}")
    if "\x00" in value:
        raise BadRequest(f"{name}: must not contain NUL characters")
    try:
        return check_text(value, name)
    except ConfigError as err:  # the service's answer to a client's bad input is a 400
        raise BadRequest(str(err)) from err


def int_arg(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    """Return ``value`` if it is an integer (not a bool) in ``lo..hi`` (no upper bound: None).

    Raises:
        BadRequest: Naming the argument and the range.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"{name}: expected an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        raise BadRequest(
            f"{name}: expected {lo}..{hi}, got {value}" if hi is not None else f"{name}: expected >= {lo}, got {value}"
        )
    return value

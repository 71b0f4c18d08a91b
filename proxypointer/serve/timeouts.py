"""A deadline for each HTTP request to arrive whole: clients that send part of one are cut off.

uvicorn (0.55) closes a kept-alive connection that stays idle between requests
(``timeout_keep_alive``), but a connection that sends nothing, or part of a request line, of its
headers or of its body, is held open for as long as the client likes: 300 such sockets held a
server for minutes (issue 32). :func:`request_deadline_protocol` builds uvicorn's own h11
protocol with one more timer: armed when a connection opens and when a new request starts to
arrive, cleared when the request has arrived whole (h11's client state ``DONE``), it closes the
connection when ``serve.request_timeout_s`` passes first. The time the application takes to
answer is not counted: only the client's sending.

Both HTTP servers use it (:func:`uvicorn_options`): ``serve http`` and ``serve mcp --http``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..config import ServeConfig

__all__ = ["request_deadline_protocol", "uvicorn_options"]

logger = logging.getLogger(__name__)


def request_deadline_protocol(timeout_s: float) -> type:
    """Uvicorn's h11 protocol class, with a deadline for a request to arrive whole.

    Args:
        timeout_s: Seconds a client has, from opening the connection or from the first bytes
            of its next request, to send the whole request (line, headers and body).

    Returns:
        A subclass of ``uvicorn.protocols.http.h11_impl.H11Protocol`` for ``uvicorn.run(http=...)``.

    Raises:
        ImportError: If uvicorn or h11 is not installed (the ``server`` extra; ``proxypointer
            serve`` checks for it first and names the extra).
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    arrived = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)

    class DeadlineH11Protocol(H11Protocol):
        """H11Protocol that closes a connection whose request does not arrive in ``timeout_s``."""

        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state not in arrived:
                self._arm()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state in arrived:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(timeout_s, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self.conn.their_state in arrived:
                return
            client = f"{self.client[0]}:{self.client[1]:d}" if self.client else "a client"
            logger.warning("%s: no whole request within %g s (serve.request_timeout_s); closing the connection",
                           client, timeout_s)
            self.transport.close()

    return DeadlineH11Protocol


def uvicorn_options(limits: ServeConfig) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` that both HTTP servers share: protocol and logging.

    Args:
        limits: The ``serve`` section (``request_timeout_s``).

    Returns:
        ``http`` (:func:`request_deadline_protocol`), ``timeout_keep_alive`` (the same
        deadline for an idle kept-alive connection, at most uvicorn's default of 5 s),
        ``log_level`` and ``access_log``.
    """
    return {
        "http": request_deadline_protocol(limits.request_timeout_s),
        "timeout_keep_alive": max(1, min(5, int(limits.request_timeout_s))),
        "log_level": "warning",
        "access_log": False,
    }

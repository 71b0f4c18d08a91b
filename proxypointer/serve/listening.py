"""Whether a server can listen where it was asked to, before it says it serves there.

uvicorn binds its socket only once it runs, after ``serve`` has loaded the model and printed
"serving http://...": a port another server holds showed that line, then ``address already
in use``. :func:`check_port` binds and releases the address first, so the user reads one clear
error instead.
"""

from __future__ import annotations

import socket

from ..errors import ConfigError

__all__ = ["check_port"]


def check_port(host: str, port: int) -> None:
    """Bind ``host:port`` once (as uvicorn will, with ``SO_REUSEADDR``) and release it.

    Args:
        host: Address to bind (an IPv4 or IPv6 address, or a name such as ``localhost``).
        port: TCP port, 1..65535.

    Raises:
        ConfigError: ``<host>:<port>: cannot listen there (<reason>); ...`` when the address
            is taken or cannot be bound.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise ConfigError(f"{host}:{port}: cannot listen there ({err.strerror}); check --host") from err
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as err:
            raise ConfigError(
                f"{host}:{port}: cannot listen there ({err.strerror}); another server may hold the port: "
                "stop it or give --port"
            ) from err

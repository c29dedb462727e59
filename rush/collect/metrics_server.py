"""Serving a Prometheus registry on HOST:PORT, every bind failure a ConfigError naming the key.

Shared by the collector service and the daemon (both export metrics), so it lives below both.
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server

from rush.config_file import split_host_port
from rush.errors import ConfigError


def _bind_fix(exc: BaseException, host: str, port: int, key: str) -> str:
    """What to change in ``key`` for this bind failure."""
    if isinstance(exc, socket.gaierror | UnicodeError):
        return f"{key}: {host!r} does not resolve here; use an IP address such as 127.0.0.1"
    code = getattr(exc, "errno", None)
    if code == errno.EADDRINUSE:
        return f"another process listens on port {port}: set a free port in {key} (0 picks one)"
    if code == errno.EADDRNOTAVAIL or code == errno.EAFNOSUPPORT:
        return (
            f"{host} is not an address of this host (an IPv6 address without IPv6?): "
            f"set {key} to an address it has, e.g. 127.0.0.1:{port}"
        )
    if code == errno.EACCES:
        return f"ports below 1024 need privileges: set {key} to a port >= 1024"
    return f"set {key} to a HOST:PORT this host can listen on, e.g. 127.0.0.1:{port}"


def serve_metrics(address: str, registry: CollectorRegistry, key: str) -> tuple[Any, int]:
    """Serve ``registry`` on ``HOST:PORT`` (``[IPv6]:PORT``); returns (server or None, bound port).

    Every bind failure (port in use, an address the host lacks, a name that does not resolve)
    is a ConfigError naming ``key``, so the CLI exits 2 and systemd does not restart-loop.
    """
    try:
        host, port = split_host_port(address)
    except ValueError as exc:
        raise ConfigError(str(exc), where=key, fix="write HOST:PORT, e.g. 127.0.0.1:9877") from None
    try:
        result = start_http_server(port, addr=host, registry=registry)
    except (OSError, UnicodeError, ValueError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or exc.__class__.__name__
        raise ConfigError(
            f"cannot serve metrics on {address}: {reason}", where=key, fix=_bind_fix(exc, host, port, key)
        ) from None
    # prometheus-client >= 0.20 returns (server, thread); older versions return None.
    server = result[0] if isinstance(result, tuple) and result else None
    if server is not None:
        return server, int(server.server_port)
    if port == 0:
        raise ConfigError(
            "this prometheus-client does not tell which port it picked for port 0",
            where=key,
            fix="pip install 'prometheus-client>=0.20', or set a fixed port",
        )
    return None, port

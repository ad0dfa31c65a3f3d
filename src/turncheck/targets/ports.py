"""Loopback ports for the apps turncheck starts and for its own servers.

An app's port is chosen before the app starts (it is on the app's command line), so it
is only known to be free when chosen. A server turncheck starts afterwards on port 0 (a
recording proxy, a replay guard, the other side's) could then be given that same port by
the kernel: the app fails to bind it, and its readiness check and turns are answered by
turncheck's own server (seen as "the app answered HTTP 403" under load). So the ports
handed to apps are remembered, and turncheck's servers never listen on one of them.
"""

from __future__ import annotations

import socket

_APP_PORTS: set[int] = set()
"""Every port handed to an app in this process (a few per run)."""


def _bound_socket() -> socket.socket:
    """A TCP socket bound to a port of 127.0.0.1 the kernel chose."""
    bound = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    bound.bind(("127.0.0.1", 0))
    return bound


def free_port() -> int:
    """A free port of 127.0.0.1 for an app to listen on, kept from turncheck's servers
    and from the other apps of the run."""
    with server_socket() as probe:
        port: int = probe.getsockname()[1]
    _APP_PORTS.add(port)
    return port


def server_socket() -> socket.socket:
    """A socket bound to 127.0.0.1 on no port handed to an app."""
    passed_over: list[socket.socket] = []
    try:
        while True:
            bound = _bound_socket()
            if bound.getsockname()[1] not in _APP_PORTS:
                return bound
            passed_over.append(bound)  # held while asking again: the kernel picks another
    finally:
        for passed in passed_over:
            passed.close()

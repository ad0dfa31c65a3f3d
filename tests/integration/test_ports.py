"""An app's port is never taken by one of turncheck's own servers (targets/ports.py): a
recording proxy or replay guard started after the app's port was chosen would otherwise
answer the app's readiness check and turns ("the app answered HTTP 403")."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from turncheck.targets import ports


@pytest.fixture
def kernel_offers_the_apps_port_first(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The kernel's next port-0 bind returns the port just handed to an app, as it may
    once the app's probe socket is closed."""
    app_port = ports.free_port()
    real = ports._bound_socket
    offered = {"first": True}

    def bound() -> socket.socket:
        if offered.pop("first", False):
            taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            taken.bind(("127.0.0.1", app_port))
            return taken
        return real()

    monkeypatch.setattr(ports, "_bound_socket", bound)
    yield app_port


def test_a_server_never_listens_on_a_port_handed_to_an_app(
        kernel_offers_the_apps_port_first: int) -> None:
    with ports.server_socket() as server:
        assert server.getsockname()[1] != kernel_offers_the_apps_port_first
    # The app can still bind its port: the socket passed over was closed.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as app:
        app.bind(("127.0.0.1", kernel_offers_the_apps_port_first))


def test_two_apps_get_two_ports() -> None:
    assert ports.free_port() != ports.free_port()

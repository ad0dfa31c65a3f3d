"""The refusing proxy of a replay names the host each request was for, whatever form the
client used (docs/targets.md, "Replay stays on the machine")."""

from __future__ import annotations

import pytest

from turncheck.targets.egress_refuser import refused_host


@pytest.mark.parametrize(("method", "target", "host", "expected"), [
    ("CONNECT", "api.github.com:443", "api.github.com:443", "api.github.com:443"),
    ("GET", "http://weather.example/today", "weather.example", "weather.example:80"),
    ("POST", "http://10.0.0.7:8080/v1/x", None, "10.0.0.7:8080"),
    ("GET", "https://weather.example/", None, "weather.example:443"),
    ("GET", "/today", "weather.example", "weather.example:80"),  # origin form: the Host
    ("GET", "/today", "weather.example:81", "weather.example:81"),
    ("GET", "/today", None, "?:80"),
])
def test_each_request_form_names_its_host(method: str, target: str, host: str | None,
                                          expected: str) -> None:
    assert refused_host(method, target, host) == expected

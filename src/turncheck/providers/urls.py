"""Request URLs in httpx's normal form (`str(httpx.URL(url))`), the form a cassette
stores and matches, without loading httpx for the URLs providers usually post to.

A plain URL (lower-case `http(s)` and ASCII host, no default or zero-padded port, no dot
segments, userinfo, fragment, escapes or characters httpx would escape) is its own normal
form: a replay keys its requests without importing httpx. Any other URL is left to httpx
itself, so both forms agree by construction (tests/integration/test_urls.py checks the plain ones).
"""

from __future__ import annotations

import re

_UNRESERVED = r"A-Za-z0-9_~-"
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_PLAIN_URL = re.compile(
    rf"(?P<scheme>https?)://(?P<host>{_LABEL}(?:\.{_LABEL})*)(?::(?P<port>[1-9][0-9]{{0,4}}))?"
    rf"(?:/[{_UNRESERVED}][.{_UNRESERVED}]*)*/?(?:\?[.=&{_UNRESERVED}]*)?"
)
"""No path segment starts with a dot, so none is `.` or `..` (httpx removes those)."""
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _plain(url: str) -> re.Match[str] | None:
    """The match of `url` when httpx would leave it exactly as it is."""
    match = _PLAIN_URL.fullmatch(url)
    if match is None:
        return None
    port = match["port"]
    if port is not None and int(port) == _DEFAULT_PORTS[match["scheme"]]:
        return None
    host = match["host"]
    if _IPV4_STYLE.fullmatch(host) and not _valid_ipv4(host):
        return None  # httpx refuses it: let httpx say so
    if "xn--" in host:
        return None  # an IDNA host: httpx's `host` is its Unicode form
    return match


def _valid_ipv4(host: str) -> bool:
    octets = host.split(".")
    return all(octet == "0" or (octet[0] != "0" and int(octet) <= 255) for octet in octets)


def as_sent(url: str) -> str:
    """`url` as httpx sends (and a cassette stores) it; raises `httpx.InvalidURL` for a
    URL httpx refuses."""
    if _plain(url) is not None:
        return url
    import httpx  # an unusual URL: httpx's own parser decides, as it does when sending

    return str(httpx.URL(url))


def host_of(url: str) -> str | None:
    """The URL's host as httpx reads it, or None when httpx refuses the URL."""
    match = _plain(url)
    if match is not None:
        return match["host"]
    import httpx

    try:
        return httpx.URL(url).host
    except httpx.InvalidURL:
        return None  # reported when the first request is sent

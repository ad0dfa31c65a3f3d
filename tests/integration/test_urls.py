"""Request URLs keep httpx's normal form without loading httpx (providers/urls.py): a
replay keys its requests by the URL as a recording sent it, so both must agree."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import httpx
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from turncheck.providers.anthropic import ANTHROPIC_BASE_URL
from turncheck.providers.openai_compat import (
    GEMINI_BASE_URL,
    OPENAI_BASE_URL,
    OPENROUTER_BASE_URL,
)
from turncheck.providers.urls import _plain, as_sent, host_of

PLAIN = {
    "scheme": st.sampled_from(["http", "https"]),
    "host": st.one_of(
        st.lists(st.from_regex(r"[a-z0-9]([a-z0-9-]{0,4}[a-z0-9])?", fullmatch=True),
                 min_size=1, max_size=4).map(".".join),
        st.lists(st.integers(0, 255).map(str), min_size=4, max_size=4).map(".".join)),
    "port": st.one_of(st.just(""), st.integers(1, 65_535).map(lambda port: f":{port}")),
    "path": st.lists(st.from_regex(r"/[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,5}", fullmatch=True),
                     max_size=4).map("".join),
    "end": st.sampled_from(["", "/"]),
    "query": st.one_of(st.just(""), st.from_regex(r"\?[A-Za-z0-9=&._~-]{0,12}", fullmatch=True)),
}
UNUSUAL = {
    "scheme": st.sampled_from(["HTTP", "Https"]),
    "host": st.sampled_from(["A.b", "-a", "a-", "xn--bcher-kva.de", "xn--a.b", "bücher.de",
                             "a_b", "a..b", ".a", "[::1]", "[::g]", "u@h", "300.1.1.1",
                             "1.2.3.04", "01.2.3.4", "1.2.3.256", "1.2.3", "1.2.3.4.5"]),
    "port": st.sampled_from([":", ":0", ":80", ":443", ":080", ":0443", ":65536", ":99999",
                             ":x"]),
    "path": st.sampled_from(["/.", "/..", "/a/./b", "/a/../b", "//a", "/a b", "/%41", "/%2f",
                             "/é", "/:", "/@", "/a;b", "/a#f", "/.a", "/a|b"]),
    "end": st.sampled_from(["/.", "/..", "#", "#f"]),
    "query": st.sampled_from(["?a b", "?%zz", "?%41", "?é=1", "?a=?", "?x#y", "?a|b", "?[]"]),
}


@st.composite
def urls(draw: st.DrawFn) -> str:
    """A plain URL, or one with exactly one unusual part (so that each is tried often)."""
    parts = {name: draw(strategy) for name, strategy in PLAIN.items()}
    unusual = draw(st.sampled_from([None, *PLAIN]))
    if unusual is not None:
        parts[unusual] = draw(UNUSUAL[unusual])
    return f"{parts['scheme']}://{parts['host']}{parts['port']}{parts['path']}{parts['end']}" \
        + parts["query"]

def httpx_form(url: str) -> str | None:
    try:
        return str(httpx.URL(url))
    except httpx.InvalidURL:
        return None


def ours(url: str) -> str | None:
    try:
        return as_sent(url)
    except httpx.InvalidURL:
        return None


def host_or_error(host: Callable[[str], str | None], url: str) -> str | None:
    """The host, or the exception's name (httpx's `host` raises IDNA's errors)."""
    try:
        return host(url)
    except Exception as exc:
        return type(exc).__name__


def httpx_host(url: str) -> str | None:
    """What `host_of` did before it skipped httpx for plain URLs."""
    try:
        return httpx.URL(url).host
    except httpx.InvalidURL:
        return None


@settings(max_examples=1000, deadline=None)
@given(urls())
def test_a_url_is_sent_as_httpx_sends_it(url: str) -> None:
    event("plain" if _plain(url) else "left to httpx")
    assert ours(url) == httpx_form(url)
    assert host_or_error(host_of, url) == host_or_error(httpx_host, url)

DEFAULT_ENDPOINTS = [
    f"{OPENAI_BASE_URL}/chat/completions", f"{OPENAI_BASE_URL}/embeddings",
    f"{OPENROUTER_BASE_URL}/chat/completions", f"{ANTHROPIC_BASE_URL}/messages",
    f"{GEMINI_BASE_URL}/chat/completions", "http://127.0.0.1:8765/v1/chat/completions",
    "http://localhost:11434/v1/chat/completions",
    "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
    "?api-version=2024-10-21",
]


@pytest.mark.parametrize("url", DEFAULT_ENDPOINTS)
def test_the_usual_endpoints_are_already_in_httpx_form(url: str) -> None:
    assert as_sent(url) == str(httpx.URL(url)) == url


def test_the_usual_endpoints_need_no_httpx() -> None:
    """What keeps a replay from loading httpx: the URLs it keys on are worked out
    without it."""
    code = (
        "import json, sys\nfrom turncheck.providers.urls import as_sent, host_of\n"
        f"forms = [(as_sent(u), host_of(u)) for u in {DEFAULT_ENDPOINTS!r}]\n"
        "print(json.dumps(['httpx' in sys.modules, forms]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    httpx_loaded, forms = json.loads(done.stdout)
    assert not httpx_loaded
    assert forms == [[url, httpx.URL(url).host] for url in DEFAULT_ENDPOINTS]

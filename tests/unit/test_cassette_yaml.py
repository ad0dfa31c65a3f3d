"""Recording writes each interaction's YAML once, byte for byte what vcrpy writes, and the
cassette's size cap holds on those exact sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turncheck.providers import cassette_yaml, cassettes
from turncheck.providers.cassette_yaml import _fast_item, cassette_text, pyyaml_text, vcr_pair
from turncheck.providers.interactions import Interaction

_any_text = st.text(st.characters(codec="utf-8"), max_size=300)
_ascii = st.text(st.sampled_from("ab z'\":#-?,[]{}&*!|>%@`.=~<+/\\_019"), max_size=300)
"""The characters libyaml's choices turn on: indicators, quotes, spaces, digits."""
_tricky = st.sampled_from(["", "1", "3.5", "true", "null", "~", "yes", "- x", "---", "...",
                           "2024-01-01", "1e5", "'", "a: b", "a:", ":", "#x", "a #b", "<<",
                           "+1", ".inf", "-", "? x", " x", "x ", "a  b", "31.2"])
_string = st.one_of(_ascii, _tricky, _any_text)
_body = st.one_of(
    st.binary(max_size=300),
    _string.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(_string, max_size=6).map(
        lambda parts: json.dumps({"model": "m", "messages": parts}).encode()),
)
_headers = st.lists(st.tuples(st.sampled_from(["content-type", "Content-Type", "x-a", "k"])
                              | _ascii.filter(bool), _string), max_size=4)


def _interaction(request: bytes, response: bytes, request_headers: list[tuple[str, str]],
                 response_headers: list[tuple[str, str]], reason: str,
                 uri: str = "https://api.openai.com/v1/chat/completions") -> Interaction:
    return Interaction(("POST", uri, b"", 0), "POST", uri, request, request_headers, 200,
                       reason, response_headers, response)


def _serialized(interactions: list[Interaction]) -> str:
    """The cassette as vcrpy's serializer writes it (what `cassette_text` reproduces)."""
    return pyyaml_text([vcr_pair(i.method, i.uri, i.request_body, i.request_headers, i.status,
                                 i.reason, i.response_headers, i.response_body)
                        for i in interactions])


@settings(max_examples=1500, deadline=None)
@given(_body, _body, _headers, _headers, _string, _ascii)
def test_each_interaction_is_written_as_vcrpy_writes_it(
    request: bytes, response: bytes, request_headers: list[tuple[str, str]],
    response_headers: list[tuple[str, str]], reason: str, path: str,
) -> None:
    interaction = _interaction(request, response, request_headers, response_headers, reason,
                               "http://127.0.0.1:8080/v1/" + path.replace(" ", ""))
    assert cassette_text([interaction.yaml_item()]) == _serialized([interaction])


def test_a_cassette_is_its_items_in_order() -> None:
    items = [_interaction(f'{{"n": {n}, "text": "{"word " * 40 * n}"}}'.encode(),
                          b'{"ok": true}', [("content-type", "application/json")],
                          [("content-type", "application/json")], "OK") for n in range(4)]
    assert cassette_text(i.yaml_item() for i in items) == _serialized(items)
    assert cassette_text([]) == _serialized([])


def test_chat_bodies_take_the_quick_writer() -> None:
    """What the proxy records most (one-line ASCII JSON) is never handed to PyYAML."""
    body = json.dumps({"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": "It's 10:30 # not a comment, - a list? [no] {no}"}]})
    parts = ("POST", "http://127.0.0.1:1/v1/chat/completions", body.encode(),
             [("content-type", "application/json")], 200, "OK",
             [("content-type", "application/json"), ("x-turncheck-latency-ms", "31.2")],
             body.encode())
    assert _fast_item(*parts) is not None


def test_recording_serialises_no_answer_with_pyyaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    serialised: list[int] = []
    real = cassette_yaml.pyyaml_text
    monkeypatch.setattr(cassette_yaml, "pyyaml_text",
                        lambda pairs: serialised.append(len(pairs)) or real(pairs))
    cassette = cassettes.Cassette(tmp_path / "c.cassette.yaml", "record")
    for number in range(50):
        cassette._keep(_interaction(f'{{"n": {number}}}'.encode(), b'{"ok": true}',
                                    [("content-type", "application/json")], [], "OK"))
    assert cassette.save()
    assert serialised == []
    loaded = cassettes.Cassette(tmp_path / "c.cassette.yaml", "replay")
    assert len(loaded) == 50 and loaded.load_error is None


def test_the_cap_counts_the_exact_yaml(tmp_path: Path) -> None:
    answer = b'{"content": "' + b"a b " * 2_000 + b'"}'
    one = _interaction(b"{}", answer, [], [], "OK")
    empty = len(_serialized([]))
    cap = empty + len(_serialized([one])) * 3
    cassette = cassettes.Cassette(tmp_path / "c.cassette.yaml", "record", max_bytes=cap)
    for number in range(3):
        cassette._keep(_interaction(f'{{"n": {number}}}'.encode(), answer, [], [], "OK"))
    with pytest.raises(cassettes.ProviderError, match="byte limit replay accepts"):
        cassette._keep(_interaction(b'{"n": 4}', answer, [], [], "OK"))
    assert cassette.save()
    assert (tmp_path / "c.cassette.yaml").stat().st_size <= cap

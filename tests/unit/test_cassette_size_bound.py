"""Recording counts a cassette's size without serialising every answer to YAML, and the
size cap still holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turncheck.providers import cassettes
from turncheck.providers.cassettes import Interaction, _yaml_size, _yaml_size_bound

_text = st.text(st.characters(codec="utf-8"), max_size=400)
_body = st.one_of(st.binary(max_size=400), _text.map(lambda t: t.encode("utf-8", "surrogatepass")))
_headers = st.lists(st.tuples(st.text("abcdefgh-", min_size=1, max_size=12), _text),
                    max_size=4)


def _interaction(request: bytes, response: bytes, request_headers: list[tuple[str, str]],
                 response_headers: list[tuple[str, str]], reason: str) -> Interaction:
    uri = "https://api.openai.com/v1/chat/completions"
    return Interaction(("POST", uri, b"", 0), "POST", uri, request, request_headers, 200,
                       reason, response_headers, response)


@settings(max_examples=400, deadline=None)
@given(_body, _body, _headers, _headers, _text)
def test_the_bound_is_never_below_the_yaml_size(
    request: bytes, response: bytes, request_headers: list[tuple[str, str]],
    response_headers: list[tuple[str, str]], reason: str,
) -> None:
    interaction = _interaction(request, response, request_headers, response_headers, reason)
    assert _yaml_size_bound(interaction) >= _yaml_size(interaction)


@pytest.mark.parametrize("body", [
    b'{"choices": [{"message": {"content": "' + b"word " * 3000 + b'"}}]}',
    b"data: {\"delta\": \"a\\n\"}\n\n" * 500,
    "déjà vu — 日本語 😀 ".encode() * 300,
    bytes(range(256)) * 20,
    b"y" * 50_000,
])
def test_the_bound_holds_on_long_answers(body: bytes) -> None:
    interaction = _interaction(b'{"model": "m"}', body, [("content-type", "a/b")],
                               [("content-type", "application/json")], "OK")
    assert _yaml_size(interaction) <= _yaml_size_bound(interaction)


def test_recording_far_below_the_cap_serialises_no_answer_to_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    serialised: list[int] = []
    real = cassettes._serialized
    monkeypatch.setattr(cassettes, "_serialized",
                        lambda items: serialised.append(len(items)) or real(items))
    cassette = cassettes.Cassette(tmp_path / "c.cassette.yaml", "record")
    for number in range(50):
        cassette._keep(_interaction(f'{{"n": {number}}}'.encode(), b'{"ok": true}', [], [], "OK"))
    assert serialised == []
    assert len(cassette) == 50


def test_near_the_cap_the_exact_size_decides(tmp_path: Path) -> None:
    """Bounds alone would refuse the third answer; measured, it fits."""
    answer = b'{"content": "' + b"a b " * 2_000 + b'"}'
    one = _interaction(b"{}", answer, [], [], "OK")
    cap = 3 * _yaml_size(one) + 200
    assert 3 * _yaml_size_bound(one) > cap
    cassette = cassettes.Cassette(tmp_path / "c.cassette.yaml", "record", max_bytes=cap)
    for number in range(3):
        cassette._keep(_interaction(f'{{"n": {number}}}'.encode(), answer, [], [], "OK"))
    with pytest.raises(cassettes.ProviderError, match="byte limit replay accepts"):
        cassette._keep(_interaction(b'{"n": 4}', answer, [], [], "OK"))

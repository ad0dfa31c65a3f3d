"""A secret echoed in another case, spaced out or with punctuation between its
characters is redacted too (issue 32, item 11); what remains possible is documented."""

from __future__ import annotations

import json

import pytest

from turncheck.engine.redaction import Redactor
from turncheck.providers.scrubber import Scrubber
from turncheck.report.results import CheckResult

SECRET = "sk-proj-Q7vLx9Tr4nsf0rmMe42"


def spaced(text: str, separator: str = " ") -> str:
    return separator.join(text)


@pytest.mark.parametrize("echo", [
    SECRET.upper(),
    SECRET.lower(),
    SECRET.swapcase(),
    spaced(SECRET),
    spaced(SECRET.upper(), " - "),
    spaced(SECRET, "\n"),
    spaced(SECRET[::-1].upper(), "."),
    "Q7VL X9TR",  # one aligned chunk of the key, in upper case, spaced
])
def test_a_loosely_echoed_secret_is_redacted(echo: str) -> None:
    redactor = Redactor([SECRET])
    text = redactor.text(f"the key is {echo}, as asked")
    assert text.startswith("the key is [REDACTED]") and text.endswith(", as asked"), text
    model = CheckResult(type="match", passed=False, detail=f"said {echo}")
    assert redactor.model(model).detail == "said [REDACTED]"  # JSON escapes count too


def test_a_loosely_echoed_secret_never_reaches_a_cassette() -> None:
    scrubber = Scrubber([SECRET])
    body = json.dumps({"content": f"key: {spaced(SECRET.upper(), chr(10))}"}).encode()
    _, stored = scrubber.body(body)
    assert b"<SECRET>" in stored and b"Q\\n7\\nV" not in stored.upper()


def test_ordinary_text_is_left_alone() -> None:
    redactor = Redactor([SECRET, "abcd"])
    text = "Spell it out: s k p r o j is a prefix; ABCD and q7vl are short."
    assert redactor.text(text) == text

"""Looking for a secret's loose forms deletes separators with `str.translate`, which must
delete exactly what the reference regular expressions match."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from turncheck.providers import secret_forms
from turncheck.providers.secret_forms import FormRedactor

_PIECES = ("\\", "\\\\", "n", "r", "t", "b", "f", '"', "/", "u", "A", "k", " ", "\u00a0",
           "\u2003", "-", "_", ".", ":", ";", "|", ",")
_pieces = st.sampled_from(_PIECES)
_texts = st.one_of(st.lists(_pieces, max_size=30).map("".join), st.text(max_size=60))


def test_the_whitespace_list_is_what_backslash_s_matches() -> None:
    every_character = "".join(map(chr, range(0x110000)))
    matched = set(re.findall(r"\s", every_character))
    assert matched == set(secret_forms.WHITESPACE)


def assert_squeezed_as_the_patterns_match(text: str) -> None:
    assert secret_forms._squeezed(text) == secret_forms._SEPARATOR_RUN.sub("", text).lower()
    assert secret_forms._json_squeezed(text) == \
        secret_forms._JSON_SEPARATOR_RUN.sub("", text).lower()


def test_squeezing_deletes_what_the_separator_patterns_match_for_every_short_text() -> None:
    """Every text of up to three pieces (11,067 texts): each escape beside each separator
    and each other escape, in every order, which random drawing only samples."""
    texts = [""]
    for _ in range(3):
        texts = [text + piece for text in texts for piece in _PIECES] + texts
    for text in set(texts):
        assert_squeezed_as_the_patterns_match(text)


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_squeezing_deletes_what_the_separator_patterns_match(text: str) -> None:
    assert_squeezed_as_the_patterns_match(text)


def test_a_spelled_out_key_in_json_is_still_found() -> None:
    redactor = FormRedactor(["sk-proj-ABCDEFGH12345678"], "<SECRET>", 8)
    assert redactor.found_in_json('{"content": "a b c d e f g h\\n1 2 3 4 5 6 7 8"}')
    assert not redactor.found_in_json('{"content": "nothing to see here"}')

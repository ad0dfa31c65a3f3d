"""The text forms of a secret that redaction removes, and the one redactor built on them.

A hostile model server (or a model talked into it) can echo an API key in another
encoding to slip it past a plain `str.replace`. Besides the value itself, these are
removed wherever a secret is redacted (report, JUnit, comment, error messages,
committed cassettes):

- its JSON-escaped form (inside raw JSON text);
- reversed;
- URL-encoded (`%2B` and `+` for spaces);
- hex, lower and upper case;
- base64, standard and URL-safe, padded or not, at each of the three byte alignments
  it can have inside a longer base64 text (`base64("key: " + secret)`);
- fragments: a key of at least `2 * FRAGMENT_CHARS` characters split into pieces (one
  per turn, say) is caught through its aligned `FRAGMENT_CHARS`-character chunks, so
  any piece of `2 * FRAGMENT_CHARS - 1` characters or more loses at least one chunk. A
  well-known prefix (`sk-proj-`) is not a chunk: it would blank out ordinary text;
- loosely: the secret, reversed, and each chunk in any case and with whitespace or
  punctuation (`-_.,:;|/`) between its characters (`S K - P R O J …`), when what is
  left of it without those is at least `MIN_LOOSE_CHARS` long. Finding one costs one
  pass over the text; only a text that holds one is searched character by character.

What remains possible is stated in docs/security-secrets-and-inputs.md.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

FRAGMENT_CHARS = 8
MIN_FORM_CHARS = 6
MIN_LOOSE_CHARS = 8
"""A shorter loose form (case and separators ignored) would match ordinary words."""
_SEPARATORS = "-_.,:;|/"
_SEPARATOR_RUN = re.compile(rf"[\s{re.escape(_SEPARATORS)}]+")
_JSON_SEPARATOR_RUN = re.compile(rf'(?:\\[nrtbf"\\/]|[\s{re.escape(_SEPARATORS)}])+')
"""In JSON text: the separators, and the escapes of whitespace, quotes and slashes."""
_KEY_PREFIX = re.compile(r"^(?:[A-Za-z0-9]{1,8}[-_])+")
WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680" + "".join(
    chr(code) for code in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"
"""Every character `\\s` matches in a `str` pattern (`str.isspace`; a test checks)."""
_UNSEPARATED = str.maketrans(dict.fromkeys(_SEPARATORS + WHITESPACE))
"""Deletes what `_SEPARATOR_RUN` matches, character by character, in C (the regular
expression cost about 15 µs per 300 characters: more than the rest of a proxied call)."""
_ASCII_SEPARATORS = "".join(c for c in _SEPARATORS + WHITESPACE if c.isascii()).encode()
_JSON_ESCAPES = ("\\\\", *(f"\\{char}" for char in 'nrtbf"/'))


def secret_forms(secret: str) -> set[str]:
    """Every form of `secret` listed in the module docstring."""
    raw = secret.encode("utf-8")
    forms = {secret, secret[::-1], quote(secret, safe=""), quote_plus(secret),
             raw.hex(), raw.hex().upper()}
    forms |= _base64_forms(raw)
    forms |= _fragments(secret)
    forms |= {json.dumps(form)[1:-1] for form in list(forms)}
    # A transform of a very short secret would blank out ordinary words.
    return {form for form in forms if len(form) >= MIN_FORM_CHARS} | {secret}


def _base64_forms(raw: bytes) -> set[str]:
    """The base64 characters that depend on `raw` alone, at each alignment."""
    forms: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        first = -(-8 * shift // 6)  # the first character whose bits all come from `raw`
        last = 8 * (shift + len(raw)) // 6  # one past the last such character
        core = encoded[first:last]
        forms |= {core, core.replace("+", "-").replace("/", "_")}
    return forms


def _fragments(secret: str) -> set[str]:
    if len(secret) < 2 * FRAGMENT_CHARS:
        return set()
    prefix = _KEY_PREFIX.match(secret)
    body = secret[prefix.end():] if prefix else secret
    if len(body) < FRAGMENT_CHARS:
        return set()
    last = len(body) - FRAGMENT_CHARS
    return {body[start:start + FRAGMENT_CHARS] for start in range(0, last, FRAGMENT_CHARS)} | {
        body[last:]
    }


def _squeezed(text: str) -> str:
    """`text` without separators, in lower case: what a loose form is looked for in."""
    if text.isascii():  # bytes.translate deletes without a look-up per character
        return text.encode("ascii").translate(None, _ASCII_SEPARATORS).decode("ascii").lower()
    return text.translate(_UNSEPARATED).lower()


def _json_squeezed(text: str) -> str:
    """`_squeezed` for JSON text: its escapes of whitespace, quotes and slashes are
    separators too (`_JSON_SEPARATOR_RUN`). Escaped backslashes go first: `str.replace`
    pairs backslashes from the left, as a JSON reader does."""
    if "\\" in text:
        for escape in _JSON_ESCAPES:
            text = text.replace(escape, "")
    return _squeezed(text)


def loose_forms(secret: str) -> set[str]:
    """The secret, reversed, and its chunks, squeezed (`_squeezed`), when long enough."""
    forms = {_squeezed(form) for form in (secret, secret[::-1], *_fragments(secret))}
    return {form for form in forms if len(form) >= MIN_LOOSE_CHARS}


def _loose_pattern(form: str) -> re.Pattern[str]:
    """Matches `form`'s characters in any case with separators between them. Each
    separator run is followed by a character that is not a separator, so a failed
    attempt backtracks through one run at most: linear in the text per form."""
    separator = rf"[\s{re.escape(_SEPARATORS)}]*"
    return re.compile(separator.join(re.escape(char) for char in form), re.IGNORECASE)


class FormRedactor:
    """Replaces every form of every secret (longest first) by `placeholder`."""

    def __init__(self, secrets: Iterable[str], placeholder: str, min_length: int) -> None:
        forms: set[str] = set()
        loose: set[str] = set()
        for secret in {s for s in secrets if len(s) >= min_length}:
            forms |= secret_forms(secret)
            loose |= loose_forms(secret)
        # Longest first, so a form containing another is replaced whole; then by value,
        # so the result never depends on set order.
        self.forms = sorted(forms, key=lambda f: (-len(f), f))
        self.loose = sorted(loose, key=lambda f: (-len(f), f))
        self._placeholder = placeholder

    def __bool__(self) -> bool:
        return bool(self.forms)

    def found_in_json(self, text: str) -> bool:
        """Whether JSON text holds a form, its escapes counted as separators."""
        if any(form in text for form in self.forms):
            return True
        return bool(self.loose) and self._loose_in(_json_squeezed(text))

    def _loose_in(self, squeezed: str) -> bool:
        return any(form in squeezed for form in self.loose)

    def text(self, value: str) -> str:
        for form in self.forms:
            if form in value:
                value = value.replace(form, self._placeholder)
        if not self.loose:
            return value
        squeezed = _squeezed(value)
        for form in self.loose:
            if form in squeezed:
                value = _loose_pattern(form).sub(self._placeholder, value)
                squeezed = _squeezed(value)
        return value

"""A cassette's YAML, written one interaction at a time, byte for byte what vcrpy writes.

vcrpy serialises a cassette with PyYAML (`yaml.dump`, libyaml's emitter): about 0.1 ms
of CPU per interaction, most of it PyYAML's Python representer and resolver, which cost
more than the rest of a proxied call. Two facts make it cheaper without changing a byte:

- the interactions of a cassette are independent items of one block sequence, so the
  file is `interactions:` + the text of each item + `version: 1` (`cassette_text`), and
  each item's text can be made once, when it is recorded;
- nearly every string in an item (a JSON body, a URL, a header) is printable ASCII on
  one line, and for those libyaml's choices are few: plain, or single-quoted with `'`
  doubled, folded at a space once past column 80 (`_scalar`, which follows libyaml's
  `yaml_emitter_analyze_scalar`, `select_scalar_style`, `write_plain_scalar` and
  `write_single_quoted`).

An item with any other string (a line break, non-ASCII text, bytes that are not UTF-8)
is written by PyYAML itself (`_pyyaml_item`); the tests compare
both writers on generated interactions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from turncheck.lazy import submodules_without_package_init

if TYPE_CHECKING:
    from collections.abc import Iterable

    from vcr.request import Request as VcrRequest
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer
    from yaml.nodes import ScalarNode
    from yaml.resolver import Resolver
else:  # vcrpy's cassette format only, not its patching of every HTTP client
    _request, _serialize, yamlserializer = submodules_without_package_init(
        "vcr", "request", "serialize", "serializers.yamlserializer")
    VcrRequest, serialize = _request.Request, _serialize.serialize
    from yaml.nodes import ScalarNode
    from yaml.resolver import Resolver

Headers = list[tuple[str, str]]
_HEAD = "interactions:\n"
_TAIL = "version: 1\n"
_EMPTY = "interactions: []\nversion: 1\n"
_BEST_WIDTH = 80
_MAX_SIMPLE_KEY = 128
_ONE_LINE_ASCII = re.compile(r"[ -~]*\Z")
_STR_TAG = "tag:yaml.org,2002:str"
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
_RESOLVER = Resolver()
_IMPLICIT_FIRST = frozenset(key for key in Resolver.yaml_implicit_resolvers if key)


def cassette_text(items: Iterable[str]) -> str:
    """The cassette file of these items (`interaction_item`), in their order."""
    text = "".join(items)
    return _HEAD + text + _TAIL if text else _EMPTY


def interaction_item(method: str, uri: str, request_body: bytes, request_headers: Headers,
                     status: int, reason: str, response_headers: Headers,
                     response_body: bytes) -> str:
    """One interaction as an item of the cassette's `interactions` sequence."""
    fast = _fast_item(method, uri, request_body, request_headers, status, reason,
                      response_headers, response_body)
    if fast is not None:
        return fast
    return _pyyaml_item(method, uri, request_body, request_headers, status, reason,
                        response_headers, response_body)


def vcr_pair(method: str, uri: str, request_body: bytes, request_headers: Headers,
             status: int, reason: str, response_headers: Headers,
             response_body: bytes) -> tuple[Any, dict[str, Any]]:
    """The interaction as vcrpy's request object and response mapping."""
    request = VcrRequest(method, uri, request_body, dict(request_headers))
    grouped: dict[str, list[str]] = {}
    for name, value in response_headers:
        grouped.setdefault(name, []).append(value)
    response = {
        "status": {"code": status, "message": reason},
        "headers": grouped,
        "body": {"string": response_body},
    }
    return request, response


def pyyaml_text(pairs: list[tuple[Any, dict[str, Any]]]) -> str:
    """The cassette as vcrpy's serializer writes it."""
    text: str = serialize({"requests": [p[0] for p in pairs],
                           "responses": [p[1] for p in pairs]}, yamlserializer)
    return text


def _pyyaml_item(*parts: Any) -> str:
    text = pyyaml_text([vcr_pair(*parts)])
    return text[len(_HEAD):-len(_TAIL)]


def _fast_item(method: str, uri: str, request_body: bytes, request_headers: Headers,
               status: int, reason: str, response_headers: Headers,
               response_body: bytes) -> str | None:
    """The item's text, or None when a string in it is not one `_scalar` writes."""
    try:
        sent = request_body.decode("ascii")
        answered = response_body.decode("ascii")
    except UnicodeDecodeError:
        return None
    request_map = _request_headers(request_headers)
    response_map = _response_headers(response_headers)
    out = ["- request:\n    body:"]
    body = _scalar(sent, 9, 6)
    if body is None:
        return None
    out.append(body)
    out.append("\n    headers:")
    if not _mapping(out, request_map, 6):
        return None
    for key, value in (("method", method), ("uri", uri)):
        written = _cached_scalar(value, 4 + len(key) + 1, 6)
        if written is None:
            return None
        out += ("    ", key, ":", written, "\n")
    written = _scalar(answered, 13, 8)
    if written is None:
        return None
    out += ("  response:\n    body:\n      string:", written, "\n    headers:")
    if not _mapping(out, response_map, 6):
        return None
    message = _cached_scalar(reason, 14, 8)
    if message is None or isinstance(status, bool) or not isinstance(status, int):
        return None
    out += ("    status:\n      code: ", str(status), "\n      message:", message, "\n")
    return "".join(out)


def _request_headers(headers: Headers) -> dict[str, list[str]]:
    """vcrpy's request headers (`dict`, then its case-insensitive `HeadersDict`): of the
    names equal but for case, the first spelling, and the value of the last in `dict`'s
    order."""
    spelled: dict[str, str] = {}
    values: dict[str, str] = {}
    for name, value in dict(headers).items():
        spelling = spelled.setdefault(name.lower(), name)
        values[spelling] = value
    return {name: [value] for name, value in values.items()}


def _response_headers(headers: Headers) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in headers:
        grouped.setdefault(name, []).append(value)
    return grouped


def _mapping(out: list[str], mapping: dict[str, list[str]], indent: int) -> bool:
    """Append a block mapping of names to sequences of values, at `indent`, after its
    key's `:` (an empty one in flow style, `{}`, as PyYAML writes it)."""
    if not mapping:
        out.append(" {}\n")
        return True
    out.append("\n")
    pad = " " * indent
    for name in sorted(mapping):
        key = _key(name, indent)
        if key is None:
            return False
        out += (pad, key, ":\n")
        for value in mapping[name]:
            written = _cached_scalar(value, indent + 1, indent + 2)
            if written is None:
                return False
            out += (pad, "-", written, "\n")
    return True


@lru_cache(maxsize=1024)
def _key(name: str, indent: int) -> str | None:
    """A mapping key as written (never folded); None when libyaml would not write it
    as a simple one-line key."""
    if len(name) > _MAX_SIMPLE_KEY:
        return None
    written = _scalar(name, indent, indent, simple_key=True)
    return None if written is None else written[1:]


@lru_cache(maxsize=4096)
def _short_scalar(value: str, column: int, indent: int) -> str | None:
    return _scalar(value, column, indent)


def _cached_scalar(value: str, column: int, indent: int) -> str | None:
    """`_scalar`, remembered for short strings (URLs, header values: the same on most
    interactions)."""
    if len(value) <= 256:
        return _short_scalar(value, column, indent)
    return _scalar(value, column, indent)


def _scalar(value: str, column: int, indent: int, simple_key: bool = False) -> str | None:
    """` value` as libyaml writes it after a key's `:` or a sequence's `-` (the leading
    space included), when the line so far is `column` characters long and continuation
    lines are indented by `indent`; None for a string that is not printable one-line
    ASCII."""
    if _ONE_LINE_ASCII.match(value) is None:
        return None
    if _plain_allowed(value, simple_key) and _plain_means_str(value):
        return " " + (value if simple_key else _folded(value, column + 1, indent, plain=True))
    quoted = value.replace("'", "''")
    if simple_key:
        return " '" + quoted + "'"
    return " '" + _folded(quoted, column + 2, indent, plain=False) + "'"


def _plain_allowed(value: str, simple_key: bool) -> bool:
    """libyaml's `block_plain_allowed` for one-line printable ASCII (no line breaks,
    no special characters)."""
    if not value:
        return not simple_key
    if value[0] == " " or value[-1] == " ":
        return False
    if value.startswith(("---", "...")):
        return False
    first = value[0]
    followed_by_blank = len(value) == 1 or value[1] == " "
    if first in _FIRST_INDICATORS or (first in "?:-" and followed_by_blank):
        return False
    return not (": " in value or value.endswith(":") or " #" in value)


@lru_cache(maxsize=4096)
def _resolves_as_str(value: str) -> bool:
    tag: str = _RESOLVER.resolve(ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return tag == _STR_TAG


def _plain_means_str(value: str) -> bool:
    """Whether the value written plain reads back as a string (not a number, a bool, a
    null, a date): the resolver looks its patterns up by the first character."""
    if value and value[0] not in _IMPLICIT_FIRST:
        return True
    if len(value) > 64:
        tag: str = _RESOLVER.resolve(ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
        return tag == _STR_TAG
    return _resolves_as_str(value)


def _folded(text: str, column: int, indent: int, *, plain: bool) -> str:
    """`text` (already escaped) with libyaml's line folding: at a single space, not
    the first or last character, once the column is past the best width; the space
    becomes a line break and `indent` spaces. `column` is where `text` starts."""
    if column + len(text) <= _BEST_WIDTH + 1 or " " not in text:
        return text
    pad = "\n" + " " * indent
    lines: list[str] = []
    start = 0
    last = len(text) - 1
    while True:
        # A break is considered at a space written when the column is past the width.
        search = max(start, start + _BEST_WIDTH + 1 - column)
        cut = _break_at(text, search, start, last, plain)
        if cut < 0:
            lines.append(text[start:])
            return pad.join(lines)
        lines.append(text[start:cut])
        start = cut + 1
        column = indent


def _break_at(text: str, position: int, start: int, last: int, plain: bool) -> int:
    """The first space at or after `position` where libyaml breaks the line, or -1."""
    while True:
        cut = text.find(" ", position)
        if cut < 0 or (cut >= last and not plain):
            return -1
        before_is_space = cut > 0 and text[cut - 1] == " "
        after_is_space = cut + 1 <= last and text[cut + 1] == " "
        if not before_is_space and not after_is_space and (plain or cut != 0):
            return cut
        position = cut + 1

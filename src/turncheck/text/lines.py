"""Untrusted text made safe to print: suite and eval names, file content and model output
must not move the cursor, clear the screen, start a workflow command on a line of their
own, or crash the encoder (lone surrogates)."""

from __future__ import annotations

import re

# Control characters (newline and tab excepted) and lone surrogates.
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
CLIPPED = "…"


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escaped(match: re.Match[str]) -> str:
    return _escape(match.group())


def terminal_safe(text: str) -> str:
    """`text` with control characters shown as `\\xNN` escapes (line breaks kept)."""
    return _NOT_PRINTABLE.sub(_escaped, text.replace("\r\n", "\n"))


def one_line(text: str, limit: int | None = None) -> str:
    """`text` on one printable line: runs of white space (line breaks included) read as
    one space, other control characters as `\\xNN` escapes; with `limit`, at most that
    many characters, `…` where it was cut."""
    spaced = _WHITESPACE.sub(" ", text).strip()
    # Beyond the control characters: line and paragraph separators, bidi overrides.
    flat = spaced if spaced.isprintable() else "".join(
        char if char.isprintable() else _escape(char) for char in spaced)
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: limit - 1] + CLIPPED

"""Escaping of untrusted text (model outputs, prompts, file content, names) for PR comments.

Every function returns `markupsafe.Markup`, so a Jinja environment with autoescape on
does not escape the result a second time.  The threats, for GitHub-flavoured Markdown:

* closing or opening HTML (`</details>`, `<!--`) and hiding the rest of the comment;
* injecting Markdown structure (tables, headings, links, images, code fences);
* notifying people (`@user`, `@org/team`) or back-linking issues (`#1`, `GH-1`);
* live links: GFM's autolink extension links bare `https://…`, `www.…` and `a@b.c` even
  through backslash escapes (it reads the raw text), so a ZERO WIDTH SPACE goes before
  `://`, after `www` and after `@`: the text reads the same and no link forms.

`\\@` and `&#64;` do not stop a GitHub mention; a ZERO WIDTH SPACE after `@` does.

Contexts:

* `md_text`, `md_cell`, `code_block`, `inline_code`: Markdown context only, i.e. not on a
  line that starts with an HTML tag such as `<summary>` (that line is a raw HTML block,
  where Markdown escapes show literally and code spans are not code).
* `html_text`: inside raw HTML such as `<summary>…</summary>` or an attribute value.
* `code_block` must never be placed inside `<pre>`, `<script>`, `<style>` or
  `<textarea>`: those HTML blocks do not end at a blank line.
"""

from __future__ import annotations

import re

from markupsafe import Markup

ZWSP = "\u200b"

DEFAULT_TEXT_LIMIT = 2_000
DEFAULT_CELL_LIMIT = 300
DEFAULT_CODE_LIMIT = 10_000
DEFAULT_INLINE_CODE_LIMIT = 200

# C0 controls except tab and newline, DEL, and the bidi embedding/override/isolate controls
# ("Trojan Source"), which could make text read as something else, e.g. a fake "passed".
_INVISIBLE_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"\r\n?")
_LEADING_INDENT = re.compile(r"^[ \t]+", re.MULTILINE)
_ORDERED_LIST_START = re.compile(r"^(\d+)\.", re.MULTILINE)
_SETEXT_UNDERLINE_START = re.compile(r"^=", re.MULTILINE)
_GH_REFERENCE = re.compile(r"(gh\\-)(?=\d)", re.IGNORECASE)
_GH_REFERENCE_HTML = re.compile(r"(gh-)(?=\d)", re.IGNORECASE)
_BACKTICK_RUN = re.compile(r"`+")
# What GFM's extended autolinks start from: `scheme://` (http, https, ftp) and `www.`.
_AUTOLINK_SCHEME = re.compile(r"(?=://)")
_AUTOLINK_WWW = re.compile(r"(www)(?=\.)", re.IGNORECASE)
_UNSAFE_INFO_CHARS = re.compile(r"[^\w+.#-]")
# (?!(?<=[ \t])[ \t]): no match starts inside a blank run, so long blank runs cost linear time.
_WHITESPACE_WITH_NEWLINE = re.compile(r"(?!(?<=[ \t])[ \t])[ \t]*\n\s*")

_MARKDOWN_METACHARACTERS = "\\`*_[](){}+-!|~$"

_MD_TEXT_TABLE = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "@": "@" + ZWSP,
        "#": "\\#" + ZWSP,
        **{char: "\\" + char for char in _MARKDOWN_METACHARACTERS},
    }
)

_HTML_TEXT_TABLE = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&#34;",
        "'": "&#39;",
        "@": "@" + ZWSP,
        "#": "#" + ZWSP,
    }
)


def md_text(value: object, limit: int | None = DEFAULT_TEXT_LIMIT) -> Markup:
    """Escape untrusted text for a Markdown paragraph; newlines are kept as soft breaks."""
    text, dropped = _prepare(value, limit)
    # Leading indentation could start an indented code block, where entities and
    # backslash escapes would show literally; a paragraph ignores it anyway.
    text = _LEADING_INDENT.sub("", text)
    return Markup(_escape_markdown(text) + _truncation_marker(dropped))


def md_cell(value: object, limit: int | None = DEFAULT_CELL_LIMIT) -> Markup:
    """Escape untrusted text for one table cell: one line, `|` escaped."""
    text, dropped = _prepare(value, limit)
    text = _flatten(text)
    return Markup(_escape_markdown(text) + _truncation_marker(dropped))


def html_text(value: object, limit: int | None = DEFAULT_TEXT_LIMIT) -> Markup:
    """Escape untrusted text for raw HTML (e.g. `<summary>`) or a quoted attribute value.

    Newlines are flattened because a blank line would end the HTML block.
    """
    text, dropped = _prepare(value, limit)
    text = _unlink(_flatten(text)).translate(_HTML_TEXT_TABLE)
    text = _GH_REFERENCE_HTML.sub(_insert_zwsp, text)
    return Markup(text + _truncation_marker(dropped))


def code_block(value: object, limit: int | None = DEFAULT_CODE_LIMIT, info: str = "") -> Markup:
    """A fenced code block that the content cannot close.

    Starts with a blank line: inside `<details>`, the HTML block must end before the fence
    or the fence is not parsed as Markdown.  No entity escaping: code does not decode them.
    """
    text, dropped = _prepare(value, limit)
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    body = text if not text or text.endswith("\n") else text + "\n"
    block = f"\n{fence}{_UNSAFE_INFO_CHARS.sub('', info)}\n{body}{fence}\n"
    marker = _truncation_marker(dropped)
    return Markup(block + (marker + "\n" if marker else ""))


def inline_code(
    value: object, limit: int | None = DEFAULT_INLINE_CODE_LIMIT, cell: bool = False
) -> Markup:
    """A code span for short values such as glob patterns; `cell=True` inside a table."""
    text, dropped = _prepare(value, limit)
    # A newline inside a span could start a block (a heading, a blank line) mid-span.
    text = _flatten(text)
    marker = _truncation_marker(dropped)
    if not text:
        return Markup(marker)
    if cell:
        text = text.replace("|", "\\|")
    fence = "`" * (_longest_backtick_run(text) + 1)
    if text[0] in "` " or text[-1] in "` ":
        # CommonMark strips one space from each side when both are present.
        text = f" {text} "
    return Markup(f"{fence}{text}{fence}{marker}")


def _prepare(value: object, limit: int | None) -> tuple[str, int]:
    """Stringify, normalise line breaks, drop invisible controls, truncate to `limit`."""
    text = "" if value is None else str(value)
    text = _INVISIBLE_CONTROLS.sub("", _LINE_BREAKS.sub("\n", text))
    if limit is None or len(text) <= limit:
        return text, 0
    return text[: max(limit, 0)], len(text) - max(limit, 0)


def _unlink(text: str) -> str:
    """Break bare URLs and `www.` links (e-mail addresses break at the `@` table entry)."""
    return _AUTOLINK_WWW.sub(_insert_zwsp, _AUTOLINK_SCHEME.sub(ZWSP, text))


def _escape_markdown(text: str) -> str:
    escaped = _unlink(text).translate(_MD_TEXT_TABLE)
    escaped = _ORDERED_LIST_START.sub(r"\1\\.", escaped)
    escaped = _SETEXT_UNDERLINE_START.sub(r"\\=", escaped)
    return _GH_REFERENCE.sub(_insert_zwsp, escaped)


def _insert_zwsp(match: re.Match[str]) -> str:
    return match.group(1) + ZWSP


def _flatten(text: str) -> str:
    return _WHITESPACE_WITH_NEWLINE.sub(" ", text)


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)


def _truncation_marker(dropped: int) -> str:
    if dropped <= 0:
        return ""
    unit = "character" if dropped == 1 else "characters"
    return f"… (truncated, {dropped:,} more {unit})"

"""Untrusted text must render inert in a PR comment: no mentions, links, HTML or structure."""

from __future__ import annotations

import re

import cmarkgfm
import cmarkgfm.cmark
import jinja2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jinja2.exceptions import SecurityError
from markupsafe import Markup

from turncheck.text.environment import make_environment, render_template, sandboxed_environment
from turncheck.text.markdown import (
    ZWSP,
    code_block,
    html_text,
    inline_code,
    md_cell,
    md_text,
)
from turncheck.text.money import pct, signed_int, signed_usd, usd

HOSTILE_HTML = "</details><!-- hidden"

# Text without what the escapers drop or normalise (controls, CR, bidi format characters).
clean_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cc", "Cf"])
    | st.sampled_from("\n\t`~|<>@#&-"),
)
any_text = st.text(alphabet=st.characters(codec="utf-8"))


def fenced_parts(block: str) -> tuple[str, str, str]:
    """Split a `code_block` result into (opening fence line, content, closing fence)."""
    assert block.startswith("\n"), "a blank line must end any HTML block before the fence"
    lines = block[1:].split("\n")
    opening = lines[0]
    fence = re.match(r"`+", opening)
    assert fence is not None
    for index, line in enumerate(lines[1:], start=1):
        if is_closing_fence(line, len(fence.group())):
            return opening, "".join(f"{text}\n" for text in lines[1:index]), line
    raise AssertionError("unclosed code block")


def is_closing_fence(line: str, length: int) -> bool:
    """CommonMark: up to 3 spaces, at least `length` backticks, then only spaces/tabs."""
    return re.fullmatch(rf" {{0,3}}`{{{length},}}[ \t]*", line) is not None


# --- md_text ---------------------------------------------------------------------------


@pytest.mark.parametrize("mention", ["@user", "@org/team", "ping @octocat please"])
def test_md_text_breaks_mentions(mention: str) -> None:
    rendered = md_text(mention)
    assert re.search(r"@\w", rendered) is None
    assert "@" + ZWSP in rendered


@pytest.mark.parametrize("reference", ["#1", "see #123", "owner/repo#1", "GH-123", "gh-7"])
def test_md_text_breaks_issue_references(reference: str) -> None:
    rendered = md_text(reference)
    assert re.search(r"#\d", rendered) is None
    assert re.search(r"gh\\?-\d", rendered, re.IGNORECASE) is None


def test_md_text_html_becomes_entities() -> None:
    rendered = md_text(HOSTILE_HTML)
    assert "<" not in rendered and ">" not in rendered
    assert rendered.startswith("&lt;/details&gt;&lt;")


def test_md_text_escapes_entities_so_encoded_mentions_stay_text() -> None:
    assert md_text("&#64;user") == "&amp;\\#" + ZWSP + "64;user"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("# heading", "\\#" + ZWSP + " heading"),
        ("- item", "\\- item"),
        ("1. item", "1\\. item"),
        ("> quote", "&gt; quote"),
        ("text\n===", "text\n\\==="),
        ("[link](https://x)", "\\[link\\]\\(https" + ZWSP + "://x\\)"),
        ("![img](x)", "\\!\\[img\\]\\(x\\)"),
        ("**bold** _it_ ~~s~~", "\\*\\*bold\\*\\* \\_it\\_ \\~\\~s\\~\\~"),
        ("a | b", "a \\| b"),
        ("```", "\\`\\`\\`"),
        ("back\\slash", "back\\\\slash"),
        ("    indented code", "indented code"),
    ],
)
def test_md_text_escapes_markdown_structure(source: str, expected: str) -> None:
    assert md_text(source) == expected


def test_md_text_truncates_with_marker() -> None:
    rendered = md_text("x" * 100_000, limit=1_000)
    assert rendered == "x" * 1_000 + "… (truncated, 99,000 more characters)"


def test_md_text_none_is_empty_and_objects_are_stringified() -> None:
    assert md_text(None) == ""
    assert md_text(42) == "42"


def test_md_text_drops_bidi_overrides() -> None:
    assert md_text("ok\u202edeliaf") == "okdeliaf"


def test_md_text_returns_markup() -> None:
    assert isinstance(md_text("x"), Markup)


@given(any_text)
def test_md_text_property_no_raw_html_or_live_mentions(text: str) -> None:
    rendered = md_text(text)
    assert "<" not in rendered
    assert re.search(r"@(?!\u200b)", rendered) is None
    assert re.search(r"#(?!\u200b)", rendered) is None


LINKY = [
    "https://evil.example/x", "HTTPS://EVIL.EXAMPLE", "ftp://evil.example/f",
    "www.evil.example/x", "(www.evil.example)", "*https://evil.example*",
    "user@evil.example", "mailto:user@evil.example", "xmpp:user@evil.example",
    "x_https://evil.example", "see <https://evil.example>",
]


def gfm(markdown: str) -> str:
    """GitHub's renderer: cmark-gfm with the GFM extensions, raw HTML kept."""
    return cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE)


@pytest.mark.parametrize("text", LINKY)
def test_bare_urls_www_links_and_addresses_do_not_autolink(text: str) -> None:
    assert "<a " in gfm(text)  # the renderer links the raw text
    for escaped in (md_text(text), md_cell(text)):
        html = gfm(f"Answer: {escaped}")
        assert "<a " not in html, html
        assert text.replace("<", "&lt;").replace(">", "&gt;") in html.replace(ZWSP, "")
    summary = gfm(f"<details><summary>{html_text(text)}</summary>\n\nx\n</details>")
    assert "<a " not in summary


@given(any_text)
def test_md_text_property_never_autolinks(text: str) -> None:
    assert "<a " not in gfm(md_text(text, limit=None) + " " + md_cell(text, limit=None))


# --- md_cell ---------------------------------------------------------------------------


def test_md_cell_escapes_pipe_and_flattens_newlines() -> None:
    assert md_cell("a | b\r\nc\n\nd") == "a \\| b c d"


def test_md_cell_hostile_html_and_mentions() -> None:
    rendered = md_cell(HOSTILE_HTML + " @org/team #1")
    assert "<" not in rendered
    assert "@" + ZWSP + "org" in rendered
    assert "#" + ZWSP + "1" in rendered


def test_md_cell_truncates() -> None:
    assert md_cell("y" * 500, limit=10) == "y" * 10 + "… (truncated, 490 more characters)"


@given(any_text)
def test_md_cell_property_single_line_and_pipes_escaped(text: str) -> None:
    rendered = md_cell(text)
    assert "\n" not in rendered and "\r" not in rendered
    assert re.search(r"(?<!\\)\|", rendered) is None
    assert "<" not in rendered


# --- code_block ------------------------------------------------------------------------


def test_code_block_keeps_html_raw_inside_fence() -> None:
    opening, content, _ = fenced_parts(code_block(HOSTILE_HTML))
    assert opening == "```"
    assert content == HOSTILE_HTML + "\n"


def test_code_block_triple_backticks_cannot_close_it() -> None:
    source = "before\n```\n@user </details>\n```\nafter"
    opening, content, closing = fenced_parts(code_block(source, info="python"))
    assert opening == "````python"
    assert content == source + "\n"
    assert closing == "````"


def test_code_block_fence_outgrows_longest_backtick_run() -> None:
    opening, content, _ = fenced_parts(code_block("x ````````` y"))
    assert opening == "`" * 10
    assert content == "x ````````` y\n"


def test_code_block_info_string_cannot_carry_backticks_or_spaces() -> None:
    opening, _, _ = fenced_parts(code_block("x", info="py`` <b>"))
    assert opening == "```pyb"


def test_code_block_truncation_marker_is_outside_fence() -> None:
    block = code_block("z" * 100_000, limit=50)
    _, content, _ = fenced_parts(block)
    assert content == "z" * 50 + "\n"
    assert block.endswith("```\n… (truncated, 99,950 more characters)\n")


def test_code_block_of_none_is_an_empty_block() -> None:
    assert code_block(None) == "\n```\n```\n"


@given(clean_text)
def test_code_block_property_content_survives_between_fences(text: str) -> None:
    opening, content, closing = fenced_parts(code_block(text, limit=None))
    expected = text if not text or text.endswith("\n") else text + "\n"
    assert content == expected
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    assert len(opening) > longest and len(closing) > longest


@given(any_text)
def test_code_block_property_fence_longer_than_any_run(text: str) -> None:
    block = code_block(text, limit=None)
    opening, _, _ = fenced_parts(block)
    longest = max((len(run) for run in re.findall(r"`+", block[len(opening) + 1 :])), default=0)
    assert longest == len(opening)  # only the fences themselves reach that length


# --- inline_code and html_text ---------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("src/**/*.yaml", "`src/**/*.yaml`"),
        ("a`b", "``a`b``"),
        ("`x`", "`` `x` ``"),
        ("a\n\n# b", "`a # b`"),
        ("", ""),
    ],
)
def test_inline_code_dynamic_fence(source: str, expected: str) -> None:
    assert inline_code(source) == expected


def test_inline_code_in_table_cell_escapes_pipe() -> None:
    assert inline_code("a|b", cell=True) == "`a\\|b`"


def test_html_text_for_summary_elements() -> None:
    rendered = html_text('</summary>\n\n"@org/team" #1')
    assert rendered == "&lt;/summary&gt; &#34;@" + ZWSP + "org/team&#34; #" + ZWSP + "1"


# --- environment -----------------------------------------------------------------------


def dict_environment(**templates: str) -> jinja2.Environment:
    return make_environment(loader=jinja2.DictLoader(templates))


def test_environment_autoescapes_unfiltered_values() -> None:
    env = dict_environment(t="{{ value }}")
    assert render_template(env, "t", value=HOSTILE_HTML) == "&lt;/details&gt;&lt;!-- hidden"


def test_environment_filters_are_not_double_escaped() -> None:
    env = dict_environment(t="{{ value|md_text }}|{{ value|code_block }}")
    rendered = render_template(env, "t", value="a<b")
    assert rendered == "a&lt;b|\n```\na<b\n```\n"


def test_environment_undefined_variable_is_an_error() -> None:
    env = dict_environment(t="{{ missing }}")
    with pytest.raises(jinja2.UndefinedError):
        render_template(env, "t")


def test_environment_code_block_inside_details() -> None:
    env = dict_environment(
        t="<details><summary>{{ name|html_text }}</summary>\n{{ output|code_block }}</details>\n"
    )
    rendered = render_template(env, "t", name="turn 1", output="</details><!--")
    assert rendered == (
        "<details><summary>turn 1</summary>\n\n```\n</details><!--\n```\n</details>\n"
    )


def test_default_environment_loads_package_templates_folder() -> None:
    env = make_environment()
    assert {"md_text", "md_cell", "code_block", "inline_code", "usd", "pct"} <= set(env.filters)


def test_sandboxed_environment_blocks_unsafe_access() -> None:
    env = sandboxed_environment()
    with pytest.raises(SecurityError):
        env.from_string("{{ ''.__class__.__mro__ }}").render()
    with pytest.raises(SecurityError):
        env.from_string("{{ items.append(1) }}").render(items=[])
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
    assert env.from_string("{{ x|md_cell }}").render(x="a|b") == "a\\|b"


# --- number filters --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "unpriced"),
        (0.0, "$0"),
        (0.000123, "$0.000123"),
        (0.0512, "$0.0512"),
        (0.5, "$0.500"),
        (1.234, "$1.23"),
        (1234.5, "$1,234.50"),
        (-0.25, "−$0.250"),
        (0.00326, "$0.00326"),
        (0.0031, "$0.00310"),
    ],
)
def test_usd(value: float | None, expected: str) -> None:
    assert usd(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "n/a"), (0.0012, "+$0.00120"), (-0.0012, "−$0.00120"), (0.0, "±$0"),
     (2.5, "+$2.50")],
)
def test_signed_usd(value: float | None, expected: str) -> None:
    assert signed_usd(value) == expected


@pytest.mark.parametrize(("value", "expected"), [(12, "+12"), (-3, "−3"), (0, "0"), (None, "n/a")])
def test_signed_int(value: int | None, expected: str) -> None:
    assert signed_int(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "n/a"), (0.125, "+12.5%"), (-0.5, "−50.0%"), (0.0, "0%"), (float("inf"), "n/a")],
)
def test_pct(value: float | None, expected: str) -> None:
    assert pct(value) == expected

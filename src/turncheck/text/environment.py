"""Jinja environments for the PR comment and step summary, and their filters.

`autoescape=True` regardless of the template's file name (`select_autoescape` would skip
`.md.j2`), so a value that misses its Markdown filter is still HTML-escaped.  Untrusted
text should still go through `md_text`, `md_cell`, `code_block`, `inline_code` or
`html_text`: HTML escaping alone does not stop mentions or Markdown injection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jinja2

from turncheck.text.markdown import code_block, html_text, inline_code, md_cell, md_text
from turncheck.text.money import pct, signed_int, signed_usd, usd
from turncheck.text.template_limits import BoundedSandbox, bounded_filters


def make_environment(
    package_templates: str = "turncheck.render",
    folder: str = "templates",
    *,
    loader: jinja2.BaseLoader | None = None,
) -> jinja2.Environment:
    """The environment for our own templates; `loader` replaces the package loader."""
    env = jinja2.Environment(
        loader=loader if loader is not None else jinja2.PackageLoader(package_templates, folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


def sandboxed_environment(*, loader: jinja2.BaseLoader | None = None) -> jinja2.Environment:
    """An environment for user-supplied templates: sandboxed, bounded, strict, not autoescaped.

    The work of one rendering is bounded (`template_limits`). Callers that render into
    Markdown must pass untrusted values through the filters.
    """
    env = BoundedSandbox(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters.update(bounded_filters(FILTERS))
    return env


def render_template(env: jinja2.Environment, name: str, /, **context: Any) -> str:
    # Positional-only, so `name` and `env` stay usable as template variables.
    return env.get_template(name).render(**context)


FILTERS: dict[str, Callable[..., Any]] = {
    "md_text": md_text,
    "md_cell": md_cell,
    "html_text": html_text,
    "code_block": code_block,
    "inline_code": inline_code,
    "usd": usd,
    "signed_usd": signed_usd,
    "signed_int": signed_int,
    "pct": pct,
}

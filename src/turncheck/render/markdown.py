"""Markdown escaping, kept in `turncheck.text.markdown` (every layer uses it)."""

from turncheck.text.markdown import *  # noqa: F403

"""The Jinja environments, kept in `turncheck.text.environment` (every layer uses the
sandboxed one)."""

from turncheck.text.environment import *  # noqa: F403

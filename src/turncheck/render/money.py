"""Money formatting, kept in `turncheck.text.money` (every layer uses it)."""

from turncheck.text.money import *  # noqa: F403

"""A count with its noun in the right number: `1 eval`, `2 evals`, `1 protocol case`."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, the plural (`noun` + "s" unless given) for any count but 1."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"

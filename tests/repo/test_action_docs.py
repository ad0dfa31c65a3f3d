"""docs/action.md's inputs table against action.yml: every input documented, with its
default (issue 25)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FALLBACKS = ("config", "unset", "the ")
"""How a default that action.yml leaves empty is described: the configuration's value,
nothing, or what the action picks (`the PR's base`)."""


def action_inputs() -> dict[str, str]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}


def documented_inputs(text: str) -> dict[str, tuple[str, str]]:
    """Input name → (default cell, meaning cell) of the `## Inputs` table."""
    section = text.split("## Inputs", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        names, default, meaning = (cell.strip() for cell in line.strip("|").split("|", 2))
        for name in re.findall(r"`([a-z][a-z-]*)`", names):
            rows[name] = (default, meaning)
    return rows


def problems(inputs: dict[str, str], rows: dict[str, tuple[str, str]]) -> list[str]:
    found = [f"{name}: not in the table" for name in inputs if name not in rows]
    found += [f"{name}: in the table, not in action.yml" for name in rows if name not in inputs]
    for name, default in inputs.items():
        if name not in rows:
            continue
        cell = rows[name][0]
        if default and cell != f"`{default}`":
            found.append(f"{name}: default {cell!r}, action.yml says {default!r}")
        if not default and not cell.startswith(FALLBACKS):
            found.append(f"{name}: default {cell!r}, but action.yml has none")
    return found


def test_every_input_of_action_yml_is_documented_with_its_default() -> None:
    text = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    assert problems(action_inputs(), documented_inputs(text)) == []


def test_every_mode_is_documented() -> None:
    text = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    meaning = documented_inputs(text)["mode"][1]
    for mode in ("replay", "record", "live", "estimate"):
        assert f"`{mode}`" in meaning


def test_a_missing_input_or_a_wrong_default_is_caught() -> None:
    rows = {"mode": ("`live`", ""), "repeat": ("`3`", "")}
    assert problems({"mode": "replay", "repeat": "", "watch": ""}, rows) == [
        "watch: not in the table",
        "mode: default '`live`', action.yml says 'replay'",
        "repeat: default '`3`', but action.yml has none",
    ]

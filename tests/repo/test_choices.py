"""The provider table, the modes and the target kinds are the one source of what the
docs, the CLI and the suite format list: a provider added to the table shows up in each,
and one left out of any of them fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import get_args

import pytest

from turncheck.choices import (
    MODES,
    PROVIDER_NAMES,
    PROVIDERS,
    TARGET_KINDS,
    provider_table_markdown,
)
from turncheck.cli.main import build_parser
from turncheck.formats.suite import Metadata
from turncheck.providers.factory import builder_of

DOCS = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
_TABLE = re.compile(r"<!-- providers-table:[^\n]*-->\n(.*?)\n<!-- /providers-table -->", re.S)


def test_the_docs_table_is_the_provider_table() -> None:
    shown = _TABLE.search(DOCS.read_text(encoding="utf-8"))
    assert shown is not None, "docs/providers.md lost its generated providers table"
    assert shown.group(1) == provider_table_markdown()


def test_every_name_has_one_entry_and_a_builder() -> None:
    assert tuple(PROVIDERS) == PROVIDER_NAMES
    for spec in PROVIDERS.values():
        assert callable(builder_of(spec))


def _choices(parser: argparse.ArgumentParser, command: str, option: str) -> tuple[str, ...]:
    sub = next(action for action in parser._actions
               if isinstance(action, argparse._SubParsersAction)).choices[command]
    found = next(action for action in sub._actions if option in action.option_strings)
    assert found.choices is not None
    return tuple(found.choices)


@pytest.mark.parametrize("command", ["run", "record", "estimate", "diff"])
def test_cli_provider_choices_are_the_table(command: str) -> None:
    assert _choices(build_parser(), command, "--provider") == PROVIDER_NAMES


def test_cli_modes_and_target_kinds_are_the_lists() -> None:
    parser = build_parser()
    assert _choices(parser, "run", "--mode") == MODES
    assert _choices(parser, "init", "--target") == TARGET_KINDS


def test_suite_metadata_accepts_exactly_the_table_names() -> None:
    field = Metadata.model_fields["provider"].annotation
    assert set(get_args(get_args(field)[0])) == set(PROVIDER_NAMES)

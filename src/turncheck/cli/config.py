"""The project configuration file (`turncheck.config`) applied to parsed CLI options.

An option takes the file's value when the user did not give it: its argparse
default is `None` and its `dest` is the config field's name (or the name in
`CLI_DESTS`). What neither sets gets the built-in default from `ProjectConfig`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from turncheck.config import CLI_DESTS, LoadedConfig, ProjectConfig, load_config


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", dest="config_file", type=Path, metavar="FILE",
        help="configuration file (default: turncheck.toml or [tool.turncheck] in "
        "pyproject.toml, in this directory or the nearest parent up to the repository root)",
    )


def apply_project_config(args: argparse.Namespace) -> LoadedConfig:
    """Fill the options the user left unset from the configuration; raises ConfigError."""
    loaded = load_config(Path.cwd(), explicit=args.config_file)
    for name in ProjectConfig.model_fields:
        dest = CLI_DESTS.get(name, name)
        if not hasattr(args, dest) or getattr(args, dest) not in (None, []):
            continue
        setattr(args, dest, _value(loaded, name))
    return loaded


def _value(loaded: LoadedConfig, name: str) -> object:
    value = getattr(loaded.config, name)
    if name == "paths" and loaded.directory is not None and name in loaded.keys_set():
        # Paths in the file are relative to the file's directory.
        return [os.path.relpath(loaded.directory / path) for path in value]
    return value

"""Project configuration: `turncheck.toml`, or `[tool.turncheck]` in `pyproject.toml`.

Where it is found: from the starting directory (the current directory for the
CLI, the action's `working-directory`) upwards, stopping after the repository
root (the first directory that holds `.git`). In each directory a
`turncheck.toml` wins over a `pyproject.toml` with a `[tool.turncheck]` table;
a `pyproject.toml` without that table is skipped. The CLI's `--config FILE`
names the file instead.

Precedence, highest first: a CLI flag or a non-empty action input, the file,
turncheck's built-in default.

The file spells keys like the action inputs (`max-depth`, `fail-on`). Adding a
key is one field in `ProjectConfig` (snake_case; the file and the action input
use the kebab-case form). The CLI fills an option from it when the option's
argparse `dest` is the field name (or listed in `CLI_DESTS`) and its argparse
default is `None`; the action uses it as the default of the input of the same
kebab-case name. Unknown keys and bad values are `file:line:col` diagnostics.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from turncheck.diagnostics import Diagnostic, error, sort_key
from turncheck.formats.discovery import DEFAULT_SAMPLE_GLOBS, DEFAULT_SUITE_GLOBS, Globs
from turncheck.formats.files import read_text_bounded, refusal_reason
from turncheck.formats.nesting import toml_structure_problem
from turncheck.formats.suite import MAX_DEPTH
from turncheck.formats.toml_positions import TOML_ERROR_POSITION, TomlLocator
from turncheck.text.suggest import did_you_mean, quoted

CONFIG_FILE = "turncheck.toml"
PYPROJECT_FILE = "pyproject.toml"
MAX_CONCURRENCY = 256

Number = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Percent = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]
Globs_ = list[StrictStr]


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class ProjectConfig(BaseModel):
    """Every key the configuration file may hold, with turncheck's built-in defaults."""

    model_config = ConfigDict(extra="forbid", alias_generator=_kebab, populate_by_name=True,
                              frozen=True, defer_build=True)

    paths: list[StrictStr] = Field(default_factory=lambda: ["."])
    suite_globs: Globs_ = Field(default_factory=lambda: list(DEFAULT_SUITE_GLOBS))
    sample_globs: Globs_ = Field(default_factory=lambda: list(DEFAULT_SAMPLE_GLOBS))
    exclude_globs: Globs_ = Field(default_factory=list)
    concurrency: Annotated[StrictInt, Field(ge=1, le=MAX_CONCURRENCY)] = 8
    max_depth: Annotated[StrictInt, Field(ge=0, le=MAX_DEPTH)] = MAX_DEPTH
    fail_on: StrictStr | list[StrictStr] | None = None
    cost_threshold_percent: Number | None = None
    cost_threshold_usd: Number | None = None
    latency_threshold_percent: Number | None = None
    min_agreement: Percent | None = None
    max_agreement_drop: Percent | None = None
    watch: list[StrictStr] = Field(default_factory=list)
    max_cost_usd: Number | None = None
    max_live_tokens: Annotated[StrictInt, Field(ge=0)] | None = None
    # Keys added by other features go here, one line each, for example:
    # repeat: Annotated[StrictInt, Field(ge=1)] = 1

    @field_validator("fail_on")
    @classmethod
    def _known_conditions(cls, value: str | list[str] | None) -> str | None:
        if value is None:
            return None
        # Imported here: the comparison code is not needed to start `validate`.
        from turncheck.compare.policy import parse_fail_on

        text = value if isinstance(value, str) else ",".join(value)
        parse_fail_on(text)  # raises ValueError naming the unknown condition
        return text

    @property
    def globs(self) -> Globs:
        return Globs(suites=tuple(self.suite_globs), samples=tuple(self.sample_globs),
                     excludes=tuple(self.exclude_globs))


# CLI options whose argparse dest differs from the field name.
CLI_DESTS = {"suite_globs": "suite_glob", "sample_globs": "sample_glob",
             "exclude_globs": "exclude_glob"}
# Keys that are not action inputs (the action has `working-directory` instead).
CLI_ONLY = frozenset({"paths"})


class ConfigError(Exception):
    """The configuration file cannot be used; `diagnostics` says where and why."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("\n".join(d.compiler_style() for d in diagnostics))
        self.diagnostics = diagnostics


@dataclass(frozen=True)
class LoadedConfig:
    config: ProjectConfig
    path: Path | None = None  # None: no file, built-in defaults

    @property
    def directory(self) -> Path | None:
        return None if self.path is None else self.path.parent

    def keys_set(self) -> set[str]:
        return set(self.config.model_fields_set)


def find_config(start: Path, stop: Path | None = None) -> Path | None:
    """The configuration file that applies in `start`, if any (see the module docstring);
    never looks above `stop`."""
    top = None if stop is None else stop.resolve()
    for directory in (start.resolve(), *start.resolve().parents):
        if top is not None and directory != top and top not in directory.parents:
            return None
        own = directory / CONFIG_FILE
        if own.is_file():
            return own
        pyproject = directory / PYPROJECT_FILE
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject
        if (directory / ".git").exists():
            return None
    return None


def _has_tool_table(pyproject: Path) -> bool:
    try:
        data = tomllib.loads(read_text_bounded(pyproject))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError, ValueError):
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and "turncheck" in tool


def load_config(start: Path, explicit: Path | None = None,
                stop: Path | None = None) -> LoadedConfig:
    """The configuration for `start` (or the file `explicit`); raises ConfigError."""
    path = explicit if explicit is not None else find_config(start, stop)
    if path is None:
        return LoadedConfig(ProjectConfig())
    return LoadedConfig(read_config(path, display=_display(path, stop or Path.cwd())), path)


def _display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def read_config(path: Path, display: str) -> ProjectConfig:
    try:
        text = read_text_bounded(path)  # a regular file, not a symlink out of its directory
    except (OSError, UnicodeDecodeError) as exc:
        reason = refusal_reason(exc) if isinstance(exc, OSError) else str(exc)
        problem = error(display, 1, 1, "config", f"cannot read the file: {reason}")
        raise ConfigError([problem]) from None
    return parse_config(text, display, pyproject=path.name == PYPROJECT_FILE)


def parse_config(text: str, display: str, pyproject: bool = False) -> ProjectConfig:
    problem = toml_structure_problem(text)
    if problem is not None:
        raise ConfigError([error(display, problem.line, problem.column, "toml-structure",
                                 problem.message)])
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise ConfigError([_syntax(display, str(exc))]) from None
    except RecursionError:
        raise ConfigError([_syntax(display, "nested too deeply")]) from None
    prefix: tuple[str, ...] = ("tool", "turncheck") if pyproject else ()
    table: Any = data
    for key in prefix:
        table = table.get(key, {}) if isinstance(table, dict) else {}
    try:
        return ProjectConfig.model_validate(table)
    except ValidationError as exc:
        locator = TomlLocator(text)
        problems = [_problem(display, locator, prefix, problem) for problem in exc.errors()]
        raise ConfigError(sorted(problems, key=sort_key)) from None


def _syntax(display: str, message: str) -> Diagnostic:
    found = TOML_ERROR_POSITION.fullmatch(message)
    if found is None:
        return error(display, 1, 1, "toml-syntax", f"invalid TOML: {message}")
    return error(display, int(found["line"]), int(found["column"]), "toml-syntax",
                 f"invalid TOML: {found['reason']}")


def _problem(display: str, locator: TomlLocator, prefix: tuple[str, ...],
             problem: Mapping[str, Any]) -> Diagnostic:
    location = tuple(problem["loc"])
    key = str(location[0]) if location else ""
    line, column = locator.locate((*prefix, *location))
    if problem["type"] == "extra_forbidden":
        known = sorted(known_keys())
        return error(display, line, column, "unknown-key",
                     f"unknown key {quoted(key)}{did_you_mean(_kebab(key), known)}; "
                     f"known keys: {', '.join(known)}")
    message = str(problem["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    return error(display, line, column, "invalid-config", f"{key}: {message}")


def known_keys() -> set[str]:
    return {_kebab(name) for name in ProjectConfig.model_fields}


def as_input_defaults(loaded: LoadedConfig) -> dict[str, str]:
    """The keys the file sets, as action input values (`INPUT_<NAME>` strings)."""
    values: dict[str, str] = {}
    for name in loaded.keys_set() - CLI_ONLY:
        value = getattr(loaded.config, name)
        if value is None:
            continue
        if isinstance(value, list):
            text = "\n".join(str(item) for item in value)
        else:
            text = f"{value:g}" if isinstance(value, float) else str(value)
        values[_kebab(name)] = text
    return values

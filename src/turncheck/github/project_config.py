"""The project configuration file as defaults for the action's inputs.

A non-empty input wins; an empty one (the action.yml defaults of the inputs the
file may set are empty) takes the file's value, else turncheck's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from turncheck.config import ConfigError, as_input_defaults, load_config
from turncheck.github.workflow import annotation_command, log


def with_project_config(env: Mapping[str, str], workspace: Path) -> dict[str, str]:
    """`env` with `INPUT_*` defaults from the configuration file; raises ConfigError
    after printing its problems as annotations."""
    directory = Path(env.get("INPUT_WORKING-DIRECTORY", "").strip() or ".")
    if directory.is_absolute() or ".." in directory.parts:
        directory = Path(".")  # read_inputs reports the bad input
    try:
        loaded = load_config(workspace / directory, stop=workspace)
    except ConfigError as exc:
        for problem in exc.diagnostics:
            log(annotation_command("error", problem.message, file=problem.file,
                                   line=problem.line, col=problem.column,
                                   title="turncheck: configuration"))
        raise
    merged = dict(env)
    for name, value in as_input_defaults(loaded).items():
        key = f"INPUT_{name.upper()}"
        if not env.get(key, "").strip():
            merged[key] = value
    if loaded.path is not None:
        log(f"configuration: {loaded.path.relative_to(workspace.resolve()).as_posix()}")
    return merged

"""Protocol suites' cases files (`cases: {file: …}`) in pull requests.

A cases file is part of its suite: changing it changes the suite's results, and the
base run needs the base version of it beside the base version of the suite.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from turncheck.formats.protocol_loader import CASE_FILE_SUFFIXES
from turncheck.formats.yamlsource import load_yaml
from turncheck.github.changes import SuiteChanges
from turncheck.github.client import ChangedFile


def cases_file_of(suite: Path) -> str | None:
    """The cases file `suite` names, relative to the suite's directory (posix), or None.

    Never raises: an unreadable or invalid suite names none (validation reports it).
    """
    try:
        text = suite.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    data = load_yaml(text, suite.name).data
    cases = data.get("cases") if isinstance(data, dict) and "turns" in data else None
    value = cases.get("file") if isinstance(cases, dict) else None
    if not isinstance(value, str):
        return None
    relative = PurePosixPath(value)
    if relative.is_absolute() or ".." in relative.parts or "\\" in value \
            or relative.suffix not in CASE_FILE_SUFFIXES:
        return None
    return relative.as_posix()


def data_files(workdir: Path, suites: Iterable[str]) -> dict[str, str]:
    """Cases file → suite, both relative to `workdir`, for the protocol suites among `suites`."""
    found: dict[str, str] = {}
    for suite in suites:
        relative = cases_file_of(workdir / suite)
        if relative is not None:
            found[(PurePosixPath(suite).parent / relative).as_posix()] = suite
    return found


def add_changed_data_files(changes: SuiteChanges, files: Iterable[ChangedFile],
                           working_directory: str, owners: dict[str, str]) -> None:
    """Run a suite at head and base when only its cases file changed."""
    root = PurePosixPath(working_directory)
    for changed in files:
        path = PurePosixPath(changed.path)
        try:
            relative = path.relative_to(root).as_posix() if str(root) not in ("", ".") \
                else path.as_posix()
        except ValueError:
            continue
        suite = owners.get(relative)
        if suite is None:
            continue
        if suite not in changes.head_suites:
            changes.head_suites.append(suite)
        if suite not in changes.base_suites and changed.status != "added":
            changes.base_suites.append(suite)

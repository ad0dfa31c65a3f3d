"""GitHub Actions runner I/O: workflow commands, `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`.

A log line that starts with `::` runs as a workflow command, so untrusted text (model
output, file content) must only be printed through `print_untrusted` / `StopCommands`,
and every command this module builds escapes its data and properties.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Literal, TextIO

AnnotationLevel = Literal["error", "warning", "notice"]

STEP_SUMMARY_LIMIT_BYTES = 1024 * 1024
STEP_SUMMARY_TRUNCATION_NOTE = (
    "\n\n… truncated to fit GitHub's 1 MiB step-summary limit; "
    "the full report is in the JSON report\n"
)

_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def log(message: str, stream: TextIO | None = None) -> None:
    """A line of the job's log (trusted text only: see `print_untrusted`)."""
    print(message, file=stream or sys.stdout, flush=True)


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation_command(
    level: AnnotationLevel,
    message: str,
    file: str | None = None,
    line: int | None = None,
    col: int | None = None,
    title: str | None = None,
) -> str:
    """`::error file=…,line=…,col=…,title=…::message`, with only the properties given."""
    properties = {"file": file, "line": line, "col": col, "title": title}
    given = ",".join(
        f"{name}={escape_property(str(value))}"
        for name, value in properties.items()
        if value is not None
    )
    separator = " " if given else ""
    return f"::{level}{separator}{given}::{escape_data(message)}"


def add_mask(value: str) -> list[str]:
    """One `::add-mask::` command per non-blank line: the runner masks line by line."""
    lines = dict.fromkeys(line.strip() for line in value.splitlines())
    return [f"::add-mask::{escape_data(line)}" for line in lines if line]


class StopCommands:
    """Suspends workflow-command processing while untrusted text is written.

    The stream must be at the start of a line on entry, or the stop command is not seen.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        # Random per use, so the untrusted text cannot know the line that resumes commands.
        self.token = uuid.uuid4().hex

    def __enter__(self) -> StopCommands:
        self.stream.write(f"::stop-commands::{self.token}\n")
        return self

    def write(self, text: str) -> None:
        self.stream.write(text)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stream.write(f"::{self.token}::\n")
        self.stream.flush()


def print_untrusted(text: str, stream: TextIO | None = None) -> None:
    """Print `text` so that none of its lines can run as a workflow command."""
    with StopCommands(stream) as stopped:
        # The resume line only works at the start of a line.
        stopped.write(text if text.endswith("\n") else text + "\n")


@contextmanager
def group(title: str, stream: TextIO | None = None) -> Iterator[None]:
    """A collapsible `::group::` in the log."""
    out = stream if stream is not None else sys.stdout
    out.write(f"::group::{escape_data(title)}\n")
    try:
        yield
    finally:
        out.write("::endgroup::\n")
        out.flush()


def write_outputs(path: str | os.PathLike[str], outputs: Mapping[str, str]) -> None:
    """Append step outputs to `$GITHUB_OUTPUT`, always in the `name<<delimiter` form."""
    for name in outputs:
        if not _OUTPUT_NAME.fullmatch(name):
            raise ValueError(f"invalid output name: {name!r}")
    entries = [_heredoc_entry(name, value) for name, value in outputs.items()]
    with open(path, "a", encoding="utf-8", newline="") as file:
        file.write("".join(entries))


def _heredoc_entry(name: str, value: str) -> str:
    delimiter = _new_delimiter()
    # Stricter than "not a line of the value", as in actions/toolkit.
    while delimiter in value:
        delimiter = _new_delimiter()
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def _new_delimiter() -> str:
    return f"ghadelimiter_{uuid.uuid4()}"


def append_step_summary(path: str | os.PathLike[str], markdown: str) -> bool:
    """Append to `$GITHUB_STEP_SUMMARY`, keeping the step's file within 1 MiB.

    Returns True when the Markdown had to be truncated (at a line boundary, with a note).
    """
    budget = STEP_SUMMARY_LIMIT_BYTES - _file_size(path)
    data = markdown.encode("utf-8")
    truncated = len(data) > budget
    if truncated:
        data = _truncate_to_budget(data, budget)
    with open(path, "ab") as file:
        file.write(data)
    return truncated


def _file_size(path: str | os.PathLike[str]) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def _truncate_to_budget(data: bytes, budget: int) -> bytes:
    note = STEP_SUMMARY_TRUNCATION_NOTE.encode("utf-8")
    room = budget - len(note)
    if room < 0:
        return b""
    cut = data.rfind(b"\n", 0, room)
    if cut >= 0:
        return data[: cut + 1] + note
    # No line break in range: cut at a character boundary instead.
    return data[:room].decode("utf-8", errors="ignore").encode("utf-8") + note

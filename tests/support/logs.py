"""Reading an Actions log the way the runner does."""

from __future__ import annotations

import re


def commands_in_log(log: str) -> list[str]:
    """The workflow commands the runner would execute: lines starting (after leading
    whitespace) with `::`, except between `::stop-commands::TOKEN` and `::TOKEN::`.

    Any of `\\r\\n`, `\\r` and `\\n` ends a line, so a command hidden after a bare
    carriage return is found too.
    """
    commands: list[str] = []
    stopped_by: str | None = None
    for raw in re.split(r"\r\n|\r|\n", log):
        line = raw.lstrip()
        if stopped_by is not None:
            if line == f"::{stopped_by}::":
                stopped_by = None
            continue
        stop = re.fullmatch(r"::stop-commands::(.+)", line)
        if stop:
            stopped_by = stop.group(1)
        elif line.startswith("::"):
            commands.append(line)
    return commands

"""Ending the processes an app left behind outside its process group (docs/targets.md,
"What an app can reach").

Stopping an app ends its process group. A process of the app's that moved to another
group or session (`setsid()`, `setpgid()`, a daemon's double fork) is not in it; with
turncheck the child subreaper of what it starts (`process.adopt_orphans`), such a process
is adopted by turncheck when its parent exits, instead of by init. So every process below
turncheck in a session other than turncheck's own is an app's: turncheck's own children
(git, say) stay in its session, and no process can join a session it did not start.
`end_escaped` kills them, except those still below an app that runs, and reaps the
adopted ones.

Linux only (`/proc`, `PR_SET_CHILD_SUBREAPER`). Elsewhere, or where the subreaper
cannot be set, a process whose parent exited belongs to init and is out of reach.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection, Iterator
from pathlib import Path

_PROC = Path("/proc")
SWEEP_ROUNDS = 50
"""Enough for a process that forks while being killed; each round kills what is left."""


def live_process_stats() -> Iterator[tuple[int, list[str]]]:
    """Linux: each process `/proc` lists that is not a zombie, with the fields of its
    `stat` after the command name (state, parent pid, group, session, ...)."""
    if not _PROC.is_dir():
        return
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and fields[0] != "Z":
            yield int(entry.name), fields


def _processes() -> dict[int, tuple[int, int]]:
    """Every process `/proc` lists that is not a zombie: pid → (parent pid, session)."""
    return {pid: (int(fields[1]), int(fields[3])) for pid, fields in live_process_stats()}


def escaped(spared: Collection[int] = ()) -> list[int]:
    """The processes below this one outside its session, but for the trees of `spared`
    (the apps still running)."""
    processes = _processes()
    if not processes:  # no /proc (macOS, Windows): nothing to find
        return []
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    me = os.getpid()
    own_session = os.getsid(0)
    found: list[int] = []
    waiting = [c for c in children.get(me, []) if processes[c][1] != own_session]
    while waiting:
        pid = waiting.pop()
        if pid in spared:
            continue
        found.append(pid)
        waiting.extend(children.get(pid, []))
    return found


def end_escaped(spared: Collection[int] = (), never_reap: Collection[int] = ()) -> int:
    """SIGKILL every escaped process (`escaped`), round after round until none is left;
    reap those turncheck adopted (not `never_reap`, the processes asyncio waits for).
    Returns how many were killed."""
    killed: set[int] = set()
    for _ in range(SWEEP_ROUNDS):
        found = escaped(spared)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed.update(found)
        time.sleep(0.005)  # SIGKILL is delivered, not waited for
    _reap(killed - set(never_reap))
    return len(killed)


def _reap(pids: Collection[int]) -> None:
    """Collect the exit of each adopted process (else it stays a zombie until turncheck
    exits); a process that is not turncheck's child is init's to reap."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            for _ in range(100):
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    break
                time.sleep(0.002)


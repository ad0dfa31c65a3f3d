"""Stopping an app does not wait for init to reap its killed processes: a zombie is not a
process left behind (an app started through `sh -c` in a container whose init does not
reap would otherwise hold every suite's end for the whole grace period)."""

from __future__ import annotations

import subprocess
import sys
import time

from turncheck.targets.process import _group_exists


def test_a_group_whose_only_process_is_a_zombie_is_gone() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    group = process.pid
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # exited, not reaped: a zombie
            with open(f"/proc/{group}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        assert not _group_exists(group)
    finally:
        process.wait()


def test_a_running_group_exists() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                               start_new_session=True)
    try:
        assert _group_exists(process.pid)
    finally:
        process.kill()
        process.wait()

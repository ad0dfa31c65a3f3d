"""One recorder per cassette at a time, across processes (`fcntl.flock`).

Two `turncheck record` runs on one cassette used to pay for the same calls twice and
keep only the last writer's file (80 calls paid, 40 kept). A recorder now takes this
lock before its first paid call and holds it until the cassette is saved and closed;
a second recorder waits, then reads what the first one saved and answers those
requests from it. Runs that only replay recorded answers never take the lock.

The lock file lives in a private per-user directory under the temporary directory
(named by a hash of the cassette's real path), not beside the cassette, so nothing
new appears in the repository. Where `fcntl` or that directory is unavailable,
recording goes on without the lock.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

POLL_SECONDS = 0.1
# Transports of one process share its hold on a cassette (two suites `x.eval.yaml` and
# `x.eval.yml` share a cassette): lock file name -> [descriptor, holders].
_held_here: dict[str, list[int]] = {}


class RecorderLock:
    def __init__(self, cassette: Path) -> None:
        digest = hashlib.sha256(str(cassette.resolve()).encode()).hexdigest()[:32]
        self._name = f"{digest}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    async def acquire(self) -> None:
        """Wait (polling, so a signal still stops the run) until this process holds it."""
        if self._fd is not None or fcntl is None:
            return
        shared = _held_here.get(self._name)
        if shared is not None:
            shared[1] += 1
            self._fd = shared[0]
            return
        fd = _open_lock_file(self._name)
        if fd is None:
            return
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                await asyncio.sleep(POLL_SECONDS)
                continue
            except OSError:
                os.close(fd)
                return
            self._fd = fd
            _held_here[self._name] = [fd, 1]
            return

    def __del__(self) -> None:
        self.release()  # a transport dropped without `close()` must not block others

    def release(self) -> None:
        if self._fd is None:
            return
        self._fd = None
        shared = _held_here[self._name]
        shared[1] -= 1
        if shared[1] == 0:
            del _held_here[self._name]
            os.close(shared[0])  # closing the descriptor releases the flock


def _open_lock_file(name: str) -> int | None:
    directory = Path(tempfile.gettempdir()) / f"turncheck-locks-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(directory)
        # Another user's directory or a symlink planted in a shared /tmp is not used.
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return None
        return os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None

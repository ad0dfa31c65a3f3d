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
            return

    def __del__(self) -> None:
        self.release()  # a transport dropped without `close()` must not block others

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor releases the flock


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

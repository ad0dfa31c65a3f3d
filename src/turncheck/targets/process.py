"""Starting and stopping the app (docs/targets.md).

The app runs in its own process group, in the suite's folder, with an environment built
from an allow-list: the system's basics (`PATH`, `HOME`, `LANG`, ...), the suite's `env`,
`PORT`, and the proxy's base URLs with placeholder keys. turncheck's own keys and
secrets, and every `GITHUB_*`/`ACTIONS_*`/`INPUT_*` variable, never reach it. Nor can the
app read them from turncheck's process: before the first app starts, turncheck makes
itself non-dumpable, so `/proc/<its pid>/environ` and `/mem` are closed to processes of
the same user. The whole group is
stopped at the end, on errors, on SIGTERM (the engine closes its sessions) and, as a
last resort, when the interpreter exits; so is every process the app moved out of its
group or session (`orphans.py`: turncheck is the child subreaper of what it starts).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import shlex
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from turncheck.providers.base import ProviderError
from turncheck.targets.orphans import end_escaped, live_process_stats

ALLOWED_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
               "TEMP", "TMP", "USER", "LOGNAME", "SHELL", "TERM", "PYTHONPATH", "VIRTUAL_ENV",
               "SYSTEMROOT", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_PATH")
"""The variables of turncheck's environment an app inherits; nothing else does."""
OUTPUT_TAIL_BYTES = 4_000
STOP_GRACE_S = 5.0
DRAIN_WAIT_S = 1.0
"""How long an exited app's last output may take to be read."""
READY_POLL_S = 0.05
_LIVE_GROUPS: set[int] = set()
_STARTED: set[int] = set()
"""Every app process started (asyncio waits for each; `end_escaped` must not)."""
_STARTING: list[object] = []
"""Apps being started: forked, not yet in `_LIVE_GROUPS`."""


class AppError(ProviderError):
    """The app could not be started, did not become ready, or died."""


PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
CONTAINER_CAPABILITIES = frozenset({0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31})
"""Docker's default capabilities (chown, dac_override, fowner, fsetid, kill, setgid,
setuid, setpcap, net_bind_service, net_raw, sys_chroot, mknod, audit_write, setfcap): the
most an app started by a root turncheck keeps."""
LAST_CAPABILITY = 63


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def hide_own_environment() -> bool:
    """Close this process's `/proc/<pid>/environ`, `/mem` and `/maps` to processes of the
    same user (the apps it starts), which could otherwise read the keys and the token in
    its initial environment; deleting them from `os.environ` would not remove them from
    there. Returns whether it could (Linux only)."""
    libc = _libc()
    try:
        return libc is not None and int(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except AttributeError:
        return False


def adopt_orphans() -> bool:
    """Make this process the child subreaper of everything it starts: a process of an
    app's that leaves its group and session (`setsid()`) and whose parent exits is
    adopted by turncheck rather than by init, so `end_escaped` still finds it. Returns
    whether it could (Linux 3.4 and later)."""
    libc = _libc()
    try:
        return libc is not None and int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except AttributeError:
        return False


def _container_capabilities() -> Callable[[], None] | None:
    """Run in the app's process before it starts. A root turncheck with more than a
    container's default capabilities (CAP_SYS_PTRACE, CAP_SYS_ADMIN, ...) would hand them
    to the app, and they open even a non-dumpable process's environment; the app and its
    children keep at most Docker's defaults, under which `/proc/<turncheck>/environ` is
    closed. Not root: there is nothing to drop (the calls fail harmlessly)."""
    libc = _libc()
    if libc is None or os.geteuid() != 0:
        return None
    prctl = libc.prctl
    dropped = [c for c in range(LAST_CAPABILITY + 1) if c not in CONTAINER_CAPABILITIES]

    def drop() -> None:
        for capability in dropped:
            prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)

    return drop


def app_environment(base: Mapping[str, str], extra: Mapping[str, str] | None,
                    proxy_env: Mapping[str, str], port: int | None) -> dict[str, str]:
    """The app's environment: the allow-list of `base`, the suite's `extra`, then what
    turncheck sets (the port and the proxy), which always wins."""
    env = {name: base[name] for name in ALLOWED_ENV if name in base}
    env.update(extra or {})
    env["PATH"] = with_own_interpreter(env.get("PATH", ""))
    env["PYTHONUNBUFFERED"] = "1"
    if port is not None:
        env["PORT"] = str(port)
    env.update(proxy_env)
    return env


def with_own_interpreter(path: str) -> str:
    """`path` ending with the folder of the interpreter running turncheck: an app started
    as `python app.py` from a virtualenv that was not activated (its `turncheck` called by
    path) finds that interpreter, and whatever `path` already provides still comes first."""
    own = str(Path(sys.executable).parent)
    # No PATH at all: the shell would search the system's default one (`os.defpath`).
    folders = (path or os.defpath).split(os.pathsep)
    return os.pathsep.join(folders if own in folders else [*folders, own])


def argv_of(command: str | Sequence[str], port: int | None) -> list[str]:
    """A string runs in the shell (as the user typed it); a list runs as is. `{port}` is
    filled in either way, and `{python}` with the interpreter running turncheck (an app
    that needs turncheck's own packages, as the shipped examples do, whatever `python`
    comes first on the user's PATH)."""
    def fill(text: str, python: str) -> str:
        text = text.replace("{python}", python)
        return text.replace("{port}", str(port)) if port is not None else text
    if isinstance(command, str):
        return ["/bin/sh", "-c", fill(command, shlex.quote(sys.executable))]
    return [fill(word, sys.executable) for word in command]


def describe(command: str | Sequence[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)


class OutputTail:
    """The last bytes a process wrote (stdout and stderr together), for error messages."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._size += len(chunk)
        while self._size > OUTPUT_TAIL_BYTES and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        data = b"".join(self._chunks)[-OUTPUT_TAIL_BYTES:]
        return " ".join(data.decode("utf-8", "replace").split())[-600:]


class AppProcess:
    """One process group started from `command`; `stop()` ends the whole group."""

    def __init__(self, command: str | Sequence[str], folder: Path, env: Mapping[str, str],
                 port: int | None, *, stdin: bool = False) -> None:
        self.command = command
        self.folder = folder
        self.env = dict(env)
        self.port = port
        self.stdin = stdin
        self.process: asyncio.subprocess.Process | None = None
        self.tail = OutputTail()
        self._drains: list[asyncio.Task[None]] = []

    @property
    def pgid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def exited(self) -> bool:
        return self.process is not None and self.process.returncode is not None

    async def start(self) -> None:
        starting = object()
        _STARTING.append(starting)
        try:
            self.process = await asyncio.create_subprocess_exec(
                *argv_of(self.command, self.port), cwd=self.folder, env=self.env,
                stdin=asyncio.subprocess.PIPE if self.stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True, limit=16 * 1024 * 1024,
                preexec_fn=_container_capabilities())
        except OSError as exc:
            raise AppError(f"cannot start the app ({describe(self.command)}): "
                           f"{exc.strerror or exc}") from None
        finally:
            _STARTING.remove(starting)
        _LIVE_GROUPS.add(self.process.pid)
        _STARTED.add(self.process.pid)
        if not self.stdin:
            self._drains.append(asyncio.create_task(self._drain(self.process.stdout)))
        self._drains.append(asyncio.create_task(self._drain(self.process.stderr)))

    async def _drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        with contextlib.suppress(Exception):
            while chunk := await stream.read(65536):
                self.tail.add(chunk)

    async def drained(self) -> None:
        """Wait (briefly) until what the exited app wrote is read: its exit is seen
        before its last output (a traceback on stderr) is drained."""
        pending = [task for task in self._drains if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=DRAIN_WAIT_S)

    def exit_message(self, when: str) -> str:
        code = self.process.returncode if self.process is not None else None
        how = f"was killed by signal {-code}" if code is not None and code < 0 else \
            f"exited with code {code}"
        output = self.tail.text()
        return f"the app ({describe(self.command)}) {how} {when}" + (
            f"; its last output: {output}" if output else "; it wrote nothing")

    async def stop(self) -> None:
        """SIGTERM to the group, SIGKILL after a grace period; the group is gone after."""
        process = self.process
        if process is None:
            return
        group = process.pid
        _signal_group(group, signal.SIGTERM)
        await _until_exited(process, STOP_GRACE_S)
        _signal_group(group, signal.SIGKILL)  # whatever of the group is left
        await _until_exited(process, STOP_GRACE_S)
        await _until_gone(group, STOP_GRACE_S)
        _LIVE_GROUPS.discard(group)
        # What the app moved out of its group: it may hold the app's output pipes, which
        # `wait()` waits for (and a transport left open fails when the loop closes).
        end_escaped_processes()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_GRACE_S)
        await self.drained()
        for task in self._drains:
            task.cancel()
        await asyncio.gather(*self._drains, return_exceptions=True)


async def _until_exited(process: asyncio.subprocess.Process, timeout_s: float) -> None:
    """Wait until the process has exited (not `wait()`, which also waits until every
    process holding its output pipes has closed them)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while process.returncode is None and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)


async def _until_gone(group: int, timeout_s: float) -> None:
    """Wait until no process of `group` is left (killed children are reaped by init)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while _group_exists(group) and asyncio.get_running_loop().time() < deadline:
        _signal_group(group, signal.SIGKILL)
        await asyncio.sleep(0.02)


def _group_exists(group: int) -> bool:
    """Whether a process of `group` still runs. Zombies do not count: a killed
    grandchild (the app under `sh -c`) waits for init to reap it, which in a container
    without a reaping init takes seconds or never happens."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return group_member_runs(group) if _PROC.is_dir() else True


_PROC = Path("/proc")


def group_member_runs(group: int) -> bool:
    """Linux: whether /proc lists a process of `group` that is not a zombie."""
    return any(fields[2] == str(group) for _, fields in live_process_stats())


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


async def run_setup(command: str | Sequence[str], folder: Path, env: Mapping[str, str],
                    timeout_s: float) -> None:
    """Run `setup` to its end; a failure or a timeout is an error with its output."""
    setup = AppProcess(command, folder, env, None)
    await setup.start()
    assert setup.process is not None
    try:
        await asyncio.wait_for(setup.process.wait(), timeout_s)
    except TimeoutError:
        raise AppError(f"setup ({describe(command)}) did not finish within {timeout_s:g}s"
                       ) from None
    finally:
        await setup.stop()
    if setup.process.returncode != 0:
        raise AppError(setup.exit_message("during setup").replace("the app", "setup", 1))


async def wait_ready(app: AppProcess | None, url: str, timeout_s: float) -> None:
    """Poll `url` with GET until it answers (any status below 500); `app`, when turncheck
    started it, must not exit meanwhile."""
    import aiohttp

    deadline = asyncio.get_running_loop().time() + timeout_s
    async with aiohttp.ClientSession() as client:
        while True:
            if app is not None and app.exited:
                await app.drained()
                raise AppError(app.exit_message("before it was ready"))
            with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
                async with client.get(url, timeout=aiohttp.ClientTimeout(total=2)) as answer:
                    if answer.status < 500:
                        return
            if asyncio.get_running_loop().time() > deadline:
                raise AppError(_not_ready(app, url, timeout_s))
            await asyncio.sleep(READY_POLL_S)


def _not_ready(app: AppProcess | None, url: str, timeout_s: float) -> str:
    if app is None:
        return f"the app did not answer {url} within {timeout_s:g}s"
    output = app.tail.text()
    return (f"the app ({describe(app.command)}) did not answer {url} within {timeout_s:g}s"
            + (f"; its last output: {output}" if output else ""))


def end_escaped_processes() -> None:
    """End what stopped apps left outside their groups (`orphans.py`); the trees of the
    apps still running are spared. Run on the event loop, so no app starts meanwhile;
    while one is being started (forked, not yet known) it waits for a later call (the
    next stop, or the interpreter's exit)."""
    if not _STARTING:
        end_escaped(_LIVE_GROUPS, _STARTED)


@atexit.register
def _kill_leftovers() -> None:
    """A run that ends without closing its sessions (a crash) leaves no app behind, nor
    any process an app moved out of its group."""
    for group in list(_LIVE_GROUPS):
        _signal_group(group, signal.SIGKILL)
    if _STARTED:
        end_escaped(never_reap=_STARTED)

"""Running `git`: without a shell, with a timeout, without terminal prompts or hooks,
with `core.quotepath=off` and literal pathspecs (so `*` or `[` in a file name is not a
pattern). Every failure — git missing, a timeout, a non-zero exit, an unsafe argument —
is raised as a `GitError` with a one-line message for the user.

Output that grows with the repository (listings of trees and changes) is read as a
stream of NUL-terminated records, never held whole."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections.abc import Collection, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

GIT_TIMEOUT_SECONDS = 120.0

_READ_CHUNK = 64 * 1024
MAX_RECORD_BYTES = 1024 * 1024
"""One record of a listing (a path, a status, a tree entry) is far shorter."""


class GitError(Exception):
    """A git operation failed; the message is one line, meant for the user."""


def git_command(repo: Path, args: Sequence[str]) -> list[str]:
    # The repository's hooks (a post-checkout hook installing tools, say) are its
    # developers' business, not a side effect of turncheck reading a commit.
    return ["git", "-C", str(repo), "-c", "core.quotepath=off", "-c",
            f"core.hooksPath={os.devnull}", "--literal-pathspecs", *args]


def run(
    repo: Path,
    args: Sequence[str],
    timeout: float = GIT_TIMEOUT_SECONDS,
    ok_codes: Collection[int] = (0,),
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`git args` in `repo` for a short answer (a SHA, a date, a line)."""
    try:
        result = subprocess.run(
            git_command(repo, args),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env={**git_env(), **(env or {})},
            check=False,
        )
    except FileNotFoundError as error:
        raise GitError("git is not installed (no `git` on PATH)") from error
    except subprocess.TimeoutExpired as error:
        raise GitError(f"git {args[0]} timed out after {timeout:g}s in {repo}") from error
    except OSError as error:
        raise GitError(f"cannot run git {args[0]} in {repo}: {error}") from error
    if result.returncode not in ok_codes:
        summary = error_summary(result.stderr, result.returncode)
        raise GitError(f"git {args[0]} failed in {repo}: {summary}")
    return result


def records(repo: Path, args: Sequence[str],
            timeout: float = GIT_TIMEOUT_SECONDS) -> Generator[bytes, None, None]:
    """The NUL-terminated records `git args` (a `-z` listing) prints, read as they come.

    Memory stays at one read buffer and one record, whatever the listing's length; a
    consumer that stops early stops git too."""
    with tempfile.TemporaryFile() as errors:
        process = _start(repo, args, errors)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            process.kill()

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            yield from _split_records(process, args[0])
            code = process.wait()
        finally:
            timer.cancel()
            _stop(process)
        if expired.is_set():
            raise GitError(f"git {args[0]} timed out after {timeout:g}s in {repo}")
        if code != 0:
            errors.seek(0)
            raise GitError(f"git {args[0]} failed in {repo}: "
                           f"{error_summary(errors.read(64 * 1024), code)}")


def _start(repo: Path, args: Sequence[str], errors: IO[bytes]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(git_command(repo, args), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=errors,
                                env=git_env())
    except FileNotFoundError as error:
        raise GitError("git is not installed (no `git` on PATH)") from error
    except OSError as error:
        raise GitError(f"cannot run git {args[0]} in {repo}: {error}") from error


def _split_records(process: subprocess.Popen[bytes], command: str) -> Iterator[bytes]:
    assert process.stdout is not None
    pending = b""
    while chunk := os.read(process.stdout.fileno(), _READ_CHUNK):
        *complete, pending = (pending + chunk).split(b"\0")
        yield from complete
        if len(pending) > MAX_RECORD_BYTES:
            raise GitError(f"git {command} printed a record over {MAX_RECORD_BYTES:,} bytes")
    if pending:
        yield pending


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


GIT_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
           "LC_MESSAGES", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "XDG_CONFIG_HOME",
           "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
           "GIT_CEILING_DIRECTORIES", "GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND",
           "SSH_AUTH_SOCK", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "SSL_CERT_FILE",
           "SSL_CERT_DIR", "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
           "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
           "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA",
           "WINDIR", "COMSPEC", "PATHEXT")
"""The variables of turncheck's environment git inherits; nothing else does. An app's
escaped process could read a git process's `/proc/<pid>/environ`, and git needs no token:
a fetch authenticates with what actions/checkout left in the repository's config. An
inherited `GIT_DIR` (say, when run from a git hook) is not passed either: it would
silently override the repository turncheck names."""


def git_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in GIT_ENV if name in os.environ}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def error_summary(stderr: bytes, code: int) -> str:
    """The most telling stderr line: git prints warnings before its fatal error."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    if errors:
        return errors[0]
    return lines[-1] if lines else f"exit status {code}"


def stdout_line(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stdout.decode(errors="replace").strip()


def checked_rev(rev: str) -> str:
    # Revisions come from event payloads and user input; one starting with "-" would be
    # read as an option.
    if not rev or rev.startswith("-") or "\0" in rev:
        raise GitError(f"invalid git revision {rev!r}")
    return rev


def work_tree_root(repo: Path) -> Path:
    # Some commands take paths relative to the current directory, so run them at the
    # top of the work tree (in a bare repository --show-cdup prints nothing).
    cdup = stdout_line(run(repo, ["rev-parse", "--show-cdup"]))
    return repo / cdup if cdup else repo

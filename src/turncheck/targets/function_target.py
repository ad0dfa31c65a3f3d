"""`python` targets: `package.module:function`, called in-process for each turn.

The module is found as Python developers expect: in the target's `path:` folders, then
the suite's folder, then the repository's root (the nearest folder holding `.git`), each
in the side's own tree, so a base commit's suite calls the base commit's code. The function takes
any of `messages`, `last_message`, `vars`, `session_id`, `openai_base_url` and
`anthropic_base_url` as keyword arguments (it names the ones it wants), sync or async,
and returns the reply: text, or `{text, tool_calls, usage, session_id}`.

Turns run concurrently unless the target says `concurrent: false`: an async function's
on the event loop, a sync function's in a pool of as many threads as the run's
concurrency (so it may call the recording proxy, which runs on the loop). Each turn's
model calls carry its id (`turn_header.py`), which the proxy attributes them by.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from turncheck.targets.base import AppReply, Runtime, TargetError, Turn, reply_of
from turncheck.targets.offline import (
    AppEnvironment,
    SaidOnce,
    refused_message,
    refusing_network,
)
from turncheck.targets.process import AppError
from turncheck.targets.turn_header import (
    install,
    naming_turn,
    proxy_addresses,
    register_proxy,
)

ARGUMENTS = ("messages", "last_message", "vars", "session_id", "openai_base_url",
             "anthropic_base_url")


class FunctionKind:
    def __init__(self, reference: str, threads: int = 1, path: Sequence[str] = (),
                 offline: bool = False) -> None:
        self.reference = reference
        self.path = tuple(path)
        """The target's `path:` folders, relative to the suite's folder."""
        self.offline = offline
        """Replay: the app's connections to other hosts are refused (`offline.py`)."""
        self._environment: AppEnvironment | None = None
        self.threads = max(1, threads)
        """Sync functions' worker threads: the most turns in flight at once."""
        self._function: Callable[..., Any] | None = None
        self._wanted: tuple[str, ...] = ()
        self._is_async = False
        self._runtime: Runtime | None = None
        self._proxy: frozenset[str] = frozenset()
        self._pool: ThreadPoolExecutor | None = None
        self._say_once = SaidOnce()

    async def start(self, runtime: Runtime) -> None:
        self._runtime = runtime
        module_name, _, name = self.reference.partition(":")
        folders = module_folders(runtime.folder.resolve(), self.path)
        # A client the module builds at import reads its URL and key from the
        # environment: the proxy's, before the import.
        self._environment = AppEnvironment(runtime.env)
        self._environment.enter()
        try:
            with self._guard() as blocked:
                module = _import_from(folders, module_name)
            if self._say_once(blocked):
                raise AppError(f"importing {module_name}: {refused_message(blocked)}")
        except AppError:
            raise
        except Exception as exc:  # the app's import-time errors are the app's
            looked = ", ".join(_shown(f) for f in folders)
            raise AppError(f"cannot import {module_name} for the python target: "
                           f"{type(exc).__name__}: {exc} (looked in {looked}, then "
                           "Python's own path)") from None
        function = getattr(module, name, None)
        if not callable(function):
            raise AppError(f"{self.reference}: {module_name} has no function {name}")
        self._function = function
        self._wanted = _wanted_arguments(function)
        self._is_async = inspect.iscoroutinefunction(function)
        self._proxy = proxy_addresses(runtime.proxy_urls.values())
        install()
        register_proxy(self._proxy, runtime.env.get("OPENAI_API_KEY"))
        if not self._is_async:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="turncheck-app")

    async def stop(self) -> None:
        self._function = None
        if self._environment is not None:
            environment, self._environment = self._environment, None
            environment.leave()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=False, cancel_futures=True)  # a hung function is not waited for

    async def answer(self, turn: Turn) -> AppReply:
        assert self._function is not None and self._runtime is not None
        available = {**turn.context(), "session_id": turn.session_id,
                     **self._runtime.proxy_urls}
        arguments = {name: available.get(name) for name in self._wanted}
        failed: Exception | None = None
        with self._guard() as blocked:
            try:
                result = await self._call(turn, arguments)
            except Exception as exc:
                failed = exc
        if self._say_once(blocked):
            raise TargetError(f"{self.reference}: {refused_message(blocked)}")
        if failed is not None:
            raise TargetError(f"{self.reference} raised {type(failed).__name__}: "
                              f"{failed}") from None
        return reply_of(result)

    async def _call(self, turn: Turn, arguments: dict[str, Any]) -> Any:
        assert self._function is not None
        with naming_turn(turn.turn_id, self._proxy):
            if self._is_async:
                return await self._function(**arguments)
            assert self._pool is not None
            call = functools.partial(contextvars.copy_context().run, self._function,
                                     **arguments)
            return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def _guard(self) -> contextlib.AbstractContextManager[list[str]]:
        return refusing_network() if self.offline else contextlib.nullcontext([])


_TARGET_FOLDERS: set[Path] = set()
"""Folders python targets were imported from (a base and a head tree, say)."""


def repository_root(folder: Path) -> Path | None:
    """The nearest folder from `folder` up holding `.git` (a base commit's work tree has
    a `.git` file): the root of the tree this side runs from."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def module_folders(folder: Path, path: Sequence[str] = ()) -> list[Path]:
    """Where a python target's module is looked for, first to last: the `path:` folders
    (relative to the suite's `folder`), the suite's folder, the repository's root."""
    root = repository_root(folder)
    found: list[Path] = []
    for relative in path:
        named = (folder / relative).resolve()
        if not named.is_relative_to(root or folder):
            raise AppError(f"python target path {relative!r} leads outside the repository "
                           f"({_shown(named)})")
        found.append(named)
    found += [folder] + ([root] if root is not None else [])
    return list(dict.fromkeys(found))


def _shown(folder: Path) -> str:
    """`folder` relative to the working directory when it is under it, else whole."""
    try:
        shown = folder.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        shown = str(folder)
    return shown.rstrip("/") + "/"


def _import_from(folders: list[Path], module_name: str) -> ModuleType:
    """`module_name` as `folders` hold it (the first first). A module of that name
    imported from another target's folders (the other side's tree holds the same
    `bot.py`) is forgotten first, so each side calls its own code; the function keeps
    its own module's globals."""
    top = module_name.split(".")[0]
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        file = getattr(sys.modules[name], "__file__", None)
        origin = Path(file).resolve() if file else None
        if origin is not None and not any(origin.is_relative_to(f) for f in folders) and \
                any(origin.is_relative_to(other) for other in _TARGET_FOLDERS):
            del sys.modules[name]
    _TARGET_FOLDERS.update(folders)
    for folder in reversed(folders):
        if str(folder) in sys.path:
            sys.path.remove(str(folder))
        sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    return importlib.import_module(module_name)


def _wanted_arguments(function: Callable[..., Any]) -> tuple[str, ...]:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return ARGUMENTS
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return ARGUMENTS
    return tuple(name for name in ARGUMENTS if name in parameters)

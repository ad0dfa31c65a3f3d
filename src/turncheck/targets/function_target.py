"""`python` targets: `package.module:function`, called in-process for each turn.

The module is imported with the suite's folder first on `sys.path`. The function takes
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
import contextvars
import functools
import importlib
import inspect
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from turncheck.targets.base import AppReply, Runtime, TargetError, Turn, reply_of
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
    def __init__(self, reference: str, threads: int = 1) -> None:
        self.reference = reference
        self.threads = max(1, threads)
        """Sync functions' worker threads: the most turns in flight at once."""
        self._function: Callable[..., Any] | None = None
        self._wanted: tuple[str, ...] = ()
        self._is_async = False
        self._runtime: Runtime | None = None
        self._proxy: frozenset[str] = frozenset()
        self._pool: ThreadPoolExecutor | None = None

    async def start(self, runtime: Runtime) -> None:
        self._runtime = runtime
        module_name, _, name = self.reference.partition(":")
        try:
            module = _import_from(runtime.folder.resolve(), module_name)
        except Exception as exc:  # the app's import-time errors are the app's
            raise AppError(f"cannot import {module_name} for the python target: "
                           f"{type(exc).__name__}: {exc}") from None
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
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=False, cancel_futures=True)  # a hung function is not waited for

    async def answer(self, turn: Turn) -> AppReply:
        assert self._function is not None and self._runtime is not None
        available = {**turn.context(), "session_id": turn.session_id,
                     **self._runtime.proxy_urls}
        arguments = {name: available.get(name) for name in self._wanted}
        try:
            with naming_turn(turn.turn_id, self._proxy):
                if self._is_async:
                    result = await self._function(**arguments)
                else:
                    assert self._pool is not None
                    call = functools.partial(contextvars.copy_context().run, self._function,
                                             **arguments)
                    result = await asyncio.get_running_loop().run_in_executor(self._pool, call)
        except Exception as exc:
            raise TargetError(f"{self.reference} raised {type(exc).__name__}: {exc}") from None
        return reply_of(result)


_TARGET_FOLDERS: set[Path] = set()
"""Folders python targets were imported from (a base and a head tree, say)."""


def _import_from(folder: Path, module_name: str) -> ModuleType:
    """`module_name` as `folder` holds it. A module of that name imported from another
    target's folder (the other side's tree holds the same `bot.py`) is forgotten first,
    so each side calls its own code; the function keeps its own module's globals."""
    top = module_name.split(".")[0]
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        file = getattr(sys.modules[name], "__file__", None)
        origin = Path(file).resolve() if file else None
        if origin is not None and not origin.is_relative_to(folder) and \
                any(origin.is_relative_to(other) for other in _TARGET_FOLDERS):
            del sys.modules[name]
    _TARGET_FOLDERS.add(folder)
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

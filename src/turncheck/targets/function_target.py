"""`python` targets: `package.module:function`, called in-process for each turn.

The module is imported with the suite's folder first on `sys.path`. The function takes
any of `messages`, `last_message`, `vars`, `session_id`, `openai_base_url` and
`anthropic_base_url` as keyword arguments (it names the ones it wants), sync or async,
and returns the reply: text, or `{text, tool_calls, usage, session_id}`. A sync function
runs in a worker thread, so it may call the recording proxy, which runs on the loop.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from turncheck.targets.base import AppReply, Runtime, TargetError, Turn, reply_of
from turncheck.targets.process import AppError

ARGUMENTS = ("messages", "last_message", "vars", "session_id", "openai_base_url",
             "anthropic_base_url")


class FunctionKind:
    def __init__(self, reference: str) -> None:
        self.reference = reference
        self._function: Callable[..., Any] | None = None
        self._wanted: tuple[str, ...] = ()
        self._is_async = False
        self._runtime: Runtime | None = None

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

    async def stop(self) -> None:
        self._function = None

    async def answer(self, turn: Turn) -> AppReply:
        assert self._function is not None and self._runtime is not None
        available = {**turn.context(), "session_id": turn.session_id,
                     **self._runtime.proxy_urls}
        arguments = {name: available.get(name) for name in self._wanted}
        try:
            if self._is_async:
                result = await self._function(**arguments)
            else:
                result = await asyncio.to_thread(self._function, **arguments)
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

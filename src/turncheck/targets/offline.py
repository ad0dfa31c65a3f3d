"""Replay keeps a python target on the machine (docs/targets.md, "Replay stays on the
machine").

A python target runs Python, so its environment and its sockets can be held to what
replay promises: before its module is imported, the process's `OPENAI_BASE_URL`,
`ANTHROPIC_BASE_URL` and keys are the proxy's URLs and placeholder keys (a module-level
`client = OpenAI()`, the SDKs' usual pattern, then talks to the proxy), every other
provider key or base URL is out of its reach, and in replay an audit hook refuses any
connection the app tries to a host other than this machine, at once, with an error that
names the host. The environment is put back when the last such target stops.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

logger = logging.getLogger(__name__)

PROXY_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
"""What the app is given to reach the proxy (`RecordingProxy.app_env`)."""
_PROVIDER_SUFFIXES = ("_API_KEY", "_BASE_URL", "_API_BASE")
"""Other providers' keys and endpoints (OPENROUTER_API_KEY, OPENAI_API_BASE, ...)."""

_BLOCKED: ContextVar[list[str] | None] = ContextVar("turncheck_offline_blocked", default=None)
_process_blocked: list[str] | None = None
"""Set in a process that is only the app (the action's python worker): every thread."""
_hooked = False
_refused_log: str | None = None
"""A file each refused `host:port` is added to (an app process of a replay)."""


_ACTIVE: list[AppEnvironment] = []
"""The python targets' environments in force, oldest first."""
_ORIGINAL: dict[str, str | None] = {}
"""What those variables were before the first (None: unset)."""


class AppEnvironment:
    """The process environment a python target is imported and called with. Several
    may be active at once (suites run concurrently): the newest one's values are set,
    and what was there before the first is put back when the last leaves."""

    def __init__(self, app_env: Mapping[str, str]) -> None:
        self._set = {name: app_env[name] for name in PROXY_ENV if name in app_env}

    def enter(self) -> None:
        hidden = [name for name in os.environ
                  if name.endswith(_PROVIDER_SUFFIXES) and name not in self._set]
        for name in [*self._set, *hidden]:
            _ORIGINAL.setdefault(name, os.environ.get(name))
        for name in hidden:
            del os.environ[name]
        os.environ.update(self._set)
        _ACTIVE.append(self)

    def leave(self) -> None:
        if self not in _ACTIVE:
            return
        _ACTIVE.remove(self)
        if _ACTIVE:
            os.environ.update(_ACTIVE[-1]._set)
            return
        for name, before in _ORIGINAL.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before
        _ORIGINAL.clear()


def install() -> None:
    """The audit hook (once per process: hooks cannot be removed; it does nothing
    outside `refusing_network`)."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True


def refuse_network_in_process(log: str | None = None) -> None:
    """Every connection of this process (all threads) to another host is refused; each
    refused `host:port` is also added as a line to the file `log` names, when it names
    one (turncheck reads it: an app process of a replay, `replay_guard.py`)."""
    global _process_blocked, _refused_log
    install()
    _process_blocked = []
    _refused_log = log


@contextmanager
def refusing_network() -> Iterator[list[str]]:
    """Within: this context's connections to another host are refused; yields the list
    the refused `host:port`s are added to."""
    install()
    blocked: list[str] = []
    token = _BLOCKED.set(blocked)
    try:
        yield blocked
    finally:
        _BLOCKED.reset(token)
        if _process_blocked:
            blocked.extend(_process_blocked)
            _process_blocked.clear()


MAX_SAID_HOSTS = 20
"""Refused hosts named in the run's output per target (each turn's error names its own)."""


class SaidOnce:
    """Each host a target's replay refused is said once in the run's output."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def __call__(self, refused: list[str]) -> list[str]:
        for where in refused:
            if where not in self._said and len(self._said) < MAX_SAID_HOSTS:
                self._said.add(where)
                logger.warning("turncheck replay: the app tried to reach %s: refused "
                               "(nothing leaves the machine in replay)", where)
        return refused


def refused_message(blocked: list[str]) -> str:
    """Every host refused while the turn was open: with several turns in flight, the app's
    attempts cannot be told apart by turn (the first may be another's)."""
    hosts = list(dict.fromkeys(blocked))
    named = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    return (f"the app tried to reach {named} directly: in replay nothing leaves the "
            "machine; its model calls must go through turncheck's proxy (the "
            "OPENAI_BASE_URL / ANTHROPIC_BASE_URL it is given, or the openai_base_url / "
            "anthropic_base_url arguments), see docs/targets.md")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event not in ("socket.getaddrinfo", "socket.connect"):
        return
    blocked = _BLOCKED.get()
    if blocked is None:
        blocked = _process_blocked
    if blocked is None:
        return
    address = args[0:2] if event == "socket.getaddrinfo" else args[1]
    if not isinstance(address, tuple) or len(address) < 2:
        return  # a Unix socket
    host, port = address[0], address[1]
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str) or _on_this_machine(host):
        return
    where = f"{host}:{port}" if port is not None else host
    blocked.append(where)
    if _refused_log:
        _note_refused(_refused_log, where)
    raise ConnectionRefusedError(f"turncheck replay: connection to {where} refused: "
                                 "nothing leaves the machine in replay")


def _note_refused(log: str, where: str) -> None:
    try:
        with open(log, "a", encoding="utf-8") as refused:
            refused.write(where.replace("\n", " ") + "\n")
    except OSError:
        pass  # the connection is refused all the same


def _on_this_machine(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in ("localhost", "") or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.split("%")[0]).is_loopback
    except ValueError:
        return False

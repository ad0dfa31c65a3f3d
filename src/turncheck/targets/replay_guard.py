"""Replay keeps an http or command app on the machine (docs/targets.md, "Replay stays
on the machine").

In replay, every process turncheck starts for the app is guarded, and each guard notes
each refused `host:port` in one file turncheck reads, so the turn errors naming the
host even when the app swallows the refusal (and the run's output says it once):

- whatever its language, proxy variables naming `egress_refuser.py`'s endpoint, which
  answers every request 403 and connects nowhere: the HTTP clients that honour them
  (curl, Go, Python, Ruby, Node with `NODE_USE_ENV_PROXY`) reach no other host;
- a Node process gets `node_guard.py`'s script in `NODE_OPTIONS`, which refuses its
  TCP connections to other hosts before any name lookup, whatever client made them;
- a Python process gets a folder first on its `PYTHONPATH` holding a
  `sitecustomize.py` that installs `offline.py`'s audit hook before the app's code
  runs: any connection to a host other than this machine, raw sockets included, is
  refused at once (before any name lookup). The app's own `sitecustomize`, if it has
  one, runs after it.

A process that ignores the proxy variables and is neither Python nor Node (or runs
`python -S` / `-I`, or clears `NODE_OPTIONS`) can still open a socket to anywhere: only
a network namespace stops that.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from turncheck.targets import offline
from turncheck.targets.egress_refuser import EgressRefuser
from turncheck.targets.node_guard import node_options, write_script

REFUSED_ENV = "TURNCHECK_REPLAY_REFUSED"
"""The file the app process adds each refused `host:port` to."""

MAX_REFUSED_BYTES = 64 * 1024
"""Refusals read back at most (the file is the app's to write: hostile input)."""

_SITECUSTOMIZE = '''\
# Written by turncheck for a replay: this process connects to this machine only
# (docs/targets.md, "Replay stays on the machine"). Then the app's own sitecustomize.
import importlib.util as _util
import os as _os
import sys as _sys


def _turncheck_refuse_network():
    spec = _util.spec_from_file_location("_turncheck_offline", {offline!r})
    guard = _util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    _sys.modules["_turncheck_offline"] = guard
    guard.refuse_network_in_process(_os.environ.get({variable!r}))


def _turncheck_chain():
    here = _os.path.dirname(_os.path.abspath(__file__))
    saved = _sys.path[:]
    _sys.path[:] = [p for p in saved if _os.path.abspath(p or _os.curdir) != here]
    mine = _sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  (the app's own, if it has one)
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if mine is not None:
            _sys.modules["sitecustomize"] = mine
    finally:
        _sys.path[:] = saved


_turncheck_refuse_network()
_turncheck_chain()
'''


class ReplayGuard:
    """The guards of one target's replay (its `sitecustomize` folder and its refusing
    proxy), and the file of what they refused."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="turncheck-replay-guard-"))
        self.log = self.folder / "refused.txt"
        self.log.touch()
        source = _SITECUSTOMIZE.format(offline=str(Path(offline.__file__).resolve()),
                                       variable=REFUSED_ENV)
        (self.folder / "sitecustomize.py").write_text(source, encoding="utf-8")
        self.node_script = write_script(self.folder)
        self.refuser = EgressRefuser(self._note)
        self._say_once = offline.SaidOnce()

    async def start(self) -> None:
        await self.refuser.start()

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the guard first on `PYTHONPATH` and in `NODE_OPTIONS`, and the
        refusing proxy as every proxy variable (the suite's own `env` cannot point them
        elsewhere)."""
        guarded = dict(env)
        path = [str(self.folder), *filter(None, [env.get("PYTHONPATH")])]
        guarded["PYTHONPATH"] = os.pathsep.join(path)
        guarded["NODE_OPTIONS"] = node_options(env, self.node_script)
        guarded[REFUSED_ENV] = str(self.log)
        guarded.update(self.refuser.env())
        return guarded

    def refused_since(self, before: int) -> list[str]:
        """The `host:port`s refused after the first `before`; each host is said once in
        the run's output."""
        return self._say_once(self.refused()[before:])

    def _note(self, where: str) -> None:
        """A refusal of the refusing proxy, in the file the Python guard writes to."""
        try:
            if self.log.stat().st_size < MAX_REFUSED_BYTES:
                with self.log.open("a", encoding="utf-8") as log:
                    log.write(where.replace("\n", " ") + "\n")
        except OSError:
            pass  # the request is refused all the same

    def refused(self) -> list[str]:
        """The `host:port`s refused so far, oldest first."""
        try:
            with self.log.open("rb") as log:
                text = log.read(MAX_REFUSED_BYTES).decode("utf-8", "replace")
        except OSError:
            return []
        return [line.strip()[:200] for line in text.splitlines()]

    async def stop(self) -> None:
        await self.refuser.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

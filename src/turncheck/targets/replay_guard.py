"""Replay keeps a Python app process on the machine too (docs/targets.md, "Replay
stays on the machine").

In replay, every process turncheck starts for an http or command app gets a folder
first on its `PYTHONPATH` holding a `sitecustomize.py` that installs `offline.py`'s
audit hook before the app's code runs: a connection to a host other than this machine
is refused at once (before any name lookup), and the refused `host:port` is written to
a file turncheck reads, so the turn errors naming the host even when the app swallows
the refusal. The app's own `sitecustomize`, if it has one, runs after it. A process
that is not Python (or runs `python -S` / `-I`) is not covered.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from turncheck.targets import offline

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
    """The `sitecustomize` folder of one target's replay, and the file of what it
    refused."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="turncheck-replay-guard-"))
        self.log = self.folder / "refused.txt"
        self.log.touch()
        source = _SITECUSTOMIZE.format(offline=str(Path(offline.__file__).resolve()),
                                       variable=REFUSED_ENV)
        (self.folder / "sitecustomize.py").write_text(source, encoding="utf-8")

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the guard first on `PYTHONPATH`."""
        guarded = dict(env)
        path = [str(self.folder), *filter(None, [env.get("PYTHONPATH")])]
        guarded["PYTHONPATH"] = os.pathsep.join(path)
        guarded[REFUSED_ENV] = str(self.log)
        return guarded

    def refused(self) -> list[str]:
        """The `host:port`s refused so far, oldest first."""
        try:
            with self.log.open("rb") as log:
                text = log.read(MAX_REFUSED_BYTES).decode("utf-8", "replace")
        except OSError:
            return []
        return [line.strip()[:200] for line in text.splitlines()]

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

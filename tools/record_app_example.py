"""Record the app examples (examples/support-bot/, examples/python-target/) against a
scripted tool-calling server (no model, no network).

    python tools/record_app_example.py

The apps call the model themselves with the official `openai` SDK; `turncheck record`
starts them, points their model calls at its recording proxy and forwards those calls
to the suites' `base_url`: a scripted OpenAI-compatible server on 127.0.0.1:8766
(tests/support/app_example_models.py) that answers like small models following the
apps' system prompts, with real tool calls where the support bot's prompt asks for
them. The shipped local model (tools/serve_local_model.py) cannot call tools.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.app_example_models import app_example_model  # noqa: E402
from tests.support.scripted_server import ScriptedServer  # noqa: E402

PORT = 8766
SUITES = ("examples/support-bot/", "examples/python-target/")


def record(suites: tuple[str, ...] = SUITES, cwd: Path = ROOT) -> int:
    """`turncheck record SUITES` in `cwd` against the scripted server; its exit code."""
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-scripted")}
    with ScriptedServer(default_reply=app_example_model, port=PORT):
        done = subprocess.run([sys.executable, "-m", "turncheck", "record", "--prune", *suites],
                              cwd=cwd, env=env, check=False)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(record())

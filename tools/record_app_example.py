"""Record app-target suites — by default the app examples (examples/support-bot/,
examples/python-target/) — against a scripted tool-calling server (no model, no
network), or against the OpenAI-compatible server `--base-url` names.

    python tools/record_app_example.py                        # the examples
    python tools/record_app_example.py path/to/evals/ ...     # any suite or folder
    python tools/record_app_example.py evals/ --base-url http://127.0.0.1:8765/v1

The apps call the model themselves with the official `openai` SDK; `turncheck record
--prune` starts them, points their model calls at its recording proxy and forwards those
calls upstream: a suite's own `base_url` (the examples name the scripted server's), else
`--base-url`, else the scripted OpenAI-compatible server on 127.0.0.1:8766
(tests/support/app_example_models.py) that answers like small models following the
examples' system prompts, with real tool calls where the support bot's prompt asks for
them. The shipped local model (tools/serve_local_model.py) cannot call tools. Recording
your own app against your provider needs no tool: `turncheck record evals/` with
`OPENAI_API_KEY` set (docs/targets.md, "Recording the app's calls").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.app_example_models import app_example_model  # noqa: E402
from tests.support.scripted_server import ScriptedServer  # noqa: E402

PORT = 8766
SCRIPTED_URL = f"http://127.0.0.1:{PORT}/v1"
SUITES = ("examples/support-bot/", "examples/python-target/")


def record(suites: tuple[str, ...] = SUITES, cwd: Path = ROOT,
           base_url: str | None = None) -> int:
    """`turncheck record --prune SUITES` in `cwd` against `base_url` (None: the scripted
    server); its exit code."""
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-scripted"),
           "OPENAI_BASE_URL": base_url or SCRIPTED_URL}
    server: AbstractContextManager[object] = nullcontext() if base_url else \
        ScriptedServer(default_reply=app_example_model, port=PORT)
    with server:
        done = subprocess.run([sys.executable, "-m", "turncheck", "record", "--prune", *suites],
                              cwd=cwd, env=env, check=False)
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="*",
                        help="suite files or folders (default: the app examples)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server to record against "
                                           "(default: the scripted one)")
    args = parser.parse_args(argv)
    suites = tuple(str(Path(s).resolve()) for s in args.suites) or SUITES
    return record(suites, base_url=args.base_url)


if __name__ == "__main__":
    raise SystemExit(main())

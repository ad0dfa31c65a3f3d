"""The support-bot example's three-turn eval depends on the app's memory: with the session
id not sent, the app starts a new conversation each turn and the eval fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.action_harness import TURNCHECK
from tests.support.app_example_models import app_example_model
from tests.support.scripted_server import ScriptedServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support-bot"
SUITE = "support-bot.eval.yaml"
WITH_SESSION = 'body: {message: "{{ last_message }}", session_id: "{{ session_id }}"}'
WITHOUT_SESSION = 'body: {message: "{{ last_message }}"}'


def record(folder: Path, tmp_path: Path) -> dict[str, dict[str, object]]:
    """`turncheck record` of the suite in `folder` against the scripted model: each eval's
    status and last answer."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "OPENAI_API_KEY": "sk-scripted", "TMPDIR": str(tmp_path)}
    report = tmp_path / f"{folder.name}.json"
    with ScriptedServer(default_reply=app_example_model) as server:
        suite = folder / SUITE
        suite.write_text(suite.read_text().replace("http://127.0.0.1:8766/v1", server.base_url))
        (folder / "support-bot.eval.cassette.yaml").unlink()
        subprocess.run([str(TURNCHECK), "record", SUITE, "--json", str(report)], cwd=folder,
                       env=env, capture_output=True, text=True, timeout=300, check=False)
    evals = json.loads(report.read_text())["suites"][0]["evals"]
    return {e["name"]: {"status": e["status"], "last": e["turns"][-1]["response"]}
            for e in evals}


def test_the_three_turn_eval_passes_only_when_the_app_gets_its_session_back(
        tmp_path: Path) -> None:
    assert WITH_SESSION in (EXAMPLE / SUITE).read_text()
    with_session = shutil.copytree(EXAMPLE, tmp_path / "with-session")
    without_session = shutil.copytree(EXAMPLE, tmp_path / "without-session")
    suite = without_session / SUITE
    suite.write_text(suite.read_text().replace(WITH_SESSION, WITHOUT_SESSION))

    remembered = record(with_session, tmp_path)["remembers the customer"]
    forgotten = record(without_session, tmp_path)["remembers the customer"]

    assert remembered == {"status": "pass",
                          "last": "You are Ada, and we talked about your order A1002."}
    assert forgotten == {"status": "fail", "last": "I don't know your name yet."}

"""A pull request that changes a simulated user's persona: `turncheck diff` says the
comparison is not like-for-like and blames no regression on the app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.test_simulated_users import is_simulator, refund_suite, target_reply
from tests.support.engine_helpers import run_paths
from tests.support.git_repo import GitRepo
from tests.support.scripted_server import ScriptedServer

ANGRY = "An angry customer who never says what they want."


def simulator(body: dict[str, Any]) -> str:
    """Stops with the goal met after three answers, unless it plays the angry customer,
    who never stops."""
    seen = str(body["messages"][-1]["content"]).count("ASSISTANT:")
    if seen >= 3 and ANGRY not in body["messages"][0]["content"]:
        return json.dumps({"message": "", "stop": True, "reason": "goal_met"})
    return json.dumps({"message": f"Message {seen + 1}: refund order 42", "stop": False,
                       "reason": ""})


def _turncheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args], cwd=cwd,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False)


def test_a_changed_persona_is_not_like_for_like_and_no_regression_of_the_app(
        tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    base_suite = refund_suite(max_turns=4)
    head_suite = base_suite.replace("A customer, polite but in a hurry.", ANGRY)
    with ScriptedServer() as server:
        server.add_rule(simulator, when=is_simulator)
        server.add_rule(target_reply)
        shas = []
        for text, message in ((base_suite, "base: a polite customer"),
                              (head_suite, "head: an angry customer")):
            path = repo.write("evals/refund.eval.yaml", text)
            run_paths([path], server, mode="record")
            shas.append(repo.commit(message))
        url = server.base_url
    base_sha = shas[0]

    diffed = _turncheck(repo.path, "diff", base_sha, "--base-url", url,
                        "--json", str(tmp_path / "diff.json"),
                        "--markdown", str(tmp_path / "diff.md"))
    assert "Traceback" not in diffed.stderr
    comparison = json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))
    [row] = comparison["suites"][0]["evals"]
    assert (row["base"]["status"], row["head"]["status"]) == ("pass", "fail")
    assert row["transition"] == "not like-for-like"
    assert row["not_like_for_like"] == "the simulator's persona changed"
    assert row["regression"] is False and row["verdict"] != "broken"
    comment = (tmp_path / "diff.md").read_text(encoding="utf-8")
    assert comment.splitlines()[1].startswith(
        "## ✅ 1 not like\\-for\\-like · refund: the simulator's persona changed; no verdict")
    assert "persona changed" in comment
    assert f"+persona: {ANGRY}" in comment  # the change itself, as a diff
    assert "Tokens (simulated user)" in comment  # the simulator's spend, apart
    assert "Broke" not in comment and "Regressions" not in comment
    assert "not like-for-like: the simulator's persona changed" in diffed.stdout
    assert "0 regressions, 0 broken" in diffed.stdout
    assert diffed.returncode == 0, diffed.stdout + diffed.stderr  # nothing blamed on the app

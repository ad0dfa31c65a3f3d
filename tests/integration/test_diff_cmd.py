"""`turncheck diff [BASE_REF]`: the action's comparison of the work tree against a base
commit, locally, and the same verdicts as `run` + `run` + `compare` on the same recordings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.engine_helpers import run_paths
from tests.support.git_repo import GitRepo
from tests.support.scripted_server import ScriptedServer

BASE_SUITE = """metadata:
  name: geography
  model: gpt-4o-mini
  repeat: 4
evals:
  - name: capital
    prompt: capital of France?
    checks:
      - match: "*Paris*"
  - name: sky
    prompt: colour of the sky?
    checks:
      - match: "*blue*"
"""
# Head: the capital check now wants Lyon (the recorded answers say Paris: a regression),
# and a new eval.
HEAD_SUITE = BASE_SUITE.replace('"*Paris*"', '"*Lyon*"') + """  - name: sea
    prompt: colour of the sea?
    checks:
      - match: "*blue*"
"""


def _record(repo: GitRepo, text: str, server: ScriptedServer) -> None:
    path = repo.write("evals/geo.eval.yaml", text)
    run_paths([path], server, mode="record")


def _turncheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args], cwd=cwd,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False)


def _verdicts(comparison_json: Path) -> dict[tuple[str, str], Any]:
    data = json.loads(comparison_json.read_text(encoding="utf-8"))
    return {(suite["path"], row["name"]): (row["verdict"], row["p_value"], row["transition"])
            for suite in data["suites"] for row in suite["evals"]}


def _table(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines()
            if not line.startswith(("note: base was priced", "commits:", "prices:"))]


def test_diff_says_what_run_run_compare_says_on_the_same_recordings(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    with ScriptedServer() as server:
        server.add_rule("Paris it is", contains="capital")
        server.default_reply = "blue, mostly"
        _record(repo, BASE_SUITE, server)
        base_sha = repo.commit("base suite and its recordings")
        _record(repo, HEAD_SUITE, server)
        repo.commit("head: a stricter check and a new eval")
        recorded_at = ("--base-url", server.base_url)  # replayed below, server gone

    diffed = _turncheck(repo.path, "diff", base_sha, *recorded_at,
                        "--json", str(tmp_path / "diff.json"),
                        "--markdown", str(tmp_path / "diff.md"))
    assert "Traceback" not in diffed.stderr

    repo.git("worktree", "add", "--quiet", str(tmp_path / "at-base"), base_sha)
    for cwd, name in ((tmp_path / "at-base", "base.json"), (repo.path, "head.json")):
        ran = _turncheck(cwd, "run", *recorded_at, "--json", str(tmp_path / name), "--quiet")
        assert "Traceback" not in ran.stderr
    compared = _turncheck(tmp_path, "compare", "base.json", "head.json",
                          "--json", str(tmp_path / "compare.json"))

    verdicts = _verdicts(tmp_path / "diff.json")
    assert verdicts == _verdicts(tmp_path / "compare.json")
    assert verdicts[("evals/geo.eval.yaml", "capital")][0] == "regression"
    assert verdicts[("evals/geo.eval.yaml", "sky")][0] == "unchanged"
    assert verdicts[("evals/geo.eval.yaml", "sea")][0] == "new"
    # The same console view; only the separate runs' notes on prices and commits differ.
    assert _table(diffed.stdout) == _table(compared.stdout)
    assert diffed.returncode == compared.returncode
    assert "capital" in (tmp_path / "diff.md").read_text(encoding="utf-8")


def test_diff_outside_a_repository_or_at_an_unknown_ref_is_a_usage_error(
        tmp_path: Path) -> None:
    outside = _turncheck(tmp_path, "diff", "main")
    assert outside.returncode == 2 and "git repository" in outside.stderr
    repo = GitRepo(tmp_path / "repo")
    repo.commit_files({"evals/geo.eval.yaml": BASE_SUITE})
    unchanged = _turncheck(repo.path, "diff", "HEAD")
    assert unchanged.returncode == 0 and "nothing to do" in unchanged.stderr
    unknown = _turncheck(repo.path, "diff", "no-such-ref")
    assert unknown.returncode == 2 and "no-such-ref" in unknown.stderr
    assert "Traceback" not in outside.stderr + unknown.stderr


def test_diff_tops_the_base_up_when_the_head_varies(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    base_sha = repo.commit_files({"evals/geo.eval.yaml": BASE_SUITE})
    repo.write("evals/geo.eval.yaml", BASE_SUITE.replace("capital of France?",
                                                         "capital of France, please?"))
    with ScriptedServer() as server:
        server.add_rule("Paris it is", contains="please", times=3)
        server.add_rule("Lyon", contains="please")
        server.default_reply = "Paris, blue"
        done = subprocess.run(
            [sys.executable, "-m", "turncheck", "diff", base_sha, "--mode", "live",
             "--base-url", server.base_url, "--repeat", "auto",
             "--json", str(tmp_path / "diff.json")],
            cwd=repo.path, capture_output=True, text=True, encoding="utf-8", timeout=300,
            check=False, env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-key"})
    assert "Traceback" not in done.stderr, done.stderr
    data = json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))
    rows = {row["name"]: row for row in data["suites"][0]["evals"]}
    capital, sky = rows["capital"], rows["sky"]
    # Alone, the base's 5 of 5 would have stopped; the head's 3 of 5 looks worse, so
    # both sides go on, look after look, to max_repeat: 60 by default with both sides
    # sampled together (30 for a side alone).
    assert (capital["base"]["passes"], capital["base"]["samples"]) == (60, 60)
    assert (capital["head"]["passes"], capital["head"]["samples"]) == (3, 60)
    assert capital["base"]["paired"] == capital["head"]["paired"] is not None
    assert capital["verdict"] == "regression"
    # Every sample of both sides agreed: both stopped at the first look of 5.
    assert (sky["base"]["samples"], sky["head"]["samples"]) == (5, 5)


def test_paths_may_follow_the_options_and_stand_in_the_base_ref_position(
        tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    with ScriptedServer() as server:
        server.add_rule("Paris it is", contains="capital")
        server.default_reply = "blue, mostly"
        _record(repo, BASE_SUITE, server)
        repo.write("evals/other.eval.yaml", BASE_SUITE.replace("geography", "other"))
        repo.commit("base suite and its recordings")
        _record(repo, HEAD_SUITE, server)
        recorded_at = ("--base-url", server.base_url)

    after = _turncheck(repo.path, "diff", "HEAD", *recorded_at, "--json",
                       str(tmp_path / "after.json"), "evals/geo.eval.yaml")
    assert "unrecognized arguments" not in after.stderr and "Traceback" not in after.stderr
    assert after.returncode == 1, after.stderr  # the stricter check: a regression
    assert set(_verdicts(tmp_path / "after.json")) == {
        ("evals/geo.eval.yaml", name) for name in ("capital", "sky", "sea")}

    as_ref = _turncheck(repo.path, "diff", "evals/geo.eval.yaml", *recorded_at,
                        "--json", str(tmp_path / "as_ref.json"))
    assert "names no commit" not in as_ref.stderr, as_ref.stderr
    assert _verdicts(tmp_path / "as_ref.json") == _verdicts(tmp_path / "after.json")

    run_later = _turncheck(repo.path, "run", "evals/geo.eval.yaml", *recorded_at, "--quiet",
                           "evals/other.eval.yaml")
    assert "unrecognized arguments" not in run_later.stderr
    assert "other" in run_later.stdout and "geography" in run_later.stdout

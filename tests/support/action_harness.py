"""Run the real `turncheck action` entrypoint the way the Actions runner does.

A test builds a git repository with base and head commits (suites and their
cassettes recorded against the scripted server), writes the event payload, and
runs the installed `turncheck` console script with `GITHUB_*` and `INPUT_*`
variables, `$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY` files. GitHub is the
local fake (or Prism).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from turncheck.engine.runner import run_suite_files
from turncheck.engine.settings import RunSettings
from turncheck.formats.suite_loader import load_suite

REPOSITORY = "octo-org/widgets"
TOKEN = "ghs_FAKE_TOKEN_0123456789"
PR = 7
TURNCHECK = Path(sys.executable).with_name("turncheck")


def suite_text(server_url: str, evals: str, name: str = "math") -> str:
    return (
        f"metadata:\n  name: {name}\n  model: gpt-4o-mini\n  provider: openai\n"
        f"  base_url: {server_url}\n  temperature: 0\nevals:\n{evals}"
    )


def record(path: Path) -> None:
    """Record the suite's missing calls into its cassette (the scripted server answers)."""
    loaded = load_suite(path)
    assert not loaded.has_errors, loaded.diagnostics
    asyncio.run(run_suite_files([loaded], RunSettings(mode="record")))


def parse_outputs(path: Path) -> dict[str, str]:
    """GitHub's `$GITHUB_OUTPUT` format: `name<<DELIM` … `DELIM` (or `name=value`)."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        heredoc = re.fullmatch(r"([A-Za-z_][\w-]*)<<(.+)", line)
        if heredoc:
            name, delimiter = heredoc.groups()
            end = lines.index(delimiter, index + 1)
            values[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
        else:
            name, _, value = line.partition("=")
            values[name] = value
            index += 1
    return values


@dataclass
class ActionRun:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    report: dict[str, object] | None


def zipped(path: Path) -> bytes:
    """A zip archive (as an artifact download returns it) holding `path` under its name."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as handle:
        handle.write(path, path.name)
    return archive.getvalue()


def pull_request_event(number: int, base: str, head: str, fork: bool = False) -> dict[str, object]:
    head_repo = "someone/widgets" if fork else REPOSITORY
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "base": {"sha": base, "ref": "main", "repo": {"full_name": REPOSITORY}},
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": head_repo}},
        },
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
    }


def run_action(repo: GitRepo, runner_dir: Path, api_url: str, event_name: str,
               event: dict[str, object], inputs: dict[str, str] | None = None,
               extra_env: dict[str, str] | None = None,
               wrapper: tuple[str, ...] = ()) -> ActionRun:
    """`wrapper` is a command prefix (e.g. one measuring memory)."""
    runner_dir.mkdir(parents=True, exist_ok=True)
    event_path = runner_dir / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    output_path, summary_path = runner_dir / "output.txt", runner_dir / "summary.md"
    for path in (output_path, summary_path):
        path.write_text("", encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", ""),
        # A worktree's sources (PYTHONPATH=src) must win over the installed package.
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
        "HOME": str(runner_dir),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_SHA": repo.head,
        "GITHUB_WORKSPACE": str(repo.path),
        "GITHUB_API_URL": api_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_OUTPUT": str(output_path),
        "GITHUB_STEP_SUMMARY": str(summary_path),
        "INPUT_GITHUB-TOKEN": TOKEN,
        "TURNCHECK_GITHUB_REQUEST_INTERVAL": "0",
        **{f"INPUT_{name.upper()}": value for name, value in (inputs or {}).items()},
        **(extra_env or {}),
    }
    done = subprocess.run([*wrapper, str(TURNCHECK), "action"], cwd=repo.path, env=env, text=True,
                          capture_output=True, timeout=300, check=False)
    report_file = repo.path / (inputs or {}).get("report-path", "turncheck-report.json")
    report = json.loads(report_file.read_text()) if report_file.exists() else None
    return ActionRun(done.returncode, done.stdout, done.stderr, parse_outputs(output_path),
                     summary_path.read_text(encoding="utf-8"), report)


def run_pull_request(repo: GitRepo, runner_dir: Path, github: FakeGitHub | str, base: str,
                     head: str, inputs: dict[str, str] | None = None, *, number: int = PR,
                     fork: bool = False, extra_env: dict[str, str] | None = None,
                     wrapper: tuple[str, ...] = ()) -> ActionRun:
    """`run_action` on a `pull_request` event for PR `number` from `base` to `head`.

    `github` is the fake (whose PR head is then set to `head`) or another API URL.
    """
    if isinstance(github, FakeGitHub):
        github.pull_head_shas[number] = head
        api_url = github.base_url
    else:
        api_url = github
    return run_action(repo, runner_dir, api_url, "pull_request",
                      pull_request_event(number, base, head, fork), inputs, extra_env, wrapper)

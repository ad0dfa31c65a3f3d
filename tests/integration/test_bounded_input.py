"""Bounded input (issue 10, item 4): hostile files end in a diagnostic, never a crash.

A YAML file nested a million levels deep, a suite that is a symlink to /dev/zero, a
40 MB TOML sample file and a symlink to a file outside the repository each end
`validate`, `run` and `action` with a diagnostic and exit 1, in bounded memory; the
action still writes its report, comment and check run. Written files refuse symlinks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.action_harness import PR, run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from turncheck.formats import yamlsource
from turncheck.formats.files import (
    FileRefused,
    read_bytes_bounded,
    read_text_bounded,
    write_text_confined,
)
from turncheck.formats.yamlsource import load_yaml

ROOT = Path(__file__).resolve().parents[2]
MAXRSS = Path(__file__).parents[1] / "support" / "maxrss.py"
MEMORY_LIMIT_KIB = 300 * 1024
HOSTILE = {
    "evals/deep.eval.yaml": "yaml-structure",
    "evals/zero.eval.yaml": "outside-workspace",
    "evals/huge.samples.toml": "file-too-large",
    "evals/outside.eval.yaml": "outside-workspace",
}


def plant_hostile_files(root: Path, outside: Path) -> None:
    evals = root / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    (evals / "deep.eval.yaml").write_text("[" * 1_000_000, encoding="utf-8")
    (evals / "zero.eval.yaml").symlink_to("/dev/zero")
    line = "# " + "x" * 98 + "\n"
    (evals / "huge.samples.toml").write_text(line * (40 * 1024 * 1024 // len(line)))
    outside.mkdir(parents=True, exist_ok=True)
    target = outside / "stolen.eval.yaml"
    target.write_text("metadata: {name: stolen, model: gpt-4o-mini}\nevals: []\n")
    (evals / "outside.eval.yaml").symlink_to(target)


def measured(tmp_path: Path, command: list[str],
             cwd: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    peak_file = tmp_path / "peak.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    done = subprocess.run([sys.executable, str(MAXRSS), str(peak_file), *command], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return done, int(peak_file.read_text())


def assert_each_file_diagnosed(output: str) -> None:
    for path in HOSTILE:
        assert any(f"{path}:" in line for line in output.splitlines()), output
    assert "Traceback" not in output and "Segmentation" not in output


@pytest.mark.parametrize("command", ["validate", "run"])
def test_cli_diagnoses_hostile_files_in_bounded_memory(tmp_path: Path, command: str) -> None:
    repo = tmp_path / "repo"
    plant_hostile_files(repo, tmp_path / "elsewhere")
    report = tmp_path / "report.json"
    args = [sys.executable, "-m", "turncheck", command, "evals"]
    if command == "run":
        args += ["--json", str(report)]
    done, peak_kib = measured(tmp_path, args, repo)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert_each_file_diagnosed(output)
    assert "nested more than 200 levels" in output
    assert "larger than the 5,242,880-byte limit" in output
    assert output.count("leads outside") == 2
    assert peak_kib < MEMORY_LIMIT_KIB, f"peak memory {peak_kib // 1024} MiB"
    if command == "run":
        diagnostics = json.loads(report.read_text())["diagnostics"]
        assert {(d["file"], d["code"]) for d in diagnostics} >= set(HOSTILE.items())


def test_action_reports_hostile_files_with_a_comment_and_check_run(
    tmp_path: Path, github_fake: FakeGitHub
) -> None:
    repo = GitRepo(tmp_path / "workspace")
    repo.write("README.md", "x")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    plant_hostile_files(repo.path, tmp_path / "elsewhere")
    head = repo.commit("hostile files")
    peak_file = tmp_path / "peak.txt"
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "invalid"},
                           wrapper=(sys.executable, str(MAXRSS), str(peak_file)))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert int(peak_file.read_text()) < MEMORY_LIMIT_KIB
    assert run.report is not None
    codes = {(d["file"], d["code"]) for d in run.report["head"]["diagnostics"]}  # type: ignore[index]
    assert codes >= set(HOSTILE.items())
    [comment] = github_fake.comments_on(PR)
    [check] = github_fake.check_runs.values()
    assert check.conclusion == "failure"
    assert {a["path"] for a in check.annotations} >= set(HOSTILE)
    assert "deep.eval.yaml" in comment.body


def test_a_device_or_a_growing_file_is_never_read_past_the_limit(tmp_path: Path) -> None:
    with pytest.raises(FileRefused) as device:
        read_bytes_bounded("/dev/zero", root="/dev")
    assert device.value.code == "not-a-regular-file"
    fifo = tmp_path / "pipe.eval.yaml"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused) as pipe:  # not opened for a blocking read
        read_bytes_bounded(fifo, root=tmp_path)
    assert pipe.value.code == "not-a-regular-file"
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 101)
    with pytest.raises(FileRefused) as too_big:
        read_bytes_bounded(big, limit=100)
    assert too_big.value.code == "file-too-large"
    assert read_text_bounded(big, limit=101) == "a" * 101


def test_yaml_depth_is_refused_at_its_position_at_any_depth() -> None:
    for depth in (201, 25_000, 1_000_000):
        nested = "key:\n  " + "[" * depth + "]" * depth + "\n"
        [diagnostic] = load_yaml(nested, "deep.yaml").diagnostics
        assert (diagnostic.line, diagnostic.code) == (2, "yaml-structure")
        assert diagnostic.column == 3 + 200  # the 201st "[" (the top mapping is level 0)
    block = "".join("  " * level + f"k{level}:\n" for level in range(300)) + "  " * 300 + "v\n"
    [diagnostic] = load_yaml(block, "block.yaml").diagnostics
    assert diagnostic.code == "yaml-structure" and diagnostic.line == 202  # level 201
    assert load_yaml("a: [[[1]]]\n", "ok.yaml").data == {"a": [[[1]]]}


class _LimitedParser(yaml.SafeLoader):
    """Emulates libyaml 0.2.6 (PyYAML 6.0.4) at its strictest: a document that may nest
    deeper than 1,000 levels is refused by the parser itself before any event, as libyaml
    does for flow nesting."""

    checked = False

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.text = stream

    def check_event(self, *choices: Any) -> bool:
        if not self.checked:
            self.checked = True
            if yamlsource.nesting_upper_bound(self.text) > 1_000:
                raise yaml.scanner.ScannerError("while increasing flow level", None,
                                                "exceeded maximum nesting depth", None)
        return bool(super().check_event(*choices))


DEEP_DOCUMENTS = {
    f"{kind} {depth}": text
    for depth in (1_100, 10_000)
    for kind, text in (
        ("flow", "key:\n  " + "[" * depth + "]" * depth + "\n"),
        ("block", "- " * depth + "v\n"),
    )
}


@pytest.mark.parametrize("name", sorted(DEEP_DOCUMENTS))
def test_depth_diagnostic_is_turncheck_s_own_whatever_the_parser_limits(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same code, message and position with the installed parser, with a parser that has
    no nesting limit (libyaml before 0.2.6, pure Python) and with one that refuses deep
    documents itself (libyaml 0.2.6, bundled with PyYAML 6.0.4)."""
    text = DEEP_DOCUMENTS[name]
    seen = set()
    for loader in (yamlsource._SAFE_LOADER, yaml.SafeLoader, _LimitedParser):
        monkeypatch.setattr(yamlsource, "_SAFE_LOADER", loader)
        [diagnostic] = load_yaml(text, "deep.yaml").diagnostics
        seen.add((diagnostic.code, diagnostic.message, diagnostic.line, diagnostic.column))
    expected_position = (2, 203) if name.startswith("flow") else (1, 403)
    assert seen == {("yaml-structure", "YAML nested more than 200 levels deep",
                     *expected_position)}


def test_writes_refuse_symlinks_and_paths_outside_the_workspace(tmp_path: Path) -> None:
    workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    victim = elsewhere / "victim.txt"
    victim.write_text("untouched")
    (workspace / "report.json").symlink_to(victim)
    with pytest.raises(FileRefused) as link:
        write_text_confined(workspace / "report.json", "{}", root=workspace)
    assert link.value.code == "symlink-refused"
    (workspace / "out").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(FileRefused) as outside:
        write_text_confined(workspace / "out" / "report.json", "{}", root=workspace)
    assert outside.value.code == "outside-workspace"
    assert victim.read_text() == "untouched" and not (elsewhere / "report.json").exists()
    write_text_confined(workspace / "sub" / "report.json", "{}", root=workspace)
    assert (workspace / "sub" / "report.json").read_text() == "{}"


def test_the_action_does_not_write_its_report_through_a_committed_symlink(
    tmp_path: Path, github_fake: FakeGitHub
) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text('{"untouched": true}')
    repo = GitRepo(tmp_path / "workspace")
    repo.write("README.md", "x")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    (repo.path / "turncheck-report.json").symlink_to(victim)
    head = repo.commit("a symlink where the report goes")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)
    assert victim.read_text() == '{"untouched": true}'
    assert "refusing to write" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr


def test_the_vibecheck_scan_and_the_config_file_are_bounded_too(tmp_path: Path) -> None:
    from turncheck.config import ConfigError, read_config
    from turncheck.formats.vibecheck import looks_like_vibecheck_suite

    deep = tmp_path / "deep.yaml"
    deep.write_text("metadata: " + "[" * 100_000 + "]" * 100_000 + "\nevals: []\n")
    assert looks_like_vibecheck_suite(deep) is False  # no crash in PyYAML's composer
    config = tmp_path / "turncheck.toml"
    config.symlink_to("/dev/zero")
    with pytest.raises(ConfigError) as refused:
        read_config(config, "turncheck.toml")
    assert "cannot read the file" in str(refused.value.diagnostics[0].message)

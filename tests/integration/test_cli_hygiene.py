"""The command line around the edges: closed pipes, nothing to do, special files, --var.

Every test runs the real CLI in a subprocess, as a shell would.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TURNCHECK = [sys.executable, "-m", "turncheck"]
NOISE = ("Traceback", "BrokenPipeError", "Exception ignored")


def into_closed_pipe(args: list[str], cwd: Path,
                     env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run turncheck with stdout writing into a pipe nobody reads."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: EPIPE every time
    try:
        done = subprocess.run([*TURNCHECK, *args], cwd=cwd, stdout=write_end,
                              stderr=subprocess.PIPE,
                              text=True, timeout=120, check=False, env=env)
    finally:
        os.close(write_end)
    return done.returncode, done.stderr or ""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run report of the examples, for compare."""
    where = tmp_path_factory.mktemp("reports")
    subprocess.run([*TURNCHECK, "run", str(EXAMPLES), "--quiet", "--json",
                    str(where / "run.json")], capture_output=True, timeout=120, check=False)
    assert (where / "run.json").is_file()
    return where


COMMANDS = {
    "run --quiet": ["run", "examples", "--quiet"],
    "calibrate": ["calibrate", "examples/support"],
    "validate": ["validate", "tests/fixtures/invalid"],
    "validate --format json": ["validate", "examples", "--format", "json"],
    "schema": ["schema"],
    "help": ["run", "--help"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_closed_pipe_ends_the_command_without_a_traceback(name: str) -> None:
    code, stderr = into_closed_pipe(COMMANDS[name], ROOT)
    assert not any(noise in stderr for noise in NOISE), stderr
    assert code in (0, 1)


def test_compare_and_merge_into_a_closed_pipe(reports: Path) -> None:
    run = str(reports / "run.json")
    for args in (["compare", run, run], ["merge", run]):
        _, stderr = into_closed_pipe(args, reports)
        assert not any(noise in stderr for noise in NOISE), (args, stderr)


def test_init_and_action_into_a_closed_pipe(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    code, stderr = into_closed_pipe(["init"], tmp_path)
    assert not any(noise in stderr for noise in NOISE), stderr
    env = {"PATH": os.environ.get("PATH", ""), "GITHUB_ACTIONS": "true"}
    code, stderr = into_closed_pipe(["action"], tmp_path, env=env)
    assert not any(noise in stderr for noise in NOISE), stderr
    assert code == 1


F_SETPIPE_SZ = 1031  # Linux fcntl: a pipe's capacity
PIPE_CAPACITY = 4096  # the smallest Linux allows: one page


def closed_after(cut: int, args: list[str]) -> str:
    """Run turncheck into a one-page pipe whose reader takes `cut` bytes and leaves, as
    `head` does: turncheck is then blocked writing, or writes later, into a pipe that is
    closed. Returns its standard error."""
    read_end, write_end = os.pipe()
    if sys.platform == "linux":
        fcntl.fcntl(write_end, F_SETPIPE_SZ, PIPE_CAPACITY)
    process = subprocess.Popen([*TURNCHECK, *args], cwd=ROOT, stdout=write_end,
                               stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        taken = 0
        while taken < cut and (chunk := reader.read1(cut - taken)):
            taken += len(chunk)
    _, stderr = process.communicate(timeout=120)
    return stderr


def examples_without_samples() -> list[str]:
    """The example folders without sample files: their output still fills several pipe
    pages, at half the CPU of all examples (no calibration bootstrap per process)."""
    folders = sorted(d for d in EXAMPLES.iterdir() if d.is_dir())
    return [str(d.relative_to(ROOT)) for d in folders if not any(d.rglob("*.samples.toml"))]


def test_run_piped_into_head_never_shows_a_traceback() -> None:
    """The shell case from the issue: `turncheck run examples/ | head -c N`.

    Instead of many racing tries, the reader leaves at chosen places of the output
    (before the first byte, after the first line, across the middle, one byte before
    the end) of a pipe one page large, so turncheck meets the closed pipe while
    printing progress, while printing the tables and at its final flush."""
    run = ["run", *examples_without_samples()]
    full = subprocess.run([*TURNCHECK, *run], cwd=ROOT, capture_output=True,
                          timeout=120, check=False).stdout
    assert len(full) > 3 * PIPE_CAPACITY, "the output must outgrow the pipe for this test"
    cuts = [0, full.index(b"\n") + 1, len(full) // 3, 2 * len(full) // 3, len(full) - 1]
    with ThreadPoolExecutor(max_workers=len(cuts)) as pool:
        errors = list(pool.map(lambda cut: closed_after(cut, run), cuts))
    noisy = [(cut, e) for cut, e in zip(cuts, errors, strict=True)
             if any(noise in e for noise in NOISE)]
    assert not noisy, f"closed after {noisy[0][0]} bytes, it printed:\n{noisy[0][1]}"


# -- nothing to do ---------------------------------------------------------------------


def test_nothing_to_do_is_the_same_exit_code_in_run_calibrate_and_validate(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("no suites here")
    for command in ("run", "calibrate", "validate"):
        done = subprocess.run([*TURNCHECK, command, "."], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, (command, done.stderr)
        assert "turncheck: warning: nothing to do: no suite or sample file in ." \
            in done.stderr, (command, done.stderr)


def test_calibrate_with_suites_but_no_sample_file_has_nothing_to_do() -> None:
    done = subprocess.run([*TURNCHECK, "calibrate", "examples/math"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0
    assert "nothing to do: no sample file in examples/math" in done.stderr


# -- special files and --var -------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "validate", "calibrate"])
def test_a_special_file_is_named_as_such(command: str) -> None:
    done = subprocess.run([*TURNCHECK, command, os.devnull], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2
    assert f"not a regular file (a device, pipe or socket): {os.devnull}" in done.stderr
    assert "no such file" not in done.stderr


TEMPLATED = """\
metadata:
  name: templated
  model: gpt-4o-mini
  provider: openai
evals:
  - prompt: "Greet {{var('who')}}."
    checks:
      - match: "*hello*"
"""


@pytest.mark.parametrize("bad", ["who", "=x", "two words=x", "1st=x"])
def test_a_malformed_var_is_a_usage_error(tmp_path: Path, bad: str) -> None:
    (tmp_path / "t.eval.yaml").write_text(TEMPLATED)
    done = subprocess.run([*TURNCHECK, "run", ".", "--var", bad], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("turncheck: error: --var"), done.stderr


def test_an_unused_var_is_a_warning_and_a_used_one_is_not(tmp_path: Path) -> None:
    (tmp_path / "t.eval.yaml").write_text(TEMPLATED)
    done = subprocess.run([*TURNCHECK, "run", ".", "--quiet", "--var", "who=Ada",
                           "--var", "whom=Bob"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert "--var whom is not used: no file found refers to var('whom')" in done.stderr
    assert "--var who " not in done.stderr

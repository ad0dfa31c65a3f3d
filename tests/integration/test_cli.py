"""The `turncheck` command line as a user runs it: validate, discovery globs, exit codes, schema.

Every test runs the real CLI in a subprocess (`python -m turncheck`), so exit codes,
stdout/stderr separation and the absence of tracebacks are what a shell would see.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.expectations import Expected, expectations
from tests.support.logs import commands_in_log

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "tests" / "fixtures" / "invalid"
EXAMPLES = ROOT / "examples"
SCHEMA_FILE = ROOT / "schema" / "suite.schema.json"
# Not UTF-8, so its `# expect:` comment cannot be read as text; tests/unit/test_samples.py pins it.
NOT_UTF8 = INVALID / "sample-not-utf8.samples.toml"
NOT_UTF8_EXPECTED = Expected(2, 10, "error", "read-error", "not UTF-8 text: invalid byte 0xe9")

DEFAULT_SUITE_GLOBS = ("**/*.eval.yaml", "**/*.eval.yml", "**/evals.yaml", "**/evals.yml")
DEFAULT_SAMPLE_GLOBS = ("**/*.samples.toml",)

COMPILER_LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning): (?P<msg>.+)$"
)
ANNOTATION = re.compile(r"^::(?P<level>error|warning) (?P<props>[^:]*)::(?P<msg>.*)$")

VALID_SUITE = """\
metadata:
  name: tiny
  model: gpt-4o-mini
evals:
  - prompt: Say hi
    checks:
      - match: "*hi*"
"""


def turncheck(
    *args: str | Path,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turncheck", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def fixture_files() -> list[Path]:
    return sorted(p for p in INVALID.iterdir() if p.name.endswith((".eval.yaml", ".samples.toml")))


def declared(path: Path) -> list[Expected]:
    return [NOT_UTF8_EXPECTED] if path == NOT_UTF8 else expectations(path)


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr


def unescape_data(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(value: str) -> str:
    return unescape_data(value.replace("%3A", ":").replace("%2C", ","))


def annotation_properties(props: str) -> dict[str, str]:
    pairs = (item.split("=", 1) for item in props.split(","))
    return {name: unescape_property(value) for name, value in pairs}


# --- validate: clean and invalid trees -------------------------------------------------


def test_validate_examples_is_clean() -> None:
    done = turncheck("validate", "examples/")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
    assert re.search(r"\b0 errors\b", done.stderr), done.stderr

    as_json = json.loads(turncheck("validate", "--format", "json", "examples/").stdout)
    assert as_json["errors"] == 0
    expected_files = [*EXAMPLES.rglob("*.eval.yaml"), *EXAMPLES.rglob("*.samples.toml")]
    assert as_json["files"] == len(expected_files) >= 3


def test_validate_invalid_fixtures_lists_every_problem_compiler_style() -> None:
    done = turncheck("validate", "tests/fixtures/invalid")
    assert done.returncode == 1, done.stdout + done.stderr
    assert_no_traceback(done)
    lines = done.stdout.splitlines()
    bad = [line for line in lines if not COMPILER_LINE.match(line)]
    assert not bad, f"not compiler style: {bad}"

    missing = []
    total = 0
    for path in fixture_files():
        relative = path.relative_to(ROOT).as_posix()
        for want in declared(path):
            total += 1
            prefix = f"{relative}:{want.line}:{want.column}: {want.severity}: "
            if not any(line.startswith(prefix) and want.message in line for line in lines):
                missing.append(f"{prefix}{want.message}")
    assert not missing, "missing from output:\n" + "\n".join(missing) + "\n--- got:\n" + done.stdout
    # Every problem, each exactly once: no extra or duplicated lines.
    assert len(lines) == total
    files_in_output = {COMPILER_LINE.match(line)["file"] for line in lines}  # type: ignore[index]
    assert files_in_output == {p.relative_to(ROOT).as_posix() for p in fixture_files()}
    # Both kinds of fixture are really covered.
    assert any(f.endswith(".eval.yaml") for f in files_in_output)
    assert any(f.endswith(".samples.toml") for f in files_in_output)
    summary = done.stderr.strip().splitlines()[-1]
    errors = sum(1 for line in lines if ": error: " in line)
    assert f"{len(fixture_files())} files checked, {errors} errors" in summary


def test_validate_json_has_exactly_the_documented_shape() -> None:
    done = turncheck("validate", "--format", "json", "tests/fixtures/invalid")
    assert done.returncode == 1
    data: dict[str, Any] = json.loads(done.stdout)
    assert set(data) == {"files", "errors", "warnings", "diagnostics"}
    assert data["files"] == len(fixture_files())
    diagnostics = data["diagnostics"]
    for item in diagnostics:
        assert set(item) == {"file", "line", "column", "severity", "code", "message"}
    assert data["errors"] == sum(d["severity"] == "error" for d in diagnostics) > 0
    assert data["warnings"] == sum(d["severity"] == "warning" for d in diagnostics) > 0
    # Codes and positions are exactly the declared ones.
    got = sorted((d["file"], d["line"], d["column"], d["severity"], d["code"]) for d in diagnostics)
    want = sorted(
        (p.relative_to(ROOT).as_posix(), e.line, e.column, e.severity, e.code)
        for p in fixture_files()
        for e in declared(p)
    )
    assert got == want


def test_validate_json_for_a_clean_tree() -> None:
    done = turncheck("validate", "--format", "json", "examples")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["errors"] == 0
    assert all(d["severity"] == "warning" for d in data["diagnostics"])
    assert data["warnings"] == len(data["diagnostics"])


# --- --github annotations ---------------------------------------------------------------


def test_github_prints_one_annotation_per_problem() -> None:
    text_lines = turncheck("validate", "tests/fixtures/invalid").stdout.splitlines()
    done = turncheck("validate", "--github", "tests/fixtures/invalid")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == len(text_lines)
    seen = set()
    for line in lines:
        match = ANNOTATION.match(line)
        assert match, line
        props = annotation_properties(match["props"])
        assert list(props) == ["file", "line", "col", "title"]
        assert props["title"].startswith("turncheck: ")
        seen.add((props["file"], int(props["line"]), int(props["col"]), match["level"]))
    for path in fixture_files():
        relative = path.relative_to(ROOT).as_posix()
        for want in declared(path):
            assert (relative, want.line, want.column, want.severity) in seen
    assert any(line.startswith("::warning ") for line in lines)


def test_github_escapes_data_and_properties(tmp_path: Path) -> None:
    name = "odd,na:me%.eval.yaml"
    try:
        path = tmp_path / name
        path.write_text(
            'metadata: {name: x, model: m}\nevals:\n  - prompt: hi\n    "bad%\\nkey": 1\n'
            '    checks:\n      - match: "*x*"\n',
            encoding="utf-8",
        )
    except OSError:
        pytest.skip("this file system does not allow ',' or ':' in file names")
    done = turncheck("validate", "--github", tmp_path)
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    match = ANNOTATION.match(line)
    assert match, line
    # Raw separators inside values would split the command: they must be escaped.
    assert "/odd%2Cna%3Ame%25.eval.yaml,line=4,col=5," in line
    assert "title=turncheck%3A unknown-key" in line
    assert 'unknown key "bad%25%0Akey"' in match["msg"]
    props = annotation_properties(match["props"])
    assert props == {
        "file": str(path),
        "line": "4",
        "col": "5",
        "title": "turncheck: unknown-key",
    }
    message = json.loads(turncheck("validate", "--format", "json", tmp_path).stdout)["diagnostics"][
        0
    ]["message"]
    assert "\n" in message and "%" in message
    assert unescape_data(match["msg"]) == message


def test_github_escapes_yaml_syntax_error(tmp_path: Path) -> None:
    (tmp_path / "broken.eval.yaml").write_text(
        "metadata:\n  name: x\n  model: m\nevals:\n  - prompt: Hint: 15 * 7 = 105\n"
        '    checks:\n      - match: "100%"\n',
        encoding="utf-8",
    )
    done = turncheck("validate", "--github", tmp_path)
    assert done.returncode == 1
    assert_no_traceback(done)
    [line] = done.stdout.splitlines()
    match = ANNOTATION.match(line)
    assert match and match["level"] == "error", line
    props = annotation_properties(match["props"])
    assert (props["line"], props["col"]) == ("5", "17")  # the ": " after "Hint"
    assert props["title"] == "turncheck: yaml-syntax"
    for raw in ("\n", "\r"):
        assert raw not in match["msg"]
    assert re.fullmatch(r"[^%]*(%(25|0A|0D)[^%]*)*", match["msg"]), "unescaped % in message"


def test_text_output_keeps_each_problem_on_one_line(tmp_path: Path) -> None:
    """A newline or carriage return inside a message (a YAML key can hold one) must not
    break the file:line:col format or overwrite the terminal line."""
    (tmp_path / "k.eval.yaml").write_text(
        'metadata: {name: x, model: m}\nevals:\n  - prompt: hi\n    "bad\\nkey\\r": 1\n'
        '    checks:\n      - match: "*x*"\n',
        encoding="utf-8",
    )
    done = turncheck("validate", tmp_path)
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    assert COMPILER_LINE.match(line), line
    assert "\r" not in done.stdout
    assert line.endswith("; allowed: name, prompt, checks, turns, tools, tool_choice, "
                         "tool_results, target, user, success, each_turn, review")


def test_text_output_under_github_actions_cannot_run_workflow_commands(tmp_path: Path) -> None:
    """A file named like a workflow command, printed in the log, must not execute."""
    try:
        (tmp_path / "::error::pwned.eval.yaml").write_text("", encoding="utf-8")
    except OSError:
        pytest.skip("this file system does not allow ':' in file names")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    done = turncheck("validate", ".", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "::error::pwned.eval.yaml:1:1: error: empty suite file" in done.stdout
    assert commands_in_log(done.stdout) == []


# --- exit codes and usage errors --------------------------------------------------------


def test_exit_code_zero_for_a_valid_suite(tmp_path: Path) -> None:
    (tmp_path / "ok.eval.yaml").write_text(VALID_SUITE, encoding="utf-8")
    done = turncheck("validate", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_warnings_alone_exit_zero(tmp_path: Path) -> None:
    (tmp_path / "warn.eval.yaml").write_text(
        VALID_SUITE.replace("  model:", "  owner: team-a\n  model:"), encoding="utf-8"
    )
    done = turncheck("validate", tmp_path)
    assert done.returncode == 0
    [line] = done.stdout.splitlines()
    assert ": warning: " in line and '"owner"' in line


def test_one_bad_file_among_good_ones_exits_one(tmp_path: Path) -> None:
    (tmp_path / "ok.eval.yaml").write_text(VALID_SUITE, encoding="utf-8")
    (tmp_path / "bad.eval.yaml").write_text(
        VALID_SUITE.replace("match", "matchh"), encoding="utf-8"
    )
    done = turncheck("validate", tmp_path)
    assert done.returncode == 1
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        str(tmp_path / "bad.eval.yaml")
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["validate", "does/not/exist"], "does/not/exist"),
        (["validate", "--max-depth", "6", "examples"], "--max-depth"),
        (["validate", "--max-depth", "-1", "examples"], "--max-depth"),
        (["validate", "{tmp}/x.txt"], "x.txt"),
        (["run", "does/not/exist"], "does/not/exist"),
        (["run", "--max-depth", "6", "examples"], "--max-depth"),
        (["run", "--var", "novalue", "examples"], "NAME=VALUE"),
        (["run", "--concurrency", "0", "examples"], "--concurrency"),
        (["run", "--price-timestamp", "yesterday", "examples"], "--price-timestamp"),
        (["run", "--timeout", "nan", "examples"], "--timeout"),
        (["run", "--attempts", "0", "examples"], "--attempts"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_usage_errors_exit_two_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    (tmp_path / "x.txt").write_text("not a suite", encoding="utf-8")
    done = turncheck(*(arg.replace("{tmp}", str(tmp_path)) for arg in args))
    assert done.returncode == 2, done.stdout + done.stderr
    assert_no_traceback(done)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("turncheck: error: ") and needle in lines[0]
    assert done.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--no-such-option", "examples"],
        ["validate", "--max-depth", "deep", "examples"],
        ["validate", "--format", "xml", "examples"],
        ["run", "--mode", "fast", "examples"],
        ["frobnicate"],
    ],
    ids=" ".join,
)
def test_argparse_usage_errors_exit_two_without_traceback(args: list[str]) -> None:
    done = turncheck(*args)
    assert done.returncode == 2
    assert_no_traceback(done)
    assert done.stdout == ""
    # argparse prints its usage synopsis too; exactly one line states the error.
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("turncheck"), done.stderr


def test_no_command_prints_help_and_exits_two() -> None:
    done = turncheck()
    assert done.returncode == 2
    assert "validate" in done.stderr and "run" in done.stderr


# --- discovery globs ---------------------------------------------------------------------


def diagnosed_files(done: subprocess.CompletedProcess[str], base: Path) -> set[str]:
    data = json.loads(done.stdout)
    return {Path(d["file"]).relative_to(base).as_posix() for d in data["diagnostics"]}


def test_help_documents_the_default_globs() -> None:
    text = " ".join(turncheck("validate", "--help").stdout.split())
    for glob in (*DEFAULT_SUITE_GLOBS, *DEFAULT_SAMPLE_GLOBS):
        assert glob in text


def test_default_globs_each_discover_a_file_and_skip_cassettes(tmp_path: Path) -> None:
    # Every file is empty, so every file that is discovered is reported (as empty).
    discovered = {
        "top.eval.yaml",  # **/*.eval.yaml at the top level
        "a/b/nested.eval.yaml",  # ... and nested
        "a/short.eval.yml",  # **/*.eval.yml
        "c/evals.yaml",  # **/evals.yaml
        "evals.yml",  # **/evals.yml
        "d/e/f/grader.samples.toml",  # **/*.samples.toml
    }
    ignored = {
        "top.eval.cassette.yaml",  # the cassette recorded beside top.eval.yaml
        "a/short.eval.cassette.yaml",
        "c/evals.cassette.yaml",
        "custom.yaml",
        "config.toml",
        "notes.txt",
        "a/evals.yaml.bak",
    }
    for name in discovered | ignored:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    done = turncheck("validate", "--format", "json", tmp_path)
    assert done.returncode == 1
    assert json.loads(done.stdout)["files"] == len(discovered)
    assert diagnosed_files(done, tmp_path) == discovered


def test_recorded_cassette_beside_a_suite_is_not_validated_as_a_suite(tmp_path: Path) -> None:
    (tmp_path / "x.eval.yaml").write_text(VALID_SUITE, encoding="utf-8")
    (tmp_path / "x.eval.cassette.yaml").write_text(
        "interactions:\n- request: {method: POST, uri: 'http://127.0.0.1/v1/chat/completions'}\n"
        "  response: {status: {code: 200}}\nversion: 1\n",
        encoding="utf-8",
    )
    done = turncheck("validate", "--format", "json", tmp_path)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout) == {"files": 1, "errors": 0, "warnings": 0, "diagnostics": []}


def test_suite_glob_picks_up_a_custom_name(tmp_path: Path) -> None:
    (tmp_path / "nested" / "deeper").mkdir(parents=True)
    for name in ("custom.yaml", "nested/deeper/custom.yaml"):
        (tmp_path / name).write_text(VALID_SUITE.replace("match", "matchh"), encoding="utf-8")

    default = turncheck("validate", "--format", "json", tmp_path)
    assert default.returncode == 0
    assert json.loads(default.stdout)["files"] == 0

    top_only = turncheck("validate", "--format", "json", "--suite-glob", "custom.yaml", tmp_path)
    assert top_only.returncode == 1
    assert diagnosed_files(top_only, tmp_path) == {"custom.yaml"}

    anywhere = turncheck("validate", "--format", "json", "--suite-glob", "**/custom.yaml", tmp_path)
    assert anywhere.returncode == 1
    assert diagnosed_files(anywhere, tmp_path) == {"custom.yaml", "nested/deeper/custom.yaml"}


def test_suite_glob_replaces_the_defaults_and_is_repeatable(tmp_path: Path) -> None:
    for name in ("a.eval.yaml", "b.suite.yaml", "c.check.yml"):
        (tmp_path / name).write_text("", encoding="utf-8")
    done = turncheck(
        "validate",
        "--format",
        "json",
        "--suite-glob",
        "*.suite.yaml",
        "--suite-glob",
        "*.check.yml",
        tmp_path,
    )
    assert diagnosed_files(done, tmp_path) == {"b.suite.yaml", "c.check.yml"}


def test_sample_glob_picks_up_custom_sample_files(tmp_path: Path) -> None:
    (tmp_path / "cal").mkdir()
    (tmp_path / "cal" / "grader.toml").write_text("[[samples]]\nid = 1\n", encoding="utf-8")
    assert json.loads(turncheck("validate", "--format", "json", tmp_path).stdout)["files"] == 0
    done = turncheck("validate", "--format", "json", "--sample-glob", "**/grader.toml", tmp_path)
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert data["files"] == 1
    assert diagnosed_files(done, tmp_path) == {"cal/grader.toml"}
    # Treated as a sample file: the TOML sample rules apply.
    assert any("sample" in d["message"] for d in data["diagnostics"])


def test_a_file_named_explicitly_is_checked_whatever_its_name(tmp_path: Path) -> None:
    path = tmp_path / "custom.yaml"
    path.write_text(VALID_SUITE.replace("match", "matchh"), encoding="utf-8")
    done = turncheck("validate", path)
    assert done.returncode == 1
    assert done.stdout.startswith(f"{path}:7:9: error: ")


# --- schema ------------------------------------------------------------------------------


def test_schema_command_matches_the_committed_schema() -> None:
    done = turncheck("schema")
    assert done.returncode == 0
    assert done.stdout == SCHEMA_FILE.read_text(encoding="utf-8"), (
        "schema/suite.schema.json is stale: regenerate it with "
        "`turncheck schema > schema/suite.schema.json`"
    )
    schema = json.loads(done.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_examples_point_yaml_language_server_at_the_committed_schema() -> None:
    for suite in EXAMPLES.rglob("*.eval.yaml"):
        first = suite.read_text(encoding="utf-8").splitlines()[0]
        match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
        assert match, f"{suite}: no yaml-language-server schema comment"
        assert (suite.parent / match[1]).resolve() == SCHEMA_FILE


def example_suites() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.eval.yaml"))


@pytest.fixture(scope="module")
def validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed in the venv")
    schema = json.loads(turncheck("schema").stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("suite", example_suites(), ids=lambda p: p.name)
def test_schema_accepts_each_example(validator: Any, suite: Path) -> None:
    data = yaml.safe_load(suite.read_text(encoding="utf-8"))
    errors = [e.message for e in validator.iter_errors(data)]
    assert errors == []


def test_schema_rejects_unknown_keys(validator: Any) -> None:
    data = yaml.safe_load((EXAMPLES / "math" / "arithmetic.eval.yaml").read_text(encoding="utf-8"))
    assert validator.is_valid(data)
    typo = json.loads(json.dumps(data))
    typo["evals"][0]["checks"][0] = {"matchh": "*105*"}
    assert not validator.is_valid(typo)
    extra = json.loads(json.dumps(data))
    extra["evals"][0]["checks"][0]["weight"] = 2
    assert not validator.is_valid(extra)
    eval_typo = json.loads(json.dumps(data))
    eval_typo["evals"][0]["chekcs"] = eval_typo["evals"][0].pop("checks")
    assert not validator.is_valid(eval_typo)

"""Grader calibration (docs/samples.md): grader tables, grading on the engine's
providers and cassettes, agreement and distance, the CLI, base-vs-head and the comment."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine_helpers import FAKE_KEY, FAST_RETRIES
from tests.support.scripted_server import ScriptedServer, last_user_text
from turncheck.choices import Mode
from turncheck.cli.main import main
from turncheck.compare.calibration import calibration_reasons
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import FailOn, fail_reasons, parse_fail_on
from turncheck.engine.judge import (
    GRADER_PROMPT_VERSION,
    JudgeAnswerError,
    parse_grade,
    parse_verdict,
)
from turncheck.engine.runner import run_suite_files
from turncheck.engine.settings import RunSettings
from turncheck.formats.discovery import Globs
from turncheck.formats.sample_loader import load_samples
from turncheck.git.changes import ChangedFile
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.render.comment import CommentContext, comment_markdown, render_summary
from turncheck.report.calibration import (
    Badge,
    CalibrationFileResult,
    GraderInfo,
    GraderVerdict,
    SampleGrade,
    badge_for,
    percent_text,
)
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.run import PriceSource, Report
from turncheck.sides.changes import suite_changes

GRADER = """[grader]
model = "gpt-4o-mini"
provider = "openai"
base_url = "{url}"
criteria = "Polite and correct."
"""

# Five samples whose grader answers are scripted: three agree (an integer, an integer
# string, a fenced answer), one is off by two, one is not JSON (an error row).
FIVE_SAMPLES = """
[[samples]]
id = "s1"
messages = [{{ role = "user", content = "alpha" }}, {{ role = "assistant", content = "A" }}]
expected = {{ score = 3 }}

[[samples]]
id = "s2"
messages = [{{ role = "user", content = "bravo" }}, {{ role = "assistant", content = "B" }}]
expected = {{ score = -2 }}

[[samples]]
id = "s3"
messages = [{{ role = "user", content = "charlie" }}, {{ role = "assistant", content = "C" }}]
expected = {{ score = 0 }}

[[samples]]
id = "s4"
messages = [{{ role = "user", content = "delta" }}, {{ role = "assistant", content = "D" }}]
expected = {{ score = 1 }}

[[samples]]
id = "s5"
messages = [{{ role = "user", content = "echo" }}, {{ role = "assistant", content = "E" }}]
expected = {{ score = 2 }}
"""

ANSWERS = {
    "alpha": '{"score": 3, "reason": "exact"}',
    "bravo": '{"score": "-2", "reason": "an integer string"}',
    "charlie": '```json\n{"score": 0, "reason": "fenced"}\n```',
    "delta": '{"score": -1, "reason": "off by two"}',
    "echo": "I would give it a 2.",
}


def graded_text(url: str) -> str:
    return (GRADER + FIVE_SAMPLES).format(url=url)


def script(server: ScriptedServer, answers: dict[str, str] = ANSWERS) -> None:
    for needle, answer in answers.items():
        server.add_rule(answer, contains=needle, usage=(100, 10))


def write(tmp_path: Path, text: str, name: str = "grader.samples.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def grade(paths: list[Path], mode: Mode = "live", **overrides: Any) -> Report:
    files = [load_samples(path) for path in paths]
    overrides.setdefault("session", FAST_RETRIES)
    overrides["env"] = {"OPENAI_API_KEY": FAKE_KEY, **overrides.get("env", {})}
    settings = RunSettings(mode=mode, **overrides)
    diagnostics = [d for f in files for d in f.diagnostics]
    return asyncio.run(run_suite_files([], settings, diagnostics, samples=files))


def only_file(report: Report) -> CalibrationFileResult:
    [result] = report.calibrations
    return result


def chats(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests if r.path.endswith("/chat/completions")]


# --- the grader's answer ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ('{"score": 2, "reason": "r"}', 2),
        ('{"score": "-3", "reason": "r"}', -3),
        ('{"score": " +1 ", "reason": "r"}', 1),
        ('```json\n{"score": 0, "reason": "r"}\n```', 0),
    ],
)
def test_grader_answer_accepts_an_integer_or_an_integer_string(answer: str, score: int) -> None:
    assert parse_grade(answer).score == score


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("4", "is not a JSON object"),
        ("a four", "is not JSON"),
        ('{"score": 4, "reason": "r"}', "from -3 to 3, got 4"),
        ('{"score": 2.0, "reason": "r"}', '{"score": int, "reason": str}'),
        ('{"score": "2.5", "reason": "r"}', '{"score": int, "reason": str}'),
        ('{"score": true, "reason": "r"}', '{"score": int, "reason": str}'),
        ('{"score": 1}', '{"score": int, "reason": str}'),
        ('{"score": ' + "9" * 5000 + "}", "is not JSON"),
    ],
)
def test_anything_else_is_an_error_never_a_zero(answer: str, message: str) -> None:
    with pytest.raises(JudgeAnswerError, match="grader") as raised:
        parse_grade(answer)
    assert message in str(raised.value)


def test_the_judge_parser_shares_the_fence_tolerant_reader() -> None:
    assert parse_verdict('```\n{"pass": true, "reason": "ok"}\n```').passed
    with pytest.raises(JudgeAnswerError, match="judge answer is not JSON"):
        parse_verdict("yes")


@pytest.mark.parametrize(
    ("distance", "badge"),
    [(0, Badge.AGREE), (1, Badge.OFF), (2, Badge.OFF), (3, Badge.FAR), (6, Badge.FAR),
     (None, Badge.ERROR)],
)
def test_badges(distance: int | None, badge: Badge) -> None:
    assert badge_for(distance) is badge


# --- acceptance: agreement and distance against the scripted server ----------------------


def test_agreement_and_mean_distance_are_exact_and_an_error_row_is_an_error(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    path = write(tmp_path, graded_text(scripted_server.base_url))
    result = only_file(grade([path]))
    assert [(r.id, r.score, r.distance, r.badge) for r in result.samples] == [
        ("s1", 3, 0, Badge.AGREE),
        ("s2", -2, 0, Badge.AGREE),
        ("s3", 0, 0, Badge.AGREE),
        ("s4", -1, 2, Badge.OFF),
        ("s5", None, None, Badge.ERROR),
    ]
    assert (result.agreed, result.errors) == (3, 1)
    assert result.agreement_percent == pytest.approx(60.0)
    assert result.mean_distance == pytest.approx(0.5)  # (0 + 0 + 0 + 2) / 4 scored
    error = result.samples[4]
    assert error.error is not None and "grader answer is not JSON" in error.error
    assert error.input_tokens == 100  # the answer came back: its tokens count
    assert (result.input_tokens, result.output_tokens) == (500, 50)
    assert result.grader is not None
    assert (result.grader.kind, result.grader.prompt_version) == ("criteria", GRADER_PROMPT_VERSION)
    assert result.samples[3].reason == "off by two"
    assert [r.line for r in result.samples] == [7, 12, 17, 22, 27]


def test_criteria_grader_uses_the_fixed_prompt_with_the_whole_conversation(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    path = write(tmp_path, graded_text(scripted_server.base_url))
    grade([path])
    body = next(b for b in chats(scripted_server) if "alpha" in last_user_text(b))
    system, user = body["messages"]
    assert system["role"] == "system" and GRADER_PROMPT_VERSION in system["content"]
    assert "[user]\nalpha\n\n[assistant]\nA" in user["content"]
    assert "<criteria>\nPolite and correct.\n</criteria>" in user["content"]
    # Structured output: the grade's JSON schema, for the server to enforce.
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    assert schema["required"] == ["score", "reason"]
    assert schema["properties"]["score"]["enum"] == [-3, -2, -1, 0, 1, 2, 3]
    assert body["temperature"] == 0


def test_an_unanswerable_grader_call_is_an_error_row(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(fault="bad_request", contains="alpha")
    script(scripted_server)
    path = write(tmp_path, graded_text(scripted_server.base_url))
    first = only_file(grade([path])).samples[0]
    assert first.badge is Badge.ERROR and first.score is None
    assert first.error is not None and first.error.startswith("grader call failed")
    assert first.cost_usd == 0.0


# --- both layouts, a prompt grader, invalid samples ----------------------------------------

KEYED_WITH_PROMPT = """[grader]
model = "gpt-4o-mini"
provider = "openai"
base_url = "{url}"
prompt = '''
Sample {{{{ sample.id }}}} ({{{{ sample.tags | join(", ") }}}}):
{{% for m in messages %}}{{{{ m.role }}}} says {{{{ m.content }}}}
{{% endfor %}}Answer as JSON.'''

[samples.first]
score = 3
reason = "THE-LABEL-REASON"
description = "THE-DESCRIPTION"
tags = ["t1", "t2"]
messages = [{{ role = "user", content = "alpha" }}]

[samples.broken]
score = 7
messages = [{{ role = "user", content = "bravo" }}]

[samples.second]
score = -2
messages = [{{ role = "user", content = "bravo" }}, {{ role = "tool", content = "B" }}]
"""


def test_both_layouts_are_graded_and_an_invalid_sample_is_skipped_with_its_diagnostic(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    url = scripted_server.base_url
    listed = write(tmp_path, graded_text(url), "list.samples.toml")
    keyed = write(tmp_path, KEYED_WITH_PROMPT.format(url=url), "keyed.samples.toml")
    report = grade([listed, keyed])
    first, second = report.calibrations
    assert (first.path, len(first.samples)) == (str(listed), 5)
    assert (second.path, second.skipped_samples, second.valid_samples) == (str(keyed), 1, 2)
    assert [(r.id, r.score, r.badge) for r in second.samples] == [
        ("first", 3, Badge.AGREE), ("second", -2, Badge.AGREE)
    ]
    assert second.agreement_percent == 100.0
    [problem] = report.diagnostics
    assert (problem.file, problem.line, problem.code) == (str(keyed), 18, "score-out-of-range")


def test_prompt_grader_renders_the_template_without_the_label(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    keyed = write(tmp_path, KEYED_WITH_PROMPT.format(url=scripted_server.base_url))
    result = only_file(grade([keyed]))
    assert result.grader is not None
    assert (result.grader.kind, result.grader.prompt_version) == ("prompt", None)
    [message] = next(b for b in chats(scripted_server) if "alpha" in last_user_text(b))["messages"]
    expected = "Sample first (t1, t2):\nuser says alpha\nAnswer as JSON."
    assert message == {"role": "user", "content": expected}
    sent = json.dumps(chats(scripted_server))
    assert "THE-LABEL-REASON" not in sent and "THE-DESCRIPTION" not in sent


def test_a_template_error_at_render_time_is_an_error_row(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    text = KEYED_WITH_PROMPT.format(url=scripted_server.base_url).replace(
        "{{ sample.id }}", "{{ messages[3].content }}"
    )
    loaded = load_samples(write(tmp_path, text))
    assert loaded.grader is not None  # valid statically: `messages` is provided
    result = only_file(grade([write(tmp_path, text)]))
    assert {r.badge for r in result.samples} == {Badge.ERROR}
    assert result.samples[0].error is not None
    assert result.samples[0].error.startswith("grader prompt: UndefinedError")
    assert chats(scripted_server) == []


def test_a_file_without_a_grader_is_validated_only_and_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, FIVE_SAMPLES.format())
    result = only_file(grade([path]))
    assert (result.grader, result.samples, result.valid_samples) == (None, [], 5)
    assert result.note == "no [grader]: validated only"
    assert result.agreement_percent is None


def test_an_invalid_grader_is_reported_and_not_used(tmp_path: Path) -> None:
    path = write(tmp_path, '[grader]\nmodel = "m"\ncritera = "x"\n' + FIVE_SAMPLES.format())
    report = grade([path])
    assert [d.code for d in report.diagnostics] == ["unknown-key"]
    result = only_file(report)
    assert result.note is not None and "invalid" in result.note
    assert result.samples == []


# --- recordings, secrets ---------------------------------------------------------------------


def test_record_then_replay_offline_from_the_cassette_beside_the_sample_file(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    path = write(tmp_path, graded_text(scripted_server.base_url))
    recorded = only_file(grade([path], mode="record"))
    cassette = tmp_path / "grader.samples.cassette.yaml"
    assert cassette_path_for(path) == cassette and cassette.is_file()
    assert recorded.cassette == cassette.as_posix()
    assert FAKE_KEY not in cassette.read_text(encoding="utf-8")
    calls = len(scripted_server.requests)
    replayed = only_file(grade([path], mode="replay", env={"OPENAI_API_KEY": ""}))
    assert len(scripted_server.requests) == calls  # nothing reached the server
    strip = {"latency_ms"}
    assert [r.model_dump(exclude=strip) for r in replayed.samples] == [
        r.model_dump(exclude=strip) for r in recorded.samples
    ]


def test_a_replay_miss_is_an_error_row_naming_the_record_command(tmp_path: Path) -> None:
    path = write(tmp_path, graded_text("http://127.0.0.1:9/v1"))
    result = only_file(grade([path], mode="replay"))
    assert result.errors == 5 and result.agreement_percent == 0.0
    error = result.samples[0].error
    assert error is not None and "no recording" in error
    assert f"turncheck record {path}" in error


def test_an_api_key_in_a_grader_answer_never_reaches_the_report(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(f'{{"score": 3, "reason": "my key is {FAKE_KEY}"}}')
    path = write(tmp_path, graded_text(scripted_server.base_url))
    report = grade([path])
    assert FAKE_KEY not in report.model_dump_json()
    assert "[REDACTED]" in only_file(report).samples[0].reason  # type: ignore[operator]


def test_cassette_names_for_suites_and_sample_files() -> None:
    assert cassette_path_for(Path("a/x.samples.toml")) == Path("a/x.samples.cassette.yaml")
    assert cassette_path_for(Path("a/m.eval.yaml")) == Path("a/m.eval.cassette.yaml")
    assert cassette_path_for(Path("a/m.eval.yml")) == Path("a/m.eval.cassette.yaml")


# --- the CLI ---------------------------------------------------------------------------------


def test_calibrate_command_prints_rows_writes_json_and_exits_by_min_agreement(
    tmp_path: Path, scripted_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = {k: v for k, v in ANSWERS.items() if k != "echo"} | {
        "echo": '{"score": 2, "reason": "exact"}'
    }
    script(scripted_server, answers)
    path = write(tmp_path, graded_text(scripted_server.base_url))
    report_path = tmp_path / "out" / "report.json"
    code = main(["calibrate", str(path), "--mode", "live", "--json", str(report_path),
                 "--min-agreement", "80"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Agreement 80% (4 of 5) · mean distance 0.40 · 0 errors" in out
    assert "🟡 off" in out and "✅ agree" in out
    saved = json.loads(report_path.read_text(encoding="utf-8"))
    assert saved["calibrations"][0]["agreement_percent"] == 80.0
    assert saved["suites"] == []

    code = main(["calibrate", str(path), "--mode", "live", "--min-agreement", "80.5", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "agreement 80% is below the minimum 80.5%" in err
    assert "s1" not in out  # --quiet: the summary table only


def test_calibrate_exits_1_on_error_rows_and_2_on_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, graded_text("http://127.0.0.1:9/v1"))
    assert main(["calibrate", str(path)]) == 1
    assert "could not score 5 samples" in capsys.readouterr().err
    assert main(["calibrate", str(path), "--min-agreement", "150"]) == 2
    assert main(["calibrate", str(tmp_path / "nothing-here")]) == 2
    # Nothing to grade is not a usage error: the same exit code as run and validate.
    (tmp_path / "only").mkdir()
    assert main(["calibrate", str(tmp_path / "only")]) == 0
    assert "nothing to do: no suite or sample file" in capsys.readouterr().err


def test_calibrate_says_when_a_file_has_no_grader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, FIVE_SAMPLES.format())
    assert main(["calibrate", str(path)]) == 0
    assert "no [grader]: validated only (5 valid samples)" in capsys.readouterr().out


def test_run_grades_sample_files_into_the_same_report(
    tmp_path: Path, scripted_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script(scripted_server)
    write(tmp_path, graded_text(scripted_server.base_url))
    report_path = tmp_path / "report.json"
    code = main(["run", str(tmp_path), "--mode", "live", "--json", str(report_path)])
    out, err = capsys.readouterr()
    assert code == 1  # the error row
    assert "could not score 1 sample" in err
    assert "60%" in out
    assert json.loads(report_path.read_text())["calibrations"][0]["agreed"] == 3


def test_examples_calibrate_offline_from_their_cassettes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(__file__).parents[2]
    monkeypatch.chdir(root)
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    main(["calibrate", "examples/", "--quiet"])
    out = capsys.readouterr().out
    for name in ("greeting", "tone"):
        line = next(x for x in out.splitlines() if x.startswith(f"examples/support/{name}"))
        assert "not graded" not in line
    report = asyncio.run(run_suite_files(
        [], RunSettings(), samples=[load_samples(p) for p in sorted(
            (root / "examples").rglob("*.samples.toml"))]))
    kinds = {r.grader.kind for r in report.calibrations if r.grader is not None}
    assert kinds == {"criteria", "prompt"}
    rows = [row for r in report.calibrations for row in r.samples]
    assert rows and not any(r.error and "no recording" in r.error for r in rows)


# --- base versus head ------------------------------------------------------------------------

PRICES = PriceSource(library="genai-prices", version="0", timestamp="2026-01-01T00:00:00Z")


def row(sample_id: str, label: int, score: int | None) -> SampleGrade:
    distance = None if score is None else abs(score - label)
    return SampleGrade(id=sample_id, line=1, label=label, score=score, distance=distance,
                       badge=badge_for(distance), reason="r" if score is not None else None,
                       error=None if score is not None else "boom")


def file_result(path: str, rows: list[SampleGrade], min_agreement: float | None = None
                ) -> CalibrationFileResult:
    scored = [r.distance for r in rows if r.distance is not None]
    agreed = sum(d == 0 for d in scored)
    return CalibrationFileResult(
        path=path, grader=GraderInfo(model="m", provider="openai", kind="criteria",
                                     prompt_version=GRADER_PROMPT_VERSION,
                                     instructions="c", line=1),
        min_agreement=min_agreement, valid_samples=len(rows), samples=rows, agreed=agreed,
        errors=len(rows) - len(scored), agreement_percent=100 * agreed / len(rows),
        mean_distance=sum(scored) / len(scored) if scored else None, cost_usd=0.0,
    )


def report_of(*results: CalibrationFileResult) -> Report:
    return Report(turncheck_version="0", mode="replay", price_source=PRICES,
                  started_at="2026-01-01T00:00:00Z", duration_s=0, calibrations=list(results))


BASE_ROWS = [row("a", 3, 3), row("b", 1, 1), row("c", 0, 0), row("d", -2, -2), row("e", 2, 2)]
HEAD_ROWS = [row("a", 3, 3), row("b", 1, -1), row("c", 0, 0), row("d", -2, None),
             row("e", 2, 2)]


def test_comparison_shows_agreement_base_to_head_and_the_flipped_samples() -> None:
    comparison = compare_reports(report_of(file_result("x.samples.toml", BASE_ROWS)),
                                 report_of(file_result("x.samples.toml", HEAD_ROWS)))
    [item] = comparison.calibration
    assert item.base is not None and item.head is not None
    assert (item.base.agreement_percent, item.head.agreement_percent) == (100.0, 60.0)
    assert item.agreement_delta == pytest.approx(-40.0)
    assert [(f.id, f.base_verdict, f.head_verdict, f.regression) for f in item.flipped] == [
        ("b", GraderVerdict.AGREE, GraderVerdict.DISAGREE, True),
        ("d", GraderVerdict.AGREE, GraderVerdict.ERROR, True),
    ]


def test_renamed_and_new_sample_files_pair_by_path() -> None:
    base = report_of(file_result("old.samples.toml", BASE_ROWS))
    head = report_of(file_result("new.samples.toml", HEAD_ROWS),
                     file_result("fresh.samples.toml", BASE_ROWS))
    renamed, fresh = compare_reports(base, head, renames={"new.samples.toml": "old.samples.toml"}
                                     ).calibration
    assert (renamed.state.value, renamed.previous_path, len(renamed.flipped)) == (
        "renamed", "old.samples.toml", 2)
    assert (fresh.state.value, fresh.base, fresh.agreement_delta) == ("new", None, None)


@pytest.mark.parametrize(
    ("thresholds", "reasons"),
    [
        (CalibrationThresholds(), ["the grader could not score 1 sample"]),
        (CalibrationThresholds(min_agreement=60), ["could not score"]),
        (CalibrationThresholds(min_agreement=61),
         ["could not score", "60% is below the minimum 61%"]),
        (CalibrationThresholds(max_agreement_drop=40), ["could not score"]),
        (CalibrationThresholds(max_agreement_drop=39.5),
         ["could not score", "dropped 100% → 60% (more than 39.5 points)"]),
    ],
)
def test_calibration_policy(thresholds: CalibrationThresholds, reasons: list[str]) -> None:
    comparison = compare_reports(report_of(file_result("x.samples.toml", BASE_ROWS)),
                                 report_of(file_result("x.samples.toml", HEAD_ROWS)))
    found = calibration_reasons(comparison.calibration, thresholds)
    assert len(found) == len(reasons)
    assert all(want in got for want, got in zip(reasons, found, strict=True))
    assert fail_reasons(comparison, parse_fail_on("failure"), calibration=thresholds) == []
    assert fail_reasons(comparison, {FailOn.CALIBRATION}, calibration=thresholds) == found


def test_the_graders_own_min_agreement_applies_unless_overridden() -> None:
    head = report_of(file_result("x.samples.toml", HEAD_ROWS[:3], min_agreement=70))
    items = compare_reports(None, head).calibration
    assert "below the minimum 70%" in calibration_reasons(items, CalibrationThresholds())[0]
    assert calibration_reasons(items, CalibrationThresholds(min_agreement=50)) == []


def test_percent_text() -> None:
    assert [percent_text(v) for v in (100.0, 60.0, 200 / 3, 0.0, None)] == [
        "100%", "60%", "66.7%", "0%", "—"]


# --- the comment -----------------------------------------------------------------------------


def comment_for(base: Report, head: Report, reasons: list[str] | None = None) -> str:
    comparison = compare_reports(base, head)
    return comment_markdown(comparison, CommentContext(fail_reasons=reasons or [], head=head))


def test_comment_has_the_calibration_section_with_the_flipped_samples() -> None:
    head = report_of(file_result("x.samples.toml", HEAD_ROWS))
    body = comment_for(report_of(file_result("x.samples.toml", BASE_ROWS)), head)
    assert "### Grader calibration" in body
    assert "| 100% → 60% | — | 0.00 → 0.50 | 0 → 1 |" in body
    assert "## ✅ 1 sample file graded" in body
    flipped = body.split("**Samples whose verdict changed**")[1]
    assert "| b | 1 | 1 → -1 | ✅ agree → ❌ disagree |" in flipped
    assert "| d | -2 | -2 → — | ✅ agree → 💥 error | boom |" in flipped
    assert "No eval suite or sample file changed" not in body


def test_untrusted_calibration_text_is_escaped_and_rows_are_capped() -> None:
    evil = "@octocat </details><!-- | x"
    base_rows = [row(f"{evil} {i}", 1, 1) for i in range(40)]
    head_rows = [row(f"{evil} {i}", 1, -1) for i in range(40)]
    head = report_of(file_result("evil|@team.samples.toml", head_rows))
    body = comment_for(report_of(file_result("evil|@team.samples.toml", base_rows)), head)
    assert "@octocat" not in body and "@team" not in body
    assert "</details><!--" not in body
    assert "| _and 10 more_ |" in body
    full = render_summary(compare_reports(None, head), CommentContext(fail_reasons=[], head=head))
    assert "every sample at head" in full


def test_comment_keeps_the_calibration_section_when_it_must_shrink() -> None:
    head = report_of(file_result("x.samples.toml", HEAD_ROWS))
    comparison = compare_reports(report_of(file_result("x.samples.toml", BASE_ROWS)), head)
    context = CommentContext(fail_reasons=[], head=head)
    full = comment_markdown(comparison, context)
    assert "every sample at head" in full
    body = comment_markdown(comparison, context, limit=len(full) - 1)
    assert len(body) < len(full)
    assert "100% → 60%" in body and "| x.samples.toml | d |" in body
    assert "every sample at head" not in body


# --- the action's view of changed files ------------------------------------------------------


def test_changed_sample_files_and_their_cassettes_and_renames() -> None:
    files = [
        ChangedFile("a/x.samples.toml", "modified"),
        ChangedFile("a/y.samples.cassette.yaml", "modified"),
        ChangedFile("a/new.samples.toml", "renamed", "a/old.samples.toml"),
        ChangedFile("a/gone.samples.toml", "removed"),
    ]
    changes = suite_changes(files, Globs(), ".", {"a/y.samples.toml"})
    assert changes.samples == ["a/x.samples.toml", "a/y.samples.toml", "a/new.samples.toml"]
    assert changes.base_samples == ["a/x.samples.toml", "a/y.samples.toml", "a/old.samples.toml"]
    assert changes.head_suites == [] and not changes.empty


def test_compare_command_fails_on_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(report_of(file_result("x.samples.toml", BASE_ROWS)).model_dump_json())
    head.write_text(report_of(file_result("x.samples.toml", HEAD_ROWS)).model_dump_json())
    assert main(["compare", str(base), str(head)]) == 0
    out = capsys.readouterr().out
    assert "calibration x.samples.toml: agreement 100% → 60%, 2 samples flipped" in out
    assert "  b: agree → disagree (label 1, score 1 → -1)" in out
    code = main(["compare", str(base), str(head), "--fail-on", "calibration",
                 "--max-agreement-drop", "10"])
    assert code == 1
    assert "dropped 100% → 60%" in capsys.readouterr().err
    assert main(["compare", str(base), str(head), "--min-agreement", "101"]) == 2


def test_sharded_runs_grade_sample_files_once_and_merge_keeps_them(
    tmp_path: Path, scripted_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script(scripted_server)
    write(tmp_path, graded_text(scripted_server.base_url))
    when = "2026-01-01T00:00:00Z"
    for index in (1, 2):
        main(["run", str(tmp_path), "--mode", "live", "--shard", f"{index}/2",
              "--price-timestamp", when, "--json", str(tmp_path / f"shard{index}.json")])
    first = json.loads((tmp_path / "shard1.json").read_text())
    second = json.loads((tmp_path / "shard2.json").read_text())
    assert (len(first["calibrations"]), second["calibrations"]) == (1, [])
    assert len(chats(scripted_server)) == 5  # each sample graded once
    main(["merge", str(tmp_path / "shard2.json"), str(tmp_path / "shard1.json"),
          "--json", str(tmp_path / "merged.json")])
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["calibrations"] == first["calibrations"]
    capsys.readouterr()


def test_kappa_weighted_kappa_and_confusion_match_hand_computed_values(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    text = graded_text(scripted_server.base_url).replace(
        'criteria = "Polite and correct."', 'criteria = "Polite and correct."\npass_threshold = 1')
    result = only_file(grade([write(tmp_path, text)]))
    stats = result.agreement
    assert stats is not None
    # Scored (label, score): (3, 3), (-2, -2), (0, 0), (1, -1); s5 is an error row.
    assert stats.scored == 4
    # p_o = 3/4, p_e = 3 · (1/4 · 1/4) = 3/16 → κ = (12/16 − 3/16) / (13/16) = 9/13.
    assert stats.kappa == pytest.approx(9 / 13, abs=1e-6)
    # Quadratic weights: 1 − mean observed d² (4/4) / mean chance d² (112/16) = 6/7.
    assert stats.weighted_kappa == pytest.approx(6 / 7, abs=1e-6)
    assert stats.weighted_kappa_low is not None and stats.weighted_kappa_high is not None
    assert stats.weighted_kappa_low <= stats.weighted_kappa <= stats.weighted_kappa_high
    assert stats.within_one_percent == pytest.approx(75.0)
    matrix = stats.confusion
    assert matrix is not None and matrix.threshold == 1
    assert (matrix.true_positive, matrix.false_negative) == (1, 1)  # s1 passed, s4 missed
    assert (matrix.false_positive, matrix.true_negative) == (0, 2)
    assert (matrix.tpr, matrix.tnr) == (0.5, 1.0)


def test_min_kappa_fails_calibration_below_the_minimum(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    from turncheck.compare.calibration import calibration_reasons
    from turncheck.compare.comparison import compare_reports
    from turncheck.github.inputs import InputError, read_inputs
    from turncheck.report.calibration_comparison import CalibrationThresholds

    script(scripted_server)
    report = grade([write(tmp_path, graded_text(scripted_server.base_url))])
    comparison = compare_reports(None, report)
    strict = calibration_reasons(comparison.calibration, CalibrationThresholds(min_kappa=0.9))
    assert any("weighted kappa 0.86 is below the minimum 0.9" in r for r in strict)
    lenient = calibration_reasons(comparison.calibration, CalibrationThresholds(min_kappa=0.8))
    assert not any("weighted kappa" in r for r in lenient), lenient
    assert read_inputs({"INPUT_MIN-KAPPA": "0.6"}).min_kappa == 0.6
    with pytest.raises(InputError, match="min-kappa"):
        read_inputs({"INPUT_MIN-KAPPA": "2"})

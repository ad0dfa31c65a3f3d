"""Base-vs-head comparison of run reports, and `turncheck compare`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from turncheck.cli import compare_cmd
from turncheck.compare.comparison import compare_reports
from turncheck.report.comparison import Comparison, CostThresholds, EvalComparison, SuiteComparison
from turncheck.report.results import Status, TurnResult
from turncheck.report.rows import SuiteState, Transition
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult, Totals
from turncheck.report.spend import Usage, add_costs

# --- builders -------------------------------------------------------------------------

PASS, FAIL, ERROR = Status.PASS, Status.FAIL, Status.ERROR
TIMESTAMP = "2025-01-01T00:00:00Z"


def ev(name: str, status: Status = PASS, turn: int = 1, *, prompt: str | None = None,
       tokens: int = 10, cost: float | None = 0.001, line: int = 1) -> EvalResult:
    """An eval that passed on (or failed/errored after) `turn` turns of `tokens` in+out each."""
    turns = [
        TurnResult(turn=n, prompt=f"turn {n}", response="ok",
                   usage=Usage(input_tokens=tokens, output_tokens=tokens),
                   cost_usd=cost, latency_ms=1.0)
        for n in range(1, turn + 1)
    ]
    return EvalResult(
        name=name, prompt=prompt if prompt is not None else f"prompt of {name}", status=status,
        passed_on_turn=turn if status is PASS else None,
        error="provider failed" if status is ERROR else None,
        usage=Usage(input_tokens=tokens * turn, output_tokens=tokens * turn),
        cost_usd=None if cost is None else cost * turn,
        judge_usage=Usage(), judge_cost_usd=0.0, turns=turns, line=line,
    )


def suite(path: str, *evals: EvalResult) -> SuiteResult:
    return SuiteResult(
        path=path, name=path.removesuffix(".yaml"), model="vendor/model", provider="openrouter",
        cassette=None, evals=list(evals), usage=sum((e.usage for e in evals), Usage()),
        cost_usd=add_costs([e.cost_usd for e in evals]), judge_usage=Usage(),
        judge_cost_usd=add_costs([e.judge_cost_usd for e in evals]),
    )


def report(*suites: SuiteResult, commit: str = "head", timestamp: str = TIMESTAMP) -> Report:
    costs = [s.cost_usd for s in suites]
    return Report(
        turncheck_version="0.1.0", mode="replay", commit=commit,
        price_source=PriceSource(library="genai-prices", version="0.0.1", timestamp=timestamp),
        suites=list(suites),
        totals=Totals(cost_usd=add_costs(costs),
                      unpriced_models=["vendor/model"] if None in costs else []),
        started_at=TIMESTAMP, duration_s=1.0,
    )


def one_suite(base_evals: list[EvalResult], head_evals: list[EvalResult],
              **options: object) -> Comparison:
    base = report(suite("s.yaml", *base_evals), commit="base")
    head = report(suite("s.yaml", *head_evals))
    return compare_reports(base, head, **options)  # type: ignore[arg-type]


def by_name(comparison: Comparison) -> dict[str, EvalComparison]:
    return {e.name: e for s in comparison.suites for e in s.evals}


def by_path(comparison: Comparison) -> dict[str, SuiteComparison]:
    return {s.path: s for s in comparison.suites}


# --- transitions ----------------------------------------------------------------------


def test_every_transition_with_label_and_regression_flag() -> None:
    comparison = one_suite(
        [ev("fixed", FAIL), ev("fixed-error", ERROR), ev("broken", PASS),
         ev("broken-error", PASS), ev("still", FAIL), ev("later", PASS, 1),
         ev("earlier", PASS, 3), ev("same", PASS, 2), ev("gone")],
        [ev("fixed", PASS), ev("fixed-error", PASS), ev("broken", FAIL),
         ev("broken-error", ERROR), ev("still", ERROR), ev("later", PASS, 3),
         ev("earlier", PASS, 1), ev("same", PASS, 2), ev("added")],
    )
    evals = by_name(comparison)
    expected = {
        "fixed": (Transition.FIXED, "fixed", False),
        "fixed-error": (Transition.FIXED, "fixed", False),
        "broken": (Transition.BROKEN, "broken", True),
        # An errored head is infrastructure trouble, never "broken" (issue 22).
        "broken-error": (Transition.ERRORED, "errored", False),
        "still": (Transition.ERRORED, "errored", False),
        "later": (Transition.TURN_CHANGED, "turn changed 1→3", True),
        "earlier": (Transition.TURN_CHANGED, "turn changed 3→1", False),
        "same": (Transition.UNCHANGED, "unchanged", False),
        "gone": (Transition.REMOVED, "removed", False),
        "added": (Transition.NEW, "new", False),
    }
    assert {n: (e.transition, e.label, e.regression) for n, e in evals.items()} == expected
    counts = comparison.totals.counts
    assert (counts.fixed, counts.broken, counts.still_failing) == (2, 1, 0)
    assert (counts.turn_changed, counts.unchanged, counts.new, counts.removed) == (2, 1, 1, 1)
    assert comparison.regressions == 2
    assert (comparison.passed, comparison.failed, comparison.errors) == (6, 1, 2)
    assert counts.evals == 9  # head evals only


def test_eval_sides_and_deltas() -> None:
    comparison = one_suite([ev("e", PASS, 1, tokens=10, cost=0.001)],
                           [ev("e", PASS, 3, tokens=10, cost=0.001, line=7)])
    e = by_name(comparison)["e"]
    assert e.base is not None and e.head is not None
    assert (e.base.passed_on_turn, e.head.passed_on_turn) == (1, 3)
    assert (e.base.turns, e.head.turns, e.turns_delta) == (1, 3, 2)
    assert (e.delta.input_tokens, e.delta.output_tokens, e.delta.tokens) == (20, 20, 40)
    assert e.delta.cost_usd == pytest.approx(0.002)
    assert (e.line, e.suite_path) == (7, "s.yaml")


def test_error_text_is_carried() -> None:
    e = by_name(one_suite([ev("e")], [ev("e", ERROR)]))["e"]
    assert e.error == "provider failed"
    assert e.head is not None and e.head.status is ERROR


# --- matching -------------------------------------------------------------------------


def test_eval_matched_by_prompt_when_no_name_matches() -> None:
    comparison = one_suite([ev("old-name", PASS, 1, prompt="What is 15 * 7?")],
                           [ev("new-name", PASS, 2, prompt="What is 15 * 7?")])
    (e,) = comparison.suites[0].evals
    assert (e.matched_by, e.previous_name, e.label) == ("prompt", "old-name", "turn changed 1→2")


def test_name_matches_take_precedence_over_prompt_matches() -> None:
    comparison = one_suite(
        [ev("x", prompt="p2"), ev("z", prompt="p1")],
        [ev("x", prompt="p1"), ev("y", prompt="p2")],
    )
    evals = by_name(comparison)
    assert evals["x"].matched_by == "name"
    assert evals["y"].transition is Transition.NEW
    assert evals["z"].transition is Transition.REMOVED


# --- suites ---------------------------------------------------------------------------


def test_new_and_removed_suites_and_their_deltas() -> None:
    base = report(suite("a.yaml", ev("a", cost=0.01)), suite("gone.yaml", ev("g", cost=0.004)),
                  commit="base")
    head = report(suite("a.yaml", ev("a", cost=0.01)), suite("new.yaml", ev("n", cost=0.002)))
    comparison = compare_reports(base, head, removed=["gone.yaml"])
    suites = by_path(comparison)
    assert [s.path for s in comparison.suites] == ["a.yaml", "new.yaml", "gone.yaml"]
    gone, new = suites["gone.yaml"], suites["new.yaml"]
    assert (gone.state, gone.deleted_in_pr, gone.totals.head) == (SuiteState.REMOVED, True, None)
    assert gone.totals.delta.cost_usd == pytest.approx(-0.004)
    assert gone.totals.delta.tokens == -20
    assert [e.transition for e in gone.evals] == [Transition.REMOVED]
    assert by_name(comparison)["g"].delta.cost_usd == pytest.approx(-0.004)
    assert (new.state, new.totals.base) == (SuiteState.NEW, None)
    assert new.totals.delta.cost_usd == pytest.approx(0.002)
    assert by_name(comparison)["n"].delta.cost_usd == pytest.approx(0.002)
    assert comparison.totals.delta.total_cost_usd == pytest.approx(-0.002)
    assert (comparison.base_commit, comparison.head_commit) == ("base", "head")


def test_base_suite_missing_from_head_is_removed_even_if_not_listed() -> None:
    comparison = compare_reports(report(suite("gone.yaml", ev("g"))), report())
    (gone,) = comparison.suites
    assert (gone.state, gone.deleted_in_pr) == (SuiteState.REMOVED, False)


def test_renamed_suite_compares_with_its_old_path() -> None:
    base = report(suite("old.yaml", ev("e", PASS, 1)))
    head = report(suite("renamed.yaml", ev("e", PASS, 3)), suite("old.yaml", ev("fresh")))
    comparison = compare_reports(base, head, renames={"renamed.yaml": "old.yaml"})
    suites = by_path(comparison)
    renamed = suites["renamed.yaml"]
    assert (renamed.state, renamed.previous_path) == (SuiteState.RENAMED, "old.yaml")
    assert renamed.evals[0].label == "turn changed 1→3"
    assert suites["old.yaml"].state is SuiteState.NEW
    assert len(comparison.suites) == 2


def test_without_base_everything_is_new_and_nothing_alerts() -> None:
    comparison = compare_reports(None, report(suite("s.yaml", ev("e", cost=1.0))),
                                 thresholds=CostThresholds(usd=0.0))
    assert not comparison.has_base
    assert comparison.suites[0].state is SuiteState.NEW
    assert comparison.totals.base is None
    assert comparison.alert is None
    assert comparison.cost_note is not None


# --- unpriced -------------------------------------------------------------------------


def test_unpriced_side_gives_no_cost_delta_and_no_alert() -> None:
    comparison = one_suite([ev("e", cost=None), ev("gone", cost=0.5)],
                           [ev("e", cost=1.0), ev("added", cost=0.25)],
                           thresholds=CostThresholds(usd=0.0, percent=0.0))
    evals = by_name(comparison)
    assert evals["e"].delta.cost_usd is None
    assert evals["e"].delta.tokens == 0
    assert evals["added"].delta.cost_usd == pytest.approx(0.25)
    assert evals["gone"].delta.cost_usd == pytest.approx(-0.5)
    assert comparison.totals.delta.total_cost_usd is None
    assert comparison.cost_delta_percent is None
    assert comparison.alert is None
    assert comparison.cost_note is not None
    assert "base is unpriced" in comparison.cost_note
    assert "vendor/model" in comparison.cost_note


def test_price_note_when_base_was_priced_at_another_time() -> None:
    base = report(suite("s.yaml", ev("e")), timestamp="2024-06-01T00:00:00Z")
    comparison = compare_reports(base, report(suite("s.yaml", ev("e"))))
    assert comparison.price_note is not None and "2024-06-01" in comparison.price_note
    assert comparison.price_source.timestamp == TIMESTAMP
    same = compare_reports(report(suite("s.yaml", ev("e"))), report(suite("s.yaml", ev("e"))))
    assert same.price_note is None


# --- cost alert -----------------------------------------------------------------------


def costs(base_cost: float, head_cost: float, **thresholds: float) -> Comparison:
    return one_suite([ev("e", cost=base_cost)], [ev("e", cost=head_cost)],
                     thresholds=CostThresholds(**thresholds))


@pytest.mark.parametrize(("head_cost", "alerts"), [(1.1, False), (1.11, True), (0.5, False)])
def test_percent_threshold_edges(head_cost: float, alerts: bool) -> None:
    comparison = costs(1.0, head_cost, percent=10)
    assert (comparison.alert is not None) is alerts
    assert comparison.cost_delta_percent == pytest.approx((head_cost - 1.0) * 100)


@pytest.mark.parametrize(("head_cost", "alerts"), [(1.5, False), (1.51, True), (0.9, False)])
def test_usd_threshold_edges(head_cost: float, alerts: bool) -> None:
    assert (costs(1.0, head_cost, usd=0.5).alert is not None) is alerts


def test_alert_fields_and_both_reasons() -> None:
    alert = costs(1.0, 2.0, percent=50, usd=0.5).alert
    assert alert is not None
    assert (alert.base_cost, alert.head_cost, alert.delta_usd) == (1.0, 2.0, 1.0)
    assert alert.delta_percent == pytest.approx(100.0)
    assert len(alert.reasons) == 2


def test_growth_from_zero_is_over_any_percent_threshold() -> None:
    alert = costs(0.0, 0.01, percent=1000).alert
    assert alert is not None and alert.delta_percent is None
    assert costs(0.0, 0.0, percent=0).alert is None


def test_no_thresholds_no_alert() -> None:
    assert costs(1.0, 100.0).alert is None


# --- CLI ------------------------------------------------------------------------------


def write(path: Path, value: Report) -> Path:
    path.write_text(value.model_dump_json(), encoding="utf-8")
    return path


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="turncheck")
    compare_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["compare", *argv])
    code: int = args.handler(args)
    return code


@pytest.fixture
def reports(tmp_path: Path) -> tuple[str, str]:
    """Base and head with one regression (1→3), one head failure and a cost doubling."""
    base = report(suite("s.yaml", ev("later", PASS, 1), ev("still", FAIL)), commit="b")
    head = report(suite("s.yaml", ev("later", PASS, 3), ev("still", FAIL)))
    return str(write(tmp_path / "base.json", base)), str(write(tmp_path / "head.json", head))


@pytest.fixture
def clean(tmp_path: Path) -> tuple[str, str]:
    same = report(suite("s.yaml", ev("e")))
    return str(write(tmp_path / "b.json", same)), str(write(tmp_path / "h.json", same))


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [("", 0), ("regression", 0), ("likely-regression", 1), ("failure", 1), ("cost", 1),
     ("regression,cost", 1)],
)
def test_cli_exit_code_per_fail_on(reports: tuple[str, str], fail_on: str, code: int) -> None:
    assert cli(*reports, "--fail-on", fail_on, "--cost-threshold-percent", "50") == code


@pytest.mark.parametrize("fail_on", ["regression", "likely-regression", "failure", "cost",
                                     "flaky", "regression,failure,cost"])
def test_cli_passes_when_nothing_holds(clean: tuple[str, str], fail_on: str) -> None:
    assert cli(*clean, "--fail-on", fail_on, "--cost-threshold-usd", "0") == 0


def test_cli_cost_under_threshold_passes(reports: tuple[str, str]) -> None:
    assert cli(*reports, "--fail-on", "cost", "--cost-threshold-percent", "200") == 0


def test_cli_prints_table_totals_and_alert(reports: tuple[str, str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cli(*reports, "--cost-threshold-usd", "0.001")
    out = capsys.readouterr().out
    assert "turn changed 1→3 · later-turn" in out
    assert "1→3" in out and "fail→fail" in out
    assert "changes: 1 regression, " in out
    assert "COST ALERT" in out


def test_cli_writes_comparison_json(reports: tuple[str, str], tmp_path: Path) -> None:
    out = tmp_path / "comparison.json"
    assert cli(*reports, "--json", str(out)) == 0
    comparison = Comparison.model_validate_json(out.read_text(encoding="utf-8"))
    assert comparison.regressions == 1 and comparison.base_commit == "b"


def test_cli_writes_the_comment_the_action_would_post(reports: tuple[str, str],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "comment.md"
    assert cli(*reports, "--fail-on", "likely-regression", "--markdown", str(out)) == 1
    body = out.read_text(encoding="utf-8")
    assert body.startswith("<!-- turncheck:comment -->")  # the sticky comment's marker
    heading = next(line for line in body.splitlines() if line.startswith("## "))
    assert heading == ("## ❌ 1 later turn · later now passes on turn 3 \\(was 1\\) · "
                       "evals passing 1 → 1 of 2")
    # likely-regression, the watch tier, takes the one-sample transitions too.
    assert "- ❌ 1 eval passed on a later turn \\(one sample per side\\)" in body


def test_the_comment_of_two_local_runs_has_a_base_without_a_commit(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", report(suite("s.yaml", ev("e", PASS, 1)), commit=""))
    head = write(tmp_path / "head.json", report(suite("s.yaml", ev("e", PASS, 2)), commit=""))
    assert cli(str(base), str(head), "--markdown", str(tmp_path / "c.md")) == 0
    footer = (tmp_path / "c.md").read_text(encoding="utf-8").splitlines()[-1]
    assert footer.startswith("<sub>base · head · ") and "no base run" not in footer


def test_an_unpriced_model_gets_a_tokens_row_not_rows_of_unpriced(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", report(suite("s.yaml", ev("e", PASS, 1, cost=None))))
    head = write(tmp_path / "head.json", report(suite("s.yaml", ev("e", PASS, 2, cost=None))))
    cli(str(base), str(head), "--markdown", str(tmp_path / "c.md"))
    body = (tmp_path / "c.md").read_text(encoding="utf-8")
    table = body[body.index("| | base | head |"):body.index("</details>", body.index("Cost"))]
    # Unpriced, the tokens are the only change shown: with their Δ %, like a cost.
    assert "| Tokens (model + judge) | 20 | 40 | +20 | +100.0% |" in table
    assert "unpriced" not in table.split("\n\n")[0]  # the rows; the note below says why
    assert "Model" not in table and "**Total**" not in table


def test_cli_markdown_refuses_to_write_through_a_symlink(
    reports: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere.md"
    (tmp_path / "comment.md").symlink_to(target)
    assert cli(*reports, "--markdown", str(tmp_path / "comment.md")) == 2
    assert "cannot write" in capsys.readouterr().err and not target.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such report"), ("{not json", "not a turncheck run report"),
     ('{"suites": 3}', "not a turncheck run report"), (b"\xff\xfe", "cannot read report")],
)
def test_cli_bad_report_is_one_line_and_exit_2(
    tmp_path: Path, clean: tuple[str, str], capsys: pytest.CaptureFixture[str],
    content: str | bytes | None, message: str,
) -> None:
    bad = tmp_path / "bad.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    elif content is not None:
        bad.write_text(content, encoding="utf-8")
    assert cli(str(bad), clean[1]) == 2
    err = capsys.readouterr().err
    assert message in err and str(bad) in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "options",
    [["--fail-on", "nonsense"], ["--fail-on", "cost"], ["--cost-threshold-usd", "-1"],
     ["--rename", "no-equals"]],
)
def test_cli_usage_errors_exit_2(clean: tuple[str, str], options: list[str],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(*clean, *options) == 2
    assert capsys.readouterr().err.startswith("turncheck: error:")


def test_cli_rename_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(tmp_path / "b.json", report(suite("old.yaml", ev("e", PASS, 1))))
    head = write(tmp_path / "h.json", report(suite("new.yaml", ev("e", PASS, 2))))
    assert cli(str(base), str(head), "--rename", "new.yaml=old.yaml",
               "--fail-on", "likely-regression") == 1
    assert "renamed from old.yaml" in capsys.readouterr().out

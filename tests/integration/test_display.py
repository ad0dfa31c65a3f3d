"""The three kinds (evals, protocol cases, calibration samples) are shown through one
model (render/display.py): a change to a table, a cap or a money line reaches the
console and the comment of every kind, and the same spend reads the same everywhere."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tests.golden.test_comment_golden import (
    calibration_drop,
    invalid_files,
    protocol_change,
    rendered,
    turn_regression,
)
from tests.support.scripted_server import ScriptedServer
from turncheck.render import calibration_console, console, protocol_console
from turncheck.render.display import Capped, Money, MoneyLine, Table
from turncheck.report.run import Report
from turncheck.report.spend import Spend


def _rows(body: str, label: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in body.splitlines() if line.startswith(f"| {label} |")]


def test_the_run_and_its_protocol_suite_count_tokens_alike(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    """One protocol suite is the whole run: its token line is the run's, judge included
    (it once counted model tokens only beside a model + judge cost)."""
    body, _ = rendered(protocol_change(tmp_path, scripted_server))
    run, suite = _rows(body, "Tokens (model + judge)")
    assert suite[:4] == run[:4]
    assert run[1:4] == ["1,056", "1,054", "−2"]


def _made(folder: Path) -> Path:
    folder.mkdir()
    return folder


def _heads(tmp_path: Path, server: ScriptedServer) -> dict[str, Report]:
    return {"evals": turn_regression()[1],
            "protocol": protocol_change(_made(tmp_path / "p"), server)[1],
            "calibration": calibration_drop(_made(tmp_path / "c"), server)[1]}


def test_every_kind_prints_its_console_tables_through_one_table(
        tmp_path: Path, scripted_server: ScriptedServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    heads = _heads(tmp_path, scripted_server)
    monkeypatch.setattr(Table, "lines", lambda self, indent="": [f"{indent}TABLE {self.header[0]}"])
    evals, protocol = io.StringIO(), io.StringIO()
    console.summary(heads["evals"], evals)
    protocol_console.summary(heads["protocol"], protocol)
    protocol_console.transcript(heads["protocol"], protocol)
    calibration = calibration_console.summary_lines(heads["calibration"].calibrations)
    assert "TABLE Suite" in evals.getvalue().splitlines()
    assert {"TABLE Protocol", "  TABLE Turn"} <= set(protocol.getvalue().splitlines())
    assert calibration == ["TABLE Sample file"]


def _capped_at_one(items: Any, cap: int) -> Capped[Any]:
    return Capped(list(items[:1]), max(0, len(items) - 1))


def test_every_kinds_comment_caps_its_rows_through_one_rule(
        tmp_path: Path, scripted_server: ScriptedServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = protocol_change(_made(tmp_path / "p"), scripted_server)
    calibration = calibration_drop(_made(tmp_path / "c"), scripted_server)
    evals = invalid_files()
    monkeypatch.setattr(Capped, "of", staticmethod(_capped_at_one))
    evals_body, protocol_body, calibration_body = (
        rendered(scenario)[0] for scenario in (evals, protocol, calibration))
    assert "| _and 1 more_ — [step summary]" in evals_body  # two distinct problems
    assert "_2 more cases not shown; the JSON report has every case._" in protocol_body
    assert "| _and 1 more_ | | | | | |" in calibration_body  # flipped or head samples


def test_every_kinds_money_lines_come_from_one_money(
        tmp_path: Path, scripted_server: ScriptedServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = protocol_change(tmp_path, scripted_server)
    monkeypatch.setattr(MoneyLine, "cells", lambda self: {
        "label": f"MONEY {self.label}", "base": "b", "head": "h", "delta": "d",
        "percent": "p"})
    body, _ = rendered(scenario)
    run_cost = [row[0] for row in _rows(body, "MONEY **Total**")]
    suite_cost = _rows(body, "MONEY Cost (model + judge)")
    tokens = _rows(body, "MONEY Tokens (model + judge)")
    assert run_cost and suite_cost and len(tokens) == 2


def test_a_control_character_in_a_cell_does_not_skew_its_column() -> None:
    """Cells are escaped before the columns are measured (the protocol turn table once
    escaped whole lines after aligning them)."""
    lines = Table(["Turn", "Score"], [["1 a\x1bb", "0.50"], ["2 plain", "1.00"]]).lines()
    assert lines[2] == "1 a\\x1bb  0.50"
    assert lines[3].index("1.00") == lines[2].index("0.50")


def test_a_side_that_does_not_exist_reads_a_dash_and_counts_zero_in_token_deltas() -> None:
    head = Spend(tokens=100, judge_tokens=20, cost_usd=0.4, judge_cost_usd=0.1,
                 total_cost_usd=0.5)
    money = Money(None, head, has_base=True)
    assert money.tokens() == MoneyLine("Tokens (model + judge)", "—", "120", "+120", "new")
    total = money.total()
    assert (total.base, total.head, total.delta) == ("—", "$0.500", "—")
    assert [line.label for line in money.lines()] == [
        "Model", "Judge", "**Total**", "Tokens (model + judge)"]

"""Writing a large report runs no garbage collection pass (issue 46, item 9).

SIGTERM during a report's write lets the write finish (an interrupted run keeps its
report), so the write must be quick: serialising a 3,000-eval report allocates an
object per value, and Python's cyclic collector ran pass after pass over every object
of the run meanwhile: three times the serialisation itself (the probe of issue 46
measured 2.21 s from SIGTERM to exit for a 3,000-row report).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from turncheck.report.files import read_report, write_report
from turncheck.report.results import CheckResult, Status, TurnResult
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult
from turncheck.report.spend import Usage

EVALS = 3_000


def turn(index: int, number: int) -> TurnResult:
    return TurnResult(
        turn=number, prompt=f"question {index}, turn {number}",
        response=f"answer {index}.{number}: " + "the refund window is 30 days. " * 8,
        usage=Usage(input_tokens=300, output_tokens=90), cost_usd=0.0001, latency_ms=400.0,
        passed=number == 3, line=7 + number,
        checks=[CheckResult(type="match", passed=number == 3, detail='match "*done*"')])


def report_of(evals: int) -> Report:
    results = [EvalResult(name=f"eval {i}", prompt=f"question {i}", status=Status.PASS,
                          passed_on_turn=3, error=None,
                          turns=[turn(i, n) for n in (1, 2, 3)], line=7)
               for i in range(evals)]
    return Report(turncheck_version="test", mode="replay",
                  price_source=PriceSource(library="genai-prices", version="test",
                                           timestamp="2026-01-01T00:00:00Z"),
                  suites=[SuiteResult(path="evals/big.eval.yaml", name="big", model="gpt-4o-mini",
                                      provider="openai", cassette=None, evals=results)],
                  started_at="2026-01-01T00:00:00Z", duration_s=1.0)


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every garbage collection pass that starts meanwhile."""
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield started
    finally:
        gc.callbacks.remove(count)


def test_a_3000_eval_report_is_written_whole_without_a_collection_pass(
    tmp_path: Path, collections: list[int]
) -> None:
    report = report_of(EVALS)
    path = tmp_path / "report.json"
    gc.collect()
    collections.clear()
    write_report(path, report)
    assert collections == []  # the write allocated millions of objects without one
    assert gc.isenabled()  # and the collector is back on afterwards
    written = json.loads(path.read_text(encoding="utf-8"))
    assert [e["status"] for e in written["suites"][0]["evals"]] == ["pass"] * EVALS
    assert read_report(path, expect=Report) == report


def test_the_collector_stays_off_after_a_write_when_it_was_off(tmp_path: Path) -> None:
    gc.disable()
    try:
        write_report(tmp_path / "report.json", report_of(3))
        assert not gc.isenabled()
    finally:
        gc.enable()

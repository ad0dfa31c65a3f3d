"""Shards across matrix jobs, and merging their reports back into one."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAKE_KEY, FAST_RETRIES, suite_yaml
from tests.support.scripted_server import ScriptedServer
from turncheck.engine.merge import MergeError, merge_reports
from turncheck.engine.runner import run_suite_files
from turncheck.engine.settings import RunSettings
from turncheck.engine.sharding import (
    SLACK,
    ShardError,
    ShardSpec,
    eval_key,
    expected_turns,
    plan,
    select_shard,
)
from turncheck.formats.suite_loader import SuiteFile, load_suite
from turncheck.report.run import Report

SHARDS = 7
STAMP = "2026-11-01T00:00:00Z"


def big_suites(
    tmp_path: Path, server_url: str, suites: int = 4, per_suite: int = 250
) -> list[Path]:
    paths = []
    for s in range(suites):
        evals = "".join(
            f"  - name: e{s}-{i}\n    prompt: 'q {s}-{i} {'pass' if i % 3 else 'miss'}'\n"
            "    checks:\n      - match: '*ok*'\n"
            + ("      - prompt: again\n        checks: [{match: '*ok*'}]\n" if i % 2 else "")
            for i in range(per_suite)
        )
        path = tmp_path / f"suite{s}.eval.yaml"
        path.write_text(
            suite_yaml(evals, metadata=f"  provider: openai\n  base_url: {server_url}\n")
        )
        paths.append(path)
    return paths


def loaded(paths: list[Path]) -> list[SuiteFile]:
    files = [load_suite(p, p.name) for p in paths]
    assert all(not f.has_errors for f in files)
    return files


def run(files: list[SuiteFile]) -> Report:
    settings = RunSettings(
        mode="live",
        concurrency=64,
        env={"OPENAI_API_KEY": FAKE_KEY},
        price_timestamp=STAMP,
        session=FAST_RETRIES,
        commit="abc123",
    )
    return asyncio.run(run_suite_files(files, settings))


@pytest.fixture
def thousand(tmp_path: Path, scripted_server: ScriptedServer) -> list[SuiteFile]:
    scripted_server.add_rule("ok", contains="pass", usage=(11, 3))
    scripted_server.add_rule("no", usage=(7, 2))
    return loaded(big_suites(tmp_path, scripted_server.base_url))


def test_every_eval_lands_in_exactly_one_shard(thousand: list[SuiteFile]) -> None:
    seen: dict[str, int] = {}
    for index in range(1, SHARDS + 1):
        chosen, info = select_shard(thousand, ShardSpec(index, SHARDS))
        assert info.count == SHARDS
        for f in chosen:
            assert f.suite is not None
            for e in f.suite.evals:
                key = eval_key(f.path, e.display_name)
                assert key not in seen
                seen[key] = index
    assert len(seen) == 1000


def test_shards_are_balanced_by_expected_turns(thousand: list[SuiteFile]) -> None:
    loads = []
    for index in range(1, SHARDS + 1):
        chosen, _ = select_shard(thousand, ShardSpec(index, SHARDS))
        loads.append(sum(expected_turns(e) for f in chosen if f.suite for e in f.suite.evals))
    mean = sum(loads) / SHARDS
    assert max(loads) <= mean * (1 + SLACK) + 2
    assert min(loads) >= mean * (1 - 2 * SLACK) - 2


def test_adding_evals_moves_few_existing_ones() -> None:
    weights = {f"suite\0e{i}": 1 + i % 3 for i in range(1000)}
    before = plan(weights, SHARDS)
    after = plan({**weights, **{f"suite\0new{i}": 2 for i in range(10)}}, SHARDS)
    moved = sum(before[key] != after[key] for key in weights)
    assert moved <= 0.05 * len(weights)


def test_merging_seven_shards_equals_one_unsharded_run(thousand: list[SuiteFile]) -> None:
    whole = run(thousand)
    shards = []
    for index in range(1, SHARDS + 1):
        chosen, info = select_shard(thousand, ShardSpec(index, SHARDS))
        shards.append((f"shard-{index}.json", run(chosen).model_copy(update={"shard": info})))
    merged = merge_reports(shards)

    def essence(report: Report) -> object:
        return [
            (
                s.path,
                s.usage,
                s.cost_usd,
                [
                    (e.name, e.status, e.passed_on_turn, e.usage, e.cost_usd, len(e.turns))
                    for e in s.evals
                ],
            )
            for s in report.suites
        ]

    assert essence(merged) == essence(whole)
    assert merged.totals == whole.totals
    assert merged.shard is None


def fake_shard(index: int, count: int = 3, **changes: object) -> Report:
    from turncheck.engine.pricing import Pricer
    from turncheck.report.run import ShardInfo

    report = Report(
        turncheck_version="t",
        mode="replay",
        commit="c1",
        price_source=Pricer.at(STAMP).source,
        started_at=STAMP,
        duration_s=1,
        shard=ShardInfo(index=index, count=count, plan="p1"),
    )
    return report.model_copy(update=changes)


def test_missing_duplicated_and_mismatched_shards_are_named() -> None:
    with pytest.raises(MergeError, match=r"missing shard report\(s\): 2/3"):
        merge_reports([("a.json", fake_shard(1)), ("c.json", fake_shard(3))])
    with pytest.raises(MergeError, match=r"shard 1/3 appears twice: a.json and b.json"):
        merge_reports(
            [("a.json", fake_shard(1)), ("b.json", fake_shard(1)), ("c.json", fake_shard(3))]
        )
    with pytest.raises(MergeError, match=r"b.json does not match a.json: commit"):
        merge_reports(
            [
                ("a.json", fake_shard(1)),
                ("b.json", fake_shard(2, commit="c2")),
                ("c.json", fake_shard(3)),
            ]
        )
    with pytest.raises(MergeError, match=r"b.json is not a shard report"):
        merge_reports([("a.json", fake_shard(1)), ("b.json", fake_shard(2, shard=None))])


def test_report_job_fails_naming_the_missing_shard(tmp_path: Path) -> None:
    for index in (1, 3):
        (tmp_path / f"shard-{index}.json").write_text(fake_shard(index).model_dump_json())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "turncheck",
            "merge",
            str(tmp_path / "shard-1.json"),
            str(tmp_path / "shard-3.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "missing shard report(s): 2/3" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_shard_run_then_merge(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("ok")
    paths = big_suites(tmp_path, scripted_server.base_url, suites=2, per_suite=20)
    outputs = []
    for index in (1, 2, 3):
        out = tmp_path / f"r{index}.json"
        ran = subprocess.run(
            [
                sys.executable,
                "-m",
                "turncheck",
                "run",
                *map(str, paths),
                "--mode",
                "live",
                "--shard",
                f"{index}/3",
                "--price-timestamp",
                STAMP,
                "--json",
                str(out),
                "--quiet",
            ],
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": "", "OPENAI_API_KEY": FAKE_KEY},
        )
        assert ran.returncode == 0, ran.stderr
        outputs.append(out)
    merged = tmp_path / "merged.json"
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "merge", *map(str, outputs), "--json", str(merged)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(merged.read_text())
    assert report["totals"]["evals"] == 40 and report["shard"] is None


def test_shard_spec_is_validated() -> None:
    assert ShardSpec.parse(" 2 / 7 ") == ShardSpec(2, 7)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(ShardError):
            ShardSpec.parse(bad)

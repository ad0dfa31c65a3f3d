"""Reports stay identical across engine changes: replaying fixed suites and cassettes gives
byte-for-byte the report (and console output) committed in `tests/fixtures/golden/`, which
was produced by the engine before the performance work of issue 17. Only the run's start
time, duration and run id may differ, and the timings of app-target turns (the example apps run
for real in replay; only their model calls are replayed).

Regenerate only for a deliberate change of the report format:
    python tests/golden/test_golden_report.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
PRICE_TIMESTAMP = "2025-06-01T00:00:00Z"
# The priced suite's secrets: the API key and the `{{secret('GOLDEN_TOKEN')}}` value;
# the `--var` puts the key into a prompt, so the report must show it redacted.
ENV = {"OPENAI_API_KEY": "sk-golden-not-a-real-key-4567", "GOLDEN_TOKEN": "golden-secret-value-123"}
VAR = "NOTE=key sk-golden-not-a-real-key-4567 inside"
PER_RUN_KEYS = ("started_at", "duration_s", "run_id")
"""What every run has its own of: its start, duration and id (`Report.run_id`)."""
APP_TURN_TIMINGS = ("latency_ms", "first_token_ms")
RAN_IN = re.compile(r"ran in [0-9.]+s")


def replay(tree: Path, tmp: Path) -> tuple[dict[str, Any], str]:
    """`turncheck run` (replay) in `tree`: the JSON report without what is the run's
    own (`PER_RUN_KEYS`), and stdout."""
    report = tmp / "report.json"
    env = {**os.environ, **ENV}
    env.pop("GITHUB_ACTIONS", None)
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "run", ".", "--price-timestamp", PRICE_TIMESTAMP,
         "--var", VAR, "--json", str(report)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    for key in PER_RUN_KEYS:
        assert key in data
        del data[key]
    _without_app_timings(data)
    return data, RAN_IN.sub("ran in <time>", done.stdout)


def _without_app_timings(report: dict[str, Any]) -> None:
    """Blanks what an app target's turn measured: its app answers live, in every replay."""
    for suite in report["suites"]:
        for result in suite["evals"]:
            for turn in result["turns"]:
                if "app_model_calls" in turn:
                    turn.update({k: "<measured>" for k in APP_TURN_TIMINGS if k in turn})


def copy_tree(source: Path, tmp: Path) -> Path:
    target = tmp / source.name
    shutil.copytree(source, target)
    return target


def check(name: str, source: Path, tmp: Path) -> None:
    report, console = replay(copy_tree(source, tmp), tmp)
    expected = json.loads((GOLDEN / f"{name}.report.json").read_text(encoding="utf-8"))
    assert report == expected
    assert console == (GOLDEN / f"{name}.console.txt").read_text(encoding="utf-8")


def test_examples_replay_gives_the_golden_report(tmp_path: Path) -> None:
    check("examples", ROOT / "examples", tmp_path)


def test_priced_suite_replay_gives_the_golden_report(tmp_path: Path) -> None:
    check("priced", GOLDEN / "suite", tmp_path)


def test_golden_priced_report_is_priced_redacted_and_mixed() -> None:
    """The fixture exercises what the report identity is meant to protect."""
    text = (GOLDEN / "priced.report.json").read_text(encoding="utf-8")
    report = json.loads(text)
    assert ENV["OPENAI_API_KEY"] not in text and "[REDACTED]" in text
    statuses = {e["status"] for s in report["suites"] for e in s["evals"]}
    assert statuses == {"pass", "fail", "error"}
    assert report["totals"]["cost_usd"] > 0


def regenerate() -> None:  # pragma: no cover - run by hand
    import tempfile

    for name, source in (("examples", ROOT / "examples"), ("priced", GOLDEN / "suite")):
        with tempfile.TemporaryDirectory() as tmp:
            report, console = replay(copy_tree(source, Path(tmp)), Path(tmp))
        text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        (GOLDEN / f"{name}.report.json").write_text(text, encoding="utf-8")
        (GOLDEN / f"{name}.console.txt").write_text(console, encoding="utf-8")


if __name__ == "__main__":
    regenerate()

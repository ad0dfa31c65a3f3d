"""`benchmarks/targets.py` runs end to end at a tiny size: every measurement prints its
row (its figures are not checked here: timing stays out of the tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_targets_benchmark_runs_every_measurement_at_a_tiny_size() -> None:
    finished = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "targets.py"), "--calls", "20",
         "--warm-calls", "5", "--proxy-concurrency", "1", "4", "-E", "4", "-C", "2",
         "--latency", "0.01", "--python-turns", "50", "--repeat", "1"],
        capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert finished.returncode in (0, 1), finished.stdout + finished.stderr
    assert "Traceback" not in finished.stderr, finished.stderr
    rows = [line for line in finished.stdout.splitlines()
            if line.rstrip().endswith(("PASS", "MISS"))]
    names = " ".join(rows)
    for row in ("proxy CPU/call, record, C=1", "proxy CPU/call, replay, C=4",
                "app 4x3 @C=2", "python target, answer_async", "python target, answer_sync",
                "python target, answer_sync, 2 at once"):
        assert row in names, finished.stdout
    assert (finished.returncode == 1) == any(r.rstrip().endswith("MISS") for r in rows)

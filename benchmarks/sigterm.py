"""Seconds from SIGTERM to exit in the two slowest phases (issue 46, item 9).

    python benchmarks/sigterm.py [--only regex regex-long report] [--repeat 3]

Each cell runs `turncheck record` in its own process through the test hook
`tests/support/slow_phase_cli.py`, which sends the process SIGTERM at the start of the
phase (and writes the time it did); the figure is the time from that signal to the
process's exit, against the goal of 1 s. Every run is checked: exit code 143, no
traceback, and a report on disk that parses and keeps what finished.

- `regex`: a protocol suite whose `extract` pattern of 3,909 RE2 instructions runs on
  RE2's slowest engine over a 60,000-character answer (two seconds or so of one search,
  within the per-answer bound `MAX_REGEX_WORK`); the signal arrives as it starts.
- `regex-long`: the same with a pattern of 409 instructions over a 1 MB answer.
- `report`: 3,000 evals of three turns each (about 12 MB of JSON) and a JUnit file;
  the signal arrives as the JSON report starts being written.

Prints the load average: the machine is shared, so compare figures from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))

from engine import script_server, suite_text  # noqa: E402
from tests.support.scripted_server import ScriptedServer  # noqa: E402

GOAL_SECONDS = 1.0
REPORT_EVALS = 3_000
LONG_PATTERN = "[ab]*a[ab]{400}(c)"
"""Its DFA outgrows RE2's memory on a random answer of a and b, so the search runs on
RE2's NFA: 409 instructions x 1M characters, near the bound, a few seconds."""
LARGE_PATTERN = "[ab]*a[ab]{1000}[ab]{1000}[ab]{1000}[ab]{900}(c)"
"""3,909 instructions (the most is 4,000) x 60,000 characters: two seconds or so."""


def regex_suite(pattern: str, answer_chars: int) -> Callable[[Path, ScriptedServer], Path]:
    def build(folder: Path, server: ScriptedServer) -> Path:
        letters = random.Random(46)
        answer = "".join(letters.choice("ab") for _ in range(answer_chars))
        server.add_rule(answer, contains="Say")
        path = folder / "regex.eval.yaml"
        path.write_text(
            f"metadata: {{name: regex, model: gpt-4o-mini, provider: openai, "
            f"base_url: '{server.base_url}'}}\n"
            "cases:\n  - id: long\n"
            "turns:\n  - id: ask\n    prompt: Say a lot.\n"
            f"    extract: {{found: '{pattern}'}}\n"
            "    scorers:\n      - id: said\n        match: '*ab*'\n", encoding="utf-8")
        return path
    return build


def report_suite(folder: Path, server: ScriptedServer) -> Path:
    """engine.py's suite: every eval fails its first two turns and passes the third."""
    script_server(server, turns=3, latency=0.0)
    path = folder / "report.eval.yaml"
    path.write_text(suite_text(REPORT_EVALS, 3, server.base_url), encoding="utf-8")
    return path


SUITES: dict[str, tuple[str, Callable[[Path, ScriptedServer], Path]]] = {
    "regex": ("regex", regex_suite(LARGE_PATTERN, 60_000)),
    "regex-long": ("regex", regex_suite(LONG_PATTERN, 1_000_000)),
    "report": ("write", report_suite),
}


def seconds_to_exit(name: str) -> tuple[float, str]:
    """Seconds from the signal to the exit of one run; its outcome in words."""
    phase, build = SUITES[name]
    with tempfile.TemporaryDirectory() as folder, ScriptedServer() as server:
        work = Path(folder)
        suite = build(work, server)
        signalled, report = work / "signalled", work / "report.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
        env.update(OPENAI_API_KEY="sk-test-0000", TURNCHECK_TEST_SIGNAL_AT=phase,
                   TURNCHECK_TEST_SIGNAL_FILE=str(signalled))
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.slow_phase_cli", "record", str(suite),
             "--concurrency", "64", "--json", str(report), "--junit", str(work / "junit.xml")],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        ended = time.time()
        out = done.stdout + done.stderr
        if done.returncode != 143 or "Traceback" in out or not signalled.exists():
            raise SystemExit(f"{name}: exit {done.returncode}, not the interrupted run "
                             f"expected:\n{out[-2000:]}")
        elapsed = ended - float(signalled.read_text(encoding="utf-8"))
        return elapsed, outcome(json.loads(report.read_text(encoding="utf-8")))


def outcome(report: dict[str, object]) -> str:
    statuses: dict[str, int] = {}
    for suite in report.get("suites", []) + report.get("protocols", []):  # type: ignore[operator]
        for row in suite.get("evals", []) + suite.get("cases", []):
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    return "report kept: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SUITES), default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    missed = 0
    for name in args.only or list(SUITES):
        print(f"load average: {os.getloadavg()[0]:.2f}", flush=True)
        runs = [seconds_to_exit(name) for _ in range(args.repeat)]
        times = sorted(seconds for seconds, _ in runs)
        worst = times[-1]
        verdict = "PASS" if worst <= GOAL_SECONDS else "MISS"
        print(f"sigterm {name}: {' '.join(f'{t:.2f}' for t in times)} s from SIGTERM to exit "
              f"(worst {worst:.2f} s, goal {GOAL_SECONDS:g} s) {verdict}; {runs[-1][1]}",
              flush=True)
        missed += verdict == "MISS"
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())

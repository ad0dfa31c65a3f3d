"""Do the verdicts work? False alarms, detection and calls of `repeat: auto`.

    python benchmarks/verdicts.py [--prs 200] [--max-repeat 20] [--concurrency 48]

A local stochastic OpenAI-compatible server (tests/scripted_server.py on
127.0.0.1) answers `PASS` or `FAIL` at random: each eval's prompt carries its
per-turn pass probabilities (`[p=0.9]`, or `[p=0.8|1.0]` for an eval whose
follow-up turn always passes), so the benchmark sets every eval's behaviour.
Each simulated PR is one suite of three evals with `repeat: auto`; base and head
of all PRs of a scenario run in one `turncheck run --mode live --json` each (the
real CLI, in a subprocess), and each PR is then compared on its own with
`turncheck compare --json` (the CLI's entry point, in-process, to skip 200
interpreter start-ups), so multiplicity is corrected per PR as in real use.

Scenarios (the two other evals of every PR pass with 1.0 and 0.7 on both sides):
- null:  the first eval passes 30 % of the time on both sides;
- drop:  the first eval passes 90 % at base and 50 % at head;
- shift: the first eval always passes, on turn 1 80 % of the time at base but
         20 % at head (else on turn 2): same pass rate, later turn.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.scripted_server import ScriptedServer, user_turns  # noqa: E402

from turncheck.cli.main import main as turncheck  # noqa: E402

PROBABILITIES = re.compile(r"\[p=([0-9.|]+)\]")
OTHERS = ["1.0", "0.7"]
SCENARIOS = {
    "null": ("0.3", "0.3"),
    "drop": ("0.9", "0.5"),
    "shift": ("0.8|1.0", "0.2|1.0"),
}


def stochastic_reply(seed: int) -> Any:
    rng = random.Random(seed)

    def reply(body: dict[str, Any]) -> str:
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        found = PROBABILITIES.search(first)
        chances = [float(p) for p in found.group(1).split("|")] if found else [0.0]
        turn = user_turns(body)
        chance = chances[turn - 1] if turn <= len(chances) else 0.0
        return "PASS" if rng.random() < chance else "FAIL"

    return reply


def eval_yaml(name: str, chances: str) -> str:
    text = (f"  - name: {name}\n    prompt: \"case {name} [p={chances}]\"\n"
            "    checks:\n      - match: \"*PASS*\"\n")
    if "|" in chances:
        text += ("        prompt: try again\n        checks:\n"
                 "          - match: \"*PASS*\"\n")
    return text


def suite_yaml(pr: int, first: str, max_repeat: int) -> str:
    evals = "".join(eval_yaml(f"e{i}", p) for i, p in enumerate([first, *OTHERS]))
    return (f"metadata:\n  name: pr{pr:03d}\n  model: gpt-4o-mini\n  repeat: auto\n"
            f"  max_repeat: {max_repeat}\nevals:\n{evals}")


@dataclass
class Outcome:
    regressions_any: int = 0
    first_regression: int = 0
    first_likely_or_worse: int = 0
    samples: int = 0
    prs: int = 0


def run_side(directory: Path, server: ScriptedServer, concurrency: int) -> dict[str, Any]:
    out = directory / "report.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key"}
    subprocess.run(
        [sys.executable, "-m", "turncheck", "run", ".", "--mode", "live", "--base-url",
         server.base_url, "--json", str(out), "--quiet", "--concurrency", str(concurrency)],
        cwd=directory, env=env, check=False, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def per_pr(report: dict[str, Any], folder: Path) -> dict[str, Path]:
    """One report per suite (= per simulated PR)."""
    folder.mkdir()
    paths = {}
    for suite in report["suites"]:
        single = {**report, "suites": [suite]}
        path = folder / f"{suite['name']}.json"
        path.write_text(json.dumps(single))
        paths[suite["name"]] = path
    return paths


def scenario(name: str, prs: int, max_repeat: int, server: ScriptedServer,
             concurrency: int, work: Path) -> tuple[Outcome, int]:
    base_first, head_first = SCENARIOS[name]
    calls_before = len(server.requests)
    reports = {}
    for side, first in (("base", base_first), ("head", head_first)):
        directory = work / name / side
        directory.mkdir(parents=True)
        for pr in range(prs):
            (directory / f"pr{pr:03d}.eval.yaml").write_text(suite_yaml(pr, first, max_repeat))
        report = run_side(directory, server, concurrency)
        reports[side] = per_pr(report, work / name / f"{side}-prs")
    calls = len(server.requests) - calls_before
    outcome = Outcome()
    for pr, base_path in reports["base"].items():
        out = work / name / f"{pr}.comparison.json"
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                turncheck(["compare", str(base_path), str(reports["head"][pr]), "--json", str(out)])
            finally:
                sys.stdout = stdout
        evals = json.loads(out.read_text())["suites"][0]["evals"]
        verdicts = [e["verdict"] for e in evals]
        outcome.prs += 1
        outcome.regressions_any += "regression" in verdicts
        outcome.first_regression += verdicts[0] == "regression"
        outcome.first_likely_or_worse += verdicts[0] in ("regression", "likely-regression")
        outcome.samples += sum(e["base"]["samples"] + e["head"]["samples"] for e in evals)
    return outcome, calls


def expected_fixed_calls(name: str, prs: int, max_repeat: int) -> float:
    """Provider calls the same PRs would make at a fixed `repeat: max_repeat`."""
    def turns(chances: str) -> float:
        first = float(chances.split("|")[0])
        return 1.0 if "|" not in chances else 1.0 + (1.0 - first)
    per_side = [turns(p) for p in OTHERS]
    total = 0.0
    for first in SCENARIOS[name]:
        total += sum(per_side) + turns(first)
    return total * max_repeat * prs


def row(label: str, value: str, target: str, ok: bool | None) -> None:
    verdict = "" if ok is None else ("PASS" if ok else "MISS")
    print(f"{label:<58} {value:>14}   target {target:<12} {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prs", type=int, default=200)
    parser.add_argument("--max-repeat", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=48)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"load average: {os.getloadavg()[0]:.2f}; {args.prs} PRs per scenario, "
          f"{1 + len(OTHERS)} evals each, repeat: auto, max_repeat {args.max_repeat}")
    results: dict[str, tuple[Outcome, int]] = {}
    with ScriptedServer(default_reply=stochastic_reply(args.seed)) as server, \
            tempfile.TemporaryDirectory() as work:
        for name in SCENARIOS:
            step = time.perf_counter()
            results[name] = scenario(name, args.prs, args.max_repeat, server,
                                     args.concurrency, Path(work))
            print(f"  {name}: {time.perf_counter() - step:.0f} s")
    null, drop, shift = (results[n][0] for n in ("null", "drop", "shift"))
    print()
    alarm = null.regressions_any / null.prs
    row("family-wise false alarms, identical base/head (any eval)", f"{alarm:.1%}", "<= 5%",
        alarm <= 0.05)
    detect = drop.first_regression / drop.prs
    row("detection, one eval 0.9 -> 0.5 (regression)", f"{detect:.1%}", ">= 80%",
        detect >= 0.80)
    flagged = drop.first_likely_or_worse / drop.prs
    row("  ... flagged regression or likely-regression", f"{flagged:.1%}", "(info)", None)
    others = drop.regressions_any - drop.first_regression
    row("  ... PRs with a false regression on an unchanged eval", f"{others / drop.prs:.1%}",
        "(info)", None)
    turn = shift.first_regression / shift.prs
    row("detection, turn of pass 1 -> 2 at equal pass rate", f"{turn:.1%}", "(info)", None)
    for name in SCENARIOS:
        outcome, calls = results[name]
        fixed_samples = 2 * (1 + len(OTHERS)) * args.max_repeat * outcome.prs
        fixed_calls = expected_fixed_calls(name, outcome.prs, args.max_repeat)
        row(f"{name}: samples, repeat auto vs fixed max_repeat",
            f"{outcome.samples} / {fixed_samples}", "< 1", outcome.samples < fixed_samples)
        row(f"{name}: provider calls, auto vs fixed (expected)",
            f"{calls} / {fixed_calls:.0f}", f"ratio {calls / fixed_calls:.2f}", None)
    elapsed = time.perf_counter() - started
    row("wall time", f"{elapsed:.0f} s", "< 600 s", elapsed < 600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Do the verdicts work? False alarms, detection and calls of `repeat: auto`.

    python benchmarks/verdicts.py [--prs 500] [--max-repeat 20] [--concurrency 32] [--seed 2024]

The model under test is a stochastic OpenAI-compatible server on 127.0.0.1
(tests/scripted_server.py) that answers `PASS` or `FAIL`. Each eval's prompt
carries its per-turn pass probabilities (`[p=0.9]`, or `[p=0.8|1.0]` for an eval
whose follow-up turn always passes), so the benchmark sets every eval's
behaviour. Each simulated PR is one suite of three evals with `repeat: auto`.

Base and head each get their own server, seeded differently: two independent
runs of the same model. A server's answer is a pure function of its seed and the
request (prompt, turn, and the sample's `seed` field: the suites set `seed`, so
sample i sends seed + i), drawn through a hash. The draws are uniform and
independent, and the figures do not depend on the order in which concurrent
requests arrive: the same `--seed` gives the same figures.

All PRs of all scenarios run through the real CLI, one `turncheck run --mode live
--json` per side (two subprocesses, side by side). Each PR is then compared on
its own with `turncheck compare --json` (the CLI's entry point, in-process, to
skip 3 x PRs interpreter start-ups), so multiplicity is corrected per PR as in
real use.

Scenarios (the two other evals of every PR pass with 1.0 and 0.7 on both sides):
- null:  the first eval passes 30 % of the time on both sides;
- drop:  the first eval passes 90 % at base and 50 % at head;
- shift: the first eval always passes, on turn 1 80 % of the time at base but
         20 % at head (else on turn 2): same pass rate, later turn.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import multiprocessing
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.scripted_server import ScriptedServer, user_turns  # noqa: E402

from turncheck.cli.main import main as turncheck  # noqa: E402
from turncheck.stats.rates import wilson_interval  # noqa: E402

PROMPT = re.compile(r"^case (\w+)/\w+/\w+ \[p=([0-9.|]+)\]$")
OTHERS = ["1.0", "0.7"]
SCENARIOS = {
    "null": ("0.3", "0.3"),
    "drop": ("0.9", "0.5"),
    "shift": ("0.8|1.0", "0.2|1.0"),
}
SIDES = ("base", "head")
SUITE_SEED = 1
"""Every suite's `seed`: sample i sends SUITE_SEED + i, so a server tells samples apart."""


def uniform(*key: object) -> float:
    """A uniform draw in [0, 1) that depends only on `key` (64 bits of BLAKE2b)."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


class StochasticModel:
    """A server's replies: PASS with the chance the prompt sets for the turn.

    Called on the server's one event-loop thread, so the call counter needs no lock."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.calls: Counter[str] = Counter()

    def __call__(self, body: dict[str, Any]) -> str:
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        found = PROMPT.match(first)
        if found is None or body.get("seed") is None:
            raise ValueError(f"not a benchmark request: {first!r}, seed {body.get('seed')}")
        self.calls[found.group(1)] += 1
        chances = [float(p) for p in found.group(2).split("|")]
        turn = user_turns(body)
        chance = chances[turn - 1] if turn <= len(chances) else 0.0
        return "PASS" if uniform(self.seed, first, body["seed"], turn) < chance else "FAIL"


def eval_yaml(prompt: str, chances: str, name: str) -> str:
    text = (f"  - name: {name}\n    prompt: \"case {prompt} [p={chances}]\"\n"
            "    checks:\n      - match: \"*PASS*\"\n")
    if "|" in chances:
        text += ("        prompt: try again\n        checks:\n"
                 "          - match: \"*PASS*\"\n")
    return text


def suite_yaml(scenario: str, pr: int, first: str, max_repeat: int) -> str:
    name = f"{scenario}-pr{pr:04d}"
    evals = "".join(eval_yaml(f"{scenario}/pr{pr:04d}/e{i}", p, f"e{i}")
                    for i, p in enumerate([first, *OTHERS]))
    return (f"metadata:\n  name: {name}\n  model: gpt-4o-mini\n  seed: {SUITE_SEED}\n"
            f"  repeat: auto\n  max_repeat: {max_repeat}\nevals:\n{evals}")


def write_suites(directory: Path, side: int, prs: int, max_repeat: int) -> None:
    for scenario, firsts in SCENARIOS.items():
        folder = directory / scenario
        folder.mkdir(parents=True)
        for pr in range(prs):
            text = suite_yaml(scenario, pr, firsts[side], max_repeat)
            (folder / f"pr{pr:04d}.eval.yaml").write_text(text)


def start_run(directory: Path, base_url: str, concurrency: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key"}
    return subprocess.Popen(
        [sys.executable, "-m", "turncheck", "run", ".", "--mode", "live", "--base-url",
         base_url, "--json", "report.json", "--quiet", "--concurrency", str(concurrency)],
        cwd=directory, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def finish_run(process: subprocess.Popen[bytes], directory: Path) -> dict[str, Any]:
    """The run's report; exits when the run broke or any sample errored."""
    _, stderr = process.communicate()
    path = directory / "report.json"
    if not path.exists():
        sys.exit(f"turncheck run failed in {directory}:\n{stderr.decode(errors='replace')}")
    report: dict[str, Any] = json.loads(path.read_text())
    errors = [f"{s['name']}/{e['name']}" for s in report["suites"] for e in s["evals"]
              if any(sample["status"] == "error" for sample in e.get("samples") or [e])]
    if errors or report["diagnostics"]:
        sys.exit(f"the run in {directory} had errors: {errors[:5]} {report['diagnostics'][:3]}")
    return report


def per_pr(report: dict[str, Any], folder: Path) -> dict[str, Path]:
    """One report file per suite (= per simulated PR), by suite name."""
    folder.mkdir()
    paths = {}
    for suite in report["suites"]:
        path = folder / f"{suite['name']}.json"
        path.write_text(json.dumps({**report, "suites": [suite]}))
        paths[suite["name"]] = path
    return paths


def compare(base: Path, head: Path, out: Path) -> list[dict[str, Any]]:
    """`turncheck compare --json` on one PR; its evals, in suite order."""
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        turncheck(["compare", str(base), str(head), "--json", str(out)])
    evals: list[dict[str, Any]] = json.loads(out.read_text())["suites"][0]["evals"]
    return evals


@dataclass
class Outcome:
    prs: int = 0
    regressions_any: int = 0
    first_regression: int = 0
    first_likely_or_worse: int = 0
    samples: int = 0
    calls: int = 0

    def add(self, evals: list[dict[str, Any]]) -> None:
        verdicts = [e["verdict"] for e in evals]
        self.prs += 1
        self.regressions_any += "regression" in verdicts
        self.first_regression += verdicts[0] == "regression"
        self.first_likely_or_worse += verdicts[0] in ("regression", "likely-regression")
        self.samples += sum(e["base"]["samples"] + e["head"]["samples"] for e in evals)


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


def cpu_seconds() -> tuple[float, float]:
    """User + system CPU of this process and of its finished children (the
    `turncheck run` processes, the servers and the compare processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def row(label: str, value: str, target: str, ok: bool | None = None) -> None:
    verdict = "" if ok is None else ("PASS" if ok else "MISS")
    print(f"{label:<56} {value:>26}   target {target:<8} {verdict}")


def rate(count: int, total: int) -> str:
    """count/total as a percentage with its Wilson 95 % interval."""
    low, high = wilson_interval(count, total)
    return f"{count / total:.1%} [{low:.1%}, {high:.1%}]"


def serve(seed: int, connection: Connection) -> None:
    """A server process: sends its port, serves until told to stop, sends its calls."""
    model = StochasticModel(seed)
    with ScriptedServer(default_reply=model) as server:
        connection.send(server.base_url)
        connection.recv()
    connection.send(dict(model.calls))


@contextlib.contextmanager
def server_process(seed: int) -> Iterator[tuple[str, Counter[str]]]:
    """The base URL of a stochastic server in its own process (its own GIL), and the
    calls it answered per scenario, filled in when the block ends."""
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.Process(target=serve, args=(seed, theirs), daemon=True)
    process.start()
    calls: Counter[str] = Counter()
    try:
        yield ours.recv(), calls
    finally:
        ours.send("stop")
        calls.update(ours.recv())
        process.join()


def compare_one(job: tuple[Path, Path, Path]) -> list[dict[str, Any]]:
    return compare(*job)


def run_all(args: argparse.Namespace, work: Path) -> dict[str, Outcome]:
    outcomes = {name: Outcome() for name in SCENARIOS}
    directories = [work / side for side in SIDES]
    for side, directory in enumerate(directories):
        write_suites(directory, side, args.prs, args.max_repeat)
    step = time.perf_counter()
    with server_process(args.seed * 2) as (base_url, base_calls), \
            server_process(args.seed * 2 + 1) as (head_url, head_calls):
        runs = [start_run(directory, url, args.concurrency)
                for directory, url in zip(directories, (base_url, head_url), strict=True)]
        reports = [finish_run(run, directory)
                   for run, directory in zip(runs, directories, strict=True)]
    print(f"  run, both sides side by side: {time.perf_counter() - step:.0f} s wall, "
          f"{cpu_seconds()[1]:.0f} s CPU (the two turncheck run and two server processes)")
    for name, outcome in outcomes.items():
        outcome.calls = base_calls[name] + head_calls[name]
    step = time.perf_counter()
    base, head = (per_pr(report, work / f"{side}-prs")
                  for report, side in zip(reports, SIDES, strict=True))
    jobs = [(path, head[suite], work / f"{suite}.comparison.json") for suite, path in base.items()]
    importlib.import_module("turncheck.cli.compare_cmd")  # once, before the workers fork
    pool = multiprocessing.Pool(args.workers)
    for suite, evals in zip(base, pool.imap(compare_one, jobs, chunksize=8), strict=True):
        outcomes[suite.split("-")[0]].add(evals)
    pool.close()
    pool.join()
    print(f"  compare, {len(base)} PRs one by one ({args.workers} processes): "
          f"{time.perf_counter() - step:.0f} s wall")
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prs", type=int, default=500, help="simulated PRs per scenario")
    parser.add_argument("--max-repeat", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--workers", type=int, default=2, help="processes for the compares")
    args = parser.parse_args()
    started, load = time.perf_counter(), os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{args.prs} PRs per scenario, {1 + len(OTHERS)} evals each, repeat: auto, "
          f"max_repeat {args.max_repeat}, seed {args.seed}")
    with tempfile.TemporaryDirectory() as work:
        outcomes = run_all(args, Path(work))
    null, drop, shift = (outcomes[n] for n in ("null", "drop", "shift"))
    print("\n(rates with their Wilson 95 % interval over the simulated PRs)")
    alarm = null.regressions_any / null.prs
    row("family-wise false alarms, identical base/head (any eval)",
        rate(null.regressions_any, null.prs), "<= 5%", alarm <= 0.05)
    detect = drop.first_regression / drop.prs
    row("detection, one eval 0.9 -> 0.5 (regression)", rate(drop.first_regression, drop.prs),
        ">= 80%", detect >= 0.80)
    row("  ... flagged regression or likely-regression",
        rate(drop.first_likely_or_worse, drop.prs), "(info)")
    row("  ... PRs with a false regression on an unchanged eval",
        rate(drop.regressions_any - drop.first_regression, drop.prs), "(info)")
    row("detection, turn of pass 1 -> 2 at equal pass rate",
        rate(shift.first_regression, shift.prs), "(info)")
    for name, outcome in outcomes.items():
        fixed_samples = len(SIDES) * (1 + len(OTHERS)) * args.max_repeat * outcome.prs
        fixed_calls = expected_fixed_calls(name, outcome.prs, args.max_repeat)
        row(f"{name}: samples, repeat auto / fixed max_repeat",
            f"{outcome.samples} / {fixed_samples}", f"< 1: {outcome.samples / fixed_samples:.2f}",
            outcome.samples < fixed_samples)
        row(f"{name}: provider calls, auto / fixed (expected)",
            f"{outcome.calls} / {fixed_calls:.0f}", f"ratio {outcome.calls / fixed_calls:.2f}")
    elapsed = time.perf_counter() - started
    own, children = cpu_seconds()
    print()
    row("wall time", f"{elapsed:.0f} s", "< 600 s", elapsed < 600)
    # Wall time depends on what else the machine runs; CPU time much less. Under 600 s
    # of CPU, the benchmark takes under 10 minutes even on one free core.
    row("CPU time, user + system, all processes", f"{own + children:.0f} s", "< 600 s",
        own + children < 600)
    print(f"  (child processes: runs, servers, compares {children:.0f} s; "
          f"the benchmark's own bookkeeping {own:.0f} s)")
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`turncheck estimate` against reality: estimates next to a live run's actual usage.

    python benchmarks/estimate.py [--evals 40] [--seed 1]

Three suites with known answer lengths (short, long, and one with
an llm_judge check) run live against the scripted server on 127.0.0.1 (model id
gpt-4o-mini, so genai-prices prices every call). Each reply is `base length ×
(1 ± jitter)` words, drawn afresh on every run, and whether a follow-up fires
is fixed per eval. The script:

1. runs the suites once: the *history* report;
2. estimates them with `--history` (expected) and without (worst case);
3. runs them again: the *actual* usage the estimate is judged against.

It prints, per suite and in total, expected / actual and worst / actual for
tokens and cost, against the targets: expected within ±15 % of actual, worst
case never below actual. It exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.scripted_server import ScriptedServer  # noqa: E402

from turncheck.engine.estimate import estimate  # noqa: E402
from turncheck.engine.pricing import Pricer  # noqa: E402
from turncheck.engine.runner import run_suite_files  # noqa: E402
from turncheck.engine.session import SessionSettings  # noqa: E402
from turncheck.engine.settings import RunSettings  # noqa: E402
from turncheck.formats.suite_loader import SuiteFile, load_suite  # noqa: E402
from turncheck.report.estimate import Estimate, Figures  # noqa: E402
from turncheck.report.run import Report  # noqa: E402

EXPECTED_TOLERANCE = 0.15
JITTER = 0.10
SUITES = {"short": (8, 40, False), "long": (60, 120, False), "judged": (20, 60, True)}
"""name: (answer words, max_output_tokens, judge + semantic checks)."""


def suite_text(name: str, evals: int, max_out: int, judged: bool) -> str:
    # No `semantic` check: genai-prices prices embeddings only with their provider, which
    # a local server is not, so their cost would be unpriced (tests cover their tokens).
    extra = "      - llm_judge: {criteria: answers the question}\n" if judged else ""
    body = "".join(
        f"  - prompt: {name} {i} explain the topic in some detail\n"
        f"    checks:\n{extra}"
        f"      - match: '*DONE*'\n"
        f"        prompt: please finish {i}\n"
        f"        checks: [{{match: '*DONE*'}}]\n"
        for i in range(evals)
    )
    return (f"metadata:\n  name: {name}\n  model: gpt-4o-mini\n  max_output_tokens: {max_out}\n"
            f"  system_prompt: You answer questions about science.\nevals:\n{body}")


def script(server: ScriptedServer, rng: random.Random) -> None:
    server.reset()
    server.add_rule('{"pass": true, "reason": "fine"}', when=lambda b: "response_format" in b)

    def reply(body: dict[str, Any]) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        name, number = users[0].split()[:2]
        words = round(SUITES[name][0] * rng.uniform(1 - JITTER, 1 + JITTER))
        done = int(number) % 3 != 0 or len(users) > 1  # every third eval needs a follow-up
        return ("DONE " if done else "not yet ") + " ".join(["word"] * max(1, words - 1))

    server.add_rule(reply, when=lambda b: "messages" in b)


def run(files: list[SuiteFile], server: ScriptedServer, timestamp: str) -> Report:
    settings = RunSettings(mode="live", provider="openai", base_url=server.base_url,
                           env={"OPENAI_API_KEY": "sk-bench"}, price_timestamp=timestamp,
                           session=SessionSettings(timeout_s=30, attempts=2))
    return asyncio.run(run_suite_files(files, settings))


def actual_figures(report: Report, path: str) -> Figures:
    [suite] = [s for s in report.suites if s.path == path]
    return Figures(usage=suite.usage, cost_usd=suite.cost_usd, judge_usage=suite.judge_usage,
                   judge_cost_usd=suite.judge_cost_usd)


def ratio(estimated: float | None, actual: float | None) -> float:
    return float("nan") if not estimated or not actual else estimated / actual


def rows(result: Estimate, actual: Report) -> list[tuple[str, Figures, Figures, Figures]]:
    out = [(s.name, s.expected, s.worst, actual_figures(actual, s.path)) for s in result.suites]
    total = sum((a for *_, a in out), Figures())
    return [*out, ("Total", result.expected, result.worst, total)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evals", type=int, default=40, help="evals per suite (default: 40)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("TURNCHECK_TOKENIZER", "estimate")
    rng = random.Random(args.seed)
    timestamp = "2025-06-01T00:00:00Z"
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        paths = []
        for name, (_, max_out, judged) in SUITES.items():
            path = Path(tmp) / f"{name}.eval.yaml"
            path.write_text(suite_text(name, args.evals, max_out, judged), encoding="utf-8")
            paths.append(path)
        files = [load_suite(path) for path in paths]
        script(server, rng)
        history = run(files, server, timestamp)
        result = estimate(files, Pricer.at(timestamp), history, history_name="run 1",
                          base_url=server.base_url)
        script(server, rng)
        actual = run(files, server, timestamp)
    print(f"{args.evals} evals per suite, answers ±{JITTER:.0%} between runs, "
          f"prices at {timestamp}")
    print(f"{'suite':<8} {'tokens exp/act':>15} {'worst/act':>10} {'cost exp/act':>13} "
          f"{'worst/act':>10}   actual tokens, cost")
    missed = False
    for name, expected, worst, real in rows(result, actual):
        token_ratio = ratio(expected.tokens, real.tokens)
        cost_ratio = ratio(expected.total_cost_usd, real.total_cost_usd)
        worst_tokens = ratio(worst.tokens, real.tokens)
        worst_cost = ratio(worst.total_cost_usd, real.total_cost_usd)
        missed |= not (abs(token_ratio - 1) <= EXPECTED_TOLERANCE
                       and abs(cost_ratio - 1) <= EXPECTED_TOLERANCE
                       and worst_tokens >= 1 and worst_cost >= 1)
        print(f"{name:<8} {token_ratio:>15.3f} {worst_tokens:>10.2f} {cost_ratio:>13.3f} "
              f"{worst_cost:>10.2f}   {real.tokens:,}, ${real.total_cost_usd or 0:.6f}")
    print(f"targets: expected/actual within 1 ± {EXPECTED_TOLERANCE}, worst/actual ≥ 1 — "
          + ("MISSED" if missed else "met"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

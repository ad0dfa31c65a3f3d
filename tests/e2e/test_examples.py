"""The committed examples, replayed from their cassettes, show what turncheck does.

`turncheck run examples/` is the first thing a new user runs. Its recorded answers
come from the shipped local model (tools/serve_local_model.py), or from a scripted
server where that model cannot call tools (the weather assistant and the two app
examples), and the examples are written so that the one run shows every kind of
outcome: evals passing on turn 1, passing only after a follow-up, failing after every
follow-up, an `or` group, a semantic check, judge verdicts, scored protocol cases,
graders that agree with some of their labels, and apps as targets (an HTTP server and
a Python function, each calling the model itself). No recorded answer is an echo of
its prompt.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
Json = dict[str, Any]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Json, str]:
    """`turncheck run examples/` replayed offline without API keys: its JSON report, stdout."""
    home = tmp_path_factory.mktemp("home")
    path = home / "report.json"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "run", "--json", str(path), "examples/"],
        cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=600,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    data: Json = json.loads(path.read_text(encoding="utf-8"))
    assert "replay" in data["mode"]
    return data, done.stdout


@pytest.fixture(scope="module")
def report(run: tuple[Json, str]) -> Json:
    return run[0]


def evals(report: Json) -> list[Json]:
    return [e for suite in report["suites"] for e in suite["evals"]]


def eval_named(report: Json, name: str) -> Json:
    return next(e for e in evals(report) if e["name"] == name)


def checks(report: Json) -> Iterator[Json]:
    for result in evals(report):
        for turn in result["turns"]:
            yield from turn["checks"]


def words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def test_every_example_runs_without_errors(report: Json) -> None:
    assert report["totals"]["errors"] == 0
    assert [e["name"] for e in evals(report) if e["status"] == "error"] == []
    assert "not JSON" not in json.dumps(report)
    assert "no recording" not in json.dumps(report)


def test_evals_pass_on_turn_one_after_a_follow_up_and_fail_after_all_follow_ups(
    report: Json,
) -> None:
    outcomes = [(e["status"], e["passed_on_turn"], len(e["turns"])) for e in evals(report)]
    assert any(s == "pass" and on == 1 for s, on, _ in outcomes), outcomes
    assert any(s == "pass" and on is not None and on > 1 for s, on, _ in outcomes), outcomes
    assert any(s == "fail" and turns > 1 for s, _, turns in outcomes), outcomes


def test_or_semantic_and_judge_checks_give_verdicts(report: Json) -> None:
    by_type: dict[str, list[Json]] = {}
    for check in checks(report):
        by_type.setdefault(check["type"], []).append(check)
    for kind in ("semantic", "llm_judge"):
        assert by_type.get(kind), f"no {kind} check in the examples"
        assert all(c["error"] is None for c in by_type[kind]), by_type[kind]
    assert any("similarity" in c["detail"] for c in by_type["semantic"])
    assert any(c["depth"] > 0 for c in checks(report)), "no `or` group in the examples"


def suite_named(report: Json, name: str) -> Json:
    return next(s for s in report["suites"] if s["name"] == name)


def test_the_support_bot_app_runs_its_tool_and_remembers_the_conversation(report: Json) -> None:
    # examples/support-bot: started by turncheck, its own model calls replayed by the proxy.
    bot = suite_named(report, "support-bot")
    outcomes = {e["name"]: (e["status"], e["passed_on_turn"]) for e in bot["evals"]}
    assert outcomes == {"order status": ("pass", 1), "unknown order": ("pass", 1),
                        "remembers the customer": ("pass", 3)}
    [order] = eval_named(report, "order status")["turns"]
    assert order["tool_calls"][0]["name"] == "lookup_order"
    assert order["app_model_calls"] == 2  # the tool call, then the answer from its result
    # Only the newest message is sent (stateful): the last answer comes from the app's memory.
    memory = eval_named(report, "remembers the customer")["turns"]
    assert memory[2]["response"] == "You are Ada, and we talked about your order A1002."
    assert bot["cost_usd"] > 0  # the app's own calls, priced as gpt-4o-mini


def test_the_mt_bench_style_evals_send_both_turns_and_name_the_turn_that_failed(
        report: Json, run: tuple[Json, str]) -> None:
    # examples/mt-bench: scripted turns; the second question is asked after a passing first.
    bench = suite_named(report, "mt-bench-style")
    outcomes = {e["name"]: (e["status"], e.get("failed_on_turn")) for e in bench["evals"]}
    assert outcomes == {"extraction": ("pass", None), "geography": ("pass", None),
                        "reasoning": ("pass", None), "math": ("fail", 2),
                        "humanities": ("fail", 2)}
    assert all(len(e["turns"]) == 2 and e["turns"][0]["passed"] for e in bench["evals"])
    assert "  Overall: ❌ FAIL (failed on turn 2 of 2)" in run[1].splitlines()


def test_the_support_bots_memory_eval_is_three_scripted_turns_that_all_pass(report: Json) -> None:
    memory = eval_named(report, "remembers the customer")["turns"]
    assert [t["passed"] for t in memory] == [True, True, True]
    assert [t["tool_calls"][0]["name"] if t.get("tool_calls") else None for t in memory] == [
        None, "lookup_order", None]


def test_the_simulated_customer_reaches_its_goal_and_its_tokens_are_apart(report: Json
                                                                          ) -> None:
    # examples/support-bot/simulated-customer.eval.yaml: a simulated user against the app.
    customer = eval_named(report, "delayed order")
    assert (customer["status"], customer["passed_on_turn"]) == ("pass", 2)
    assert customer["conversation"]["ending"] == "goal_met"
    assert [c["passed"] for c in customer["conversation"]["success"]] == [True, True, True]
    assert customer["turns"][1]["prompt"] == "It is order A1002. When will it arrive?"
    assert customer["simulator"]["model"] == "gpt-4o-mini"
    assert customer["simulator_usage"]["input_tokens"] > 0
    assert customer["usage"] == {"input_tokens": 142, "output_tokens": 22}  # the app's own
    assert report["totals"]["simulator_cost_usd"] > 0


def test_the_python_function_target_is_called_with_the_conversation(report: Json) -> None:
    faq = suite_named(report, "faq-bot")
    assert [(e["status"], e["passed_on_turn"]) for e in faq["evals"]] == [("pass", 1), ("pass", 2)]
    assert all(t["app_model_calls"] == 1 and t["usage"]["input_tokens"] > 0
               for e in faq["evals"] for t in e["turns"])


def test_every_protocol_case_is_scored(report: Json) -> None:
    [protocol] = report["protocols"]
    assert len(protocol["cases"]) == 3
    for case in protocol["cases"]:
        assert case["status"] != "error", case["error"]
        assert case["aggregates"]["interactive_reasoning"] is not None
        for turn in case["turns"]:
            assert all(s["error"] is None for s in turn["scorers"]), turn["scorers"]
        ratings = [s for t in case["turns"] for s in t["scorers"] if s["type"] == "judge_scale"]
        assert ratings and all(s["judge_scale"]["rating"] in range(1, 6) for s in ratings)


def test_each_grader_agrees_with_at_least_one_label(report: Json) -> None:
    graders = report["calibrations"]
    assert {Path(c["path"]).name for c in graders} == {
        "greeting.samples.toml", "tone.samples.toml"
    }
    for calibration in graders:
        assert calibration["errors"] == 0, calibration["samples"]
        assert calibration["agreed"] >= 1, calibration["samples"]
        assert calibration["agreed"] < len(calibration["samples"])  # and disagrees somewhere


ECHO_RUN = 8
"""An answer echoes a prompt when it repeats this many of the prompt's words in a row
(or the whole prompt, when it is shorter)."""


def echoes(response: str, prompt: str) -> bool:
    said, asked = words(response).split(), words(prompt).split()
    run = min(ECHO_RUN, len(asked))
    text = f" {' '.join(said)} "
    return run > 0 and any(
        f" {' '.join(asked[i:i + run])} " in text for i in range(len(asked) - run + 1)
    )


def conversations(report: Json, kind: str) -> Iterator[list[Json]]:
    if kind == "evals":
        yield from (e["turns"] for e in evals(report))
    else:
        yield from (c["turns"] for p in report["protocols"] for c in p["cases"])


def echoed_answers(conversation: list[Json]) -> list[tuple[str, str]]:
    """(prompt, answer) pairs where an answer repeats its prompt or an earlier one."""
    found = []
    for number, turn in enumerate(conversation):
        for earlier in conversation[: number + 1]:
            if echoes(turn["response"], earlier["prompt"]):
                found.append((earlier["prompt"], turn["response"]))
    return found


def assert_not_echoes(report: Json, kind: str) -> None:
    for conversation in conversations(report, kind):
        assert all(words(t["response"]) for t in conversation), conversation
        assert echoed_answers(conversation) == []


def test_the_echo_check_catches_the_answers_of_the_old_flow_gating_recording() -> None:
    # Recorded before the prompts were shortened: turn 1 repeated (most of) its prompt,
    # and turn 2 repeated turn 1's prompt instead of answering its own.
    first = ("I have a flow cytometry panel for human PBMC (cryopreserved) analysis\n"
             "(T-cell differentiation and memory).\n\nPanel markers:\nZombie NIR (viability), "
             "CD3, CD4, CD8\n\nWhat initial quality control and top-level gating would you "
             "recommend?")
    repeated = ("I have a flow cytometry panel for human PBMC (cryopreserved) analysis.\n\n"
                "Panel markers:\nCD3, CD4, CD8\n\nWhat initial quality control and top-level "
                "gating would you recommend?")
    second = "Let's focus on CD3+ T cells. What subpopulations would you identify?"
    conversation = [{"prompt": first, "response": repeated},
                    {"prompt": second, "response": repeated}]
    assert len(echoed_answers(conversation)) == 2
    assert echoes("What is 15 * 7? mendatang", "What is 15 * 7?")
    assert not echoes("The capital of France is Paris.", "What is the capital of France?")
    assert not echoes("- CD4+ T cells\n- CD8+ T cells",
                      "Which subsets of CD3+ T cells would you gate with CD4, CD8, CD45RA?")


def test_no_eval_answer_echoes_its_prompt(report: Json) -> None:
    assert_not_echoes(report, "evals")


def test_no_protocol_answer_echoes_its_prompt(report: Json) -> None:
    assert_not_echoes(report, "protocols")


QUOTE_MARK = "<!-- Copied from a real run"
VOLATILE = [(re.compile(r" at \d{4}-\d\d-\d\dT[\d:]+Z$"), " at <time>"),
            (re.compile(r" · ran in [0-9.]+s "), " · ran in <s> ")]


def quoted_output(page: Path) -> list[list[str]]:
    """The fenced blocks of `page` that follow a "Copied from a real run" comment."""
    blocks, lines = [], page.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        if line.startswith(QUOTE_MARK):
            start = number + 2
            end = lines.index("```", start)
            blocks.append(lines[start:end])
    return blocks


def steady(line: str) -> str:
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return line


def missing_from(quoted: list[str], output: list[str]) -> list[str]:
    """The quoted lines that the output does not print, in that order."""
    printed = iter(steady(line) for line in output)
    return [line for line in quoted
            if line.strip() and steady(line) not in printed]


@pytest.mark.parametrize("page", ["README.md", "docs/examples.md"])
def test_the_quoted_output_of_the_examples_is_what_the_run_prints(
    page: str, run: tuple[Json, str],
) -> None:
    blocks = quoted_output(ROOT / page)
    assert blocks, f"{page} quotes no output"
    for block in blocks:
        assert missing_from(block, run[1].splitlines()) == []


def test_a_quote_that_the_run_does_not_print_is_caught() -> None:
    output = ["Suite  Evals", "capitals  3  2",
              "Prices: genai-prices 0.2.3 at 2026-11-24T01:54:47Z"]
    assert missing_from(["Suite  Evals", "", "Prices: genai-prices 0.2.3 at 2025-01-01T00:00:00Z"],
                        output) == []
    assert missing_from(["capitals  3  2", "Suite  Evals"], output) == ["Suite  Evals"]
    assert missing_from(["capitals  3  3"], output) == ["capitals  3  3"]


def test_cassettes_stay_small() -> None:
    sizes = {p.name: p.stat().st_size for p in (ROOT / "examples").rglob("*.cassette.yaml")}
    assert sizes and max(sizes.values()) < 300_000, sizes


def _without_pricing_date(comment: str) -> str:
    return re.sub(r"at \d{4}\\-\d{2}\\-\d{2}", "at DATE", comment)


def test_the_readme_picture_is_the_comment_of_a_pull_request_on_the_examples(
    tmp_path: Path,
) -> None:
    # The picture (docs/img/comment.png) is rendered from tools/example-pr/comment.md;
    # that file must be what the example pull request gives with today's turncheck.
    out = tmp_path / "comment.md"
    subprocess.run([sys.executable, str(ROOT / "tools/example_comment.py"), str(out)],
                   check=True, capture_output=True)
    made = out.read_text(encoding="utf-8")
    committed = (ROOT / "tools/example-pr/comment.md").read_text(encoding="utf-8")
    assert _without_pricing_date(made) == _without_pricing_date(committed)
    assert made.splitlines()[1].startswith("## ❌ 1 broke · france now fails")

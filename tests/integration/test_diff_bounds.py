"""Prompt diffs cost near-linear time and are bounded per rendering (issue 32, item 3).

`difflib` took seconds on 20,000 characters built as its worst case, for every view of
every changed turn; a forged fork report with 200 such evals kept the trusted poster
busy for hours.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.e2e.test_action_trust import fork_run_report, post, pr_repo
from tests.support.action_harness import PR
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from turncheck.render.prompt_changes import (
    COMMENT_DIFF_LINES,
    SUMMARY_DIFF_LINES,
    DiffBudget,
    text_diff,
)

__all__ = ["pr_repo"]  # the fixture


def worst_pair(lines: int = 8000) -> tuple[str, str]:
    """100 distinct short lines, each repeated just under difflib's junk threshold, in two
    orders: about 23,000 characters a side, 4–5 s for difflib."""
    base = "\n".join(f"{i % 100}" for i in range(lines))
    head = "\n".join(f"{i * 7 % 100}" for i in range(lines))
    return base, head


def test_the_worst_case_pair_diffs_in_well_under_a_second() -> None:
    base, head = worst_pair()
    started = time.monotonic()
    diff = text_diff(base, head, SUMMARY_DIFF_LINES)
    assert time.monotonic() - started < 1.0
    assert len(diff.lines) == SUMMARY_DIFF_LINES and diff.cut_lines > 0
    assert diff.note  # it says what it left out


def test_an_ordinary_edit_in_a_long_prompt_is_still_a_precise_diff() -> None:
    base = "\n".join(f"Rule {n}: be concise and polite." for n in range(600))
    head = base.replace("Rule 17: be concise", "Rule 17: be brief").replace(
        "Rule 480: be", "Rule 480: always be")
    diff = text_diff(base, head, COMMENT_DIFF_LINES)
    assert diff.lines == ["@@ -17,3 +17,3 @@", " Rule 16: be concise and polite.",
                          "-Rule 17: be concise and polite.", "+Rule 17: be brief and polite.",
                          " Rule 18: be concise and polite.",
                          "@@ -480,3 +480,3 @@", " Rule 479: be concise and polite.",
                          "-Rule 480: be concise and polite.",
                          "+Rule 480: always be concise and polite.",
                          " Rule 481: be concise and polite."]
    assert not diff.replaced and not diff.note


def test_texts_too_different_show_as_replaced_and_say_so() -> None:
    base = "\n".join(f"a{i}" for i in range(3000))
    head = "\n".join(f"b{i}" for i in range(3000))
    diff = text_diff(base, head, COMMENT_DIFF_LINES)
    assert diff.replaced and "too different to compare line by line" in diff.note
    assert diff.lines[0] == "@@ -1,3000 +1,3000 @@" and diff.lines[1] == "-a0"


def test_a_rendering_stops_diffing_when_its_budget_is_spent() -> None:
    budget = DiffBudget()
    started = time.monotonic()
    diffs = []
    for k in range(200):
        base, head = worst_pair(2000 + k)  # each pair different: nothing is reused
        diffs.append(text_diff(base, head, COMMENT_DIFF_LINES, budget))
    assert time.monotonic() - started < 5.0
    assert budget.steps_left == 0 and all(d.replaced for d in diffs[-100:])


def forged_report(report: dict[str, Any], evals: int) -> dict[str, Any]:
    """The fork's report with `evals` evals whose turn prompts are difflib's worst case."""
    forged = json.loads(json.dumps(report))
    base_prompt, head_prompt = worst_pair()
    for side, prompt in (("base", base_prompt), ("head", head_prompt)):
        suite = forged[side]["suites"][0]
        template = suite["evals"][0]
        copies = []
        for index in range(evals):
            item = json.loads(json.dumps(template))
            item.update(name=f"forged {index}", status="fail", error=None)
            for turn in item["turns"]:
                turn["prompt"] = f"{index}\n{prompt}"
            copies.append(item)
        suite["evals"] = copies
    return forged


def test_a_forged_fork_report_of_200_worst_case_diffs_is_posted_within_a_minute(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    forged = forged_report(fork_run_report(repo, tmp_path, github_fake, base, head), 200)
    assert len(json.dumps(forged)) > 9_000_000
    started = time.monotonic()
    run = post(tmp_path, github_fake, forged, head)
    elapsed = time.monotonic() - started
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    assert elapsed < 60, elapsed
    [comment] = github_fake.comments_on(PR)
    assert "Unverified report" in comment.body and "forged 0" in comment.body
    assert "@@" in run.summary  # the step summary still shows diffs

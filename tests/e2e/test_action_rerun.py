"""Issue 45 item 4 in the action: re-running a failed live check on the same commits pools
the earlier attempt's head samples (the run's `turncheck-attempt-<n>` artifact), so a
re-run adds evidence instead of drawing afresh until green."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.support.action_harness import PR, ActionRun, run_action, run_pull_request, zipped
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.scripted_server import ScriptedServer

RUN_ID = 4242  # the harness's GITHUB_RUN_ID
SUITE = "evals/geo.eval.yaml"
SAMPLES = 16
CAPITALS = {"Italy": "Rome", "Egypt": "Cairo", "Spain": "Madrid", "Peru": "Lima",
            "Japan": "Tokyo", "Kenya": "Nairobi", "Chile": "Santiago"}
REWORDED = "Name the capital city of Italy, briefly."
PASS_CHANCE = {**{f"Name the capital of {country}.": 0.7 for country in CAPITALS},
               "Name the capital of Italy.": 0.95,
               REWORDED: 0.05}
"""A true drop: the reworded prompt passes far less often; the other evals, unchanged,
show the run-to-run drift is small."""


def suite(server_url: str, reworded: bool) -> str:
    evals = "".join(
        f"  - name: {country.lower()}\n    prompt: "
        f"{REWORDED if reworded and country == 'Italy' else f'Name the capital of {country}.'}"
        f"\n    checks: [{{match: '*{city}*'}}]\n" for country, city in CAPITALS.items())
    return (f"metadata:\n  name: geo\n  model: gpt-4o-mini\n  provider: openai\n"
            f"  base_url: {server_url}\n  temperature: 0\nevals:\n{evals}")


@pytest.fixture
def model(model: ScriptedServer) -> ScriptedServer:
    """Answers each prompt right at its own chance, one seeded stream per prompt (the
    count of passes a job draws does not hang on the order of its requests)."""
    streams = {prompt: random.Random(index) for index, prompt in enumerate(PASS_CHANCE)}

    def answer(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        country = prompt.removesuffix(", briefly.").removesuffix(".").split()[-1]
        right = streams[prompt].random() < PASS_CHANCE[prompt]
        return CAPITALS[country] if right else "I am not sure."

    model.add_rule(answer, contains="capital")
    return model


def live_pr(tmp_path: Path, model: ScriptedServer, github: FakeGitHub
            ) -> tuple[GitRepo, str, str]:
    """A repository whose main run (the base commit's, live) is the stored baseline, and
    a pull request rewording the prompt."""
    repo = GitRepo(tmp_path / "workspace")
    repo.write(SUITE, suite(model.base_url, reworded=False))
    base = repo.commit("base")
    main = run_action(repo, tmp_path / "main", github.base_url, "push", {
        "repository": {"full_name": "octo-org/widgets", "default_branch": "main"}},
        {"mode": "live", "repeat": str(SAMPLES)})
    assert main.returncode == 0, main.stdout + main.stderr
    github.artifacts[500] = [(f"turncheck-report-{base}",
                              zipped(repo.path / "turncheck-report.json"))]
    github.artifact_runs[500] = {"head_sha": base, "head_branch": "main"}
    repo.branch("feature", checkout=True)
    repo.write(SUITE, suite(model.base_url, reworded=True))
    head = repo.commit("reword the prompt")
    github.artifact_runs[RUN_ID] = {"head_sha": head, "head_branch": "feature",
                                    "event": "pull_request"}
    return repo, base, head


def attempt(repo: GitRepo, tmp_path: Path, github: FakeGitHub, base: str, head: str,
            number: int, **inputs: str) -> ActionRun:
    return run_pull_request(repo, tmp_path / f"attempt{number}", github, base, head,
                            {"mode": "live", "repeat": str(SAMPLES),
                             "fail-on": "invalid,error,regression,broken", **inputs},
                            extra_env={"GITHUB_RUN_ATTEMPT": str(number)})


def head_samples(run: ActionRun, side: str = "head") -> int:
    assert run.report is not None
    evals = run.report[side]["suites"][0]["evals"]  # type: ignore[index]
    [italy] = [e for e in evals if e["name"] == "italy"]
    return len(italy["samples"])


def upload_attempt(github: FakeGitHub, repo: GitRepo, number: int,
                   **changes: object) -> None:
    """What the documented workflow's upload step leaves on the run after attempt
    `number` (with `changes` made to the report, as a forged or stale one would be)."""
    path = repo.path / "turncheck-report.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    uploaded = path.with_name(f"attempt-{number}.json")
    uploaded.write_text(json.dumps({**report, **changes}), encoding="utf-8")
    github.artifacts.setdefault(RUN_ID, []).append((f"turncheck-attempt-{number}",
                                                     zipped(uploaded)))


def test_a_re_run_pools_the_earlier_attempts_samples_and_still_fails_on_a_real_drop(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = live_pr(tmp_path, model, github_fake)
    first = attempt(repo, tmp_path, github_fake, base, head, 1)
    assert first.returncode == 1, first.stdout + first.stderr
    assert head_samples(first) == SAMPLES
    assert first.report is not None and first.report["run_attempt"] == 1
    upload_attempt(github_fake, repo, 1)

    second = attempt(repo, tmp_path, github_fake, base, head, 2)
    assert second.returncode == 1, second.stdout + second.stderr
    assert "re-run: pooling the head samples of 1 earlier attempt" in second.stdout
    assert head_samples(second) == 2 * SAMPLES
    assert second.report is not None and second.report["earlier_attempts"] == 1
    comment = github_fake.comments_on(PR)[-1].body
    assert "pooled with 1 earlier attempt's samples" in comment
    upload_attempt(github_fake, repo, 2)

    third = attempt(repo, tmp_path, github_fake, base, head, 3)
    assert third.returncode == 1, third.stdout + third.stderr
    assert head_samples(third) == 3 * SAMPLES  # attempt 2's report already held attempt 1's
    assert "pooled with 2 earlier attempts' samples" in github_fake.comments_on(PR)[-1].body


def test_an_earlier_report_of_other_commits_is_ignored_with_a_notice(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = live_pr(tmp_path, model, github_fake)
    missing = attempt(repo, tmp_path, github_fake, base, head, 2)
    assert "no earlier attempt's report (turncheck-attempt-<n> artifact" in missing.stdout
    upload_attempt(github_fake, repo, 1, head_sha="f" * 40)

    second = attempt(repo, tmp_path, github_fake, base, head, 2)
    notices = [line for line in second.stdout.splitlines() if "turncheck-attempt-1" in line]
    assert notices == ["::notice title=turncheck::turncheck-attempt-1 ignored: it is of other "
                       "commits; this re-run samples the head afresh"]
    assert head_samples(second) == SAMPLES
    assert second.report is not None and second.report["earlier_attempts"] == 0
    assert "earlier attempt" not in github_fake.comments_on(PR)[-1].body


def test_a_base_re_run_beside_the_head_is_pooled_with_it(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    """Both sides sampled together in every attempt keep each attempt's samples on both
    sides, so drift between attempts hits them alike."""
    repo, base, head = live_pr(tmp_path, model, github_fake)
    first = attempt(repo, tmp_path, github_fake, base, head, 1, baseline="rerun")
    assert (head_samples(first), head_samples(first, "base")) == (SAMPLES, SAMPLES)
    upload_attempt(github_fake, repo, 1)

    second = attempt(repo, tmp_path, github_fake, base, head, 2, baseline="rerun")
    assert "re-run: pooling the head and base samples of 1 earlier attempt" in second.stdout
    assert (head_samples(second), head_samples(second, "base")) == (2 * SAMPLES, 2 * SAMPLES)
    assert second.returncode == 1, second.stdout + second.stderr

"""One `turncheck action` job: its event, inputs and environment, and what every event
flow does with them — run two commits through the two-commit runner, write the report
bundle, read shard bundles back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from turncheck import git
from turncheck.choices import Mode
from turncheck.compare.verdict import Judgement
from turncheck.engine.interruption import STOP
from turncheck.formats.budget import BudgetLimits
from turncheck.github.app_exposure import apps_refusal
from turncheck.github.baseline import Trust, load_artifact_baseline
from turncheck.github.client import GitHubApi, PyGithubApi
from turncheck.github.context import GitHubContext
from turncheck.github.inputs import ActionInputs, ActionMode
from turncheck.github.trust import TRUSTED_RUN_EVENT
from turncheck.github.workflow import escape_data, log
from turncheck.report.bundle import BaselineInfo, ReportBundle
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.comparison import CostThresholds
from turncheck.report.files import ReportError, read_report, write_report
from turncheck.report.run import Report
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.checkout import Checkout
from turncheck.sides.options import RunOptions
from turncheck.sides.two_commit_runner import Commits, Event, SideLoaded, TwoCommitRun
from turncheck.text.counts import counted

RUNNER_ENV_PREFIXES = ("INPUT_", "GITHUB_", "ACTIONS_", "RUNNER_")
RUN_MODE: dict[ActionMode, Mode] = {"replay": "replay", "record": "record", "live": "live",
                                    "estimate": "replay"}
"""The engine's mode for each `mode` input (`estimate` runs nothing itself)."""


class ActionError(Exception):
    """Stops the action with a clear message (exit code 1)."""


@dataclass
class Job:
    context: GitHubContext
    inputs: ActionInputs
    env: Mapping[str, str]

    @property
    def root(self) -> Path:
        """The repository whose suites run: the PR checkout in a trusted run, else the
        workspace. Reports and downloads stay in the workspace."""
        if self.inputs.pr_checkout is not None:
            return self.context.workspace / self.inputs.pr_checkout
        return self.context.workspace

    @property
    def workdir(self) -> Path:
        return self.root / self.inputs.working_directory

    @property
    def checkout(self) -> Checkout:
        return Checkout(self.root, self.inputs.working_directory, self.inputs.globs,
                        self.inputs.watch, self.inputs.max_depth)

    @property
    def report_path(self) -> Path:
        return self.context.workspace / self.inputs.report_path

    def api(self) -> GitHubApi:
        if not self.inputs.github_token:
            raise ActionError("no github-token: pass `github-token: ${{ github.token }}`")
        # Pauses between requests keep clear of GitHub's secondary rate limits.
        interval = float(self.env.get("TURNCHECK_GITHUB_REQUEST_INTERVAL", "0.25"))
        return PyGithubApi(self.inputs.github_token, self.context.repository,
                           self.context.api_url, seconds_between_requests=interval,
                           seconds_between_writes=interval * 4)

    def options(self) -> RunOptions:
        """What the inputs ask of a run."""
        inputs = self.inputs
        return RunOptions(mode=RUN_MODE[inputs.mode], concurrency=inputs.concurrency,
                          env=self.suite_env(), repeat=inputs.repeat,
                          apps_refused=self.apps_refused(), isolate_apps=True,
                          budget=BudgetLimits(max_cost_usd=inputs.max_cost_usd,
                                              max_live_tokens=inputs.max_live_tokens))

    def suite_env(self) -> dict[str, str]:
        """What suites may read. A trusted run evaluates a fork's files with a write
        token at hand: none of the runner's own variables reach them."""
        if self.context.event_name != TRUSTED_RUN_EVENT:
            return dict(self.env)
        return {name: value for name, value in self.env.items()
                if not name.upper().startswith(RUNNER_ENV_PREFIXES)}

    def apps_refused(self) -> str | None:
        """Why the pull request's app may not start in this job (`app_exposure.py`)."""
        roots = {self.root, self.context.workspace}
        return apps_refusal(self.context, sorted(roots), self.env, self.inputs.github_token)

    def calibration_thresholds(self) -> CalibrationThresholds:
        return CalibrationThresholds(min_agreement=self.inputs.min_agreement,
                                     max_agreement_drop=self.inputs.max_agreement_drop,
                                     min_kappa=self.inputs.min_kappa)

    def thresholds(self) -> CostThresholds:
        return CostThresholds(percent=self.inputs.cost_threshold_percent,
                              usd=self.inputs.cost_threshold_usd,
                              latency_percent=self.inputs.latency_threshold_percent)

    def judgement(self) -> Judgement:
        """What the job's comparison is judged by (`fail-on` and its thresholds)."""
        return Judgement(self.inputs.fail_on, self.thresholds(),
                         self.calibration_thresholds())

    def runner(self, commits: Commits, changes: SuiteChanges,
               options: RunOptions | None = None) -> TwoCommitRun:
        """The two-commit runner over this job's checkout (and shard), logging as it goes."""
        return TwoCommitRun(self.checkout, commits, changes, options or self.options(),
                            shard=self.inputs.shard, listener=tell)


def tell(event: Event) -> None:
    """The two-commit runner's progress, in the job's log."""
    if isinstance(event, SideLoaded) and event.side == "head":
        log(f"head: {counted(event.suites, 'suite')}, "
            f"{counted(event.samples, 'sample file')}")
    elif isinstance(event, SideLoaded):
        log(f"base {(event.commit or '')[:12]}: {counted(event.suites, 'suite')}, "
            f"{counted(event.samples, 'sample file')}, {event.mode} mode, in a work tree "
            "of the base commit")
    else:
        log(f"::warning title=turncheck::"
            f"{escape_data(f'cannot check out the base commit: {event.problem}')}")


def with_token_counts(bundle: ReportBundle) -> ReportBundle:
    spent = bundle.head.live_tokens + (bundle.base.live_tokens if bundle.base else 0)
    saved = bundle.baseline.saved_tokens if bundle.baseline else 0
    return bundle.model_copy(update={"live_tokens": spent, "saved_tokens": saved})


def trusted_baseline(job: Job, base_sha: str,
                     names: set[str]) -> tuple[Report | None, BaselineInfo]:
    """The base report of a trusted default-branch run's artifact, and what was found."""
    try:
        base_time = git.commit_time(job.root, base_sha)
    except git.GitError:
        base_time = None
    trust = Trust(job.context.repository, job.context.default_branch)
    return load_artifact_baseline(job.api(), base_sha, base_time, trust, names)


def read_bundle(path: Path, workspace: Path) -> ReportBundle:
    try:
        return read_report(path, root=workspace, expect=ReportBundle)
    except ReportError as exc:
        raise ActionError(str(exc)) from None


def write_bundle(job: Job, bundle: ReportBundle) -> None:
    """The report file; after a signal, nothing more is done (compared, rendered, posted)."""
    with STOP.keeping():
        try:
            write_report(job.report_path, bundle, root=job.context.workspace, indent=1)
        except ReportError as exc:
            log(f"::error title=turncheck::{escape_data(str(exc))}")
        else:
            log(f"report written to {job.inputs.report_path}")
    STOP.checkpoint()

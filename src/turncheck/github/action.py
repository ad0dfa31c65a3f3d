"""`turncheck action`: the GitHub Action entrypoint.

- `pull_request`: run the changed suites at head and at base, compare, post one
  comment and a check run, set outputs, exit by `fail-on`.
- `merge_group`: the same comparison for a merge queue's group (its base and head
  commits), published as the same check run on the group's head; no comment.
- `workflow_run`: the trusted second half of the fork-safe flow: download the
  report artifact of the PR run, validate it, bind it to the run's PR, post it as an
  unverified report (never `success` on the required check; see `trust.py`).
- `pull_request_target`: the maintainer-approved trusted run: reads the PR's files
  (checked out at `pr-checkout`) as data, replays cassettes, posts the real verdict.
- `push` (and `workflow_dispatch`, `schedule`): run every suite and write the
  report (a baseline artifact for later comparisons).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import fail_reasons, incomplete
from turncheck.config import ConfigError
from turncheck.diagnostics import Diagnostic
from turncheck.engine.estimate import estimate
from turncheck.engine.loop import run_coroutine
from turncheck.engine.merge import MergeError, merge_reports
from turncheck.engine.pricing import Pricer
from turncheck.engine.runner import RunSettings, Side, run_both_sides, run_suites
from turncheck.engine.sharding import select_shard
from turncheck.formats.budget import BudgetLimits
from turncheck.formats.discovery import FileKind, discover
from turncheck.formats.files import (
    refusal_reason,
    write_text_confined,
)
from turncheck.formats.samples import SampleFile
from turncheck.formats.suite_loader import SuiteFile
from turncheck.formats.validation import validate_files
from turncheck.github import git
from turncheck.github.baseline import Trust, load_artifact_baseline, resolve_mode
from turncheck.github.bundle import BundleError, BundleTooLarge, bundle_from_zip
from turncheck.github.changes import SuiteChanges
from turncheck.github.checkout import Checkout
from turncheck.github.client import (
    ArtifactTooLarge,
    ChangedFile,
    GitHubApi,
    GitHubApiError,
    PyGithubApi,
)
from turncheck.github.context import (
    ContextError,
    GitHubContext,
    MergeGroup,
    PullRequest,
    WorkflowRun,
    read_context,
)
from turncheck.github.inputs import ActionInputs, InputError, read_inputs
from turncheck.github.project_config import with_project_config
from turncheck.github.publish import (
    Published,
    check_title,
    collect_annotations,
    explain_read_only,
    log,
    only_linkable,
    outputs,
    path_prefix,
    post_check,
    post_comment,
    print_annotations,
    write_runner_files,
)
from turncheck.github.trust import (
    TRUSTED_RUN_EVENT,
    UNVERIFIED_BASELINE_NOTE,
    UNVERIFIED_CHECK_NAME,
    VERIFIED,
    Provenance,
    TrustError,
    approval_problem,
    bind_to_run,
    hold_required_check,
    pull_request_of_run,
    read_tree,
    too_large_comment,
    unverified_banner,
    vet_bundle,
)
from turncheck.github.workflow import add_mask, escape_data
from turncheck.providers.factory import API_KEY_ENV_VARS
from turncheck.render.comment import MARKER, CommentContext, render_comment, render_summary
from turncheck.render.estimate_view import estimate_markdown
from turncheck.render.html_report import render_report
from turncheck.report.bundle import MAX_BUNDLE_BYTES, BaselineInfo, ReportBundle
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.comparison import Comparison, CostThresholds
from turncheck.report.files import ReportError, read_report
from turncheck.report.run import Report, ShardInfo

PULL_REQUEST_EVENTS = ("pull_request", TRUSTED_RUN_EVENT)
MERGE_GROUP_EVENT = "merge_group"
PULL_REQUEST_TARGET_REFUSAL = (
    "pull_request_target is not supported for the pull-request check: its workspace holds "
    "the base branch, so turncheck would evaluate base files as the pull request's head. "
    "Use `on: pull_request` (fork pull requests then post through `on: workflow_run`; see "
    "docs/action.md, 'Fork pull requests'). Only the maintainer-approved trusted run uses "
    "pull_request_target: check the pull request out into its own directory "
    "(actions/checkout with `path:` and `persist-credentials: false`) and pass it as "
    "`pr-checkout` (docs/trust-model.md)"
)
BRANCH_EVENTS = ("push", "workflow_dispatch", "schedule")
ARTIFACT_NAME = "turncheck-report"
MAX_ARTIFACT_BYTES = 25 * 1024 * 1024
RUNNER_ENV_PREFIXES = ("INPUT_", "GITHUB_", "ACTIONS_", "RUNNER_")


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

    def settings(self, mode: str, price_timestamp: str | None, commit: str | None) -> RunSettings:
        return RunSettings(mode=mode,  # type: ignore[arg-type]
                           concurrency=self.inputs.concurrency, env=self.suite_env(),
                           price_timestamp=price_timestamp, commit=commit,
                           budget=BudgetLimits(max_cost_usd=self.inputs.max_cost_usd,
                                               max_live_tokens=self.inputs.max_live_tokens),
                           repeat=self.inputs.repeat)

    def suite_env(self) -> dict[str, str]:
        """What suites may read. A trusted run evaluates a fork's files with a write
        token at hand: none of the runner's own variables reach them."""
        if self.context.event_name != TRUSTED_RUN_EVENT:
            return dict(self.env)
        return {name: value for name, value in self.env.items()
                if not name.upper().startswith(RUNNER_ENV_PREFIXES)}

    def calibration_thresholds(self) -> CalibrationThresholds:
        return CalibrationThresholds(min_agreement=self.inputs.min_agreement,
                                     max_agreement_drop=self.inputs.max_agreement_drop,
                                     min_kappa=self.inputs.min_kappa)

    def thresholds(self) -> CostThresholds:
        return CostThresholds(percent=self.inputs.cost_threshold_percent,
                              usd=self.inputs.cost_threshold_usd)


# -- running suites ---------------------------------------------------------------


def commit_timestamp(job: Job, commit: str) -> str | None:
    """Prices are taken at the head commit's time: every shard and re-run prices alike."""
    try:
        when = git.commit_time(job.root, commit)
    except git.GitError:
        return None
    return None if when is None else when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def shard_side(job: Job, side: Side) -> tuple[Side, ShardInfo | None]:
    """This job's shard of `side`'s suites; its sample files are graded in shard 1 only."""
    if job.inputs.shard is None:
        return side, None
    files, shard = select_shard(side.files, job.inputs.shard)
    samples = side.samples if job.inputs.shard.index == 1 else ()
    return replace(side, files=files, samples=samples), shard


def run_files(job: Job, files: list[SuiteFile], settings: RunSettings,
              diagnostics: list[Diagnostic] | None = None,
              samples: Sequence[SampleFile] = ()) -> Report:
    """Run `files` (or this job's shard of them) and grade `samples` (in shard 1 only)."""
    side, shard = shard_side(job, Side(files, settings, diagnostics, samples))
    report = run_coroutine(run_suites(side.files, side.settings, side.diagnostics,
                                      samples=side.samples))
    return report.model_copy(update={"shard": shard})


def head_side(job: Job, suites: list[str], samples: list[str], commit: str) -> Side:
    checkout = job.checkout
    files = checkout.found(suites, FileKind.SUITE) + checkout.found(samples, FileKind.SAMPLES)
    validation = validate_files(files, job.inputs.max_depth, root=job.workdir)
    log(f"head: {len(validation.suites)} suite(s), {len(validation.samples)} sample file(s)")
    settings = job.settings(job.inputs.mode, commit_timestamp(job, commit), commit)
    return Side(validation.suites, settings, validation.diagnostics, validation.samples)


def run_head(job: Job, suites: list[str], samples: list[str], commit: str) -> Report:
    side = head_side(job, suites, samples, commit)
    return run_files(job, side.files, side.settings, side.diagnostics, side.samples)


def base_side(job: Job, base_sha: str, suites: Sequence[str], price_timestamp: str | None,
              samples: Sequence[str], root: Path) -> Side | None:
    """The base side: `suites` and `samples` (paths as named at base) exported from the
    base commit under `root` and loaded; None when the base commit cannot be read."""
    found = job.checkout.base_files(base_sha, suites, samples, root, log)
    if found is None:
        return None
    loaded, graded = found
    mode = "live" if job.inputs.mode == "live" else "replay"
    log(f"base {base_sha[:12]}: {len(loaded)} suite(s), {len(graded)} sample file(s), "
        f"{mode} mode")
    return Side(loaded, job.settings(mode, price_timestamp, base_sha), samples=graded)


def run_base(job: Job, base_sha: str, suites: list[str], price_timestamp: str | None,
             samples: Sequence[str] = ()) -> Report | None:
    """Run `suites` and grade `samples` (paths as named at base) at the base commit."""
    if not suites and not samples:
        return None
    with tempfile.TemporaryDirectory(prefix="turncheck-base-") as tmp:
        side = base_side(job, base_sha, suites, price_timestamp, samples, Path(tmp))
        if side is None:
            return None
        return run_files(job, side.files, side.settings, samples=side.samples)


def run_sides(job: Job, head: Side, base_sha: str, changes: SuiteChanges
              ) -> tuple[Report, Report | None]:
    """Head and base (re-run at `base_sha`) at the same time, sampling together
    (`engine.runner.run_both_sides`): a PR takes about one side's time, not two."""
    # Both sides priced at one instant: the head commit's time, else now.
    instant = head.settings.price_timestamp or datetime.now(UTC).isoformat(
        timespec="seconds").replace("+00:00", "Z")
    head = replace(head, settings=replace(head.settings, price_timestamp=instant))
    with tempfile.TemporaryDirectory(prefix="turncheck-base-") as tmp:
        base = base_side(job, base_sha, changes.base_suites, instant, changes.base_samples,
                         Path(tmp))
        head, head_shard = shard_side(job, head)
        base, base_shard = (None, None) if base is None else shard_side(job, base)
        head_report, base_report = run_coroutine(run_both_sides(head, base, changes.renames))
    return head_report.model_copy(update={"shard": head_shard}), \
        None if base_report is None else base_report.model_copy(update={"shard": base_shard})


# -- pull requests ---------------------------------------------------------------


def changed_files_of(job: Job, pr: PullRequest, base: str) -> SuiteChanges:
    workspace = job.root
    files = git.changed_files(workspace, base, pr.head_sha)
    if files is None and git.fetch(workspace, "origin", [base, pr.head_sha]):
        files = git.changed_files(workspace, base, pr.head_sha)
    if files is None:
        log("::notice title=turncheck::the base commit is not in the checkout's history; using "
            "the pull-request files API instead. Set `fetch-depth: 0` on actions/checkout so "
            "turncheck can read the base versions of your suites.")
        files = job.api().pr_files(pr.number)
    return changes_among(job, files)


def changes_among(job: Job, files: list[ChangedFile]) -> SuiteChanges:
    """The suites and sample files among changed `files` (repo-relative paths)."""
    return job.checkout.changes_among(files)


def pull_request_flow(job: Job) -> int:
    pr = job.context.pull_request()
    if pr is None:
        raise ActionError("the event payload has no pull_request")
    provenance = VERIFIED
    if job.context.event_name == TRUSTED_RUN_EVENT:
        problem = trusted_run_problem(job, pr)
        if problem is not None:
            log(f"::notice title=turncheck::{escape_data(problem)}")
            return 0
    elif pr.from_fork:  # a fork's own run: its figures are its own word
        provenance = Provenance(False, f"the fork {pr.head_repository}")
    if job.inputs.merge_reports:
        return merged_flow(job, provenance)
    if job.context.event_name != TRUSTED_RUN_EVENT:  # a trusted run reads pr-checkout
        refuse_base_checkout(job, pr.base_sha, pr.head_sha)
    base = job.inputs.base_ref and git.resolve(job.root, job.inputs.base_ref)
    base_sha = base or pr.base_sha
    changes = changed_files_of(job, pr, base_sha)
    if job.inputs.mode == "estimate":
        return estimate_flow(job, pr.number, changes.head_suites, pr.head_sha, base_sha,
                             changes.samples)
    log(f"PR #{pr.number}: {len(changes.head_suites)} changed suite(s) at head, "
        f"{len(changes.base_suites)} at base, {len(changes.samples)} sample file(s)")
    return compare_flow(job, base_sha, pr.head_sha, changes, pr.number, provenance)


def refuse_base_checkout(job: Job, base_sha: str, head_sha: str) -> None:
    """Head results must come from head files: a workspace at the base commit is refused."""
    if head_sha == base_sha:
        return
    try:
        at = git.current_sha(job.context.workspace)
    except git.GitError:
        return
    if at == base_sha:
        raise ActionError(f"the workspace is at the base commit {at[:12]}, not at the head "
                          f"{head_sha[:12]}: check out the triggering commit (actions/checkout "
                          "does by default) so base files are not evaluated as head")


def compare_flow(job: Job, base_sha: str, head_sha: str, changes: SuiteChanges,
                 number: int | None, provenance: Provenance = VERIFIED) -> int:
    """Run `changes` at head and base, write the report, publish (unless a shard)."""
    head, base_report, baseline = head_and_base(job, base_sha, head_sha, changes)
    bundle = with_token_counts(ReportBundle(
        repository=job.context.repository, event=job.context.event_name, pull_number=number,
        base_sha=base_sha, head_sha=head_sha,
        working_directory=job.inputs.working_directory.as_posix(), renames=changes.renames,
        removed=changes.removed, reasons=changes.reasons, base_suites=changes.base_suites,
        head=head, base=base_report,
        baseline=baseline,
    ))
    write_bundle(job, bundle)
    if job.inputs.shard is not None:
        shard = job.inputs.shard
        log(f"shard {shard.index}/{shard.count} done; the report job merges the shards and posts")
        return 0
    return publish(job, bundle, changes.empty, provenance)


def trusted_run_problem(job: Job, pr: PullRequest) -> str | None:
    """Why this `pull_request_target` run may not evaluate the PR, or None."""
    problem = approval_problem(pr, job.inputs.trusted_label)
    if problem is not None:
        return problem
    if job.inputs.pr_checkout is None:
        raise ActionError("under pull_request_target, check the pull request out into its "
                          "own directory (actions/checkout with `path:` and "
                          "`persist-credentials: false`) and pass it as `pr-checkout`")
    if job.inputs.mode != "replay":
        raise ActionError("under pull_request_target turncheck only replays cassettes: "
                          f"mode {job.inputs.mode!r} would send the PR's prompts with secrets")
    at = git.resolve(job.root, "HEAD")
    if at != pr.head_sha:
        raise ActionError(f"pr-checkout is at {(at or 'no commit')[:12]}, not the pull "
                          f"request's head {pr.head_sha[:12]}")
    return None


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


def head_and_base(job: Job, base_sha: str, head_sha: str, changes: SuiteChanges
                  ) -> tuple[Report, Report | None, BaselineInfo | None]:
    """The head run, and the base: a main-branch artifact when asked and found (the head
    then runs alone), else re-run at the same time as the head."""
    head = head_side(job, changes.head_suites, changes.samples, head_sha)
    if not changes.base_suites and not changes.base_samples:
        return run_files(job, head.files, head.settings, head.diagnostics, head.samples), \
            None, None
    if resolve_mode(job.inputs.baseline, job.inputs.mode) == "artifact":
        if job.inputs.shard is not None:  # the report job fetches the artifact once
            return run_files(job, head.files, head.settings, head.diagnostics,
                             head.samples), None, None
        found, info = trusted_baseline(job, base_sha, {*changes.base_suites,
                                                       *changes.base_samples})
        log(info.describe())
        if found is not None:
            return run_files(job, head.files, head.settings, head.diagnostics,
                             head.samples), found, info
        log("re-running the base commit instead")
    else:
        info = BaselineInfo(source="rerun")
    head_report, base_report = run_sides(job, head, base_sha, changes)
    return head_report, base_report, None if base_report is None else info


def baseline_for(job: Job, base_sha: str, suites: list[str], head: Report,
                 samples: Sequence[str] = ()) -> tuple[Report | None, BaselineInfo | None]:
    """The base side: reused from a main-branch artifact when asked, else re-run."""
    if not suites and not samples:
        return None, None
    if resolve_mode(job.inputs.baseline, job.inputs.mode) == "artifact":
        if job.inputs.shard is not None:
            return None, None  # the report job fetches the artifact once for all shards
        found, info = trusted_baseline(job, base_sha, {*suites, *samples})
        log(info.describe())
        if found is not None:
            return found, info
        log("re-running the base commit instead")
    else:
        info = BaselineInfo(source="rerun")
    report = run_base(job, base_sha, suites, head.price_source.timestamp, samples)
    return report, None if report is None else info


def merged_flow(job: Job, provenance: Provenance = VERIFIED) -> int:
    """The report job of a sharded run: merge the shards' reports, then post once."""
    pattern = job.inputs.merge_reports or ""
    paths = sorted(p for p in job.context.workspace.glob(pattern) if p.is_file())
    if not paths:
        raise ActionError(f"merge-reports: no report matches {pattern!r}")
    bundles = [(path.name, _read_bundle(path, job.context.workspace)) for path in paths]
    first_name, first = bundles[0]
    for name, bundle in bundles[1:]:
        if (bundle.pull_number, bundle.head_sha, bundle.base_sha) != (
                first.pull_number, first.head_sha, first.base_sha):
            raise ActionError(f"{name} is from another pull request or commit than {first_name}")
    try:
        head = merge_reports([(name, b.head) for name, b in bundles])
        bases = [(name, b.base) for name, b in bundles if b.base is not None]
        base = merge_reports(bases) if bases else None
    except MergeError as exc:
        raise ActionError(f"cannot merge the shard reports: {exc}") from None
    baseline = BaselineInfo(source="rerun") if base is not None else None
    if base is None and first.base_suites and first.base_sha:
        base, baseline = baseline_for(job, first.base_sha, first.base_suites, head)
    merged = with_token_counts(first.model_copy(update={"head": head, "base": base,
                                                        "baseline": baseline}))
    write_bundle(job, merged)
    return publish(job, merged, nothing_changed=not head.suites and not first.base_suites
                   and not head.calibrations, provenance=provenance)


def _read_bundle(path: Path, workspace: Path) -> ReportBundle:
    try:
        return read_report(path, root=workspace, expect=ReportBundle)
    except ReportError as exc:
        raise ActionError(str(exc)) from None


def write_bundle(job: Job, bundle: ReportBundle) -> None:
    try:
        write_text_confined(job.report_path, bundle.model_dump_json(indent=1) + "\n",
                            root=job.context.workspace)
    except OSError as exc:
        log(f"::error title=turncheck::{escape_data(refusal_reason(exc))}")
        return
    log(f"report written to {job.inputs.report_path}")


def compare_bundle(job: Job, bundle: ReportBundle, provenance: Provenance = VERIFIED
                   ) -> Comparison:
    """The bundle's comparison; against a pooled base when our own job pooled it (a
    fork's claim of a pool is not believed: its base is compared as one run)."""
    pool = bundle.baseline.pool if bundle.baseline is not None and provenance.verified \
        else None
    return compare_reports(bundle.base, bundle.head, renames=bundle.renames,
                           removed=bundle.removed, thresholds=job.thresholds(),
                           base_pool=pool)


def token_notes(bundle: ReportBundle, provenance: Provenance = VERIFIED) -> list[str]:
    notes = [f"live tokens spent: {bundle.live_tokens:,}"]
    if not provenance.verified:  # where a fork's base came from is only its claim
        return [*notes, UNVERIFIED_BASELINE_NOTE]
    if bundle.baseline is not None and (bundle.baseline.source == "artifact"
                                        or bundle.baseline.rejected):
        notes.append(bundle.baseline.describe())
    return notes


HTML_ARTIFACT = "turncheck-html-report"
"""The artifact name our workflows (and `turncheck init`'s) upload the HTML report as."""

CHECK_SUMMARY_LIMIT = 16_000
"""The check run's summary is the brief form; its text carries the full detail."""


def write_html_report(job: Job, bundle: ReportBundle, comparison: Comparison) -> str | None:
    """The browsable report beside the JSON report (`report-path` with `.html`), for the
    workflow to upload as the `HTML_ARTIFACT` artifact; the artifact's name, if written."""
    path = job.report_path.with_suffix(".html")
    html = render_report(head=bundle.head, base=bundle.base, comparison=comparison)
    try:
        write_text_confined(path, html, root=job.context.workspace)
    except OSError as exc:
        log(f"::warning title=turncheck::HTML report not written: "
            f"{escape_data(refusal_reason(exc))}")
        return None
    log(f"HTML report written to {job.inputs.report_path.with_suffix('.html')}")
    return HTML_ARTIFACT


def comment_context(job: Job, bundle: ReportBundle, reasons: list[str],
                    banner: str | None = None,
                    provenance: Provenance = VERIFIED,
                    html: str | None = None) -> CommentContext:
    workdir = path_prefix(bundle.working_directory)
    blob = (f"{job.context.server_url}/{bundle.repository}/blob/{bundle.head_sha}/"
            f"{quote(workdir, safe='/')}")
    return CommentContext(fail_reasons=reasons, head=bundle.head, base=bundle.base,
                          run_url=job.context.run_url, notes=token_notes(bundle, provenance),
                          reasons=bundle.reasons, blob_url=blob, banner=banner,
                          linkable=provenance.linkable, html_artifact=html)


def publish(job: Job, bundle: ReportBundle, nothing_changed: bool,
            provenance: Provenance = VERIFIED) -> int:
    comparison = compare_bundle(job, bundle, provenance)
    reasons = fail_reasons(comparison, job.inputs.fail_on,
                           calibration=job.calibration_thresholds())
    banner = None if provenance.verified else unverified_banner(provenance.source,
                                                                job.inputs.trusted_label)
    # An unverified (fork) report is posted from its JSON only: no page of it is vouched for.
    html = write_html_report(job, bundle, comparison) if provenance.verified else None
    context = comment_context(job, bundle, reasons, banner, provenance, html)
    items = only_linkable(collect_annotations(comparison, bundle.working_directory,
                                              bundle.head),
                          bundle.working_directory, provenance.linkable)
    print_annotations(items)
    published = Published()
    summary = render_summary(comparison, context)
    if bundle.pull_number is not None or bundle.event == "merge_group":
        api = job.api()
        if bundle.pull_number is not None:
            body = render_comment(comparison, context)
            # With nothing changed any more, only an earlier comment is updated (its old
            # verdict must go); no new comment is created.
            post_comment(api, bundle.pull_number, body, context.marker, job.inputs.comment,
                         published, create=not nothing_changed)
        title = check_title(comparison, reasons)  # the heading names a budget stop
        brief = render_comment(comparison, context, limit=CHECK_SUMMARY_LIMIT)
        if provenance.verified:
            post_check(api, bundle.head_sha, title, brief, bool(reasons), items,
                       job.context.run_url, published, text=summary,
                       incomplete=incomplete(comparison))
        else:
            post_check(api, bundle.head_sha, f"unverified: {title}", brief, bool(reasons),
                       items, job.context.run_url, published, text=summary,
                       name=UNVERIFIED_CHECK_NAME, verified=False)
            if not published.permission_denied:  # else a fork's read-only token
                hold_required_check(api, bundle.head_sha, job.inputs.trusted_label,
                                    job.context.run_url)
    explain_read_only(published, job.inputs.report_path)
    write_runner_files(job.context.output_path, job.context.summary_path,
                       outputs(comparison, job.inputs.report_path, published.comment_url),
                       summary)
    for reason in reasons:
        log(f"::error title=turncheck::{escape_data(reason)}")
    return 1 if reasons else 0


# -- mode: estimate --------------------------------------------------------------


def estimate_flow(job: Job, number: int, suites: list[str], head_sha: str, base_sha: str,
                  samples: Sequence[str] = ()) -> int:
    """Run nothing: post what a live run of the changed suites would cost (docs/budgets.md).

    Expected figures come from the main-branch baseline artifact when there is one."""
    files = job.checkout.found(suites, FileKind.SUITE) + job.checkout.found(
        list(samples), FileKind.SAMPLES)
    validation = validate_files(files, job.inputs.max_depth, root=job.workdir)
    history = None
    history, info = trusted_baseline(job, base_sha, {*suites, *samples})
    if history is None:
        log(f"{info.describe()}; the expected figures are guessed")
    pricer = Pricer.at(commit_timestamp(job, head_sha))
    result = estimate(validation.suites, pricer, history,
                      history_name=None if history is None else "the baseline artifact",
                      sample_files=validation.samples)
    body = estimate_markdown(result, MARKER)
    published = Published()
    post_comment(job.api(), number, body, MARKER, job.inputs.comment, published)
    explain_read_only(published, job.inputs.report_path)
    write_runner_files(job.context.output_path, job.context.summary_path, {}, body)
    return 0


# -- merge queues ----------------------------------------------------------------


def merge_group_flow(job: Job) -> int:
    """The suites a queued group changes, run at its head and its base; a check, no comment."""
    group = job.context.merge_group()
    if group is None:
        raise ActionError("the event payload has no merge_group")
    if job.inputs.merge_reports:
        return merged_flow(job)
    base_sha = merge_group_base(job, group)
    refuse_base_checkout(job, base_sha, group.head_sha)
    changes = merge_group_changes(job, base_sha, group.head_sha)
    log(f"merge group {group.head_sha[:12]} onto {group.base_branch or base_sha[:12]}: "
        f"{len(changes.head_suites)} changed suite(s) at head, {len(changes.base_suites)} at "
        f"base, {len(changes.samples)} sample file(s)")
    return compare_flow(job, base_sha, group.head_sha, changes, None)


def merge_group_base(job: Job, group: MergeGroup) -> str:
    workspace = job.context.workspace
    if job.inputs.base_ref:
        chosen = git.resolve(workspace, job.inputs.base_ref)
        if chosen is None:
            raise ActionError(f"base-ref {job.inputs.base_ref!r} names no commit here")
        return chosen
    if group.base_sha:
        return group.base_sha
    found = None
    if group.base_branch:
        found = git.resolve(workspace, f"origin/{group.base_branch}")
        if found is None and git.fetch(workspace, "origin", [group.base_ref]):
            found = git.resolve(workspace, "FETCH_HEAD")
    if found is None:
        raise ActionError("the merge_group payload has no base_sha and its base_ref "
                          f"{group.base_ref!r} cannot be resolved in the checkout")
    return found


def merge_group_changes(job: Job, base_sha: str, head_sha: str) -> SuiteChanges:
    workspace = job.context.workspace
    files = git.changed_files(workspace, base_sha, head_sha)
    if files is None and git.fetch(workspace, "origin", [base_sha, head_sha]):
        files = git.changed_files(workspace, base_sha, head_sha)
    if files is None:
        raise ActionError(f"cannot diff the merge group's base {base_sha[:12]} and head "
                          f"{head_sha[:12]}: set `fetch-depth: 0` on actions/checkout")
    return changes_among(job, files)


# -- trusted poster for fork pull requests -----------------------------------------


def workflow_run_flow(job: Job) -> int:
    run = job.context.workflow_run()
    if run is None:
        raise ActionError("the event payload has no workflow_run")
    api = job.api()
    try:
        archive = api.download_artifact(run.id, ARTIFACT_NAME, MAX_ARTIFACT_BYTES)
        if archive is None:
            log(f"run {run.id} uploaded no {ARTIFACT_NAME!r} artifact; nothing to post")
            return 0
        bundle = bundle_from_zip(archive)
    except (ArtifactTooLarge, BundleTooLarge) as exc:
        return post_too_large(job, api, run, str(exc))
    except BundleError as exc:
        raise ActionError(f"the {ARTIFACT_NAME} artifact of run {run.id}: {exc}") from None
    # The artifact is untrusted: post it only to the run's own PR, and never as a pass.
    try:
        bind_to_run(bundle, run, job.context.repository, api)
        bundle, linkable = vet_bundle(bundle, read_tree(api, run.head_sha))
    except TrustError as exc:
        raise ActionError(f"not posting the {ARTIFACT_NAME} artifact of run {run.id}: "
                          f"{exc}") from None
    source = f"run {run.id} of {run.head_repository}"
    return publish(job, bundle, nothing_changed=False,
                   provenance=Provenance(False, source, linkable))


def post_too_large(job: Job, api: GitHubApi, run: WorkflowRun, problem: str) -> int:
    """A fork report over the cap: a clear comment and a failing unverified check on the
    run's own pull request (found from GitHub's data), the required check held."""
    try:
        number = pull_request_of_run(run, api)
    except TrustError as exc:
        raise ActionError(f"the {ARTIFACT_NAME} artifact of run {run.id}: {problem}; not "
                          f"posting: {exc}") from None
    source = f"run {run.id} of {run.head_repository or job.context.repository}"
    label = job.inputs.trusted_label
    body = too_large_comment(MARKER, source, MAX_BUNDLE_BYTES, label)
    published = Published()
    post_comment(api, number, body, MARKER, job.inputs.comment, published)
    post_check(api, run.head_sha, f"unverified: the fork's report is too large ({problem})",
               body.removeprefix(MARKER + "\n"), True, [], job.context.run_url, published,
               name=UNVERIFIED_CHECK_NAME, verified=False)
    hold_required_check(api, run.head_sha, label, job.context.run_url)
    log(f"::error title=turncheck::the {ARTIFACT_NAME} artifact of run {run.id}: {problem}")
    return 1


# -- branch runs -----------------------------------------------------------------


def branch_flow(job: Job) -> int:
    found = discover([str(job.workdir)], job.inputs.globs)
    suites = [f.path.relative_to(job.workdir).as_posix() for f in found.files
              if f.kind is FileKind.SUITE]
    samples = [f.path.relative_to(job.workdir).as_posix() for f in found.files
               if f.kind is FileKind.SAMPLES]
    head = run_head(job, suites, samples, job.context.sha)
    bundle = ReportBundle(repository=job.context.repository, event=job.context.event_name,
                          head_sha=job.context.sha or "unknown",
                          working_directory=job.inputs.working_directory.as_posix(), head=head)
    write_bundle(job, bundle)
    comparison = compare_bundle(job, bundle)
    reasons = fail_reasons(comparison, job.inputs.fail_on,
                           calibration=job.calibration_thresholds())
    context = comment_context(job, bundle, reasons, html=write_html_report(job, bundle,
                                                                           comparison))
    print_annotations(collect_annotations(comparison, bundle.working_directory, head))
    write_runner_files(job.context.output_path, job.context.summary_path,
                       outputs(comparison, job.inputs.report_path, ""),
                       render_summary(comparison, context))
    for reason in reasons:
        log(f"::error title=turncheck::{escape_data(reason)}")
    return 1 if reasons else 0


# -- entry point -----------------------------------------------------------------


def mask_secrets(env: Mapping[str, str]) -> None:
    for name in API_KEY_ENV_VARS:
        for line in add_mask(env.get(name, "")):
            log(line)


def run_action(env: Mapping[str, str] | None = None) -> int:
    env = dict(os.environ if env is None else env)
    try:
        context = read_context(env)
        inputs = read_inputs(with_project_config(env, context.workspace))
        mask_secrets(env)
        job = Job(context, inputs, env)
        if context.event_name == TRUSTED_RUN_EVENT and inputs.pr_checkout is None:
            raise ActionError(PULL_REQUEST_TARGET_REFUSAL)
        if context.event_name in PULL_REQUEST_EVENTS:
            return pull_request_flow(job)
        if context.event_name == MERGE_GROUP_EVENT:
            return merge_group_flow(job)
        if context.event_name == "workflow_run":
            return workflow_run_flow(job)
        if context.event_name in BRANCH_EVENTS:
            return branch_flow(job)
        raise ActionError(f"unsupported event {context.event_name!r}; use pull_request, "
                          "merge_group, workflow_run or push")
    except ConfigError:
        return 1  # its problems are printed as annotations
    except (ContextError, InputError, ActionError, GitHubApiError, git.GitError) as exc:
        log(f"::error title=turncheck::{escape_data(str(exc))}")
        return 1


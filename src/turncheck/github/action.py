"""`turncheck action`: the GitHub Action entrypoint, which hands each event to its flow
(`github/events/`, one module each):

- `pull_request`: run the changed suites at head and at base, compare, post one
  comment and a check run, set outputs, exit by `fail-on`.
- `merge_group`: the same comparison for a merge queue's group (its base and head
  commits), published as the same check run on the group's head; no comment.
- `workflow_run`: the trusted second half of the fork-safe flow: download the
  report artifact of the PR run, validate it, bind it to the run's PR, post it as an
  unverified report (never `success` on the required check; see `trust.py`) — `workflow_run.py`.
- `pull_request_target`: the maintainer-approved trusted run: reads the PR's files
  (checked out at `pr-checkout`) as data, replays cassettes, posts the real verdict.
- `push` (and `workflow_dispatch`, `schedule`): run every suite and write the
  report (a baseline artifact for later comparisons).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from turncheck import git
from turncheck.config import ConfigError
from turncheck.github.client import GitHubApiError
from turncheck.github.context import ContextError, read_context
from turncheck.github.events.merge_group import merge_group_flow
from turncheck.github.events.pull_request import pull_request_flow
from turncheck.github.events.push import branch_flow
from turncheck.github.events.workflow_run import workflow_run_flow
from turncheck.github.inputs import InputError, read_inputs
from turncheck.github.job import ActionError, Job
from turncheck.github.project_config import with_project_config
from turncheck.github.trust import TRUSTED_RUN_EVENT
from turncheck.github.workflow import add_mask, escape_data, log
from turncheck.providers.factory import API_KEY_ENV_VARS

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


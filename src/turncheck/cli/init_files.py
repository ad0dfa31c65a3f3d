"""What `turncheck init` writes: the workflows, a starter suite and the configuration.

`@BRANCH@` is the repository's default branch; `@ACTION@` the action reference
(`@SETUP_ACTION@` its `setup` action, which installs turncheck on the runner);
`@LABEL@` the label that approves a fork's pull request. Every file names the check run
`turncheck` as the required check, never a job (docs/trust-model.md).
"""

from __future__ import annotations

ACTION_REPOSITORY = "turncheck/turncheck"
DEFAULT_ACTION_REF = "v1"
WORKFLOW_PATH = ".github/workflows/turncheck.yml"
FORK_WORKFLOW_PATH = ".github/workflows/turncheck-fork-comment.yml"
TRUSTED_WORKFLOW_PATH = ".github/workflows/turncheck-trusted.yml"
STARTER_PATH = "evals/starter.eval.yaml"
CONFIG_PATH = "turncheck.toml"
TRUSTED_LABEL = "turncheck:trusted"

ACTION_REF_NOTE = """\
# The action: `@v1` runs turncheck's newest v1 release, a prebuilt image pulled from
# ghcr.io. Before turncheck's first tagged release there is no v1: pin a commit of
# turncheck/turncheck instead (`turncheck init --action-ref <40-hex SHA> --force`); a
# commit (like a branch or a full version tag) builds the image from its Dockerfile in
# every job, a minute or two each."""

REQUIRED_CHECK_NOTE = """\
# Require the check run `turncheck` (branch protection or a ruleset), never a job of
# this workflow: on a fork's pull request GitHub runs the fork's copy of this file, so
# its jobs prove nothing. turncheck creates the `turncheck` check itself; a fork's run
# cannot pass it (see turncheck-fork-comment.yml and turncheck-trusted.yml)."""

WORKFLOW = """\
# turncheck: multi-turn LLM evals on every pull request (written by `turncheck init`).
# Settings come from turncheck.toml; inputs given here override it.
@REQUIRED@
@ACTION_NOTE@
name: turncheck

on:
  pull_request:
  merge_group:       # a merge queue needs the `turncheck` check on its groups too
  push:
    branches: [@BRANCH@]

permissions:
  contents: read

jobs:
  # Pull requests and merge groups: the changed suites at head and at base, one PR
  # comment and the check run `turncheck` (the check to require; not this job).
  evals:
    if: github.event_name != 'push'
    runs-on: ubuntu-latest
    timeout-minutes: 60    # GitHub's default is 6 hours; raise it for a very long suite
    permissions:
      contents: read
      pull-requests: write   # the PR comment
      checks: write          # the check run with annotations
      statuses: write        # fallback when checks: write is not granted
      actions: read          # a re-run reads the earlier attempt's report
    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 0     # so turncheck can read the base versions of your suites
          persist-credentials: false   # no token on disk where an app target could read it
      - uses: @ACTION@
      # The browsable HTML report (turncheck report), linked from the comment.
      - uses: actions/upload-artifact@v6
        if: always()
        with:
          name: turncheck-html-report
          path: turncheck-report.html
          if-no-files-found: ignore
          retention-days: 14
      # Each attempt's report: re-running a failed check pools the earlier
      # attempt's samples instead of starting afresh (docs/action.md,
      # "Re-running a failed check").
      - uses: actions/upload-artifact@v6
        if: always() && github.event_name == 'pull_request'
        with:
          name: turncheck-attempt-${{ github.run_attempt }}
          path: turncheck-report.json
          if-no-files-found: ignore
          retention-days: 5
      # A fork's token is read-only: keep the report; turncheck-fork-comment.yml posts it.
      - uses: actions/upload-artifact@v6
        if: >-
          always() && github.event_name == 'pull_request' &&
          github.event.pull_request.head.repo.full_name != github.repository
        with:
          name: turncheck-report
          path: turncheck-report.json
          retention-days: 5

  # The default branch: every suite, kept as the baseline artifact pull requests reuse.
  baseline:
    if: github.event_name == 'push'
    runs-on: ubuntu-latest
    timeout-minutes: 60
    steps:
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: @ACTION@
        with:
          fail-on: invalid
      - uses: actions/upload-artifact@v6
        if: always()
        with:
          name: turncheck-report-${{ github.sha }}
          path: turncheck-report.json
"""

FORK_WORKFLOW = """\
# The fork-safe poster (written by `turncheck init`). After a fork's pull-request run,
# this trusted workflow downloads its report (untrusted data: size-capped, validated,
# bound to the run's own pull request), posts it marked "unverified" under the check
# `turncheck (unverified fork report)` and holds the required `turncheck` check at
# action_required until a maintainer approves a trusted run (turncheck-trusted.yml).
# It never runs code from the pull request.
@ACTION_NOTE@
name: turncheck fork comment

on:
  workflow_run:
    workflows: [turncheck]
    types: [completed]

permissions:
  pull-requests: write
  checks: write
  statuses: write
  actions: read          # download the pull request run's artifact

jobs:
  post:
    if: >-
      github.event.workflow_run.event == 'pull_request' &&
      github.event.workflow_run.head_repository.full_name != github.repository
    runs-on: ubuntu-latest
    # Posting a report takes seconds; a fork's forged report must not hold a trusted
    # runner (with a write token) for hours.
    timeout-minutes: 10
    steps:
      # The default branch (trusted): only for turncheck.toml.
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: @ACTION@
        with:
          trusted-label: @LABEL@
"""

TRUSTED_WORKFLOW = """\
# The verdict for a fork's pull request (written by `turncheck init`).
# A maintainer reviews the pull request (suites, samples *and cassettes*: in replay
# mode the cassettes are the model's answers) and adds the label `@LABEL@`. This
# workflow then runs from the default branch with a write token, checks the pull
# request's commit out into `pr/` as data (no credentials; nothing from it is
# executed), replays its cassettes and sets the required `turncheck` check and the
# comment. The label is removed afterwards, so every new commit needs a new approval.
# Suites with an app target are not run here: they would run the fork's code next to
# the write token (docs/trust-model.md, "App targets").
# Pass no provider keys or other secrets here. Create the label once:
#   gh label create @LABEL@
@ACTION_NOTE@
name: turncheck trusted run

on:
  pull_request_target:
    types: [labeled]

permissions:
  contents: read
  pull-requests: write   # the comment, and removing the label
  checks: write          # the required `turncheck` check
  statuses: write

jobs:
  verdict:
    if: github.event.label.name == '@LABEL@'
    runs-on: ubuntu-latest
    timeout-minutes: 30    # replay only: no call waits on a provider
    steps:
      # The default branch (trusted): turncheck.toml.
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      # The pull request's files, as data only, at the reviewed commit.
      - uses: actions/checkout@v5
        with:
          ref: ${{ github.event.pull_request.head.sha }}
          path: pr
          fetch-depth: 0     # turncheck reads the base versions of the suites
          persist-credentials: false
      - uses: @ACTION@
        with:
          pr-checkout: pr
          mode: replay
          trusted-label: @LABEL@
      - name: Remove the label, so the next commit needs a new approval
        if: always()
        env:
          GH_TOKEN: ${{ github.token }}
          PR: ${{ github.event.pull_request.number }}
        run: gh pr edit "$PR" --repo "$GITHUB_REPOSITORY" --remove-label '@LABEL@'
"""


def fill(template: str, action_ref: str, branch: str) -> str:
    """`template` with its placeholders: the action at `action_ref`, the default branch."""
    return (template.replace("@REQUIRED@", REQUIRED_CHECK_NOTE)
            .replace("@ACTION_NOTE@", ACTION_REF_NOTE)
            .replace("@SETUP_ACTION@", f"{ACTION_REPOSITORY}/setup@{action_ref}")
            .replace("@ACTION@", f"{ACTION_REPOSITORY}@{action_ref}")
            .replace("@BRANCH@", branch).replace("@LABEL@", TRUSTED_LABEL))


STARTER = """\
# A starter suite (written by `turncheck init`). Record it once with a key, commit the
# cassette written beside it, and every pull request replays it with no key:
#   OPENAI_API_KEY=... turncheck record evals/
metadata:
  name: starter
  model: gpt-4o-mini
  provider: openai
  temperature: 0
evals:
  - name: capital
    prompt: What is the capital of France? Answer in one word.
    checks:
      - match: "*Paris*"
      - prompt: That is not right. Which city is the capital of France?
        checks:
          - match: "*Paris*"
"""

CONFIG_HEADER = """\
# turncheck's project configuration (written by `turncheck init`). `turncheck run`,
# `validate`, `calibrate`, `compare` and the GitHub Action read it; command-line flags
# and action inputs override it. Unknown keys are errors.
"""

FAIL_ON_NOTE = """\
# What fails the `turncheck` check: the action's default. A pull request fails on files
# that cannot run (invalid), evals that errored or have no recording (error), and evals
# it made worse (regression, broken); an eval already failing on the default branch
# does not fail every pull request. Adding `failure` fails on any failing eval: on a
# flaky suite that is most pull requests, even those that change nothing."""

LEFT_OUT_NOTE = """\
# Files init left out because they do not validate (deliberately invalid test fixtures,
# or suites to fix): the default-branch job fails on invalid files. To include one, fix
# it (`turncheck validate PATH` lists every problem) and delete its line here."""

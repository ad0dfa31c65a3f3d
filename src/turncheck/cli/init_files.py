"""What `turncheck init` writes: the workflows, a starter suite and the configuration.

`@BRANCH@` is the repository's default branch; `@ACTION@` the action reference.
"""

from __future__ import annotations

ACTION = "turncheck/turncheck@v1"
WORKFLOW_PATH = ".github/workflows/turncheck.yml"
FORK_WORKFLOW_PATH = ".github/workflows/turncheck-fork-comment.yml"
STARTER_PATH = "evals/starter.eval.yaml"
CONFIG_PATH = "turncheck.toml"

WORKFLOW = """\
# turncheck: multi-turn LLM evals on every pull request (written by `turncheck init`).
# Settings come from turncheck.toml; inputs given here override it.
name: turncheck

on:
  pull_request:
  merge_group:       # a merge queue needs the required check on its groups too
  push:
    branches: [@BRANCH@]

permissions:
  contents: read

jobs:
  # Pull requests and merge groups: the changed suites at head and at base, one PR
  # comment and a check run. Make this job a required status check.
  evals:
    if: github.event_name != 'push'
    runs-on: ubuntu-latest
    permissions:
      contents: read
      pull-requests: write   # the PR comment
      checks: write          # the check run with annotations
      statuses: write        # fallback when checks: write is not granted
    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 0     # so turncheck can read the base versions of your suites
      - uses: @ACTION@
      # The browsable HTML report (turncheck report), linked from the comment.
      - uses: actions/upload-artifact@v6
        if: always()
        with:
          name: turncheck-html-report
          path: turncheck-report.html
          if-no-files-found: ignore
          retention-days: 14
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
    steps:
      - uses: actions/checkout@v5
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
# The fork-safe half of turncheck (written by `turncheck init`): after a fork's pull
# request run, this trusted workflow downloads its report, validates it and posts the
# comment and check. It never runs code from the pull request.
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
    steps:
      # The default branch (trusted): only for turncheck.toml.
      - uses: actions/checkout@v5
      - uses: @ACTION@
"""

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

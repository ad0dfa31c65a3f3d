"""The pull-request workflow `turncheck init --target http|python|command` writes: turncheck
runs as a step on the runner (`pip install turncheck`, then `exec turncheck action`), next
to the app, whose toolchain and dependencies the job installs (docs/action.md, "App
targets"). The fork poster and the trusted run are the same as without a target: the
trusted run never starts a fork's app (docs/trust-model.md, "App targets")."""

from __future__ import annotations

from turncheck import __version__

TARGET_KINDS = ("http", "python", "command")
TARGET_NOTES = {
    "http": "# The app is an HTTP server turncheck starts (`target.start`) and talks to.",
    "python": "# The app is a Python function (`target.python`); in the action it runs in a\n"
              "# child process of the runner's Python, where its dependencies are installed.",
    "command": "# The app is a process speaking JSON lines (`target.command`), in any language:\n"
               "# install its toolchain (actions/setup-node, ...) before it runs.",
}

APP_WORKFLOW = """\
# turncheck: multi-turn LLM evals of your app on every pull request (written by
# `turncheck init --target @TARGET@`). Settings come from turncheck.toml.
@REQUIRED@
# turncheck runs as a step on the runner, next to the app (docs/action.md, "App
# targets"), so the app has the runner's toolchains and your dependencies.
@TARGET_NOTE@
# Running the app runs the pull request's code. So nothing of the job's credentials
# is left where it could read them: the checkout keeps no token (persist-credentials),
# and `exec` replaces the step's shell, which would otherwise hold the token in its
# environment (turncheck refuses to start the app then).
name: turncheck

on:
  pull_request:
  merge_group:       # a merge queue needs the `turncheck` check on its groups too
  push:
    branches: [@BRANCH@]

permissions:
  contents: read

jobs:
  # Pull requests and merge groups: the changed suites at head and at base, each side
  # starting its own commit's app; one PR comment and the check run `turncheck`.
  evals:
    if: github.event_name != 'push'
    runs-on: ubuntu-latest
    timeout-minutes: 60    # GitHub's default is 6 hours; raise it for a very long suite
    permissions:
      contents: read
      pull-requests: write   # the PR comment
      checks: write          # the check run with annotations
      statuses: write        # fallback when checks: write is not granted
    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 0     # so turncheck can read the base versions of your suites
          persist-credentials: false   # no token on disk where the app could read it
      - uses: actions/setup-python@v6
        with:
          python-version: "3.12"
      - name: Install the app's dependencies (replace with your app's own setup)
        run: if [ -f requirements.txt ]; then pip install -r requirements.txt; fi
      - name: Install turncheck
        run: pip install "turncheck==@VERSION@"
      - name: turncheck
        run: exec turncheck action
        env:
          GITHUB_TOKEN: ${{ github.token }}
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
    timeout-minutes: 60
    steps:
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: actions/setup-python@v6
        with:
          python-version: "3.12"
      - name: Install the app's dependencies (replace with your app's own setup)
        run: if [ -f requirements.txt ]; then pip install -r requirements.txt; fi
      - name: Install turncheck
        run: pip install "turncheck==@VERSION@"
      - name: turncheck
        run: exec turncheck action
        env:
          GITHUB_TOKEN: ${{ github.token }}
          INPUT_FAIL-ON: invalid
      - uses: actions/upload-artifact@v6
        if: always()
        with:
          name: turncheck-report-${{ github.sha }}
          path: turncheck-report.json
"""


def app_workflow(target: str) -> str:
    """The workflow's template for an app `target` (the placeholders of `init_files.fill`
    left in, `@TARGET@`, `@TARGET_NOTE@` and `@VERSION@` filled)."""
    return (APP_WORKFLOW.replace("@TARGET_NOTE@", TARGET_NOTES[target])
            .replace("@TARGET@", target).replace("@VERSION@", __version__))

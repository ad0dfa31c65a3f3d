"""The pull-request workflow `turncheck init --target http|python|command` writes:
turncheck runs as a step on the runner (installed by the action's `setup` step from the
action's own files at the reference the workflow names, then `exec turncheck action`),
next to the app, whose toolchain and dependencies the job installs (docs/action.md, "App
targets"). The fork poster and the trusted run are the same as without a target: the
trusted run never starts a fork's app (docs/trust-model.md, "App targets")."""

from __future__ import annotations

from turncheck.cli.init_files import WORKFLOW

TARGET_NOTES = {
    "http": "# The app is an HTTP server turncheck starts (`target.start`) and talks to.",
    "python": "# The app is a Python function (`target.python`); in the action it runs in a\n"
              "# child process of the runner's Python, where its dependencies are installed.",
    "command": "# The app is a process speaking JSON lines (`target.command`), in any language:\n"
               "# install its toolchain (actions/setup-node, ...) before it runs.",
}

HEADER = """\
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
"""

RUNNER_STEPS = """\
      - uses: actions/setup-python@v6
        with:
          python-version: "3.12"
      # turncheck at the action's reference, from the action's own files, every
      # dependency at requirements.lock's version and hash (into this Python).
      - uses: @SETUP_ACTION@
      - name: Install the app's dependencies (replace with your app's own setup)
        run: if [ -f requirements.txt ]; then pip install -r requirements.txt; fi
      - name: turncheck
        run: exec turncheck action
        env:
          GITHUB_TOKEN: ${{ github.token }}
"""
"""turncheck as a step next to the app, in place of the action's container."""


def _app_template() -> str:
    """The action's workflow (`init_files.WORKFLOW`) under this header, with turncheck run
    on the runner instead of in the action's container."""
    body = WORKFLOW[WORKFLOW.index("name: turncheck\n"):]
    return HEADER + (body
                     .replace("      - uses: @ACTION@\n        with:\n          fail-on: invalid\n",
                              RUNNER_STEPS + "          INPUT_FAIL-ON: invalid\n")
                     .replace("      - uses: @ACTION@\n", RUNNER_STEPS))


def app_workflow(target: str) -> str:
    """The workflow's template for an app `target` (the placeholders of `init_files.fill`
    left in, `@TARGET@` and `@TARGET_NOTE@` filled)."""
    return _app_template().replace("@TARGET_NOTE@", TARGET_NOTES[target]).replace(
        "@TARGET@", target)

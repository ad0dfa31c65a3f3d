"""`turncheck action`: the GitHub Action entrypoint (reads GITHUB_* and INPUT_*)."""

from __future__ import annotations

import argparse

from turncheck.cli.common import interruptible_run
from turncheck.github.action import run_action


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "action",
        help="run as the GitHub Action (pull_request, workflow_run or push events)",
        description="The GitHub Action entrypoint: configured by INPUT_* variables and the "
        "GitHub Actions environment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, ...).",
    )
    parser.set_defaults(handler=lambda args: interruptible_run(run_action))

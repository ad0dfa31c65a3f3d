"""`turncheck init`: the files a repository needs to run turncheck on pull requests.

Writes the pull-request workflow (with `merge_group` and the default-branch
baseline job), the fork-safe poster, a starter suite when the repository has no
suite, and `turncheck.toml` (with globs for vibecheck-style suites it finds).
Idempotent: an existing file is kept unless `--force`; a second run changes
nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from turncheck.cli import init_files
from turncheck.config import CONFIG_FILE, find_config
from turncheck.formats.discovery import DEFAULT_SAMPLE_GLOBS, DEFAULT_SUITE_GLOBS, discover
from turncheck.formats.vibecheck import globs_for, missed_suites


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "init",
        help="write the GitHub workflows, a starter suite and turncheck.toml",
        description="Set up turncheck in a repository: a pull-request workflow (with the "
        "merge queue and the default-branch baseline job), the fork-safe comment workflow, "
        "a starter suite when there is none, and turncheck.toml. Existing files are kept "
        "unless --force; running it again changes nothing.",
    )
    parser.add_argument("directory", nargs="?", default=".", type=Path,
                        help="the repository's root (default: .)")
    parser.add_argument("--force", action="store_true", help="overwrite files that differ")
    parser.set_defaults(handler=handle_init)


@dataclass(frozen=True)
class Planned:
    path: str
    content: str


def handle_init(args: argparse.Namespace) -> int:
    root: Path = args.directory
    if not root.is_dir():
        print(f"turncheck: error: not a directory: {root}", file=sys.stderr)
        return 2
    if not (root / ".git").exists():
        print(f"turncheck: warning: {root} is not the root of a git repository; GitHub reads "
              "workflows from .github/workflows at the root", file=sys.stderr)
    detected = missed_suites(root)
    files = planned_files(root, detected)
    for item in files:
        print(f"  {write(root, item, args.force):<9} {item.path}")
    print_next_steps(root, files, detected)
    return 0


def planned_files(root: Path, detected: list[str]) -> list[Planned]:
    branch = default_branch(root)
    workflow = init_files.WORKFLOW.replace("@BRANCH@", branch)
    files = [
        Planned(init_files.WORKFLOW_PATH, workflow.replace("@ACTION@", init_files.ACTION)),
        Planned(init_files.FORK_WORKFLOW_PATH,
                init_files.FORK_WORKFLOW.replace("@ACTION@", init_files.ACTION)),
    ]
    if not detected and not _has_suites(root):
        files.append(Planned(init_files.STARTER_PATH, init_files.STARTER))
    existing = find_config(root, stop=root)
    if existing is None or existing.name == CONFIG_FILE:
        files.append(Planned(init_files.CONFIG_PATH, config_text(root, detected)))
    return files


def _has_suites(root: Path) -> bool:
    starter = (root / init_files.STARTER_PATH).resolve()
    return any(f.path.resolve() != starter for f in discover([str(root)]).files)


def config_text(root: Path, detected: list[str]) -> str:
    suite_globs = list(DEFAULT_SUITE_GLOBS) + globs_for(root, detected)
    lines = [init_files.CONFIG_HEADER]
    if detected:
        lines.append("# vibecheck-style suites (top-level metadata + evals) found by init:")
        lines.extend(f"#   {path}" for path in detected)
    lines += [
        f"suite-globs = {_toml_list(suite_globs)}",
        f"sample-globs = {_toml_list(list(DEFAULT_SAMPLE_GLOBS))}",
        "exclude-globs = []",
        "concurrency = 8",
        'fail-on = "invalid,failure,regression"',
        "",
    ]
    return "\n".join(lines)


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def default_branch(root: Path) -> str:
    """The branch HEAD names (also in a repository with no commit yet), else main."""
    try:
        found = subprocess.run(["git", "symbolic-ref", "--short", "HEAD"], cwd=root,
                               capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "main"
    name = found.stdout.strip()
    return name if found.returncode == 0 and name and "'" not in name else "main"


def write(root: Path, item: Planned, force: bool) -> str:
    """Write `item` unless an existing file differs (and not `force`); say what happened."""
    path = root / item.path
    if path.is_file():
        current = path.read_text(encoding="utf-8", errors="replace")
        if current == item.content:
            return "unchanged"
        if not force:
            return "kept"
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.exists()
    path.write_text(item.content, encoding="utf-8")
    return "replaced" if existed else "wrote"


def print_next_steps(root: Path, files: list[Planned], detected: list[str]) -> None:
    kept = [f.path for f in files
            if (root / f.path).read_text(encoding="utf-8", errors="replace") != f.content]
    if kept:
        print(f"\nKept {len(kept)} existing file(s) that differ; --force overwrites them.")
    if detected:
        print(f"\nFound {len(detected)} vibecheck-style suite(s); turncheck.toml's "
              "suite-globs find them.")
    starter = any(f.path == init_files.STARTER_PATH for f in files)
    suites, key = ("evals/", "OPENAI_API_KEY") if starter else (
        ".", "OPENROUTER_API_KEY (or OPENAI_API_KEY, ANTHROPIC_API_KEY)")
    print(f"""
Next:
  1. Record the suites' answers once (calls the provider; cassettes are written beside them):
       turncheck record {suites}   with {key} set
  2. Check that they replay offline, with no key:  turncheck run
  3. Commit the suites, their *.cassette.yaml files, turncheck.toml and .github/workflows/.
  4. After the first pull request, make the `evals` job of the `turncheck` workflow a
     required status check (branch protection or a ruleset). With a merge queue it also
     runs on merge_group, so the requirement holds there too.""")

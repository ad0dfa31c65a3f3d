"""`turncheck init`: the files a repository needs to run turncheck on pull requests.

Writes the pull-request workflow (with `merge_group` and the default-branch
baseline job), the fork-safe poster and the maintainer-approved trusted run (so a
fork's pull request gets a verdict that the fork cannot forge), a starter suite
when the repository has no suite, and `turncheck.toml` (with globs for
vibecheck-style suites it finds). Everything it writes and prints names the check
run `turncheck` as the required check, never a job.
Idempotent: an existing file is kept unless `--force`; a second run changes
nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from turncheck.choices import TARGET_KINDS
from turncheck.cli import init_files, init_starter_app
from turncheck.cli.init_app_workflow import app_workflow
from turncheck.config import CONFIG_FILE, find_config
from turncheck.diagnostics import Diagnostic
from turncheck.formats.discovery import (
    DEFAULT_SAMPLE_GLOBS,
    DEFAULT_SUITE_GLOBS,
    Globs,
    discover,
)
from turncheck.formats.validation import validate_files
from turncheck.formats.vibecheck import globs_for, missed_suites
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.text.counts import counted
from turncheck.text.lines import one_line


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "init",
        help="write the GitHub workflows, a starter suite and turncheck.toml",
        description="Set up turncheck in a repository: a pull-request workflow (with the "
        "merge queue and the default-branch baseline job), the fork-safe comment workflow, "
        "the maintainer-approved trusted run for fork pull requests, a starter suite when "
        "there is none, and turncheck.toml. Existing files are kept unless --force; "
        "running it again changes nothing.",
    )
    parser.add_argument("directory", nargs="?", default=".", type=Path,
                        help="the repository's root (default: .)")
    parser.add_argument("--force", action="store_true", help="overwrite files that differ")
    parser.add_argument("--action-ref", default=init_files.DEFAULT_ACTION_REF, metavar="REF",
                        help="the turncheck/turncheck version the workflows use: v1 (default; "
                        "the released, prebuilt image) or, before a release, a commit SHA "
                        "(builds the image in every job)")
    parser.add_argument("--default-branch", metavar="BRANCH",
                        help="the repository's default branch (default: found from "
                        "origin/HEAD, else the remote, else asked)")
    parser.add_argument("--target", choices=TARGET_KINDS,
                        help="the suites test an app (docs/targets.md): the pull-request "
                        "workflow installs turncheck with pip and runs it as a step next to "
                        "the app, instead of the action's container")
    parser.set_defaults(handler=handle_init)


@dataclass(frozen=True)
class Planned:
    path: str
    content: str


@dataclass(frozen=True)
class LeftOut:
    """A file the globs find that does not validate: `init` excludes it, so the
    default-branch job (which fails on invalid files) does not go red on every push."""

    path: str
    """Relative to the repository's root, as an exclude glob matches it."""
    reason: str
    """Its first error, `line:col: message`, on one line."""


def handle_init(args: argparse.Namespace) -> int:
    root: Path = args.directory
    if not root.is_dir():
        print(f"turncheck: error: not a directory: {root}", file=sys.stderr)
        return 2
    if not (root / ".git").exists():
        print(f"turncheck: warning: {root} is not the root of a git repository; GitHub reads "
              "workflows from .github/workflows at the root", file=sys.stderr)
    if not SAFE_REF.fullmatch(args.action_ref):
        print(f"turncheck: error: --action-ref {args.action_ref!r}: use a tag such as v1 "
              "or a 40-character commit SHA", file=sys.stderr)
        return 2
    branch = args.default_branch or default_branch(root)
    if not SAFE_REF.fullmatch(branch):
        print(f"turncheck: error: --default-branch {branch!r} is not a branch name",
              file=sys.stderr)
        return 2
    detected = missed_suites(root)
    checked = checked_files(root, detected)
    files = planned_files(root, detected, branch, args.action_ref, checked, args.target)
    done = {item.path: write(root, item, args.force) for item in files}
    for path, what in done.items():
        print(f"  {what:<9} {path}")
    print_left_out(checked.left_out, done.get(init_files.CONFIG_PATH))
    print_next_steps(root, files, detected, args.action_ref, args.target)
    if args.target:
        print(setup_advice(args.action_ref))
    return 0


SAFE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
"""A branch or tag name that needs no quoting in YAML (and a commit SHA)."""
COMMIT_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Checked:
    """The suites and sample files the written globs find, validated."""

    valid: list[str]
    left_out: list[LeftOut]


REASON_CHARS = 100
"""A left-out file's reason is cut to this many characters."""
LEFT_OUT_LISTED = 20
"""At most this many left-out files are listed on the terminal (the file lists all)."""


def checked_files(root: Path, detected: list[str]) -> Checked:
    """Validate what the globs `init` writes would find (the starter suite aside)."""
    globs = Globs(suites=(*DEFAULT_SUITE_GLOBS, *globs_for(root, detected)))
    starter = (root / init_files.STARTER_PATH).resolve()
    found = [f for f in discover([str(root)], globs).files if f.path.resolve() != starter]
    validation = validate_files(found, root=root)
    loaded = [(f.path, f.diagnostics) for f in validation.suites]
    loaded += [(f.path, f.diagnostics) for f in validation.samples]
    left_out = [LeftOut(path, _reason(path, errors[0])) for path, diagnostics in loaded
                if (errors := [d for d in diagnostics if d.is_error])]
    bad = {item.path for item in left_out}
    return Checked([path for path, _ in loaded if path not in bad], left_out)


def _reason(path: str, diagnostic: Diagnostic) -> str:
    """`line:col: message`, naming the file when the error is in one it references."""
    where = f"{diagnostic.line}:{diagnostic.column}: "
    if diagnostic.file != path:
        where = f"{diagnostic.file}:{where}"
    text = one_line(where + diagnostic.message)
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def planned_files(root: Path, detected: list[str], branch: str,
                  action_ref: str = init_files.DEFAULT_ACTION_REF,
                  checked: Checked | None = None, target: str | None = None) -> list[Planned]:
    checked = checked or checked_files(root, detected)
    workflow = init_files.WORKFLOW if target is None else app_workflow(target)
    files = [Planned(path, init_files.fill(template, action_ref, branch))
             for path, template in ((init_files.WORKFLOW_PATH, workflow),
                                    (init_files.FORK_WORKFLOW_PATH, init_files.FORK_WORKFLOW),
                                    (init_files.TRUSTED_WORKFLOW_PATH,
                                     init_files.TRUSTED_WORKFLOW))]
    if not checked.valid:
        files += starter_files(target)
    existing = find_config(root, stop=root)
    if existing is None or existing.name == CONFIG_FILE:
        files.append(Planned(init_files.CONFIG_PATH,
                             config_text(root, detected, checked.left_out)))
    return files


def starter_files(target: str | None) -> list[Planned]:
    """The starter suite: for an http target, one whose `target:` starts a stand-in app,
    with the cassette of its model calls (it replays with no key); else a model's."""
    if target != "http":
        return [Planned(init_files.STARTER_PATH, init_files.STARTER)]
    cassette = str(cassette_path_for(Path(init_files.STARTER_PATH)))
    return [Planned(init_files.STARTER_PATH, init_starter_app.SUITE),
            Planned(init_starter_app.APP_PATH, init_starter_app.APP),
            Planned(cassette, init_starter_app.cassette())]


def config_text(root: Path, detected: list[str], left_out: list[LeftOut]) -> str:
    suite_globs = list(DEFAULT_SUITE_GLOBS) + globs_for(root, detected)
    lines = [init_files.CONFIG_HEADER]
    if detected:
        lines.append("# vibecheck-style suites (top-level metadata + evals) found by init:")
        lines.extend(f"#   {path}" for path in detected)
    lines += [
        f"suite-globs = {_toml_list(suite_globs)}",
        f"sample-globs = {_toml_list(list(DEFAULT_SAMPLE_GLOBS))}",
        *_excludes(left_out),
        "concurrency = 8",
        *init_files.FAIL_ON_NOTE.splitlines(),
        f"fail-on = {json.dumps(default_gate())}",
        "",
    ]
    return "\n".join(lines)


def default_gate() -> str:
    """The action's default `fail-on`, spelled as the configuration spells it."""
    # Imported here: the comparison code is not needed to write files.
    from turncheck.compare.policy import DEFAULT_FAIL_ON

    return ",".join(condition.value for condition in DEFAULT_FAIL_ON)


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def _excludes(left_out: list[LeftOut]) -> list[str]:
    """`exclude-globs`: the files that do not validate, each with its first error."""
    if not left_out:
        return ["exclude-globs = []"]
    return [*init_files.LEFT_OUT_NOTE.splitlines(), "exclude-globs = [",
            *(f"  {json.dumps(item.path)},  # {item.reason}" for item in left_out), "]"]


def print_left_out(left_out: list[LeftOut], config: str | None) -> None:
    """Which files the configuration leaves out and why; `config` is what `write` did
    with turncheck.toml (None: not written, another configuration file applies)."""
    if not left_out:
        return
    where = {None: "add them to exclude-globs in your configuration file",
             "kept": f"add them to exclude-globs in {init_files.CONFIG_PATH} (kept as it was; "
                     "--force replaces it)"}.get(
        config, f"{init_files.CONFIG_PATH}'s exclude-globs leave them out")
    verb = "does" if len(left_out) == 1 else "do"
    print(f"\n{counted(len(left_out), 'file')} {verb} not validate (test fixtures?) and would "
          f"fail the default-branch job on every push; {where}:")
    for item in left_out[:LEFT_OUT_LISTED]:
        print(f"  {one_line(item.path)}: {item.reason}")
    if len(left_out) > LEFT_OUT_LISTED:
        print(f"  … and {len(left_out) - LEFT_OUT_LISTED} more")
    print("To include one: fix it (`turncheck validate PATH` lists every problem), then "
          "delete its line from exclude-globs.")


def default_branch(root: Path) -> str:
    """The repository's default branch, which the baseline job runs on: origin's HEAD
    (as last fetched), else what the remote says, else the only local branch, else asked
    (on a terminal) or `main`. Never merely the branch checked out: `init` is often run
    on a feature branch."""
    remote = _git(root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote and remote.startswith("origin/"):
        return remote.removeprefix("origin/")
    advertised = _git(root, "ls-remote", "--symref", "origin", "HEAD")
    found = re.match(r"ref: refs/heads/(\S+)\tHEAD", advertised or "")
    if found:
        return found.group(1)
    current = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    branches = (_git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads") or "").split()
    if current and set(branches) <= {current}:
        return current  # a new repository: its one branch is the default
    for usual in ("main", "master"):
        if usual in branches:
            return usual
    return _ask_default_branch(current)


def _ask_default_branch(current: str | None) -> str:
    fallback = "main"
    if sys.stdin.isatty():
        answer = input(f"The repository's default branch (the one pull requests merge into) "
                       f"[{fallback}]: ").strip()
        return answer or fallback
    print(f"turncheck: warning: cannot tell the repository's default branch (no origin/HEAD; "
          f"checked out: {current or 'none'}); the workflows use {fallback!r}. Pass "
          "--default-branch NAME to change it.", file=sys.stderr)
    return fallback


def _git(root: Path, *args: str) -> str | None:
    """The stripped output of a git command, or None when it fails."""
    try:
        found = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                               timeout=20, check=False,
                               env={"GIT_SSH_COMMAND": "ssh -o BatchMode=yes", **os.environ,
                                    "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.stdout.strip() if found.returncode == 0 else None


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


def print_next_steps(root: Path, files: list[Planned], detected: list[str],
                     action_ref: str = init_files.DEFAULT_ACTION_REF,
                     target: str | None = None) -> None:
    kept = [f.path for f in files
            if (root / f.path).read_text(encoding="utf-8", errors="replace") != f.content]
    if kept:
        print(f"\nKept {counted(len(kept), 'existing file')} that differ; --force overwrites them.")
    if detected:
        print(f"\nFound {counted(len(detected), 'vibecheck-style suite')}; turncheck.toml's "
              "suite-globs find them.")
    starter = any(f.path == init_files.STARTER_PATH for f in files)
    suites, key = ("evals/", "OPENAI_API_KEY") if starter else (
        ".", "OPENROUTER_API_KEY (or OPENAI_API_KEY, ANTHROPIC_API_KEY)")
    if target is not None:
        key = ("the key your app's provider needs (OPENAI_API_KEY or ANTHROPIC_API_KEY; "
               "the app gets turncheck's proxy and a placeholder key)")
    label = init_files.TRUSTED_LABEL
    record = ("Record the suites' answers once (calls the provider; cassettes are written "
              "beside them):")
    if any(f.path == init_starter_app.APP_PATH for f in files):
        record = ("The starter suite replays as written (`turncheck run evals/`). Point its\n"
                  "     target (start, ready, http) at your app, then record its model calls:")
    print(f"""
Next:
  1. {record}
       turncheck record {suites}   with {key} set
  2. Check that they replay offline, with no key:  turncheck run
  3. Commit the suites, their *.cassette.yaml files, turncheck.toml and .github/workflows/.
  4. After the first pull request, require the check run `turncheck` (branch protection
     or a ruleset: "Require status checks to pass" → turncheck). Require that check,
     not a job: on a fork's pull request the workflow is the fork's copy, so its jobs
     prove nothing. turncheck also sets the check on merge_group, for merge queues.
  5. Fork pull requests: turncheck-fork-comment.yml posts the fork's own figures marked
     unverified and holds `turncheck` at action_required; review the pull request (its
     cassettes too) and add the label `{label}` (create it once:
     gh label create {label}) to run turncheck-trusted.yml, which sets the verdict.""")
    print(action_ref_advice(action_ref))


def setup_advice(action_ref: str) -> str:
    """What the app workflow's install step does, for `init --target`."""
    return (f"\n{init_files.WORKFLOW_PATH} installs turncheck on the runner with "
            f"{init_files.ACTION_REPOSITORY}/setup@{action_ref}: the action's own files at that "
            "reference, every dependency at requirements.lock's version and hash.")


def action_ref_advice(action_ref: str) -> str:
    action = f"{init_files.ACTION_REPOSITORY}@{action_ref}"
    if COMMIT_SHA.fullmatch(action_ref):
        return (f"\nThe workflows use {action}: a pinned commit, which builds the action's "
                "image from its Dockerfile in every job (a minute or two each). Once turncheck "
                "has a tagged release, `turncheck init --force` switches them to @v1, which "
                "pulls the prebuilt image.")
    return (f"\nThe workflows use {action}: a release tag pulls the prebuilt image. Before "
            "turncheck's first tagged release there is no v1: pin a commit instead, with "
            "`turncheck init --action-ref <40-hex commit SHA of turncheck/turncheck> "
            "--force`; a commit builds the image from its Dockerfile in every job.")

"""Hostile inputs: each must reach a result or a clear diagnostic quickly, in bounded memory.

    python benchmarks/hostile.py [--only NAME ...] [--list]

Every case runs in its own Python process (so its peak resident memory is its own)
and prints the time it took to reach its result or diagnostic (CPU time, checked
against the targets, and wall time) and the process's peak memory, against the
case's targets: milliseconds per KB of hostile input (or seconds) and MiB. The
script exits 1 when any case misses a target, crashes, or takes longer than
`TIMEOUT_SECONDS`.

To add a case, write a function that builds the input, does the work the way the
run does it and returns a one-line description of the outcome, and register it
with `@hostile_case(...)` (see the glob and template cases below).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_SECONDS = 300.0
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the action case uses the test servers
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class HostileCase:
    name: str
    what: str
    run: Callable[[], tuple[str, int]]
    """Does the work; returns (outcome, size of the hostile input in bytes)."""
    target_ms_per_kb: float | None
    target_seconds: float | None
    target_mib: float


CASES: dict[str, HostileCase] = {}


def hostile_case(name: str, what: str, *, target_mib: float,
                 target_ms_per_kb: float | None = None, target_seconds: float | None = None,
                 ) -> Callable[[Callable[[], tuple[str, int]]], Callable[[], tuple[str, int]]]:
    def register(run: Callable[[], tuple[str, int]]) -> Callable[[], tuple[str, int]]:
        CASES[name] = HostileCase(name, what, run, target_ms_per_kb, target_seconds, target_mib)
        return run
    return register


# -- glob checks (issue 23, defect 3) ----------------------------------------------------

ANSWER_KB = 100


@hostile_case("glob-redos", f"match '*a*a*a*a*a*a*a*a*b' against a {ANSWER_KB} KB answer",
              target_ms_per_kb=1.0, target_mib=120)
def glob_redos() -> tuple[str, int]:
    from turncheck.engine.globs import glob_match

    answer = "a" * (ANSWER_KB * 1024)
    return f"matched={glob_match('*a*a*a*a*a*a*a*a*b', answer)}", len(answer)


@hostile_case("glob-wildcard-segments",
              f"match '*' + 'a?' * 200 + 'b*' (a 400-atom wildcard segment) against a "
              f"{ANSWER_KB} KB answer", target_ms_per_kb=1.0, target_mib=120)
def glob_wildcard_segments() -> tuple[str, int]:
    from turncheck.engine.globs import glob_match

    answer = "a" * (ANSWER_KB * 1024)
    return f"matched={glob_match('*' + 'a?' * 200 + 'b*', answer)}", len(answer)


@hostile_case("glob-question-marks",
              "match '*' + 300,000 '?' + '*' against a 4 M-character answer of 70,000 "
              "distinct characters (issue 32: 1.9 GB for 100 KB, then MemoryError)",
              target_seconds=2.0, target_mib=200)
def glob_question_marks() -> tuple[str, int]:
    from turncheck.engine.globs import glob_match

    block = "".join(chr(0x4E00 + i % 20_000) + chr(0x10000 + i) for i in range(50_000))
    answer = block * (4 * 1024 * 1024 // len(block))
    pattern = "*" + "?" * 300_000 + "*"
    return f"matched={glob_match(pattern, answer)}", len(pattern)


# -- prompt diffs (issue 32, item 3) -------------------------------------------------------


@hostile_case("prompt-diff-worst",
              "diff two 23,000-character prompts built as difflib's worst case (100 short "
              "lines repeated just under its junk threshold, in two orders): 4-5 s with "
              "difflib", target_seconds=0.5, target_mib=120)
def prompt_diff_worst() -> tuple[str, int]:
    from turncheck.render.prompt_changes import SUMMARY_DIFF_LINES, text_diff

    base = "\n".join(f"{i % 100}" for i in range(8000))
    head = "\n".join(f"{i * 7 % 100}" for i in range(8000))
    diff = text_diff(base, head, SUMMARY_DIFF_LINES)
    return f"{len(diff.lines)} lines, replaced={diff.replaced}", len(base) + len(head)


# -- regexes on answers (issue 23: no small input hangs a run) ------------------------------

REGEX_MB = 1


@hostile_case("suite-regex-redos",
              f"a protocol's extract pattern '(a+)+$' against a {REGEX_MB} MB answer of 'a's "
              "and a 'b' (Python's re: hours from 40 characters on)",
              target_ms_per_kb=0.5, target_mib=150)
def suite_regex_redos() -> tuple[str, int]:
    from turncheck.text.user_regex import first_match

    answer = "a" * (REGEX_MB << 20) + "b"
    return f"extracted={first_match('(a+)+$', answer)!r}", len(answer)


def _blank_runs() -> str:
    """1 MB of the worst for turncheck's own answer regexes: long blank and digit runs."""
    unit = " " * 5000 + "\t" * 5000 + "\n" * 5000 + "1" * 5000 + " (x " + "a" * 5000 + "\n"
    return (unit * ((REGEX_MB << 20) // len(unit) + 1))[: REGEX_MB << 20]


@hostile_case("answer-regexes-blank-runs",
              f"item extraction, the self-assessment reader, a judge's fence and the comment's "
              f"text escaping on a {REGEX_MB} MB answer of 5,000-character blank and digit runs",
              target_ms_per_kb=1.0, target_mib=200)
def answer_regexes_blank_runs() -> tuple[str, int]:
    from turncheck.engine.judge import JudgeAnswerError, parse_verdict
    from turncheck.engine.scorers.extract import extract
    from turncheck.engine.scorers.self_assessment import find_estimate
    from turncheck.text.markdown import md_text

    answer = _blank_runs()
    items = extract(answer).names
    estimate = find_estimate(answer)
    try:
        parse_verdict("```json\n" + answer)
        verdict = "parsed"
    except JudgeAnswerError:
        verdict = "refused"
    escaped = len(md_text(answer, limit=None))
    return (f"items={len(items)}, estimate={estimate and estimate[0]}, judge {verdict}, "
            f"escaped {escaped} chars"), len(answer)


# -- templates (issue 23, defect 4) ----------------------------------------------------------


def _protocol_with_prompt(prompt: str) -> str:
    return ("metadata: {name: bomb, model: gpt-4o-mini}\n"
            "cases: [{id: one, vars: {n: 3000000000}}]\n"
            "turns:\n  - id: only\n"
            f"    prompt: {json.dumps(prompt)}\n"
            "    scorers: [{match: '*'}]\n")


def _validate_protocol(prompt: str) -> tuple[str, int]:
    from turncheck.formats.suite_loader import parse_suite

    text = _protocol_with_prompt(prompt)
    loaded = parse_suite(text, "bomb.eval.yaml")
    codes = sorted({d.code for d in loaded.diagnostics})
    return f"diagnostics={codes}", len(text)


def _render(prompt: str, **context: object) -> tuple[str, int]:
    from turncheck.formats.protocol_templates import protocol_environment
    from turncheck.text.template_limits import TemplateLimitError

    try:
        protocol_environment().from_string(prompt).render(**context)
    except TemplateLimitError as exc:
        return f"refused: {str(exc)[:70]}", len(prompt)
    return "rendered (not refused!)", len(prompt)


@hostile_case("template-pow-validate", "validate a protocol whose prompt is {{ 9**(9**9) }}",
              target_seconds=1.0, target_mib=150)
def template_pow_validate() -> tuple[str, int]:
    return _validate_protocol("{{ 9**(9**9) }}")


@hostile_case("template-pow-render", "render {{ 9**(9**9) }} in the protocol environment",
              target_seconds=0.5, target_mib=150)
def template_pow_render() -> tuple[str, int]:
    return _render("{{ 9**(9**9) }}")


@hostile_case("template-string-mul", "render {{ 'a' * n }} with n = 3,000,000,000 (data)",
              target_seconds=0.5, target_mib=150)
def template_string_mul() -> tuple[str, int]:
    return _render("{{ 'a' * n }}", n=3_000_000_000)


@hostile_case("template-nested-loops", "render two nested loops over range(99999)",
              target_seconds=3.0, target_mib=150)
def template_nested_loops() -> tuple[str, int]:
    return _render("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}"
                   "{% endfor %}")


# -- data files (issue 23, defect 9; issue 21 item 1) -------------------------------------------


def _sample_file_codes(text: str) -> tuple[str, int]:
    from turncheck.formats.sample_loader import parse_samples

    codes = sorted({d.code for d in parse_samples(text, "hostile.samples.toml").diagnostics})
    return f"diagnostics={codes}", len(text)


@hostile_case("toml-dotted-keys", "validate a sample file of one 30,000-part dotted key (60 KB)",
              target_seconds=0.5, target_mib=120)
def toml_dotted_keys() -> tuple[str, int]:
    return _sample_file_codes("[samples]\na" + ".a" * 30_000 + " = 1\n")


@hostile_case("toml-huge-array", "validate a sample file holding a 4.9 MB array of small numbers",
              target_seconds=3.0, target_mib=150)
def toml_huge_array() -> tuple[str, int]:
    return _sample_file_codes("x = [" + ",".join(["1"] * 2_450_000) + "]\n")


# -- the action over long answers (issue 23, defect 9) ----------------------------------

ACTION_EVALS = 1000
ACTION_ANSWER_CHARS = 100_000


def _long_answer(body: dict[str, object]) -> str:
    """`done` (passing) or, for odd questions of the head suite, `nope` (a regression the
    comment shows), then 100 k characters."""
    from tests.support.scripted_server import last_user_text

    words = last_user_text(body).split()
    failing = words[0] == "Query" and int(words[1].rstrip(":")) % 2 == 1
    return ("nope " if failing else "done ") + "x" * (ACTION_ANSWER_CHARS - 5)


def _action_suite(server_url: str, word: str) -> str:
    from tests.support.action_harness import suite_text

    evals = "".join(f"  - name: eval-{i}\n    prompt: '{word} {i}: reply with the word done.'\n"
                    f"    checks: [{{match: '*done*'}}]\n" for i in range(ACTION_EVALS))
    return suite_text(server_url, evals)


@hostile_case("action-long-answers",
              f"the action on a pull request: base and head of {ACTION_EVALS} evals, each "
              f"answered with {ACTION_ANSWER_CHARS:,} characters (live, 127.0.0.1 model and "
              "GitHub); peak of the `turncheck action` process", target_mib=500)
def action_long_answers() -> tuple[str, int]:
    import tempfile

    from tests.support.action_harness import run_pull_request
    from tests.support.github_fake import FakeGitHub, _FakeServer
    from tests.support.local_http import serving
    from tests.support.pr_fixtures import feature_branch_repo
    from tests.support.scripted_server import ScriptedServer

    fake = FakeGitHub()
    github = _FakeServer(fake)
    fake.base_url = f"http://127.0.0.1:{github.server_address[1]}"
    with (tempfile.TemporaryDirectory() as tmp, ScriptedServer(_long_answer) as model,
          serving(github)):
        repo, base, head = feature_branch_repo(
            Path(tmp) / "workspace", _action_suite(model.base_url, "Question"),
            _action_suite(model.base_url, "Query"), recorder=None)
        run = run_pull_request(repo, Path(tmp) / "runner", fake, base, head,
                               {"mode": "live", "concurrency": "32"})
        global CHILD_PEAK_MIB
        CHILD_PEAK_MIB = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        comments = len(fake.comments)
    outcome = f"exit {run.returncode}, {comments} comment(s), {len(model.requests)} requests"
    if run.returncode not in (0, 1) or comments != 1:
        raise SystemExit(f"{outcome}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    return outcome, 2 * ACTION_EVALS * ACTION_ANSWER_CHARS


# -- running -------------------------------------------------------------------------


CHILD_PEAK_MIB: float | None = None
"""Set by a case whose work runs in a child process: that child's peak (an upper bound:
Linux's `ru_maxrss` of a child starts from its parent's size at the fork)."""


def _peak_mib() -> float:
    if CHILD_PEAK_MIB is not None:
        return CHILD_PEAK_MIB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _import_what_the_cases_use() -> None:
    """The modules a run has loaded anyway: their import is not the case's cost."""
    import turncheck.engine.globs
    import turncheck.formats.protocol_templates
    import turncheck.formats.suite_loader  # noqa: F401


def run_in_this_process(name: str) -> None:
    case = CASES[name]
    _import_what_the_cases_use()
    start, cpu = time.perf_counter(), time.process_time()
    outcome, size = case.run()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"outcome": outcome, "seconds": cpu_seconds, "wall": seconds,
                      "bytes": size, "peak_mib": _peak_mib()}))


@dataclass
class Measured:
    case: HostileCase
    seconds: float
    """CPU time (the targets' measure: the machine may be shared)."""
    wall: float
    size: int
    peak_mib: float
    outcome: str

    @property
    def ms_per_kb(self) -> float:
        return self.seconds * 1000 / max(self.size / 1024, 1e-9)

    def misses(self) -> list[str]:
        missed = []
        if self.case.target_ms_per_kb is not None and self.ms_per_kb > self.case.target_ms_per_kb:
            missed.append(f"{self.ms_per_kb:.3f} ms/KB > {self.case.target_ms_per_kb} ms/KB")
        if self.case.target_seconds is not None and self.seconds > self.case.target_seconds:
            missed.append(f"{self.seconds:.3f} s > {self.case.target_seconds} s")
        if self.peak_mib > self.case.target_mib:
            missed.append(f"{self.peak_mib:.0f} MiB > {self.case.target_mib} MiB")
        return missed


def measure(case: HostileCase) -> Measured | str:
    """The case's figures from a fresh process, or why there are none."""
    try:
        done = subprocess.run([sys.executable, __file__, "--in-process", case.name],
                              capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
                              check=False)
    except subprocess.TimeoutExpired:
        return f"no result within {TIMEOUT_SECONDS:g} s"
    if done.returncode != 0:
        return f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return Measured(case, figures["seconds"], figures["wall"], figures["bytes"],
                    figures["peak_mib"], figures["outcome"])


def report(measured: Measured) -> str:
    case = measured.case
    if case.target_ms_per_kb is not None:
        timing = f"{measured.ms_per_kb:.3f} ms/KB (target {case.target_ms_per_kb})"
    elif case.target_seconds is not None:
        timing = f"{measured.seconds:.3f} s (target {case.target_seconds} s)"
    else:  # the work ran in a child process: only its memory has a target
        timing = "no time target"
    return (f"{case.name}: {timing}, {measured.seconds * 1000:.1f} ms CPU here "
            f"({measured.wall * 1000:.1f} ms wall) for {measured.size / 1024:.1f} KB; "
            f"peak {measured.peak_mib:.0f} MiB "
            f"(target {case.target_mib:g}); {measured.outcome}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), default=None)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--in-process", metavar="NAME", choices=sorted(CASES))
    args = parser.parse_args()
    if args.in_process:
        run_in_this_process(args.in_process)
        return 0
    if args.list:
        for case in CASES.values():
            print(f"{case.name}: {case.what}")
        return 0
    print(f"load average: {os.getloadavg()[0]:.2f}")
    failed = 0
    for name in args.only or list(CASES):
        measured = measure(CASES[name])
        if isinstance(measured, str):
            print(f"{name}: FAILED, {measured}")
            failed += 1
            continue
        misses = measured.misses()
        print(report(measured) + (f"  MISS: {'; '.join(misses)}" if misses else "  PASS"))
        failed += bool(misses)
    print(f"{failed} of {len(args.only or CASES)} case(s) missed a target" if failed
          else "every case met its targets")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Hostile model output, prompts and names in the PR comment, its size limit, and the log.

The comment is rendered with `comment_markdown` from a comparison of reports built here,
then read back with a small reader of the GitHub-flavoured Markdown structures that
matter: fenced code blocks, code spans and tables. Outside code, untrusted text must
not open or close HTML, mention anyone, link issues, or add table cells.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cmarkgfm
import cmarkgfm.cmark
import pytest

from tests.support.action_harness import TURNCHECK, record, run_action, suite_text
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.logs import commands_in_log
from tests.support.scripted_server import ScriptedServer
from turncheck.compare.comparison import compare_reports
from turncheck.diagnostics import Diagnostic, error
from turncheck.render.comment import (
    COMMENT_LIMIT,
    FULL,
    MARKER,
    CommentContext,
    comment_markdown,
    render,
    render_summary,
)
from turncheck.report.comparison import Comparison
from turncheck.report.results import CheckResult, Status, TurnResult
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult
from turncheck.report.spend import Usage

ZWSP = "\u200b"
PRICES = PriceSource(library="genai-prices", version="0.2.3", timestamp="2026-01-02T03:04:05Z")
HOSTILE_RESPONSE = (
    "Sure! </details><!-- everything below is hidden\n"
    "::error::pwned by the model\n"
    "```\n"
    "| injected | table |\n"
    "|---|---|\n"
    "Thanks @org/team and @user, this fixes #1 and GH-2.\n"
    "````` five backticks\n"
    "<details><summary>fake</summary>\n"
)
HOSTILE_PROMPT = "Ask @user about #1 ``` </details><!-- and | pipes | here"
HOSTILE_NAME = "@org/team #1 </details><!-- | x | y | ``\n\n::error::name " + MARKER
HOSTILE_SUITE_NAME = "hostile @org/team #1\n\n# heading?"
HUGE_RESPONSE = ("A" * 99_990) + "\n::error::end"


# ---- building reports -------------------------------------------------------------------


def turn(number: int, prompt: str, response: str, passed: bool,
         check_detail: str = 'match "*Paris*"') -> TurnResult:
    return TurnResult(
        turn=number, prompt=prompt, response=response, usage=Usage(input_tokens=20,
                                                                   output_tokens=10),
        cost_usd=0.0001, latency_ms=12.0, passed=passed,
        checks=[CheckResult(type="match", passed=passed, detail=check_detail)],
    )


def eval_result(name: str, turns: list[TurnResult], line: int = 7,
                error_text: str | None = None) -> EvalResult:
    passed_on = next((t.turn for t in turns if t.passed), None)
    status = Status.ERROR if error_text else (Status.PASS if passed_on else Status.FAIL)
    usage = Usage(input_tokens=20 * len(turns), output_tokens=10 * len(turns))
    return EvalResult(
        name=name, prompt=turns[0].prompt, status=status, passed_on_turn=passed_on,
        error=error_text, usage=usage, cost_usd=0.0001 * len(turns), judge_usage=Usage(),
        judge_cost_usd=0.0, turns=turns, line=line,
    )


def suite(path: str, name: str, evals: list[EvalResult]) -> SuiteResult:
    usage = Usage(input_tokens=sum(e.usage.input_tokens for e in evals),
                  output_tokens=sum(e.usage.output_tokens for e in evals))
    return SuiteResult(path=path, name=name, model="gpt-4o-mini", provider="openai",
                       cassette=path.replace(".eval.yaml", ".eval.cassette.yaml"), evals=evals,
                       usage=usage, cost_usd=sum(e.cost_usd or 0 for e in evals),
                       judge_usage=Usage(), judge_cost_usd=0.0)


def report(suites: list[SuiteResult], commit: str,
           diagnostics: list[Diagnostic] | None = None) -> Report:
    return Report(turncheck_version="0.1.0", mode="replay", commit=commit, price_source=PRICES,
                  suites=suites, diagnostics=diagnostics or [],
                  started_at="2026-01-02T03:04:05Z", duration_s=1.0)


def comment_for(base: Report | None, head: Report,
                reasons: list[str] | None = None) -> tuple[str, Comparison, CommentContext]:
    comparison = compare_reports(base, head)
    context = CommentContext(fail_reasons=reasons or [], head=head, base=base,
                             run_url="https://github.com/octo-org/widgets/actions/runs/1")
    return comment_markdown(comparison, context), comparison, context


@pytest.fixture
def hostile() -> tuple[Report, Report]:
    return hostile_reports()


def hostile_reports() -> tuple[Report, Report]:
    """Base and head of a suite whose names, prompts and responses attack the comment."""
    path = "evals/hostile.eval.yaml"
    base_evals = [
        eval_result(HOSTILE_NAME, [turn(1, HOSTILE_PROMPT, "fine", True)]),
        eval_result("long answer", [turn(1, "Write a lot", "short", True)], line=12),
        eval_result("table | breaker", [turn(1, "q", "a", True)], line=20),
    ]
    head_evals = [
        eval_result(HOSTILE_NAME, [turn(1, HOSTILE_PROMPT, HOSTILE_RESPONSE, False,
                                        check_detail="judge said: @user </details><!-- #1"),
                                   turn(2, "Try again ``` @org/team", HOSTILE_RESPONSE, False)]),
        eval_result("long answer", [turn(1, "Write a lot", HUGE_RESPONSE, True)], line=12),
        eval_result("table | breaker", [turn(1, "q", "a", True)], line=20,
                    error_text="provider said </details><!-- @user #1\n| a | b |"),
    ]
    diagnostics = [error(path, 3, 5, "unknown-key", "unknown key '</details><!-- @org/team | #1'")]
    base = report([suite(path, HOSTILE_SUITE_NAME, base_evals)], "b" * 40)
    head = report([suite(path, HOSTILE_SUITE_NAME, head_evals)], "c" * 40, diagnostics)
    return base, head


# ---- reading the Markdown back ------------------------------------------------------------

_OPENING_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


@dataclass
class CodeBlock:
    fence: str
    content: str


def split_code_blocks(markdown: str) -> tuple[str, list[CodeBlock]]:
    """(the text outside fenced code blocks, the blocks), following CommonMark's rules for
    where a fence ends; an unclosed fence runs to the end of the document."""
    outside: list[str] = []
    blocks: list[CodeBlock] = []
    lines = iter(markdown.split("\n"))
    for line in lines:
        opening = _OPENING_FENCE.match(line)
        if opening is None or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            outside.append(line)
            continue
        fence = opening.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        content = []
        for inner in lines:
            if closing.match(inner):
                break
            content.append(inner)
        blocks.append(CodeBlock(fence, "\n".join(content)))
    return "\n".join(outside), blocks


def without_code_spans(text: str) -> str:
    """Drop `code spans` (a backtick run up to the next run of the same length)."""
    result, position = [], 0
    for run in re.finditer(r"(?<!\\)`+", text):  # a backslash-escaped backtick opens none
        if run.start() < position:
            continue
        closing = re.search(rf"(?<!`){run.group()}(?!`)", text[run.end():])
        if closing is None:
            continue
        result.append(text[position:run.start()])
        position = run.end() + closing.end()
    result.append(text[position:])
    return "".join(result)


def cell_count(row: str) -> int:
    """Cells of a GFM table row: `|`s not escaped by a backslash, minus the outer pair."""
    pipes, index, row = 0, 0, row.strip()
    while index < len(row):
        if row[index] == "\\":
            index += 2
            continue
        pipes += row[index] == "|"
        index += 1
    return pipes - 1


def tables(text: str) -> Iterator[list[str]]:
    """Each run of consecutive lines starting with `|`."""
    current: list[str] = []
    for line in [*text.split("\n"), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            yield current
            current = []


def longest_backtick_run(text: str) -> int:
    return max((len(r) for r in re.findall(r"`+", text)), default=0)


def assert_inert(body: str, limit: int | None = COMMENT_LIMIT) -> tuple[str, list[CodeBlock]]:
    """The checks every comment (and step summary, without the limit) must pass; returns
    its prose and its code blocks."""
    assert limit is None or len(body) <= limit
    assert body.count(MARKER) == 1
    assert body.startswith(MARKER)
    outside, blocks = split_code_blocks(body)
    prose = without_code_spans(outside)
    # Only our marker is an HTML comment; <details> open and close in pairs.
    assert prose.count("<!--") == 1, re.findall(r".{0,40}<!--.{0,40}", prose)
    assert "</details><!--" not in prose
    assert len(re.findall(r"<details[ >]", prose)) == prose.count("</details>")
    # No mention and no issue reference can form.
    assert not re.findall(r".{0,20}@(?!\u200b).{0,20}", prose)
    assert not re.findall(r".{0,20}(?:#|GH-)\d.{0,20}", prose, flags=re.IGNORECASE)
    # Every table keeps the number of columns of its header.
    for table in tables(prose):
        assert len(table) >= 2 and re.fullmatch(r"\|(?:-+:?\|)+|\|(?:-*:?-*\|)+", table[1])
        widths = {cell_count(row) for row in table}
        assert widths == {cell_count(table[0])}, table
    # A code block is never closed early by its content.
    for block in blocks:
        assert longest_backtick_run(block.content) < len(block.fence), block.fence
    # The footer is still rendered as prose, i.e. no code block swallowed the rest.
    assert "<sub>" in prose and prose.rstrip().endswith("</sub>")
    return prose, blocks


# ---- hostile content -----------------------------------------------------------------------


def test_hostile_text_renders_inert(hostile: tuple[Report, Report]) -> None:
    base, head = hostile
    body, comparison, context = comment_for(base, head, ["1 regression against base"])
    prose, _ = assert_inert(body)

    # Names still read correctly once escaped.
    assert f"@{ZWSP}org/team" in prose and f"@{ZWSP}user" in prose
    assert "&lt;/details&gt;&lt;!--" in prose
    # The eval table: header, delimiter and one row per eval, 7 columns each.
    [eval_table] = [t for t in tables(prose) if t[0].startswith("| Eval |")]
    assert len(eval_table) == 2 + 3
    assert all(cell_count(row) == 7 for row in eval_table)
    # Base beside head, turn by turn: 4 columns whatever the response holds.
    transcripts = [t for t in tables(prose) if t[0].startswith("| Turn | Prompt | base |")]
    # The error first, then the single-sample flip (a transition: broke).
    assert [len(t) for t in transcripts] == [2 + 1, 2 + 2]
    assert all(cell_count(row) == 4 for t in transcripts for row in t)
    # Names with line breaks stay on their line: each finding is one list item.
    regressions = prose.split("### 🔴 Broke (1)\n", 1)[1].split("\n\n", 1)[0]
    assert regressions.count("\n") == 0 and regressions.startswith("- 🔴 **")
    errors = prose.split("### 💥 Not judged: errors (infrastructure, not the model) (1)\n",
                         1)[1].split("\n\n", 1)[0]
    assert errors.startswith("- 💥 **table \\| breaker**")
    # Severity order: what could not run, errors, then regressions.
    assert prose.index("### ⛔ Could not run") < prose.index("### 💥 Not judged") \
        < prose.index("### 🔴 Broke")
    # The footer links the run with a working URL (no backslash escapes in it).
    assert body.rstrip().endswith(" · [workflow run and full report]"
                                  "(https://github.com/octo-org/widgets/actions/runs/1)</sub>")
    # The validation problem keeps its 2 columns despite the `|` in its message.
    [problems] = [t for t in tables(prose) if t[0].startswith("| Where |")]
    assert [cell_count(row) for row in problems] == [2, 2, 2]

    # The step summary shows the hostile response verbatim inside a code block.
    summary = render_summary(comparison, context)
    _, blocks = assert_inert(summary, limit=None)
    contents = [block.content for block in blocks]
    assert HOSTILE_RESPONSE.rstrip("\n") in contents
    fence = next(b.fence for b in blocks if b.content == HOSTILE_RESPONSE.rstrip("\n"))
    assert len(fence) == 6  # longer than the five-backtick run in the response


def test_a_100k_character_response_is_cut_in_the_comment(hostile: tuple[Report, Report]) -> None:
    base, head = hostile
    body, comparison, context = comment_for(base, head)
    assert_inert(body)
    # The comment shows only evals that need a look: "long answer" passes as on base.
    assert "A" * 1000 not in body and "::error::end" not in body
    # The step summary has the full detail, cut per response, and is just as inert.
    summary = render_summary(comparison, context)
    _, blocks = assert_inert(summary, limit=None)
    assert "more characters" not in summary or all(len(b.content) < 25_000 for b in blocks)
    assert "::error::end" not in summary.replace("\\:", ":")


def test_forged_marker_in_a_name_does_not_count_as_the_marker(
    hostile: tuple[Report, Report],
) -> None:
    base, head = hostile
    body, _, _ = comment_for(base, head)
    assert body.count(MARKER) == 1
    assert "&lt;!-- turncheck:comment --&gt;" in body


# ---- size limit --------------------------------------------------------------------------------


def many_evals(count: int, response_chars: int, suites: int = 3) -> tuple[Report, Report]:
    """`count` evals over `suites` suites; a few change between base and head."""
    long_response = ("All good. " * (response_chars // 10 + 1))[:response_chars]

    def side(broken: bool) -> list[SuiteResult]:
        result = []
        for s in range(suites):
            evals = []
            for i in range(count // suites):
                fails = broken and i % 25 == 0
                turns = [turn(1, f"question {s}.{i}", long_response + f" #{s}.{i}", not fails)]
                evals.append(eval_result(f"eval {s}.{i}", turns, line=3 + i * 4))
            result.append(suite(f"evals/suite{s}.eval.yaml", f"suite {s}", evals))
        return result

    return report(side(False), "b" * 40), report(side(True), "c" * 40)


def test_transcripts_are_dropped_first_and_the_summary_keeps_them() -> None:
    base, head = many_evals(300, 1_500)
    body, comparison, context = comment_for(base, head, ["12 regressions against base"])
    prose, _ = assert_inert(body)

    # A plain-text reason names no condition: the heading names what got worse.
    assert body.startswith(MARKER + "\n## ❌ 12 broke · eval 0.0, eval 0.25 and 10 more")
    assert "12 regressions against base" in body
    for label in ("| **Total** |", "| Tokens (model + judge) |"):
        assert label in prose
    # Capped at 15 rows, with a count of the rest and a link to the step summary.
    assert "### 🔴 Broke (12)" in body and "and 0 more" not in body
    assert "eval 1.25" in body  # broken evals still listed

    summary = render_summary(comparison, context)
    assert summary.count("<details><summary>🔴") == 12  # every broken eval's transcript
    assert "All good. All good." in summary and "eval 2.99" in summary  # every eval, in tables


def test_a_comment_that_cannot_fit_keeps_the_frame() -> None:
    # 2,000 broken evals with long names: even the list of changes is over the limit.
    base, head = many_evals(2_000, 10, suites=1)
    renamed = head.model_copy(deep=True)
    for item in renamed.suites[0].evals:
        item.name = item.name + " " + "x" * 150
        item.status, item.passed_on_turn = Status.FAIL, None
    base = base.model_copy(deep=True)
    for old, new in zip(base.suites[0].evals, renamed.suites[0].evals, strict=True):
        old.name = new.name
    body, _, _ = comment_for(base, renamed, ["2000 regressions against base"])

    assert len(body.encode("utf-8")) <= COMMENT_LIMIT
    assert body.count(MARKER) == 1
    # One sample per side, every eval of the suite broke: a suite-level regression first.
    heading = body.split("\n")[1]
    # Names are cut after a whole word: 150-character names make no long heading.
    assert heading == ("## ❌ 1 suite regression, 2000 broke · suite suite 0, eval 0.0… and "
                       "1999 more · evals passing 2000 → none of 2000")
    assert len(heading) <= 3 + 120
    assert "**🔴 1 regressed** · 🔴 2000 broke" in body
    assert "### 🔴 Broke (2000)" in body and "and 1985 more" in body
    assert body.rstrip().endswith("</sub>")  # the footer survives
    outside, blocks = split_code_blocks(body)
    assert not blocks and outside.count("<!--") == 1


# ---- the log ------------------------------------------------------------------------------------


HOSTILE_SUITE_EVALS = (
    "  - name: \"greeting\\n::error::pwned-by-name\"\n"
    "    prompt: \"Say hi\\n::warning::pwned-by-prompt\"\n"
    "    checks: [{match: '*Paris*'}]\n"
)


@pytest.fixture
def hostile_workspace(tmp_path: Path, scripted_server: ScriptedServer) -> GitRepo:
    scripted_server.add_rule(
        "hi!\n::error::pwned-by-model\n   ::set-output name=x::pwned-by-model\n"
        "::stop-commands::guess\n::add-mask::pwned-by-model",
        contains="Say hi",
    )
    repo = GitRepo(tmp_path / "workspace")
    path = "evals/hostile.eval.yaml"
    repo.write(path, suite_text(scripted_server.base_url, HOSTILE_SUITE_EVALS,
                                name='"suite\\n::error::pwned-by-suite-name"'))
    record(repo.path / path)
    repo.commit("hostile suite")
    return repo


def run_in_actions(repo: GitRepo) -> subprocess.CompletedProcess[str]:
    """`turncheck run .` as a workflow step would run it (GITHUB_ACTIONS=true)."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(repo.path), "GITHUB_ACTIONS": "true"}
    return subprocess.run([str(TURNCHECK), "run", "."], cwd=repo.path, env=env, text=True,
                          capture_output=True, timeout=120, check=False)


def test_turncheck_run_log_runs_no_command_from_model_output(
    hostile_workspace: GitRepo,
) -> None:
    done = run_in_actions(hostile_workspace)

    assert done.returncode == 1, done.stdout + done.stderr  # the eval fails
    assert "pwned-by-model" in done.stdout  # the transcript is printed…
    for stream in (done.stdout, done.stderr):
        hijacked = [c for c in commands_in_log(stream) if "pwned-by-model" in c]
        assert not hijacked, stream  # …but nothing in it runs as a command


def test_turncheck_run_log_runs_no_command_from_suite_or_eval_names(
    hostile_workspace: GitRepo,
) -> None:
    done = run_in_actions(hostile_workspace)

    assert done.returncode == 1, done.stdout + done.stderr
    for stream in (done.stdout, done.stderr):
        hijacked = [c for c in commands_in_log(stream) if "pwned" in c]
        assert not hijacked, stream


def test_action_log_runs_no_command_from_model_output_or_names(
    tmp_path: Path, hostile_workspace: GitRepo, github_fake: FakeGitHub
) -> None:
    event: dict[str, object] = {"ref": "refs/heads/main",
                                "repository": {"full_name": "octo-org/widgets"}}
    run = run_action(hostile_workspace, tmp_path / "runner", github_fake.base_url, "push", event,
                     {"fail-on": "failure"})

    assert run.returncode == 1, run.stdout + run.stderr
    commands = commands_in_log(run.stdout) + commands_in_log(run.stderr)
    assert not [c for c in commands if "pwned" in c and not c.startswith("::error file=")]
    # The failing eval's annotation carries the name, escaped onto one line.
    [annotation] = [c for c in commands if c.startswith("::error file=evals/hostile.eval.yaml")]
    assert "%0A::error::pwned-by-name" in annotation or "%0A%3A%3Aerror" in annotation
    assert "pwned-by-model" in run.summary  # the step summary shows the transcript


# ---- inert links and the byte budget ---------------------------------------------------------

LINKY_ANSWER = "Click https://evil.example/x or www.evil.example, or mail user@evil.example."


def gfm_html(markdown: str) -> str:
    """GitHub's own renderer (cmark-gfm with its extensions, autolink included)."""
    return cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE)


def test_urls_and_addresses_from_a_model_answer_render_as_plain_text() -> None:
    answer_turn = turn(1, "Where?", LINKY_ANSWER, False, check_detail=f"judge: {LINKY_ANSWER}")
    base = report([suite("evals/a.eval.yaml", "links", [
        eval_result("where", [turn(1, "Where?", "here", True)])])], "b" * 40)
    head = report([suite("evals/a.eval.yaml", "links", [
        eval_result("where", [answer_turn], error_text=LINKY_ANSWER)])], "c" * 40)
    body, comparison, context = comment_for(base, head, [f"failed: {LINKY_ANSWER}"])
    for markdown in (body, render_summary(comparison, context)):
        html = gfm_html(markdown)
        assert LINKY_ANSWER.split()[1] in gfm_html(LINKY_ANSWER)  # the renderer does autolink
        links = re.findall(r'<a href="([^"]*)"', html)
        assert links == ["https://github.com/octo-org/widgets/actions/runs/1"], links
        assert "mailto:" not in html and "evil.example" in html
        # It still reads the same once the invisible characters are gone.
        assert LINKY_ANSWER in html.replace(ZWSP, "")


def test_the_comment_budget_is_counted_in_utf8_bytes() -> None:
    # 450 evals named in three-byte characters: the full comment is under 65,536 code
    # points but over 65,536 bytes, so a less detailed form must be posted.
    base, head = many_evals(450, 10, suites=1)
    for side in (base, head):
        for item in side.suites[0].evals:
            item.name = item.name + " " + "評価" * 20
    body, comparison, context = comment_for(base, head)
    full = render(comparison, context, FULL)
    assert len(full) < COMMENT_LIMIT < len(full.encode("utf-8"))  # the case code points miss
    assert len(body.encode("utf-8")) <= COMMENT_LIMIT and body != full
    assert body.count(MARKER) == 1 and body.startswith(MARKER)

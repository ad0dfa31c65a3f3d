"""Eval execution semantics (docs/suites.md) against the scripted server."""

from __future__ import annotations

from pathlib import Path

from tests.support.engine_helpers import only_eval, run_text, sent_messages, suite_yaml
from tests.support.scripted_server import ScriptedServer
from turncheck.report.results import Status


def test_pass_on_first_turn_sends_system_prompt_and_prompt(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("The answer is 105.", contains="15 * 7")
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - prompt: What is 15 * 7?\n    checks: [{match: '*105*'}]\n",
            metadata="  system_prompt: You are terse.\n",
        ),
        scripted_server,
    )
    result = only_eval(report)
    assert (result.status, result.passed_on_turn, len(result.turns)) == (Status.PASS, 1, 1)
    assert sent_messages(scripted_server, 0) == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 15 * 7?"},
    ]


def test_attached_follow_up_wins_over_standalone(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("100", turn=1)
    scripted_server.add_rule("105", turn=2)
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - prompt: What is 15 * 7?\n"
            "    checks:\n"
            "      - min_tokens: 0\n"
            "      - match: '*105*'\n"
            "        prompt: ATTACHED\n"
            "        checks: [{match: '*105*'}]\n"
            "      - prompt: STANDALONE\n"
            "        checks: [{match: '*105*'}]\n"
        ),
        scripted_server,
    )
    result = only_eval(report)
    assert (result.status, result.passed_on_turn) == (Status.PASS, 2)
    assert sent_messages(scripted_server, 1) == [
        {"role": "user", "content": "What is 15 * 7?"},
        {"role": "assistant", "content": "100"},
        {"role": "user", "content": "ATTACHED"},
    ]
    assert [c.passed for c in result.turns[0].checks] == [True, False]


def test_first_failed_check_with_attached_follow_up_in_document_order(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("nothing useful", turn=1)
    run_text(
        tmp_path,
        suite_yaml(
            "  - prompt: q\n"
            "    checks:\n"
            "      - match: '*a*'\n"
            "      - match: '*zzz*'\n"
            "        prompt: FIRST\n"
            "        checks: [{match: x}]\n"
            "      - match: '*yyy*'\n"
            "        prompt: SECOND\n"
            "        checks: [{match: x}]\n"
        ),
        scripted_server,
    )
    assert sent_messages(scripted_server, 1)[-1]["content"] == "FIRST"


def test_standalone_follow_up_when_failed_checks_carry_none(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("wrong", turn=1)
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - prompt: q\n"
            "    checks:\n"
            "      - match: '*right*'\n"
            "      - match: '*ok*'\n"
            "        prompt: NOT-THIS\n"
            "        checks: [{match: x}]\n"
            "      - prompt: STANDALONE\n"
            "        checks: [{match: '*right*'}]\n"
        ),
        scripted_server,
    )
    # '*ok*' fails too, and it carries a follow-up, so it wins.
    assert sent_messages(scripted_server, 1)[-1]["content"] == "NOT-THIS"
    assert only_eval(report).status is Status.FAIL


def test_or_level_follow_up_fires_only_when_all_members_fail(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("four", contains="2 + 2")
    scripted_server.add_rule("banana", contains="3 + 3")
    scripted_server.add_rule("6", contains="AGAIN")
    evals = (
        "  - prompt: What is 2 + 2?\n"
        "    checks:\n"
        "      or:\n"
        "        - match: '*4*'\n"
        "        - match: '*four*'\n"
        "        - prompt: AGAIN\n"
        "          checks: [{match: '*4*'}]\n"
        "  - prompt: What is 3 + 3?\n"
        "    checks:\n"
        "      or:\n"
        "        - match: '*6*'\n"
        "        - match: '*six*'\n"
        "        - prompt: AGAIN\n"
        "          checks: [{match: '*6*'}]\n"
    )
    report = run_text(tmp_path, suite_yaml(evals), scripted_server)
    first, second = report.suites[0].evals
    assert (first.status, first.passed_on_turn, len(first.turns)) == (Status.PASS, 1, 1)
    assert (second.status, second.passed_on_turn, len(second.turns)) == (Status.PASS, 2, 2)
    assert [(c.type, c.depth) for c in first.turns[0].checks] == [
        ("or", 0), ("match", 1), ("match", 1)]


def test_or_item_inside_a_list_level(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("Four.")
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - prompt: q\n"
            "    checks:\n"
            "      - or: [{match: '*4*'}, {match: '*four*'}]\n"
            "      - not_match: '*five*'\n"
        ),
        scripted_server,
    )
    checks = only_eval(report).turns[0].checks
    assert [(c.type, c.passed, c.depth) for c in checks] == [
        ("or", True, 0),
        ("match", False, 1),
        ("match", True, 1),
        ("not_match", True, 0),
    ]


def nested(levels: int) -> str:
    lines = ["  - prompt: turn 1", "    checks:", "      - match: '*done*'"]
    indent = "      "
    for level in range(2, levels + 2):
        lines += [
            f"{indent}- prompt: turn {level}",
            f"{indent}  checks:",
            f"{indent}    - match: '*done*'",
        ]
        indent += "    "
    return "\n".join(lines) + "\n"


def test_six_turn_path_keeps_the_whole_conversation(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("done", contains="turn 6")
    scripted_server.add_rule(lambda body: f"not yet ({len(body['messages'])})")
    result = only_eval(run_text(tmp_path, suite_yaml(nested(5)), scripted_server))
    assert (result.status, result.passed_on_turn, len(result.turns)) == (Status.PASS, 6, 6)
    last = sent_messages(scripted_server, 5)
    assert [m["role"] for m in last] == ["user", "assistant"] * 5 + ["user"]
    assert [m["content"] for m in last if m["role"] == "user"] == [f"turn {n}" for n in range(1, 7)]
    assert last[1]["content"] == "not yet (1)"


def test_fail_after_last_level(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("never")
    result = only_eval(run_text(tmp_path, suite_yaml(nested(2)), scripted_server))
    assert (result.status, result.passed_on_turn, len(result.turns)) == (Status.FAIL, None, 3)
    assert result.error is None


def test_pass_fail_and_error_are_distinguished(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("yes", contains="PASS")
    scripted_server.add_rule("no", contains="FAIL")
    scripted_server.add_rule(fault="bad_request", contains="ERROR")
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - {prompt: PASS, checks: [{match: 'yes'}]}\n"
            "  - {prompt: FAIL, checks: [{match: 'yes'}]}\n"
            "  - {prompt: ERROR, checks: [{match: 'yes'}]}\n"
        ),
        scripted_server,
    )
    statuses = [(e.status, e.error is not None) for e in report.suites[0].evals]
    assert statuses == [(Status.PASS, False), (Status.FAIL, False), (Status.ERROR, True)]
    assert (report.totals.passed, report.totals.failed, report.totals.errors) == (1, 1, 1)


def test_judge_verdicts_and_usage_are_separate(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    judge = "exacting evaluator"
    scripted_server.add_rule(
        '```json\n{"pass": true, "reason": "polite"}\n```',
        when=lambda b: judge in str(b) and "GOOD" in str(b),
        usage=(50, 7),
    )
    scripted_server.add_rule("I am not JSON", when=lambda b: judge in str(b), usage=(50, 4))
    scripted_server.add_rule("Hello GOOD", contains="greet", usage=(10, 3))
    scripted_server.add_rule("Hello", usage=(10, 2))
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - {prompt: greet me, checks: [{llm_judge: {criteria: polite}}]}\n"
            "  - {prompt: hi, checks: [{llm_judge: {criteria: polite}}]}\n"
        ),
        scripted_server,
    )
    good, bad = report.suites[0].evals
    assert (good.status, good.usage.input_tokens, good.usage.output_tokens) == (Status.PASS, 10, 3)
    assert (good.judge_usage.input_tokens, good.judge_usage.output_tokens) == (50, 7)
    assert bad.status is Status.ERROR and "not JSON" in (bad.error or "")
    judge_request = next(r for r in scripted_server.requests
                         if judge in str(r.json) and "greet me" in str(r.json))
    conversation = judge_request.json["messages"][-1]["content"]
    assert "greet me" in conversation and "Hello GOOD" in conversation and "polite" in conversation


def test_semantic_similarity_uses_embeddings(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("the sky is blue today")
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - prompt: colour?\n"
            "    checks:\n"
            "      - semantic: {expected: the sky is blue today, threshold: 0.99}\n"
            "      - semantic: {expected: bananas are yellow fruit, threshold: 0.5}\n"
        ),
        scripted_server,
    )
    first, second = only_eval(report).turns[0].checks
    assert first.passed and "similarity 1.000" in first.detail
    assert not second.passed and second.error is None
    assert only_eval(report).judge_usage.input_tokens > 0


def test_templates_render_vars_and_secrets(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("ok")
    report = run_text(
        tmp_path,
        suite_yaml(
            "  - prompt: \"{{var('city')}} {{secret('TC_TOKEN')}}\"\n    checks: [{match: ok}]\n"
            "  - prompt: \"{{var('missing')}}\"\n    checks: [{match: ok}]\n",
            metadata="  vars: {city: Paris}\n",
        ),
        scripted_server,
        env={"TC_TOKEN": "tok-XYZ"},
    )
    ok, missing = report.suites[0].evals
    assert sent_messages(scripted_server, 0)[-1]["content"] == "Paris tok-XYZ"
    assert ok.status is Status.PASS
    assert missing.status is Status.ERROR and "missing" in (missing.error or "")

"""Issue 32, items 1 and 10: one odd answer never loses a run, and every turncheck reader
reads what the writer wrote.

A model may answer half a surrogate pair (`\\ud800`, legal in a JSON escape, not in
UTF-8) in a tool call's name or arguments, a provider's error text may hold one, and
tool-call arguments may nest hundreds of levels deep. None of that may cost the report
its other rows, and none of it may make `report`, `compare`, `merge` or the action's
bundle reader refuse the file the run wrote.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import Json, ScriptedServer, ToolCalls, tool_results
from turncheck.cli.main import main
from turncheck.compare.comparison import compare_reports
from turncheck.github.bundle import bundle_from_json
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.bundle import ReportBundle
from turncheck.report.model import MAX_VALUE_DEPTH, ReportModel
from turncheck.report.results import Status, ToolCallResult, TurnResult, writable
from turncheck.report.run import EvalResult, Report
from turncheck.report.spend import Usage

EVALS = 400
SURROGATE_ARGS, DEEP_ARGS, PROVIDER_ERROR, SURROGATE_NAME = 7, 8, 9, 10
DEEP = "[" * 300 + "]" * 300
SUITE_HEAD = """\
metadata:
  name: many
  model: gpt-4o-mini
  tools:
    - type: function
      function:
        name: look
        parameters: {type: object}
  tool_results:
    look:
      - result: found
evals:
"""


def suite_text() -> str:
    evals = "".join(f"  - name: e{i}\n    prompt: question {i}\n    checks: [{{match: '*'}}]\n"
                    for i in range(EVALS))
    return SUITE_HEAD + evals


def odd_model(body: Json) -> str | ToolCalls:
    """Answers "OK", except for the evals that get an odd tool call."""
    if tool_results(body):
        return "done"
    prompt = body["messages"][-1].get("content") or ""
    odd = {
        f"question {SURROGATE_ARGS}": ToolCalls((("look", '{"q": "half \ud800 a pair"}'),)),
        f"question {DEEP_ARGS}": ToolCalls((("look", '{"q": ' + DEEP + "}"),)),
        f"question {SURROGATE_NAME}": ToolCalls((("lo\udc00ok", "{}"),)),
    }
    return odd.get(prompt, "OK")


def with_provider_error(cassette: Path) -> None:
    """The recorded answer of eval e9 becomes an HTTP 400 whose error text holds a lone
    surrogate (as JSON escapes, the way a provider sends it)."""
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    [interaction] = [i for i in data["interactions"]
                     if f'"question {PROVIDER_ERROR}"' in i["request"]["body"]]
    error = {"error": {"message": "bad request \ud800 from the provider"}}
    interaction["response"]["status"] = {"code": 400, "message": "Bad Request"}
    interaction["response"]["body"] = {"string": json.dumps(error)}
    cassette.write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The suite, recorded against the scripted server, then the server stopped."""
    folder = tmp_path_factory.mktemp("odd")
    suite = write_suite(folder, suite_text(), "many.eval.yaml")
    with ScriptedServer(default_reply=odd_model) as server:
        run_paths([suite], server, mode="record")
        base_url = server.base_url
    with_provider_error(folder / "many.eval.cassette.yaml")
    return folder, base_url


def run_cli(*argv: str) -> int:
    return main(list(argv))


def replay(folder: Path, base_url: str, name: str, *extra: str) -> int:
    return run_cli("run", str(folder / "many.eval.yaml"), "--base-url", base_url, "--quiet",
                   "--price-timestamp", "2025-01-01T00:00:00Z", "--json",
                   str(folder / f"{name}.json"), *extra)


def test_odd_answers_among_400_evals_keep_every_row_in_every_report_and_reader(
    replayed: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, base_url = replayed
    replay(folder, base_url, "run", "--junit", str(folder / "run.xml"),
           "--html", str(folder / "run.html"))
    report = Report.model_validate_json((folder / "run.json").read_text(encoding="utf-8"))
    results = {e.name: e for e in report.suites[0].evals}
    assert len(results) == EVALS

    surrogate = results[f"e{SURROGATE_ARGS}"]
    assert surrogate.status is Status.PASS
    assert surrogate.turns[0].tool_calls[0].arguments == {"q": "half \ufffd a pair"}
    deep = results[f"e{DEEP_ARGS}"]
    assert deep.status is Status.ERROR
    assert f"arguments nested more than {MAX_VALUE_DEPTH} levels deep" in (deep.error or "")
    kept = deep.turns[0].tool_calls[0].arguments
    assert isinstance(kept, str) and kept.endswith(
        f"[kept as text by turncheck: nested more than {MAX_VALUE_DEPTH} levels deep]")
    failed = results[f"e{PROVIDER_ERROR}"]
    assert failed.status is Status.ERROR
    assert "bad request \ufffd from the provider" in (failed.error or "")
    assert results[f"e{SURROGATE_NAME}"].turns[0].tool_calls[0].name == "lo\ufffdok"
    assert sum(e.status is Status.PASS for e in results.values()) == EVALS - 3

    cases = ET.parse(folder / "run.xml").getroot().iter("testcase")
    assert len(list(cases)) == EVALS
    html = (folder / "run.html").read_text(encoding="utf-8")
    assert all(f">e{i}<" in html for i in (0, DEEP_ARGS, PROVIDER_ERROR, EVALS - 1))

    comment = comment_markdown(compare_reports(None, report),
                             CommentContext(fail_reasons=[], head=report))
    assert f"{EVALS - 3} of {EVALS} evals pass" in comment
    for name in (f"e{DEEP_ARGS}", f"e{PROVIDER_ERROR}"):
        assert name in comment

    # Every reader reads what the writer wrote.
    assert run_cli("report", str(folder / "run.json"), "--out", str(folder / "again.html")) == 0
    assert run_cli("compare", str(folder / "run.json"), str(folder / "run.json"),
                   "--json", str(folder / "comparison.json")) in (0, 1)
    assert run_cli("report", str(folder / "comparison.json"),
                   "--out", str(folder / "comparison.html")) == 0
    bundle = ReportBundle(repository="o/r", event="pull_request", head_sha="h" * 40,
                          head=report, base=report)
    read_back = bundle_from_json(bundle.model_dump_json().encode())
    assert len(read_back.head.suites[0].evals) == EVALS
    capsys.readouterr()


def test_shards_with_odd_answers_merge(replayed: tuple[Path, str],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder, base_url = replayed
    for index in (1, 2):
        replay(folder, base_url, f"shard{index}", "--shard", f"{index}/2")
    merged = folder / "merged.json"
    assert run_cli("merge", str(folder / "shard1.json"), str(folder / "shard2.json"),
                   "--json", str(merged)) == 1  # 3 evals errored
    assert "merge failed" not in capsys.readouterr().err
    report = Report.model_validate_json(merged.read_text(encoding="utf-8"))
    assert len(report.suites[0].evals) == EVALS


def test_a_row_that_cannot_be_written_becomes_an_error_row() -> None:
    turn = TurnResult(turn=1, prompt="p", response="r", usage=Usage(), cost_usd=None,
                      latency_ms=1.0)
    # Built without validation, as a future code path might: the report must survive it.
    broken = ToolCallResult.model_construct(round=1, name="x", arguments={"a": "\ud800"})
    turn.tool_calls.append(broken)
    row = EvalResult(name="odd", prompt="p", status=Status.PASS, passed_on_turn=1, error=None,
                     usage=Usage(), cost_usd=None, judge_usage=Usage(), judge_cost_usd=None,
                     turns=[turn])
    marked = writable(row)
    assert marked.status is Status.ERROR
    assert "turncheck could not write this result" in (marked.error or "")
    assert marked.turns == []
    json.loads(marked.model_dump_json())


@pytest.mark.parametrize("value", [
    {"name": "a\ud800b"},
    ["\udfff"],
    {"k\ud800": 1},
])
def test_report_models_make_every_string_well_formed(value: Any) -> None:
    call = ToolCallResult(round=1, name="n\ud800", arguments=value)
    json.loads(call.model_dump_json())  # no PydanticSerializationError
    assert call.name == "n\ufffd"
    copied = call.model_copy(update={"result": "r\ud800"})
    assert copied.result == "r\ufffd"
    copied.result = "\ud800"
    assert copied.result == "\ufffd"


def test_free_form_values_deeper_than_the_readers_accept_are_kept_as_marked_text() -> None:
    deep: Any = "leaf"
    for _ in range(150):
        deep = [deep]
    call = ToolCallResult(round=1, name="n", arguments={"q": deep})
    written = call.model_dump_json()
    assert "[kept as text by turncheck: nested more than 64 levels deep]" in written
    assert ToolCallResult.model_validate_json(written) == call
    assert issubclass(ToolCallResult, ReportModel)


def test_report_on_deeply_nested_json_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    code = run_cli("report", str(path))
    err = capsys.readouterr().err
    assert code == run_cli("report", str(bad)) == 2
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        f"turncheck: error: {path} is not a turncheck report: JSON nested deeper than 256 "
        "levels"]

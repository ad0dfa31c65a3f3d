"""Issue 32, item 4: the tool rounds of one turn share one byte budget.

Every round resends the whole conversation, so a model that sends megabytes of arguments
round after round (a suite may allow 64 rounds) made each request, and the run's memory,
grow with the number of rounds. What one turn's rounds add is now capped at one answer's
size; passing it is a clear error of that eval, and the other evals still run.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import Json, ScriptedServer, ToolCalls, tool_results
from turncheck.engine.tool_rounds import MAX_TOOL_ROUND_BYTES
from turncheck.report.results import Status

ARGUMENT_BYTES = 5 * 1024 * 1024
SUITE = """\
metadata:
  name: bulky
  model: gpt-4o-mini
  max_tool_rounds: 10
  tools:
    - type: function
      function:
        name: store
        parameters: {type: object}
  tool_results:
    store:
      - result: stored
evals:
  - name: bulky
    prompt: store everything
    checks: [{match: '*done*'}]
  - name: small
    prompt: store a little
    checks: [{match: '*done*'}]
"""


def storing_model(body: Json) -> str | ToolCalls:
    """Calls `store` with 5 MiB of arguments each round for "everything" (it never ends
    by itself within the budget); once, with a few bytes, otherwise."""
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    rounds = len(tool_results(body))
    if prompt == "store everything" and rounds < 8:
        return ToolCalls((("store", '{"blob": "' + "x" * ARGUMENT_BYTES + '"}'),))
    if prompt == "store a little" and rounds < 3:
        return ToolCalls.one("store", blob="tiny")
    return "done"


def test_a_turn_whose_rounds_pass_the_budget_errors_and_the_others_still_run(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.default_reply = storing_model
    report = run_paths([write_suite(tmp_path, SUITE)], scripted_server)
    results = {e.name: e for e in report.suites[0].evals}

    bulky = results["bulky"]
    assert bulky.status is Status.ERROR
    assert f"one turn's rounds may add at most {MAX_TOOL_ROUND_BYTES:,}" in (bulky.error or "")
    assert bulky.error is not None and bulky.error.startswith("turn 1: the tool rounds of "
                                                              "this turn added ")
    # It stopped at the round that passed the budget, not after max_tool_rounds.
    assert bulky.turns[0].rounds == MAX_TOOL_ROUND_BYTES // ARGUMENT_BYTES + 1
    resent = max(sum(len(call["function"]["arguments"]) for message in r.json["messages"]
                     for call in message.get("tool_calls") or ())
                 for r in scripted_server.requests)
    assert resent < MAX_TOOL_ROUND_BYTES  # no request carried more than the budget

    small = results["small"]
    assert small.status is Status.PASS and small.turns[0].rounds == 4

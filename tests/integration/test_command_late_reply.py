"""Issue 46, item 2: a command target's reply that comes after its turn timed out is
dropped, never read as the next turn's (the app answers in order, one line at a time)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.target_helpers import APPS
from turncheck.report.results import Status
from turncheck.targets import provider

SLOW_APP = APPS / "slow_first_app.py"
SUITE = f"""\
metadata:
  name: late
  target:
    command: [{sys.executable}, {SLOW_APP}]
    env: {{SLOW_SECONDS: "3"}}
evals:
  - name: a-slow-first-turn
    prompt: be slow
    checks:
      - match: "*answer to: be slow*"
      - prompt: second
        checks:
          - match: "*answer to: second*"
  - name: the-next-eval
    prompt: hello
    checks:
      - match: "*answer to: hello*"
      - prompt: again
        checks:
          - match: "*answer to: again*"
"""


def test_a_late_reply_is_dropped_and_never_graded_as_another_turn_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
        ) -> None:
    monkeypatch.setattr(provider, "DEFAULT_TURN_TIMEOUT_S", 2.0)
    report = run_paths([write_suite(tmp_path, SUITE)], None, "replay", concurrency=1)
    slow, following = report.suites[0].evals
    assert following.status == Status.PASS, following.error
    assert [t.response for t in following.turns] == ["answer to: hello"]
    assert slow.status == Status.ERROR
    assert [t.response for t in slow.turns if t.response] == []  # nothing graded
    assert slow.error is not None and "no reply line within 2s" in slow.error
    assert "dropped" in slow.error
    assert "late reply to line 1 " in caplog.text

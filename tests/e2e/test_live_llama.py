"""Live mode against a real OpenAI-compatible server (llama.cpp + Gemma 3 270M)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.llama import LlamaServer
from turncheck.engine.session import SessionSettings
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.report.results import Status

pytestmark = pytest.mark.live
# llama.cpp on a 2-core CPU answers one request at a time: generous timeouts.
SLOW = SessionSettings(timeout_s=300, attempts=2, backoff_base_s=0.1)


def live_suite(server: LlamaServer) -> str:
    return f"""metadata:
  name: live-gemma
  model: {server.chat_model}
  provider: openai
  base_url: {server.base_url}
  embedding_model: {server.embedding_model}
  system_prompt: You are a helpful assistant. Be brief.
  temperature: 0
  seed: 1
  max_output_tokens: 12
evals:
  - name: multiply
    prompt: What is 15 * 7?
    checks:
      - match: "*105*"
      - prompt: "Hint: 15 * 7 = 10*7 + 5*7. What is the answer?"
        checks:
          - max_tokens: 12
  - name: similar
    prompt: Say hello.
    checks:
      - semantic: {{expected: "Hello!", threshold: 0.0}}
  - name: judged
    prompt: Name a colour.
    checks:
      - llm_judge: {{criteria: The reply names a colour.}}
"""


def test_live_run_talks_to_a_real_server(tmp_path: Path, llama_server: LlamaServer) -> None:
    path = write_suite(tmp_path, live_suite(llama_server))
    report = run_paths([path], None, mode="live", provider=None, base_url=None, session=SLOW)
    multiply, similar, judged = report.suites[0].evals
    assert multiply.status in (Status.PASS, Status.FAIL), multiply.error
    assert multiply.turns and multiply.turns[0].response
    assert multiply.usage.input_tokens > 0 and multiply.usage.output_tokens > 0
    assert multiply.turns[0].output_tokens_estimated is False
    # Threshold 0 and a real embedding call: the check runs and passes.
    assert similar.status is Status.PASS, similar.error
    assert similar.judge_usage.input_tokens >= 0
    # The answer is not the prompt echoed back (served as a plain completion model).
    assert "What is 15 * 7" not in multiply.turns[0].response, multiply.turns[0].response
    # The judge's answer is constrained to its JSON schema (a llama.cpp grammar):
    # always a verdict, never a "not JSON" error.
    assert judged.status in (Status.PASS, Status.FAIL), judged.error
    assert report.totals.unpriced_models == [llama_server.chat_model] or (
        llama_server.chat_model in report.totals.unpriced_models
    )


def test_record_live_then_replay_offline(tmp_path: Path, llama_server: LlamaServer) -> None:
    path = write_suite(tmp_path, live_suite(llama_server))
    recorded = run_paths([path], None, mode="record", provider=None, base_url=None, session=SLOW)
    assert cassette_path_for(path).exists()
    replayed = run_paths([path], None, mode="replay", provider=None, base_url=None, session=SLOW)
    for before, after in zip(recorded.suites[0].evals, replayed.suites[0].evals, strict=True):
        assert (before.status, before.passed_on_turn, before.usage) == (
            after.status,
            after.passed_on_turn,
            after.usage,
        )
        assert [t.response for t in before.turns] == [t.response for t in after.turns]

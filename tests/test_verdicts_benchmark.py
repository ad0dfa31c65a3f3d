"""The stochastic model of benchmarks/verdicts.py is honest: its answers pass at the
rate the prompt sets, samples and the two sides draw independently, and the same
request always gets the same answer (so the benchmark's figures are reproducible).
The figures themselves are the benchmark's (timing never lives in a test)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "verdicts.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verdicts_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def request(prompt: str, seed: int | None, turn: int = 1) -> dict[str, Any]:
    messages: list[dict[str, str]] = []
    for number in range(turn):
        messages.append({"role": "user", "content": prompt if number == 0 else "try again"})
        if number < turn - 1:
            messages.append({"role": "assistant", "content": "FAIL"})
    return {"model": "gpt-4o-mini", "messages": messages, "seed": seed}


def passes(model: Any, prompt: str, samples: range, turn: int = 1) -> list[bool]:
    return [model(request(prompt, seed, turn)) == "PASS" for seed in samples]


def test_samples_pass_at_the_prompts_rate_on_each_turn(bench: ModuleType) -> None:
    model = bench.StochasticModel(1)
    first = passes(model, "case drop/pr0001/e0 [p=0.3|0.9]", range(1, 4001))
    second = passes(model, "case drop/pr0001/e0 [p=0.3|0.9]", range(1, 4001), turn=2)
    assert 0.27 < sum(first) / 4000 < 0.33
    assert 0.88 < sum(second) / 4000 < 0.92
    assert model.calls["drop"] == 8000


def test_same_request_same_answer_other_side_independent(bench: ModuleType) -> None:
    prompt = "case null/pr0002/e2 [p=0.5]"
    base, again, head = (bench.StochasticModel(seed) for seed in (10, 10, 11))
    samples = range(1, 2001)
    base_answers = passes(base, prompt, samples)
    assert passes(again, prompt, samples) == base_answers
    differ = sum(b != h for b, h in zip(base_answers, passes(head, prompt, samples), strict=True))
    assert 0.45 < differ / 2000 < 0.55  # independent draws at p = 0.5 differ half the time
    other_pr = passes(base, "case null/pr0003/e2 [p=0.5]", samples)
    assert 0.45 < sum(b != o for b, o in zip(base_answers, other_pr, strict=True)) / 2000 < 0.55


def test_a_request_without_a_sample_seed_is_refused(bench: ModuleType) -> None:
    """Without `seed` every sample of an eval would get the same answer."""
    with pytest.raises(ValueError, match="not a benchmark request"):
        bench.StochasticModel(1)(request("case null/pr0001/e0 [p=0.5]", None))


def test_suites_set_the_seed_and_the_prompt_the_model_reads(bench: ModuleType) -> None:
    text = bench.suite_yaml("shift", 7, "0.8|1.0", 20)
    assert "  seed: 1\n  repeat: auto\n  max_repeat: 20\n" in text
    assert 'prompt: "case shift/pr0007/e0 [p=0.8|1.0]"' in text
    assert bench.PROMPT.match("case shift/pr0007/e0 [p=0.8|1.0]")

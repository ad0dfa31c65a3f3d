"""Issue 32, item 2: what a report stores of a prompt is bounded and shared.

A suite whose evals all reference one long prompt file used to copy the file into the
report once per eval (3,000 evals and a 1 MiB file: 3.6 GB and no report at all). Now
each prompt keeps at most `MAX_REPORT_PROMPT_CHARS` (what a prompt diff compares), and a
long one is written once per report under its digest; the prompt-change diffs of the
comment still work on reports read back from JSON.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from tests.golden.test_comment_rendering import comment_for
from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import ScriptedServer
from turncheck.report.results import MAX_REPORT_PROMPT_CHARS, Status
from turncheck.report.run import Report

MAXRSS = Path(__file__).parents[1] / "support" / "maxrss.py"
MIB = 1024 * 1024
WORDS = ("alpha", "beta", "gamma", "delta", "policy", "refund", "customer", "answer")


def prompt_text(chars: int, seed: int = 1) -> str:
    """Sentences of random words (not one repeated line: a diff must find its way)."""
    rng = random.Random(seed)
    lines: list[str] = []
    size = 0
    while size < chars:
        line = " ".join(rng.choice(WORDS) for _ in range(12)) + ".\n"
        lines.append(line)
        size += len(line)
    return "".join(lines)[:chars]


def many_evals_suite(folder: Path, evals: int) -> Path:
    (folder / ".git").mkdir()
    (folder / "prompt.md").write_text(prompt_text(MIB), encoding="utf-8")
    entries = "".join(f"  - name: e{i}\n    prompt: {{file: prompt.md}}\n"
                      f"    checks: [{{match: '*'}}]\n" for i in range(evals))
    # A var the run does not set: every eval errors before any call, as in a CI job
    # that forgot one; the report must still hold every eval, and cheaply.
    text = ("metadata:\n  name: big\n  model: gpt-4o-mini\n"
            "  system_prompt: \"Answer for {{var('region')}}.\"\nevals:\n" + entries)
    return write_suite(folder, text, "big.eval.yaml")


def test_3000_evals_sharing_a_1_mib_prompt_file_make_a_small_report(tmp_path: Path) -> None:
    suite = many_evals_suite(tmp_path, 3000)
    out, peak = tmp_path / "report.json", tmp_path / "peak"
    # The address-space cap only keeps a regression from taking the machine down.
    command = (f"ulimit -v 2500000; exec {sys.executable} {MAXRSS} {peak} {sys.executable} "
               f"-m turncheck run {suite} --quiet --json {out}")
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert out.stat().st_size < 50 * 1_000_000
    assert int(peak.read_text(encoding="utf-8")) < 500 * 1024  # KiB

    data = json.loads(out.read_text(encoding="utf-8"))
    assert len(data["prompts"]) == 1  # written once, not 3,000 times
    [shared] = data["prompts"].values()
    report = Report.model_validate_json(out.read_text(encoding="utf-8"))
    evals = report.suites[0].evals
    assert len(evals) == 3000 and {e.status for e in evals} == {Status.ERROR}
    first = evals[0]
    assert first.prompt == shared and first.prompt is evals[-1].prompt
    assert first.prompt_chars == MIB
    assert first.prompt.startswith((tmp_path / "prompt.md").read_text()[:MAX_REPORT_PROMPT_CHARS])
    assert first.prompt.endswith(f"the prompt had {MIB:,} characters; the report keeps the "
                                 f"first {MAX_REPORT_PROMPT_CHARS:,}]")
    # What users read in place is still the prompt (its start), with a pointer.
    assert data["suites"][0]["evals"][0]["prompt"].startswith(shared[:100])
    assert "under `prompts`" in data["suites"][0]["evals"][0]["prompt"]


def run_with_prompt(folder: Path, server: ScriptedServer, prompt: str) -> Report:
    (folder / "prompt.md").write_text(prompt, encoding="utf-8")
    suite = write_suite(folder, "metadata:\n  name: long\n  model: gpt-4o-mini\nevals:\n"
                        "  - name: support\n    prompt: {file: prompt.md}\n"
                        "    checks: [{match: '*OK*'}]\n", "long.eval.yaml")
    written = run_paths([suite], server).model_dump_json()
    return Report.model_validate_json(written)


def test_prompt_changes_in_long_prompts_still_show_in_the_comment(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    (tmp_path / ".git").mkdir()
    base_text = prompt_text(60_000)
    early = base_text.replace(base_text[1_000:1_100], "Never promise a refund. " * 4, 1)
    escalate = "Always escalate to a human.\n"  # replaces as many characters: same length
    late = base_text[:50_000] + escalate + base_text[50_000 + len(escalate):]
    base = run_with_prompt(tmp_path, scripted_server, base_text)
    scripted_server.default_reply = "NO"  # head fails: the comment shows its transcript

    body, _, _ = comment_for(base, run_with_prompt(tmp_path, scripted_server, early))
    assert "Turn 1 prompt changed" in body and "Never promise a refund" in body

    # A change past what the report keeps of the prompt: told apart by the digest.
    body, _, _ = comment_for(base, run_with_prompt(tmp_path, scripted_server, late))
    assert "1 · head" in body

    body, _, _ = comment_for(base, run_with_prompt(tmp_path, scripted_server, base_text))
    assert "1 broke" in body and "| 1 | " in body and "1 · head" not in body

"""Validation throughput: generate 1,000 suite files and validate them.

Prints files/second and the time against the 2-second target for 1,000 files
(the issue's bound on a 2-core machine), and the time bare PyYAML takes to read and
compose the same files with its C loader (`yaml.CSafeLoader`, nodes with marks):
validation (safe reads, the depth guard, conversion, checks) should stay within 3x
of that. Run: python benchmarks/validate.py [N]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

from turncheck.formats.discovery import discover
from turncheck.formats.validation import ValidationResult, validate_files

TARGET_SECONDS_PER_1000 = 2.0
TARGET_RATIO_TO_BARE_PYYAML = 3.0
RUNS = 3


def suite_text(index: int) -> str:
    evals = []
    for e in range(6):
        evals.append(f"""  - name: eval-{e}
    prompt: "Question {index}-{e}: what is {e} * 7? Use {{{{var('style')}}}}."
    checks:
      - match: "*{e * 7}*"
      - not_match: "*error*"
      - or:
          - min_tokens: 1
          - max_tokens: 200
      - prompt: That is wrong. Recalculate {e} * 7.
        checks:
          - match: "*{e * 7}*"
          - semantic: {{expected: "The answer is {e * 7}.", threshold: 0.8}}
          - prompt: "Hint: add {e} seven times."
            checks:
              - llm_judge: {{criteria: "States {e * 7} as the result."}}
""")
    return (
        f"metadata:\n  name: generated-{index}\n  model: openai/gpt-4o-mini\n"
        f"  system_prompt: You are terse.\n  threads: 4\nevals:\n" + "".join(evals)
    )


def bare_pyyaml_seconds(root: Path) -> tuple[float, float]:
    """Reading and composing every file with PyYAML's C loader, nothing else (wall, CPU)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    start, cpu = time.perf_counter(), time.process_time()
    for path in sorted(root.glob("*.eval.yaml")):
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=loader)
        assert node is not None and node.start_mark is not None
    return time.perf_counter() - start, time.process_time() - cpu


def validation_seconds(root: Path) -> tuple[ValidationResult, float, float]:
    """Discovering and validating every file as `turncheck validate` does (wall, CPU)."""
    start, cpu = time.perf_counter(), time.process_time()
    found = discover([str(root)])
    result = validate_files(found.files)
    return result, time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for index in range(count):
            (root / f"suite-{index:04d}.eval.yaml").write_text(suite_text(index))
        # Best of a few alternating runs of each (as timeit does): the machine may be
        # shared, and the ratio compares figures measured side by side.
        bare = bare_cpu = elapsed = cpu = float("inf")
        for _ in range(RUNS):
            bare_wall, bare_process = bare_pyyaml_seconds(root)
            bare, bare_cpu = min(bare, bare_wall), min(bare_cpu, bare_process)
            result, wall, process = validation_seconds(root)
            elapsed, cpu = min(elapsed, wall), min(cpu, process)
            files, errors = result.files, sum(d.is_error for d in result.diagnostics)
            del result  # one run's suites alive at a time, as in the CLI
    bound = TARGET_SECONDS_PER_1000 * count / 1000
    print(f"validated {files} files ({errors} errors) in {elapsed:.3f}s ({cpu:.3f}s CPU); "
          f"best of {RUNS} runs, load average {os.getloadavg()[0]:.2f}")
    print(f"throughput: {files / elapsed:,.0f} files/s")
    print(f"target: {bound:.2f}s for {count} files; ratio elapsed/target = {elapsed / bound:.2f}")
    print(f"bare PyYAML (CSafeLoader compose, with marks): {bare:.3f}s ({bare_cpu:.3f}s CPU); "
          f"ratio validation/bare = {elapsed / bare:.2f} (target <= "
          f"{TARGET_RATIO_TO_BARE_PYYAML:g}), in CPU time {cpu / bare_cpu:.2f}")


if __name__ == "__main__":
    main()

"""Issue 32, item 9: the replay-miss hint costs a pass over what was sent, not evals ×
referenced files × their size.

When replay misses, the error names the referenced file that changed since recording.
Finding it searched every file's text in every message of the request: 200 evals, each
with its own 1 MiB prompt file, took minutes to say so, against seconds to validate.
"""

from __future__ import annotations

import json
import random
import time

from turncheck.engine.stale import RecordedTexts, stale_reference_hint
from turncheck.formats.references import Reference
from turncheck.providers.base import ChatMessage

FILES = 200
GENEROUS_SECONDS = 10.0  # takes about 0.3 s; minutes when the search is quadratic


def test_200_evals_with_their_own_1_mib_prompt_files_get_their_hints_quickly() -> None:
    rng = random.Random(1)
    text = "".join(rng.choice("abcdefgh ") for _ in range(1024 * 1024))
    system = "You are support.\n" + text[:700_000] + text[:800_000]
    references = [Reference(f"prompts/p{i:03d}.md", "digest", (f"prompt {i:03d}\n{text}",))
                  for i in range(FILES)]
    recorded_before = [json.dumps({"messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": f"prompt {i:03d} (as recorded)\n{text}"}]}).encode()
        for i in range(20)]
    recorded = RecordedTexts(recorded_before)
    started = time.perf_counter()
    hints = []
    for reference in references:
        sent = [ChatMessage("system", system), ChatMessage("user", reference.texts[0])]
        hints.append(stale_reference_hint(references, sent, recorded))
        assert time.perf_counter() - started < GENEROUS_SECONDS
    assert hints[7] == "prompts/p007.md changed since the cassette was recorded"
    assert len(set(hints)) == FILES


def test_a_file_the_recording_still_carries_is_named_as_carried() -> None:
    reference = Reference("prompts/support.md", "digest", ("Refund window: 30 days.",))
    recorded = RecordedTexts([json.dumps({"messages": [
        {"role": "system", "content": "Refund window: 30 days.\n"}]}).encode()])
    sent = [ChatMessage("system", "Refund window: 30 days."), ChatMessage("user", "Hi")]
    assert stale_reference_hint([reference], sent, recorded) == (
        "the request carries text from prompts/support.md")
    assert stale_reference_hint([reference], [ChatMessage("user", "Hi")], recorded) is None

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

import pytest

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


def test_200_identical_1_mib_prompt_files_are_each_hashed_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46, item 9: files with the same text were compared byte by byte with every
    sent message on every miss (10.6 s of a 37 s run); each file's text is now hashed
    once, each sent message once per miss, and compared by digest."""
    from turncheck.engine import stale

    hashed: list[int] = []
    digest = stale.text_digest

    def counted(text: str) -> bytes:
        hashed.append(len(text))
        return digest(text)

    monkeypatch.setattr(stale, "text_digest", counted)
    text = "same prompt\n" + "x" * (1024 * 1024)
    references = [Reference(f"prompts/p{i:03d}.md", "same", (text,)) for i in range(FILES)]
    recorded = RecordedTexts([json.dumps({"messages": [
        {"role": "user", "content": "an older prompt"}]}).encode()])
    hints = [stale_reference_hint(references, [ChatMessage("user", text)], recorded)
             for _ in range(FILES)]
    assert hints[0] is not None and hints[0].startswith("prompts/p000.md, prompts/p001.md")
    assert len(set(hints)) == 1
    megabyte_hashes = sum(1 for size in hashed if size > 1024 * 1024)
    assert megabyte_hashes == FILES + FILES  # each file once, each miss's message once

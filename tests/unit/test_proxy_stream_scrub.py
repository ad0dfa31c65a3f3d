"""Issue 46, item 3: a streamed answer is scrubbed of turncheck's keys chunk by chunk,
wherever the upstream splits a key between two chunks."""

from __future__ import annotations

import base64

from turncheck.targets.proxy_gate import AnswerScrubber

KEY = "sk-proj-" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz"


def test_a_key_split_at_any_byte_between_two_chunks_never_reaches_the_app() -> None:
    scrubber = AnswerScrubber([KEY, None])
    encoded = base64.b64encode(KEY.encode()).decode()
    event = f'data: {{"echo": "{KEY}", "again": "{encoded}"}}\n\n'.encode()
    for split in range(1, len(event)):
        stream = scrubber.stream()
        passed = stream.feed(event[:split]) + stream.feed(event[split:]) + stream.end()
        secret = KEY.removeprefix("sk-proj-").encode()
        pieces = {secret[i:i + 8] for i in range(len(secret) - 7)}
        assert not [p for p in pieces if p in passed], (split, passed)
        assert encoded.encode() not in passed and passed.endswith(b'"}\n\n')


def test_without_keys_a_stream_passes_unchanged_and_at_once() -> None:
    stream = AnswerScrubber([None, ""]).stream()
    assert stream.feed(b"data: sk-proj-") == b"data: sk-proj-"
    assert stream.end() == b""

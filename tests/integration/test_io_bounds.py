"""Issue 23: what a hostile provider answer or cassette can make the providers layer do.

Each test replays one attack from the issue against a server on 127.0.0.1 (or a cassette
in a temporary directory) and asserts it is now refused with a clear message, or
bounded. Peak memory is measured in a subprocess (tests/support/maxrss.py) with a generous
bound; the precise figures are printed by benchmarks/engine.py.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import string
import struct
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Mapping
from functools import cache
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.action_harness import PR, run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.local_http import QuietHandler, serving
from tests.support.provider_helpers import run
from tests.support.scripted_server import ScriptedServer
from turncheck.engine.redaction import Redactor
from turncheck.providers.aiohttp_transport import MAX_ANSWER_BYTES
from turncheck.providers.base import ChatMessage, ChatRequest, Provider, ProviderError
from turncheck.providers.cassette_file import (
    DEFAULT_MAX_CASSETTE_BYTES,
    MAX_INTERACTIONS,
    cassette_path_for,
)
from turncheck.providers.cassette_transport import CassetteTransport
from turncheck.providers.factory import make_provider
from turncheck.providers.http import RetryPolicy
from turncheck.providers.json_limits import MAX_JSON_DEPTH

ROOT = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(max_attempts=3, backoff_base=0.001, backoff_cap=0.005, timeout=10.0)
API_KEY = "sk-proj-Q7vLm2XpR9sKd4TnWb8YcE1fHj6Ua3Zo"


def ask(text: str) -> ChatRequest:
    return ChatRequest(model="gpt-4o-mini", messages=[ChatMessage("user", text)])


def openai_via(base_url: str, transport: httpx.AsyncBaseTransport | None = None,
               sleep: object = None, env: Mapping[str, str] | None = None) -> Provider:
    return make_provider(
        "openai", env={"OPENAI_API_KEY": API_KEY} if env is None else env, policy=FAST,
        transport=transport, base_url=base_url, sleep=sleep,  # type: ignore[arg-type]
    )


async def chat_all(provider: Provider, prompts: list[str]) -> list[str]:
    try:
        return [r.text for r in await asyncio.gather(*(provider.chat(ask(p)) for p in prompts))]
    finally:
        await provider.aclose()


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "INPUT_")) and not k.endswith("_API_KEY")}


def peak_kib(
    tmp_path: Path, script: str, *args: str
) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run `script` in a fresh interpreter; its peak RSS (KiB) and the finished process."""
    out = tmp_path / "maxrss.txt"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "maxrss.py"), str(out),
         sys.executable, "-c",
         textwrap.dedent(script), *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    return int(out.read_text()), done


# --- 5: answers are capped after decompression ---------------------------------------

@cache
def gzip_bomb() -> bytes:
    """About 1 MB of gzip that inflates to 1 GiB inside a JSON answer's content.

    Built in a second: the deflate output of each further MiB of `a` is the same once
    the window is full, so that block is repeated and the gzip header and trailer
    (CRC-32 and size of the whole) are written around it."""
    head, tail, block = b'{"choices": [{"message": {"content": "', b'"}}]}', b"a" * (1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = [packer.compress(head)] + [
        packer.compress(block) + packer.flush(zlib.Z_SYNC_FLUSH) for _ in range(3)
    ]
    assert first[2] == first[3]
    blocks = 1024
    deflated = b"".join(first) + first[3] * (blocks - 3) + packer.compress(tail) + packer.flush()
    crc = zlib.crc32(head)
    for _ in range(blocks):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + blocks * len(block) + len(tail)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + deflated + struct.pack("<II", crc, size & 0xFFFFFFFF)


def test_the_bomb_is_one_mb_that_inflates_a_thousandfold() -> None:
    data = gzip_bomb()
    assert len(data) < 1_100_000
    assert struct.unpack("<I", data[-4:])[0] == (1 << 30) + 43  # the size it declares
    inflated = zlib.decompressobj(31).decompress(data[:100_000], 200_000_000)
    assert len(inflated) > 90_000_000


class BombHandler(QuietHandler):
    def respond(self) -> None:
        self.read_body()
        bomb = gzip_bomb()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(bomb)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client hangs up early: what it should do
            self.wfile.write(bomb)


def test_gzip_bomb_answer_is_refused_early_at_bounded_memory(tmp_path: Path) -> None:
    assert len(gzip_bomb()) < 1_200_000
    server = ThreadingHTTPServer(("127.0.0.1", 0), BombHandler)
    with serving(server):
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        peak, done = peak_kib(tmp_path, """
            import asyncio, sys
            from turncheck.providers.base import ChatMessage, ChatRequest, ProviderError
            from turncheck.providers.factory import make_provider
            from turncheck.providers.http import RetryPolicy
            async def main():
                provider = make_provider("openai", env={"OPENAI_API_KEY": "sk-x-0000"},
                                         policy=RetryPolicy(max_attempts=3, backoff_base=0.001),
                                         base_url=sys.argv[1])
                try:
                    await provider.chat(ChatRequest("m", [ChatMessage("user", "hi")]))
                except ProviderError as exc:
                    print(exc.message)
                finally:
                    await provider.aclose()
            asyncio.run(main())
        """, base_url)
    assert done.returncode == 0, done.stderr
    assert f"larger than the {MAX_ANSWER_BYTES:,}-byte limit (counted after decompression)" \
        in done.stdout
    assert "Traceback" not in done.stderr
    assert "after 1 attempt" not in done.stdout and "attempts" not in done.stdout  # not retried
    assert peak < 250 * 1024, f"peak RSS {peak / 1024:.0f} MiB"


def test_an_oversized_plain_answer_fails_that_call_only(tmp_path: Path) -> None:
    big = "x" * (MAX_ANSWER_BYTES + 1)
    with ScriptedServer() as server:
        server.add_rule(big, contains="huge")
        server.add_rule("fine", contains="small")
        provider = openai_via(server.base_url)

        async def both() -> tuple[BaseException | str, ...]:
            try:
                return tuple(await asyncio.gather(
                    provider.chat(ask("huge")), provider.chat(ask("small")),
                    return_exceptions=True))
            finally:
                await provider.aclose()

        huge, small = run(both)
        assert isinstance(huge, ProviderError) and "byte limit" in huge.message
        assert getattr(small, "text", None) == "fine"
        assert len([r for r in server.requests if "huge" in json.dumps(r.json)]) == 1


# --- 6: record refuses what replay would refuse -----------------------------------------

def test_record_refuses_an_answer_that_would_make_the_cassette_unreplayable(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "s.eval.yaml"
    path = cassette_path_for(suite)
    limit = 40_000
    with ScriptedServer() as server:
        server.add_rule("y" * 15_000, contains="big")
        server.add_rule("small answer", contains="small")
        base_url = server.base_url
        for prompt in ("big 1", "big 2", "big 3", "small"):
            transport = CassetteTransport(path, "record", suite_path=suite, max_bytes=limit)
            try:
                texts = run(lambda p=prompt, t=transport: chat_all(openai_via(base_url, t), [p]))
                assert prompt in ("big 1", "big 2", "small"), texts
            except ProviderError as exc:
                assert prompt == "big 3"
                assert f"larger than the {limit:,}-byte limit replay accepts" in exc.message
            transport.save()
            run(transport.close)
            assert path.stat().st_size <= limit
    replayed = CassetteTransport(path, "replay", suite_path=suite, max_bytes=limit)
    assert replayed.load_error is None
    assert len(replayed) == 3
    texts = run(lambda: chat_all(openai_via(base_url, replayed, env={}),
                                 ["big 1", "big 2", "small"]))
    assert texts[2] == "small answer"


def test_the_answer_cap_is_below_the_cassette_cap() -> None:
    # A 60 MB answer used to make a 63 MB cassette that replay refused.
    assert MAX_ANSWER_BYTES * 2 < DEFAULT_MAX_CASSETTE_BYTES


# --- 7: one retry policy in every mode --------------------------------------------------

@pytest.mark.parametrize("mode", ["live", "record"])
def test_retry_after_is_honoured_in_live_and_record_mode(tmp_path: Path, mode: str) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with ScriptedServer() as server:
        server.add_rule(fault="rate_limit", retry_after="2", times=1)
        transport = (CassetteTransport(tmp_path / "c.cassette.yaml", "record")
                     if mode == "record" else None)
        texts = run(lambda: chat_all(openai_via(server.base_url, transport, sleep), ["hi"]))
        if transport is not None:
            run(transport.close)
    assert texts == ["OK"]
    assert waits == [2.0]


# --- 8: deep JSON is a diagnostic -------------------------------------------------------

def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 100_000])
def test_deep_json_in_a_cassette_request_body_is_a_clear_error(
    tmp_path: Path, levels: int
) -> None:
    path = tmp_path / "s.eval.cassette.yaml"
    path.write_text(
        "interactions:\n- request:\n    body: '" + deep(levels) + "'\n    headers: {}\n"
        "    method: POST\n    uri: http://127.0.0.1:9/v1/chat/completions\n"
        "  response:\n    body: {string: '{}'}\n    headers: {}\n"
        "    status: {code: 200, message: OK}\nversion: 1\n"
    )
    transport = CassetteTransport(path, "replay")
    assert transport.load_error is not None
    assert f"interaction 1 is malformed (JSON nested deeper than {MAX_JSON_DEPTH} levels)" \
        in transport.load_error
    with pytest.raises(ProviderError, match="nested deeper"):
        run(lambda: chat_all(openai_via("http://127.0.0.1:9/v1", transport, env={}), ["x"]))


@pytest.mark.parametrize("status", [200, 400])
def test_deep_json_answers_are_clear_errors(status: int) -> None:
    body = ('{"choices": ' + deep(50_000) + "}").encode()

    class DeepHandler(QuietHandler):
        def respond(self) -> None:
            self.read_body()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), DeepHandler)
    with serving(server):
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with pytest.raises(ProviderError) as caught:
            run(lambda: chat_all(openai_via(base_url), ["x"]))
    expected = "malformed JSON" if status == 200 else "HTTP 400"
    assert expected in caught.value.message


# --- 9/9b: interactions per cassette, memory of a replay ---------------------------------

def tiny_interactions(count: int) -> str:
    item = (
        "- request:\n    body: '{{\"n\":{n}}}'\n    headers: {{}}\n    method: POST\n"
        "    uri: http://127.0.0.1:9/v1/chat/completions\n  response:\n"
        "    body: {{string: '{{\"choices\":[]}}'}}\n    headers: {{}}\n"
        "    status: {{code: 200, message: OK}}\n"
    )
    return "interactions:\n" + "".join(item.format(n=n) for n in range(count)) + "version: 1\n"


def test_too_many_interactions_are_refused_while_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert MAX_INTERACTIONS == 100_000
    monkeypatch.setattr("turncheck.providers.cassette_file.MAX_INTERACTIONS", 1_000)
    path = tmp_path / "s.eval.cassette.yaml"
    path.write_text(tiny_interactions(1_001))
    transport = CassetteTransport(path, "replay")
    assert transport.load_error is not None
    assert "more than 1,000 interactions" in transport.load_error
    path.write_text(tiny_interactions(1_000))
    assert len(CassetteTransport(path, "replay")) == 1_000


def test_a_cassette_of_tiny_interactions_loads_in_memory_for_its_interactions_not_its_bytes(
    tmp_path: Path,
) -> None:
    """A hostile cassette of tiny interactions cost about 100 bytes of memory per byte of
    file (1.35 GB for 99,000 of them). Read here: 20,000 (4 MB; the peak grows by the
    interactions' compact form only, about 1 KiB each), and the same growth up to the
    largest cassette accepted (`MAX_INTERACTIONS`) stays under 400 MiB. A fifth of the
    limit proves the same linear cost in a fifth of the time (issue 21)."""
    count = 20_000
    path = tmp_path / "s.eval.cassette.yaml"
    path.write_text(tiny_interactions(count))
    assert path.stat().st_size > 4_000_000
    loading = """
        import sys
        from turncheck.providers.cassette_transport import CassetteTransport
        """
    baseline, _ = peak_kib(tmp_path, loading)
    peak, done = peak_kib(tmp_path, loading + """
        transport = CassetteTransport(sys.argv[1], "replay")
        print(transport.load_error, len(transport))
    """, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", str(count)]
    per_interaction = max(peak - baseline, 0) / count
    at_the_limit = baseline + per_interaction * MAX_INTERACTIONS
    assert per_interaction < 3, f"{per_interaction:.1f} KiB per interaction (was 12)"
    assert at_the_limit < 400 * 1024, f"{at_the_limit / 1024:.0f} MiB at the limit"


# --- 10: concurrent recorders ------------------------------------------------------------

RECORDER = """
    import asyncio, sys, time
    from pathlib import Path
    from turncheck.providers.base import ChatMessage, ChatRequest
    from turncheck.providers.cassette_transport import CassetteTransport
    from turncheck.providers.factory import make_provider
    from turncheck.providers.http import RetryPolicy
    cassette, base_url, me, other = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    async def main():
        transport = CassetteTransport(Path(cassette), "record")
        me.touch()
        while not other.exists():  # both have loaded the (empty) cassette before any call
            await asyncio.sleep(0.01)
        provider = make_provider("openai", env={"OPENAI_API_KEY": "sk-x-0000"},
                                 transport=transport, base_url=base_url,
                                 policy=RetryPolicy(max_attempts=1))
        requests = [ChatRequest("m", [ChatMessage("user", f"q{i}")]) for i in range(20)]
        answers = await asyncio.gather(*(provider.chat(r) for r in requests))
        await provider.aclose()
        transport.save()
        await transport.close()
        print(sum(a.replayed for a in answers))
    asyncio.run(main())
"""


def test_two_concurrent_recorders_never_pay_twice(tmp_path: Path) -> None:
    cassette = tmp_path / "s.eval.cassette.yaml"
    with ScriptedServer() as server:
        server.set_latency(0.2)
        ready = [tmp_path / "ready-1", tmp_path / "ready-2"]
        recorders = [
            subprocess.Popen(
                [sys.executable, "-c", textwrap.dedent(RECORDER), str(cassette),
                 server.base_url, str(ready[i]), str(ready[1 - i])],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            )
            for i in range(2)
        ]
        outputs = [r.communicate(timeout=120) for r in recorders]
        for recorder, (_, err) in zip(recorders, outputs, strict=True):
            assert recorder.returncode == 0, err
        paid = len(server.requests)
    assert paid == 20, f"{paid} calls paid for 20 kept"
    assert sorted(int(out) for out, _ in outputs) == [0, 20]
    assert len(CassetteTransport(cassette, "replay")) == 20


# --- 12: transformed forms of a secret ---------------------------------------------------

def transforms(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {
        "reversed": secret[::-1],
        "base64": base64.b64encode(raw).decode(),
        "base64 unpadded": base64.b64encode(raw).decode().rstrip("="),
        "base64 url-safe": base64.urlsafe_b64encode(b"\xfb\xff" + raw).decode(),
        "base64 inside a longer text": base64.b64encode(b"the key is " + raw).decode(),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "url-encoded": quote(secret, safe=""),
        "first half": secret[: len(secret) // 2],
        "second half": secret[len(secret) // 2:],
    }


def leaked(text: str, secret: str) -> list[str]:
    """The transforms (or telling pieces of them) of `secret` still in `text`."""
    found = [name for name, form in transforms(secret).items() if form in text]
    return found + [name + " (core)" for name, form in transforms(secret).items()
                    if len(form) > 24 and form[8:-8] in text]


def hostile_reply(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    last = str(messages[-1]["content"])
    names = list(transforms(API_KEY))
    if last.startswith("turn two"):
        return "and the rest: " + transforms(API_KEY)["second half"]
    picked = [n for n in names if n != "second half"]
    return " | ".join(f"{n}: {transforms(API_KEY)[n]}" for n in picked)


@pytest.mark.parametrize("mode", ["record", "live"])
def test_transformed_api_key_echoed_by_the_model_reaches_no_output(
    tmp_path: Path, mode: str
) -> None:
    suite = tmp_path / "echo.eval.yaml"
    with ScriptedServer() as server:
        server.add_rule(hostile_reply)
        suite.write_text(
            f"metadata: {{name: echo, model: gpt-4o-mini, provider: openai, "
            f"base_url: '{server.base_url}'}}\n"
            "evals:\n"
            "  - name: echo\n    prompt: turn one\n    checks:\n"
            "      - match: '*never*'\n"
            "      - prompt: turn two\n        checks: [{match: '*never*'}]\n"
        )
        report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
        done = subprocess.run(
            [sys.executable, "-m", "turncheck", "run", str(suite), "--mode", mode,
             "--json", str(report), "--junit", str(junit)],
            capture_output=True, text=True, cwd=ROOT, timeout=180,
            env={**clean_env(), "OPENAI_API_KEY": API_KEY},
        )
        assert server.requests, done.stdout + done.stderr
    outputs = {
        "console": done.stdout + done.stderr,
        "report": report.read_text(),
        "junit": junit.read_text(),
    }
    if mode == "record":  # the cassette scrubs what it stores and returns
        outputs["cassette"] = cassette_path_for(suite).read_text()
    placeholder = "<SECRET>" if mode == "record" else "[REDACTED]"
    assert outputs["report"].count(placeholder) >= len(transforms(API_KEY))
    for where, text in outputs.items():
        assert leaked(text, API_KEY) == [], where


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=16,
                   max_size=64),
    before=st.binary(max_size=12),
    after=st.binary(max_size=12),
)
def test_base64_of_a_secret_anywhere_in_a_longer_text_is_redacted(
    secret: str, before: bytes, after: bytes
) -> None:
    redactor = Redactor([secret])
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        text = encode(before + secret.encode() + after).decode()
        redacted = redactor.text(text)
        assert "[REDACTED]" in redacted
        # What is left can decode to at most a few bytes of the secret at either edge.
        assert len(redacted.replace("[REDACTED]", "")) <= len(text) - len(secret)


@settings(max_examples=200, deadline=None)
@given(secret=st.text(alphabet=string.ascii_letters + string.digits, min_size=16, max_size=64),
       cut=st.integers(min_value=0, max_value=64))
def test_a_secret_split_in_two_loses_every_piece_of_15_characters_or_more(
    secret: str, cut: int
) -> None:
    redactor = Redactor([secret])
    for piece in (secret[:cut], secret[cut:]):
        if len(piece) >= 15:
            assert piece not in redactor.text(f"turn: {piece} end")


def test_transformed_api_key_reaches_no_comment_or_check_run(
    tmp_path: Path, scripted_server: ScriptedServer, github_fake: FakeGitHub
) -> None:
    scripted_server.add_rule(hostile_reply)
    repo = GitRepo(tmp_path / "workspace")
    repo.write("README.md", "x")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    repo.write("evals/echo.eval.yaml",
               f"metadata: {{name: echo, model: gpt-4o-mini, provider: openai, "
               f"base_url: '{scripted_server.base_url}'}}\n"
               "evals:\n"
               "  - name: echo\n    prompt: turn one\n    checks:\n"
               "      - match: '*never*'\n"
               "      - prompt: turn two\n        checks: [{match: '*never*'}]\n")
    head = repo.commit("echo")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "live", "fail-on": "none"},
                           extra_env={"OPENAI_API_KEY": API_KEY})
    assert scripted_server.requests, run.stdout + run.stderr
    comments = github_fake.comments_on(PR)
    assert len(comments) == 1, run.stdout[-3000:] + run.stderr[-3000:]
    [comment] = comments
    [check] = github_fake.check_runs.values()
    console = run.stdout + run.stderr
    masks = [line for line in console.splitlines() if line.startswith("::add-mask::")]
    assert masks == [f"::add-mask::{API_KEY}"]  # GitHub hides the key from the log
    published = {
        "console": console.replace(masks[0], ""),
        "step summary": run.summary,
        "report": json.dumps(run.report),
        "comment": comment.body,
        "check run": json.dumps([check.output, check.annotations], default=str),
    }
    assert "[REDACTED]" in published["report"]
    for where, text in published.items():
        assert leaked(text, API_KEY) == [], where


def test_two_recorders_of_one_cassette_in_one_process_share_the_lock(tmp_path: Path) -> None:
    cassette = tmp_path / "x.eval.cassette.yaml"  # x.eval.yaml and x.eval.yml share it
    with ScriptedServer() as server:
        first = CassetteTransport(cassette, "record")
        second = CassetteTransport(cassette, "record")

        async def both() -> list[list[str]]:
            return list(await asyncio.wait_for(asyncio.gather(
                chat_all(openai_via(server.base_url, first), ["a"]),
                chat_all(openai_via(server.base_url, second), ["b"]),
            ), timeout=30))

        assert run(both) == [["OK"], ["OK"]]
        first.save()
        second.save()
        run(first.close)
        run(second.close)
    assert len(CassetteTransport(cassette, "replay")) == 2

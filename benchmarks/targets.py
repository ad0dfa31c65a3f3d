"""App targets: the recording proxy's CPU, an HTTP app's conversations, the python target.

Three measurements, each a ratio against a bound measured in the same run (run: python
benchmarks/targets.py --help); the script exits 1 when a target is missed:

1. proxy (`--only proxy`): the CPU per call of turncheck's recording proxy
   (`targets/proxy.py`), recording and replaying, against a minimal aiohttp
   pass-through proxy. Each proxy runs in a process of its own (this file with
   `--proxy KIND`), the scripted server in another, and the load comes from this
   process: the CPU counted is the proxy's alone (from /proc). Every run sends the same
   request bodies (each distinct, so recording records every one); replay answers
   what recording stored. Recording's figure includes writing the cassette at the end
   (its CPU divided by the calls recorded). Targets, at concurrency 1 and 64: recording
   <= 2 x the pass-through's CPU per call (it runs once per change of the app), replay
   <= 1 x (every pull request runs it). The median latency added at concurrency 1 is
   printed too.
1b. proxy-instructions (`--only proxy-instructions`, opt-in: minutes under valgrind):
   the same proxies, plus one without a cassette (live), counted in user-space
   instructions per call with callgrind, which repeat exactly run after run where CPU
   time on a loaded machine does not.
2. app (`--only app`): E conversations x T turns through an HTTP target and the proxy
   against the scripted server at 100 ms, against the same workload sent by a bare
   aiohttp client straight to the app, with the app calling the server directly. Both
   include starting the app and waiting until it is ready. The target as a user writes
   it (no `forwards_header`: the proxy tells each call's turn by the messages it
   carries) live, recording and replaying (the cassette just recorded: no model
   latency), and with `forwards_header: true` live. Target: <= 1.15 x each.
2b. latency (`--only latency`, opt-in: pairs of live runs): `fail-on: latency` at
   20 % on base and head of the app workload run live at the same time against the
   same scripted server, `--latency-pairs` times (default 20): the false alarms (target
   0), then once with head's server answering 300 ms later per call (target: caught).
3. python (`--only python`): the time a python target adds per turn: a call through
   the target (`TargetProvider.chat`: the turn, the proxy's attribution, the function
   call) minus calling the function directly, async and sync (a sync function runs in
   a worker thread through the target, so its hand-off is part of what is added).
   Target: <= 0.1 ms.
3b. python-concurrent (`--only python-concurrent`): the same with C conversations at once
   (`-C`): the target's turns concurrent (each naming its turn), a sync function in the
   target's pool of C threads, against calling the function from C tasks directly.
   Target: <= 0.1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.engine import (  # noqa: E402
    FAKE_KEY,
    PASSING_REPLY,
    Row,
    Server,
    checks_yaml,
    print_table,
    scripted,
)

PROXY_RATIO_TARGETS = {"record": 2.0, "replay": 1.0}
"""The proxy's CPU per call against a minimal pass-through: recording runs once per change
of the app, replay on every pull request."""
APP_RATIO_TARGET = 1.15
PYTHON_ADDED_TARGET_MS = 0.1
MODEL = "gpt-4o-mini"
PROXY_TOKEN = "turncheck-proxy-placeholder-key-benchmark"
"""The run token the benchmark's proxies serve (turncheck makes a random one per run)."""


def print_load() -> None:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average: {load}")


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Child:
    process: subprocess.Popen[str]
    port: int
    last_words: str = ""
    """What it printed after its stdin closed."""

    def cpu(self) -> float:
        return process_cpu(self.process.pid)


@contextmanager
def child(*arguments: str, env: dict[str, str] | None = None,
          prefix: tuple[str, ...] = ()) -> Iterator[Child]:
    """This file with `arguments` in a subprocess that prints its port, until stdin closes
    (`prefix`: a command it runs under, such as valgrind)."""
    process = subprocess.Popen([*prefix, sys.executable, __file__, *arguments],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env=env, stderr=subprocess.DEVNULL if prefix else None)
    assert process.stdin is not None and process.stdout is not None
    try:
        line = process.stdout.readline().strip()
        if not line.isdigit():
            raise SystemExit(f"{arguments[0]} child did not start (printed {line!r})")
        started = Child(process, int(line))
        yield started
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    started.last_words = process.stdout.read()


async def until_stdin_closes() -> None:
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# --------------------------------------------------------------------------- 1. proxy


async def minimal_proxy(upstream: str) -> None:
    """The floor: an aiohttp server that forwards the body and hands the answer back."""
    import aiohttp
    from aiohttp import web

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def forward(request: web.Request) -> web.Response:
        body = await request.read()
        url = upstream + request.path.removeprefix("/openai/v1")
        headers = {"content-type": "application/json", "authorization": f"Bearer {FAKE_KEY}"}
        async with session.request(request.method, url, data=body, headers=headers) as answer:
            content = await answer.read()
            return web.Response(status=answer.status, body=content, headers={
                "content-type": answer.headers.get("content-type", "application/json")})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    await until_stdin_closes()
    await runner.cleanup()
    await session.close()


async def turncheck_proxy(kind: str, upstream: str, cassette_path: str) -> None:
    from turncheck.providers.cassette_transport import CassetteTransport
    from turncheck.providers.cassettes import Cassette
    from turncheck.targets.proxy import ANTHROPIC_DEFAULT, RecordingProxy, Upstreams

    path = Path(cassette_path)
    # As a run opens it (`open_cassette`): the key the proxy sends upstream is a secret
    # every answer is searched for.
    cassette: Cassette | None = CassetteTransport(path, "record", secrets=[FAKE_KEY],
                                                  suite_path="bench.eval.yaml") \
        if kind == "record" else Cassette(path, "replay", secrets=[FAKE_KEY],
                                          suite_path="bench.eval.yaml") \
        if kind == "replay" else None  # live: passed through, nothing recorded
    proxy = RecordingProxy(cassette, Upstreams(upstream, ANTHROPIC_DEFAULT, FAKE_KEY, None))
    # The proxy serves only the bearer of its run's token (the app's placeholder key):
    # the benchmark's client sends a known one, as an app started by turncheck would.
    proxy.token = PROXY_TOKEN
    await proxy.start()
    print(proxy.port, flush=True)
    await until_stdin_closes()
    await proxy.stop()
    if isinstance(cassette, CassetteTransport):
        cpu = time.process_time()
        cassette.save()
        print(json.dumps({"save_cpu_s": time.process_time() - cpu,
                          "recorded": len(cassette)}), flush=True)
        await cassette.close()


def request_body(number: int) -> bytes:
    return json.dumps({"model": MODEL, "messages": [
        {"role": "user", "content": f"Question {number}: reply with the word done."}]}).encode()


async def send_calls(url: str, numbers: range, concurrency: int) -> list[float]:
    """POST each body at `concurrency`; the latency of each call in seconds."""
    import aiohttp

    latencies: list[float] = []
    pending = iter(numbers)
    headers = {"content-type": "application/json", "authorization": f"Bearer {PROXY_TOKEN}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def worker() -> None:
            for number in pending:
                started = time.perf_counter()
                async with session.post(url, data=request_body(number), headers=headers) as r:
                    await r.read()
                    if r.status != 200:
                        raise SystemExit(f"{url}: HTTP {r.status}: {(await r.text())[:300]}")
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


@dataclass
class ProxyFigures:
    cpu_ms_per_call: dict[int, float]
    p50_ms: float
    save_ms_per_call: float = 0.0
    """Recording: the CPU of writing the cassette at the end, per call recorded."""


def measure_proxy(kind: str, server: Server, cassette: Path, args: argparse.Namespace
                  ) -> ProxyFigures:
    upstream = server.base_url
    arguments = ("--proxy", kind, upstream, str(cassette))
    with child(*arguments) as proxy:
        url = f"http://127.0.0.1:{proxy.port}/openai/v1/chat/completions"
        asyncio.run(send_calls(url, range(args.warm_calls), 8))
        cpu: dict[int, float] = {}
        start = args.warm_calls
        p50 = 0.0
        for concurrency in args.proxy_concurrency:
            numbers = range(start, start + args.calls)
            start += args.calls
            before = proxy.cpu()
            latencies = asyncio.run(send_calls(url, numbers, concurrency))
            cpu[concurrency] = (proxy.cpu() - before) / args.calls * 1000
            if concurrency == 1:
                p50 = statistics.median(latencies) * 1000
    save_ms = 0.0
    if kind == "record":
        saved = json.loads(proxy.last_words)
        save_ms = saved["save_cpu_s"] / saved["recorded"] * 1000
    return ProxyFigures(cpu, p50, save_ms)


def direct_p50(server: Server, args: argparse.Namespace) -> float:
    url = server.base_url + "/chat/completions"
    latencies = asyncio.run(send_calls(url, range(args.calls), 1))
    return statistics.median(latencies) * 1000


def proxy_run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    print(f"\n== 1. proxy CPU per call: {args.calls} calls at each concurrency "
          f"{args.proxy_concurrency}, zero-latency upstream, best of {args.repeat}")
    print_load()
    best: dict[str, ProxyFigures] = {}
    with scripted(1, 0.0, False) as server:
        direct = direct_p50(server, args)
        for round_number in range(args.repeat):
            cassette = tmp / f"proxy-{round_number}.cassette.yaml"
            for kind in ("minimal", "record", "replay"):
                figures = measure_proxy(kind, server, cassette, args)
                cpu = ", ".join(f"C={c}: {ms:.3f} ms" for c, ms in figures.cpu_ms_per_call.items())
                saving = f"; writing the cassette {figures.save_ms_per_call:.3f} ms/call" \
                    if kind == "record" else ""
                print(f"  run {round_number + 1} {kind:8}: CPU/call {cpu}; "
                      f"p50 latency at C=1 {figures.p50_ms:.3f} ms{saving}")
                kept = best.get(kind)
                best[kind] = figures if kept is None else ProxyFigures(
                    {c: min(ms, kept.cpu_ms_per_call[c])
                     for c, ms in figures.cpu_ms_per_call.items()},
                    min(figures.p50_ms, kept.p50_ms),
                    min(figures.save_ms_per_call, kept.save_ms_per_call))
    print(f"  direct to the server: p50 latency at C=1 {direct:.3f} ms")
    rows = []
    floor = best["minimal"]
    resolution_ms = 1000 / os.sysconf("SC_CLK_TCK") / args.calls  # /proc counts ticks
    for kind in ("record", "replay"):
        for concurrency, handled_ms in best[kind].cpu_ms_per_call.items():
            ms = handled_ms + best[kind].save_ms_per_call
            ratio = ms / max(floor.cpu_ms_per_call[concurrency], resolution_ms)
            target = PROXY_RATIO_TARGETS[kind]
            saving = f" ({handled_ms:.3f} answering + {best[kind].save_ms_per_call:.3f} " \
                "writing the cassette)" if kind == "record" else ""
            print(f"{kind} C={concurrency}: {ms:.3f} ms{saving} vs pass-through "
                  f"{floor.cpu_ms_per_call[concurrency]:.3f} ms: ratio {ratio:.2f} "
                  f"(target <= {target})")
            rows.append(Row(f"proxy CPU/call, {kind}, C={concurrency}", f"{ms:.3f} ms",
                            f"pass-through {floor.cpu_ms_per_call[concurrency]:.3f} ms, "
                            f"ratio <= {target}", ratio, ratio <= target))
    for kind in ("minimal", "record", "replay"):
        print(f"added p50 latency at C=1, {kind}: {best[kind].p50_ms - direct:.3f} ms")
    return rows


INSTRUCTION_KINDS = ("minimal", "live", "record", "replay")


def instructions_of(kind: str, server: Server, cassette: Path, calls: int) -> int:
    """The user-space instructions (valgrind's callgrind) a proxy child executes from its
    start to its end, `calls` calls after the warm ones."""
    counted = cassette.with_suffix(f".{kind}.{calls}.callgrind")
    valgrind = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={counted}")
    with child("--proxy", kind, server.base_url, str(cassette), prefix=valgrind) as proxy:
        url = f"http://127.0.0.1:{proxy.port}/openai/v1/chat/completions"
        asyncio.run(send_calls(url, range(50), 1))
        if calls:
            asyncio.run(send_calls(url, range(50, 50 + calls), 1))
    found = re.search(r"^summary:\s*(\d+)", counted.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"callgrind wrote no summary for the {kind} proxy")
    return int(found.group(1))


def proxy_instructions_run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """1, counted instead of timed: instructions per call are the same run after run,
    whatever else the machine does (CPU time on a loaded 2-core machine moves by 20 %).
    Each kind runs twice, with `--calls` calls and with none: the difference is theirs.
    User space only (the system calls, alike for every kind, are left out), so these
    ratios are above the CPU-time ones."""
    if shutil.which("valgrind") is None:
        print("\n== 1b. proxy instructions per call: skipped (no valgrind)")
        return []
    calls = min(args.calls, 300)
    print(f"\n== 1b. proxy instructions per call (callgrind), {calls} calls at C=1")
    per_call: dict[str, float] = {}
    with scripted(1, 0.0, False) as server:
        for kind in INSTRUCTION_KINDS:
            cassette = tmp / "instructions.cassette.yaml"
            if kind == "record":
                cassette.unlink(missing_ok=True)
            idle = instructions_of(kind, server, cassette, 0)
            if kind == "record":
                cassette.unlink(missing_ok=True)
            busy = instructions_of(kind, server, cassette, calls)
            per_call[kind] = (busy - idle) / calls
            print(f"  {kind:8}: {per_call[kind] / 1000:,.0f} k instructions per call")
    floor = per_call["minimal"]
    rows = []
    for kind in ("live", "record", "replay"):
        ratio = per_call[kind] / floor
        limit = PROXY_RATIO_TARGETS.get(kind)  # live (no cassette): shown, not judged
        target = f"ratio <= {limit}" if limit is not None else "information"
        print(f"{kind}: {ratio:.2f} x the pass-through's instructions ({target})")
        rows.append(Row(f"proxy instructions/call, {kind}, C=1",
                        f"{per_call[kind] / 1000:,.0f} k",
                        f"pass-through {floor / 1000:,.0f} k, {target}", ratio,
                        limit is None or ratio <= limit))
    return rows


# --------------------------------------------------------------------------- 2. app


async def bench_app(port: int) -> None:
    """The app of measurement 2: POST /chat {messages} asks the model (OPENAI_BASE_URL)
    with the conversation and answers {reply}; it copies X-Turncheck-Turn onto its call."""
    import aiohttp
    from aiohttp import web

    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    key = os.environ.get("OPENAI_API_KEY", "")
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        headers = {"authorization": f"Bearer {key}"}
        turn = request.headers.get("X-Turncheck-Turn")
        if turn is not None:
            headers["X-Turncheck-Turn"] = turn
        payload = {"model": MODEL, "messages": body["messages"]}
        async with session.post(base + "/chat/completions", json=payload,
                                headers=headers) as answer:
            data = await answer.json()
        return web.json_response({"reply": data["choices"][0]["message"]["content"]})

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/chat", chat)
    app.router.add_get("/health", health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    await asyncio.Event().wait()


def app_suite(directory: Path, evals: int, turns: int, forwards: bool = False) -> Path:
    body = "".join(
        f"  - name: eval-{i}\n"
        f'    prompt: "Question {i}: reply with the word done."\n'
        f"    checks:\n" + checks_yaml(1, turns, 6)
        for i in range(evals)
    )
    path = directory / f"app-{evals}x{turns}{'-forwards' if forwards else ''}.eval.yaml"
    path.write_text(
        "metadata:\n  name: app-bench\n  model: gpt-4o-mini\n  target:\n"
        f"    start: {sys.executable} {Path(__file__).resolve()} --app {{port}}\n"
        f"    ready: /health\n{'    forwards_header: true' + chr(10) if forwards else ''}"
        '    http: {path: /chat, body: {messages: "{{ messages }}"}, reply: reply}\n'
        f"evals:\n{body}", encoding="utf-8")
    return path


def app_settings(server: Server, concurrency: int, mode: str = "live") -> Any:
    from turncheck.engine.settings import RunSettings

    return RunSettings(mode=mode, concurrency=concurrency, env={
        "OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.base_url,
        "PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def loaded_suite(path: Path) -> Any:
    from turncheck.formats.suite_loader import load_suite

    loaded = load_suite(path)
    if loaded.has_errors:
        raise SystemExit(f"generated suite is invalid: {loaded.diagnostics[:3]}")
    return loaded


def turncheck_app_run(path: Path, server: Server, concurrency: int, turns: int,
                      mode: str = "live") -> float:
    """The suite's wall time in `mode`; a record run records a new cassette. Exits when a
    conversation did not go as expected or a model call was not counted in its turn."""
    from turncheck.engine.loop import run_coroutine
    from turncheck.engine.runner import run_suite_files
    from turncheck.providers.cassette_file import cassette_path_for
    from turncheck.report.results import Status

    loaded = loaded_suite(path)
    if mode == "record":
        cassette_path_for(path).unlink(missing_ok=True)
    started = time.perf_counter()
    report = run_coroutine(run_suite_files([loaded], app_settings(server, concurrency, mode)))
    wall = time.perf_counter() - started
    results = [e for s in report.suites for e in s.evals]
    bad = [e for e in results if e.status is not Status.PASS or e.passed_on_turn != turns
           or [t.app_model_calls for t in e.turns] != [1] * turns
           or any(c.turn_guessed for t in e.turns for c in t.app_calls)]
    if bad:
        raise SystemExit(f"app run: {len(bad)} evals not as expected, e.g. {bad[0].status} "
                         f"on turn {bad[0].passed_on_turn}: {bad[0].error}")
    return wall


async def bare_conversations(url: str, evals: int, turns: int, concurrency: int) -> None:
    import aiohttp

    slots = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def conversation(number: int) -> None:
            async with slots:
                messages = [{"role": "user",
                             "content": f"Question {number}: reply with the word done."}]
                reply = ""
                for turn in range(1, turns + 1):
                    async with session.post(url, json={"messages": messages}) as answer:
                        reply = (await answer.json())["reply"]
                    messages += [{"role": "assistant", "content": reply},
                                 {"role": "user", "content": f"Not yet. Try again (turn "
                                                             f"{turn + 1})."}]
                if reply != PASSING_REPLY:
                    raise SystemExit(f"bare client: conversation {number} ended on {reply!r}")

        await asyncio.gather(*(conversation(number) for number in range(evals)))


async def wait_ready(url: str, timeout: float = 30.0) -> None:
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(url) as answer:
                    if answer.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the bench app did not answer {url}")
            await asyncio.sleep(0.05)


def bare_run(server: Server, evals: int, turns: int, concurrency: int) -> float:
    """Start the app (its model calls straight to the server), wait until it is ready,
    run the conversations, stop it."""
    from turncheck.targets.ports import free_port

    port = free_port()
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": FAKE_KEY}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, __file__, "--app", str(port)], env=env)
    try:
        asyncio.run(wait_ready(f"http://127.0.0.1:{port}/health"))
        asyncio.run(bare_conversations(f"http://127.0.0.1:{port}/chat", evals, turns,
                                       concurrency))
    finally:
        process.terminate()
        process.wait()
    return time.perf_counter() - started


APP_CELLS = (("default", "live"), ("default", "record"), ("default", "replay"),
             ("forwards_header", "live"))
"""The app workload's cells: the target as written (no `forwards_header`) in each mode,
and with `forwards_header: true` live."""


def app_run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    e, t, c = args.evals, args.turns, args.concurrency
    print(f"\n== 2. {e} conversations x {t} turns at concurrency {c}, "
          f"{args.latency * 1000:g} ms per model call")
    print_load()
    suites = {"default": app_suite(tmp, e, t), "forwards_header": app_suite(tmp, e, t, True)}
    walls: dict[tuple[str, str], list[float]] = {cell: [] for cell in APP_CELLS}
    bare_walls = []
    with scripted(t, args.latency, False) as server:
        warm = tmp / "warm"
        warm.mkdir(exist_ok=True)
        turncheck_app_run(app_suite(warm, 4, t), server, c, t)  # imports, price table
        for number in range(1, args.repeat + 1):
            bare_walls.append(bare_run(server, e, t, c))
            for cell in APP_CELLS:
                walls[cell].append(turncheck_app_run(suites[cell[0]], server, c, t, cell[1]))
            print(f"  run {number}: bare client {bare_walls[-1]:.3f} s; turncheck "
                  + "; ".join(f"{config} {mode} {walls[config, mode][-1]:.3f} s"
                              for config, mode in APP_CELLS))
    bare = min(bare_walls)
    rows = []
    for config, mode in APP_CELLS:
        through = min(walls[config, mode])
        ratio = through / bare
        print(f"best: bare {bare:.3f} s, turncheck {config} {mode} {through:.3f} s: ratio "
              f"{ratio:.3f} (target <= {APP_RATIO_TARGET})")
        rows.append(Row(f"app {e}x{t} @C={c}, {args.latency * 1000:g} ms, {config}, {mode}: "
                        "wall", f"{through:.3f} s",
                        f"bare client {bare:.3f} s, ratio <= {APP_RATIO_TARGET}", ratio,
                        ratio <= APP_RATIO_TARGET))
    return rows


# --------------------------------------------------------------------------- 2b. latency

LATENCY_THRESHOLD_PERCENT = 20.0
LATENCY_SLOWER_S = 0.3


def latency_pair(suite: Path, base: Server, head: Server, concurrency: int) -> Any:
    """Base and head of the same suite run live at the same time (as the action runs
    them), compared with the latency threshold: the suite's `LatencyComparison`."""
    from turncheck.compare.comparison import compare_reports
    from turncheck.engine.loop import run_coroutine
    from turncheck.engine.runner import run_suite_files
    from turncheck.report.comparison import CostThresholds

    async def both() -> Any:
        return await asyncio.gather(
            run_suite_files([loaded_suite(suite)], app_settings(base, concurrency)),
            run_suite_files([loaded_suite(suite)], app_settings(head, concurrency)))

    base_report, head_report = run_coroutine(both())
    compared = compare_reports(base_report, head_report, thresholds=CostThresholds(
        latency_percent=LATENCY_THRESHOLD_PERCENT))
    [suite_comparison] = compared.suites
    if suite_comparison.latency is None:
        raise SystemExit("latency: the live comparison has no latency")
    return suite_comparison.latency


def latency_run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """`fail-on: latency` on live runs of the bench app: its false-alarm rate over
    `--latency-pairs` pairs of unchanged runs, and whether a head whose model answers
    300 ms later per call is caught."""
    e, t, c, pairs = args.evals, args.turns, args.concurrency, args.latency_pairs
    print(f"\n== 2b. fail-on latency ({LATENCY_THRESHOLD_PERCENT:g}%): {pairs} unchanged "
          f"pairs and one {LATENCY_SLOWER_S * 1000:g} ms slower, {e} x {t} turns at C={c}, "
          f"{args.latency * 1000:g} ms per model call")
    suite = app_suite(tmp, e, t)
    alarms = 0
    with scripted(t, args.latency, False) as server, \
            scripted(t, args.latency + LATENCY_SLOWER_S, False) as slower:
        for number in range(1, pairs + 1):
            found = latency_pair(suite, server, server, c)
            alarms += found.slower
            print(f"  pair {number}: p50 {found.base.total_p50_ms:.0f} → "
                  f"{found.head.total_p50_ms:.0f} ms, p={found.p_value}, "
                  f"{'ALARM' if found.slower else 'ok'}")
        caught = latency_pair(suite, server, slower, c)
    print(f"false alarms: {alarms} of {pairs} ({alarms / pairs:.0%}); slower head: p50 "
          f"{caught.base.total_p50_ms:.0f} → {caught.head.total_p50_ms:.0f} ms, "
          f"p={caught.p_value}, {'caught' if caught.slower else 'MISSED'}")
    return [Row(f"latency: false alarms in {pairs} unchanged pairs", f"{alarms}",
                "0", float(alarms), alarms == 0),
            Row(f"latency: head {LATENCY_SLOWER_S * 1000:g} ms slower per call",
                "caught" if caught.slower else "missed", "caught",
                1.0 if caught.slower else 0.0, caught.slower)]


# --------------------------------------------------------------------------- 3. python


BENCH_MODULE = '''\
async def answer_async(last_message):
    return "done"


def answer_sync(last_message):
    return "done"
'''


async def python_target_times(folder: Path, function: str, turns: int
                              ) -> tuple[float, float]:
    """Seconds per turn through the target and per direct call of the function."""
    import importlib
    import inspect

    from turncheck.formats.target import Target
    from turncheck.providers.base import ChatMessage, ChatRequest
    from turncheck.targets.conversation import begin_conversation
    from turncheck.targets.provider import TargetProvider

    provider = TargetProvider(Target.model_validate({"python": f"bench_target:{function}"}),
                              folder, None, {}, {})
    request = ChatRequest(MODEL, [ChatMessage("user", "Question: reply with done.")])
    begin_conversation("python-bench")
    try:
        await provider.chat(request)  # starts it
        started = time.perf_counter()
        for _ in range(turns):
            await provider.chat(request)
        through = (time.perf_counter() - started) / turns
    finally:
        await provider.aclose()
    module = importlib.import_module("bench_target")
    target = getattr(module, function)
    started = time.perf_counter()
    for _ in range(turns):
        if inspect.iscoroutinefunction(target):
            await target(last_message="Question: reply with done.")
        else:
            target(last_message="Question: reply with done.")
    direct = (time.perf_counter() - started) / turns
    return through, direct


def bench_target_folder(folder: Path) -> Path:
    """A new folder holding the benchmark's python target module."""
    folder.mkdir()
    (folder / "bench_target.py").write_text(BENCH_MODULE)
    return folder


def python_run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    print(f"\n== 3. python target: {args.python_turns} turns, one at a time, "
          f"best of {args.repeat}")
    print_load()
    folder = bench_target_folder(tmp / "python-target")
    rows = []
    for function, direct_call in (("answer_async", "await f()"),
                                  ("answer_sync", "f(), in the event loop's thread")):
        added = []
        for _ in range(args.repeat):
            through, direct = asyncio.run(python_target_times(folder, function,
                                                              args.python_turns))
            added.append((through - direct) * 1000)
            print(f"  {function}: {through * 1e6:.1f} µs per turn through the target, "
                  f"{direct * 1e6:.1f} µs calling it directly ({direct_call}): "
                  f"added {added[-1] * 1000:.1f} µs")
        best = min(added)
        rows.append(Row(f"python target, {function}: added per turn", f"{best:.4f} ms",
                        f"<= {PYTHON_ADDED_TARGET_MS} ms", best / PYTHON_ADDED_TARGET_MS,
                        best <= PYTHON_ADDED_TARGET_MS))
    return rows


# ------------------------------------------------- 3b. python, conversations at once


async def python_concurrent_times(folder: Path, function: str, turns: int, concurrency: int
                                  ) -> tuple[float, float]:
    """Seconds per turn of `concurrency` conversations at once through the target (its
    turns concurrent: no lock, each naming its turn) and calling the function directly
    from as many tasks."""
    import importlib
    import inspect

    from turncheck.formats.target import Target
    from turncheck.providers.base import ChatMessage, ChatRequest
    from turncheck.targets.conversation import begin_conversation
    from turncheck.targets.provider import AppPolicy, TargetProvider

    target = Target.model_validate({"python": f"bench_target:{function}"})
    assert target.runs_concurrently
    provider = TargetProvider(target, folder, None, {}, {},
                              policy=AppPolicy(concurrency=concurrency))
    request = ChatRequest(MODEL, [ChatMessage("user", "Question: reply with done.")])
    each = max(1, turns // concurrency)

    async def conversation(number: int, count: int) -> None:
        begin_conversation(f"python-bench-{number}")
        for _ in range(count):
            await provider.chat(request)

    try:
        await conversation(-1, 1)  # starts it
        started = time.perf_counter()
        await asyncio.gather(*(conversation(n, each) for n in range(concurrency)))
        through = (time.perf_counter() - started) / (each * concurrency)
    finally:
        await provider.aclose()
    call = getattr(importlib.import_module("bench_target"), function)

    async def direct_calls() -> None:
        for _ in range(each):
            if inspect.iscoroutinefunction(call):
                await call(last_message="Question: reply with done.")
            else:
                call(last_message="Question: reply with done.")

    started = time.perf_counter()
    await asyncio.gather(*(direct_calls() for _ in range(concurrency)))
    return through, (time.perf_counter() - started) / (each * concurrency)


def python_concurrent_run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    concurrency = args.concurrency
    print(f"\n== 3b. python target: {args.python_turns} turns, {concurrency} conversations "
          f"at once, best of {args.repeat}")
    print_load()
    folder = bench_target_folder(tmp / "python-concurrent")
    rows = []
    for function in ("answer_async", "answer_sync"):
        added = []
        for _ in range(args.repeat):
            through, direct = asyncio.run(python_concurrent_times(
                folder, function, args.python_turns, concurrency))
            added.append((through - direct) * 1000)
            print(f"  {function}: {through * 1e6:.1f} µs per turn through the target, "
                  f"{direct * 1e6:.1f} µs calling it directly: added "
                  f"{added[-1] * 1000:.1f} µs")
        best = min(added)
        rows.append(Row(f"python target, {function}, {concurrency} at once: added per turn",
                        f"{best:.4f} ms", f"<= {PYTHON_ADDED_TARGET_MS} ms",
                        best / PYTHON_ADDED_TARGET_MS, best <= PYTHON_ADDED_TARGET_MS))
    return rows


# --------------------------------------------------------------------------- main


MEASUREMENTS = ("proxy", "app", "python", "python-concurrent")
OPT_IN = ("proxy-instructions", "latency")
"""Run only when asked for (`--only`): minutes under valgrind; pairs of live runs."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000,
                        help="calls per concurrency level (1)")
    parser.add_argument("--warm-calls", type=int, default=200, help="untimed calls first (1)")
    parser.add_argument("--proxy-concurrency", type=int, nargs="+", default=[1, 64])
    parser.add_argument("-E", "--evals", type=int, default=400, help="conversations (2)")
    parser.add_argument("-T", "--turns", type=int, default=3, help="turns each (2)")
    parser.add_argument("-C", "--concurrency", type=int, default=32, help="in flight (2)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per call (2)")
    parser.add_argument("--python-turns", type=int, default=20000, help="turns (3)")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best is kept")
    parser.add_argument("--latency-pairs", type=int, default=20,
                        help="unchanged base/head pairs for the false-alarm rate (2b)")
    parser.add_argument("--only", choices=MEASUREMENTS + OPT_IN, action="append")
    args = parser.parse_args(argv)
    counts = (args.calls, args.evals, args.turns, args.concurrency, args.python_turns,
              args.repeat, *args.proxy_concurrency)
    if min(counts) < 1 or args.warm_calls < 0:
        parser.error("counts must be positive")
    return args


def main(argv: list[str]) -> None:
    if argv[:1] == ["--serve"]:
        from benchmarks.engine import serve_forever

        serve_forever(int(argv[1]), float(argv[2]))
        return
    if argv[:1] == ["--proxy"]:
        kind, upstream, cassette = argv[1:4]
        asyncio.run(minimal_proxy(upstream) if kind == "minimal"
                    else turncheck_proxy(kind, upstream, cassette))
        return
    if argv[:1] == ["--app"]:
        asyncio.run(bench_app(int(argv[1])))
        return
    args = parse_args(argv)
    only = set(args.only or MEASUREMENTS)
    print(f"{os.cpu_count()} CPUs")
    print_load()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="turncheck-bench-") as tmp:
        if "proxy" in only:
            rows += proxy_run(args, Path(tmp))
        if "proxy-instructions" in only:
            rows += proxy_instructions_run(args, Path(tmp))
        if "app" in only:
            rows.extend(app_run(args, Path(tmp)))
        if "latency" in only:
            rows += latency_run(args, Path(tmp))
        if "python" in only:
            rows += python_run(args, Path(tmp))
        if "python-concurrent" in only:
            rows += python_concurrent_run(args, Path(tmp))
    print_table(rows)
    print_load()
    if not all(row.passed for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])

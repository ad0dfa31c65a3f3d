"""Engine throughput: live runs against the scripted server, and a cassette replay.

Three measurements, then a summary table (run: python benchmarks/engine.py --help):

1. Latency-bound live run: E evals x T turns at concurrency C against the
   scripted server answering after `latency` seconds. Every reply fails the
   checks until turn T, so each eval makes exactly T sequential requests.
   Concurrency is a limit on *evals* in flight and an eval keeps its slot for
   all its turns, so the schedule is ceil(E/C) waves of T sequential turns:
   critical path = ceil(E/C) * T * latency. That is never below the generic
   bound max(T, ceil(E*T/C)) * latency (which assumes turn-level slots), and
   is the one the ratio is taken against; both are printed.
2. Zero-latency live run: turns per second of pure overhead (the engine, its
   HTTP client and the loopback round-trip to the scripted server).
7. Pull request (`--only pr`): base and head of E_p x T evals each, run the way the
   action and `turncheck diff` run them (`run_both_sides`: at the same time, one
   shared limit of 2 x C). The ratio is taken against ONE side's critical path
   (target <= 1.15): running the sides one after the other would be 2x.
3. Cassette replay: record E_r x T_r turns (default 1,000 x 5 = 5,000) in record
   mode, stop the server, then replay offline. The timed part is the whole
   `run_suite_files` call, which includes opening and parsing the cassette.

Each measurement is the best of `--repeat` timed runs (all are printed, with
CPU times), after an untimed warm-up run for imports and the price table.

By default the scripted server runs in a subprocess (this file with `--serve`),
so on a 2-core machine the client under test has one core and a GIL of its own;
`--in-process-server` runs it on a thread of this process instead, for
comparison (the two then share one GIL, which lowers the measured throughput).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.scripted_server import ScriptedServer  # noqa: E402

from turncheck.choices import Mode  # noqa: E402
from turncheck.engine.loop import run_coroutine  # noqa: E402
from turncheck.engine.runner import Side, run_both_sides, run_suite_files  # noqa: E402
from turncheck.engine.settings import RunSettings  # noqa: E402
from turncheck.formats.suite import MAX_DEPTH  # noqa: E402
from turncheck.formats.suite_loader import SuiteFile, load_suite  # noqa: E402
from turncheck.providers.cassette_file import cassette_path_for  # noqa: E402
from turncheck.providers.cassettes import Cassette  # noqa: E402
from turncheck.report.results import Status  # noqa: E402
from turncheck.report.run import Report  # noqa: E402

FAKE_KEY = "sk-bench-NOT-A-REAL-KEY-0123"
PASSING_REPLY = "done"
FAILING_REPLY = "nope"
LATENCY_RATIO_TARGET = 1.10
SCALE_RATIO_TARGET = 1.15
CPU_PER_TURN_TARGET_MS = 0.4
STARTUP_TARGET_S = 0.35
REPLAY_ONE_SUITE_TARGET_S = 0.25
"""Whole process, `turncheck run` of one replayed suite: start-up, run, report (issue 25)."""
PEAK_MEMORY_BUDGET_MB = 400.0
OVERHEAD_TARGET_TURNS_PER_S = 400.0
REPLAY_TARGET_S = 5.0
REPLAY_TARGET_TURNS = 5_000
PR_RATIO_TARGET = 1.15
MEASUREMENTS = ("latency", "scale", "cpu", "startup", "overhead", "replay", "replay-scale", "pr",
                "whole")
DEFAULT_MEASUREMENTS = ("latency", "scale", "cpu", "startup", "replay", "replay-scale", "pr",
                        "whole")
WHOLE_RATIO_TARGET = 1.15
"""Issue 47: `turncheck run` of 400 x 3 at C = 32, 100 ms, whole process, over the bound
plus start-up (importing the dependencies)."""
WHOLE_SCALE_RATIO_TARGET = 1.2
"""The same for 5,000 x 3 at C = 64, 50 ms."""
REPLAY_CPU_TO_FLOOR_TARGET = 1.2
"""`turncheck run` of one replayed suite: CPU over the CPU of importing its dependencies."""
DEPENDENCY_IMPORTS = "import aiohttp, jinja2, pydantic, yaml\nfrom pydantic import BaseModel\n"
"""turncheck's own dependencies as issue 47 measured them: the floor of a process that
imports them (a replay needs none of aiohttp and Jinja2 and imports neither)."""
REPLAY_PEAK_TARGET_MIB = 200.0


# --------------------------------------------------------------------------- server


def script_server(server: ScriptedServer, turns: int, latency: float) -> None:
    """Fail every turn but the last: turn k < T answers `nope`, turn T answers `done`."""
    for turn in range(1, turns):
        server.add_rule(FAILING_REPLY, turn=turn)
    server.add_rule(PASSING_REPLY, turn=turns)
    server.set_latency(latency)


def serve_forever(turns: int, latency: float) -> None:
    """`--serve`: run a scripted server until stdin closes; print its base URL first."""
    server = ScriptedServer(default_reply="UNSCRIPTED").start()
    script_server(server, turns, latency)
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()


@dataclass
class Server:
    base_url: str
    pid: int | None  # None: a thread of this process

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the server's process, if it has its own."""
        if self.pid is None:
            return None
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def scripted(turns: int, latency: float, in_process: bool) -> Iterator[Server]:
    """A scripted server, in a subprocess unless `in_process`."""
    if in_process:
        server = ScriptedServer(default_reply="UNSCRIPTED").start()
        script_server(server, turns, latency)
        try:
            yield Server(server.base_url, None)
        finally:
            server.stop()
        return
    command = [sys.executable, __file__, "--serve", str(turns), str(latency)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        base_url = process.stdout.readline().strip()
        if not base_url.startswith("http://"):
            raise RuntimeError(f"scripted server did not start (printed {base_url!r})")
        yield Server(base_url, process.pid)
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --------------------------------------------------------------------------- suites


def checks_yaml(turn: int, turns: int, indent: int) -> str:
    """The checks of turn `turn`: match `done`, with the next turn's follow-up attached."""
    pad = " " * indent
    text = f'{pad}- match: "*{PASSING_REPLY}*"\n'
    if turn < turns:
        text += f'{pad}  prompt: "Not yet. Try again (turn {turn + 1})."\n'
        text += f"{pad}  checks:\n" + checks_yaml(turn + 1, turns, indent + 4)
    return text


def suite_text(evals: int, turns: int, base_url: str) -> str:
    """Unique first prompts, so every request body (and cassette key) is distinct."""
    body = "".join(
        f"  - name: eval-{i}\n"
        f'    prompt: "Question {i}: reply with the word done."\n'
        f"    checks:\n" + checks_yaml(1, turns, 6)
        for i in range(evals)
    )
    return (
        "metadata:\n  name: engine-bench\n  model: bench-model\n  provider: openai\n"
        f"  base_url: {base_url}\nevals:\n{body}"
    )


def write_suite(directory: Path, evals: int, turns: int, base_url: str) -> SuiteFile:
    path = directory / f"bench-{evals}x{turns}.eval.yaml"
    path.write_text(suite_text(evals, turns, base_url), encoding="utf-8")
    loaded = load_suite(path)
    if loaded.has_errors or loaded.suite is None:
        raise SystemExit(f"generated suite is invalid: {loaded.diagnostics[:3]}")
    return loaded


# --------------------------------------------------------------------------- runs


@dataclass
class Run:
    wall_s: float
    cpu_s: float  # this process (the engine, and the server when it runs on a thread)
    server_cpu_s: float | None  # the server's subprocess, if it has one
    turns: int
    report: Report

    def cpu_note(self) -> str:
        server = "" if self.server_cpu_s is None else f", server {self.server_cpu_s:.2f} s"
        per_turn = self.cpu_s / self.turns * 1000
        return f"CPU: engine process {self.cpu_s:.2f} s ({per_turn:.2f} ms/turn){server}"


def run_engine(suite: SuiteFile, mode: Mode, concurrency: int, server: Server | None) -> Run:
    settings = RunSettings(mode=mode, concurrency=concurrency, env={"OPENAI_API_KEY": FAKE_KEY})
    server_cpu = server.cpu_seconds() if server is not None else None
    cpu = time.process_time()
    started = time.perf_counter()
    report = run_coroutine(run_suite_files([suite], settings))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    if server_cpu is not None and server is not None:
        server_cpu = (server.cpu_seconds() or 0.0) - server_cpu
    turns = sum(len(e.turns) for s in report.suites for e in s.evals)
    return Run(wall, cpu, server_cpu, turns, report)


def verify(run: Run, evals: int, turns: int, what: str) -> None:
    """Every eval must pass on its last turn, or the figures mean nothing."""
    results = [e for s in run.report.suites for e in s.evals]
    bad = [e for e in results if e.status is not Status.PASS or e.passed_on_turn != turns]
    if len(results) != evals or bad or run.turns != evals * turns:
        first = bad[0] if bad else None
        detail = f"{first.status} on turn {first.passed_on_turn}: {first.error}" if first else ""
        raise SystemExit(
            f"{what}: expected {evals} evals passing on turn {turns} ({evals * turns} turns), "
            f"got {len(results)} evals, {run.turns} turns, {len(bad)} not as expected {detail}"
        )


def measure(suite: SuiteFile, mode: Mode, args: argparse.Namespace, server: Server | None) -> Run:
    """The best (least disturbed) of `--repeat` runs; every run is printed."""
    runs = []
    for number in range(1, args.repeat + 1):
        run = run_engine(suite, mode, args.concurrency, server)
        print(f"  run {number}: wall {run.wall_s:.3f} s; {run.cpu_note()}")
        runs.append(run)
    best = min(runs, key=lambda r: r.wall_s)
    if args.repeat > 1:
        median = statistics.median(r.wall_s for r in runs)
        print(f"  best of {args.repeat}: {best.wall_s:.3f} s (median {median:.3f} s)")
    return best


def warm_up(tmp: Path, turns: int, server: Server, args: argparse.Namespace) -> None:
    """One small run first, so imports and the price table load are not timed."""
    run_engine(write_suite(tmp, 8, turns, server.base_url), "live", args.concurrency, None)


@dataclass
class Row:
    measurement: str
    value: str
    target: str
    ratio: float
    passed: bool


def bound_run(
    what: str, evals: int, turns: int, concurrency: int, latency: float, target: float,
    args: argparse.Namespace, tmp: Path,
) -> Row:
    """E x T at concurrency C against a server answering after `latency`: wall / bound."""
    e, t, c = evals, turns, concurrency
    ms = latency * 1000
    print(f"\n== {what}: {e} evals x {t} turns, concurrency {c}, latency {ms:g} ms")
    print_load()
    run_args = argparse.Namespace(**{**vars(args), "concurrency": c})
    with scripted(t, latency, args.in_process_server) as server:
        suite = write_suite(tmp, e, t, server.base_url)
        warm_up(tmp, t, server, run_args)
        run = measure(suite, "live", run_args, server)
    verify(run, e, t, what)
    generic = max(t, math.ceil(e * t / c)) * latency
    waves = math.ceil(e / c)
    critical = waves * t * latency
    bound = max(generic, critical)
    ratio = run.wall_s / bound
    print(f"wall time: {run.wall_s:.3f} s for {run.turns} turns")
    print(f"generic bound max(T, ceil(E*T/C)) * latency = {generic:.3f} s")
    print(
        f"critical path ceil(E/C) * T * latency = {waves} waves x {t} turns x "
        f"{ms:g} ms = {critical:.3f} s"
    )
    print(
        "bound used: the larger (tighter) one; C limits evals in flight and an eval keeps its "
        f"slot for all of its sequential turns, so no schedule beats {critical:.3f} s"
    )
    print(f"ratio wall/bound = {ratio:.3f} (target <= {target})")
    return Row(
        f"live {e}x{t} @C={c}, {ms:g} ms: wall",
        f"{run.wall_s:.3f} s",
        f"bound {bound:.3f} s, ratio <= {target}",
        ratio,
        ratio <= target,
    )


def latency_bound_run(args: argparse.Namespace, tmp: Path) -> Row:
    return bound_run(
        "1. live run", args.evals, args.turns, args.concurrency, args.latency,
        LATENCY_RATIO_TARGET, args, tmp,
    )


def scale_run(args: argparse.Namespace, tmp: Path) -> Row:
    return bound_run(
        "2. live run at scale", args.scale_evals, args.turns, args.scale_concurrency,
        args.scale_latency, SCALE_RATIO_TARGET, args, tmp,
    )


def cpu_child(evals: int, turns: int, concurrency: int, base_url: str) -> None:
    """`--cpu-child`: one zero-latency run in a fresh process; prints its figures as JSON.

    A process of its own, so its peak memory (`ru_maxrss`) is this run's alone and the
    CPU time is the engine's alone (the server runs in another subprocess).
    """
    with tempfile.TemporaryDirectory(prefix="turncheck-bench-") as tmp:
        warm = write_suite(Path(tmp), 8, turns, base_url)
        run_engine(warm, "live", concurrency, None)
        cpu = time.process_time()
        suite = write_suite(Path(tmp), evals, turns, base_url)
        load_cpu = time.process_time() - cpu
        run = run_engine(suite, "live", concurrency, None)
        verify(run, evals, turns, "zero-latency run")
        size = Path(suite.path).stat().st_size
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    figures = {
        "cpu_s": run.cpu_s, "wall_s": run.wall_s, "turns": run.turns, "load_cpu_s": load_cpu,
        "suite_bytes": size, "peak_mb": peak_kb / 1024,
    }
    print(json.dumps(figures))


def cpu_runs(args: argparse.Namespace) -> list[dict[str, float]]:
    e, t, c = args.scale_evals, args.turns, args.scale_concurrency
    runs = []
    with scripted(t, 0.0, False) as server:
        for number in range(1, args.repeat + 1):
            command = [sys.executable, __file__, "--cpu-child", str(e), str(t), str(c),
                       server.base_url]
            server_cpu = server.cpu_seconds() or 0.0
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"zero-latency run failed:\n{done.stderr[-2000:]}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            figures["server_cpu_s"] = (server.cpu_seconds() or 0.0) - server_cpu
            per_turn = figures["cpu_s"] / figures["turns"] * 1000
            print(
                f"  run {number}: engine CPU {figures['cpu_s']:.2f} s = {per_turn:.3f} ms/turn "
                f"(wall {figures['wall_s']:.2f} s; server CPU {figures['server_cpu_s']:.2f} s); "
                f"loading the {figures['suite_bytes'] / 1e6:.1f} MB suite: "
                f"{figures['load_cpu_s']:.2f} s CPU; peak memory {figures['peak_mb']:.0f} MB"
            )
            runs.append(figures)
    return runs


def cpu_and_memory_run(args: argparse.Namespace) -> list[Row]:
    e, t, c = args.scale_evals, args.turns, args.scale_concurrency
    print(f"\n== 3. CPU per turn and peak memory: {e} evals x {t} turns at zero latency, "
          f"concurrency {c}")
    print("each run in a fresh process (engine CPU only: the server has its own process)")
    print_load()
    runs = cpu_runs(args)
    best = min(runs, key=lambda r: r["cpu_s"] / r["turns"])
    per_turn = best["cpu_s"] / best["turns"] * 1000
    with_load = (best["cpu_s"] + best["load_cpu_s"]) / best["turns"] * 1000
    peak = max(r["peak_mb"] for r in runs)
    print(f"CPU per turn (least disturbed run): {per_turn:.3f} ms "
          f"(target <= {CPU_PER_TURN_TARGET_MS} ms); with the suite load: {with_load:.3f} ms")
    print(f"peak memory (largest of the runs, whole process): {peak:.0f} MB "
          f"(budget {PEAK_MEMORY_BUDGET_MB:g} MB)")
    return [
        Row(
            f"CPU per turn, {e}x{t} @C={c}, 0 ms",
            f"{per_turn:.3f} ms ({with_load:.3f} with suite load)",
            f"<= {CPU_PER_TURN_TARGET_MS} ms",
            per_turn / CPU_PER_TURN_TARGET_MS,
            per_turn <= CPU_PER_TURN_TARGET_MS,
        ),
        Row(
            f"peak memory, {e}x{t}",
            f"{peak:.0f} MB",
            f"<= {PEAK_MEMORY_BUDGET_MB:g} MB",
            peak / PEAK_MEMORY_BUDGET_MB,
            peak <= PEAK_MEMORY_BUDGET_MB,
        ),
    ]


DEPENDENCY_FLOOR = (
    "from pydantic import BaseModel\n"
    "import asyncio, yaml\n"
    "from turncheck.lazy import submodules_without_package_init\n"
    "snapshot, = submodules_without_package_init('genai_prices', 'data_snapshot')\n"
    "snapshot.get_snapshot()\n"
)
"""What any replayed run must load before a line of turncheck's own runs: pydantic's
`BaseModel` (every suite is validated by it), PyYAML, asyncio (the engine's event loop)
and genai-prices' bundled price snapshot (every turn is priced)."""


def startup_seconds(argv: list[str], repeat: int) -> tuple[float, float, float]:
    """Best wall, CPU (user + system) and user CPU seconds of `turncheck <argv>` in a fresh
    interpreter."""
    return process_seconds([sys.executable, "-m", "turncheck", *argv], repeat)


def process_seconds(command: list[str], repeat: int) -> tuple[float, float, float]:
    """Best wall, CPU (user + system) and user CPU seconds of `command`."""
    walls, cpus, users = [], [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=False, cwd=ROOT)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        users.append(after.ru_utime - before.ru_utime)
        cpus.append(users[-1] + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus), min(users)


def compile_turncheck() -> None:
    """Write turncheck's bytecode first, as an installed package has it: with
    PYTHONDONTWRITEBYTECODE set (as in some shells and CI images) every start-up would
    otherwise compile all of turncheck's modules again, which no user's install does."""
    import compileall

    import turncheck

    compileall.compile_dir(Path(turncheck.__file__).parent, quiet=1)


def startup_run(args: argparse.Namespace) -> list[Row]:
    one_file = "examples/math/arithmetic.eval.yaml"
    print(f"\n== 4. start-up: turncheck --help, validate {one_file}; whole process: run "
          "of it (replayed)")
    print_load()
    compile_turncheck()
    rows = []
    for argv, target in ((["--help"], STARTUP_TARGET_S),
                         (["validate", one_file], STARTUP_TARGET_S),
                         (["run", "--quiet", one_file], REPLAY_ONE_SUITE_TARGET_S)):
        wall, cpu, user = startup_seconds(argv, max(5, args.repeat))
        name = " ".join(argv)
        what = "whole process" if argv[0] == "run" else "start-up"
        print(f"turncheck {name}: best wall {wall:.3f} s, best CPU {cpu:.3f} s "
              f"(user {user:.3f} s; target <= {target} s wall)")
        rows.append(Row(
            f"{what}: turncheck {name}", f"{wall:.3f} s (CPU {cpu:.3f}, user {user:.3f} s)",
            f"<= {target} s", wall / target, wall <= target,
        ))
    return [*rows, floor_row(wall, max(5, args.repeat)), *replay_cpu_rows(one_file, args)]


def replay_cpu_rows(one_file: str, args: argparse.Namespace) -> list[Row]:
    """CPU of `turncheck run` of one replayed suite against importing the dependencies,
    measured alternately (best of each)."""
    repeat = max(5, args.repeat)
    floors = {"turncheck's dependencies (aiohttp, Jinja2, pydantic, PyYAML)": DEPENDENCY_IMPORTS,
              "what a replay imports (pydantic, PyYAML, asyncio, price snapshot)":
              DEPENDENCY_FLOOR}
    run_cpu, floor_cpu = math.inf, dict.fromkeys(floors, math.inf)
    for _ in range(repeat):
        run_cpu = min(run_cpu, startup_seconds(["run", "--quiet", one_file], 1)[1])
        for name, code in floors.items():
            floor_cpu[name] = min(floor_cpu[name],
                                  process_seconds([sys.executable, "-c", code], 1)[1])
    rows = []
    for name, floor in floor_cpu.items():
        ratio = run_cpu / floor
        print(f"CPU: turncheck run {one_file} {run_cpu:.3f} s / importing {name} "
              f"{floor:.3f} s = {ratio:.2f} (target <= {REPLAY_CPU_TO_FLOOR_TARGET})")
        rows.append(Row(f"CPU: run of one replayed suite / importing {name}",
                        f"{run_cpu:.3f} s / {floor:.3f} s", f"<= {REPLAY_CPU_TO_FLOOR_TARGET}",
                        ratio, ratio <= REPLAY_CPU_TO_FLOOR_TARGET))
    return rows


def floor_row(run_wall: float, repeat: int) -> Row:
    """The run above against the dependencies it cannot do without: how much of the
    whole process is turncheck's own start-up and run."""
    floor, _, _ = process_seconds([sys.executable, "-c", DEPENDENCY_FLOOR], repeat)
    bare, _, _ = process_seconds([sys.executable, "-c", "pass"], repeat)
    print(f"dependency floor (python, pydantic.BaseModel, yaml, asyncio, genai-prices "
          f"snapshot): best wall {floor:.3f} s, of which the interpreter {bare:.3f} s; "
          f"the run above spends {run_wall - floor:.3f} s beyond it")
    target = REPLAY_ONE_SUITE_TARGET_S
    return Row(
        "dependency floor of that run (imports only)", f"{floor:.3f} s (run - floor = "
        f"{run_wall - floor:.3f} s)", f"<= {target} s", floor / target, floor <= target,
    )


def print_load() -> None:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average now: {load} on {os.cpu_count()} CPUs")


def overhead_run(args: argparse.Namespace, tmp: Path) -> Row:
    e, t, c = args.overhead_evals, args.turns, args.concurrency
    where = "on a thread of this process" if args.in_process_server else "in a subprocess"
    print(f"\n== 5. zero-latency live run: {e} evals x {t} turns, concurrency {c}")
    print(f"scripted server runs {where}")
    with scripted(t, 0.0, args.in_process_server) as server:
        suite = write_suite(tmp, e, t, server.base_url)
        warm_up(tmp, t, server, args)
        run = measure(suite, "live", args, server)
    verify(run, e, t, "zero-latency run")
    rate = run.turns / run.wall_s
    print(f"wall time: {run.wall_s:.3f} s for {run.turns} turns = {rate:,.0f} turns/s")
    if args.in_process_server:
        print("the server shares this process's CPU and GIL, so the figure understates the engine")
    else:
        print(
            "the server has its own process and GIL, so its work is not counted against the "
            "engine; on 2 cores each side gets about one core (less if other work is running)"
        )
    return Row(
        f"zero-latency live {e}x{t} @C={c}: throughput",
        f"{rate:,.0f} turns/s",
        f">= {OVERHEAD_TARGET_TURNS_PER_S:g} turns/s",
        OVERHEAD_TARGET_TURNS_PER_S / rate,
        rate >= OVERHEAD_TARGET_TURNS_PER_S,
    )


def replay_run(args: argparse.Namespace, tmp: Path) -> Row:
    e, t, c = args.replay_evals, args.replay_turns, args.concurrency
    print(f"\n== 6. replay: record {e} evals x {t} turns = {e * t} turns, then replay offline")
    with scripted(t, 0.0, args.in_process_server) as server:
        suite = write_suite(tmp, e, t, server.base_url)
        recorded = run_engine(suite, "record", c, server)
    verify(recorded, e, t, "record run")
    cassette = cassette_path_for(Path(suite.path))
    size = cassette.stat().st_size
    print(f"recorded {recorded.turns} turns in {recorded.wall_s:.3f} s (no target for recording)")
    print(f"cassette: {cassette.name}, {size / 1e6:.1f} MB; server stopped")
    started = time.perf_counter()
    transport = Cassette(cassette, "replay", secrets=[FAKE_KEY])
    load_s = time.perf_counter() - started
    print(f"cassette load alone (for reference): {load_s:.3f} s for {len(transport)} interactions")
    run = measure(suite, "replay", args, None)
    verify(run, e, t, "replay run")
    rate = run.turns / run.wall_s
    target = REPLAY_TARGET_S * run.turns / REPLAY_TARGET_TURNS
    ratio = run.wall_s / target
    print(
        f"replay wall time (run_suite_files, including cassette load): {run.wall_s:.3f} s "
        f"for {run.turns} turns = {rate:,.0f} turns/s"
    )
    print(f"target {target:.2f} s for {run.turns} turns; ratio = {ratio:.3f}")
    return Row(
        f"replay {e}x{t} = {run.turns} turns (incl. load)",
        f"{run.wall_s:.3f} s ({rate:,.0f} turns/s)",
        f"<= {target:.2f} s",
        ratio,
        ratio <= 1.0,
    )


def pr_side(directory: Path, evals: int, turns: int, base_url: str,
            concurrency: int) -> Side:
    directory.mkdir(exist_ok=True)
    path = write_suite(directory, evals, turns, base_url).path
    suite = load_suite(Path(path), "bench.eval.yaml")  # one name: the sides pair up
    settings = RunSettings(mode="live", concurrency=concurrency,
                           env={"OPENAI_API_KEY": FAKE_KEY})
    return Side([suite], settings)


def pr_run(args: argparse.Namespace, tmp: Path) -> Row:
    """Base and head at the same time, as the action runs a pull request: wall / one side."""
    e, t, c, latency = args.pr_evals, args.turns, args.concurrency, args.latency
    ms = latency * 1000
    print(f"\n== 7. pull request: base and head of {e} evals x {t} turns each, "
          f"concurrency {c} per side, latency {ms:g} ms")
    print_load()
    with scripted(t, latency, args.in_process_server) as server:
        warm_up(tmp, t, server, args)
        walls = []
        for number in range(1, args.repeat + 1):
            head = pr_side(tmp / "head", e, t, server.base_url, c)
            base = pr_side(tmp / "base", e, t, server.base_url, c)
            started = time.perf_counter()
            head_report, base_report = run_coroutine(run_both_sides(head, base))
            walls.append(time.perf_counter() - started)
            print(f"  run {number}: wall {walls[-1]:.3f} s")
            for report in (head_report, base_report):
                assert report is not None
                verify(Run(walls[-1], 0.0, None, sum(len(x.turns) for s in report.suites
                                                      for x in s.evals), report), e, t, "pr")
        alone = pr_side(tmp / "head", e, t, server.base_url, c)
        started = time.perf_counter()
        run_coroutine(run_suite_files(alone.files, alone.settings))
        alone_wall = time.perf_counter() - started
    wall = min(walls)
    one_side = math.ceil(e / c) * t * latency
    ratio = wall / one_side
    print(f"one side's critical path ceil(E/C) * T * latency = {one_side:.3f} s; "
          f"one after the other: {2 * one_side:.3f} s")
    print(f"one side alone, measured now: {alone_wall:.3f} s; both sides / one side alone = "
          f"{wall / alone_wall:.3f} (1 when the sides fully overlap, 2 one after the other; "
          "the bound ratio also counts this machine's load)")
    print(f"ratio wall/one side = {ratio:.3f} (target <= {PR_RATIO_TARGET})")
    return Row(f"PR {e}x{t} base+head @C={c}/side, {ms:g} ms: wall", f"{wall:.3f} s",
               f"one side {one_side:.3f} s, ratio <= {PR_RATIO_TARGET}", ratio,
               ratio <= PR_RATIO_TARGET)


def peak_rss_mib() -> float:
    """This process's peak resident memory since it started its program: `VmHWM`.

    Not `ru_maxrss`: Linux carries it over from the parent through fork and exec, so a
    child of this (large, after recording) benchmark process would report the parent's
    size whatever it did itself."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def replay_child(mode: Mode, suite_path: str, concurrency: int) -> None:
    """`--replay-child`: one run of an existing suite in a fresh process; prints JSON
    figures (its wall time and the process's peak memory, interpreter included)."""
    suite = load_suite(Path(suite_path))
    loaded = peak_rss_mib()
    run = run_engine(suite, mode, concurrency, None)
    figures = {"wall_s": run.wall_s, "cpu_s": run.cpu_s, "turns": run.turns,
               "peak_mib": peak_rss_mib(), "loaded_mib": loaded}
    print(json.dumps(figures))


def child_run(mode: Mode, suite: SuiteFile, concurrency: int) -> dict[str, float]:
    command = [sys.executable, __file__, "--replay-child", mode, str(suite.path),
               str(concurrency)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  {mode}: wall {figures['wall_s']:.2f} s, CPU {figures['cpu_s']:.2f} s, "
          f"{figures['turns']:.0f} turns, peak memory {figures['peak_mib']:.0f} MiB "
          f"({figures['loaded_mib']:.0f} MiB once imports and the suite were loaded)")
    return figures


def replay_scale_run(args: argparse.Namespace, tmp: Path) -> list[Row]:
    """Issue 23, 9b: replay must be the cheap path. The same suite runs live against the
    zero-latency server and replayed from its cassette, each in a fresh process."""
    e, t, c = args.replay_scale_evals, args.turns, args.scale_concurrency
    print(f"\n== 8. replay vs live: {e} evals x {t} turns, C={c}, each in a fresh process")
    directory = tmp / "replay-scale"
    directory.mkdir()
    with scripted(t, 0.0, False) as server:
        suite = write_suite(directory, e, t, server.base_url)
        recorded = run_engine(suite, "record", c, server)
        verify(recorded, e, t, "record run")
        cassette = cassette_path_for(Path(suite.path))
        print(f"recorded {recorded.turns} turns; cassette {cassette.stat().st_size / 1e6:.1f} MB")
        lives = [child_run("live", suite, c) for _ in range(args.repeat)]
    replays = [child_run("replay", suite, c) for _ in range(args.repeat)]
    live_wall = min(r["wall_s"] for r in lives)
    replay_wall = min(r["wall_s"] for r in replays)
    peak = max(r["peak_mib"] for r in replays)
    ratio = replay_wall / live_wall
    print(f"replay/live wall (best of {args.repeat} each) = {replay_wall:.2f} / {live_wall:.2f}"
          f" = {ratio:.3f} (target < 1); replay peak {peak:.0f} MiB "
          f"(target <= {REPLAY_PEAK_TARGET_MIB:g} MiB)")
    return [
        Row(f"replay/live wall, {e}x{t}", f"{replay_wall:.2f} s / {live_wall:.2f} s",
            "< 1", ratio, ratio < 1.0),
        Row(f"replay peak memory, {e}x{t}", f"{peak:.0f} MiB",
            f"<= {REPLAY_PEAK_TARGET_MIB:g} MiB", peak / REPLAY_PEAK_TARGET_MIB,
            peak <= REPLAY_PEAK_TARGET_MIB),
    ]


WHOLE_CHILD = """
import json, os, sys, time
from turncheck.cli import main as cli

stamps = {}
build_parser = cli.build_parser

def timed(name, function):
    def wrapper(*args, **kwargs):
        stamps[name + '_start'] = time.time()
        try:
            return function(*args, **kwargs)
        finally:
            stamps[name + '_end'] = time.time()
            with open(os.environ['TURNCHECK_BENCH_STAMPS'], 'w') as out:
                json.dump(stamps, out)
    return wrapper

def parser_then_wrap(argv):
    parser = build_parser(argv)
    from turncheck.cli import run_cmd
    stamps['imported'] = time.time()
    run_cmd.load = timed('load', run_cmd.load)
    run_cmd.execute = timed('run', run_cmd.execute)
    return parser

cli.build_parser = parser_then_wrap
sys.argv = ['turncheck', *sys.argv[1:]]
raise SystemExit(cli.main())
"""
"""`turncheck run` as the console script runs it, with time stamps at the end of start-up
(the parser built, the command's modules imported), around loading the suites and around
the run; the parent adds the process's start and end."""


@dataclass
class Whole:
    wall_s: float
    cpu_s: float
    phases: dict[str, float]


def whole_process(suite: SuiteFile, concurrency: int, stamps: Path) -> Whole:
    command = [sys.executable, "-c", WHOLE_CHILD, "run", "--mode", "live", "--quiet",
               "--concurrency", str(concurrency), str(suite.path)]
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "TURNCHECK_BENCH_STAMPS": str(stamps),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env, cwd=ROOT)
    ended = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"whole-process run failed ({done.returncode}):\n"
                         f"{done.stdout[-1500:]}{done.stderr[-1500:]}")
    at = json.loads(stamps.read_text(encoding="utf-8"))
    phases = {"start-up imports": at["imported"] - started,
              "suite loading": at["load_end"] - at["load_start"],
              "run": at["run_end"] - at["run_start"],
              "report and exit": ended - at["run_end"]}
    phases["other (options, config)"] = ended - started - sum(phases.values())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Whole(ended - started, cpu, phases)


def whole_run(what: str, evals: int, turns: int, concurrency: int, latency: float,
              target: float, args: argparse.Namespace, tmp: Path) -> Row:
    """`turncheck run` of E x T at C against a server answering after `latency`, the whole
    process, alternating with importing the dependencies: wall / (bound + that floor)."""
    e, t, c, ms = evals, turns, concurrency, latency * 1000
    print(f"\n== {what}: whole process, turncheck run of {e} evals x {t} turns, C={c}, "
          f"latency {ms:g} ms")
    print_load()
    compile_turncheck()
    bound = math.ceil(e / c) * t * latency
    runs, floors = [], []
    with scripted(t, latency, False) as server:
        suite = write_suite(tmp, e, t, server.base_url)
        for number in range(1, args.repeat + 1):
            floors.append(process_seconds([sys.executable, "-c", DEPENDENCY_IMPORTS], 1)[0])
            runs.append(whole_process(suite, c, tmp / "stamps.json"))
            phases = ", ".join(f"{name} {value:.3f}" for name, value in runs[-1].phases.items())
            print(f"  run {number}: wall {runs[-1].wall_s:.3f} s, CPU {runs[-1].cpu_s:.2f} s "
                  f"({phases} s); importing the dependencies {floors[-1]:.3f} s")
    best, floor = min(runs, key=lambda r: r.wall_s), min(floors)
    ratio = best.wall_s / (bound + floor)
    excess = best.phases["run"] - bound
    print(f"bound ceil(E/C) * T * latency = {bound:.3f} s; start-up floor (importing aiohttp, "
          f"Jinja2, pydantic, PyYAML) {floor:.3f} s")
    print(f"best whole process {best.wall_s:.3f} s, above bound + floor by "
          f"{best.wall_s - bound - floor:.3f} s: start-up imports "
          f"{best.phases['start-up imports'] - floor:+.3f} s over the floor, suite loading "
          f"{best.phases['suite loading']:.3f} s, run excess {excess:.3f} s "
          f"({excess / (e * t) * 1000:.2f} ms per turn), report and exit "
          f"{best.phases['report and exit']:.3f} s")
    print(f"ratio whole/(bound + floor) = {ratio:.3f} (target <= {target}); "
          f"whole/bound = {best.wall_s / bound:.3f}")
    return Row(f"whole process {e}x{t} @C={c}, {ms:g} ms", f"{best.wall_s:.3f} s",
               f"(bound {bound:.2f} + floor {floor:.2f}) x {target}", ratio, ratio <= target)


def whole_runs(args: argparse.Namespace, tmp: Path) -> list[Row]:
    return [
        whole_run("9. whole process", args.evals, args.turns, args.concurrency, args.latency,
                  WHOLE_RATIO_TARGET, args, tmp),
        whole_run("10. whole process at scale", args.scale_evals, args.turns,
                  args.scale_concurrency, args.scale_latency, WHOLE_SCALE_RATIO_TARGET,
                  args, tmp),
    ]


def print_table(rows: list[Row]) -> None:
    header = ("measurement", "value", "bound/target", "ratio", "result")
    table = [header] + [
        (r.measurement, r.value, r.target, f"{r.ratio:.3f}", "PASS" if r.passed else "MISS")
        for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    print("\n== summary (ratio: wall/bound; for throughput, target/measured)")
    for number, line in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * width for width in widths))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-E", "--evals", type=int, default=400, help="evals (run 1)")
    parser.add_argument("-T", "--turns", type=int, default=3, help="turns per eval (runs 1-2)")
    parser.add_argument("-C", "--concurrency", type=int, default=32, help="evals in flight")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per request (run 1)")
    parser.add_argument("--scale-evals", type=int, default=5000, help="evals (runs 2-3)")
    parser.add_argument("--scale-concurrency", type=int, default=64, help="C (runs 2-3)")
    parser.add_argument("--scale-latency", type=float, default=0.05, help="seconds (run 2)")
    parser.add_argument("--overhead-evals", type=int, default=1000, help="evals (run 5)")
    parser.add_argument("--replay-evals", type=int, default=1000, help="evals (run 6)")
    parser.add_argument("--replay-turns", type=int, default=5, help="turns per eval (run 6)")
    parser.add_argument("--pr-evals", type=int, default=1000,
                        help="evals per side (run 7, --only pr)")
    parser.add_argument("--replay-scale-evals", type=int, default=5000,
                        help="evals (run 8, with --turns)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="timed runs per measurement; the best is kept"
    )
    parser.add_argument(
        "--only", choices=MEASUREMENTS, action="append",
        help=f"run only these (default: {', '.join(DEFAULT_MEASUREMENTS)})",
    )
    parser.add_argument(
        "--in-process-server", action="store_true", help="serve from a thread of this process"
    )
    args = parser.parse_args(argv)
    for turns in (args.turns, args.replay_turns):
        if not 1 <= turns <= MAX_DEPTH + 1:
            parser.error(f"turns must be between 1 and {MAX_DEPTH + 1} (follow-up depth limit)")
    counts = (args.evals, args.concurrency, args.overhead_evals, args.replay_evals, args.repeat,
              args.scale_evals, args.scale_concurrency, args.pr_evals,
              args.replay_scale_evals)
    if min(counts) < 1:
        parser.error("counts must be positive")
    return args


def main(argv: list[str]) -> None:
    if argv[:1] == ["--serve"]:
        serve_forever(int(argv[1]), float(argv[2]))
        return
    if argv[:1] == ["--replay-child"]:
        mode: Mode = "live" if argv[1] == "live" else "replay"
        replay_child(mode, argv[2], int(argv[3]))
        return
    if argv[:1] == ["--cpu-child"]:
        cpu_child(int(argv[1]), int(argv[2]), int(argv[3]), argv[4])
        return
    args = parse_args(argv)
    only = set(args.only or DEFAULT_MEASUREMENTS)
    rows: list[Row] = []
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{os.cpu_count()} CPUs; load average {load} (other work skews wall times)")
    with tempfile.TemporaryDirectory(prefix="turncheck-bench-") as tmp:
        if "latency" in only:
            rows.append(latency_bound_run(args, Path(tmp)))
        if "scale" in only:
            rows.append(scale_run(args, Path(tmp)))
        if "cpu" in only:
            rows += cpu_and_memory_run(args)
        if "startup" in only:
            rows += startup_run(args)
        if "overhead" in only:
            rows.append(overhead_run(args, Path(tmp)))
        if "replay" in only:
            rows.append(replay_run(args, Path(tmp)))
        if "pr" in only:
            rows.append(pr_run(args, Path(tmp)))
        if "replay-scale" in only:
            rows += replay_scale_run(args, Path(tmp))
        if "whole" in only:
            rows += whole_runs(args, Path(tmp))
    print_table(rows)
    print_load()


if __name__ == "__main__":
    main(sys.argv[1:])

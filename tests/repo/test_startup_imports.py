"""Start-up: each command imports only what it uses (issue 17). Asserts on imports, not
time (timing lives in benchmarks/engine.py)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer
from turncheck.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "math" / "arithmetic.eval.yaml"
HEAVY = ("github", "vcr", "genai_prices", "httpx", "httpcore", "requests", "aiohttp", "jinja2",
         "scipy", "numpy", "tiktoken", "turncheck.engine", "turncheck.formats.samples",
         "turncheck.formats.sample_loader", "turncheck.formats.grader")
"""Not needed to validate a plain suite nor to print help: Jinja and the sample-file code
(graders) only for protocol suites and sample files, the rest only to run or post."""


def fresh_interpreter(code: str) -> list[str]:
    """What `code` prints, line by line, run by a fresh interpreter (which must not fail)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip().splitlines()


def modules_after(argv: list[str]) -> tuple[int, set[str]]:
    """Run the CLI with `argv` in a fresh interpreter: (exit code, heavy modules loaded)."""
    code = (
        "import json, sys\n"
        "from turncheck.cli.main import main\n"
        f"try:\n    code = main({argv!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r}"
        " or m.startswith(('turncheck.engine.', 'turncheck.formats.sample'))]\n"
        "print(json.dumps([code, heavy]), file=sys.__stdout__)\n"
    )
    exit_code, heavy = json.loads(fresh_interpreter(code)[-1])
    return exit_code, set(heavy)


def test_validate_one_file_loads_no_engine_github_cassette_or_price_code() -> None:
    code, heavy = modules_after(["validate", str(SUITE)])
    assert code == 0
    assert heavy == set()


def test_help_loads_nothing_heavy() -> None:
    code, heavy = modules_after(["--help"])
    assert code == 0
    assert heavy == set()


def test_a_bad_config_file_is_located_without_the_sample_file_code(tmp_path: Path) -> None:
    """The TOML positions of a configuration problem come from a small module of their
    own: the sample-file code (graders, Jinja) stays unloaded."""
    (tmp_path / "turncheck.toml").write_text("concurrency = 0\n")
    (tmp_path / ".git").mkdir()
    code, heavy = modules_after(["validate", "--config", str(tmp_path / "turncheck.toml"),
                                 str(SUITE)])
    assert code != 0
    assert heavy == set()


def test_help_loads_no_command_module() -> None:
    lines = fresh_interpreter(
        "import sys\nfrom turncheck.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.endswith('_cmd') or m == 'pydantic'))")
    assert lines[-1] == "[]"
    listing = " ".join(" ".join(lines).split())  # argparse wraps long help lines
    for command in cli_main.COMMANDS:
        assert f"{command.name} {command.help}" in listing


def test_the_engine_loads_when_a_command_runs_evals() -> None:
    """The import test above can fail: the same probe sees the engine when it is used."""
    _, heavy = modules_after(["schema"])
    assert "httpx" not in heavy
    _, heavy = modules_after(["merge", "/nonexistent/report.json"])
    assert "turncheck.engine.merge" in heavy


def registered_helps() -> dict[str, str | None]:
    """Each subcommand's help as its module registers it (everything imported)."""
    parser = cli_main.build_parser(None)
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help for choice in actions[0]._choices_actions}


def test_registry_lists_every_command_module_with_its_own_help() -> None:
    modules = {p.stem for p in (ROOT / "src" / "turncheck" / "cli").glob("*_cmd.py")}
    assert modules == {command.module for command in cli_main.COMMANDS}
    assert registered_helps() == {command.name: command.help for command in cli_main.COMMANDS}


@pytest.mark.parametrize("command", [c.name for c in cli_main.COMMANDS])
def test_each_command_parses_with_only_its_module(command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", command, "--help"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"usage: turncheck {command}" in done.stdout


def scipy_loaded_after(argv: list[str]) -> bool:
    code = (
        "import sys\nfrom turncheck.cli.main import main\n"
        f"main({argv!r})\n"
        "print('scipy' in sys.modules, file=sys.__stdout__)\n"
    )
    return fresh_interpreter(code)[-1] == "True"


def test_run_loads_no_scipy_but_compare_does(tmp_path: Path) -> None:
    """`run` needs the stopping rule of `repeat: auto` and Wilson intervals, not
    scipy.stats (about a second of start-up per run); the comparison's tests do."""
    report = tmp_path / "report.json"
    assert not scipy_loaded_after(["run", str(SUITE), "--mode", "replay", "--quiet",
                                   "--json", str(report)])
    assert scipy_loaded_after(["compare", str(report), str(report), "--json",
                               str(tmp_path / "comparison.json")])


REPLAY_NEEDS_NONE_OF = ("aiohttp.client", "aiohttp.connector", "requests", "urllib3", "numpy",
                        "scipy", "jinja2", "vcr.patch", "vcr.config",
                        "turncheck.engine.calibration", "turncheck.engine.protocol",
                        "turncheck.formats.grader", "turncheck.stats.agreement",
                        "genai_prices.update_prices", "httpx2", "httpx._main", "click",
                        "pygments", "turncheck.render.junit", "turncheck.render.protocol_console",
                        "turncheck.render.calibration_console", "turncheck.formats.protocol",
                        "httpx", "httpcore", "turncheck.providers.cassette_transport",
                        "turncheck.providers.live_http", "turncheck.providers.aiohttp_transport",
                        "turncheck.report.comparison", "turncheck.report.protocol_comparison")
"""What a replay of one plain suite never uses (issue 25: ≤ 0.25 s whole-process): the
live network client and httpx (a replay's answers come from the cassette, never through
an httpx transport), vcrpy's patching of every HTTP client, grading (numpy, Jinja),
protocol scoring, genai-prices' price updater (and its HTTP client, httpx2), httpx's
command-line client (click, pygments), the protocol suite format, the JUnit, protocol
and calibration renderers, and the comparison's report models.
Each loads when its part of a run is used."""


def loaded_after(argv: list[str], names: tuple[str, ...]) -> set[str]:
    code = (
        "import sys\nfrom turncheck.cli.main import main\n"
        f"main({argv!r})\n"
        # a lazily loaded module is in sys.modules before it runs: count executed ones
        f"print(sorted(n for n in {names!r} if n in sys.modules and "
        "type(sys.modules[n]).__name__ != '_LazyModule'), file=sys.__stdout__)\n"
    )
    return set(json.loads(fresh_interpreter(code)[-1].replace("'", '"')))


def test_a_replay_of_one_suite_loads_no_network_client_grader_or_scorer(tmp_path: Path) -> None:
    assert loaded_after(["run", str(SUITE), "--quiet"], REPLAY_NEEDS_NONE_OF) == set()


def test_the_parts_a_replay_leaves_out_load_when_used(tmp_path: Path) -> None:
    """The test above can fail: samples and protocol suites bring their modules in."""
    examples = ROOT / "examples"
    loaded = loaded_after(["run", str(examples), "--quiet"], REPLAY_NEEDS_NONE_OF)
    assert {"turncheck.engine.calibration", "turncheck.engine.protocol", "numpy",
            "jinja2", "turncheck.render.protocol_console",
            "turncheck.render.calibration_console", "turncheck.formats.protocol"} <= loaded
    junit = loaded_after(["run", str(SUITE), "--quiet", "--junit", str(tmp_path / "j.xml")],
                         REPLAY_NEEDS_NONE_OF)
    assert junit == {"turncheck.render.junit"}
    assert "<testsuite" in (tmp_path / "j.xml").read_text()


SENDING = ("httpx", "turncheck.providers.live_http", "turncheck.providers.aiohttp_transport")
"""What a call that may reach the network loads (httpx's exceptions classify its failures)."""


@pytest.mark.parametrize("mode", ["record", "live"])
def test_httpx_loads_when_a_run_records_or_calls_live(
    tmp_path: Path, scripted_server: ScriptedServer, mode: str
) -> None:
    """The replay test above can fail: the same probe sees httpx and the network client
    once a run records (`record`, and the recording cassette's httpx transport) or calls
    the provider live, here a local server."""
    suite = tmp_path / SUITE.name
    suite.write_text(SUITE.read_text())
    command = ["record"] if mode == "record" else ["run", "--mode", "live"]
    argv = [*command, str(suite), "--quiet", "--base-url", scripted_server.base_url,
            "--json", str(tmp_path / "report.json")]
    recording = {"turncheck.providers.cassette_transport"} if mode == "record" else set()
    loaded = loaded_after(argv, (*SENDING, "turncheck.providers.cassette_transport"))
    assert loaded == {*SENDING, *recording}
    assert scripted_server.requests  # the provider was called
    assert (tmp_path / "arithmetic.eval.cassette.yaml").is_file() == (mode == "record")


def test_a_replay_prices_with_the_bundled_prices_only() -> None:
    """genai-prices' package `__init__` (price updater, httpx2) stays unloaded while the
    same prices come out as from its public `calc_price`."""
    code = (
        "import sys\nfrom datetime import UTC, datetime\n"
        "from turncheck.engine.pricing import Pricer\n"
        "from turncheck.report.spend import Usage\n"
        "pricer = Pricer.at('2026-01-01T00:00:00Z')\n"
        "cost = pricer.cost(Usage(input_tokens=1000, output_tokens=100), 'gpt-4o', None)\n"
        "print(cost, 'httpx2' in sys.modules, file=sys.__stdout__)\n"
        "import genai_prices\n"
        "usage = genai_prices.Usage(input_tokens=1000, output_tokens=100)\n"
        "public = genai_prices.calc_price(usage, 'gpt-4o', genai_request_timestamp="
        "datetime(2026, 1, 1, tzinfo=UTC))\n"
        "print(float(public.total_price), file=sys.__stdout__)\n"
    )
    ours, public = fresh_interpreter(code)[-2:]
    cost, updater_loaded = ours.split()
    assert updater_loaded == "False"
    assert float(cost) == float(public) > 0


NUMERIC = ("numpy", "scipy")
STATS_MODULES = tuple(sorted("turncheck.stats." + p.stem for p in (ROOT / "src" / "turncheck"
                             / "stats").glob("*.py") if p.stem != "__init__"))


def numeric_loaded_after_importing(modules: tuple[str, ...]) -> list[str]:
    """numpy/scipy modules in `sys.modules` after importing `modules` in a fresh
    interpreter."""
    code = (
        "import sys\n"
        f"for name in {modules!r}:\n    __import__(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {NUMERIC!r}),"
        " file=sys.__stdout__)\n"
    )
    loaded: list[str] = json.loads(fresh_interpreter(code)[-1].replace("'", '"'))
    return loaded


def test_the_action_and_the_statistics_import_no_numpy_or_scipy() -> None:
    """Every `turncheck action` job imports the action module, and through the comparison
    all of `turncheck.stats`; a shard job never compares, so numpy and scipy (about half a
    second) load only inside the statistics that use them."""
    modules = ("turncheck.github.action", "turncheck.compare.comparison",
               "turncheck.compare.calibration", *STATS_MODULES)
    assert numeric_loaded_after_importing(modules) == []


def test_a_statistical_test_loads_scipy_when_it_runs() -> None:
    """The test above can fail: the same probe sees scipy once a test is computed."""
    code = ("import sys\nfrom turncheck.stats.tests import fisher_worse\n"
            "print(fisher_worse(10, 10, 2, 10) < 0.01, 'scipy' in sys.modules,"
            " file=sys.__stdout__)\n")
    assert fresh_interpreter(code)[-1].split() == ["True", "True"]

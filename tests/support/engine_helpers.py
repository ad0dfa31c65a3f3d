"""Run suites written inline against the scripted server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.scripted_server import ScriptedServer
from turncheck.choices import Mode
from turncheck.engine.runner import run_suite_files
from turncheck.engine.session import SessionSettings
from turncheck.engine.settings import RunSettings
from turncheck.formats.suite_loader import load_suite
from turncheck.report.run import EvalResult, Report

FAKE_KEY = "sk-test-SECRET-KEY-123"
# Generous per-request timeout: CI machines are busy; fault tests set their own.
FAST_RETRIES = SessionSettings(timeout_s=15.0, attempts=4, backoff_base_s=0.001)


def suite_yaml(evals: str, metadata: str = "", model: str = "gpt-4o-mini") -> str:
    return f"metadata:\n  name: scripted\n  model: {model}\n{metadata}evals:\n{evals}"


def write_suite(tmp_path: Path, text: str, name: str = "scripted.eval.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_paths(
    paths: list[Path], server: ScriptedServer | None, mode: Mode = "live", **overrides: Any
) -> Report:
    files = [load_suite(path) for path in paths]
    for loaded in files:
        assert not loaded.has_errors, loaded.diagnostics
    overrides.setdefault("base_url", server.base_url if server is not None else None)
    overrides.setdefault("provider", "openai")
    overrides["env"] = {"OPENAI_API_KEY": FAKE_KEY, **overrides.get("env", {})}
    overrides.setdefault("session", FAST_RETRIES)
    settings = RunSettings(mode=mode, **overrides)
    return asyncio.run(run_suite_files(files, settings))


def run_text(
    tmp_path: Path, text: str, server: ScriptedServer | None, mode: Mode = "live", **overrides: Any
) -> Report:
    return run_paths([write_suite(tmp_path, text)], server, mode, **overrides)


def only_eval(report: Report) -> EvalResult:
    [suite] = report.suites
    [result] = suite.evals
    return result


def sent_messages(server: ScriptedServer, index: int) -> list[dict[str, str]]:
    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    messages: list[dict[str, str]] = chats[index].json["messages"]
    return messages

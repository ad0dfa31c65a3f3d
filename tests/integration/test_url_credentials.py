"""An undeclared credential in a `base_url` query string never reaches an output
(issue 32, item 11): report, JUnit, HTML, console and cassette show it redacted, wherever
the URL is shown or stored; the request itself still carries it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.text.credentials import url_credentials

ROOT = Path(__file__).resolve().parent.parent
CREDENTIAL = "AIzaQueryCred-0123456789xyz"


@pytest.mark.parametrize(("url", "found"), [
    ("https://h/v1?key=abc123&api-version=2024-10-21", ["abc123"]),
    ("https://h/v1?api-key=a%2Bb&access_token=tok9&sig=s1", ["a+b", "tok9", "s1"]),
    ("https://user:pass-word@h/v1", ["pass-word", "user"]),
    ("https://h/v1?model=x&version=3", []),
    (None, []),
])
def test_the_credentials_a_url_carries(url: str | None, found: list[str]) -> None:
    assert url_credentials(url) == found


def run(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    return subprocess.run([sys.executable, "-m", "turncheck", *args], capture_output=True,
                          text=True, cwd=ROOT, env={**full, **env}, timeout=120, check=False)


def test_a_query_credential_in_base_url_is_sent_but_never_shown_or_stored(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(fault="unauthorized")  # the error names the URL
    suite = tmp_path / "cred.eval.yaml"
    suite.write_text(
        "metadata: {name: cred, model: gpt-4o-mini, provider: openai, "
        f"base_url: '{scripted_server.base_url}?key={CREDENTIAL}'}}\n"
        "evals:\n"
        "  - {prompt: 'refused', checks: [{match: '*ok*'}]}\n", encoding="utf-8")
    outputs = [tmp_path / name for name in ("report.json", "junit.xml", "report.html")]
    done = run(tmp_path, "record", str(suite), "--json", str(outputs[0]), "--junit",
               str(outputs[1]), "--html", str(outputs[2]), env={"OPENAI_API_KEY": "sk-0000"})
    assert "Traceback" not in done.stderr
    assert any(CREDENTIAL in r.path for r in scripted_server.requests)  # it was sent
    report = outputs[0].read_text(encoding="utf-8")
    assert "request to" in report  # the refused call's error names the URL …
    stored = [report, *(p.read_text(encoding="utf-8") for p in outputs[1:]),
              done.stdout, done.stderr]
    assert not [text[:80] for text in stored if CREDENTIAL in text]  # … never the credential
    assert not [text[:80] for text in stored if CREDENTIAL[8:16] in text]
    assert not cassette_path_for(suite).exists() or CREDENTIAL not in \
        cassette_path_for(suite).read_text(encoding="utf-8")

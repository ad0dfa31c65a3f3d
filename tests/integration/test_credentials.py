"""Every credential turncheck knows of is out of `secret()`'s reach (issue 32, item 6).

The list lives in one place (`text/credentials.py`); the providers read their keys by
those names, so a provider's key can never be missing from what `secret()` refuses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from turncheck.formats.templates import reserved_secret
from turncheck.providers.factory import API_KEY_ENV_VARS
from turncheck.text.credentials import CREDENTIAL_ENV_VARS

ROOT = Path(__file__).resolve().parent.parent


def test_secret_of_the_azure_and_gemini_keys_is_refused_at_its_line(tmp_path: Path) -> None:
    suite = tmp_path / "keys.eval.yaml"
    suite.write_text(
        "metadata: {name: keys, model: gpt-4o-mini}\n"
        "evals:\n"
        "  - prompt: \"{{secret('AZURE_OPENAI_API_KEY')}}\"\n"
        "    checks: [{match: x}]\n"
        "  - prompt: \"{{secret('GEMINI_API_KEY')}}\"\n"
        "    checks: [{match: x}]\n"
        "  - prompt: \"{{secret('google_api_key')}}\"\n"
        "    checks: [{match: x}]\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    done = subprocess.run([sys.executable, "-m", "turncheck", "validate", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "keys.eval.yaml:3:" in out and "secret('AZURE_OPENAI_API_KEY') is refused" in out
    assert "keys.eval.yaml:5:" in out and "secret('GEMINI_API_KEY') is refused" in out
    assert "keys.eval.yaml:7:" in out and "secret('google_api_key') is refused" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("name", sorted({*API_KEY_ENV_VARS, *CREDENTIAL_ENV_VARS}))
def test_every_key_a_provider_reads_is_refused(name: str) -> None:
    assert reserved_secret(name) is not None
    assert reserved_secret(name.lower()) is not None


def test_an_ordinary_name_may_still_be_read() -> None:
    assert reserved_secret("MY_SERVICE_TOKEN") is None

"""Issue 44, item 8: tools/record_app_example.py records any app-target suite, not only
the repository's examples: a user's command app in a folder of its own is recorded
against the scripted server, and its suite then replays offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

APP = """\
import json, sys
from openai import OpenAI

client = OpenAI()  # OPENAI_BASE_URL and the key: the recording proxy's
for line in sys.stdin:
    turn = json.loads(line)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "system", "content": "You answer questions about the shop."},
        *turn["messages"]])
    print(json.dumps(reply.choices[0].message.content), flush=True)
"""
SUITE = f"""\
metadata:
  name: shop-bot
  target:
    command: [{sys.executable}, app.py]
evals:
  - name: sunday
    prompt: Are you open on Sunday?
    checks:
      - match: "*closed on Sundays*"
"""


def test_the_tool_records_a_users_suite_that_then_replays_offline(tmp_path: Path) -> None:
    app = tmp_path / "my-app" / "evals"
    app.mkdir(parents=True)
    (app / "app.py").write_text(APP)
    (app / "shop.eval.yaml").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    recorded = subprocess.run([sys.executable, str(ROOT / "tools/record_app_example.py"),
                               "my-app/evals"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    cassette = yaml.safe_load((app / "shop.eval.cassette.yaml").read_text())
    [call] = cassette["interactions"]
    assert call["request"]["uri"] == "http://127.0.0.1:8766/v1/chat/completions"
    assert "closed on Sundays" in call["response"]["body"]["string"]

    replayed = subprocess.run([sys.executable, "-m", "turncheck", "run", "my-app/evals"],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "pass  shop-bot › sunday" in replayed.stdout + replayed.stderr

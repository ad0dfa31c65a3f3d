"""Issue 46, item 6: an app that opens connections to the proxy until turncheck runs out
of file descriptors gets a clear error for its eval, the run goes on, and nothing prints
a traceback."""

from __future__ import annotations

import logging
import resource
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.engine_helpers import run_paths, write_suite
from turncheck.report.results import Status

FLOODER = '''\
import json, os, socket, sys
from urllib.parse import urlsplit

base = urlsplit(os.environ["OPENAI_BASE_URL"])
for line in sys.stdin:
    turn = json.loads(line)
    if turn["last_message"] == "flood":
        held = []
        for _ in range(300):
            try:
                held.append(socket.create_connection((base.hostname, base.port), timeout=5))
            except OSError:
                pass
        for connection in held:
            connection.close()
    print(json.dumps("done"), flush=True)
'''


@pytest.fixture
def few_descriptors() -> Iterator[None]:
    """turncheck (this process) may open 200 descriptors: fewer than the app's flood."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_flood_of_connections_is_the_eval_s_clear_error_and_the_run_goes_on(
        tmp_path: Path, few_descriptors: None, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    (tmp_path / "flooder.py").write_text(FLOODER)
    suite = write_suite(tmp_path, f"""\
metadata:
  name: flood
  target:
    command: [{sys.executable}, flooder.py]
evals:
  - name: floods
    prompt: flood
    checks:
      - match: "done"
  - name: after-the-flood
    prompt: hello
    checks:
      - match: "done"
""")
    report = run_paths([suite], None, "replay", concurrency=1)
    flood, after = report.suites[0].evals
    assert flood.status == Status.ERROR
    assert flood.error is not None and "connections to the turncheck proxy" in flood.error
    assert after.status == Status.PASS, after.error
    assert all(record.exc_info is None for record in caplog.records), caplog.text
    assert "Traceback" not in caplog.text

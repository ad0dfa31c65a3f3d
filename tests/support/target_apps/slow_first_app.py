"""A command app that answers in order, one line at a time, with "answer to: <last
message>"; a message containing "slow" is answered after `SLOW_SECONDS`."""

from __future__ import annotations

import json
import os
import sys
import time

for line in sys.stdin:
    turn = json.loads(line)
    if "slow" in turn["last_message"]:
        time.sleep(float(os.environ.get("SLOW_SECONDS", "3")))
    print(json.dumps({"text": f"answer to: {turn['last_message']}"}), flush=True)

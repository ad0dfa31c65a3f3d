"""Replay keeps a Node app on the machine (docs/targets.md, "Replay stays on the
machine").

Node's `fetch` and `https` ignore the proxy variables before Node 24 (and without
`NODE_USE_ENV_PROXY`), so the refusing proxy alone does not hold them. In replay every
process turncheck starts for an app gets `NODE_OPTIONS=--require <this script>`: before
the app's code runs it wraps `net.Socket.prototype.connect`, which every TCP connection
of Node goes through (`net`, `tls`, `http`, `https`, `fetch`), so a connection to a host
other than this machine fails at once, before any name lookup, with an error naming the
host, and the host is noted in the replay guard's file as the Python guard does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

SCRIPT_NAME = "turncheck-replay-guard.js"

_SCRIPT = r"""// Written by turncheck for a replay: this process connects to this machine only
// (docs/targets.md, "Replay stays on the machine").
'use strict';
const fs = require('fs');
const net = require('net');
const log = process.env.TURNCHECK_REPLAY_REFUSED;
const connect = net.Socket.prototype.connect;

function onThisMachine(host) {
  const name = String(host).replace(/^\[|\]$/g, '').toLowerCase();
  if (name === '' || name === 'localhost' || name.endsWith('.localhost')) return true;
  if (net.isIPv4(name)) return name.startsWith('127.');
  if (net.isIPv6(name)) return name === '::1' || name.startsWith('::ffff:127.');
  return false;
}

function destination(args) {
  // connect(options), connect(port, host), connect(path), or net's normalized [options, cb]
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (first !== null && typeof first === 'object') {
    return first.path ? null : [first.host || 'localhost', first.port];
  }
  if (typeof first === 'number' || /^\d+$/.test(String(first))) {
    return [typeof args[1] === 'string' ? args[1] : 'localhost', first];
  }
  return null;
}

net.Socket.prototype.connect = function turncheckReplayConnect(...args) {
  const where = destination(args);
  if (where === null || onThisMachine(where[0])) return connect.apply(this, args);
  const address = `${where[0]}:${where[1]}`;
  if (log) {
    try { fs.appendFileSync(log, address.replace(/\n/g, ' ') + '\n'); } catch (_) { }
  }
  const error = new Error(`turncheck replay: connection to ${address} refused: ` +
                          'nothing leaves the machine in replay');
  error.code = 'ECONNREFUSED';
  process.nextTick(() => this.destroy(error));
  return this;
};
"""


def write_script(folder: Path) -> Path:
    script = folder / SCRIPT_NAME
    script.write_text(_SCRIPT, encoding="utf-8")
    return script


def node_options(env: Mapping[str, str], script: Path) -> str:
    """The app's `NODE_OPTIONS` (the suite's own kept) with the guard required first."""
    quoted = '"' + str(script).replace("\\", "\\\\").replace('"', '\\"') + '"'
    return " ".join(filter(None, [f"--require {quoted}", env.get("NODE_OPTIONS")]))

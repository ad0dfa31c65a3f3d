"""Fixtures declare the diagnostics they must produce in `# expect:` comment lines.

# expect: LINE:COL SEVERITY CODE "message substring"
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from turncheck.diagnostics import Diagnostic

_EXPECT = re.compile(r'#\s*expect:\s*(\d+):(\d+)\s+(error|warning)\s+(\S+)\s+(".*")\s*$')


@dataclass(frozen=True)
class Expected:
    line: int
    column: int
    severity: str
    code: str
    message: str

    def matches(self, diagnostic: Diagnostic) -> bool:
        return (
            diagnostic.line == self.line
            and diagnostic.column == self.column
            and diagnostic.severity.value == self.severity
            and diagnostic.code == self.code
            and self.message in diagnostic.message
        )


def expectations(path: Path) -> list[Expected]:
    found = []
    for text in path.read_text(encoding="utf-8").splitlines():
        match = _EXPECT.search(text)
        if match:
            line, column, severity, code, message = match.groups()
            found.append(Expected(int(line), int(column), severity, code, json.loads(message)))
    return found


def assert_diagnostics(path: Path, diagnostics: list[Diagnostic]) -> None:
    expected = expectations(path)
    assert expected, f"{path.name} declares no '# expect:' line"
    unmatched = [e for e in expected if not any(e.matches(d) for d in diagnostics)]
    extra = [d for d in diagnostics if not any(e.matches(d) for e in expected)]
    shown = "\n".join(d.compiler_style() + f" [{d.code}]" for d in diagnostics)
    assert not unmatched and not extra, f"expected {unmatched}, got:\n{shown}"

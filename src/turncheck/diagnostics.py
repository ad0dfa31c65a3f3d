"""Diagnostics: one problem found in one file, with a 1-based position.

Every loader and validator reports problems as `Diagnostic` values instead of
raising, so one bad file, eval or sample never hides the others.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Diagnostic(BaseModel):
    """A problem at `file:line:column` (both 1-based)."""

    # Built on first use: a clean `validate` creates none (its schema and pydantic's
    # first-model set-up were a tenth of the command's start-up).
    model_config = ConfigDict(frozen=True, defer_build=True)

    file: str
    line: int
    column: int
    severity: Severity
    code: str
    message: str

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def compiler_style(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.severity.value}: {self.message}"


def error(file: str, line: int, column: int, code: str, message: str) -> Diagnostic:
    return Diagnostic(
        file=file, line=line, column=column, severity=Severity.ERROR, code=code, message=message
    )


def warning(file: str, line: int, column: int, code: str, message: str) -> Diagnostic:
    return Diagnostic(
        file=file, line=line, column=column, severity=Severity.WARNING, code=code, message=message
    )


def sort_key(diagnostic: Diagnostic) -> tuple[str, int, int, str]:
    return (diagnostic.file, diagnostic.line, diagnostic.column, diagnostic.code)
